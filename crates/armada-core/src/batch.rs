//! Batches: many independent runs ("lanes") of one program or of several, each with its own
//! arguments, input, registers and memory, on any engine.
//!
//! A [`BatchSpec`] says what to run: the programs (each image loaded once, its pages shared by
//! every lane that runs it), per-lane program, argv, environment and stdin, and per-lane
//! limits. An engine turns it into
//! one [`LaneResult`] per lane: how the lane ended, the instructions it retired and what it
//! wrote to stdout and stderr (always captured). The CPU engine here ([`run_cpu`]) spreads
//! lanes over host cores with rayon; the GPU engines (crate `armada-cuda`) take the same spec
//! and must produce the same results, lane for lane.
//!
//! Batches are deterministic: every lane gets the virtual clock and seeded random bytes of
//! `--deterministic` (seed `config.seed + lane`), so a lane's output depends only on its
//! inputs and every engine produces the same bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::coverage::CoverageMap;
use crate::cpu::DecodedPages;
use crate::elf::{Image, LoadError};
use crate::linux::{LinuxConfig, Stdio};
use crate::process::Program;
use crate::runner::{Exit, Lane};
use crate::snapshot::{InputVia, Point, SharedSnapshot, Snapshot, SnapshotError};

/// What one lane gets.
#[derive(Clone, Debug, Default)]
pub struct LaneSpec {
    /// The program it runs: an index into [`BatchSpec::programs`].
    pub program: usize,
    /// The complete argument vector, argv[0] included.
    pub argv: Vec<Vec<u8>>,
    /// Environment strings ("K=V"), usually one list shared by every lane.
    pub env: Arc<[Vec<u8>]>,
    /// Bytes the lane reads from stdin.
    pub stdin: Vec<u8>,
    /// Confine this lane's file access to this host directory (overrides `config.root`).
    pub root: Option<PathBuf>,
}

/// A program that lanes of a batch run.
#[derive(Clone)]
pub struct BatchProgram {
    /// Its image, loaded once: the lanes that run it share its pages.
    pub image: Arc<Image>,
    /// The host file it was loaded from (the guest's `/proc/self/exe`).
    pub host_path: PathBuf,
    /// Its path as the guest sees it (`AT_EXECFN`; argv[0] is the lane's own).
    pub guest_path: Vec<u8>,
}

impl BatchProgram {
    /// The program in the host file `path`, known to the guest by the same path.
    pub fn load(path: &Path) -> Result<BatchProgram, LoadError> {
        Ok(BatchProgram {
            image: Arc::new(Image::load(path)?),
            host_path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            guest_path: path.as_os_str().as_encoded_bytes().to_vec(),
        })
    }
}

/// A batch: many lanes, of one program or of several.
#[derive(Clone)]
pub struct BatchSpec {
    /// The programs the lanes run (`LaneSpec::program` picks one); at least one.
    pub programs: Vec<BatchProgram>,
    /// Linux settings shared by every lane. `deterministic` is forced on; lane i's seed is
    /// `seed + i`; the executable's paths are those of the lane's program.
    pub config: LinuxConfig,
    pub lanes: Vec<LaneSpec>,
    /// Private guest memory a lane may own, in bytes (brk/mmap fail with ENOMEM and writes
    /// fault beyond it). `None`: unlimited.
    pub lane_memory: Option<u64>,
    /// Stop each lane after this many instructions (exit status 124).
    pub max_instructions: Option<u64>,
    /// Lanes start from this snapshot of lane 0 instead of the program's entry (see
    /// [`BatchSpec::take_snapshot`]); each gets its own stdin from `lanes`.
    pub snapshot: Option<Arc<SharedSnapshot>>,
    /// Record each lane's edge coverage ([`LaneResult::coverage`]).
    pub coverage: bool,
    /// Drop what lanes write to stdout and stderr (results carry none; a GPU kernel then
    /// answers the reads of stdin and those writes itself, without the host).
    pub drop_output: bool,
    /// Code the lanes share once one has decoded it: micro-ops of the image's pages, and the
    /// translation tier's code made from them (`DecodedPages::new()` for a new batch).
    /// Without it every lane of a CPU batch would decode and translate the program again.
    pub decoded: Arc<DecodedPages>,
}

