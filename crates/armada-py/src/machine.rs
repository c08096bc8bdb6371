//! `armada.Machine`: a bare AArch64 machine, the design documents' `MetalCPU`.
//!
//! One contiguous read-write-execute region `[0, memory_size)` (`AddressSpace::with_flat`), the
//! registers, and an engine run to the first stop (the CPU engine, or a GPU engine's bare lane,
//! `armada_gpu::BareLane`, whose memory lives on the device with a mirror here). The machine's state (registers, memory,
//! decoded code) lives in a [`Core`] that is moved to whoever runs it: the calling thread with
//! the GIL released (`execute`) or a background thread (`start`). While it is away, the
//! machine is *running* and calls that need the state say so instead of blocking.
//!
//! The engine runs in slices of [`SLICE`] instructions; between slices it publishes its
//! progress (`poll`), notices Ctrl-C (`execute`) and cancellation (the machine was dropped).
//! A slice boundary is invisible to the guest: the budget simply continues.

use crate::dlpack::{DeviceMemory, DlDevice};
use crate::{
    bytes_arg, gpu_error, internal_error, panic_text, resolve_backend, u64_arg, ArmadaError,
    Backend, GuestMemoryError, SignalCheck, SLICE,
};
use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{Access, AddressSpace, Perm, PAGE_SIZE};
use armada_core::state::{CpuState, Stop};
use armada_gpu::{BareEnd, BareLane};
use numpy::ndarray::ArrayView1;
use numpy::PyArray1;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

/// What the machine runs: registers, memory and decoded code; on a GPU backend also the
/// device lane, for which `mem` is the host mirror of device memory (current whenever the
/// machine is not running, except for writes made through exported device views: see
/// `sync_views`).
struct Core {
    st: CpuState,
    mem: AddressSpace,
    code: CodeCache,
    gpu: Option<BareLane>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug)]
struct Outcome {
    stop: Stop,
    cycles: u64,
    pc: u64,
    elapsed: f64,
}

/// A run ends with a stop of the engine, or early (Ctrl-C, the machine was dropped).
enum RunEnd {
    Done(Outcome),
    Interrupted,
    /// The GPU engine failed (the error to raise).
    Failed(PyErr),
}

/// What a background run hands back: the state, always, and how the run went.
type Finished = (Box<Core>, Result<RunEnd, String>);

struct Job {
    rx: mpsc::Receiver<Finished>,
    handle: JoinHandle<()>,
}

struct Inner {
    /// None while the machine is running (on a background thread or in `execute`).
    core: Option<Box<Core>>,
    /// The background run started by `start`, until its result is collected.
    job: Option<Job>,
    /// The result of a background run that finished, until `wait` returns it.
    finished: Option<PyResult<Outcome>>,
    /// Set by `memory_view`: code may have been changed through the view, so the next run
    /// drops what was decoded (see `memory_view`).
    view_handed_out: bool,
    /// When the current run started, and how long the last one took.
    started: Option<Instant>,
    last_elapsed: f64,
}

/// Shared with the thread that runs the engine.
struct Shared {
    /// Instructions retired by the current (or last) run so far.
    cycles: AtomicU64,
    /// Set when the machine is dropped: a background run stops at its next slice.
    cancel: AtomicBool,
    /// GPU backends: set when device memory was handed out (DLPack), so a consumer may have
    /// written it; cleared when the machine has read it back.
    exported: Arc<AtomicBool>,
}

/// Runs `core` until the engine stops, `max` instructions have retired or `keep_going` says
/// no (checked between slices).
fn run_core(
    core: &mut Core,
    max: u64,
    shared: &Shared,
    mut keep_going: impl FnMut() -> bool,
) -> RunEnd {
    let t0 = Instant::now();
    let first = core.st.retired;
    shared.cycles.store(0, Ordering::Relaxed);
    if let Some(lane) = core.gpu.as_mut() {
        // The GPU engine: launches until the first stop; between launches, progress and the
        // questions whether to go on.
        let mut go = |done: u64| {
            shared.cycles.store(done, Ordering::Relaxed);
            !shared.cancel.load(Ordering::Relaxed) && keep_going()
        };
        let r = lane.run(&mut core.st, &mut core.mem, &mut core.code, max, &mut go);
        let done = core.st.retired - first;
        shared.cycles.store(done, Ordering::Relaxed);
        return match r {
            Ok(BareEnd::Stop(stop)) => RunEnd::Done(Outcome {
                stop,
                cycles: done,
                pc: core.st.pc,
                elapsed: t0.elapsed().as_secs_f64(),
            }),
            Ok(BareEnd::Interrupted) => RunEnd::Interrupted,
            Err(e) => RunEnd::Failed(gpu_error(&e)),
        };
    }
    loop {
        let done = core.st.retired - first;
        let slice = (max - done).min(SLICE);
        let stop = cpu::run(&mut core.st, &mut core.mem, &mut core.code, slice);
        let done = core.st.retired - first;
        shared.cycles.store(done, Ordering::Relaxed);
        if stop != Stop::Budget || done >= max {
            return RunEnd::Done(Outcome {
                stop,
                cycles: done,
                pc: core.st.pc,
                elapsed: t0.elapsed().as_secs_f64(),
            });
        }
        if shared.cancel.load(Ordering::Relaxed) || !keep_going() {
            return RunEnd::Interrupted;
        }
    }
}

