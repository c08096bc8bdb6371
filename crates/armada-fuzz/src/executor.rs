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
//! A GPU round runs in a thread of its own from its submission (`Executor::submit`) to its
//! collection (`Executor::collect`), so the host's work for one round (taking the last
//! round's results, making and submitting the next) goes on while the device runs another:
//! the fuzzer keeps one round running while it makes the next. Each batch's kernel has a
//! device queue of its own (`Device::new_queue`), so the two batches' copies and kernels
//! overlap on the device too.
//!
//! On a GPU the lanes' coverage maps stay on the device: the fuzzer asks for the maps with
//! news only ([`Maps::News`]); a kernel compares every lane's map with the virgin map and
//! only those maps (and those of crashes and hangs, which the fuzzer files by their edges)
//! come to the host. Traces (CmpLog) run on the CPU engine, which records the same edges.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
    /// Those of runs whose map adds to `virgin`, and of crashes and hangs. The others carry
    /// their path hash where `paths` asks for it (a GPU has it anyway; the CPU engine's
    /// workers hash a map only then).
    News { virgin: &'a Virgin, paths: bool },
    /// None (crash minimization looks at outcomes only).
    None,
}

/// A round of inputs submitted to the executor and not collected yet.
pub struct Pending {
    inputs: Vec<Vec<u8>>,
    job: Job,
    /// (what, seconds) of its submission, for ARMADA_FUZZ_PROFILE.
    laps: Vec<(&'static str, f64)>,
}

enum Job {
    /// Runs when collected (the CPU engine).
    Later,
    /// Running on the host's cores, from a thread of its own (the CPU engine, rounds
    /// pipelined): its results.
    Cpu(std::thread::JoinHandle<Result<Vec<ExecResult>>>),
    /// Running on the device, in a thread of its own: the batch comes back, with the run's
    /// seconds.
    Running(std::thread::JoinHandle<Result<(Batch, f64), armada_gpu::Error>>),
}

/// Runs rounds of inputs on the CPU engine, or on a GPU engine when one is given.
pub struct Executor {
    /// One target copy per worker thread, and the last for threads outside the pool (the
    /// fuzzer's own: traces): CPU executions and traces, and the lanes a GPU round starts
    /// from.
    copies: Arc<Vec<Mutex<Target>>>,
    /// Coverage maps of results already looked at, for the next executions.
    maps: Arc<Mutex<Vec<CoverageMap>>>,
    /// CPU rounds run on the host's cores from a thread of their own, while the fuzzer
    /// makes the next (see [`Executor::set_background`]).
    background: AtomicBool,
    /// Rounds submitted so far (the first few carry their runs' path hashes).
    submitted: std::sync::atomic::AtomicU64,
    engine: Option<Engine>,
    /// GPU batches kept from round to round (persistent lanes) that no round is running on:
    /// two at most, as one round runs while the next is made and submitted.
    kept: Mutex<Vec<Batch>>,
    /// Whether rounds may keep their batch: the target reads its input from stdin and the
    /// last batch took its start (`Batch::keep_start`).
    persist: AtomicBool,
}

impl Executor {
    pub fn new(target: Target, engine: Option<Engine>) -> Executor {
        let n = rayon::current_num_threads().max(1);
        let persist = matches!(target.spec().via, Via::Stdin)
            && std::env::var("ARMADA_FUZZ_PERSISTENT").map_or(true, |v| v != "0");
        let mut copies: Vec<Mutex<Target>> = (0..n)
            .map(|_| Mutex::new(target.duplicate(engine.is_none())))
            .collect();
        copies.insert(0, Mutex::new(target));
        Executor {
            copies: Arc::new(copies),
            maps: Arc::new(Mutex::new(Vec::new())),
            background: AtomicBool::new(false),
            submitted: std::sync::atomic::AtomicU64::new(0),
            engine,
            kept: Mutex::new(Vec::new()),
            persist: AtomicBool::new(persist),
        }
    }

    /// Whether rounds run on a GPU engine.
    pub fn on_gpu(&self) -> bool {
        self.engine.is_some()
    }

