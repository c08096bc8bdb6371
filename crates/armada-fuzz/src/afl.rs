//! AFL++'s output directory, so the tools people already run on a fuzzer's output
//! (`afl-whatsup`, `afl-plot`, `afl-cmin`, `afl-tmin`, their own scripts) read armada's.
//!
//! `armada fuzz -o OUT` keeps one instance's state in `OUT/NAME` (`default`, or the name
//! given with `-M`/`-S`), as `afl-fuzz -o OUT` does:
//! - `queue/id:NNNNNN,...`: the corpus, one file an entry, named as AFL++ names them
//!   (`orig:` for a seed, `src:` the entry it was made from, `op:`, `+cov` where it found
//!   a new edge, `sync:` where it came from another instance);
//! - `crashes/id:NNNNNN,sig:SS,...` and `hangs/id:NNNNNN,...`: one file a bucket (see
//!   `armada_core::runner::crash`), the bucket last in the name (`bucket:`), so a resumed
//!   run knows them; `crashes/README.txt` has the command line and each crash in one line;
//! - `fuzzer_stats` (`key : value` lines, rewritten whole every few seconds) and
//!   `plot_data` (a line every few seconds), in AFL++ 4's fields;
//! - `cmdline` (the target's arguments, a line each) and `fuzzer_setup`;
//! - `plot.html`: the same figures as a picture (see `plot`).
//!
//! A second run with the same `-o` and name resumes: the queue is the corpus, the known
//! buckets stay known, the counts go on. Instances with other names in the same `OUT`
//! (AFL++'s main and secondaries) take each other's new queue entries now and then,
//! keeping those that add coverage here; `.synced/NAME` holds how far each was read.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::corpus::{content_hash, read_dir_sorted, write_new, Named};

/// How a new entry, crash or hang came about, for its file name.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The corpus entry (its id) it was made from; None for a seed.
    pub parent: Option<usize>,
    /// AFL's stage name: `havoc`, `colorization` (input-to-state), `sync`...
    pub op: &'static str,
    /// The seed's file name, or the instance it came from.
    pub orig: Option<String>,
    /// It found an edge never seen before (AFL++'s `+cov`).
    pub new_edges: bool,
}

/// The figures `fuzzer_stats` and `plot_data` report, from the fuzz loop.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Executions of this run (the directory's earlier runs are added here).
    pub execs: u64,
    pub execs_per_sec: f64,
    pub corpus_count: usize,
    pub favored: usize,
    pub found: usize,
    pub imported: usize,
    pub max_depth: u32,
    pub cur_item: usize,
    pub pending_favs: usize,
    pub pending_total: usize,
    pub cycles_done: u64,
    pub cycles_wo_finds: u64,
    pub edges: usize,
    pub crashes: usize,
    pub hangs: usize,
    /// Executions that ran out of instructions (AFL's timeouts).
    pub timeouts: u64,
    /// Seconds since this run started.
    pub elapsed: f64,
    /// Seconds since this run started of the last find, crash and hang (None: none yet).
    pub last_find: Option<f64>,
    pub last_crash: Option<f64>,
    pub last_hang: Option<f64>,
    pub execs_since_crash: u64,
    pub exec_limit: u64,
}

/// What earlier runs in this directory left (from their `fuzzer_stats`).
#[derive(Clone, Copy, Debug, Default)]
struct Prior {
    execs: u64,
    run_time: u64,
    start_time: u64,
}

/// One instance's output directory.
pub struct AflDir {
    dir: PathBuf,
    name: String,
    /// The other instances' directories found so far, and the last id taken from each.
    peers: Vec<(String, usize)>,
    next_entry: usize,
    next_crash: usize,
    next_hang: usize,
    buckets: HashSet<String>,
    /// Content hashes of the queue, so an input that is there already is not added again.
    hashes: HashSet<u64>,
    prior: Prior,
    start_time: u64,
    command_line: String,
    plot_header: bool,
    /// `plot_data`'s lines so far (earlier runs' too), for `plot.html`.
    samples: Vec<crate::plot::Sample>,
}

/// Unix time in seconds.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The id in an AFL name (`id:000123,...`).
fn id_of(name: &str) -> Option<usize> {
    name.strip_prefix("id:")?.split(',').next()?.parse().ok()
}

/// A field of an AFL name (`bucket:` in `id:...,bucket:KEY`).
fn field<'a>(name: &'a str, key: &str) -> Option<&'a str> {
    name.split(',').find_map(|f| f.strip_prefix(key))
}

