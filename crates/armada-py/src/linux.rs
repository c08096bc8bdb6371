//! `armada.run` and `armada.run_batch`: static AArch64 Linux programs with captured stdio.
//!
//! The Python wrappers (python/armada/__init__.py) turn arguments into bytes and call
//! [`run_lanes`]: one image, loaded once and shared by every lane; each lane its own process
//! (registers, memory, files), run to its end by the CPU engine, on all cores with rayon for a
//! batch. The calling thread waits with the GIL released and turns Ctrl-C into a stop of every
//! lane at its next slice.

use crate::{
    gpu_error, internal_error, panic_text, resolve_backend, ArmadaError, ElfError, SignalCheck,
    SLICE,
};
use armada_core::cpu::DecodedPages;
use armada_core::elf::{Image, LoadError};
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::{Exit, Lane};
use armada_core::snapshot::{InputVia, Point, SharedSnapshot, Snapshot};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// How a Linux program ended (`armada.run`, `armada.run_batch`).
#[pyclass(module = "armada", frozen)]
pub struct Completed {
    /// The exit status (0..255); minus the signal number when a signal ended the program (as
    /// `subprocess` reports it); 124 when max_instructions ran out.
    #[pyo3(get)]
    exit_code: i32,
    /// What the program wrote to its standard output.
    #[pyo3(get)]
    stdout: Py<PyBytes>,
    /// What the program wrote to its standard error.
    #[pyo3(get)]
    stderr: Py<PyBytes>,
    /// Instructions the program retired.
    #[pyo3(get)]
    instructions: u64,
    /// "exit", "signal" or "max_instructions".
    #[pyo3(get)]
    stop_reason: &'static str,
    /// armada's one-line explanation when armada ended the program (a fault, an undefined
    /// instruction, the instruction limit); None otherwise.
    #[pyo3(get)]
    message: Option<String>,
    /// Wall-clock seconds the program ran.
    #[pyo3(get)]
    elapsed: f64,
    /// The run's edge coverage (65,536 hit counters, numpy uint8) with coverage=True.
    coverage: Option<Py<numpy::PyArray1<u8>>>,
}

#[pymethods]
impl Completed {
    /// Same as exit_code (the name subprocess.CompletedProcess uses).
    #[getter]
    fn returncode(&self) -> i32 {
        self.exit_code
    }

    /// The run's edge coverage map (numpy uint8, 65,536 counters) when run with
    /// coverage=True; None otherwise.
    #[getter]
    fn coverage(&self, py: Python<'_>) -> Option<Py<numpy::PyArray1<u8>>> {
        self.coverage.as_ref().map(|c| c.clone_ref(py))
    }

    /// Pickling (results cross processes: multiprocessing, Ray's `armada.ray`): the fields,
    /// rebuilt by `_armada._completed`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rebuild = py.import("armada._armada")?.getattr("_completed")?;
        let coverage: Option<Vec<u8>> = match &self.coverage {
            Some(c) => Some(numpy::PyArrayMethods::to_vec(c.bind(py))?),
            None => None,
        };
        let args = (
            self.exit_code,
            self.stdout.clone_ref(py),
            self.stderr.clone_ref(py),
            self.instructions,
            self.stop_reason,
            self.message.clone(),
            self.elapsed,
            coverage.map(|c| PyBytes::new(py, &c).unbind()),
        );
        (rebuild, args).into_pyobject(py).map(|t| t.into_any())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let out = self.stdout.bind(py).repr()?;
        let err = self.stderr.bind(py).repr()?;
        Ok(format!(
            "Completed(exit_code={}, stdout={out}, stderr={err}, instructions={}, stop_reason='{}')",
            self.exit_code, self.instructions, self.stop_reason
        ))
    }
}

