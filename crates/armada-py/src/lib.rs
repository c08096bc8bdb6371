//! armada's Python module, `armada._armada`; the package `armada` (python/armada) re-exports it.
//!
//! - [`machine`]: `armada.Machine`, a bare AArch64 machine (one flat read-write-execute memory
//!   region, registers, the CPU engine run to the first stop, synchronously or on a thread).
//! - [`linux`]: `armada.run` / `armada.run_batch`, static Linux programs with captured stdio.
//!
//! Every call that runs guest code releases the GIL. Nothing that happens in the engine may
//! take the interpreter down: engine panics are caught at the boundary and raised as
//! `armada.ArmadaError`, and guest faults are results, never errors.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString};
use std::any::Any;
use std::time::{Duration, Instant};

pub mod linux;
pub mod machine;

pyo3::create_exception!(
    armada,
    ArmadaError,
    PyException,
    "Base class of every error armada raises."
);
pyo3::create_exception!(
    armada,
    ElfError,
    ArmadaError,
    "The program cannot be loaded: missing or unreadable file, not an AArch64 Linux ELF \
     executable, dynamically linked, or damaged."
);
pyo3::create_exception!(
    armada,
    GuestMemoryError,
    ArmadaError,
    "A guest memory access from Python (read_memory, write_memory, ...) fell outside guest \
     memory. Also available as armada.MemoryError (not exported by `import *`, so it does not \
     shadow the builtin)."
);
pyo3::create_exception!(
    armada,
    EngineUnavailableError,
    ArmadaError,
    "The requested engine (backend) is not available in this build or on this machine."
);

/// Instructions the engine runs between two looks at the outside world (progress counter,
/// Ctrl-C, cancellation): about a few milliseconds of guest time.
pub(crate) const SLICE: u64 = 1 << 20;

/// How often a call that runs guest code with the GIL released checks for Ctrl-C.
pub(crate) const SIGNAL_CHECK_EVERY: Duration = Duration::from_millis(100);

/// The engines a name can ask for. Only the CPU engine exists in this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Cpu,
}

impl Backend {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
        }
    }
}

/// Resolves a `backend=` argument.
pub(crate) fn resolve_backend(name: &str) -> PyResult<Backend> {
    match name.to_ascii_lowercase().as_str() {
        "cpu" | "auto" => Ok(Backend::Cpu),
        "cuda" => Err(EngineUnavailableError::new_err(
            "backend \"cuda\": the CUDA engine is not part of this build of armada yet; \
             use backend=\"cpu\", or \"auto\" to take the best engine available",
        )),
        "wgpu" => Err(EngineUnavailableError::new_err(
            "backend \"wgpu\": the wgpu engine is not part of this build of armada yet; \
             use backend=\"cpu\", or \"auto\" to take the best engine available",
        )),
        _ => Err(PyValueError::new_err(format!(
            "unknown backend {name:?}: expected \"cpu\", \"cuda\", \"wgpu\" or \"auto\""
        ))),
    }
}

/// The text of a panic payload.
pub(crate) fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// The error raised when the engine panicked (a bug in armada, never the guest's fault).
pub(crate) fn internal_error(what: &str, msg: &str) -> PyErr {
    ArmadaError::new_err(format!(
        "internal error in armada while {what}: {msg} (this is a bug in armada; please report it)"
    ))
}

/// Bytes from a bytes-like object (bytes, bytearray, memoryview, a numpy array: its raw bytes)
/// or a sequence of ints 0..=255.
pub(crate) fn bytes_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    let not_bytes = || {
        PyTypeError::new_err(format!(
            "{what} must be bytes-like (bytes, bytearray, memoryview, numpy array) or a sequence \
             of ints 0..255, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        ))
    };
    // bytes(5) would be five zero bytes and bytes("x") needs an encoding: refuse both.
    if obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyString>() {
        return Err(not_bytes());
    }
    match obj.py().get_type::<PyBytes>().call1((obj,)) {
        Ok(b) => Ok(b.cast::<PyBytes>()?.as_bytes().to_vec()),
        Err(e) if e.is_instance_of::<PyValueError>(obj.py()) => Err(PyValueError::new_err(
            format!("{what}: {}", e.value(obj.py())),
        )),
        Err(_) => Err(not_bytes()),
    }
}

/// A 64-bit value from a Python int in [-2**63, 2**64): negative values are two's complement.
pub(crate) fn u64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if let Ok(v) = obj.extract::<u64>() {
        return Ok(v);
    }
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(v as u64);
    }
    if obj.is_instance_of::<PyInt>() {
        return Err(pyo3::exceptions::PyOverflowError::new_err(format!(
            "{what} does not fit in 64 bits (expected -2**63 <= value < 2**64)"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be an int, not {}",
        obj.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into())
    )))
}

/// Calls `check` (with the GIL) at most every [`SIGNAL_CHECK_EVERY`]; used from code that runs
/// with the GIL released to notice Ctrl-C.
pub(crate) struct SignalCheck {
    last: Instant,
    pub(crate) error: Option<PyErr>,
}

impl SignalCheck {
    pub(crate) fn new() -> Self {
        SignalCheck {
            last: Instant::now(),
            error: None,
        }
    }

    /// False once a signal handler raised (KeyboardInterrupt, say); the error is kept.
    pub(crate) fn keep_going(&mut self) -> bool {
        if self.error.is_some() {
            return false;
        }
        if self.last.elapsed() < SIGNAL_CHECK_EVERY {
            return true;
        }
        self.last = Instant::now();
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            self.error = Some(e);
            return false;
        }
        true
    }
}

#[pymodule]
fn _armada(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ArmadaError", py.get_type::<ArmadaError>())?;
    m.add("ElfError", py.get_type::<ElfError>())?;
    m.add("GuestMemoryError", py.get_type::<GuestMemoryError>())?;
    m.add(
        "EngineUnavailableError",
        py.get_type::<EngineUnavailableError>(),
    )?;
    m.add_class::<machine::Machine>()?;
    m.add_class::<machine::ExecResult>()?;
    m.add_class::<machine::Status>()?;
    m.add_class::<machine::Flags>()?;
    m.add_class::<linux::Completed>()?;
    m.add_function(wrap_pyfunction!(linux::run_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(linux::available_backends, m)?)?;
    Ok(())
}