impl AflDir {
    /// Opens `out/name` (made if missing), with the seeds of `seeds_dir` where given.
    /// Returns it, the inputs to start from (the queue of an earlier run, then the seeds
    /// not in it: (file name, bytes), the seeds' names prefixed `orig:`).
    /// `command_line`: the target's arguments, for `cmdline` and the stats.
    pub fn open(
        out: &Path,
        name: &str,
        seeds_dir: Option<&Path>,
        max_len: usize,
        command_line: &[String],
    ) -> Result<(AflDir, Vec<Named>)> {
        if name.is_empty()
            || name.starts_with('.')
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            bail!("fuzzer name {name:?}: use letters, digits, '_' and '-' (as afl-fuzz -M/-S)");
        }
        let dir = out.join(name);
        for sub in ["queue", "crashes", "hangs", ".synced"] {
            fs::create_dir_all(dir.join(sub)).with_context(|| {
                format!(
                    "cannot create the output directory {}",
                    dir.join(sub).display()
                )
            })?;
        }
        crate::corpus::check_writable(&dir)?;
        let mut d = AflDir {
            dir: dir.clone(),
            name: name.to_string(),
            peers: Vec::new(),
            next_entry: 0,
            next_crash: 0,
            next_hang: 0,
            buckets: HashSet::new(),
            hashes: HashSet::new(),
            prior: Prior::default(),
            start_time: now(),
            command_line: command_line.join(" "),
            plot_header: !dir.join("plot_data").exists(),
            samples: fs::read_to_string(dir.join("plot_data"))
                .unwrap_or_default()
                .lines()
                .filter_map(crate::plot::Sample::parse)
                .collect(),
        };
        let mut inputs = Vec::new();
        for (n, data) in read_dir_sorted(&dir.join("queue"), max_len)? {
            if let Some(id) = id_of(&n) {
                d.next_entry = d.next_entry.max(id + 1);
            }
            d.hashes.insert(content_hash(&data));
            inputs.push((n, data));
        }
        let resumed = !inputs.is_empty();
        for (sub, next) in [("crashes", &mut d.next_crash), ("hangs", &mut d.next_hang)] {
            for e in fs::read_dir(dir.join(sub))? {
                let n = e?.file_name().to_string_lossy().into_owned();
                if let Some(id) = id_of(&n) {
                    *next = (*next).max(id + 1);
                }
                if let Some(b) = field(&n, "bucket:") {
                    d.buckets.insert(format!("{sub}/{b}"));
                }
            }
        }
        if resumed {
            d.prior = read_prior(&dir.join("fuzzer_stats"));
            if d.prior.start_time != 0 {
                d.start_time = d.prior.start_time;
            }
        }
        if let Some(s) = seeds_dir {
            let seeds = read_dir_sorted(s, max_len)
                .with_context(|| format!("cannot read the seeds directory {}", s.display()))?;
            for (n, data) in seeds {
                if d.hashes.contains(&content_hash(&data)) {
                    continue;
                }
                inputs.push((format!("orig:{n}"), data));
            }
        }
        // the target's arguments, a line each, as afl-fuzz writes them
        let mut cmdline = String::new();
        for a in command_line {
            cmdline.push_str(a);
            cmdline.push('\n');
        }
        write_new(&dir.join("cmdline"), cmdline.as_bytes())?;
        let mut setup = String::from("# armada fuzz\n# command line:\n");
        setup.push_str(&std::env::args().collect::<Vec<_>>().join(" "));
        setup.push('\n');
        write_new(&dir.join("fuzzer_setup"), setup.as_bytes())?;
        Ok((d, inputs))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Buckets (crashes and hangs) known from earlier runs and this one.
    pub fn known(&self) -> usize {
        self.buckets.len()
    }

    /// Those of `crashes/` or `hangs/`.
    pub fn known_with(&self, sub: &str) -> usize {
        self.buckets.iter().filter(|b| b.starts_with(sub)).count()
    }

