//! The program under test and one execution of it: a lane made for each input (restored
//! from the snapshot, or started from the program's entry), run with edge coverage to its
//! end or its instruction limit, and what came of it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use armada_core::coverage::CoverageMap;
use armada_core::cpu::{CodeCache, DecodedPages};
use armada_core::elf::Image;
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::crash::{Symbols, BUCKET_FRAMES};
use armada_core::runner::{Exit, Lane};
use armada_core::snapshot::{InputVia, Point, Snapshot};

/// How the input reaches the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// As its stdin.
    Stdin,
    /// As the file `@@` names in its arguments (in memory at this guest path).
    File(Vec<u8>),
    /// As `data, size` in x0/x1 at the snapshot point (a libFuzzer entry point), at most
    /// this many bytes.
    Buffer(usize),
}

/// How the input reaches the program, as the user names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Stdin,
    File,
    Buffer,
}

/// A snapshot point as the user gives it (`--snapshot-at`, `snapshot_at`): `none` is none.
pub fn snapshot_point(s: &str) -> Option<Point> {
    match s {
        "none" => None,
        p => Some(
            p.parse()
                .unwrap_or_else(|e: std::convert::Infallible| match e {}),
        ),
    }
}

/// The program's arguments (after argv[0]) with `@@` replaced by the input file's guest
/// path, and how the input reaches the program: `kind`, or when not given a file if `@@` is
/// among `words`, a buffer at `LLVMFuzzerTestOneInput`, stdin otherwise. The file lives in
/// memory; its guest path is `crashes_dir/.cur_input`, where AFL keeps its own.
pub fn input_route(
    words: Vec<Vec<u8>>,
    point: Option<&Point>,
    kind: Option<InputKind>,
    crashes_dir: &std::path::Path,
    max_len: usize,
) -> Result<(Vec<Vec<u8>>, Via)> {
    use std::os::unix::ffi::OsStrExt;
    let has_file = words.iter().any(|w| w == b"@@");
    let buffer_point = matches!(point, Some(Point::Symbol(s)) if s == "LLVMFuzzerTestOneInput");
    let kind = kind.unwrap_or(if has_file {
        InputKind::File
    } else if buffer_point {
        InputKind::Buffer
    } else {
        InputKind::Stdin
    });
    if kind == InputKind::File && !has_file {
        bail!("input from a file needs @@ among the program's arguments (where the input file's path goes)");
    }
    if kind != InputKind::File && has_file {
        bail!("@@ is among the program's arguments, but the input is {kind:?}: the program would get a literal @@ (drop the input choice, or @@)");
    }
    let crashes = std::path::absolute(crashes_dir).unwrap_or(crashes_dir.to_path_buf());
    let file = crashes.join(".cur_input").as_os_str().as_bytes().to_vec();
    let words = words
        .into_iter()
        .map(|w| if w == b"@@" { file.clone() } else { w })
        .collect();
    let via = match kind {
        InputKind::Stdin => Via::Stdin,
        InputKind::File => Via::File(file),
        InputKind::Buffer => Via::Buffer(max_len),
    };
    Ok((words, via))
}

/// What to run.
#[derive(Clone)]
pub struct TargetSpec {
    pub program: PathBuf,
    /// argv, argv[0] included, with `@@` already replaced by the input file's path.
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
    pub config: LinuxConfig,
    pub via: Via,
    pub snapshot_at: Option<Point>,
    /// Instructions an execution may run (past the snapshot) before it counts as a hang.
    pub exec_limit: u64,
    /// Instructions the start run may take to reach the snapshot point.
    pub start_limit: u64,
    pub lane_memory: Option<u64>,
}

/// How one execution ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The program exited (or the fuzzed function returned) with this status.
    Exited(i32),
    /// A signal killed it: a crash. `key` names its bucket: the signal, the faulting PC
    /// (`wild` where it was not in executable memory) and a hash of the innermost functions
    /// on the stack, recursion folded (`armada_core::runner::crash`). `report` says it in
    /// one line.
    Crash {
        signal: i32,
        pc: u64,
        key: String,
        report: String,
    },
    /// It ran past the per-execution instruction limit. `stack`: a hash of the functions
    /// it was in (the loop's function and its callers, recursion folded), one hang a
    /// bucket.
    Hang { stack: u32, report: String },
    /// It did something the engine cannot run (the message says what).
    Unsupported(String),
}