/// A `Completed` from its pickled fields (`Completed.__reduce__`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn _completed(
    py: Python<'_>,
    exit_code: i32,
    stdout: Py<PyBytes>,
    stderr: Py<PyBytes>,
    instructions: u64,
    stop_reason: &str,
    message: Option<String>,
    elapsed: f64,
    coverage: Option<Vec<u8>>,
) -> PyResult<Completed> {
    let stop_reason = ["exit", "signal", "unsupported", "max_instructions"]
        .into_iter()
        .find(|s| *s == stop_reason)
        .ok_or_else(|| PyValueError::new_err(format!("unknown stop reason {stop_reason:?}")))?;
    Ok(Completed {
        exit_code,
        stdout,
        stderr,
        instructions,
        stop_reason,
        message,
        elapsed,
        coverage: coverage.map(|c| numpy::PyArray1::from_vec(py, c).unbind()),
    })
}

/// One lane's result before it becomes a Python object.
struct LaneResult {
    exit: Exit,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    instructions: u64,
    pc: u64,
    elapsed: f64,
    coverage: Option<Vec<u8>>,
}

/// Why a lane produced no result.
pub(crate) enum LaneError {
    /// Ctrl-C: every lane stops at its next slice.
    Interrupted,
    /// The image could not be mapped (an ElfError): "PROGRAM: why".
    Load(String),
    /// The process could not be set up (arguments too long, say): "PROGRAM: why".
    Start(String),
    /// The engine panicked: a bug in armada.
    Panic(String),
    /// The GPU engine failed (every lane of the batch).
    Engine(Arc<armada_gpu::Error>),
}

/// Runs a lane to its end (or `max` instructions), a slice at a time; None when `stop` was
/// raised first.
fn run_lane(lane: &mut Lane, max: Option<u64>, stop: &AtomicBool) -> Option<()> {
    while lane.exit.is_none() {
        lane.run_slice(max, SLICE);
        if lane.exit.is_none() && stop.load(Ordering::Relaxed) {
            return None;
        }
    }
    Some(())
}

fn load_error(path: &Path, e: LoadError) -> PyErr {
    match e {
        LoadError::Stack(why) => {
            ArmadaError::new_err(format!("cannot start {}: {why}", path.display()))
        }
        e => ElfError::new_err(format!("cannot run {}: {e}", path.display())),
    }
}