    /// Adds a corpus entry; returns its id. An entry of the queue itself (a resumed run's,
    /// named `id:...`) keeps its file and id.
    pub fn add_entry(
        &mut self,
        data: &[u8],
        o: &Origin,
        time_ms: u64,
        execs: u64,
    ) -> Result<usize> {
        if o.parent.is_none() && o.op == "seed" {
            if let Some(id) = o.orig.as_deref().and_then(id_of) {
                return Ok(id);
            }
        }
        let id = self.next_entry;
        self.next_entry += 1;
        self.hashes.insert(content_hash(data));
        let mut name = format!("id:{id:06}");
        if let Some(p) = o.parent {
            let _ = write!(name, ",src:{p:06}");
        }
        let _ = write!(name, ",time:{time_ms},execs:{execs}");
        match (&o.orig, o.op) {
            (Some(orig), "seed") => {
                let orig = orig.strip_prefix("orig:").unwrap_or(orig);
                let _ = write!(name, ",orig:{}", safe(orig));
            }
            (Some(peer), _) => {
                let _ = write!(name, ",sync:{}", safe(peer));
            }
            (None, op) => {
                let _ = write!(name, ",op:{op}");
            }
        }
        if o.new_edges && o.op != "seed" {
            name.push_str(",+cov");
        }
        write_new(&self.dir.join("queue").join(name), data)?;
        Ok(id)
    }

    /// Saves a crash (`signal` Some) or hang in bucket `bucket` unless the bucket is known;
    /// its path when it is new.
    #[allow(clippy::too_many_arguments)]
    pub fn add_crash(
        &mut self,
        signal: Option<i32>,
        bucket: &str,
        data: &[u8],
        o: &Origin,
        time_ms: u64,
        execs: u64,
        report: &str,
    ) -> Result<Option<PathBuf>> {
        let sub = if signal.is_some() { "crashes" } else { "hangs" };
        if !self.buckets.insert(format!("{sub}/{bucket}")) {
            return Ok(None);
        }
        let next = if signal.is_some() {
            &mut self.next_crash
        } else {
            &mut self.next_hang
        };
        let id = *next;
        *next += 1;
        let mut name = format!("id:{id:06}");
        if let Some(s) = signal {
            let _ = write!(name, ",sig:{s:02}");
        }
        if let Some(p) = o.parent {
            let _ = write!(name, ",src:{p:06}");
        }
        let _ = write!(
            name,
            ",time:{time_ms},execs:{execs},op:{},bucket:{bucket}",
            o.op
        );
        let path = self.dir.join(sub).join(&name);
        write_new(&path, data)?;
        if signal.is_some() {
            self.note_crash(&name, report)?;
        }
        Ok(Some(path))
    }

    /// crashes/README.txt: the command line once, then each crash in one line.
    fn note_crash(&self, name: &str, report: &str) -> Result<()> {
        let p = self.dir.join("crashes/README.txt");
        let new = !p.exists();
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .with_context(|| format!("cannot write {}", p.display()))?;
        if new {
            writeln!(
                f,
                "Crashes found by armada fuzz, one file a bucket (the signal, the faulting PC and the\n\
                 functions on the stack). Run one again with: armada run {} < crashes/FILE\n\
                 (or with the file in place of @@).\n\ncommand line: {}\n",
                self.command_line, self.command_line
            )?;
        }
        writeln!(f, "{name}: {report}")?;
        Ok(())
    }

    /// New entries of the other instances in the output directory since the last call:
    /// (instance, bytes). What was read is remembered in `.synced/NAME`.
    pub fn take_peers(&mut self, max_len: usize) -> Result<Vec<(String, Vec<u8>)>> {
        let out = self.dir.parent().unwrap_or(Path::new("."));
        let mut found = Vec::new();
        let Ok(entries) = fs::read_dir(out) else {
            return Ok(found);
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("queue").is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| *n != self.name && !n.starts_with('.'))
            .collect();
        names.sort();
        for peer in names {
            let k = match self.peers.iter().position(|p| p.0 == peer) {
                Some(k) => k,
                None => {
                    let seen = fs::read_to_string(self.dir.join(".synced").join(&peer))
                        .ok()
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(0);
                    self.peers.push((peer.clone(), seen));
                    self.peers.len() - 1
                }
            };
            let from = self.peers[k].1;
            let mut last = from;
            for (n, data) in read_dir_sorted(&out.join(&peer).join("queue"), max_len)? {
                let Some(id) = id_of(&n) else { continue };
                // entries it took from others (and so from here) are not passed back
                if id < from || field(&n, "sync:").is_some() {
                    last = last.max(id + 1);
                    continue;
                }
                last = last.max(id + 1);
                if self.hashes.contains(&content_hash(&data)) {
                    continue;
                }
                found.push((peer.clone(), data));
            }
            if last != from {
                self.peers[k].1 = last;
                write_new(
                    &self.dir.join(".synced").join(&peer),
                    format!("{last}\n").as_bytes(),
                )?;
            }
        }
        Ok(found)
    }

