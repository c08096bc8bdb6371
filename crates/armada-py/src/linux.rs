//! `armada.run` and `armada.run_batch`: static AArch64 Linux programs with captured stdio.
//!
//! The Python wrappers (python/armada/__init__.py) turn arguments into bytes and call
//! [`run_lanes`]: one image, loaded once and shared by every lane; each lane its own process
//! (registers, memory, files), run to its end by the CPU engine, on all cores with rayon for a
//! batch. The calling thread waits with the GIL released and turns Ctrl-C into a stop of every
//! lane at its next slice.

use crate::{
    internal_error, panic_text, resolve_backend, ArmadaError, ElfError, SignalCheck, SLICE,
};
use armada_core::cpu;
use armada_core::cpu::DecodedPages;
use armada_core::elf::{Image, LoadError};
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::{Exit, Lane};
use armada_core::state::Stop;
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
}

#[pymethods]
impl Completed {
    /// Same as exit_code (the name subprocess.CompletedProcess uses).
    #[getter]
    fn returncode(&self) -> i32 {
        self.exit_code
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

/// One lane's result before it becomes a Python object.
struct LaneResult {
    exit: Exit,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    instructions: u64,
    pc: u64,
    elapsed: f64,
}

/// Why a lane produced no result.
enum LaneError {
    /// Ctrl-C: every lane stops at its next slice.
    Interrupted,
    /// The image could not be mapped (an ElfError).
    Load(String),
    /// The process could not be set up (arguments too long, say).
    Start(String),
    /// The engine panicked: a bug in armada.
    Panic(String),
}

/// Runs a lane to its end (or `max` instructions), a slice at a time; None when `stop` was
/// raised first.
fn run_lane(lane: &mut Lane, max: Option<u64>, stop: &AtomicBool) -> Option<()> {
    while lane.exit.is_none() {
        let left = match max {
            Some(m) => m.saturating_sub(lane.retired()),
            None => u64::MAX,
        };
        let slice = left.min(SLICE);
        let p = &mut lane.program;
        let s = cpu::run(&mut p.state, &mut p.mem, &mut lane.code, slice);
        if s == Stop::Budget && left > slice {
            // The slice ran out, not the program's budget.
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            continue;
        }
        lane.exit = lane.service(s);
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

/// Backends `Machine`, `run` and `run_batch` can use in this build and on this machine.
#[pyfunction]
pub fn available_backends() -> Vec<&'static str> {
    vec!["cpu"]
}

/// Runs one program in `len(argvs)` lanes (the work behind armada.run and armada.run_batch;
/// call those). Every argv's first item is the program and must be the same in all lanes.
#[pyfunction]
#[pyo3(signature = (argvs, stdins, env, backend, root, max_instructions, deterministic, seed, parallel))]
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
) -> PyResult<Vec<Completed>> {
    resolve_backend(backend)?;
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
    let program = match argvs[0].first() {
        Some(p) => p.clone(),
        None => {
            return Err(PyValueError::new_err(
                "argv is empty: it needs the program first",
            ))
        }
    };
    for (i, a) in argvs.iter().enumerate() {
        match a.first() {
            None => {
                return Err(PyValueError::new_err(format!(
                    "argvs[{i}] is empty: it needs the program first"
                )))
            }
            Some(p) if *p != program => {
                return Err(PyValueError::new_err(format!(
                    "run_batch runs one program in every lane: argvs[{i}][0] is {:?}, argvs[0][0] is {:?}",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(&program)
                )))
            }
            _ => {}
        }
    }
    if let Some(r) = &root {
        if !r.is_dir() {
            return Err(PyValueError::new_err(format!(
                "root {} is not a directory",
                r.display()
            )));
        }
    }
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(&program));
    let image = py
        .detach(|| Image::load(&path))
        .map_err(|e| load_error(&path, e))?;
    let image = Arc::new(image);
    let cfg = LinuxConfig {
        root,
        strace: false,
        deterministic,
        seed,
        exe_host_path: std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
        exe_guest_path: program.clone(),
    };

    // Lanes of one image decode each page of its code once, between them.
    let decoded = DecodedPages::new();
    // Each lane: spawn the process, run it, collect its output.
    let lane_job = |argv: Vec<Vec<u8>>, stdin: Vec<u8>, stop: &AtomicBool| {
        let program = Program::spawn(
            image.clone(),
            &cfg,
            argv,
            env.clone(),
            Stdio::Captured { stdin },
        )
        .map_err(|e| match e {
            LoadError::Stack(why) => LaneError::Start(why),
            e => LaneError::Load(e.to_string()),
        })?;
        let mut lane = Lane::with_decoded(program, decoded.clone());
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
        })
    };

    // Lanes run on another thread (rayon's pool for a batch); this one waits with the GIL
    // released and checks for Ctrl-C.
    type LaneOutcome = Result<LaneResult, LaneError>;
    let lanes: Vec<(Vec<Vec<u8>>, Vec<u8>)> = argvs.into_iter().zip(stdins).collect();
    let n = lanes.len();
    let (results, interrupt) = py.detach(|| {
        let stop = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel::<Result<Vec<LaneOutcome>, String>>();
        std::thread::scope(|s| {
            let stop = &stop;
            let lane_job = &lane_job;
            s.spawn(move || {
                let all = catch_unwind(AssertUnwindSafe(|| {
                    let each = |(argv, stdin): (Vec<Vec<u8>>, Vec<u8>)| {
                        catch_unwind(AssertUnwindSafe(|| lane_job(argv, stdin, stop)))
                            .unwrap_or_else(|p| Err(LaneError::Panic(panic_text(&*p))))
                    };
                    if parallel && n > 1 {
                        lanes.into_par_iter().map(each).collect::<Vec<_>>()
                    } else {
                        lanes.into_iter().map(each).collect::<Vec<_>>()
                    }
                }))
                .map_err(|p| panic_text(&*p));
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
    });
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
            Err(LaneError::Load(msg)) => {
                return Err(ElfError::new_err(format!(
                    "cannot run {}{lane}: {msg}",
                    path.display()
                )))
            }
            Err(LaneError::Start(msg)) => {
                return Err(ArmadaError::new_err(format!(
                    "cannot start {}{lane}: {msg}",
                    path.display()
                )))
            }
            Err(LaneError::Panic(msg)) => {
                return Err(internal_error(&format!("running a program{lane}"), &msg))
            }
        };
        let (exit_code, stop_reason, message) = match &r.exit {
            Exit::Code(c) => (c & 0xff, "exit", None),
            Exit::Signal { signal, message } => (-signal, "signal", message.clone()),
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
        });
    }
    Ok(out)
}