// ----- results ---------------------------------------------------------------------------

/// Numbers of `armada.StopReason` (python/armada/__init__.py holds the enum).
fn stop_code(stop: &Stop) -> u8 {
    match stop {
        Stop::Halt(_) => 1,
        Stop::Syscall => 2,
        Stop::Budget => 3,
        Stop::Fault(_) => 4,
        Stop::Undefined(_) => 5,
        Stop::Breakpoint(_) => 6,
    }
}

static STOP_REASON: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The result of `execute` and `wait`: why and where the machine stopped.
#[pyclass(module = "armada", frozen)]
pub struct ExecResult {
    stop: Stop,
    cycles: u64,
    pc: u64,
    elapsed: f64,
}

impl ExecResult {
    fn from_outcome(o: Outcome) -> Self {
        ExecResult {
            stop: o.stop,
            cycles: o.cycles,
            pc: o.pc,
            elapsed: o.elapsed,
        }
    }
}

#[pymethods]
impl ExecResult {
    /// Instructions retired by this run.
    #[getter]
    fn cycles(&self) -> u64 {
        self.cycles
    }
    /// Same as `cycles` (the name the async design documents use).
    #[getter]
    fn cycles_executed(&self) -> u64 {
        self.cycles
    }
    /// Why the machine stopped, an `armada.StopReason`.
    #[getter]
    fn stop_reason<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let ty = STOP_REASON.import(py, "armada", "StopReason")?;
        ty.call1((stop_code(&self.stop),))
    }
    /// The StopReason member's name: "HALT", "SYSCALL", "MAX_CYCLES", "FAULT", "UNDEFINED" or
    /// "BREAKPOINT".
    #[getter]
    fn stop_reason_name(&self) -> &'static str {
        self.stop.name()
    }
    /// The PC where the machine stopped: after the HLT or SVC, at the faulting, undefined or
    /// BRK instruction, at the next instruction for MAX_CYCLES.
    #[getter]
    fn pc(&self) -> u64 {
        self.pc
    }
    /// Wall-clock seconds the run took.
    #[getter]
    fn elapsed(&self) -> f64 {
        self.elapsed
    }
    /// Instructions per second (cycles / elapsed).
    #[getter]
    fn ips(&self) -> f64 {
        if self.elapsed > 0.0 {
            self.cycles as f64 / self.elapsed
        } else {
            0.0
        }
    }
    /// FAULT: the address that could not be accessed (None for other stops).
    #[getter]
    fn fault_address(&self) -> Option<u64> {
        match self.stop {
            Stop::Fault(f) => Some(f.addr),
            _ => None,
        }
    }
    /// FAULT: "read", "write" or "execute" (None for other stops).
    #[getter]
    fn fault_access(&self) -> Option<&'static str> {
        match self.stop {
            Stop::Fault(f) => Some(match f.access {
                Access::Read => "read",
                Access::Write => "write",
                Access::Execute => "execute",
            }),
            _ => None,
        }
    }
    /// UNDEFINED: the instruction word armada does not implement (None for other stops).
    #[getter]
    fn undefined_word(&self) -> Option<u32> {
        match self.stop {
            Stop::Undefined(w) => Some(w),
            _ => None,
        }
    }
    /// HALT and BREAKPOINT: the #imm of the HLT or BRK (None for other stops).
    #[getter]
    fn immediate(&self) -> Option<u16> {
        match self.stop {
            Stop::Halt(i) | Stop::Breakpoint(i) => Some(i),
            _ => None,
        }
    }

    fn __repr__(&self) -> String {
        let extra = match self.stop {
            Stop::Fault(f) => format!(", fault_address={:#x}", f.addr),
            Stop::Undefined(w) => format!(", undefined_word={w:#010x}"),
            Stop::Halt(i) | Stop::Breakpoint(i) => format!(", immediate={i:#x}"),
            _ => String::new(),
        };
        format!(
            "ExecResult(cycles={}, stop_reason=StopReason.{}, pc={:#x}{extra}, elapsed={:.6}, ips={:.0})",
            self.cycles,
            self.stop.name(),
            self.pc,
            self.elapsed,
            self.ips()
        )
    }
}

