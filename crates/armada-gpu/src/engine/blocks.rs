//! Translated blocks (a device that `translates`: the CUDA engine). The batch samples where
//! its lanes' slices end (the kernel leaves the micro-op's index in `S_INFO` at
//! `STOP_SLICE`), and once it has enough samples, the device compiles a kernel build with
//! the blocks holding most of them (`Device::build_blocks`; armada-cuda's blocks.rs chooses
//! and writes them). The batch then rewrites each block's first slot to `TBLOCK` and runs
//! that build. Nothing a lane computes changes: a block is its micro-ops' code, run whole
//! only when the lane's budget has room for it (docs/cuda.md, "Translated blocks").

use super::Batch;
use crate::device::BlockBuild;
use crate::layout::{STOP_SLICE, S_INFO, TBLOCK};
use crate::Error;
use rustc_hash::FxHashMap;
use std::time::Instant;

/// Samples a batch takes before it builds (`ARMADA_GPU_BLOCK_SAMPLES`).
const SAMPLES: u64 = 1 << 15;
/// Lanes sampled at most a launch (a download of one word each): so that the samples come
/// from 32 launches or more, not only from the lanes' first milliseconds.
const SAMPLES_A_LAUNCH: usize = 1024;

/// What a build gives: its number and the blocks' heads (`Device::build_blocks`).
type Built = Result<Option<BlockBuild>, Error>;

/// A batch's translated blocks.
#[derive(Default)]
pub(super) struct Blocks {
    /// Sampling and building are on (the device translates, the batch has no coverage
    /// maps, `ARMADA_GPU_BLOCKS` is not 0).
    pub(super) on: bool,
    /// Where slices ended: micro-op index -> samples.
    samples: FxHashMap<u32, u32>,
    taken: u64,
    want: u64,
    /// The build is under way on a thread of its own (the lanes run on meanwhile), since
    /// it started.
    pending: Option<(std::thread::JoinHandle<Built>, Instant)>,
    /// The build was started: sampling is over.
    done: bool,
    /// Wait for the build (`Batch::translate_after`).
    wait: bool,
    /// Blocks translated, the samples they hold (per mille), the build's seconds, and why
    /// there are none when it failed.
    pub(super) count: usize,
    covered: u32,
    pub(super) build_s: f64,
    pub(super) failed: Option<String>,
}

impl Blocks {
    /// `on`: the device translates. Off unless `ARMADA_GPU_BLOCKS=1` (or a batch's
    /// `block_samples`): a build of a few hundred blocks takes NVRTC minutes so far
    /// (docs/performance.md, "Translated blocks on the GPU, a first step").
    /// `ARMADA_GPU_BLOCK_SAMPLES` sets the samples taken before they are built,
    /// `ARMADA_GPU_BLOCK_WAIT=1` makes the batch wait for the build (`translate_after`).
    pub(super) fn new(on: bool) -> Blocks {
        let env = |k: &str| std::env::var(k).is_ok_and(|v| v == "1");
        Blocks {
            on: on && env("ARMADA_GPU_BLOCKS"),
            wait: env("ARMADA_GPU_BLOCK_WAIT"),
            want: std::env::var("ARMADA_GPU_BLOCK_SAMPLES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(SAMPLES)
                .max(1),
            ..Default::default()
        }
    }

    /// The batch summary's line.
    pub(super) fn describe(&self) -> String {
        if let Some(why) = &self.failed {
            return format!("none: {why}");
        }
        if !self.on {
            return "off".into();
        }
        if !self.done {
            return format!("none yet ({} of {} samples taken)", self.taken, self.want);
        }
        if self.pending.is_some() {
            return format!("none yet (building from {} samples)", self.taken);
        }
        format!(
            "{} blocks holding {:.1}% of {} samples of where slices ended, built in {:.2} s",
            self.count,
            self.covered as f64 / 10.0,
            self.taken,
            self.build_s
        )
    }
}

impl Batch {
    /// Blocks are built after `samples` samples (None: as `Blocks::new` found; Some(0): no
    /// blocks); `wait`: the batch waits for their build.
    pub fn translate_after(&mut self, samples: Option<u64>, wait: bool) {
        match samples {
            Some(0) => self.blocks.on = false,
            Some(n) => {
                self.blocks.on = self.dev.translates();
                self.blocks.want = n;
            }
            None => {}
        }
        self.blocks.wait |= wait;
    }

    /// After a launch: samples where the lanes' slices ended and, once there are enough,
    /// starts the build; once it is built, rewrites the blocks' first slots.
    pub(super) fn sample_blocks(&mut self) -> Result<(), Error> {
        if !self.blocks.on || self.params.cov != 0 || self.d_start != 0 {
            return Ok(());
        }
        if self
            .blocks
            .pending
            .as_ref()
            .is_some_and(|p| self.blocks.wait || p.0.is_finished())
        {
            let (thread, t) = self.blocks.pending.take().unwrap();
            self.blocks.build_s = t.elapsed().as_secs_f64();
            let built = thread
                .join()
                .unwrap_or_else(|_| Err(Error::Device("the blocks' build panicked".into())));
            return self.install_blocks(built);
        }
        if self.blocks.done {
            return Ok(());
        }
        let sliced: Vec<u32> = self
            .active
            .iter()
            .copied()
            .filter(|&l| self.stops[l as usize] == STOP_SLICE)
            .collect();
        if sliced.is_empty() {
            return Ok(());
        }
        let step = sliced.len().div_ceil(SAMPLES_A_LAUNCH);
        let picked: Vec<u32> = sliced.iter().step_by(step).copied().collect();
        let at = self.download_records(&picked, S_INFO, 1)?;
        for k in at {
            *self.blocks.samples.entry(k as u32).or_default() += 1;
        }
        self.blocks.taken += picked.len() as u64;
        if self.blocks.taken >= self.blocks.want {
            self.build_blocks()?;
            if self.blocks.wait {
                return self.sample_blocks();
            }
        }
        Ok(())
    }

    /// Starts the build on a thread of its own, with the micro-ops as they are now (a
    /// region decoded later goes after them: the heads stay where they are).
    fn build_blocks(&mut self) -> Result<(), Error> {
        self.blocks.done = true;
        let samples: Vec<(u32, u32)> = std::mem::take(&mut self.blocks.samples)
            .into_iter()
            .collect();
        let code = self.code.ops.clone();
        let dev = self.dev.clone();
        let thread = std::thread::Builder::new()
            .name("armada-blocks".into())
            .spawn(move || dev.build_blocks(&code, &samples))
            .map_err(|e| Error::Device(format!("a thread for the blocks' build: {e}")))?;
        self.blocks.pending = Some((thread, Instant::now()));
        Ok(())
    }

    /// Rewrites the built blocks' first slots and runs their build from the next launch.
    fn install_blocks(&mut self, built: Built) -> Result<(), Error> {
        let BlockBuild {
            build,
            heads,
            covered,
        } = match built {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(()),
            // A build that fails leaves the batch as it was (the interpreter runs every
            // lane); the summary says why.
            Err(e) => {
                self.blocks.failed = Some(e.to_string());
                return Ok(());
            }
        };
        self.blocks.count = heads.len();
        self.blocks.covered = covered;
        self.code.mark_blocks(&heads, TBLOCK);
        self.code
            .upload(&*self.dev, &mut self.d_ops, &mut self.d_regions)?;
        self.params.ops = self.d_ops;
        self.params.regions = self.d_regions;
        self.params.blocks = build;
        Ok(())
    }
}
