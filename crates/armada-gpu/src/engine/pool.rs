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
//! log (`CLAIM_POOLED`) say which lane got which frame. Its size follows demand: after a launch
//! that emptied it, it grows to twice what the lanes asked of it (up to `max`). Its untaken
//! frames are live but hold no page (`Frames::reserved`), as a reserve's do, and they are the
//! lanes' too: where the device has no memory left for another chunk of frames, an allocation
//! takes one from the pool's end (`Frames::spare_from_pool`), so a pool never makes a batch run out
//! sooner. Persistent lanes (a fuzzer's) have no pool: their kernel's restart gives each its
//! reserve back, which a shared pool could not.

use super::Batch;
use crate::device::{dtoh_vec, htod_slice, DevPtr};
use crate::layout::RES_CAP;
use crate::Error;

/// Slots a lane adds to the pool's first size, and to its largest (which bounds the claim log).
/// 16,384 lanes of Python started from one snapshot take about 4 M frames in a run, most in
/// its first launches.
const FIRST_PER_LANE: usize = 32;
const MAX_PER_LANE: usize = 256;
/// Bounds of the pool's size, in frames (a frame is 8 KiB of device memory with its shadow).
const MIN_SLOTS: usize = 1024;
const MAX_SLOTS: usize = 1 << 22;

#[derive(Default)]
pub(super) struct FramePool {
    /// [next, filled, frames...] on the device (0: the batch has no pool). The host's copy
    /// of the slots is `Frames::pool`, the slots the last launch took `Frames::pool_taken`.
    pub(super) d: DevPtr,
    /// The size the pool is filled to, and its largest.
    target: usize,
    pub(super) max: usize,
    /// An allocation for it failed: it grows no more (the lanes need the memory).
    full: bool,
    /// The most frames a launch took lately (each launch's count, or this one's less an
    /// eighth), for giving frames back once the lanes take few (`fill_pool`).
    recent: usize,
    /// Frames the lanes took from it, and launches that emptied it (figures).
    pub(super) frames_taken: u64,
    pub(super) emptied: u64,
    /// The most frames it was filled to.
    pub(super) largest: usize,
}

impl FramePool {
    /// The pool's largest size for a batch of `lanes` lanes.
    pub(super) fn max_for(lanes: usize) -> usize {
        (MAX_PER_LANE * lanes).clamp(MIN_SLOTS, MAX_SLOTS)
    }

    /// The frames the pool is filled to before each launch (0 without a pool): they are
    /// live, and no lane's until one takes them.
    pub(super) fn holds(&self) -> usize {
        if self.d == 0 {
            0
        } else {
            self.target
        }
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
        let f = &mut self.frames;
        let taken = std::mem::take(&mut f.pool_taken).min(f.pool.len());
        // the frames not taken stay in their slots (the last ones may have gone to lanes'
        // pages, `Frames::spare_from_pool`)
        let rest = f.pool.split_off(taken);
        // (the taken frames are lanes' pages now: none of them may be handed out again)
        f.pool.clear();
        // A pool the lanes no longer empty gives frames back, to at most twice what a launch
        // took lately: lanes started from a snapshot take millions of frames in their first
        // launches and a few thousand a launch after, and a pool left at its largest held
        // memory the lanes' own pages then lacked (a fed batch's slots stayed empty).
        let keep = (2 * self.pool.recent).max(MIN_SLOTS);
        if self.pool.target > 2 * keep {
            self.pool.target = keep;
        }
        let mut rest = rest;
        if rest.len() > self.pool.target {
            for frame in rest.split_off(self.pool.target) {
                f.release(frame);
                f.reserved -= 1;
            }
        }
        let want = self.pool.target.saturating_sub(rest.len());
        let mut fresh = Vec::with_capacity(want);
        // (the device refusing the pool is not a lane refused: no lane leaves the device for
        // it, `shed`)
        let refusals = f.refusals;
        while fresh.len() < want {
            f.reserved += 1;
            let Ok(frame) = f.alloc(&*self.dev) else {
                f.reserved -= 1;
                break;
            };
            fresh.push(frame);
        }
        // The device out of memory: the pool grows no more (the lanes' own pages need it)
        // until a fill reaches its size again; but it is refilled to its size whenever the
        // device has the frames (a pool that stopped refilling for good once the device had
        // refused it one left the lanes of a batch that had run out stopping at their writes
        // for the rest of the batch)
        self.pool.full = fresh.len() < want;
        f.refusals = refusals;
        // (the usual launch: as many new frames as were taken, in their slots; otherwise the
        // slots move and all go up)
        let whole = fresh.len() != taken;
        f.pool = fresh;
        f.pool.extend_from_slice(&rest);
        self.pool.largest = self.pool.largest.max(f.pool.len());
        let up = if whole { f.pool.len() } else { taken };
        let words: Vec<u64> = f.pool[..up].iter().map(|&frame| frame as u64).collect();
        let d = self.pool.d;
        htod_slice(&*self.dev, d + 16, &words)?;
        htod_slice(&*self.dev, d, &[0u64, f.pool.len() as u64])?;
        self.stats.frames_peak = f.peak;
        self.params.pool = d;
        Ok(())
    }

    /// After a launch: the slots the lanes took (their frames are in the claim log), and the
    /// pool's next size.
    pub(super) fn drain_pool(&mut self) -> Result<usize, Error> {
        if self.params.pool == 0 {
            return Ok(0);
        }
        let next = dtoh_vec::<u64>(&*self.dev, self.pool.d, 1)?[0] as usize;
        let len = self.frames.pool.len();
        let taken = next.min(len);
        self.frames.pool_taken = taken;
        let p = &mut self.pool;
        p.frames_taken += taken as u64;
        p.recent = next.max(p.recent - p.recent / 8);
        if next > len {
            p.emptied += 1;
            if !p.full {
                p.target = (2 * p.target.max(next)).min(p.max);
            }
        }
        Ok(taken)
    }
}