/// What `poll` reports about a run.
#[pyclass(module = "armada", frozen)]
pub struct Status {
    /// Instructions retired so far by the current run (or by the last run, when it is over).
    #[pyo3(get)]
    cycles_executed: u64,
    /// Whether the machine is running.
    #[pyo3(get)]
    running: bool,
    /// Seconds since the current run started (or how long the last run took).
    #[pyo3(get)]
    elapsed: f64,
}

#[pymethods]
impl Status {
    fn __repr__(&self) -> String {
        format!(
            "Status(cycles_executed={}, running={}, elapsed={:.6})",
            self.cycles_executed,
            if self.running { "True" } else { "False" },
            self.elapsed
        )
    }
}

/// The condition flags N, Z, C, V. `int(flags)` is the 4-bit value N<<3 | Z<<2 | C<<1 | V.
#[pyclass(module = "armada", frozen)]
pub struct Flags {
    #[pyo3(get)]
    n: bool,
    #[pyo3(get)]
    z: bool,
    #[pyo3(get)]
    c: bool,
    #[pyo3(get)]
    v: bool,
}

impl Flags {
    fn from_nzcv(nzcv: u64) -> Self {
        Flags {
            n: nzcv & (1 << 31) != 0,
            z: nzcv & (1 << 30) != 0,
            c: nzcv & (1 << 29) != 0,
            v: nzcv & (1 << 28) != 0,
        }
    }
    fn bits(&self) -> u64 {
        (self.n as u64) << 3 | (self.z as u64) << 2 | (self.c as u64) << 1 | self.v as u64
    }
}

/// A 4-bit NZCV value from a Flags or an int 0..=15.
fn flags_arg(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(f) = obj.cast::<Flags>() {
        return Ok(f.get().bits());
    }
    match obj.extract::<i64>() {
        Ok(v) if (0..16).contains(&v) => Ok(v as u64),
        Ok(v) => Err(PyValueError::new_err(format!(
            "flags must be 0..15 (N<<3 | Z<<2 | C<<1 | V), got {v}"
        ))),
        Err(_) => Err(PyTypeError::new_err(
            "flags must be an armada.Flags or an int 0..15 (N<<3 | Z<<2 | C<<1 | V)",
        )),
    }
}

#[pymethods]
impl Flags {
    #[new]
    #[pyo3(signature = (n=false, z=false, c=false, v=false))]
    fn new(n: bool, z: bool, c: bool, v: bool) -> Self {
        Flags { n, z, c, v }
    }
    /// N<<3 | Z<<2 | C<<1 | V.
    #[getter]
    fn value(&self) -> u64 {
        self.bits()
    }
    /// The NZCV system register as MRS reads it (the flags in bits 31..28).
    #[getter]
    fn nzcv(&self) -> u64 {
        self.bits() << 28
    }
    fn __int__(&self) -> u64 {
        self.bits()
    }
    fn __index__(&self) -> u64 {
        self.bits()
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        flags_arg(other).is_ok_and(|v| v == self.bits())
    }
    fn __hash__(&self) -> u64 {
        self.bits()
    }
    fn __repr__(&self) -> String {
        let b = |x: bool| if x { "True" } else { "False" };
        format!(
            "Flags(n={}, z={}, c={}, v={})",
            b(self.n),
            b(self.z),
            b(self.c),
            b(self.v)
        )
    }
}

// ----- the machine -----------------------------------------------------------------------

/// A bare AArch64 machine: x0..x30, SP, PC, the NZCV flags and one zero-filled
/// read-write-execute memory region [0, memory_size). Registers start at 0, SP at memory_size,
/// PC at 0. load_program, set_pc, execute(max_cycles) -> ExecResult; start/poll/wait run in the
/// background. backend: "cpu", "cuda", "wgpu" (the loop in a GPU kernel, same results), or
/// "auto" (CUDA when available, else the CPU).
#[pyclass(module = "armada", frozen, subclass, weakref)]
pub struct Machine {
    inner: Mutex<Inner>,
    shared: Arc<Shared>,
    memory_size: u64,
    backend: Backend,
    /// GPU backends: the device allocation of guest memory (exported by memory_view).
    gpu_mem: Option<Arc<armada_gpu::DeviceBuffer>>,
    /// Its DLPack device (None: CPU machines, whose numpy view exports itself, and wgpu).
    dl_device: Option<DlDevice>,
    /// Host address of guest address 0: the flat buffer, which never moves while the machine
    /// lives (it is owned by the core's address space, boxed, wherever the core is).
    host_base: usize,
}

