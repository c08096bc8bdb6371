//! The fuzz loop: every round makes one input per lane by mutating corpus entries, runs
//! them all at once on the engine, and keeps the inputs whose coverage adds to what was
//! seen (saved in the corpus directory), the crashes (one file per crash key) and the
//! hangs (one file per distinct path).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use armada_core::coverage::{Novelty, Virgin, MAP_SIZE};
use rayon::prelude::*;

use crate::afl::{Origin, Status};
use crate::executor::{Executor, Maps, Pending};
use crate::mutate::Mutations;
use crate::output::{AflOptions, Output};
use crate::target::{ExecResult, Outcome, Target};

/// How to fuzz.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    pub corpus_dir: PathBuf,
    pub crashes_dir: PathBuf,
    /// Inputs run at once (one lane each).
    pub lanes: usize,
    pub max_time: Option<Duration>,
    pub max_execs: Option<u64>,
    /// Stop at the first new crash or hang.
    pub stop_on_crash: bool,
    pub seed: u64,
    pub max_len: usize,
    pub tokens: Vec<Vec<u8>>,
    /// Make and submit each round before the last one is collected, so the device runs one
    /// round while the host works on the other two; a round then learns from the rounds
    /// before the last. None: on a GPU engine, not on the CPU's (ARMADA_FUZZ_PIPELINE=0 or 1
    /// decides instead). A seed gives the same run on every engine with the same setting.
    pub pipeline: Option<bool>,
    /// AFL++'s output directory instead of `corpus_dir` and `crashes_dir` (see `afl`).
    pub afl: Option<AflOptions>,
    /// The instruction limit of an execution (for the stats).
    pub exec_limit: u64,
}

/// Where a fuzz run stands.
#[derive(Clone, Debug, Default)]
pub struct FuzzStats {
    pub execs: u64,
    pub elapsed: Duration,
    pub corpus: usize,
    pub edges: usize,
    /// Distinct crashes and hangs found by this run.
    pub crashes: usize,
    pub hangs: usize,
    /// Crash and hang files this run wrote, in order.
    pub saved: Vec<PathBuf>,
    /// What each of them did, in one line (`saved[i]`'s in `reports[i]`).
    pub reports: Vec<String>,
    /// Instructions each restored lane skips (0 without a snapshot).
    pub snapshot_instructions: u64,
    /// Instructions run, all executions together.
    pub instructions: u64,
    pub rounds: u64,
    /// Notes for the user, in order (an empty corpus, every input running the same path).
    pub warnings: Vec<String>,
    /// Inputs read from the corpus directory, and crashes and hangs saved there before.
    pub seeds: usize,
    pub known_crashes: usize,
    /// For a status screen: favored entries (the shortest input for some edge), entries
    /// never picked as a parent yet, queue cycles (times every entry was picked), the
    /// deepest entry's generations, and when the last find and crash came.
    pub favored: usize,
    pub pending: usize,
    pub cycles: u64,
    pub max_depth: u32,
    pub last_find: Option<Duration>,
    pub last_crash: Option<Duration>,
}