    /// The copy of the target for the calling thread.
    fn copy(&self) -> std::sync::MutexGuard<'_, Target> {
        copy_for_thread(&self.copies)
    }

    /// Runs the CPU engine's rounds on the host's cores from a thread of their own, so the
    /// fuzzer makes the next round while one runs (its rounds pipelined, as on a GPU).
    /// Results are the same: a round's maps are judged against the virgin map of its
    /// submission, which lets through a superset of those with news, which the fuzzer
    /// judges again as it merges them.
    pub fn set_background(&self, on: bool) {
        self.background.store(on, Ordering::Relaxed);
    }

    /// The compare operands `input` meets (one traced execution on the CPU engine).
    pub fn trace(&self, input: &[u8]) -> Result<Vec<(u64, u64)>> {
        self.copy().trace(input)
    }

    /// Gives back the maps of results that have been looked at.
    pub fn recycle(&self, results: Vec<ExecResult>) {
        let mut m = self.maps.lock().unwrap_or_else(|p| p.into_inner());
        m.extend(results.into_iter().filter_map(|r| r.coverage));
    }

    /// Runs every input once; results in input order.
    pub fn run(&self, inputs: &[Vec<u8>], maps: Maps) -> Result<Vec<ExecResult>> {
        let virgin = match maps {
            Maps::News { virgin, .. } => Some(virgin),
            _ => None,
        };
        let p = self.submit(inputs.to_vec(), virgin)?;
        Ok(self.collect(p, maps)?.1)
    }

    /// Hands a round of inputs to the engine. On a GPU the round starts running on the
    /// device at once, in a thread of its own, while the caller goes on (making the next
    /// round, taking the last one's results): [`Executor::collect`] waits for it. Elsewhere
    /// it runs when collected. `virgin`: what the fuzzer has seen now, which the device may
    /// judge the round's maps against as they end (a later one goes to `collect`).
    pub fn submit(&self, inputs: Vec<Vec<u8>>, virgin: Option<&Virgin>) -> Result<Pending> {
        let Some(engine) = &self.engine else {
            if !self.background.load(Ordering::Relaxed) {
                return Ok(Pending {
                    inputs,
                    job: Job::Later,
                    laps: Vec::new(),
                });
            }
            let (copies, pool) = (self.copies.clone(), self.maps.clone());
            let virgin = virgin.cloned();
            // (the fuzzer looks at path hashes in its first 4 rounds; seeds' runs come first)
            let paths = self.submitted.fetch_add(1, Ordering::Relaxed) < 8;
            let mine = inputs.clone();
            let job = std::thread::Builder::new()
                .name("armada-fuzz-round".into())
                .spawn(move || {
                    let maps = match &virgin {
                        Some(v) => Maps::News { virgin: v, paths },
                        None => Maps::All,
                    };
                    run_on_cpu(&copies, &pool, &mine, maps)
                })?;
            return Ok(Pending {
                inputs,
                job: Job::Cpu(job),
                laps: Vec::new(),
            });
        };
        let t0 = std::time::Instant::now();
        let (mut batch, what) = self.batch_for(engine, &inputs)?;
        if let Some(v) = virgin {
            batch.set_virgin(v.seen())?;
        }
        let laps = vec![(what, t0.elapsed().as_secs_f64())];
        let job = std::thread::Builder::new()
            .name("armada-fuzz-round".into())
            .spawn(move || -> Result<(Batch, f64), armada_gpu::Error> {
                let t = std::time::Instant::now();
                batch.bind()?;
                batch.run(&|_| {})?;
                Ok((batch, t.elapsed().as_secs_f64()))
            })?;
        Ok(Pending {
            inputs,
            job: Job::Running(job),
            laps,
        })
    }

