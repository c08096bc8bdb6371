//! The batch's pool of free frames on the device (`Params::pool`, CUDA's `take_frame`). A
//! lane's first write to a lazy page takes a frame of its own reserve (`S_RES`..); once that
//! is empty it takes the next frame of this pool, within its budget (`S_POOL_LEFT`: its memory
//! cap less the pages it holds and its reserve), instead of stopping for the host to refill
//! the reserve. A Python lane started from a snapshot claims about 600 pages: with reserves
//! alone (16 frames, doubling to 64) most of its stops were refills, each a launch's wait and
//! a sync of its written pages.
//!
//! The kernel takes slots in order with one atomic add, so after a launch the taken slots are
//! a prefix: the host refills those before the next launch, and the pool's claims in the claim
//! log (`CLAIM_POOLED`) say which lane got which frame. Its size follows demand: it doubles
//! after a launch that emptied it (up to `max`), and halves after one that took under a
//! quarter of it. Its untaken frames are live but hold no page (`Frames::reserved`), as a
//! reserve's do. Persistent lanes (a fuzzer's) have no pool: their kernel's restart gives each
//! its reserve back, which a shared pool could not.

use super::Batch;
use crate::device::{dtoh_vec, htod_slice, DevPtr};
use crate::layout::RES_CAP;
use crate::Error;

/// Slots a lane adds to the pool's first size, and to its largest (which bounds the claim log).
const FIRST_PER_LANE: usize = 8;
const MAX_PER_LANE: usize = 64;
/// Bounds of the pool's size, in frames (a frame is 8 KiB of device memory with its shadow).
const MIN_SLOTS: usize = 1024;
const MAX_SLOTS: usize = 1 << 21;

#[derive(Default)]
pub(super) struct FramePool {
    /// [next, filled, frames...] on the device (0: the batch has no pool).
    pub(super) d: DevPtr,
    /// The frames in slots 0..len (host copy).
    slots: Vec<u32>,
    /// Slots 0..taken were taken in the last launch (refilled before the next).
    taken: usize,
    /// The size the pool is filled to, and its largest.
    target: usize,
    pub(super) max: usize,
    /// An allocation for it failed: it grows no more (the lanes need the memory).
    full: bool,
    /// Frames the lanes took from it, and launches that emptied it (figures).
    pub(super) frames_taken: u64,
    pub(super) emptied: u64,
}

impl FramePool {
    /// The pool's largest size for a batch of `lanes` lanes.
    pub(super) fn max_for(lanes: usize) -> usize {
        (MAX_PER_LANE * lanes).clamp(MIN_SLOTS, MAX_SLOTS)
    }

    /// Claim-log entries one launch may make: every lane's whole reserve, and the pool.
    pub(super) fn claims_room(lanes: usize, pool: bool) -> usize {
        RES_CAP * lanes + if pool { Self::max_for(lanes) } else { 0 }
    }
}

impl Batch {
    /// Makes the pool for this batch (`lazy` batches on devices that have one, not persistent).
    pub(super) fn make_pool(&mut self) -> Result<(), Error> {
        let max = FramePool::max_for(self.lanes.len());
        let d = self.dev.alloc(8 * (2 + max))?;
        htod_slice(&*self.dev, d, &[0u64, 0])?;
        self.pool = FramePool {
            d,
            max,
            target: (FIRST_PER_LANE * self.lanes.len()).clamp(MIN_SLOTS, max),
            ..Default::default()
        };
        Ok(())
    }

    /// Whether lanes take frames from the pool in the next launch.
    pub(super) fn pool_on(&self) -> bool {
        self.pool.d != 0 && self.d_start == 0
    }

    /// Before a launch: the slots taken in the last one refilled and the pool brought to its
    /// size, what changed sent up, its counts reset.
    pub(super) fn fill_pool(&mut self) -> Result<(), Error> {
        if !self.pool_on() {
            self.params.pool = 0;
            return Ok(());
        }
        let taken = std::mem::take(&mut self.pool.taken);
        let target = self.pool.target;
        // the frames not taken stay; those past the size go back, from the end
        let mut rest = self.pool.slots.split_off(taken.min(self.pool.slots.len()));
        while rest.len() > target {
            let f = rest.pop().unwrap_or_default();
            self.frames.release(f);
            self.frames.reserved -= 1;
        }
        let mut fresh = Vec::with_capacity(target - rest.len());
        while !self.pool.full && fresh.len() < target - rest.len() {
            self.frames.reserved += 1;
            match self.frames.alloc(&*self.dev) {
                Ok(f) => fresh.push(f),
                Err(_) => {
                    // the device is out of memory: the pool grows no more (the lanes'
                    // own pages need it)
                    self.frames.reserved -= 1;
                    self.pool.full = true;
                }
            }
        }
        let p = &mut self.pool;
        // (the usual launch: as many new frames as were taken, in their slots; otherwise
        // the slots move and all go up)
        let whole = fresh.len() != taken;
        p.slots = fresh;
        p.slots.extend_from_slice(&rest);
        let up = if whole { p.slots.len() } else { taken };
        let words: Vec<u64> = p.slots[..up].iter().map(|&f| f as u64).collect();
        htod_slice(&*self.dev, p.d + 16, &words)?;
        htod_slice(&*self.dev, p.d, &[0u64, p.slots.len() as u64])?;
        self.stats.frames_peak = self.frames.peak;
        self.params.pool = p.d;
        Ok(())
    }

    /// After a launch: the slots the lanes took (their frames are in the claim log), and the
    /// pool's next size.
    pub(super) fn drain_pool(&mut self) -> Result<usize, Error> {
        if self.params.pool == 0 {
            return Ok(0);
        }
        let next = dtoh_vec::<u64>(&*self.dev, self.pool.d, 1)?[0] as usize;
        let p = &mut self.pool;
        let len = p.slots.len();
        p.taken = next.min(len);
        p.frames_taken += p.taken as u64;
        if next > len {
            p.emptied += 1;
            if !p.full {
                p.target = (2 * p.target.max(len)).min(p.max);
            }
        } else if 4 * p.taken < len {
            p.target = (p.target / 2).max(MIN_SLOTS);
        }
        Ok(p.taken)
    }
}