    /// Rewrites `fuzzer_stats` and appends a line to `plot_data`.
    pub fn update(&mut self, s: &Status, plot: bool) -> Result<()> {
        let t = now();
        let run_time = self.prior.run_time + s.elapsed as u64;
        let execs = self.prior.execs + s.execs;
        let at = |x: Option<f64>| x.map_or(0, |e| self.run_start() + e as u64);
        let cvg = 100.0 * s.edges as f64 / armada_core::coverage::MAP_SIZE as f64;
        let mut f = String::new();
        let mut kv = |k: &str, v: String| {
            let _ = writeln!(f, "{k:<18}: {v}");
        };
        kv("start_time", self.start_time.to_string());
        kv("last_update", t.to_string());
        kv("run_time", run_time.to_string());
        kv("fuzzer_pid", std::process::id().to_string());
        kv("cycles_done", s.cycles_done.to_string());
        kv("cycles_wo_finds", s.cycles_wo_finds.to_string());
        kv("execs_done", execs.to_string());
        kv("execs_per_sec", format!("{:.2}", s.execs_per_sec));
        kv("corpus_count", s.corpus_count.to_string());
        kv("corpus_favored", s.favored.to_string());
        kv("corpus_found", s.found.to_string());
        kv("corpus_imported", s.imported.to_string());
        kv("corpus_variable", "0".into());
        kv("max_depth", s.max_depth.to_string());
        kv("cur_item", s.cur_item.to_string());
        kv("pending_favs", s.pending_favs.to_string());
        kv("pending_total", s.pending_total.to_string());
        // every run of the same input takes the same path (the engines are deterministic)
        kv("stability", "100.00%".into());
        kv("bitmap_cvg", format!("{cvg:.2}%"));
        kv("saved_crashes", s.crashes.to_string());
        kv("saved_hangs", s.hangs.to_string());
        kv("last_find", at(s.last_find).to_string());
        kv("last_crash", at(s.last_crash).to_string());
        kv("last_hang", at(s.last_hang).to_string());
        kv("execs_since_crash", s.execs_since_crash.to_string());
        // AFL's is a time in ms; here executions end at an instruction count, and
        // afl-whatsup reads this as the share of executions that ran out: the count of them
        kv("exec_timeout", s.timeouts.to_string());
        kv("exec_limit_instructions", s.exec_limit.to_string());
        kv("edges_found", s.edges.to_string());
        kv("total_edges", armada_core::coverage::MAP_SIZE.to_string());
        kv("afl_banner", self.name.clone());
        kv(
            "afl_version",
            format!("armada-{}", env!("CARGO_PKG_VERSION")),
        );
        kv("target_mode", "armada".into());
        kv("command_line", self.command_line.clone());
        write_new(&self.dir.join("fuzzer_stats"), f.as_bytes())?;
        if plot {
            let p = self.dir.join("plot_data");
            let mut file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .with_context(|| format!("cannot write {}", p.display()))?;
            if self.plot_header {
                writeln!(file, "# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found")?;
                self.plot_header = false;
            }
            let line = format!(
                "{run_time}, {}, {}, {}, {}, {}, {cvg:.2}%, {}, {}, {}, {:.2}, {execs}, {}",
                s.cycles_done,
                s.cur_item,
                s.corpus_count,
                s.pending_total,
                s.pending_favs,
                s.crashes,
                s.hangs,
                s.max_depth,
                s.execs_per_sec,
                s.edges
            );
            writeln!(file, "{line}")?;
            self.samples.extend(crate::plot::Sample::parse(&line));
            let page = crate::plot::html(&self.name, &self.command_line, &self.samples);
            write_new(&self.dir.join("plot.html"), page.as_bytes())?;
        }
        Ok(())
    }

    /// When this run started, in Unix seconds.
    fn run_start(&self) -> u64 {
        self.start_time + self.prior.run_time
    }

    /// Milliseconds into the instance's life (earlier runs included), for names.
    pub fn time_ms(&self, elapsed: f64) -> u64 {
        self.prior.run_time * 1000 + (elapsed * 1000.0) as u64
    }

    /// Executions of earlier runs, for names.
    pub fn prior_execs(&self) -> u64 {
        self.prior.execs
    }
}

/// A file-name-safe form of a seed's name or an instance's.
fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The counts an earlier run left in `fuzzer_stats`.
fn read_prior(p: &Path) -> Prior {
    let mut prior = Prior::default();
    let Ok(text) = fs::read_to_string(p) else {
        return prior;
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().parse().unwrap_or(0);
        match k.trim() {
            "execs_done" => prior.execs = v,
            "run_time" => prior.run_time = v,
            "start_time" => prior.start_time = v,
            _ => {}
        }
    }
    prior
}