/// Runs `len(argvs)` lanes (the work behind armada.run and armada.run_batch; call those).
/// Every argv's first item is the lane's program; lanes may run different programs.
#[pyfunction]
#[pyo3(signature = (argvs, stdins, env, backend, root, max_instructions, deterministic, seed, parallel, sysroot=None, net="loopback", snapshot_at=None, coverage=false, devices=None, program_file=None))]
#[allow(clippy::too_many_arguments)]
pub fn run_lanes(
    py: Python<'_>,
    argvs: Vec<Vec<Vec<u8>>>,
    stdins: Vec<Vec<u8>>,
    env: Vec<Vec<u8>>,
    backend: &str,
    root: Option<PathBuf>,
    max_instructions: Option<u64>,
    deterministic: bool,
    seed: u64,
    parallel: bool,
    sysroot: Option<PathBuf>,
    net: &str,
    snapshot_at: Option<String>,
    coverage: bool,
    devices: Option<String>,
    program_file: Option<PathBuf>,
) -> PyResult<Vec<Completed>> {
    let net = net_mode(net)?;
    let mut resolved = resolve_backend(py, backend)?;
    if argvs.is_empty() {
        return Ok(Vec::new());
    }
    if stdins.len() != argvs.len() {
        return Err(PyValueError::new_err(format!(
            "{} stdin buffers for {} argument lists: give one per lane (or None)",
            stdins.len(),
            argvs.len()
        )));
    }
    for (i, a) in argvs.iter().enumerate() {
        if a.is_empty() {
            return Err(PyValueError::new_err(format!(
                "argvs[{i}] is empty: it needs the program first"
            )));
        }
        if program_file.is_some() && a[0] != argvs[0][0] {
            return Err(PyValueError::new_err(format!(
                "program_file gives one program for every lane: argvs[{i}][0] is {:?}, argvs[0][0] is {:?}",
                String::from_utf8_lossy(&a[0]),
                String::from_utf8_lossy(&argvs[0][0])
            )));
        }
    }
    // Each program the lanes name (argv[0]) loaded once; its lanes share its pages.
    let mut programs: Vec<(Vec<u8>, PathBuf, Arc<Image>, LinuxConfig)> = Vec::new();
    for a in &argvs {
        if programs.iter().any(|p| p.0 == a[0]) {
            continue;
        }
        // (program_file: the program's bytes in another file, which armada.ray carries to
        // each node; the guest still sees argv[0] as its name)
        let file = program_file
            .as_ref()
            .map_or(&a[0][..], |f| f.as_os_str().as_bytes());
        let (path, image, mut cfg) = load(
            py,
            file,
            root.clone(),
            sysroot.clone(),
            net,
            deterministic,
            seed,
        )?;
        cfg.exe_guest_path = a[0].clone();
        programs.push((a[0].clone(), path, image, cfg));
    }
    crate::resolve_devices(py, &mut resolved, backend, devices.as_deref())?;

    let spawn = |argv: Vec<Vec<u8>>, stdin: Vec<u8>| {
        let (_, path, image, cfg) = programs
            .iter()
            .find(|p| p.0 == argv[0])
            .expect("every lane's program was loaded");
        Program::spawn(
            image.clone(),
            cfg,
            argv,
            env.clone(),
            Stdio::Captured { stdin },
        )
        .map_err(|e| match e {
            LoadError::Stack(why) => LaneError::Start(format!("{}: {why}", path.display())),
            e => LaneError::Load(format!("{}: {e}", path.display())),
        })
    };
    // Lanes of one image decode each page of its code once, between them.
    let decoded = DecodedPages::new();
    // With snapshot_at, lane 0's start runs once, and every lane goes on from there.
    let snapshot = match &snapshot_at {
        None => None,
        Some(point) => {
            if let Some(i) = argvs.iter().position(|a| *a != argvs[0]) {
                return Err(PyValueError::new_err(format!(
                    "snapshot_at: every lane starts from lane 0's snapshot, so every argv must be the same (argvs[{i}] differs); give each lane its own stdin instead"
                )));
            }
            let program = spawn(argvs[0].clone(), stdins[0].clone());
            let lane = start_lane(program)?;
            let snap = take(
                py,
                Lane::with_decoded(lane, decoded.clone()),
                point,
                max_instructions,
            )
            .map_err(|e| ArmadaError::new_err(format!("snapshot_at: {e}")))?;
            Some(snap)
        }
    };
    let make_lane = |argv: Vec<Vec<u8>>, stdin: Vec<u8>| match &snapshot {
        Some(s) => Ok(s.restore(&stdin)),
        None => Ok(Lane::with_decoded(spawn(argv, stdin)?, decoded.clone())),
    };
    run_made(
        py,
        &resolved,
        argvs.into_iter().zip(stdins).collect(),
        parallel,
        max_instructions,
        coverage,
        &make_lane,
    )
}