impl Drop for Machine {
    fn drop(&mut self) {
        // A background run of a machine nobody can see any more: stop it.
        self.shared.cancel.store(true, Ordering::Relaxed);
    }
}

/// Size of the executable areas the machine's memory is cut into (see `Machine::new`).
const CODE_AREA: u64 = 256 << 10;

fn busy() -> PyErr {
    ArmadaError::new_err(
        "the machine is running (start() was called and the run has not finished): \
         use poll() or is_running() while it runs, and wait() for the result",
    )
}

impl Machine {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes back the state of a background run that has finished.
    fn reclaim(inner: &mut Inner) {
        let Some(job) = inner.job.as_ref() else {
            return;
        };
        match job.rx.try_recv() {
            Ok((core, result)) => {
                let job = inner.job.take().unwrap();
                let _ = job.handle.join();
                Self::finish(inner, core, result);
            }
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => {
                // Cannot happen: the thread catches panics and always sends the state back. If
                // it did, the state is gone: the machine stays "running" for good rather than
                // pretend otherwise, and wait() reports the error.
                let job = inner.job.take().unwrap();
                let _ = job.handle.join();
                inner.finished = Some(Err(internal_error(
                    "running guest code",
                    "the engine thread ended without a result",
                )));
            }
        }
    }

    fn finish(inner: &mut Inner, core: Box<Core>, result: Result<RunEnd, String>) {
        inner.core = Some(core);
        inner.last_elapsed = inner
            .started
            .take()
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        inner.finished = Some(match result {
            Ok(RunEnd::Done(o)) => Ok(o),
            Ok(RunEnd::Interrupted) => Err(ArmadaError::new_err("the run was cancelled")),
            Ok(RunEnd::Failed(e)) => Err(e),
            Err(e) => Err(internal_error("running guest code", &e)),
        });
    }

    /// Runs `f` on the machine's state (not while it runs).
    fn with_core<R>(&self, f: impl FnOnce(&mut Core) -> PyResult<R>) -> PyResult<R> {
        let mut inner = self.lock();
        Self::reclaim(&mut inner);
        match inner.core.as_deref_mut() {
            Some(core) => f(core),
            None => Err(busy()),
        }
    }

    fn check_range(&self, addr: u64, len: u64, what: &str) -> PyResult<()> {
        if addr
            .checked_add(len)
            .is_some_and(|end| end <= self.memory_size)
        {
            Ok(())
        } else {
            Err(GuestMemoryError::new_err(format!(
                "cannot {what} {len} byte{} at {addr:#x}: guest memory is [0x0, {:#x})",
                if len == 1 { "" } else { "s" },
                self.memory_size
            )))
        }
    }

    /// GPU backends: brings the host mirror up to date with device memory when a consumer of
    /// an exported view may have written it (decoding again the code it changed).
    fn sync_views(&self, core: &mut Core) -> PyResult<()> {
        let Some(lane) = core.gpu.as_mut() else {
            return Ok(());
        };
        // The lane and the machine hold the allocation; anything more is a live view.
        let live = self
            .gpu_mem
            .as_ref()
            .is_some_and(|m| Arc::strong_count(m) > 2);
        if !(self.shared.exported.swap(false, Ordering::Relaxed) || live) {
            return Ok(());
        }
        let (_, flat) = core.mem.flat_mut().expect("flat memory");
        let changed = lane.sync_full(flat).map_err(|e| gpu_error(&e))?;
        for vpn in changed {
            core.code.invalidate_page(vpn);
        }
        Ok(())
    }

    fn read(&self, addr: u64, len: u64) -> PyResult<Vec<u8>> {
        self.check_range(addr, len, "read")?;
        self.with_core(|core| {
            self.sync_views(core)?;
            let (_, flat) = core.mem.flat().expect("flat memory");
            Ok(flat[addr as usize..(addr + len) as usize].to_vec())
        })
    }

    /// Writes through the address space; every page of decoded code it hits has its
    /// micro-ops dropped.
    fn write(&self, addr: u64, data: &[u8]) -> PyResult<()> {
        self.check_range(addr, data.len() as u64, "write")?;
        self.with_core(|core| {
            self.sync_views(core)?;
            core.mem
                .write_bytes(addr, data)
                .map_err(|f| GuestMemoryError::new_err(format!("cannot write: {f}")))?;
            for vpn in core.mem.take_code_write() {
                core.code.invalidate_page(vpn);
            }
            if let Some(lane) = core.gpu.as_mut() {
                let (_, flat) = core.mem.flat().expect("flat memory");
                lane.host_wrote(addr, data.len() as u64, flat)
                    .map_err(|e| gpu_error(&e))?;
            }
            Ok(())
        })
    }

