//! Translated blocks (a device that `translates`: the CUDA engine). The batch samples where
//! its lanes' slices end (the kernel leaves the micro-op's index in `S_INFO` at
//! `STOP_SLICE`), and once it has enough samples, the device compiles a kernel build with
//! the blocks holding most of them (`Device::build_blocks`; armada-cuda's blocks.rs chooses
//! and writes them). The batch then rewrites each block's first slot to `TBLOCK` and runs
//! that build. Nothing a lane computes changes: a block is its micro-ops' code, run whole
//! only when the lane's budget has room for it (docs/cuda.md, "Translated blocks").

use super::Batch;
use crate::layout::{S_INFO, STOP_SLICE, TBLOCK};
use crate::Error;
use rustc_hash::FxHashMap;
use std::time::Instant;

/// Samples a batch takes before it builds (`ARMADA_GPU_BLOCK_SAMPLES`).
const SAMPLES: u64 = 1 << 16;
/// Lanes sampled at most a launch (a download of one word each).
const SAMPLES_A_LAUNCH: usize = 4096;

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
    /// The build ran (or failed): sampling is over.
    done: bool,
    /// Blocks translated, the build's seconds, and why there are none when it failed.
    pub(super) count: usize,
    pub(super) build_s: f64,
    pub(super) failed: Option<String>,
}

impl Blocks {
    /// `on`: the device translates. `ARMADA_GPU_BLOCKS=0` turns blocks off (to measure
    /// against them), `ARMADA_GPU_BLOCK_SAMPLES` sets the samples taken before they are
    /// built (`Batch::translate_after` sets them for a batch).
    pub(super) fn new(on: bool) -> Blocks {
        let env_on = std::env::var("ARMADA_GPU_BLOCKS").map_or(true, |v| v != "0");
        Blocks {
            on: on && env_on,
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
        format!(
            "{} blocks from {} samples of where slices ended, built in {:.2} s",
            self.count, self.taken, self.build_s
        )
    }
}

impl Batch {
    /// Blocks are built after `samples` samples (None: as `Blocks::new` found; Some(0): no
    /// blocks).
    pub fn translate_after(&mut self, samples: Option<u64>) {
        match samples {
            Some(0) => self.blocks.on = false,
            Some(n) => self.blocks.want = n,
            None => {}
        }
    }

    /// After a launch: samples where the lanes' slices ended and, once there are enough,
    /// builds the blocks and rewrites their first slots.
    pub(super) fn sample_blocks(&mut self) -> Result<(), Error> {
        if !self.blocks.on || self.blocks.done || self.params.cov != 0 || self.d_start != 0 {
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
        }
        Ok(())
    }

    fn build_blocks(&mut self) -> Result<(), Error> {
        self.blocks.done = true;
        let samples: Vec<(u32, u32)> = std::mem::take(&mut self.blocks.samples)
            .into_iter()
            .collect();
        let t = Instant::now();
        let built = self.dev.build_blocks(&self.code.ops, &samples);
        self.blocks.build_s = t.elapsed().as_secs_f64();
        let (build, heads) = match built {
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
        self.code.mark_blocks(&heads, TBLOCK);
        self.code
            .upload(&*self.dev, &mut self.d_ops, &mut self.d_regions)?;
        self.params.ops = self.d_ops;
        self.params.regions = self.d_regions;
        self.params.blocks = build;
        Ok(())
    }
}