/// Runs `lanes` (argv, stdin) made by `make_lane` on the engine `resolved` names, with the
/// GIL released; their results, in order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_made<M>(
    py: Python<'_>,
    resolved: &crate::Resolved,
    lanes: Vec<(Vec<Vec<u8>>, Vec<u8>)>,
    parallel: bool,
    max_instructions: Option<u64>,
    coverage: bool,
    make_lane: &M,
) -> PyResult<Vec<Completed>>
where
    M: Fn(Vec<Vec<u8>>, Vec<u8>) -> Result<Lane, LaneError> + Sync,
{
    // Each lane: spawn the process, run it, collect its output.
    let lane_job = |argv: Vec<Vec<u8>>, stdin: Vec<u8>, stop: &AtomicBool| {
        let mut lane = make_lane(argv, stdin)?;
        lane.set_coverage(coverage);
        let t0 = Instant::now();
        run_lane(&mut lane, max_instructions, stop).ok_or(LaneError::Interrupted)?;
        let elapsed = t0.elapsed().as_secs_f64();
        let (stdout, stderr) = lane.program.process.take_output();
        Ok(LaneResult {
            exit: lane.exit.clone().expect("a finished lane has an exit"),
            stdout,
            stderr,
            instructions: lane.retired(),
            pc: lane.program.state.pc,
            elapsed,
            coverage: lane.take_coverage().map(|m| m.as_slice().to_vec()),
        })
    };

    // Lanes run on another thread (rayon's pool for a batch, the GPU engine's batch loop);
    // this one waits with the GIL released and checks for Ctrl-C.
    let n = lanes.len();
    let engines = resolved.gpu_engines();
    let (results, interrupt) = if !engines.is_empty() {
        let covered_lane = |argv: Vec<Vec<u8>>, stdin: Vec<u8>| {
            let mut lane = make_lane(argv, stdin)?;
            lane.set_coverage(coverage);
            Ok(lane)
        };
        let job =
            |stop: &AtomicBool| run_gpu(engines, lanes, max_instructions, stop, &covered_lane);
        wait_for(py, job)
    } else {
        wait_for(py, |stop: &AtomicBool| {
            run_cpu_lanes(lanes, parallel, stop, &lane_job)
        })
    };
    if let Some(e) = interrupt {
        return Err(e);
    }
    let results = results.map_err(|m| internal_error("running programs", &m))?;
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.into_iter().enumerate() {
        let lane = if n > 1 {
            format!(" (lane {i})")
        } else {
            String::new()
        };
        let r = match r {
            Ok(r) => r,
            Err(LaneError::Interrupted) => {
                return Err(ArmadaError::new_err(format!(
                    "the run was interrupted{lane}"
                )))
            }
            // (the message starts with the lane's program)
            Err(LaneError::Load(msg)) => {
                return Err(ElfError::new_err(format!("cannot run {msg}{lane}")))
            }
            Err(LaneError::Start(msg)) => {
                return Err(ArmadaError::new_err(format!("cannot start {msg}{lane}")))
            }
            Err(LaneError::Panic(msg)) => {
                return Err(internal_error(&format!("running a program{lane}"), &msg))
            }
            Err(LaneError::Engine(e)) => return Err(gpu_error(&e)),
        };
        let (exit_code, stop_reason, message) = match &r.exit {
            Exit::Code(c) => (c & 0xff, "exit", None),
            Exit::Signal { signal, message } => (-signal, "signal", message.clone()),
            Exit::Unsupported(m) => (125, "unsupported", Some(m.clone())),
            Exit::InstructionLimit => (
                124,
                "max_instructions",
                Some(format!(
                    "stopped after {} instructions (max_instructions) at pc {:#x}",
                    r.instructions, r.pc
                )),
            ),
        };
        out.push(Completed {
            exit_code,
            stdout: PyBytes::new(py, &r.stdout).unbind(),
            stderr: PyBytes::new(py, &r.stderr).unbind(),
            instructions: r.instructions,
            stop_reason,
            message,
            elapsed: r.elapsed,
            coverage: r
                .coverage
                .map(|c| numpy::PyArray1::from_vec(py, c).unbind()),
        });
    }
    Ok(out)
}

