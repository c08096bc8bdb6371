//! armada-cuda: the CUDA engine. The interpreter is a CUDA C kernel (`src/kernel/armada.cu`)
//! embedded in the crate, compiled at run time by NVRTC for the device's own architecture and
//! cached on disk; the batch loop around it is armada-gpu's. Without a GPU, [`check_driver`]
//! and [`open`] say why, and the `sim` option runs the same kernel source compiled for the
//! host CPU (tests, debugging).

pub mod blocks;
pub mod cuda;
#[cfg(test)]
mod hot_ops;
pub mod nvrtc;
#[cfg(armada_sim)]
pub mod sim;

pub use armada_gpu::{
    run_batch, run_lanes, Batch, Devices, Engine, Error, LaneStop, Running, Stats,
};
pub use cuda::CudaDevice;
use std::path::PathBuf;
use std::sync::Arc;

/// Whether this build carries the kernel simulator (a C++ compiler was there at build time).
pub const HAS_SIM: bool = cfg!(armada_sim);

/// The kernel source as compiled: the generated header, then the kernel with its parts.
pub fn kernel_source() -> String {
    armada_gpu::layout::cuda_source(KERNEL_SOURCE, &KERNEL_PARTS)
}

/// The kernel source with a batch's translated blocks (`blocks::cases`) in the loop's
/// `OP_TBLOCK` case; compiled with `ARMADA_BLOCKS` defined.
pub fn kernel_source_with_blocks(cases: &str) -> String {
    let mut parts = KERNEL_PARTS;
    for p in parts.iter_mut() {
        if p.0 == "blocks.cu" {
            p.1 = cases;
        }
    }
    armada_gpu::layout::cuda_source(KERNEL_SOURCE, &parts)
}

/// The kernel's main file, which names its parts where they go (`// @include NAME`).
pub const KERNEL_SOURCE: &str = include_str!("kernel/armada.cu");
/// The kernel's parts (name, text); build.rs lists the same files for the simulator. A part
/// may name another (interp.cu names `defined.cu` and `fused.cu`, cold.cu `defined_cold.cu`,
/// simd.cu `elements.cu` and `fp_elements.cu`: the cases build.rs generates from
/// armada-semantics' definitions),
/// which then comes after it.
pub const KERNEL_PARTS: [(&str, &str); 16] = [
    ("int.cu", include_str!("kernel/int.cu")),
    ("simd.cu", include_str!("kernel/simd.cu")),
    (
        "elements.cu",
        include_str!(concat!(env!("OUT_DIR"), "/elements.cu")),
    ),
    (
        "fp_elements.cu",
        include_str!(concat!(env!("OUT_DIR"), "/fp_elements.cu")),
    ),
    ("memory.cu", include_str!("kernel/memory.cu")),
    ("ldst.cu", include_str!("kernel/ldst.cu")),
    ("cold.cu", include_str!("kernel/cold.cu")),
    (
        "defined_cold.cu",
        include_str!(concat!(env!("OUT_DIR"), "/defined_cold.cu")),
    ),
    ("coverage.cu", include_str!("kernel/coverage.cu")),
    ("persist.cu", include_str!("kernel/persist.cu")),
    ("devio.cu", include_str!("kernel/devio.cu")),
    ("interp.cu", include_str!("kernel/interp.cu")),
    (
        "defined.cu",
        include_str!(concat!(env!("OUT_DIR"), "/defined.cu")),
    ),
    (
        "fused.cu",
        include_str!(concat!(env!("OUT_DIR"), "/fused.cu")),
    ),
    // a batch's translated blocks (`kernel_source_with_blocks`); none in the kernel built
    // at start
    ("blocks.cu", ""),
    ("entry.cu", include_str!("kernel/entry.cu")),
];

/// How the CUDA engine runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Instructions per lane per launch; `None`: no count limit (a launch ends by time, see
    /// `ARMADA_CUDA_LAUNCH_MS`).
    pub slice: Option<u64>,
    /// Run the kernel source compiled for the host CPU instead of a GPU (tests, debugging).
    pub sim: bool,
    /// Print compile and per-batch notes on stderr.
    pub verbose: bool,
    /// Samples of where slices ended a batch takes before the device builds its translated
    /// blocks (`armada_gpu::Options::block_samples`; Some(0): none).
    pub block_samples: Option<u64>,
    /// Wait for the blocks' build (`armada_gpu::Options::block_wait`).
    pub block_wait: bool,
    /// Where compiled kernels are cached (default: see `nvrtc::cache_dir`).
    pub cache_dir: Option<PathBuf>,
    /// Devices the simulator has (0 is taken as 1), to test batches over several devices
    /// without a GPU (`ARMADA_CUDA_SIM_DEVICES`).
    pub sim_devices: usize,
    /// Simulated devices that fail, for tests of what a batch does then
    /// (`ARMADA_CUDA_SIM_FAIL=D` or `D@K`, several separated by commas): (device, launches
    /// that succeed before every later one fails).
    pub sim_fail: Vec<(usize, u64)>,
    /// The simulated devices' memory for frames, in MiB (`ARMADA_CUDA_SIM_FRAME_MIB`; None:
    /// as much as the host gives), for tests of batches with more lanes than a device holds.
    pub sim_frame_mib: Option<usize>,
}