impl BatchSpec {
    /// A batch of one program: its lanes, settings and nothing else (no limits, no snapshot,
    /// output kept).
    pub fn of(program: BatchProgram, config: LinuxConfig, lanes: Vec<LaneSpec>) -> BatchSpec {
        BatchSpec {
            programs: vec![program],
            config,
            lanes,
            lane_memory: None,
            max_instructions: None,
            snapshot: None,
            coverage: false,
            drop_output: false,
            decoded: DecodedPages::new(),
        }
    }

    /// The program lane `i` runs.
    pub fn program_of(&self, i: usize) -> &BatchProgram {
        &self.programs[self.lanes[i].program]
    }

    /// The Linux settings of lane `i`.
    pub fn lane_config(&self, i: usize) -> LinuxConfig {
        let mut cfg = self.config.clone();
        cfg.deterministic = true;
        cfg.seed = self.config.seed.wrapping_add(i as u64);
        if let Some(r) = &self.lanes[i].root {
            cfg.root = Some(r.clone());
        }
        let p = self.program_of(i);
        cfg.exe_host_path.clone_from(&p.host_path);
        cfg.exe_guest_path.clone_from(&p.guest_path);
        cfg
    }

    /// Runs lane 0's start once, to `point`; from then on every lane starts there, with its
    /// own stdin (what stdin had left at the snapshot is replaced by the lane's). Lanes
    /// then share lane 0's arguments, environment, root and random seed, so a batch whose
    /// lanes differ in any of those is refused.
    pub fn take_snapshot(&mut self, point: Point) -> Result<(), SnapshotError> {
        if let Some(i) = self.lanes.iter().position(|l| {
            l.program != self.lanes[0].program
                || l.argv != self.lanes[0].argv
                || l.env != self.lanes[0].env
                || l.root != self.lanes[0].root
        }) {
            return Err(SnapshotError::Input(format!(
                "lane {i} has another program, arguments, environment or root than lane 0: lanes that start from one snapshot differ only in their input (stdin)"
            )));
        }
        self.snapshot = None;
        let lane = self
            .spawn(0)
            .map_err(|e| SnapshotError::Input(e.to_string()))?;
        let snap = Snapshot::take(lane, point, InputVia::Stdin, self.max_instructions)?;
        self.snapshot = Some(Arc::new(SharedSnapshot::new(snap)));
        Ok(())
    }

    /// Lane `i`, ready to run: image mapped, stack built, stdio captured, memory capped (or
    /// restored from the snapshot with its stdin).
    pub fn spawn(&self, i: usize) -> Result<Lane, LoadError> {
        let l = &self.lanes[i];
        if let Some(s) = &self.snapshot {
            let mut lane = s.restore(&l.stdin);
            lane.set_coverage(self.coverage);
            return Ok(lane);
        }
        let mut program = Program::spawn(
            self.program_of(i).image.clone(),
            &self.lane_config(i),
            l.argv.clone(),
            l.env.to_vec(),
            Stdio::Captured {
                stdin: l.stdin.clone(),
            },
        )?;
        if let Some(m) = self.lane_memory {
            program.mem.set_limit(m);
        }
        let mut lane = Lane::with_decoded(program, self.decoded.clone());
        lane.set_coverage(self.coverage);
        Ok(lane)
    }
}

/// How one lane ended and what it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneResult {
    pub lane: usize,
    pub exit: Exit,
    /// Instructions retired.
    pub instructions: u64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Syscalls serviced.
    pub syscalls: u64,
    /// Private guest memory at the end, in bytes.
    pub private_bytes: u64,
    /// Instructions the host ran for a GPU engine (operations the kernel leaves to the CPU
    /// engine); 0 on the CPU engine.
    pub host_steps: u64,
    /// The lane's edge coverage, when the batch recorded it (`BatchSpec::coverage`): the
    /// same map on every engine.
    pub coverage: Option<CoverageMap>,
}

impl LaneResult {
    /// A short name for how the lane stopped: `exit`, `signal` or `instruction-limit`.
    pub fn stop_reason(&self) -> &'static str {
        match self.exit {
            Exit::Code(_) => "exit",
            Exit::Signal { .. } => "signal",
            Exit::InstructionLimit => "instruction-limit",
            Exit::Unsupported(_) => "unsupported",
        }
    }

    /// The lane's result once it has ended (`lane.exit` set).
    pub fn from_lane(index: usize, lane: &mut Lane, host_steps: u64) -> LaneResult {
        let (stdout, stderr) = lane.program.process.take_output();
        LaneResult {
            lane: index,
            exit: lane.exit.clone().unwrap_or(Exit::InstructionLimit),
            instructions: lane.retired(),
            stdout,
            stderr,
            syscalls: lane.program.process.syscall_count(),
            private_bytes: lane.program.mem.private_bytes(),
            host_steps,
            coverage: lane.take_coverage(),
        }
    }
}