/// Loads the program (`program`, argv[0]) and makes the Linux setup its processes run with.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load(
    py: Python<'_>,
    program: &[u8],
    root: Option<PathBuf>,
    sysroot: Option<PathBuf>,
    net: armada_core::linux::net::host::NetMode,
    deterministic: bool,
    seed: u64,
) -> PyResult<(PathBuf, Arc<Image>, LinuxConfig)> {
    if let Some(r) = &root {
        if !r.is_dir() {
            return Err(PyValueError::new_err(format!(
                "root {} is not a directory",
                r.display()
            )));
        }
    }
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(program));
    let image = py
        .detach(|| Image::load(&path))
        .map_err(|e| load_error(&path, e))?;
    let image = Arc::new(image);
    let cfg = LinuxConfig {
        root,
        sysroot,
        strace: false,
        deterministic,
        seed,
        exe_host_path: std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
        exe_guest_path: program.to_vec(),
        max_processes: None,
        net,
        ignored_signals: 0,
        host_exec: false,
    };

    Ok((path, image, cfg))
}

/// The `net=` argument.
pub(crate) fn net_mode(net: &str) -> PyResult<armada_core::linux::net::host::NetMode> {
    match net {
        "loopback" => Ok(armada_core::linux::net::host::NetMode::Loopback),
        "host" => Ok(armada_core::linux::net::host::NetMode::Host),
        other => Err(PyValueError::new_err(format!(
            "net={other:?}: use \"loopback\" (the run's own network, the default) or \"host\" (the host's network)"
        ))),
    }
}

/// A lane's process, or the error that it could not start.
pub(crate) fn start_lane(made: Result<Program, LaneError>) -> PyResult<Program> {
    made.map_err(|e| match e {
        LaneError::Load(m) | LaneError::Start(m) => {
            ArmadaError::new_err(format!("cannot start {m}"))
        }
        _ => ArmadaError::new_err("cannot start the program"),
    })
}

/// Runs `lane` (GIL released) to `point` and takes the snapshot there.
pub(crate) fn take(
    py: Python<'_>,
    lane: Lane,
    point: &str,
    max_instructions: Option<u64>,
) -> Result<SharedSnapshot, armada_core::snapshot::SnapshotError> {
    let point: Point = point
        .parse()
        .unwrap_or_else(|e: std::convert::Infallible| match e {});
    let snap = py.detach(|| Snapshot::take(lane, point, InputVia::Stdin, max_instructions))?;
    Ok(SharedSnapshot::new(snap))
}

type LaneOutcome = Result<LaneResult, LaneError>;