impl Options {
    /// Defaults, adjusted by the environment: ARMADA_CUDA_SIM=1 (simulator),
    /// ARMADA_CUDA_SLICE=N, ARMADA_CUDA_VERBOSE=1.
    pub fn from_env() -> Options {
        let flag = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "0");
        Options {
            slice: std::env::var("ARMADA_CUDA_SLICE")
                .ok()
                .and_then(|v| v.parse().ok()),
            sim: flag("ARMADA_CUDA_SIM"),
            verbose: flag("ARMADA_CUDA_VERBOSE"),
            // (ARMADA_GPU_BLOCKS and ARMADA_GPU_BLOCK_SAMPLES are read by the batch)
            block_samples: None,
            block_wait: false,
            cache_dir: None,
            sim_devices: std::env::var("ARMADA_CUDA_SIM_DEVICES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            sim_fail: std::env::var("ARMADA_CUDA_SIM_FAIL")
                .map(|v| v.split(',').filter_map(parse_sim_fail).collect())
                .unwrap_or_default(),
            sim_frame_mib: std::env::var("ARMADA_CUDA_SIM_FRAME_MIB")
                .ok()
                .and_then(|v| v.parse().ok()),
        }
    }

    fn gpu(&self) -> armada_gpu::Options {
        armada_gpu::Options {
            slice: self.slice,
            verbose: self.verbose,
            block_samples: self.block_samples,
            block_wait: self.block_wait,
        }
    }
}

/// "D" or "D@K" (`ARMADA_CUDA_SIM_FAIL`): device D fails at launch K + 1 (K = 0: the first).
fn parse_sim_fail(v: &str) -> Option<(usize, u64)> {
    let (d, k) = v.split_once('@').unwrap_or((v, "0"));
    Some((d.trim().parse().ok()?, k.trim().parse().ok()?))
}

/// "No driver" with what to do about it.
pub(crate) fn no_driver(what: impl std::fmt::Display) -> Error {
    Error::NoDevice(format!(
        "{what}; the CUDA engine needs an NVIDIA GPU and its driver: use --backend cpu"
    ))
}

/// A failure of the CUDA driver while running.
pub(crate) fn cuda_err(what: impl std::fmt::Display) -> Error {
    Error::Device(format!("CUDA: {what}"))
}

/// Opens the device the options ask for (the first GPU, or the simulator) with its compiled
/// kernel.
pub fn open(opts: &Options) -> Result<Engine, Error> {
    open_ordinal(opts, 0)
}

/// Opens device `ordinal` (a GPU, or one of the simulator's) with its compiled kernel.
pub fn open_ordinal(opts: &Options, ordinal: usize) -> Result<Engine, Error> {
    let dev: Arc<dyn armada_gpu::Device> = if opts.sim {
        #[cfg(armada_sim)]
        {
            let fail = opts
                .sim_fail
                .iter()
                .find_map(|&(d, k)| (d == ordinal).then_some(k));
            let mut d = sim::SimDevice::numbered(ordinal, fail);
            d.frame_cap = opts.sim_frame_mib.map(|m| m << 20);
            Arc::new(d)
        }
        #[cfg(not(armada_sim))]
        {
            return Err(no_driver(
                "this build has no kernel simulator (no C++ compiler when it was built)",
            ));
        }
    } else {
        let d = CudaDevice::open(ordinal, opts.cache_dir.clone())?;
        if opts.verbose && !d.compile_note.is_empty() {
            eprintln!("armada: {}", d.compile_note);
        }
        Arc::new(d)
    };
    Ok(Engine::new(dev, opts.gpu()).on_device(ordinal))
}

/// The number of devices the options' engine has: the driver's count, or the simulator's.
pub fn device_count(opts: &Options) -> Result<usize, Error> {
    if opts.sim {
        check_driver(opts)?;
        return Ok(opts.sim_devices.max(1));
    }
    check_driver(opts)?;
    cuda::device_count()
}