/// Progress of a running batch, for progress bars.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub lanes_done: usize,
    pub lanes: usize,
    /// Instructions retired so far by all lanes.
    pub instructions: u64,
}

/// Figures an engine reports about a whole batch (name, value), for the summary.
pub type EngineStats = Vec<(String, String)>;

/// A batch's results, one per lane in lane order, and the engine's figures.
#[derive(Clone, Debug, Default)]
pub struct BatchOutcome {
    pub lanes: Vec<LaneResult>,
    pub stats: EngineStats,
    /// Each device's share of a batch spread over several GPUs (empty on one device and on
    /// the CPU engine).
    pub devices: Vec<DeviceShare>,
}

/// One device's part of a batch spread over several GPUs.
#[derive(Clone, Debug, Default)]
pub struct DeviceShare {
    /// The device's number on its host (`--devices`).
    pub ordinal: usize,
    /// What it is ("NVIDIA H200 (sm_90)").
    pub name: String,
    /// Lanes it ran to their end (its own and any it took over from a failed device).
    pub lanes: usize,
    /// Instructions those lanes retired.
    pub instructions: u64,
    /// Wall seconds from its first setup to its last lane's end.
    pub seconds: f64,
    /// Its engine's figures for each batch it ran.
    pub stats: Vec<EngineStats>,
    /// Why it failed, when it did: its lanes then ran on the other devices.
    pub failed: Option<String>,
    /// Times one of its batches ran out of memory and was split into two that ran one
    /// after the other.
    pub waves: usize,
}

/// Instructions a CPU lane runs between progress reports.
const CPU_CHUNK: u64 = 1 << 26;