    /// Takes the state out for a run (marks the machine running).
    fn take_for_run(&self) -> PyResult<Box<Core>> {
        let mut inner = self.lock();
        Self::reclaim(&mut inner);
        let mut core = inner.core.take().ok_or_else(busy)?;
        if std::mem::take(&mut inner.view_handed_out) {
            core.mem.invalidate_code();
        }
        if let Err(e) = self.sync_views(&mut core) {
            inner.core = Some(core);
            return Err(e);
        }
        inner.started = Some(Instant::now());
        self.shared.cycles.store(0, Ordering::Relaxed);
        Ok(core)
    }

    fn max_cycles(max_cycles: Option<u64>) -> u64 {
        max_cycles.unwrap_or(u64::MAX)
    }

    fn no_view() -> PyErr {
        ArmadaError::new_err(
            "memory_view() and DLPack: the wgpu engine's memory cannot be exported (wgpu \
             buffers have no DLPack device); use read_memory/write_memory, or backend=\"cuda\" \
             or \"cpu\"",
        )
    }

    /// The exportable device memory of a GPU machine.
    fn device_memory(&self) -> PyResult<DeviceMemory> {
        match (&self.gpu_mem, self.dl_device) {
            (Some(buf), Some(dev)) => Ok(DeviceMemory::new(
                buf.clone(),
                dev,
                self.shared.exported.clone(),
            )),
            _ => Err(Self::no_view()),
        }
    }
}