impl Outcome {
    /// The bucket the fuzzer files it under (the `bucket:` of an AFL++ name, the KEY of
    /// `crash-KEY` and `hang-KEY`): a crash's key, a hang's stack hash; None for the rest.
    pub fn bucket(&self) -> Option<String> {
        match self {
            Outcome::Crash { key, .. } => Some(key.clone()),
            Outcome::Hang { stack, .. } => Some(format!("{stack:08x}")),
            Outcome::Exited(_) | Outcome::Unsupported(_) => None,
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Exited(c) => write!(f, "exit status {c}"),
            Outcome::Crash { signal, pc, .. } => write!(f, "signal {signal} at pc {pc:#x}"),
            Outcome::Hang { .. } => f.write_str("the instruction limit"),
            Outcome::Unsupported(m) => f.write_str(m),
        }
    }
}

/// One execution's result.
pub struct ExecResult {
    pub outcome: Outcome,
    /// The run's edge coverage; `None` where the executor was asked for maps with news only
    /// and this run had none (see `executor::Maps`).
    pub coverage: Option<CoverageMap>,
    /// `armada_core::coverage::path_hash` of the run's map, where the executor has it
    /// without the map (a GPU computes it beside the map).
    pub path: Option<u32>,
    /// Instructions retired past the snapshot (or from the entry).
    pub instructions: u64,
}

/// The program, loaded, and its snapshot when one was asked for.
pub struct Target {
    spec: TargetSpec,
    image: Arc<Image>,
    snapshot: Option<Snapshot>,
    /// Instructions of the start that a restored lane skips.
    start: u64,
    /// Decoded code the last execution left, for the next (see `Lane::reuse_code`).
    spare_code: Option<CodeCache>,
    /// Decoded pages shared by the lanes started from the entry (no snapshot).
    decoded: Arc<DecodedPages>,
    /// The program's function symbols, for crash reports (None: stripped).
    symbols: Option<Arc<Symbols>>,
    /// Coverage maps this copy's executions gave back, for its next ones.
    pub(crate) spare_maps: Vec<CoverageMap>,
}

impl Target {
    /// Loads the program and, with `snapshot_at`, runs its start once to take the snapshot.
    pub fn new(spec: TargetSpec) -> Result<Target> {
        let image = Image::load(&spec.program)
            .with_context(|| format!("cannot run {}", spec.program.display()))?;
        let symbols = std::fs::read(&spec.program)
            .ok()
            .and_then(|b| Symbols::of_elf(&b, image.load_bias))
            .map(Arc::new);
        let mut t = Target {
            spec,
            image: Arc::new(image),
            snapshot: None,
            start: 0,
            spare_code: None,
            decoded: DecodedPages::new(),
            symbols,
            spare_maps: Vec::new(),
        };
        if let Via::Buffer(_) = t.spec.via {
            if t.spec.snapshot_at.is_none() {
                bail!("a buffer input (libFuzzer style) needs --snapshot-at FUNCTION, e.g. LLVMFuzzerTestOneInput");
            }
        }
        if let Some(point) = t.spec.snapshot_at.clone() {
            let lane = t.fresh_lane(&[])?;
            let via = match &t.spec.via {
                Via::Stdin => InputVia::Stdin,
                Via::File(p) => InputVia::File(p.clone()),
                Via::Buffer(n) => InputVia::Buffer(*n),
            };
            let snap =
                Snapshot::take(lane, point, via, Some(t.spec.start_limit)).with_context(|| {
                    format!(
                        "taking the snapshot (the start may run {} instructions: --start-limit)",
                        t.spec.start_limit
                    )
                })?;
            t.start = snap.retired();
            t.snapshot = Some(snap);
        }
        Ok(t)
    }

    pub fn spec(&self) -> &TargetSpec {
        &self.spec
    }

    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// Another copy of the target, for another host thread; with page buffers of its own
    /// where `local` (CPU executions: see `Snapshot::duplicate_local`), else sharing them
    /// (a GPU engine's lanes share a page's frame where they share its buffer).
    pub fn duplicate(&self, local: bool) -> Target {
        Target {
            spec: self.spec.clone(),
            image: self.image.clone(),
            snapshot: self.snapshot.as_ref().map(|s| {
                if local {
                    s.duplicate_local()
                } else {
                    s.duplicate()
                }
            }),
            start: self.start,
            spare_code: None,
            decoded: self.decoded.clone(),
            symbols: self.symbols.clone(),
            spare_maps: Vec::new(),
        }
    }

