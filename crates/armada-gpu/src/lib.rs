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
pub mod devices;
pub mod engine;
pub mod layout;
pub mod multi;

use armada_core::batch::{BatchOutcome, BatchSpec, EngineStats, LaneResult, Progress};
use armada_core::elf::LoadError;
use armada_core::runner::Lane;
use std::sync::Arc;

pub use device::Device;
pub use devices::Devices;
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
    /// The device ran out of memory for the lanes' pages: fewer lanes at once would fit
    /// (a batch then runs its lanes in waves, see `multi`), at most about the second field's
    /// where the batch could tell.
    #[error("{0}")]
    OutOfMemory(String, Option<usize>),
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
    /// Where the device translates blocks (`Device::translates`): the samples of where
    /// slices ended a batch takes before it builds them. None: `ARMADA_GPU_BLOCK_SAMPLES`,
    /// else 65,536; Some(0): no blocks.
    pub block_samples: Option<u64>,
    /// Wait for the blocks' build where a batch starts it, instead of running on without
    /// them meanwhile (tests: the blocks then run in any batch that lasts past its samples).
    pub block_wait: bool,
}

/// An open device with its compiled kernel, for running batches.
#[derive(Clone)]
pub struct Engine {
    dev: Arc<dyn Device>,
    opts: Options,
    /// The device's number on its host (0 for the first).
    ordinal: usize,
}

impl Engine {
    /// An engine over an open device (the host's first: see [`Engine::on_device`]).
    pub fn new(dev: Arc<dyn Device>, opts: Options) -> Engine {
        Engine {
            dev,
            opts,
            ordinal: 0,
        }
    }

    /// The same engine, numbered as the host's device `ordinal`.
    pub fn on_device(mut self, ordinal: usize) -> Engine {
        self.ordinal = ordinal;
        self
    }

    /// The device's number on its host.
    pub fn ordinal(&self) -> usize {
        self.ordinal
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
                // a lane's threads and processes run on the GPU, switched by its scheduler
                // (each process on its own address space there, see `engine/spaces.rs`)
                l.device_engine();
                l
            })
            .collect();
        let mut b = Batch::new(
            self.dev.clone(),
            lanes,
            max_instructions,
            self.opts.slice,
            device_io,
        )?;
        b.translate_after(self.opts.block_samples, self.opts.block_wait);
        Ok(b)
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
    run_spawned_on(std::slice::from_ref(engine), spec, spawned, progress)
}

/// Batches of at least this many lanes on one device run as [`shards_on_one_device`] batches.
pub const SHARD_MIN_LANES: usize = 16_384;

/// How many batches a batch of `lanes` lanes on `engine`'s device alone runs as, side by side
/// (each with a contiguous share of the lanes, a thread and a device queue of its own; see
/// [`multi`]). A batch's round is the kernel, then the host's work on the lanes that stopped
/// (service, transfer, apply), so one batch leaves the device idle while the host works and
/// the host idle while the kernel runs; two overlap one's host work with the other's kernel.
/// Measured on an H200 (docs/performance.md, "Two batches on one device"): 65,536 lanes of a
/// forking dash script 31.2 -> 22.7 s, 16,384 Go lanes 51.6 -> 40.3 s, 16,384 Python lanes
/// 86.3 -> 74.6 s. So two for batches of [`SHARD_MIN_LANES`] or more where the device has
/// queues of its own (CUDA; the simulator and wgpu run one batch at a time), else one.
/// `ARMADA_GPU_SHARDS=K` (1 to 8) chooses.
pub fn shards_on_one_device(engine: &Engine, lanes: usize) -> usize {
    let chosen = std::env::var("ARMADA_GPU_SHARDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let k = match chosen {
        Some(k) => k.clamp(1, 8),
        None if lanes >= SHARD_MIN_LANES && engine.dev.overlapping_queues() => 2,
        None => 1,
    };
    k.min(lanes.max(1))
}

