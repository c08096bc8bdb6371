//! armada's Python module, `armada._armada`; the package `armada` (python/armada) re-exports it.
//!
//! - [`machine`]: `armada.Machine`, a bare AArch64 machine (one flat read-write-execute memory
//!   region, registers, an engine run to the first stop, synchronously or on a thread).
//! - [`dlpack`]: a GPU machine's guest memory in device memory for DLPack consumers.
//! - [`linux`]: `armada.run` / `armada.run_batch`, static Linux programs with captured stdio.
//!
//! Every call that runs guest code releases the GIL. Nothing that happens in the engine may
//! take the interpreter down: engine panics are caught at the boundary and raised as
//! `armada.ArmadaError`, and guest faults are results, never errors.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod dlpack;
pub mod fuzz;
pub mod linux;
pub mod machine;
pub mod snapshot;

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
     executable, damaged, or dynamically linked with its interpreter missing (give sysroot)."
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
    "The requested engine (backend) cannot run on this machine (no GPU, driver, NVRTC or adapter)."
);

/// Instructions the engine runs between two looks at the outside world (progress counter,
/// Ctrl-C, cancellation): about a few milliseconds of guest time.
pub(crate) const SLICE: u64 = 1 << 20;

/// How often a call that runs guest code with the GIL released checks for Ctrl-C.
pub(crate) const SIGNAL_CHECK_EVERY: Duration = Duration::from_millis(100);

/// The engines a name can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Cpu,
    Cuda,
    Wgpu,
}

impl Backend {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Wgpu => "wgpu",
        }
    }
}

/// An opened GPU engine, or why it could not be opened.
type Opened = Result<armada_gpu::Engine, armada_gpu::Error>;

/// GPU engines, opened at most once per process (opening compiles the kernels).
static CUDA: OnceLock<Opened> = OnceLock::new();
static WGPU: OnceLock<Opened> = OnceLock::new();

/// The engines' messages name the command-line flag; from Python the argument is meant.
fn python_message(msg: &str) -> String {
    msg.replace("--backend cpu", "backend=\"cpu\"")
        .replace("--backend", "backend=")
}

/// Whether the CUDA engine is the simulator (ARMADA_CUDA_SIM=1: the kernel compiled for the
/// host; its "device" memory is host memory).
pub(crate) fn cuda_is_sim() -> bool {
    CUDA_SIM.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether the CUDA engine that was opened is the simulator.
static CUDA_SIM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The engine in `cell`, opened once by `open` with the GIL released (opening compiles the
/// kernel); a panic while opening is an error, not a crash.
fn engine(
    py: Python<'_>,
    cell: &'static OnceLock<Opened>,
    what: &str,
    open: impl FnOnce() -> Opened + Send,
) -> &'static Opened {
    if let Some(e) = cell.get() {
        return e;
    }
    py.detach(|| {
        cell.get_or_init(|| {
            catch_unwind(AssertUnwindSafe(open)).unwrap_or_else(|p| {
                Err(armada_gpu::Error::Device(format!(
                    "opening the {what} engine failed: {} (this is a bug in armada; please \
                     report it)",
                    panic_text(&*p)
                )))
            })
        })
    })
}

fn cuda_engine(py: Python<'_>) -> &'static Opened {
    engine(py, &CUDA, "CUDA", || {
        let opts = armada_cuda::Options::from_env();
        CUDA_SIM.store(opts.sim, std::sync::atomic::Ordering::Relaxed);
        armada_cuda::check_driver(&opts).and_then(|()| armada_cuda::open(&opts))
    })
}

fn wgpu_engine(py: Python<'_>) -> &'static Opened {
    engine(py, &WGPU, "wgpu", || {
        armada_wgpu::open(&armada_wgpu::Options::from_env())
    })
}

/// The error an engine failure raises: EngineUnavailableError when there is no usable
/// device, driver or compiler here (the message says what to do), else ArmadaError.
pub(crate) fn gpu_error(e: &armada_gpu::Error) -> PyErr {
    gpu_error_in("", e)
}

fn gpu_error_in(context: &str, e: &armada_gpu::Error) -> PyErr {
    let msg = format!("{context}{}", python_message(&e.to_string()));
    match e {
        armada_gpu::Error::NoDevice(_) => EngineUnavailableError::new_err(msg),
        _ => ArmadaError::new_err(msg),
    }
}

/// A resolved backend, with its engine when it is a GPU one.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub(crate) backend: Backend,
    pub(crate) engine: Option<armada_gpu::Engine>,
    /// The devices a batch spreads over (`devices=`); empty: `engine` alone.
    pub(crate) devices: Vec<armada_gpu::Engine>,
}

impl Resolved {
    /// The engines a GPU batch runs on: the chosen devices, or the one engine.
    pub(crate) fn gpu_engines(&self) -> &[armada_gpu::Engine] {
        if self.devices.is_empty() {
            self.engine.as_slice()
        } else {
            &self.devices
        }
    }
}

/// A backend and a choice of its devices ("all", "0,2"), with the engines opened for it.
type DeviceSet = ((Backend, String), Vec<armada_gpu::Engine>);

/// Device sets opened for `devices=`, once per process.
static DEVICE_SETS: std::sync::Mutex<Vec<DeviceSet>> = std::sync::Mutex::new(Vec::new());

/// Opens the devices `devices` names ("all", "0,2"; None: the first) for a GPU backend
/// that `resolved` resolved to; on the CPU engine, `devices` given to backend="cpu" is a
/// ValueError, and one given to "auto" that found no GPU is left unused.
pub(crate) fn resolve_devices(
    py: Python<'_>,
    resolved: &mut Resolved,
    asked: &str,
    devices: Option<&str>,
) -> PyResult<()> {
    let Some(text) = devices else {
        return Ok(());
    };
    let which: armada_gpu::Devices = text
        .parse()
        .map_err(|e: String| PyValueError::new_err(format!("devices: {e}")))?;
    if resolved.engine.is_none() {
        if asked.eq_ignore_ascii_case("cpu") {
            return Err(PyValueError::new_err(
                "devices= chooses GPUs, and backend=\"cpu\" runs on the CPU engine: use backend=\"cuda\" (or \"wgpu\"), or leave devices out",
            ));
        }
        return Ok(());
    }
    if which == armada_gpu::Devices::First {
        return Ok(());
    }
    let key = (resolved.backend, which.to_string());
    let sets = || DEVICE_SETS.lock().unwrap_or_else(|p| p.into_inner());
    // (the lock is never held across the GIL's release: another thread may wait for it
    // holding the GIL)
    if let Some((_, engines)) = sets().iter().find(|(k, _)| *k == key) {
        resolved.devices = engines.clone();
        return Ok(());
    }
    let backend = resolved.backend;
    let opened = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| match backend {
            Backend::Wgpu => armada_wgpu::open_devices(&armada_wgpu::Options::from_env(), &which),
            _ => armada_cuda::open_devices(&armada_cuda::Options::from_env(), &which),
        }))
        .unwrap_or_else(|p| {
            Err(armada_gpu::Error::Device(format!(
                "opening the devices failed: {} (this is a bug in armada; please report it)",
                panic_text(&*p)
            )))
        })
    });
    let engines = opened.map_err(|e| gpu_error_in("devices: ", &e))?;
    sets().push((key, engines.clone()));
    resolved.devices = engines;
    Ok(())
}

