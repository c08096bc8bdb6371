//! Running a round of inputs: one lane each, on the CPU engine (a target copy per host
//! thread) or on a GPU engine (one batch a round, run on the device with coverage on).
//!
//! On a GPU the batch's lanes are persistent where the target allows it (its input is its
//! stdin, and the device answers its I/O and exits): the first round sets them up, and each
//! later round takes them back to their start on the device with new inputs
//! (`Batch::restart`), setting up again only the lanes the host had to service. Otherwise
//! (and with ARMADA_FUZZ_PERSISTENT=0) every round restores each lane from the snapshot on
//! the host and sets up a new batch.
//!
//! On a GPU the lanes' coverage maps stay on the device: the fuzzer asks for the maps with
//! news only ([`Maps::News`]); a kernel compares every lane's map with the virgin map and
//! only those maps (and those of crashes and hangs, which the fuzzer files by their edges)
//! come to the host. Traces (CmpLog) run on the CPU engine, which records the same edges.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use armada_core::coverage::{CoverageMap, Virgin};
use armada_core::runner::{Exit, Lane};
use armada_gpu::{Batch, Engine};
use rayon::prelude::*;

use crate::target::{outcome_of, ExecResult, Outcome, Target, Via};

/// Which coverage maps a round's results carry.
#[derive(Clone, Copy)]
pub enum Maps<'a> {
    /// Every run's.
    All,
    /// Those of runs whose map adds to this virgin map, and of crashes and hangs; the others
    /// carry their path hash only.
    News(&'a Virgin),
    /// None (crash minimization looks at outcomes only).
    None,
}

/// Runs rounds of inputs on the CPU engine, or on a GPU engine when one is given.
pub struct Executor {
    /// One target copy per worker thread: CPU executions and traces, and the lanes a GPU
    /// round starts from.
    copies: Vec<Mutex<Target>>,
    /// Coverage maps of results already looked at, for the next executions.
    maps: Mutex<Vec<CoverageMap>>,
    engine: Option<Engine>,
    /// The GPU batch kept from round to round (persistent lanes).
    kept: Mutex<Option<Batch>>,
    /// Whether rounds may keep their batch: the target reads its input from stdin and the
    /// last batch took its start (`Batch::keep_start`).
    persist: AtomicBool,
}

impl Executor {
    pub fn new(target: Target, engine: Option<Engine>) -> Executor {
        let n = rayon::current_num_threads().max(1);
        let persist = matches!(target.spec().via, Via::Stdin)
            && std::env::var("ARMADA_FUZZ_PERSISTENT").map_or(true, |v| v != "0");
        let mut copies: Vec<Mutex<Target>> =
            (1..n).map(|_| Mutex::new(target.duplicate())).collect();
        copies.insert(0, Mutex::new(target));
        Executor {
            copies,
            maps: Mutex::new(Vec::new()),
            engine,
            kept: Mutex::new(None),
            persist: AtomicBool::new(persist),
        }
    }

    /// The copy of the target for the calling worker thread.
    fn copy(&self) -> std::sync::MutexGuard<'_, Target> {
        let k = rayon::current_thread_index().unwrap_or(0) % self.copies.len();
        self.copies[k].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The compare operands `input` meets (one traced execution on the CPU engine).
    pub fn trace(&self, input: &[u8]) -> Result<Vec<(u64, u64)>> {
        let mut t = self.copies[0].lock().unwrap_or_else(|p| p.into_inner());
        t.trace(input)
    }

    /// Gives back the maps of results that have been looked at.
    pub fn recycle(&self, results: Vec<ExecResult>) {
        let mut m = self.maps.lock().unwrap_or_else(|p| p.into_inner());
        m.extend(results.into_iter().filter_map(|r| r.coverage));
    }

    /// Runs every input once; results in input order.
    pub fn run(&self, inputs: &[Vec<u8>], maps: Maps) -> Result<Vec<ExecResult>> {
        match &self.engine {
            None => self.run_cpu(inputs),
            Some(e) => self.run_gpu(e, inputs, maps),
        }
    }

    fn run_cpu(&self, inputs: &[Vec<u8>]) -> Result<Vec<ExecResult>> {
        inputs
            .par_iter()
            .map(|input| {
                let map = self.maps.lock().ok().and_then(|mut m| m.pop());
                self.copy().exec(input, map)
            })
            .collect()
    }