/// Runs one lane to its end on the CPU engine, reporting retired instructions as it goes.
pub fn run_lane_cpu(
    spec: &BatchSpec,
    index: usize,
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<LaneResult, LoadError> {
    run_lane_reusing(spec, index, on_progress, None)
}

/// [`run_lane_cpu`], taking the decoded code a lane that ended left in `spare` and leaving
/// its own there. Each lane used to decode into slot arrays fresh from the OS: the
/// interpreter's first look at a slot maps the zero page, the decoder's write then takes a
/// copy-on-write fault, and the kernel flushes that page from the TLB of every core running
/// the batch. With two cores, 10,000 `hello` lanes ran slower than with one (6.1 s against
/// 5.1 s, three quarters of it in the kernel); docs/performance.md has the figures.
fn run_lane_reusing(
    spec: &BatchSpec,
    index: usize,
    on_progress: &(dyn Fn(u64) + Sync),
    spare: Option<&std::sync::Mutex<Vec<crate::cpu::code::CodeCache>>>,
) -> Result<LaneResult, LoadError> {
    let mut lane = spec.spawn(index)?;
    if spec.lanes.len() > 1 {
        lane.without_windows();
    }
    if let Some(code) = spare.and_then(|s| s.lock().ok()?.pop()) {
        lane.reuse_code(code);
    }
    let mut reported = 0u64;
    while lane.exit.is_none() {
        lane.run_slice(spec.max_instructions, CPU_CHUNK);
        let r = lane.retired();
        on_progress(r - reported);
        reported = r;
    }
    let mut r = LaneResult::from_lane(index, &mut lane, 0);
    if spec.drop_output {
        r.stdout.clear();
        r.stderr.clear();
    }
    if let Some(s) = spare {
        let code = lane.take_settled_code();
        if let Ok(mut s) = s.lock() {
            s.push(code);
        }
    }
    Ok(r)
}

/// Runs a batch on the CPU engine: lanes spread over the host's cores (rayon's pool).
pub fn run_cpu(
    spec: &BatchSpec,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<BatchOutcome, LoadError> {
    let n = spec.lanes.len();
    let done = AtomicUsize::new(0);
    let instructions = AtomicU64::new(0);
    let report = |delta: u64, finished: usize| {
        let i = instructions.fetch_add(delta, Ordering::Relaxed) + delta;
        let d = done.fetch_add(finished, Ordering::Relaxed) + finished;
        progress(Progress {
            lanes_done: d,
            lanes: n,
            instructions: i,
        });
    };
    // (at most one a host thread: a lane takes one when it starts and leaves one when it ends)
    let spare = std::sync::Mutex::new(Vec::new());
    let lanes = (0..n)
        .into_par_iter()
        .map(|i| {
            let r = run_lane_reusing(spec, i, &|delta| report(delta, 0), Some(&spare))?;
            report(0, 1);
            Ok(r)
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    let threads = rayon::current_num_threads();
    Ok(BatchOutcome {
        lanes,
        stats: vec![("host threads".into(), threads.to_string())],
        devices: Vec::new(),
    })
}

/// `{lane}` in `s` replaced by the lane number.
pub fn substitute_lane(s: &[u8], lane: usize) -> Vec<u8> {
    const PAT: &[u8] = b"{lane}";
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i..].starts_with(PAT) {
            out.extend_from_slice(lane.to_string().as_bytes());
            i += PAT.len();
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lanes of two programs whose code sits at the same addresses, run by one batch whose
    /// lanes take the decoded code the last lane on their thread left: each lane runs its
    /// own program's code (a lane that kept the other program's decoded page would exit
    /// with its status).
    #[test]
    fn lanes_reusing_code_run_their_own_program() {
        let tiny = |status: u32| {
            let mut f = crate::elf::tests::tiny_elf(object::elf::ET_EXEC, 0x400000);
            // mov x0, #status
            f[0xb0..0xb4].copy_from_slice(&(0xd280_0000 | (status << 5)).to_le_bytes());
            BatchProgram {
                image: Arc::new(Image::parse(&f).unwrap()),
                host_path: PathBuf::from(format!("tiny{status}")),
                guest_path: format!("tiny{status}").into_bytes(),
            }
        };
        let mut spec = BatchSpec::of(tiny(42), LinuxConfig::default(), Vec::new());
        spec.programs.push(tiny(7));
        spec.lanes = (0..64)
            .map(|i| LaneSpec {
                program: i % 2,
                argv: vec![b"tiny".to_vec()],
                ..Default::default()
            })
            .collect();
        let spare = std::sync::Mutex::new(Vec::new());
        for i in 0..64 {
            let r = run_lane_reusing(&spec, i, &|_| {}, Some(&spare)).unwrap();
            assert_eq!(
                r.exit,
                Exit::Code(if i % 2 == 0 { 42 } else { 7 }),
                "lane {i}"
            );
        }
        assert_eq!(
            spare.lock().unwrap().len(),
            1,
            "each lane took the last one's code"
        );
        let out = run_cpu(&spec, &|_| {}).unwrap();
        for r in &out.lanes {
            assert_eq!(r.exit, Exit::Code(if r.lane % 2 == 0 { 42 } else { 7 }));
        }
    }

    /// Lanes of one batch decode its code once between them: the second lane finds the
    /// first lane's pages, and every lane runs the same.
    #[test]
    fn lanes_share_decoded_code() {
        let image =
            Image::parse(&crate::elf::tests::tiny_elf(object::elf::ET_EXEC, 0x400000)).unwrap();
        let spec = BatchSpec::of(
            BatchProgram {
                image: Arc::new(image),
                host_path: PathBuf::from("tiny"),
                guest_path: b"tiny".to_vec(),
            },
            LinuxConfig::default(),
            vec![
                LaneSpec {
                    argv: vec![b"tiny".to_vec()],
                    ..Default::default()
                };
                3
            ],
        );
        let first = run_lane_cpu(&spec, 0, &|_| {}).unwrap();
        assert_eq!(first.exit, Exit::Code(42));
        let pages = spec.decoded.len();
        assert!(
            pages > 0,
            "the first lane's code is not in the batch's decoded pages"
        );
        let out = run_cpu(&spec, &|_| {}).unwrap();
        assert!(out.lanes.iter().all(|r| r.exit == Exit::Code(42)));
        assert!(out
            .lanes
            .iter()
            .all(|r| r.instructions == first.instructions));
        assert_eq!(
            spec.decoded.len(),
            pages,
            "later lanes decoded the code again"
        );
    }

    #[test]
    fn lane_substitution() {
        assert_eq!(substitute_lane(b"a{lane}b{lane}", 17), b"a17b17");
        assert_eq!(substitute_lane(b"{lan}", 3), b"{lan}");
        assert_eq!(substitute_lane(b"", 3), b"");
    }
}