/// A guest address argument: an int; one that no u64 can hold (negative, say) is outside
/// guest memory like any other bad address.
fn addr_arg(obj: &Bound<'_, PyAny>, memory_size: u64) -> PyResult<u64> {
    match obj.extract::<u64>() {
        Ok(a) => Ok(a),
        Err(_) if obj.is_instance_of::<pyo3::types::PyInt>() => Err(GuestMemoryError::new_err(
            format!("address {obj} is outside guest memory [0x0, {memory_size:#x})"),
        )),
        Err(_) => Err(PyTypeError::new_err(format!(
            "address must be an int, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        ))),
    }
}

fn reg_index(i: i64) -> PyResult<usize> {
    if (0..32).contains(&i) {
        Ok(i as usize)
    } else {
        Err(PyIndexError::new_err(format!(
            "register index must be 0..31 (x0..x30, 31 = SP), got {i}"
        )))
    }
}

#[pymethods]
impl Machine {
    #[new]
    #[pyo3(
        signature = (memory_size = 4 << 20, backend = "cpu"),
        text_signature = "(memory_size=4194304, backend='cpu')"
    )]
    fn new(py: Python<'_>, memory_size: u64, backend: &str) -> PyResult<Self> {
        let resolved = resolve_backend(py, backend)?;
        let backend = resolved.backend;
        if memory_size == 0 || memory_size & (PAGE_SIZE - 1) != 0 {
            return Err(PyValueError::new_err(format!(
                "memory_size must be a positive multiple of {PAGE_SIZE} (4 KiB pages), got {memory_size}"
            )));
        }
        if memory_size > 1 << 47 {
            return Err(PyValueError::new_err(format!(
                "memory_size {memory_size:#x} is larger than the 47-bit user address space"
            )));
        }
        // The buffer is allocated with vec![], which aborts when memory runs out: ask first.
        let len = usize::try_from(memory_size)
            .map_err(|_| PyValueError::new_err("memory_size does not fit in this host"))?;
        let mut probe: Vec<u8> = Vec::new();
        if probe.try_reserve_exact(len).is_err() {
            return Err(pyo3::exceptions::PyMemoryError::new_err(format!(
                "cannot allocate {memory_size} bytes of guest memory"
            )));
        }
        drop(probe);
        let map_err = |e| PyValueError::new_err(format!("memory_size {memory_size:#x}: {e}"));
        let mut mem = AddressSpace::with_flat(0, memory_size, Perm::RWX).map_err(map_err)?;
        // The CPU engine decodes each executable area into a table of micro-op slots, 16 bytes
        // per guest word, allocated whole when the area first runs (and again after
        // invalidate_code). Cutting the one region into areas of CODE_AREA bytes (same buffer,
        // same permissions) keeps that cost to the parts that run: 1 MiB of slots instead of
        // 16 MiB for the default 4 MiB machine. Crossing from one area to the next costs a
        // region lookup, which is why the areas are not smaller.
        let mut a = CODE_AREA;
        while a < memory_size {
            mem.protect(a, CODE_AREA.min(memory_size - a), Perm::RWX)
                .map_err(map_err)?;
            a += CODE_AREA;
        }
        let host_base = mem.flat_mut().expect("flat memory").1.as_mut_ptr() as usize;
        let mut st = CpuState::default();
        // SP starts at the top of memory, so code can push without setting it first.
        st.x[31] = memory_size;
        // A GPU backend: the lane on the device, its memory zeroed like the mirror.
        let gpu = match &resolved.engine {
            Some(engine) => Some(
                py.detach(|| {
                    catch_unwind(AssertUnwindSafe(|| engine.bare(memory_size))).unwrap_or_else(
                        |p| {
                            Err(armada_gpu::Error::Device(format!(
                                "internal error while setting up the machine: {} (this is a \
                                 bug in armada; please report it)",
                                panic_text(&*p)
                            )))
                        },
                    )
                })
                .map_err(|e| gpu_error(&e))?,
            ),
            None => None,
        };
        let gpu_mem = gpu.as_ref().map(|l| l.memory().clone());
        Ok(Machine {
            inner: Mutex::new(Inner {
                core: Some(Box::new(Core {
                    st,
                    mem,
                    code: CodeCache::new(),
                    gpu,
                })),
                job: None,
                finished: None,
                view_handed_out: false,
                started: None,
                last_elapsed: 0.0,
            }),
            shared: Arc::new(Shared {
                cycles: AtomicU64::new(0),
                cancel: AtomicBool::new(false),
                exported: Arc::new(AtomicBool::new(false)),
            }),
            memory_size,
            backend,
            gpu_mem,
            dl_device: crate::dlpack::machine_device(backend),
            host_base,
        })
    }

    /// Bytes of guest memory.
    #[getter]
    fn memory_size(&self) -> u64 {
        self.memory_size
    }

    /// The engine this machine runs on: "cpu", "cuda" or "wgpu".
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// Copy code (bytes-like, or a sequence of ints 0..255) into memory at `address`; code
    /// decoded there before is dropped. Does not set the PC.
    #[pyo3(signature = (code, address = None), text_signature = "(self, code, address=0)")]
    fn load_program(
        &self,
        code: &Bound<'_, PyAny>,
        address: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let address = match address {
            Some(a) => addr_arg(a, self.memory_size)?,
            None => 0,
        };
        let data = bytes_arg(code, "code")?;
        self.write(address, &data)
    }

    /// Set the program counter.
    fn set_pc(&self, address: u64) -> PyResult<()> {
        self.with_core(|c| {
            c.st.pc = address;
            Ok(())
        })
    }

    /// The program counter (assignable).
    #[getter]
    fn get_pc(&self) -> PyResult<u64> {
        self.with_core(|c| Ok(c.st.pc))
    }

    #[setter(pc)]
    fn set_pc_attr(&self, address: u64) -> PyResult<()> {
        self.set_pc(address)
    }

    /// x0..x30 for index 0..30, SP for 31 (unsigned 64-bit).
    fn get_register(&self, index: i64) -> PyResult<u64> {
        let i = reg_index(index)?;
        self.with_core(|c| Ok(c.st.x[i]))
    }

    /// Set x0..x30 (index 0..30) or SP (31); negative values are two's complement.
    fn set_register(&self, index: i64, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let i = reg_index(index)?;
        let v = u64_arg(value, "register value")?;
        self.with_core(|c| {
            c.st.x[i] = v;
            Ok(())
        })
    }

    /// All 32 registers, x0..x30 and SP, as a list (assign 32 ints to set them).
    #[getter]
    fn get_registers(&self) -> PyResult<Vec<u64>> {
        self.with_core(|c| Ok(c.st.x[..32].to_vec()))
    }

    #[setter(registers)]
    fn set_registers(&self, values: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        if values.len() != 32 {
            return Err(PyValueError::new_err(format!(
                "registers takes 32 values (x0..x30, SP), got {}",
                values.len()
            )));
        }
        let vals = values
            .iter()
            .map(|v| u64_arg(v, "register value"))
            .collect::<PyResult<Vec<u64>>>()?;
        self.with_core(|c| {
            c.st.x[..32].copy_from_slice(&vals);
            Ok(())
        })
    }

    /// The NZCV flags as an armada.Flags; assign a Flags or an int 0..15 (N<<3|Z<<2|C<<1|V).
    #[getter]
    fn get_flags(&self) -> PyResult<Flags> {
        self.with_core(|c| Ok(Flags::from_nzcv(c.st.nzcv)))
    }

    #[setter(flags)]
    fn set_flags(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let bits = flags_arg(value)?;
        self.with_core(|c| {
            c.st.nzcv = bits << 28;
            Ok(())
        })
    }

    /// `size` bytes of guest memory at `address` (GuestMemoryError outside guest memory).
    fn read_memory<'py>(
        &self,
        py: Python<'py>,
        address: &Bound<'py, PyAny>,
        size: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.read(addr_arg(address, self.memory_size)?, size)?;
        Ok(PyBytes::new(py, &data))
    }

    /// Write bytes at `address`; writes over code that already ran take effect.
    fn write_memory(&self, address: &Bound<'_, PyAny>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let address = addr_arg(address, self.memory_size)?;
        let data = bytes_arg(data, "data")?;
        self.write(address, &data)
    }

    /// The little-endian 64-bit value at `address`.
    fn read_memory_64(&self, address: &Bound<'_, PyAny>) -> PyResult<u64> {
        let b = self.read(addr_arg(address, self.memory_size)?, 8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap()))
    }

    /// Store a 64-bit value, little-endian, at `address`.
    fn write_memory_64(
        &self,
        address: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let address = addr_arg(address, self.memory_size)?;
        let v = u64_arg(value, "value")?;
        self.write(address, &v.to_le_bytes())
    }

    /// Drop every decoded instruction (needed only after writing code through an old
    /// memory_view).
    fn invalidate_code(&self) -> PyResult<()> {
        self.with_core(|c| {
            c.mem.invalidate_code();
            if let Some(lane) = c.gpu.as_mut() {
                lane.invalidate_code().map_err(|e| gpu_error(&e))?;
            }
            Ok(())
        })
    }

    /// Run from the PC to the first stop, or `max_cycles` instructions (None: no limit), with
    /// the GIL released; returns an ExecResult. Ctrl-C raises KeyboardInterrupt.
    #[pyo3(signature = (max_cycles = None))]
    fn execute(&self, py: Python<'_>, max_cycles: Option<u64>) -> PyResult<ExecResult> {
        let max = Self::max_cycles(max_cycles);
        let mut core = self.take_for_run()?;
        let shared = self.shared.clone();
        let (core, end, interrupt) = py.detach(move || {
            let mut signals = SignalCheck::new();
            let end = catch_unwind(AssertUnwindSafe(|| {
                run_core(&mut core, max, &shared, || signals.keep_going())
            }))
            .map_err(|p| panic_text(&*p));
            (core, end, signals.error)
        });
        let mut inner = self.lock();
        inner.core = Some(core);
        inner.last_elapsed = inner
            .started
            .take()
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        drop(inner);
        match end {
            Ok(RunEnd::Done(o)) => Ok(ExecResult::from_outcome(o)),
            Ok(RunEnd::Interrupted) => {
                Err(interrupt.unwrap_or_else(|| ArmadaError::new_err("the run was cancelled")))
            }
            Ok(RunEnd::Failed(e)) => Err(e),
            Err(msg) => Err(internal_error("running guest code", &msg)),
        }
    }

    /// Like execute, but on a background thread: returns at once (see poll, is_running, wait).
    #[pyo3(signature = (max_cycles = None))]
    fn start(&self, max_cycles: Option<u64>) -> PyResult<()> {
        let max = Self::max_cycles(max_cycles);
        let core = self.take_for_run()?;
        let shared = self.shared.clone();
        let (tx, rx) = mpsc::channel::<Finished>();
        // The core goes to the thread through a slot, so that it is still here if the thread
        // cannot be started (a memory view may point into it: it must never be dropped).
        let slot = Arc::new(Mutex::new(Some(core)));
        let thread_slot = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("armada-machine".into())
            .spawn(move || {
                let taken = thread_slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                let Some(mut core) = taken else { return };
                let end = catch_unwind(AssertUnwindSafe(|| {
                    run_core(&mut core, max, &shared, || true)
                }))
                .map_err(|p| panic_text(&*p));
                let _ = tx.send((core, end));
            });
        let mut inner = self.lock();
        inner.finished = None;
        match spawned {
            Ok(handle) => {
                inner.job = Some(Job { rx, handle });
                Ok(())
            }
            Err(e) => {
                inner.core = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                inner.started = None;
                Err(ArmadaError::new_err(format!(
                    "cannot start a thread for the engine: {e}"
                )))
            }
        }
    }

    /// Whether a run is going.
    fn is_running(&self) -> bool {
        let mut inner = self.lock();
        Self::reclaim(&mut inner);
        inner.core.is_none()
    }

    /// Progress of the current run (a Status), without blocking.
    fn poll(&self) -> Status {
        let mut inner = self.lock();
        Self::reclaim(&mut inner);
        let running = inner.core.is_none();
        let elapsed = match (running, inner.started) {
            (true, Some(t)) => t.elapsed().as_secs_f64(),
            _ => inner.last_elapsed,
        };
        Status {
            cycles_executed: self.shared.cycles.load(Ordering::Relaxed),
            running,
            elapsed,
        }
    }

    /// Wait (GIL released) for the run from start() and return its ExecResult.
    fn wait(&self, py: Python<'_>) -> PyResult<ExecResult> {
        let job = {
            let mut inner = self.lock();
            Self::reclaim(&mut inner);
            if let Some(r) = inner.finished.take() {
                return r.map(ExecResult::from_outcome);
            }
            match inner.job.take() {
                Some(job) => job,
                None if inner.core.is_none() => return Err(busy()),
                None => {
                    return Err(ArmadaError::new_err(
                        "nothing to wait for: start(max_cycles) the machine first",
                    ))
                }
            }
        };
        // Wait with the GIL released, looking for Ctrl-C now and then.
        let (job, got, interrupt) = py.detach(move || {
            let mut signals = SignalCheck::new();
            loop {
                match job.rx.recv_timeout(crate::SIGNAL_CHECK_EVERY) {
                    Ok(f) => return (job, Some(f), None),
                    Err(RecvTimeoutError::Timeout) => {
                        if !signals.keep_going() {
                            return (job, None, signals.error);
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return (job, None, None),
                }
            }
        });
        let mut inner = self.lock();
        match got {
            Some((core, result)) => {
                let _ = job.handle.join();
                Self::finish(&mut inner, core, result);
                inner.finished.take().unwrap().map(ExecResult::from_outcome)
            }
            None => {
                // Interrupted: the run goes on; wait() again to collect it.
                inner.job = Some(job);
                Err(interrupt.unwrap_or_else(|| {
                    ArmadaError::new_err("the engine thread ended without a result")
                }))
            }
        }
    }

    /// All guest memory without a copy: on the CPU, a writable numpy uint8 array (it keeps
    /// the machine alive; writing code through a view kept from before the code last ran
    /// needs invalidate_code()); on CUDA, an armada.DeviceMemory over device memory for
    /// DLPack consumers (cupy.from_dlpack, torch.from_dlpack). Do not use it while the
    /// machine runs.
    fn memory_view<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let m = slf.get();
        if m.backend != Backend::Cpu {
            return Ok(Bound::new(slf.py(), m.device_memory()?)?.into_any());
        }
        m.lock().view_handed_out = true;
        // SAFETY: host_base points to the machine's flat buffer of memory_size bytes, which
        // lives as long as the machine; the array keeps the machine alive (its base object).
        let view =
            unsafe { ArrayView1::from_shape_ptr(m.memory_size as usize, m.host_base as *const u8) };
        Ok(unsafe { PyArray1::borrow_from_array(&view, slf.clone().into_any()) }.into_any())
    }

    /// DLPack export of guest memory, without a copy: uint8, 1-D; on the CPU (kDLCPU) through
    /// numpy, on CUDA device memory (kDLCUDA).
    #[pyo3(signature = (**kwargs))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = slf.get();
        if m.backend != Backend::Cpu {
            return m.device_memory()?.export(slf.py(), kwargs);
        }
        let view = Self::memory_view(slf)?;
        // Pass on only what the caller gave: numpy < 2.1 knows no max_version.
        let kw = PyDict::new(slf.py());
        if let Some(kwargs) = kwargs {
            for (k, v) in kwargs.iter() {
                if !v.is_none() {
                    kw.set_item(k, v)?;
                }
            }
        }
        view.call_method("__dlpack__", (), Some(&kw))
    }

    /// (1, 0), kDLCPU, for the CPU engine; (2, 0), kDLCUDA device 0, for the CUDA engine.
    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        match self.backend {
            Backend::Cpu => Ok((crate::dlpack::KDL_CPU, 0)), // kDLCPU, device 0
            _ => self.dl_device.ok_or_else(Self::no_view),
        }
    }

    fn __repr__(&self) -> String {
        let state = {
            let mut inner = self.lock();
            Self::reclaim(&mut inner);
            match inner.core.as_deref() {
                Some(c) => format!("pc={:#x}", c.st.pc),
                None => "running".to_string(),
            }
        };
        format!(
            "Machine(memory_size={:#x}, backend='{}', {state})",
            self.memory_size,
            self.backend.name()
        )
    }
}