/// Runs a batch spec whose lanes [`spawn_lanes`] made over several engines, one contiguous
/// share of the lanes each (see [`multi`]); the results are in lane order, the same as on
/// one device. With one engine `BatchOutcome::devices` stays empty.
pub fn run_spawned_on(
    engines: &[Engine],
    spec: &BatchSpec,
    spawned: Spawned,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<BatchOutcome, Error> {
    for e in engines.iter().filter(|e| e.opts.verbose) {
        eprintln!(
            "armada: GPU engine on device {}: {}",
            e.ordinal,
            e.describe()
        );
    }
    let one_device: Vec<Engine>;
    let shards = match engines {
        [one] => shards_on_one_device(one, spawned.lanes.len()),
        _ => 1,
    };
    let engines = if shards > 1 {
        one_device = vec![engines[0].clone(); shards];
        &one_device[..]
    } else {
        engines
    };
    let Spawned {
        lanes,
        secs: spawn_s,
    } = spawned;
    let n = lanes.len();
    // the kernel answers the short run's I/O itself; output kept unless the spec drops it
    let io = if spec.drop_output {
        KernelIo::Drop
    } else {
        KernelIo::Keep
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let opts = multi::ShardOptions {
        max_instructions: spec.max_instructions,
        io,
        spawn_s,
        progress,
        stop: &stop,
        feed: true,
        device_share: shards,
    };
    let respawn = |i: usize| spec.spawn(i).map(Box::new).map_err(Error::from);
    // each device's results are taken, and its batch freed, on its own thread
    let finish = |mut b: Batch| b.results();
    let sharded = multi::run_sharded(engines, lanes, &respawn, &finish, &opts)?;
    let mut results: Vec<Option<LaneResult>> = (0..n).map(|_| None).collect();
    let mut stats = EngineStats::new();
    if engines.len() == 1 {
        if let Some(s) = sharded.shares.first().and_then(|s| s.stats.first()) {
            stats = s.clone();
        }
        if let Some(share) = sharded.shares.first().filter(|s| s.waves > 0) {
            let first = sharded.shards.first().map_or(0, |s| s.out.len());
            stats.insert(
                0,
                (
                    "batches".into(),
                    if share.stats.len() == 1 {
                        format!(
                            "one, after the device ran out of memory {} times (see slots)",
                            share.waves
                        )
                    } else {
                        format!(
                            "{} one after the other, after the device ran out of memory {} \
                             times (the figures are the first's, {first} lanes)",
                            share.stats.len(),
                            share.waves
                        )
                    },
                ),
            );
        }
    }
    for shard in sharded.shards {
        for mut r in shard.out {
            r.lane += shard.start;
            let at = r.lane;
            results[at] = Some(r);
        }
    }
    for lost in &sharded.lost {
        let range = lost.start..lost.start + lost.count;
        for (slot, lane) in results[range.clone()].iter_mut().zip(range) {
            *slot = Some(LaneResult {
                lane,
                exit: armada_core::runner::Exit::Unsupported(format!(
                    "not run: every device had failed by its turn (the last: {})",
                    lost.why
                )),
                instructions: 0,
                stdout: Vec::new(),
                stderr: Vec::new(),
                syscalls: 0,
                private_bytes: 0,
                host_steps: 0,
                coverage: None,
            });
        }
    }
    let mut lanes: Vec<LaneResult> = results.into_iter().flatten().collect();
    if lanes.len() != n {
        return Err(Error::Device(format!(
            "{} of {n} lanes came back from the devices (this is a bug in armada)",
            lanes.len()
        )));
    }
    if spec.drop_output {
        // what the host serviced is captured; what the kernel answered was dropped
        for r in &mut lanes {
            r.stdout.clear();
            r.stderr.clear();
        }
    }
    let devices = if shards > 1 {
        stats = vec![(
            "shards".into(),
            format!("{shards} on one device, each its own batch on a queue of its own"),
        )];
        let mut shares = sharded.shares;
        for (k, s) in shares.iter_mut().enumerate() {
            s.name = format!("{}; shard {} of {shards}", s.name, k + 1);
        }
        shares
    } else if engines.len() > 1 {
        stats = vec![("devices".into(), engines.len().to_string())];
        sharded.shares
    } else {
        Vec::new()
    };
    Ok(BatchOutcome {
        lanes,
        stats,
        devices,
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
