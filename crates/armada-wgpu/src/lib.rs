//! armada-wgpu: the portable GPU engine. The interpreter is a WGSL compute shader
//! (`src/shader/`) run through wgpu on Vulkan, Metal or DX12 (and on Mesa's lavapipe, a
//! software Vulkan driver, in CI); the batch loop around it is armada-gpu's, the same as the
//! CUDA engine's, so both run the same micro-ops, memory model, stops and syscall batches.
//!
//! What differs from CUDA (see docs/wgpu.md): all of a batch's device memory is one storage
//! buffer (the adapter's largest binding: 2047 MiB on the H200, 128 MiB on lavapipe), WGSL has
//! no clock so a launch ends after a bounded number of instructions per lane (which also keeps
//! desktop GPUs clear of OS watchdogs), and the shader leaves floating point to the host.

pub mod device;

pub use armada_gpu::{
    run_batch, run_lanes, Batch, Devices, Engine, Error, LaneStop, Running, Stats,
};
pub use device::WgpuDevice;
use std::sync::Arc;

/// How the wgpu engine runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Instructions per lane per launch; `None`: the device's default (1 M on a GPU, 100 k on
    /// a CPU adapter such as lavapipe).
    pub slice: Option<u64>,
    /// Device memory for a batch, in bytes; `None`: the adapter's largest storage binding.
    pub memory: Option<u64>,
    /// Print the adapter and per-batch notes on stderr.
    pub verbose: bool,
}

impl Options {
    /// Defaults, adjusted by the environment: ARMADA_WGPU_SLICE=N, ARMADA_WGPU_MEMORY_MIB=N,
    /// ARMADA_WGPU_VERBOSE=1 (wgpu's own WGPU_BACKEND and WGPU_ADAPTER_NAME also apply).
    pub fn from_env() -> Options {
        let num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        Options {
            slice: num("ARMADA_WGPU_SLICE"),
            memory: num("ARMADA_WGPU_MEMORY_MIB").map(|m| m << 20),
            verbose: std::env::var("ARMADA_WGPU_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0"),
        }
    }
}

/// Opens the first suitable adapter, compiles the shader and returns the engine.
pub fn open(opts: &Options) -> Result<Engine, Error> {
    let dev = WgpuDevice::open(opts)?;
    if opts.verbose {
        eprintln!("armada: wgpu engine on {}", dev.describe_long());
    }
    Ok(Engine::new(
        Arc::new(dev),
        armada_gpu::Options {
            slice: opts.slice,
            verbose: opts.verbose,
        },
    ))
}

/// Opens the adapters `which` names (numbered as [`WgpuDevice::adapters`] lists them), each
/// with the shader compiled; `Devices::First` is the adapter [`open`] picks.
pub fn open_devices(opts: &Options, which: &Devices) -> Result<Vec<Engine>, Error> {
    if *which == Devices::First {
        return Ok(vec![open(opts)?]);
    }
    let adapters = WgpuDevice::adapters();
    let list = which.select(adapters.len(), "wgpu")?;
    let gpu = armada_gpu::Options {
        slice: opts.slice,
        verbose: opts.verbose,
    };
    let mut engines = Vec::with_capacity(list.len());
    for o in list {
        let dev = WgpuDevice::open_adapter(opts, adapters[o].clone()).map_err(|e| match e {
            Error::NoDevice(m) => Error::NoDevice(format!("wgpu device {o}: {m}")),
            Error::Compile(m) => Error::Compile(format!("wgpu device {o}: {m}")),
            e => e,
        })?;
        if opts.verbose {
            eprintln!("armada: wgpu device {o}: {}", dev.describe_long());
        }
        engines.push(Engine::new(Arc::new(dev), gpu.clone()).on_device(o));
    }
    Ok(engines)
}

/// Whether the engine can run here: Ok with the adapter's description, or why not.
pub fn available(opts: &Options) -> Result<String, Error> {
    Ok(WgpuDevice::open(opts)?.describe_long())
}

/// The shader as compiled: the generated header, then the shader's files.
pub fn shader_source() -> String {
    let mut s = armada_gpu::layout::wgsl_header();
    s.push_str(SHADER_BODY);
    s
}

/// The shader's files joined by build.rs in the order `src/shader/ORDER` gives.
pub const SHADER_BODY: &str = include_str!(concat!(env!("OUT_DIR"), "/shader.wgsl"));