    /// Waits for a submitted round and gives its inputs back with their results, in order.
    pub fn collect(&self, p: Pending, maps: Maps) -> Result<(Vec<Vec<u8>>, Vec<ExecResult>)> {
        let Pending { inputs, job, laps } = p;
        let results = match job {
            Job::Later => run_on_cpu(&self.copies, &self.maps, &inputs, maps)?,
            Job::Cpu(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("the thread running a fuzz round panicked"))??,
            Job::Running(h) => {
                let t = std::time::Instant::now();
                let (batch, run_s) = h
                    .join()
                    .map_err(|_| anyhow::anyhow!("the thread running a fuzz round panicked"))??;
                let waited = t.elapsed().as_secs_f64();
                self.finish_gpu(batch, &inputs, maps, laps, (run_s, waited))?
            }
        };
        Ok((inputs, results))
    }

    /// A batch with one lane per input, ready to run: a kept one taken back to its start with
    /// these inputs where the lanes are persistent, else a new one. Says which it was.
    fn batch_for(&self, engine: &Engine, inputs: &[Vec<u8>]) -> Result<(Batch, &'static str)> {
        let (start, exec_limit) = {
            let t = self.copy();
            (t.start_instructions(), t.spec().exec_limit)
        };
        let n = inputs.len();
        let persist = self.persist.load(Ordering::Relaxed);
        let kept = {
            let mut idle = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            match idle.iter().position(|b| b.lanes() >= n) {
                Some(k) if persist => Some(idle.swap_remove(k)),
                // (too small for this round, or not to be kept: their device memory goes
                // before a new batch takes its own)
                _ => {
                    idle.clear();
                    None
                }
            }
        };
        if let Some(mut b) = kept {
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
            return Ok((b, "restart"));
        }
        let lanes: Vec<Lane> = inputs
            .par_iter()
            .map(|input| {
                let mut lane = self.copy().lane(input)?;
                lane.set_coverage(true);
                Ok(lane)
            })
            .collect::<Result<_>>()?;
        // output is not looked at: the kernel answers the input's reads and drops writes
        let mut b = engine.batch_with(
            lanes,
            Some(start.saturating_add(exec_limit)),
            armada_gpu::KernelIo::Drop,
        )?;
        if persist && b.keep_start().is_err() {
            // (a device or target that does not allow it: a new batch every round)
            self.persist.store(false, Ordering::Relaxed);
        }
        Ok((b, "setup"))
    }