    /// A lane started from the program's entry with `input`.
    fn fresh_lane(&self, input: &[u8]) -> Result<Lane> {
        let s = &self.spec;
        let stdin = match s.via {
            Via::Stdin => input.to_vec(),
            _ => Vec::new(),
        };
        let mut p = Program::spawn(
            self.image.clone(),
            &s.config,
            s.argv.clone(),
            s.env.clone(),
            Stdio::Captured { stdin },
        )
        .with_context(|| format!("cannot run {}", s.program.display()))?;
        if let Via::File(path) = &s.via {
            p.process.set_input_file(path.clone(), input.into());
        }
        if let Some(m) = s.lane_memory {
            p.mem.set_limit(m);
        }
        Ok(Lane::with_decoded(p, self.decoded.clone()))
    }

    /// Instructions of the start that a restored lane has already retired (0 without a
    /// snapshot).
    pub fn start_instructions(&self) -> u64 {
        self.start
    }

    /// A lane ready to run `input`.
    pub fn lane(&self, input: &[u8]) -> Result<Lane> {
        match &self.snapshot {
            Some(s) => Ok(s.restore(input)),
            None => self.fresh_lane(input),
        }
    }

    /// The program's function symbols, where it has them.
    pub fn symbols(&self) -> Option<&Symbols> {
        self.symbols.as_deref()
    }

    pub(crate) fn symbols_arc(&self) -> Option<Arc<Symbols>> {
        self.symbols.clone()
    }

    /// What the fuzzer makes of `lane`, which ran an input of this target to `exit` (from
    /// [`Self::lane`], up to [`Self::start_instructions`] plus the spec's `exec_limit`):
    /// for `armada replay` of a saved input.
    pub fn outcome(&self, lane: &mut Lane, exit: &Exit) -> Outcome {
        outcome_of(lane, exit, self.symbols())
    }

    /// A lane for `input` with the decoded code the last execution left.
    fn ready_lane(&mut self, input: &[u8]) -> Result<Lane> {
        let mut lane = self.lane(input)?;
        if let Some(code) = self.spare_code.take() {
            lane.reuse_code(code);
        }
        Ok(lane)
    }

    /// Runs `input` once with coverage, into `map` (cleared first) when one is given.
    pub fn exec(&mut self, input: &[u8], map: Option<CoverageMap>) -> Result<ExecResult> {
        let mut lane = self.ready_lane(input)?;
        lane.set_coverage_map(map.unwrap_or_default());
        let limit = self.start + self.spec.exec_limit;
        let exit = lane.run(Some(limit)).clone();
        let outcome = outcome_of(&mut lane, &exit, self.symbols());
        let coverage = lane.take_coverage().unwrap_or_default();
        self.spare_code = Some(lane.take_code());
        Ok(ExecResult {
            outcome,
            coverage: Some(coverage),
            path: None,
            instructions: lane.retired() - self.start,
        })
    }
}

impl Target {
    /// Runs `input` once logging the operands of its compares (CmpLog); returns the
    /// distinct pairs.
    pub fn trace(&mut self, input: &[u8]) -> Result<Vec<(u64, u64)>> {
        let mut lane = self.ready_lane(input)?;
        lane.set_cmplog(true);
        lane.run(Some(self.start + self.spec.exec_limit));
        let pairs = lane
            .take_cmplog()
            .map(|l| l.pairs().to_vec())
            .unwrap_or_default();
        self.spare_code = Some(lane.take_code());
        Ok(pairs)
    }
}

/// What `exit` means for the fuzzer; a crash's or hang's bucket from the lane's registers
/// and stack. `symbols`: the program's, for the crash's report.
pub(crate) fn outcome_of(lane: &mut Lane, exit: &Exit, symbols: Option<&Symbols>) -> Outcome {
    match exit {
        Exit::Code(c) => Outcome::Exited(*c),
        Exit::InstructionLimit => {
            // the functions, not the PC: a loop's PC at the limit is anywhere in it
            let site = lane.crash_site(0, symbols);
            let mut h: u32 = 0x811c_9dc5;
            for f in site.functions().into_iter().take(BUCKET_FRAMES) {
                for b in f.to_le_bytes() {
                    h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
                }
            }
            Outcome::Hang {
                stack: h,
                report: format!(
                    "a hang: ran past the instructions an execution may take (--exec-limit), at pc {}",
                    site.describe(symbols).split_once(" at pc ").map_or("?", |x| x.1)
                ),
            }
        }
        Exit::Unsupported(m) => Outcome::Unsupported(m.clone()),
        Exit::Signal { signal, .. } => {
            let site = lane.crash_site(*signal, symbols);
            let b = site.bucket();
            let key = if site.wild {
                format!("wild-stack{b:08x}")
            } else {
                format!("sig{signal}-pc{:x}-stack{b:08x}", site.pc)
            };
            Outcome::Crash {
                signal: *signal,
                pc: site.pc,
                key,
                report: site.describe(symbols),
            }
        }
    }
}
