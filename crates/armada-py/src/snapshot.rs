//! `armada.snapshot`: a program run once to a point (`main`, a symbol, an address, or
//! `input`: its first read of stdin) and paused there, as a `Snapshot` object. Each run from
//! it restores the paused process (registers, memory shared copy-on-write, fds, Linux state)
//! with a stdin of its own, on the CPU engine or as a GPU batch, so a start that every run
//! shares is paid once.

use crate::linux::{load, net_mode, run_made, take, Completed, LaneError};
use crate::{bytes_arg, resolve_backend, ArmadaError, ElfError};
use armada_core::cpu::DecodedPages;
use armada_core::elf::LoadError;
use armada_core::linux::Stdio;
use armada_core::process::Program;
use armada_core::runner::Lane;
use armada_core::snapshot::SharedSnapshot;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A program paused at a point, ready to run from there any number of times.
#[pyclass(module = "armada", name = "Snapshot", frozen)]
pub struct PySnapshot {
    snap: SharedSnapshot,
    path: PathBuf,
    point: String,
}

/// Runs `argv` to `at` and pauses it there (the work behind armada.snapshot; call that).
#[pyfunction]
#[pyo3(signature = (argv, at, stdin, env, root, max_instructions, deterministic, seed, sysroot=None, net="loopback"))]
#[allow(clippy::too_many_arguments)]
pub fn take_snapshot(
    py: Python<'_>,
    argv: Vec<Vec<u8>>,
    at: String,
    stdin: Vec<u8>,
    env: Vec<Vec<u8>>,
    root: Option<PathBuf>,
    max_instructions: Option<u64>,
    deterministic: bool,
    seed: u64,
    sysroot: Option<PathBuf>,
    net: &str,
) -> PyResult<PySnapshot> {
    let net = net_mode(net)?;
    let Some(program) = argv.first().cloned() else {
        return Err(PyValueError::new_err(
            "argv is empty: it needs the program first",
        ));
    };
    let (path, image, cfg) = load(py, &program, root, sysroot, net, deterministic, seed)?;
    let process =
        Program::spawn(image, &cfg, argv, env, Stdio::Captured { stdin }).map_err(|e| match e {
            LoadError::Stack(why) => {
                ArmadaError::new_err(format!("cannot start {}: {why}", path.display()))
            }
            e => ElfError::new_err(format!("cannot run {}: {e}", path.display())),
        })?;
    let lane = Lane::with_decoded(process, DecodedPages::new());
    let snap = take(py, lane, &at, max_instructions)
        .map_err(|e| ArmadaError::new_err(format!("snapshot at {at}: {e}")))?;
    Ok(PySnapshot {
        snap,
        path,
        point: at,
    })
}

#[pymethods]
impl PySnapshot {
    /// Where the program was paused, as asked for (`main`, a symbol, an address, `input`).
    #[getter]
    fn point(&self) -> &str {
        &self.point
    }

    /// Instructions the program retired before the pause (every run's count includes them).
    #[getter]
    fn instructions(&self) -> u64 {
        self.snap.retired()
    }

    /// The program counter at the pause.
    #[getter]
    fn pc(&self) -> u64 {
        self.snap.pc()
    }

    /// Runs the paused program on from its pause with `stdin` as what is left of its stdin;
    /// a `Completed` as `armada.run` returns.
    #[pyo3(signature = (stdin=None, backend="cpu", max_instructions=None, coverage=false))]
    fn run(
        &self,
        py: Python<'_>,
        stdin: Option<&Bound<'_, PyAny>>,
        backend: &str,
        max_instructions: Option<u64>,
        coverage: bool,
    ) -> PyResult<Py<Completed>> {
        let stdin = match stdin {
            Some(s) => vec![bytes_arg(s, "stdin")?],
            None => vec![Vec::new()],
        };
        let mut out = self.run_all(py, stdin, backend, max_instructions, coverage)?;
        Py::new(py, out.remove(0))
    }

    /// Runs the paused program once for each stdin in `stdins`, all at once (a GPU batch, or
    /// every core); a list of `Completed`, in order.
    #[pyo3(signature = (stdins, backend="auto", max_instructions=None, coverage=false))]
    fn run_batch(
        &self,
        py: Python<'_>,
        stdins: Vec<Bound<'_, PyAny>>,
        backend: &str,
        max_instructions: Option<u64>,
        coverage: bool,
    ) -> PyResult<Vec<Completed>> {
        let stdins = stdins
            .iter()
            .enumerate()
            .map(|(i, s)| bytes_arg(s, &format!("stdins[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        self.run_all(py, stdins, backend, max_instructions, coverage)
    }

    fn __repr__(&self) -> String {
        format!(
            "Snapshot({}, point='{}', instructions={}, pc={:#x})",
            self.path.display(),
            self.point,
            self.snap.retired(),
            self.snap.pc()
        )
    }
}

impl PySnapshot {
    fn run_all(
        &self,
        py: Python<'_>,
        stdins: Vec<Vec<u8>>,
        backend: &str,
        max_instructions: Option<u64>,
        coverage: bool,
    ) -> PyResult<Vec<Completed>> {
        let resolved = resolve_backend(py, backend)?;
        let make_lane = |_argv: Vec<Vec<u8>>, stdin: Vec<u8>| -> Result<Lane, LaneError> {
            Ok(self.snap.restore(&stdin))
        };
        let lanes = stdins.into_iter().map(|s| (Vec::new(), s)).collect();
        run_made(
            py,
            &resolved,
            lanes,
            true,
            max_instructions,
            coverage,
            &make_lane,
        )
    }
}
