//! armada-cuda: the CUDA engine. The interpreter is a CUDA C kernel (`src/kernel/armada.cu`)
//! embedded in the crate, compiled at run time by NVRTC for the device's own architecture and
//! cached on disk; the batch loop around it is armada-gpu's. Without a GPU, [`check_driver`]
//! and [`open`] say why, and the `sim` option runs the same kernel source compiled for the
//! host CPU (tests, debugging).

pub mod cuda;
pub mod nvrtc;
#[cfg(armada_sim)]
pub mod sim;

pub use armada_gpu::{run_batch, run_lanes, Batch, Engine, Error, LaneStop, Running, Stats};
pub use cuda::CudaDevice;
use std::path::PathBuf;
use std::sync::Arc;

/// Whether this build carries the kernel simulator (a C++ compiler was there at build time).
pub const HAS_SIM: bool = cfg!(armada_sim);

/// The kernel source as compiled: the generated header, then the kernel with its parts.
pub fn kernel_source() -> String {
    armada_gpu::layout::cuda_source(KERNEL_SOURCE, &KERNEL_PARTS)
}

/// The kernel's main file, which names its parts where they go (`// @include NAME`).
pub const KERNEL_SOURCE: &str = include_str!("kernel/armada.cu");
/// The kernel's parts (name, text); build.rs lists the same files for the simulator.
pub const KERNEL_PARTS: [(&str, &str); 8] = [
    ("int.cu", include_str!("kernel/int.cu")),
    ("simd.cu", include_str!("kernel/simd.cu")),
    ("memory.cu", include_str!("kernel/memory.cu")),
    ("coverage.cu", include_str!("kernel/coverage.cu")),
    ("persist.cu", include_str!("kernel/persist.cu")),
    ("devio.cu", include_str!("kernel/devio.cu")),
    ("interp.cu", include_str!("kernel/interp.cu")),
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
    /// Where compiled kernels are cached (default: see `nvrtc::cache_dir`).
    pub cache_dir: Option<PathBuf>,
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
            cache_dir: None,
        }
    }

    fn gpu(&self) -> armada_gpu::Options {
        armada_gpu::Options {
            slice: self.slice,
            verbose: self.verbose,
        }
    }
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

/// Opens the device the options ask for (the GPU, or the simulator) with its compiled kernel.
pub fn open(opts: &Options) -> Result<Engine, Error> {
    let dev: Arc<dyn armada_gpu::Device> = if opts.sim {
        #[cfg(armada_sim)]
        {
            Arc::new(sim::SimDevice::new())
        }
        #[cfg(not(armada_sim))]
        {
            return Err(no_driver(
                "this build has no kernel simulator (no C++ compiler when it was built)",
            ));
        }
    } else {
        let d = CudaDevice::open(opts.cache_dir.clone())?;
        if opts.verbose && !d.compile_note.is_empty() {
            eprintln!("armada: {}", d.compile_note);
        }
        Arc::new(d)
    };
    Ok(Engine::new(dev, opts.gpu()))
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
        let named: Vec<&str> = KERNEL_SOURCE
            .lines()
            .filter_map(|l| l.strip_prefix("// @include "))
            .collect();
        let parts: Vec<&str> = KERNEL_PARTS.iter().map(|p| p.0).collect();
        assert_eq!(named, parts);
        let src = kernel_source();
        assert!(!src.contains("// @include"));
        for (name, text) in KERNEL_PARTS {
            assert!(src.contains(text), "{name} is not in the source");
        }
    }
}
