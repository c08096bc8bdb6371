//! armada-gpu: what the GPU engines share. The fetch-execute loop runs inside a kernel, one
//! GPU thread per guest lane, over the same micro-ops the CPU engine runs; the host services
//! syscalls, page misses and the rare instruction the kernel leaves to it, in batches. This
//! crate holds the host side of that loop ([`engine`]), the layout host and kernels share
//! ([`layout`]) and the [`Device`] trait the engines implement: armada-cuda (a CUDA C kernel
//! compiled by NVRTC) and armada-wgpu (a WGSL shader on Vulkan, Metal or DX12).
//!
//! Execution modes:
//! - run to the first stop: [`Batch::execute`] launches once and reports each lane's stop;
//! - continuous: [`Batch::run`] (or [`run_lanes`], [`run_batch`]) keeps the loop in Rust
//!   until every lane has ended;
//! - async: [`Batch::start`] returns at once; [`Running::poll`] reads the instructions retired
//!   so far (from host-mapped memory the CUDA kernel writes while it runs; at the end of each
//!   launch on wgpu); [`Running::wait`] returns the results.

pub mod check;
pub mod device;
pub mod engine;
pub mod layout;

use armada_core::batch::{BatchOutcome, BatchSpec, EngineStats, LaneResult, Progress};
use armada_core::elf::LoadError;
use armada_core::runner::Lane;
use std::sync::Arc;

pub use device::Device;
pub use engine::{
    BareEnd, BareLane, Batch, CoverageNews, DeviceBuffer, KernelIo, LaneStop, ProgressReader, Stats,
};

/// Errors of the GPU engines.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable driver, compiler or device on this machine; the message says what to do.
    #[error("{0}")]
    NoDevice(String),
    /// The device failed or ran out of something while running.
    #[error("{0}")]
    Device(String),
    /// The kernel did not compile.
    #[error("{0}")]
    Compile(String),
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// How a batch runs, whatever the device.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Instructions per lane per launch; `None`: the device's default (CUDA ends launches by
    /// time instead, see `ARMADA_CUDA_LAUNCH_MS`).
    pub slice: Option<u64>,
    /// Print per-batch notes on stderr.
    pub verbose: bool,
}

/// An open device with its compiled kernel, for running batches.
#[derive(Clone)]
pub struct Engine {
    dev: Arc<dyn Device>,
    opts: Options,
}

impl Engine {
    /// An engine over an open device.
    pub fn new(dev: Arc<dyn Device>, opts: Options) -> Engine {
        Engine { dev, opts }
    }

    pub fn describe(&self) -> String {
        self.dev.describe()
    }

    /// A bare lane (a machine with `size` bytes of flat read-write-execute memory at 0 and
    /// no operating system) on this engine's device: see [`BareLane`].
    pub fn bare(&self, size: u64) -> Result<BareLane, Error> {
        BareLane::new(self.dev.clone(), size)
    }

    /// A batch of lanes of one program, ready to run (lanes or boxed lanes: tens of
    /// thousands of lanes are best made boxed, where they are made in parallel).
    pub fn batch<L: Into<Box<Lane>> + Send>(
        &self,
        lanes: Vec<L>,
        max_instructions: Option<u64>,
    ) -> Result<Batch, Error> {
        self.batch_with(lanes, max_instructions, KernelIo::Off)
    }

    /// A batch whose kernel answers the syscalls a short run repeats itself where the device
    /// can (`device_io`: reads of the captured stdin, fstat of fds 0-2, exit, and writes to
    /// the captured stdout and stderr, kept or dropped: see `engine/devio.rs`).
    pub fn batch_with<L: Into<Box<Lane>> + Send>(
        &self,
        lanes: Vec<L>,
        max_instructions: Option<u64>,
        device_io: KernelIo,
    ) -> Result<Batch, Error> {
        use rayon::prelude::*;
        let lanes: Vec<Box<Lane>> = lanes
            .into_par_iter()
            .map(|l| {
                let mut l: Box<Lane> = l.into();
                // a lane is one task on the GPU so far: a guest thread ends it with a clear
                // message
                l.single_task_engine("GPU");
                l
            })
            .collect();
        Batch::new(
            self.dev.clone(),
            lanes,
            max_instructions,
            self.opts.slice,
            device_io,
        )
    }
}