/// Resolves a `backend=` argument, opening the engine it names: "cpu"; "cuda" and "wgpu"
/// (EngineUnavailableError when they cannot run here); "auto": CUDA when its driver is there
/// and the engine opens, else the CPU (never wgpu: without a GPU it would find a slow
/// software adapter).
pub(crate) fn resolve_backend(py: Python<'_>, name: &str) -> PyResult<Resolved> {
    let cpu = Resolved {
        backend: Backend::Cpu,
        engine: None,
        devices: Vec::new(),
    };
    let gpu = |backend: Backend, o: &'static Opened| match o {
        Ok(e) => Ok(Resolved {
            backend,
            engine: Some(e.clone()),
            devices: Vec::new(),
        }),
        Err(e) => Err(gpu_error_in(
            &format!("backend \"{}\": ", backend.name()),
            e,
        )),
    };
    match name.to_ascii_lowercase().as_str() {
        "cpu" => Ok(cpu),
        "cuda" => gpu(Backend::Cuda, cuda_engine(py)),
        "wgpu" => gpu(Backend::Wgpu, wgpu_engine(py)),
        "auto" => Ok(gpu(Backend::Cuda, cuda_engine(py)).unwrap_or(cpu)),
        _ => Err(PyValueError::new_err(format!(
            "unknown backend {name:?}: expected \"cpu\", \"cuda\", \"wgpu\" or \"auto\""
        ))),
    }
}

/// Backends that work here: "cpu" always, "cuda" and "wgpu" when their engine opens (the
/// first call opens them, which compiles their kernels).
#[pyfunction]
pub fn available_backends(py: Python<'_>) -> Vec<&'static str> {
    let mut v = vec!["cpu"];
    if cuda_engine(py).is_ok() {
        v.push("cuda");
    }
    if wgpu_engine(py).is_ok() {
        v.push("wgpu");
    }
    v
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

/// Sets how the CPU engine runs code from now on: "jit" (translation) or "interp".
#[pyfunction]
fn set_tier(name: &str) -> PyResult<()> {
    let choice =
        armada_jit::TierChoice::parse(name).map_err(pyo3::exceptions::PyValueError::new_err)?;
    armada_jit::install(choice).map_err(EngineUnavailableError::new_err)
}

/// How the CPU engine runs code: "jit" or "interp".
#[pyfunction]
fn tier() -> &'static str {
    armada_core::cpu::default_tier()
        .map(|t| t.name())
        .unwrap_or("interp")
}

#[pymodule]
fn _armada(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // at import, before the module starts threads (guests take os.environ, which this
    // does not change)
    armada_wgpu::quiet_vulkan_layers();
    // ARMADA_TIER as the command line reads it; else translation where the host has it
    let choice = match std::env::var("ARMADA_TIER") {
        Ok(v) => armada_jit::TierChoice::parse(&v)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("ARMADA_TIER: {e}")))?,
        Err(_) => armada_jit::TierChoice::default_here(),
    };
    if armada_jit::install(choice).is_err() {
        armada_jit::install(armada_jit::TierChoice::Interp).ok();
    }
    m.add_function(wrap_pyfunction!(set_tier, m)?)?;
    m.add_function(wrap_pyfunction!(tier, m)?)?;
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
    m.add_class::<dlpack::DeviceMemory>()?;
    m.add_function(wrap_pyfunction!(linux::run_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(linux::_completed, m)?)?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_function(wrap_pyfunction!(snapshot::take_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(fuzz::fuzz_program, m)?)?;
    m.add_function(wrap_pyfunction!(available_backends, m)?)?;
    Ok(())
}