impl FuzzStats {
    pub fn execs_per_sec(&self) -> f64 {
        self.execs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// One JSON object (for `--stats-json`).
    pub fn to_json(&self) -> String {
        let saved: Vec<String> = self
            .saved
            .iter()
            .map(|p| format!("\"{}\"", json_escape(&p.to_string_lossy())))
            .collect();
        let reports: Vec<String> = self
            .reports
            .iter()
            .map(|r| format!("\"{}\"", json_escape(r)))
            .collect();
        format!(
            "{{\"execs\":{},\"execs_per_sec\":{:.1},\"elapsed_s\":{:.3},\"corpus\":{},\"edges\":{},\"crashes\":{},\"hangs\":{},\"rounds\":{},\"instructions\":{},\"snapshot_instructions\":{},\"saved\":[{}],\"reports\":[{}]}}",
            self.execs,
            self.execs_per_sec(),
            self.elapsed.as_secs_f64(),
            self.corpus,
            self.edges,
            self.crashes,
            self.hangs,
            self.rounds,
            self.instructions,
            self.snapshot_instructions,
            saved.join(","),
            reports.join(",")
        )
    }
}

fn json_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// One corpus entry.
struct Entry {
    data: Vec<u8>,
    /// Its id in the output (its corpus index, or its AFL queue id).
    id: usize,
    /// Times it was picked as a parent.
    picked: u64,
    /// Generations of mutation from a seed (a seed is 0).
    depth: u32,
}

/// xorshift64*: the scheduler's choices, repeatable with the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// How often an instance reads the other instances' queues (AFL++ syncs about as often).
const SYNC_EVERY: Duration = Duration::from_secs(30);
/// How often `fuzzer_stats` is rewritten and a `plot_data` line added.
const STATS_EVERY: Duration = Duration::from_secs(5);

/// Executions a crash's minimization may take.
const MINIMIZE_EXECS: u64 = 2048;

/// Mutation streams for a round of `n` inputs: one up to 2,047 inputs (the CPU engine's
/// rounds), then one per 1,024 inputs, at most 16 (a GPU round of 65,536 inputs made by one
/// thread took a quarter of the round).
fn streams_for(n: usize) -> usize {
    (n / 1024).clamp(1, 16)
}

/// Cuts a crashing input down while it still crashes with the same key: it tries removing
/// pieces of a half, a quarter, ... down to one byte, a batch of candidates at a time, and
/// keeps the first candidate of a batch that still crashes the same way. Returns the
/// shortest input found and the executions it took.
fn minimize(exec: &Executor, input: &[u8], key: &str, lanes: usize) -> Result<(Vec<u8>, u64)> {
    let mut best = input.to_vec();
    let mut spent = 0u64;
    let mut piece = best.len().div_ceil(2).max(1);
    while !best.is_empty() && spent < MINIMIZE_EXECS {
        let starts: Vec<usize> = (0..best.len()).step_by(piece).take(lanes.max(1)).collect();
        let candidates: Vec<Vec<u8>> = starts
            .iter()
            .map(|&i| {
                let mut c = best[..i].to_vec();
                c.extend_from_slice(&best[(i + piece).min(best.len())..]);
                c
            })
            .collect();
        let results = exec.run(&candidates, Maps::None)?;
        spent += candidates.len() as u64;
        let same = candidates
            .iter()
            .zip(&results)
            .find(|(_, r)| matches!(&r.outcome, Outcome::Crash { key: k, .. } if k == key));
        let found = same.map(|(c, _)| c.clone());
        exec.recycle(results);
        match found {
            Some(c) => best = c,
            None if piece == 1 => break,
            None => piece = piece.div_ceil(2),
        }
    }
    Ok((best, spent))
}

/// A round submitted to the executor: the corpus entries its inputs were made from (the
/// first `i2s` by input-to-state replacement).
struct Submitted {
    pending: Pending,
    parents: Vec<usize>,
    i2s: usize,
    mutations_s: f64,
}

/// The state of a fuzz run between rounds.
struct Run {
    corpus: Vec<Entry>,
    output: Output,
    t0: Instant,
    /// For AFL++'s stats (beside those in `stats`): entries found by mutation and taken
    /// from other instances, executions that ran out of instructions, when the last hang
    /// came, the executions at the last crash, the cycles at the last find, the last parent
    /// picked.
    found: usize,
    imported: usize,
    timeouts: u64,
    last_hang: Option<Duration>,
    execs_at_crash: u64,
    cycles_at_find: u64,
    cur_item: usize,
    virgin: Virgin,
    /// The mutations of rounds of one stream (`streams_for`).
    mutations: Mutations,
    /// What the streams of a larger round start from: the compare operands of the last
    /// trace, the seed, the dictionary, the size cap.
    compares: Vec<(u64, u64)>,
    seed: u64,
    tokens: Vec<Vec<u8>>,
    max_len: usize,
    rng: Rng,
    stats: FuzzStats,
    /// For each map slot, the shortest entry that hits it (entry, length), as AFL's
    /// "top rated"; the entries that are top for some slot are the favored ones.
    top: Vec<Option<(u32, u32)>>,
    favored: Vec<usize>,
    favored_stale: bool,
    /// Entries whose compares were not traced yet, the newest last.
    untraced: Vec<usize>,
    /// Crashes saved this round, to cut down: (file, input, key).
    to_minimize: Vec<(PathBuf, Vec<u8>, String)>,
    /// (path hash, outcome) of the first execution, and whether any differed.
    first_path: Option<(u32, String)>,
    paths_differ: bool,
    /// Rounds made so far (each seeds its mutation streams).
    made: u64,
}

impl Run {
    /// Takes one execution's result; true when it is a new crash or hang. `from`: the
    /// corpus entry `input` was made from and how (None for a seed or another instance's
    /// entry, which is kept whatever its coverage unless it crashes or hangs; `orig` says
    /// which).
    fn take(
        &mut self,
        input: &[u8],
        r: &ExecResult,
        from: Option<(usize, &'static str)>,
        orig: Option<&str>,
    ) -> Result<bool> {
        let keep_seed = from.is_none() && orig.is_none_or(|o| !o.starts_with("sync:"));
        self.stats.execs += 1;
        self.stats.instructions += r.instructions;
        if !self.paths_differ && self.stats.rounds < 4 {
            let hash = r
                .path
                .or_else(|| r.coverage.as_ref().map(|m| m.path_hash()))
                .unwrap_or(0);
            let path = (hash, r.outcome.to_string());
            match &self.first_path {
                None => self.first_path = Some(path),
                Some(p) if *p != path => self.paths_differ = true,
                _ => {}
            }
        }
        let origin = |new_edges| Origin {
            parent: from.map(|(p, _)| self.corpus[p].id),
            op: match (from, orig) {
                (Some((_, op)), _) => op,
                (None, Some(o)) if o.starts_with("sync:") => "sync",
                _ => "seed",
            },
            orig: orig.map(|o| o.strip_prefix("sync:").unwrap_or(o).to_string()),
            new_edges,
        };
        // (read only where something is saved: this runs once an execution)
        let t0 = self.t0;
        let elapsed = || t0.elapsed().as_secs_f64();
        match &r.outcome {
            Outcome::Crash {
                key,
                report,
                signal,
                ..
            } => {
                let o = origin(false);
                let saved = self.output.add_crash(
                    Some(*signal),
                    key,
                    input,
                    &o,
                    elapsed(),
                    self.stats.execs,
                    report,
                )?;
                if let Some(p) = saved {
                    self.stats.crashes += 1;
                    self.stats.saved.push(p.clone());
                    self.stats.reports.push(report.clone());
                    self.to_minimize.push((p, input.to_vec(), key.clone()));
                    self.stats.last_crash = Some(Duration::from_secs_f64(elapsed()));
                    self.execs_at_crash = self.stats.execs;
                    return Ok(true);
                }
            }
            Outcome::Hang { report, .. } => {
                // one hang a bucket: the functions it looped in (see `target::outcome_of`)
                self.timeouts += 1;
                let o = origin(false);
                let bucket = r.outcome.bucket().unwrap_or_default();
                let saved = self.output.add_crash(
                    None,
                    &bucket,
                    input,
                    &o,
                    elapsed(),
                    self.stats.execs,
                    report,
                )?;
                if let Some(p) = saved {
                    self.stats.hangs += 1;
                    self.stats.saved.push(p);
                    self.stats.reports.push(report.clone());
                    self.last_hang = Some(Duration::from_secs_f64(elapsed()));
                    return Ok(true);
                }
            }
            Outcome::Unsupported(m) => bail!("the target did something the engine cannot run: {m}"),
            Outcome::Exited(_) => {
                // no map: the executor found nothing new in it (`Maps::News`)
                let Some(map) = &r.coverage else {
                    return Ok(false);
                };
                let novelty = self.virgin.merge(map.as_slice());
                if novelty != Novelty::None || keep_seed {
                    let o = origin(novelty == Novelty::NewEdges);
                    let index = self.corpus.len();
                    let id =
                        self.output
                            .add_entry(input, index, &o, elapsed(), self.stats.execs)?;
                    if from.is_some() {
                        self.found += 1;
                        self.stats.last_find = Some(Duration::from_secs_f64(elapsed()));
                        self.cycles_at_find = self.cycles();
                    } else if o.op == "sync" {
                        self.imported += 1;
                    }
                    self.mutations.add(input);
                    let (idx, len) = (index as u32, input.len() as u32);
                    for (slot, &c) in map.as_slice().iter().enumerate() {
                        if c != 0 && self.top[slot].is_none_or(|(_, l)| len < l) {
                            self.top[slot] = Some((idx, len));
                            self.favored_stale = true;
                        }
                    }
                    self.untraced.push(index);
                    self.corpus.push(Entry {
                        data: input.to_vec(),
                        id,
                        picked: 0,
                        depth: from.map_or(0, |(p, _)| self.corpus[p].depth + 1),
                    });
                }
            }
        }
        Ok(false)
    }

    /// Rewrites AFL++'s `fuzzer_stats` (and a `plot_data` line with `plot`), where the run
    /// writes AFL++'s layout.
    fn write_status(&mut self, exec_limit: u64, plot: bool) -> Result<()> {
        if self.output.afl().is_none() {
            return Ok(());
        }
        let s = self.status(exec_limit);
        match self.output.afl() {
            Some(d) => d.update(&s, plot),
            None => Ok(()),
        }
    }

    /// The status screen's figures into the stats.
    fn note_status(&mut self) {
        let cycles = self.cycles();
        let s = &mut self.stats;
        s.favored = self.favored.len();
        s.pending = self.corpus.iter().filter(|e| e.picked == 0).count();
        s.cycles = cycles;
        s.max_depth = self.corpus.iter().map(|e| e.depth).max().unwrap_or(0);
    }

    /// Queue cycles done, as AFL counts them: times every entry has been picked.
    fn cycles(&self) -> u64 {
        self.corpus.iter().map(|e| e.picked).min().unwrap_or(0)
    }

    /// The figures of AFL++'s `fuzzer_stats` and `plot_data`: the status screen's, and
    /// those only AFL++'s files have.
    fn status(&mut self, exec_limit: u64) -> Status {
        self.note_status();
        let s = &self.stats;
        let pending_favs = self
            .favored
            .iter()
            .filter(|&&i| self.corpus[i].picked == 0)
            .count();
        let elapsed = self.t0.elapsed().as_secs_f64();
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        Status {
            execs: self.stats.execs,
            execs_per_sec: self.stats.execs as f64 / elapsed.max(1e-9),
            corpus_count: self.corpus.len(),
            favored: s.favored,
            found: self.found,
            imported: self.imported,
            max_depth: s.max_depth,
            cur_item: self.cur_item,
            pending_favs,
            pending_total: s.pending,
            cycles_done: s.cycles,
            cycles_wo_finds: s.cycles.saturating_sub(self.cycles_at_find),
            edges: self.virgin.edges(),
            crashes: self.output.known_crashes(),
            hangs: self.output.known_hangs(),
            timeouts: self.timeouts,
            elapsed,
            last_find: secs(s.last_find),
            last_crash: secs(s.last_crash),
            last_hang: secs(self.last_hang),
            execs_since_crash: self.stats.execs - self.execs_at_crash,
            exec_limit,
        }
    }

    /// Takes the new entries of other instances sharing the AFL++ output directory, runs
    /// them, and keeps those that add coverage here.
    fn sync(&mut self, exec: &Executor, lanes: usize) -> Result<()> {
        let max_len = self.max_len;
        let Some(d) = self.output.afl() else {
            return Ok(());
        };
        let found = d.take_peers(max_len)?;
        for chunk in found.chunks(lanes.max(1)) {
            let inputs: Vec<Vec<u8>> = chunk.iter().map(|(_, d)| d.clone()).collect();
            let results = exec.run(&inputs, Maps::All)?;
            for ((peer, input), r) in chunk.iter().zip(&results) {
                self.take(input, r, None, Some(&format!("sync:{peer}")))?;
            }
            exec.recycle(results);
            self.minimize_crashes(exec, lanes)?;
        }
        Ok(())
    }

    /// Makes the next round and submits it.
    fn submit_round(&mut self, exec: &Executor, lanes: usize) -> Result<Submitted> {
        // The newest entry not traced yet: its compares' operands drive input-to-state
        // mutants for half of this round.
        let mut i2s = 0;
        let mut traced = None;
        if let Some(e) = self.untraced.pop() {
            let pairs = exec.trace(&self.corpus[e].data)?;
            if !pairs.is_empty() {
                self.mutations.set_compares(&pairs);
                self.compares = pairs;
                i2s = lanes.div_ceil(2);
            }
            self.corpus[e].picked += 1;
            traced = Some(e);
        }
        let parents: Vec<usize> = (0..lanes)
            .map(|k| match traced {
                Some(e) if k < i2s => e,
                _ => self.pick(),
            })
            .collect();
        let t = Instant::now();
        let inputs = self.mutants(&parents, i2s)?;
        self.made += 1;
        let mutations_s = t.elapsed().as_secs_f64();
        Ok(Submitted {
            pending: exec.submit(inputs, Some(&self.virgin))?,
            parents,
            i2s,
            mutations_s,
        })
    }

    /// Cuts down the crashes saved since the last call and rewrites their files.
    fn minimize_crashes(&mut self, exec: &Executor, lanes: usize) -> Result<()> {
        for (path, input, key) in std::mem::take(&mut self.to_minimize) {
            let (small, spent) = minimize(exec, &input, &key, lanes)?;
            self.stats.execs += spent;
            if small.len() < input.len() {
                crate::corpus::write_new(&path, &small)?;
            }
        }
        Ok(())
    }

    /// A parent for the next mutant: mostly a favored entry (the shortest input for some
    /// edge: few, small, and together they cover everything seen), sometimes one of the
    /// newest quarter (what found something last) or any entry; of two candidates, the
    /// deeper one (more generations of finds: closer to what is still hidden), else the
    /// one picked less often so far.
    /// A mutant of each parent (corpus indices); those before `i2s` input-to-state ones.
    /// A large round is cut into runs of inputs, each made on its own thread by a stream of
    /// its own, seeded from the round and the run: how many depends on the round's size
    /// alone, so a seed gives the same inputs on every engine and any number of cores.
    fn mutants(&mut self, parents: &[usize], i2s: usize) -> Result<Vec<Vec<u8>>> {
        let n = parents.len();
        let streams = streams_for(n);
        let one = |m: &mut Mutations, k: usize, corpus: &[Entry]| {
            let parent = &corpus[parents[k]].data;
            if k < i2s {
                m.mutate_i2s(parent)
            } else {
                m.mutate(parent)
            }
        };
        if streams == 1 {
            let (m, corpus) = (&mut self.mutations, &self.corpus);
            return Ok((0..n).map(|k| one(m, k, corpus)).collect());
        }
        let run = n.div_ceil(streams);
        let round = self.made;
        let (seed, tokens, max_len) = (self.seed, &self.tokens, self.max_len);
        let (corpus, compares) = (&self.corpus, &self.compares);
        let parts: Vec<Vec<Vec<u8>>> = (0..streams)
            .into_par_iter()
            .map(|j| -> Result<Vec<Vec<u8>>> {
                // (LibAFL's state cannot move between threads: each stream is made here)
                let seed = seed
                    ^ (round.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    ^ ((j as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
                let mut m = Mutations::new(seed, tokens.clone(), max_len)?;
                for e in corpus {
                    m.add(&e.data);
                }
                if !compares.is_empty() {
                    m.set_compares(compares);
                }
                Ok((j * run..((j + 1) * run).min(n))
                    .map(|k| one(&mut m, k, corpus))
                    .collect())
            })
            .collect::<Result<_>>()?;
        Ok(parts.into_iter().flatten().collect())
    }

    fn pick(&mut self) -> usize {
        if self.favored_stale {
            let mut f: Vec<usize> = self
                .top
                .iter()
                .flatten()
                .map(|&(e, _)| e as usize)
                .collect();
            f.sort_unstable();
            f.dedup();
            self.favored = f;
            self.favored_stale = false;
        }
        let n = self.corpus.len();
        let one = |rng: &mut Rng, favored: &[usize]| match rng.below(10) {
            0..=7 if !favored.is_empty() => favored[rng.below(favored.len())],
            8 => n - 1 - rng.below(n.div_ceil(4)),
            _ => rng.below(n),
        };
        let a = one(&mut self.rng, &self.favored);
        let b = one(&mut self.rng, &self.favored);
        let (ea, eb) = (&self.corpus[a], &self.corpus[b]);
        let i = if (ea.depth, u64::MAX - ea.picked) >= (eb.depth, u64::MAX - eb.picked) {
            a
        } else {
            b
        };
        self.corpus[i].picked += 1;
        self.cur_item = self.corpus[i].id;
        i
    }
}

/// Fuzzes `target` until a limit in `opts` is reached, or `progress` (called after every
/// round with the figures so far) returns false.
///
/// With `engine`, rounds run on that GPU engine (traces and crash minimization too; the
/// CPU engine traces compares); without, on every host core.
pub fn fuzz(
    target: Target,
    opts: &FuzzOptions,
    engine: Option<armada_gpu::Engine>,
    progress: &mut dyn FnMut(&FuzzStats) -> bool,
) -> Result<FuzzStats> {
    let t0 = Instant::now();
    let (output, seeds) = Output::open(
        &opts.corpus_dir,
        &opts.crashes_dir,
        opts.afl.as_ref(),
        opts.max_len,
    )?;
    let snapshot_instructions = target.snapshot().map_or(0, |s| s.retired());
    let exec = Executor::new(target, engine);
    let mut run = Run {
        corpus: Vec::new(),
        output,
        t0,
        found: 0,
        imported: 0,
        timeouts: 0,
        last_hang: None,
        execs_at_crash: 0,
        cycles_at_find: 0,
        cur_item: 0,
        virgin: Virgin::default(),
        mutations: Mutations::new(opts.seed, opts.tokens.clone(), opts.max_len)?,
        compares: Vec::new(),
        seed: opts.seed,
        tokens: opts.tokens.clone(),
        max_len: opts.max_len,
        rng: Rng(opts.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
        stats: FuzzStats {
            snapshot_instructions,
            ..Default::default()
        },
        top: vec![None; MAP_SIZE],
        favored: Vec::new(),
        favored_stale: false,
        untraced: Vec::new(),
        to_minimize: Vec::new(),
        first_path: None,
        paths_differ: false,
        made: 0,
    };
    let mut seeds = seeds;
    run.stats.seeds = seeds.len();
    run.stats.known_crashes = run.output.known();
    if seeds.is_empty() {
        run.stats.warnings.push(format!(
            "the corpus directory {} is empty: starting from one empty input",
            run.output.corpus_dir().display()
        ));
        seeds.push(("empty".into(), Vec::new()));
    }
    for chunk in seeds.chunks(opts.lanes.max(1)) {
        // seeds are kept whatever they add, so every map comes
        let inputs: Vec<Vec<u8>> = chunk.iter().map(|(_, d)| d.clone()).collect();
        let results = exec.run(&inputs, Maps::All)?;
        for ((name, input), r) in chunk.iter().zip(&results) {
            run.take(input, r, None, Some(name))?;
        }
        exec.recycle(results);
        run.minimize_crashes(&exec, opts.lanes)?;
    }
    // what other instances sharing the output directory found so far
    run.sync(&exec, opts.lanes)?;
    let mut last_sync = Instant::now();
    let mut last_plot = Instant::now();
    run.write_status(opts.exec_limit, true)?;
    run.stats.corpus = run.corpus.len();
    run.stats.edges = run.virgin.edges();
    run.stats.elapsed = t0.elapsed();
    if run.corpus.is_empty() {
        let saved = run.stats.saved.first().map_or_else(
            || {
                format!(
                    "crashes already known in {}",
                    run.output.crashes_dir().display()
                )
            },
            |p| p.display().to_string(),
        );
        bail!(
            "every input of the corpus crashes or hangs the target (see {saved}): there is nothing to fuzz from; fix the target or start from other inputs"
        );
    }
    let mut go_on = progress(&run.stats);
    // ARMADA_FUZZ_PROFILE=1: where a round's time goes (the executor says more)
    let profile = std::env::var_os("ARMADA_FUZZ_PROFILE").is_some();
    // (with it: seconds making inputs, waiting for rounds, taking their results)
    let mut laps = [0f64; 3];
    let done = |s: &FuzzStats| {
        opts.max_time.is_some_and(|m| s.elapsed >= m)
            || opts.max_execs.is_some_and(|m| s.execs >= m)
            || (opts.stop_on_crash && s.crashes + s.hangs > 0)
    };
    // Pipelined rounds (`FuzzOptions::pipeline`): round k+1 is made (from what rounds up to
    // k-1 found) and submitted before round k is collected, so on a GPU the device runs one
    // round while the host takes the last one's results and makes the next.
    let pipeline = match std::env::var("ARMADA_FUZZ_PIPELINE").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => opts.pipeline.unwrap_or(exec.on_gpu()),
    };
    let depth = if pipeline { 2 } else { 1 };
    // (on the CPU engine a pipelined round runs on the pool from a thread of its own)
    exec.set_background(pipeline && !exec.on_gpu());
    let mut running: std::collections::VecDeque<Submitted> = Default::default();
    loop {
        let submitted: u64 = running.iter().map(|r| r.parents.len() as u64).sum();
        let more = go_on
            && !done(&run.stats)
            && opts
                .max_execs
                .is_none_or(|m| run.stats.execs + submitted < m);
        if more {
            running.push_back(run.submit_round(&exec, opts.lanes.max(1))?);
            if running.len() < depth {
                continue;
            }
        }
        let Some(round) = running.pop_front() else {
            break;
        };
        let t_collect = Instant::now();
        let maps = Maps::News {
            virgin: &run.virgin,
            // (for the warning that every input runs the same path, after 4 rounds)
            paths: !run.paths_differ && run.stats.rounds < 4,
        };
        let (inputs, results) = exec.collect(round.pending, maps)?;
        let t_ran = Instant::now();
        for (k, ((input, r), &p)) in inputs.iter().zip(&results).zip(&round.parents).enumerate() {
            let op = if k < round.i2s {
                "colorization"
            } else {
                "havoc"
            };
            run.take(input, r, Some((p, op)), None)?;
        }
        exec.recycle(results);
        if profile {
            let (collection, results) = (
                (t_ran - t_collect).as_secs_f64(),
                t_ran.elapsed().as_secs_f64(),
            );
            eprintln!(
                "armada fuzz: round {}: mutations {:.6} s, collection {:.6} s, results {:.6} s",
                run.stats.rounds, round.mutations_s, collection, results
            );
            laps[0] += round.mutations_s;
            laps[1] += collection;
            laps[2] += results;
        }
        run.minimize_crashes(&exec, opts.lanes)?;
        if last_sync.elapsed() >= SYNC_EVERY {
            run.sync(&exec, opts.lanes)?;
            last_sync = Instant::now();
        }
        if last_plot.elapsed() >= STATS_EVERY {
            run.write_status(opts.exec_limit, true)?;
            last_plot = Instant::now();
        }
        run.stats.rounds += 1;
        run.note_status();
        run.stats.corpus = run.corpus.len();
        run.stats.edges = run.virgin.edges();
        run.stats.elapsed = t0.elapsed();
        if run.stats.rounds == 4 && !run.paths_differ {
            let how = run
                .first_path
                .as_ref()
                .map_or(String::new(), |p| p.1.clone());
            run.stats.warnings.push(format!(
                "every input so far ran the same path and ended the same way ({how}): does the target read its input (stdin, or @@ in its arguments), and are its arguments right?"
            ));
        }
        go_on = progress(&run.stats);
    }
    run.write_status(opts.exec_limit, true)?;
    if profile {
        // the fuzzer's thread: what it did between rounds, and how long it waited for them
        eprintln!(
            "armada fuzz: {} rounds in {:.3} s: making inputs {:.3} s, waiting for rounds {:.3} s, taking results {:.3} s, the rest {:.3} s",
            run.stats.rounds,
            t0.elapsed().as_secs_f64(),
            laps[0],
            laps[1],
            laps[2],
            t0.elapsed().as_secs_f64() - laps.iter().sum::<f64>()
        );
    }
    Ok(run.stats)
}
