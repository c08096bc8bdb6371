//! `armada.fuzz`: coverage-guided fuzzing (crate `armada-fuzz`, as `armada fuzz` runs it),
//! with the GIL released; Ctrl-C stops it at the end of a round.

use crate::{ArmadaError, ElfError, SignalCheck};
use armada_core::linux::LinuxConfig;
use armada_fuzz::{
    corpus, input_route, snapshot_point, FuzzOptions, InputKind, Target, TargetSpec,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

/// Fuzzes one program (the work behind armada.fuzz; call that). Returns the figures as a
/// dict (the keys of `armada fuzz --stats-json`, and `saved`: the crash and hang files).
#[pyfunction]
#[pyo3(signature = (argv, env, corpus_dir, crashes_dir, lanes, max_time, max_execs, stop_on_crash, snapshot_at, input, dict, seed, max_len, exec_limit, sysroot=None, backend="cpu"))]
#[allow(clippy::too_many_arguments)]
pub fn fuzz_program<'py>(
    py: Python<'py>,
    argv: Vec<Vec<u8>>,
    env: Vec<Vec<u8>>,
    corpus_dir: PathBuf,
    crashes_dir: PathBuf,
    lanes: Option<usize>,
    max_time: Option<f64>,
    max_execs: Option<u64>,
    stop_on_crash: bool,
    snapshot_at: Option<String>,
    input: Option<String>,
    dict: Option<PathBuf>,
    seed: u64,
    max_len: usize,
    exec_limit: u64,
    sysroot: Option<PathBuf>,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(program) = argv.first().cloned() else {
        return Err(PyValueError::new_err(
            "argv is empty: it needs the program first",
        ));
    };
    let resolved = crate::resolve_backend(py, backend)?;
    // a round is one batch: a GPU wants many lanes to be busy
    let lanes = lanes.unwrap_or(if resolved.engine.is_some() {
        16384
    } else {
        256
    });
    if lanes == 0 {
        return Err(PyValueError::new_err("lanes must be at least 1"));
    }
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(&program));
    let point = snapshot_at.as_deref().and_then(snapshot_point);
    let kind = match input.as_deref() {
        None => None,
        Some("stdin") => Some(InputKind::Stdin),
        Some("file") => Some(InputKind::File),
        Some("buffer") => Some(InputKind::Buffer),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "input={other:?}: use \"stdin\", \"file\" (with \"@@\" in argv) or \"buffer\""
            )))
        }
    };
    let words = argv[1..].to_vec();
    let (words, via) = input_route(words, point.as_ref(), kind, &crashes_dir, max_len)
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    let mut argv = vec![program.clone()];
    argv.extend(words);
    let tokens = match &dict {
        Some(p) => corpus::read_dict(p).map_err(|e| PyValueError::new_err(format!("{e:#}")))?,
        None => Vec::new(),
    };
    let spec = TargetSpec {
        program: path.clone(),
        argv,
        env,
        config: LinuxConfig {
            root: None,
            sysroot,
            strace: false,
            deterministic: true,
            seed,
            exe_host_path: std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
            exe_guest_path: program,
            max_processes: None,
            net: armada_core::linux::net::host::NetMode::Loopback,
            ignored_signals: 0,
            host_exec: false,
        },
        via,
        snapshot_at: point,
        exec_limit,
        start_limit: 10_000_000_000,
        lane_memory: None,
    };
    let opts = FuzzOptions {
        corpus_dir,
        crashes_dir,
        afl: None,
        exec_limit,
        lanes,
        max_time: max_time.map(Duration::from_secs_f64),
        max_execs,
        stop_on_crash,
        seed,
        max_len: max_len.max(1),
        tokens,
        pipeline: None,
    };
    let (result, interrupt) = py.detach(|| {
        let mut signals = SignalCheck::new();
        let r = Target::new(spec).and_then(|t| {
            armada_fuzz::fuzz(t, &opts, resolved.engine.clone(), &mut |_| {
                signals.keep_going()
            })
        });
        (r, signals.error)
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let stats = result.map_err(|e| {
        let msg = format!("{e:#}");
        if msg.starts_with("cannot run") {
            ElfError::new_err(msg)
        } else {
            ArmadaError::new_err(msg)
        }
    })?;
    let d = PyDict::new(py);
    d.set_item("execs", stats.execs)?;
    d.set_item("execs_per_sec", stats.execs_per_sec())?;
    d.set_item("elapsed_s", stats.elapsed.as_secs_f64())?;
    d.set_item("corpus", stats.corpus)?;
    d.set_item("edges", stats.edges)?;
    d.set_item("crashes", stats.crashes)?;
    d.set_item("hangs", stats.hangs)?;
    d.set_item("rounds", stats.rounds)?;
    d.set_item("snapshot_instructions", stats.snapshot_instructions)?;
    d.set_item("warnings", stats.warnings.clone())?;
    let saved: Vec<String> = stats
        .saved
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    d.set_item("saved", saved)?;
    Ok(d)
}