    /// A GPU round's results from its batch, which is kept for the next rounds where its
    /// lanes are persistent. `laps`: the submission's; `ran`: the run's seconds, and those
    /// the collection waited for it.
    fn finish_gpu(
        &self,
        mut batch: Batch,
        inputs: &[Vec<u8>],
        maps: Maps,
        laps: Vec<(&'static str, f64)>,
        ran: (f64, f64),
    ) -> Result<Vec<ExecResult>> {
        let (start, symbols) = {
            let t = self.copy();
            (t.start_instructions(), t.symbols_arc())
        };
        // ARMADA_FUZZ_PROFILE=1: where a GPU round's time goes, on stderr
        let profile = std::env::var_os("ARMADA_FUZZ_PROFILE").is_some();
        let t0 = std::time::Instant::now();
        let mut laps = laps;
        laps.push(("run", ran.0));
        laps.push(("waited", ran.1));
        let mut last = 0.0;
        let mut lap = |name: &'static str| {
            if profile {
                let now = t0.elapsed().as_secs_f64();
                laps.push((name, now - last));
                last = now;
            }
        };
        let n = inputs.len();
        let mut ends: Vec<(Outcome, u64)> = Vec::with_capacity(n);
        for i in 0..n {
            // a lane the kernel ended at its exit; else the host lane says how it ended
            if let Some((status, retired)) = batch.device_exit(i) {
                ends.push((Outcome::Exited(status), retired - start));
                continue;
            }
            let lane = batch.lane_mut(i);
            let exit = lane.exit.clone().unwrap_or(Exit::InstructionLimit);
            ends.push((
                outcome_of(lane, &exit, symbols.as_deref()),
                lane.retired() - start,
            ));
        }
        let all: Vec<usize> = (0..n).collect();
        let (want, paths): (Vec<usize>, Option<Vec<u32>>) = match maps {
            Maps::All => (all, None),
            Maps::None => (Vec::new(), None),
            Maps::News { virgin, .. } => {
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
        // Persistent lanes pay where the kernel runs most executions whole. Where the host
        // serviced most of a restarted round's lanes (a target whose every execution makes a
        // syscall the kernel leaves to the host: clone, brk, getrandom), each is set up again
        // at the next restart anyway, and the rounds' launches wait for every lane that
        // stops (no grace period in persistent batches): new batches every round run faster
        // then (21,000 against 30,000 execs/s for tests/guest/dynamic/fuzz_zlib.c on an
        // H200). A batch's first round does not tell: a lane's first writes to the
        // snapshot's pages are the host's there, and become part of its start. Results are
        // the same either way.
        if batch.is_persistent() && batch.stats.restarts > 0 && 2 * batch.lanes_serviced(n) > n {
            self.persist.store(false, Ordering::Relaxed);
        }
        if batch.is_persistent() && self.persist.load(Ordering::Relaxed) {
            self.kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(batch);
        } else {
            drop(batch);
            lap("drop");
        }
        if profile {
            let parts: Vec<String> = laps
                .iter()
                .map(|&(name, d)| format!("{name} {d:.3}"))
                .collect();
            let engine: Vec<String> = stats
                .iter()
                .filter(|(k, _)| {
                    [
                        "launches",
                        "kernel s",
                        "kernel builds s",
                        "service s",
                        "transfer s",
                        "transfer parts s",
                        "setup s",
                        "setup parts s",
                        "restarts",
                        "page-table slots",
                    ]
                    .contains(&k.as_str())
                })
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            eprintln!(
                "armada fuzz: round of {n}: {}; {}; {} maps fetched",
                parts.join(", "),
                engine.join(", "),
                want.len()
            );
        }
        Ok(out)
    }
}

/// The inputs run on the host's cores, a target copy per worker thread. Each worker
/// also judges its run's map against `maps` (the virgin map, which nothing changes
/// while a round runs): a map with no news goes back to the pool there, so the
/// fuzzer's own thread, which merges results one at a time, looks only at the few maps
/// that add something. (When it merged all of them, that one thread was a 64 KiB scan
/// per execution and the fuzzer ran at one core's speed however many it had.) Leaving
/// those maps out changes nothing: a map that adds nothing to the virgin map at the
/// round's start adds nothing to it later either.
fn run_on_cpu(
    copies: &[Mutex<Target>],
    pool: &Mutex<Vec<CoverageMap>>,
    inputs: &[Vec<u8>],
    maps: Maps,
) -> Result<Vec<ExecResult>> {
    inputs
        .par_iter()
        .map(|input| {
            // (the thread's target copy keeps the maps its runs gave back: one lock a
            // run, its own, where a pool for all threads was a lock they took in turn)
            let mut t = copy_for_thread(copies);
            let map = t
                .spare_maps
                .pop()
                .or_else(|| pool.lock().ok().and_then(|mut m| m.pop()));
            let mut r = t.exec(input, map)?;
            let keep = match maps {
                Maps::All => true,
                Maps::None => false,
                // crashes and hangs are filed by their maps
                Maps::News { .. } if !matches!(r.outcome, Outcome::Exited(_)) => true,
                Maps::News { virgin, paths } => match r.coverage.as_mut() {
                    Some(m) => {
                        if paths {
                            r.path = Some(m.path_hash());
                        }
                        m.novelty_or_clear(virgin) != armada_core::coverage::Novelty::None
                    }
                    None => false,
                },
            };
            if !keep {
                if let Some(m) = r.coverage.take() {
                    t.spare_maps.push(m);
                }
            }
            Ok(r)
        })
        .collect()
}

/// The target copy of the calling thread: a pool worker's own, or the last one for
/// threads outside the pool.
fn copy_for_thread(copies: &[Mutex<Target>]) -> std::sync::MutexGuard<'_, Target> {
    let n = copies.len() - 1;
    let k = rayon::current_thread_index().map_or(n, |k| k % n.max(1));
    copies[k].lock().unwrap_or_else(|p| p.into_inner())
}