/// Opens the devices `which` names, in its order, each with the kernel loaded, all at once
/// (on a cold cache each compiles the kernel for itself, in the time one takes). With
/// `Devices::All`, a device that does not open is left out with a warning, as long as one
/// opens; a device named by number must open.
pub fn open_devices(opts: &Options, which: &Devices) -> Result<Vec<Engine>, Error> {
    let list = which.select(device_count(opts)?, "CUDA")?;
    let opened: Vec<(usize, Result<Engine, Error>)> = std::thread::scope(|s| {
        let handles: Vec<_> = list
            .iter()
            .map(|&o| (o, s.spawn(move || open_ordinal(opts, o))))
            .collect();
        handles
            .into_iter()
            .map(|(o, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(Error::Device("opening the device panicked".into())));
                (o, r)
            })
            .collect()
    });
    let mut engines = Vec::with_capacity(list.len());
    for (o, r) in opened {
        match r {
            Ok(e) => engines.push(e),
            Err(e) if *which == Devices::All => {
                eprintln!("armada: CUDA device {o} left out: {e}")
            }
            Err(e) => return Err(device_error(o, e)),
        }
    }
    if engines.is_empty() {
        return Err(Error::NoDevice(
            "no CUDA device opened (see the warnings above); use --backend cpu".into(),
        ));
    }
    Ok(engines)
}

/// An error of device `o`, saying which device it was.
fn device_error(o: usize, e: Error) -> Error {
    match e {
        Error::NoDevice(m) => Error::NoDevice(format!("CUDA device {o}: {m}")),
        Error::Device(m) => Error::Device(format!("CUDA device {o}: {m}")),
        Error::OutOfMemory(m, fit) => Error::OutOfMemory(format!("CUDA device {o}: {m}"), fit),
        Error::Compile(m) => Error::Compile(format!("CUDA device {o}: {m}")),
        e => e,
    }
}

/// Whether the engine can run here: Ok with the device's description, or why not.
pub fn available(opts: &Options) -> Result<String, Error> {
    Ok(open(opts)?.describe())
}

/// A cheap check that the engine can start here (driver and NVRTC libraries present), with
/// the message to show when it cannot. Opening the engine can still fail later (no device).
pub fn check_driver(opts: &Options) -> Result<(), Error> {
    if opts.sim {
        return if HAS_SIM {
            Ok(())
        } else {
            Err(no_driver(
                "this build has no kernel simulator (ARMADA_CUDA_SIM)",
            ))
        };
    }
    // SAFETY: these only try to open the libraries.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(no_driver(
            "no CUDA driver found (libcuda.so could not be loaded)",
        ));
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(no_driver(
            "no NVRTC found (libnvrtc.so could not be loaded)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part armada.cu names is in KERNEL_PARTS and the other way round, once each, so
    /// the source NVRTC compiles (and the simulator's, from the same list in build.rs) is the
    /// whole kernel.
    #[test]
    fn the_kernel_source_has_all_its_parts() {
        let mut named: Vec<&str> = Vec::new();
        for text in std::iter::once(KERNEL_SOURCE).chain(KERNEL_PARTS.iter().map(|p| p.1)) {
            named.extend(text.lines().filter_map(|l| l.strip_prefix("// @include ")));
        }
        let mut parts: Vec<&str> = KERNEL_PARTS.iter().map(|p| p.0).collect();
        named.sort();
        parts.sort();
        assert_eq!(named, parts);
        let src = kernel_source();
        assert!(!src.contains("// @include"));
        for (name, text) in KERNEL_PARTS {
            // (a part that names another is in the source in pieces, the other between)
            for piece in text
                .split("// @include ")
                .map(|p| p.split_once('\n').map_or(p, |l| l.1))
            {
                assert!(src.contains(piece), "{name} is not in the source");
            }
        }
    }

    /// hot_ops.rs names only ops armada-semantics defines, and every defined op has its case
    /// in the kernel once: in the loop's switch or in exec_cold's.
    #[test]
    fn every_defined_op_is_in_one_switch() {
        let names: Vec<&str> = armada_semantics::definitions()
            .iter()
            .map(|d| d.name())
            .collect();
        for hot in hot_ops::HOT {
            assert!(
                names.contains(hot),
                "hot_ops.rs names {hot}, which is not defined"
            );
        }
        let inline = names.iter().filter(|n| hot_ops::inline(n)).count();
        assert_eq!(inline, hot_ops::HOT.len(), "hot_ops.rs names an op twice");
        let src = kernel_source();
        for name in names {
            let case = format!("case OP_{name}:");
            assert_eq!(src.matches(&case).count(), 1, "{case}");
        }
    }
}