/// Runs `job` on another thread and waits for it with the GIL released, checking for Ctrl-C
/// (which raises the job's `stop` flag). Returns the job's outcome, or the panic's text, and
/// the error a signal handler raised.
fn wait_for<F>(py: Python<'_>, job: F) -> (Result<Vec<LaneOutcome>, String>, Option<PyErr>)
where
    F: FnOnce(&AtomicBool) -> Vec<LaneOutcome> + Send,
{
    py.detach(|| {
        let stop = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<Result<Vec<LaneOutcome>, String>>();
        std::thread::scope(|s| {
            let stop = &stop;
            s.spawn(move || {
                let all = catch_unwind(AssertUnwindSafe(|| job(stop))).map_err(|p| panic_text(&*p));
                let _ = tx.send(all);
            });
            let mut signals = SignalCheck::new();
            loop {
                match rx.recv_timeout(crate::SIGNAL_CHECK_EVERY) {
                    Ok(r) => return (r, signals.error),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if !signals.keep_going() {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return (
                            Err("the lane thread ended without a result".to_string()),
                            signals.error,
                        )
                    }
                }
            }
        })
    })
}

/// The CPU engine: each lane on its own, on rayon's pool for a batch.
fn run_cpu_lanes<J>(
    lanes: Vec<(Vec<Vec<u8>>, Vec<u8>)>,
    parallel: bool,
    stop: &AtomicBool,
    lane_job: &J,
) -> Vec<LaneOutcome>
where
    J: Fn(Vec<Vec<u8>>, Vec<u8>, &AtomicBool) -> LaneOutcome + Sync,
{
    let n = lanes.len();
    let each = |(argv, stdin): (Vec<Vec<u8>>, Vec<u8>)| {
        catch_unwind(AssertUnwindSafe(|| lane_job(argv, stdin, stop)))
            .unwrap_or_else(|p| Err(LaneError::Panic(panic_text(&*p))))
    };
    if parallel && n > 1 {
        lanes.into_par_iter().map(each).collect()
    } else {
        lanes.into_iter().map(each).collect()
    }
}

/// A GPU engine: every lane in one batch, run round by round (launch, then service the lanes
/// that stopped) until all have ended; `stop` is looked at between rounds, so Ctrl-C takes
/// effect at the end of the current launch (at most about 0.1 s on CUDA).
fn run_gpu<S>(
    engines: &[armada_gpu::Engine],
    lanes: Vec<(Vec<Vec<u8>>, Vec<u8>)>,
    max_instructions: Option<u64>,
    stop: &AtomicBool,
    spawn: &S,
) -> Vec<LaneOutcome>
where
    S: Fn(Vec<Vec<u8>>, Vec<u8>) -> Result<Lane, LaneError> + Sync,
{
    let n = lanes.len();
    let made: Vec<Result<Lane, LaneError>> = lanes
        .par_iter()
        .map(|(argv, stdin)| spawn(argv.clone(), stdin.clone()))
        .collect();
    let mut ready = Vec::with_capacity(n);
    for l in made {
        match l {
            Ok(l) => ready.push(Box::new(l)),
            // one lane that cannot start fails the batch, as on the CPU engine
            Err(e) => return vec![Err(e)],
        }
    }
    let all_fail = |e: armada_gpu::Error| -> Vec<LaneOutcome> {
        let e = Arc::new(e);
        (0..n).map(|_| Err(LaneError::Engine(e.clone()))).collect()
    };
    // a lane made again for another device, when its own failed (it started once already)
    let respawn = |i: usize| {
        let (argv, stdin) = &lanes[i];
        spawn(argv.clone(), stdin.clone())
            .map(Box::new)
            .map_err(|_| armada_gpu::Error::Device(format!("lane {i} could not be made again")))
    };
    let t0 = Instant::now();
    // (the kernel answers the short runs' stdin reads, fstat, writes, kept per lane, and
    // exit itself, as `armada batch` does)
    let opts = armada_gpu::multi::ShardOptions {
        max_instructions,
        io: armada_gpu::KernelIo::Keep,
        spawn_s: 0.0,
        progress: &|_| {},
        stop,
        // (the lanes themselves come back, not their results)
        feed: false,
        device_share: 1,
    };
    let finish = |b: armada_gpu::Batch| b.into_lanes();
    let sharded = match armada_gpu::multi::run_sharded(engines, ready, &respawn, &finish, &opts) {
        Ok(s) => s,
        Err(_) if stop.load(Ordering::Relaxed) => {
            return (0..n).map(|_| Err(LaneError::Interrupted)).collect()
        }
        Err(e) => return all_fail(e),
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let mut out: Vec<Option<LaneOutcome>> = (0..n).map(|_| None).collect();
    for shard in sharded.shards {
        for (k, (mut lane, _)) in shard.out.into_iter().enumerate() {
            let (stdout, stderr) = lane.program.process.take_output();
            out[shard.start + k] = Some(Ok(LaneResult {
                exit: lane.exit.clone().unwrap_or(Exit::InstructionLimit),
                stdout,
                stderr,
                instructions: lane.retired(),
                pc: lane.program.state.pc,
                elapsed,
                coverage: lane.take_coverage().map(|m| m.as_slice().to_vec()),
            }));
        }
    }
    for lost in sharded.lost {
        let e = Arc::new(armada_gpu::Error::Device(format!(
            "every device had failed by the turn of lanes {} to {} (the last: {})",
            lost.start,
            lost.start + lost.count - 1,
            lost.why
        )));
        for slot in &mut out[lost.start..lost.start + lost.count] {
            *slot = Some(Err(LaneError::Engine(e.clone())));
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or(Err(LaneError::Panic("a lane did not come back".into()))))
        .collect()
}