    fn run_gpu(&self, engine: &Engine, inputs: &[Vec<u8>], maps: Maps) -> Result<Vec<ExecResult>> {
        let (start, exec_limit) = {
            let t = self.copy();
            (t.start_instructions(), t.spec().exec_limit)
        };
        // ARMADA_FUZZ_PROFILE=1: where a GPU round's time goes, on stderr
        let profile = std::env::var_os("ARMADA_FUZZ_PROFILE").is_some();
        let t0 = std::time::Instant::now();
        let mut laps: Vec<(&str, f64)> = Vec::new();
        let mut lap = |name: &'static str| {
            if profile {
                laps.push((name, t0.elapsed().as_secs_f64()));
            }
        };
        let n = inputs.len();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let persist = self.persist.load(Ordering::Relaxed);
        let mut batch = match kept.take() {
            Some(mut b) if persist && b.lanes() >= n => {
                // the kept lanes, back to their start with this round's inputs
                let fresh = |i: usize| -> Result<Lane, armada_gpu::Error> {
                    let mut lane = self
                        .copy()
                        .lane(&inputs[i])
                        .map_err(|e| armada_gpu::Error::Device(format!("{e:#}")))?;
                    lane.set_coverage(true);
                    Ok(lane)
                };
                b.restart(inputs, &fresh)?;
                lap("restart");
                b
            }
            old => {
                // (the old batch's device memory goes first)
                drop(old);
                let lanes: Vec<Lane> = inputs
                    .par_iter()
                    .map(|input| {
                        let mut lane = self.copy().lane(input)?;
                        lane.set_coverage(true);
                        Ok(lane)
                    })
                    .collect::<Result<_>>()?;
                lap("restore");
                // output is not looked at: the kernel answers the input's reads and drops
                // writes
                let mut b =
                    engine.batch_with(lanes, Some(start.saturating_add(exec_limit)), true)?;
                if persist && b.keep_start().is_err() {
                    // (a device or target that does not allow it: a new batch every round)
                    self.persist.store(false, Ordering::Relaxed);
                }
                lap("setup");
                b
            }
        };
        batch.bind()?;
        batch.run(&|_| {})?;
        lap("run");
        let mut ends: Vec<(Outcome, u64)> = Vec::with_capacity(n);
        for i in 0..n {
            // a lane the kernel ended at its exit; else the host lane says how it ended
            if let Some((status, retired)) = batch.device_exit(i) {
                ends.push((Outcome::Exited(status), retired - start));
                continue;
            }
            let lane = batch.lane_mut(i);
            let exit = lane.exit.clone().unwrap_or(Exit::InstructionLimit);
            ends.push((outcome_of(lane, &exit), lane.retired() - start));
        }
        let all: Vec<usize> = (0..n).collect();
        let (want, paths): (Vec<usize>, Option<Vec<u32>>) = match maps {
            Maps::All => (all, None),
            Maps::None => (Vec::new(), None),
            Maps::News(virgin) => {
                let news = batch.coverage_news(&all, virgin)?;
                // One map a path: runs of a round with the same edges and hit-count buckets
                // (the same path hash) bring the same news, and the fuzzer keeps only the
                // first of them (the others add nothing once it has). The first round from a
                // few seeds has news in nearly every lane, and few paths. (Two different maps
                // with one 32-bit path hash would hide the second's news: rare, and harmless
                // but for that input.)
                let mut paths = std::collections::HashSet::new();
                let want = all
                    .into_iter()
                    .filter(|&i| {
                        !matches!(ends[i].0, Outcome::Exited(_))
                            || (news[i].new && paths.insert(news[i].path))
                    })
                    .collect();
                (want, Some(news.iter().map(|x| x.path).collect()))
            }
        };
        lap("news");
        let mut fetched = want.iter().copied().zip(batch.coverage_maps(&want)?);
        lap("maps");
        let mut next = fetched.next();
        let mut out = Vec::with_capacity(n);
        for (i, (outcome, instructions)) in ends.into_iter().enumerate() {
            let coverage = match next.take() {
                Some((k, map)) if k == i => {
                    next = fetched.next();
                    Some(map)
                }
                other => {
                    next = other;
                    None
                }
            };
            out.push(ExecResult {
                outcome,
                coverage,
                path: paths.as_ref().map(|p| p[i]),
                instructions,
            });
        }
        let stats = if profile {
            batch.stats_list()
        } else {
            Vec::new()
        };
        if batch.is_persistent() {
            *kept = Some(batch);
        } else {
            drop(batch);
            lap("drop");
        }
        if profile {
            let mut prev = 0.0;
            let parts: Vec<String> = laps
                .iter()
                .map(|&(name, t)| {
                    let d = t - prev;
                    prev = t;
                    format!("{name} {d:.3}")
                })
                .collect();
            let engine: Vec<String> = stats
                .iter()
                .filter(|(k, _)| {
                    [
                        "launches",
                        "kernel s",
                        "service s",
                        "transfer s",
                        "transfer parts s",
                        "setup s",
                        "setup parts s",
                        "restarts",
                    ]
                    .contains(&k.as_str())
                })
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            eprintln!(
                "armada fuzz: round of {n}: {} s: {}; {}; {} maps fetched",
                format_args!("{prev:.3}"),
                parts.join(", "),
                engine.join(", "),
                want.len()
            );
        }
        Ok(out)
    }
}