/// Runs lanes (all of one program) to their end; returns each lane (with `exit` set) and the
/// instructions the host ran for it, and the batch's figures.
pub fn run_lanes(
    engine: &Engine,
    lanes: Vec<Lane>,
    max_instructions: Option<u64>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Vec<(Lane, u64)>, EngineStats), Error> {
    let mut b = engine.batch(lanes, max_instructions)?;
    b.run(progress)?;
    b.collect_coverage()?;
    let stats = b.stats_list();
    for (lane, _) in b.lanes_mut() {
        if lane.exit.is_none() {
            lane.exit = Some(armada_core::runner::Exit::InstructionLimit);
        }
    }
    Ok((b.into_lanes(), stats))
}

/// A batch spec's lanes, made (in parallel: spawned, or restored from its snapshot) and
/// ready for [`run_spawned`]. They need no device, so a caller can make them while it opens.
pub struct Spawned {
    lanes: Vec<Box<Lane>>,
    secs: f64,
}

/// Makes a batch spec's lanes (see [`Spawned`]).
pub fn spawn_lanes(spec: &BatchSpec) -> Result<Spawned, Error> {
    use rayon::prelude::*;
    let t = std::time::Instant::now();
    let lanes = (0..spec.lanes.len())
        .into_par_iter()
        .map(|i| spec.spawn(i).map(Box::new))
        .collect::<Result<Vec<_>, LoadError>>()?;
    Ok(Spawned {
        lanes,
        secs: t.elapsed().as_secs_f64(),
    })
}

/// Runs a batch spec on the engine's device.
pub fn run_batch(
    engine: &Engine,
    spec: &BatchSpec,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<BatchOutcome, Error> {
    run_spawned(engine, spec, spawn_lanes(spec)?, progress)
}

/// Runs a batch spec whose lanes [`spawn_lanes`] made on the engine's device.
pub fn run_spawned(
    engine: &Engine,
    spec: &BatchSpec,
    spawned: Spawned,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<BatchOutcome, Error> {
    if engine.opts.verbose {
        eprintln!("armada: GPU engine on {}", engine.describe());
    }
    let Spawned {
        lanes,
        secs: spawn_s,
    } = spawned;
    // the kernel answers the short run's I/O itself; output kept unless the spec drops it
    let io = if spec.drop_output {
        KernelIo::Drop
    } else {
        KernelIo::Keep
    };
    let mut b = engine.batch_with(lanes, spec.max_instructions, io)?;
    b.stats.spawn_s = spawn_s;
    // Async mode: the batch runs on its own thread; progress comes from the host-mapped
    // counters the kernel writes while it runs.
    let n = spec.lanes.len();
    let running = b.start();
    while !running.is_finished() {
        progress(Progress {
            lanes_done: running.lanes_done(),
            lanes: n,
            instructions: running.poll(),
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut b = running.wait()?;
    b.collect_coverage()?;
    let mut lanes: Vec<LaneResult> = b.results();
    if spec.drop_output {
        // what the host serviced is captured; what the kernel answered was dropped
        for r in &mut lanes {
            r.stdout.clear();
            r.stderr.clear();
        }
    }
    Ok(BatchOutcome {
        lanes,
        stats: b.stats_list(),
    })
}

impl Batch {
    /// The lanes and the instructions the host ran for each.
    pub fn lanes_mut(&mut self) -> impl Iterator<Item = (&mut Lane, u64)> {
        self.lane_hosts_mut()
    }

    /// Starts running in the background (async mode): returns at once.
    pub fn start(mut self) -> Running {
        let reader = self.progress_reader();
        let done = self.done.clone();
        let handle = std::thread::spawn(move || -> Result<Batch, Error> {
            self.bind()?;
            self.run(&|_| {})?;
            Ok(self)
        });
        Running {
            handle: Some(handle),
            reader,
            done,
        }
    }
}

/// A batch running in the background.
pub struct Running {
    handle: Option<std::thread::JoinHandle<Result<Batch, Error>>>,
    reader: ProgressReader,
    done: Arc<std::sync::atomic::AtomicUsize>,
}

impl Running {
    /// Instructions retired so far by all lanes (read from host-mapped memory the kernel
    /// writes at the end of each launch's slice, so it moves while the batch runs).
    pub fn poll(&self) -> u64 {
        self.reader.retired()
    }

    /// Lanes that have ended so far.
    pub fn lanes_done(&self) -> usize {
        self.done.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the batch has finished.
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Waits for the end; returns the batch (for its results and figures).
    pub fn wait(mut self) -> Result<Batch, Error> {
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::Device("the batch thread panicked".into())),
            None => Err(Error::Device("the batch was already waited for".into())),
        }
    }
}
