//! Where a fuzz run's finds go: armada's own corpus and crashes directories (`--corpus`,
//! `--crashes`: files named by content hash and by bucket), or AFL++'s output directory
//! (`-o`, see [`crate::afl`]).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::afl::{AflDir, Origin};
use crate::corpus::{CorpusDir, CrashDir, Named};

/// AFL++'s layout, asked for with `-o`.
#[derive(Clone, Debug)]
pub struct AflOptions {
    /// The output directory (`-o`); this instance's state is in `out/name`.
    pub out: PathBuf,
    /// The instance's name: `default`, or `-M`/`-S`'s.
    pub name: String,
    /// Seeds to start from (`-i`), besides an earlier run's queue.
    pub seeds: Option<PathBuf>,
    /// The target's command line, for `cmdline` and `fuzzer_stats`.
    pub command_line: Vec<String>,
}

pub enum Output {
    Flat {
        corpus: CorpusDir,
        crashes: CrashDir,
    },
    Afl(AflDir),
}

impl Output {
    /// Opens the directories; returns the output and the inputs to start from.
    pub fn open(
        corpus_dir: &Path,
        crashes_dir: &Path,
        afl: Option<&AflOptions>,
        max_len: usize,
    ) -> Result<(Output, Vec<Named>)> {
        Ok(match afl {
            Some(a) => {
                let (d, inputs) = AflDir::open(
                    &a.out,
                    &a.name,
                    a.seeds.as_deref(),
                    max_len,
                    &a.command_line,
                )?;
                (Output::Afl(d), inputs)
            }
            None => {
                let (corpus, inputs) = CorpusDir::open(corpus_dir, max_len)?;
                let crashes = CrashDir::open(crashes_dir)?;
                (Output::Flat { corpus, crashes }, inputs)
            }
        })
    }

    /// Crashes and hangs known before this run.
    pub fn known(&self) -> usize {
        match self {
            Output::Flat { crashes, .. } => crashes.known(),
            Output::Afl(d) => d.known(),
        }
    }

    /// Crash buckets saved, by this run and earlier ones.
    pub fn known_crashes(&self) -> usize {
        match self {
            Output::Flat { crashes, .. } => crashes.known_with("crash-"),
            Output::Afl(d) => d.known_with("crashes/"),
        }
    }

    /// Hang buckets saved, by this run and earlier ones.
    pub fn known_hangs(&self) -> usize {
        match self {
            Output::Flat { crashes, .. } => crashes.known_with("hang-"),
            Output::Afl(d) => d.known_with("hangs/"),
        }
    }

    /// Where crashes go, for messages.
    pub fn crashes_dir(&self) -> PathBuf {
        match self {
            Output::Flat { crashes, .. } => crashes.dir().to_path_buf(),
            Output::Afl(d) => d.dir().join("crashes"),
        }
    }

    /// Where inputs come from, for messages.
    pub fn corpus_dir(&self) -> PathBuf {
        match self {
            Output::Flat { corpus, .. } => corpus.dir().to_path_buf(),
            Output::Afl(d) => d.dir().join("queue"),
        }
    }

    /// Saves a new corpus entry, the `index`th of the run's corpus; returns its id (the
    /// index, or the AFL queue's id). `elapsed`: seconds into this run; `execs`:
    /// executions of this run so far.
    pub fn add_entry(
        &mut self,
        data: &[u8],
        index: usize,
        o: &Origin,
        elapsed: f64,
        execs: u64,
    ) -> Result<usize> {
        match self {
            Output::Flat { corpus, .. } => corpus.save(data).map(|_| index),
            Output::Afl(d) => {
                let (t, e) = (d.time_ms(elapsed), d.prior_execs() + execs);
                d.add_entry(data, o, t, e)
            }
        }
    }

    /// Saves a crash (with its signal) or a hang in its bucket, unless the bucket is known;
    /// the file's path when it is new.
    #[allow(clippy::too_many_arguments)]
    pub fn add_crash(
        &mut self,
        signal: Option<i32>,
        bucket: &str,
        data: &[u8],
        o: &Origin,
        elapsed: f64,
        execs: u64,
        report: &str,
    ) -> Result<Option<PathBuf>> {
        match self {
            Output::Flat { crashes, .. } => {
                let name = match signal {
                    Some(_) => format!("crash-{bucket}"),
                    None => format!("hang-{bucket}"),
                };
                crashes.save(&name, data)
            }
            Output::Afl(d) => {
                let (t, e) = (d.time_ms(elapsed), d.prior_execs() + execs);
                d.add_crash(signal, bucket, data, o, t, e, report)
            }
        }
    }

    pub fn afl(&mut self) -> Option<&mut AflDir> {
        match self {
            Output::Afl(d) => Some(d),
            Output::Flat { .. } => None,
        }
    }
}
