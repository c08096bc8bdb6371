//! Persistent lanes: a batch whose lanes run again and again from one start, each time with
//! a new stdin, without being set up again (a fuzzer's rounds). Setting up tens of thousands
//! of lanes (their host lanes restored, their page-table entries planned, their records and
//! reserves uploaded) and tearing them down again costs far more than a fuzz target's run on
//! the device; here it is paid once.
//!
//! It works because of how such a batch's lanes start and end:
//! - Restored from a snapshot, a lane owns no page at its start: every page it may write is
//!   a lazy entry, and its first write takes a frame of the lane's reserve (the claim log
//!   tells the host which). Taking the lane back is giving those entries their lazy values
//!   again and the reserve its frames.
//! - The kernel answers the run's reads of stdin, writes and fstat of fds 0-2 itself, and
//!   ends the lane at exit (`STOP_EXIT`, `devio`): the host takes the status and the count
//!   of instructions from the record and leaves the lane's host state alone. So a lane whose
//!   run the kernel answered whole is, on the host, still the lane it was at its start,
//!   apart from its stdin.
//!
//! A lane the host did service (any other syscall, a page miss, a fault, the instruction
//! limit) has a host state that moved on; `restart` gives it a host lane made afresh and sets
//! it up again, as `Batch::new` sets up a lane, then keeps that as its start.

use super::apply::apply_shared;
use super::service::Plan;
use super::setup::{start_record, start_wants};
use super::wants::{want_for, Want};
use super::{Batch, Entry};
use crate::device::htod_slice;
use crate::layout::*;
use crate::Error;
use armada_core::runner::Lane;
use rayon::prelude::*;
use std::time::Instant;

/// What `restart` does for one lane on the host side.
enum Reset {
    /// Taken back on the device: the page-table slots it set back to lazy entries, and the
    /// frames that return to its reserve.
    Device { slots: Vec<u64>, claimed: u64 },
    /// Set up again from this host lane.
    Again(Box<Lane>),
}

impl Batch {
    /// Whether the lanes are persistent (`keep_start`).
    pub fn is_persistent(&self) -> bool {
        self.d_start != 0
    }

    /// Makes every lane's state now its start, which [`Batch::restart`] takes it back to.
    /// For a batch that has not run yet, made with `device_io` on a device whose kernel
    /// answers the lanes' I/O and gives lazy pages (the CUDA engine), whose lanes read the
    /// captured stdin and own no page yet (restored from a snapshot). The error says which of
    /// these does not hold.
    pub fn keep_start(&mut self) -> Result<(), Error> {
        if self.d_start != 0 {
            return Ok(());
        }
        let refuse = |why: String| Err(Error::Device(format!("persistent lanes: {why}")));
        if !self.devio || !self.lazy {
            return refuse(
                "the device must answer the lanes' I/O and give lazy pages (the CUDA engine does)"
                    .into(),
            );
        }
        if self.stats.launches > 0 {
            return refuse("the start must be kept before the first run".into());
        }
        for (i, l) in self.lanes.iter().enumerate() {
            if l.entries.values().any(|e| e.private) {
                return refuse(format!(
                    "lane {i} owns pages at its start (lanes restored from a snapshot share its pages)"
                ));
            }
            if l.lane.program.process.stdin_bytes().is_none() {
                return refuse(format!("lane {i} does not read a captured stdin"));
            }
        }
        let n = self.lanes.len();
        self.d_start = self.dev.alloc(n * S_WORDS * 8)?;
        let descs: Vec<CopyDesc> = (0..n)
            .map(|i| CopyDesc {
                src: self.record_addr(i),
                dst: self.start_addr(i),
                words: S_WORDS as u64,
            })
            .collect();
        self.copy_on_device(&descs)?;
        for l in &mut self.lanes {
            l.start_reserve = l.reserve.clone();
        }
        Ok(())
    }

    /// Takes lanes `0..inputs.len()` back to their start, lane i with `inputs[i]` as its
    /// stdin, and makes them the batch's active lanes (the others wait). A lane the host
    /// serviced since its start gets a new host lane from `fresh(i)` (its start, with
    /// `inputs[i]`) and is set up again; the others are taken back where they are: their
    /// records from the start copy, the pages they claimed back to lazy entries, their
    /// reserves as they were, their coverage maps cleared.
    pub fn restart(
        &mut self,
        inputs: &[Vec<u8>],
        fresh: &(dyn Fn(usize) -> Result<Lane, Error> + Sync),
    ) -> Result<(), Error> {
        let k = inputs.len();
        if self.d_start == 0 {
            return Err(Error::Device(
                "restart needs persistent lanes (Batch::keep_start)".into(),
            ));
        }
        if k == 0 || k > self.lanes.len() {
            return Err(Error::Device(format!(
                "restart of {k} lanes in a batch of {}",
                self.lanes.len()
            )));
        }
        let t = Instant::now();
        // Host side, in parallel: a lane the host left alone lists the slots of the pages it
        // claimed, whose lazy values go back to the device (the host's table still has them
        // where the claims were never applied; where they were, its mirror is still its
        // start, so `want_for` gives them again); a serviced lane gets its new host lane.
        let images = &self.images;
        let pt = &self.pt;
        let resets: Vec<Result<Reset, Error>> = self.lanes[..k]
            .par_iter_mut()
            .zip(inputs.par_iter())
            .enumerate()
            .map(|(i, (l, input))| {
                l.dev_exit = None;
                if l.touched {
                    let mut lane = fresh(i)?;
                    lane.single_task_engine("GPU");
                    return Ok(Reset::Again(Box::new(lane)));
                }
                // The claims the host has not applied (all of them, unless the table grew):
                // the host's table and entries still show the lazy entries, which go back to
                // the device as they are.
                let mut slots: Vec<u64> = l.unapplied.iter().map(|c| c.slot).collect();
                let claimed = (l.unapplied.len() + l.claimed.len()) as u64;
                l.unapplied.clear();
                // Those it applied: the lazy entries again, from the mirror, which is still
                // the lane's start.
                let image = &images[l.image];
                for vpn in std::mem::take(&mut l.claimed) {
                    let bad = || {
                        Error::Device(format!(
                            "lane {i}: page {vpn:#x} it claimed was not a lazy page at its start"
                        ))
                    };
                    let Want::Lazy { frame, perms } =
                        want_for(&l.lane.program.mem, vpn, image, false, false, false, true)
                    else {
                        return Err(bad());
                    };
                    let e = l.entries.get_mut(&vpn).ok_or_else(bad)?;
                    *e = Entry {
                        slot: e.slot,
                        frame,
                        private: false,
                        lazy: true,
                    };
                    pt.set_val(e.slot, frame as u64 | perms | PT_LAZY);
                    slots.push(e.slot);
                }
                l.reserve.clone_from(&l.start_reserve);
                l.done = false;
                if !l.lane.program.process.set_stdin(input) {
                    return Err(Error::Device(format!(
                        "lane {i} no longer reads a captured stdin"
                    )));
                }
                Ok(Reset::Device { slots, claimed })
            })
            .collect();
        let mut laps = [0.0f64; 5];
        let mut lap = t;
        let mut next = |i: usize, laps: &mut [f64; 5]| {
            let now = Instant::now();
            laps[i] += (now - lap).as_secs_f64();
            lap = now;
        };
        // Serially: table writes and frames; the lanes to set up again lose what they held.
        let mut again: Vec<usize> = Vec::new();
        for (i, r) in resets.into_iter().enumerate() {
            match r? {
                Reset::Device { slots, claimed } => {
                    self.pt.pending.extend(slots);
                    self.frames.reserved += claimed;
                }
                Reset::Again(lane) => {
                    self.release_lane(i)?;
                    let l = &mut self.lanes[i];
                    l.lane = *lane;
                    l.touched = false;
                    l.done = false;
                    l.host_steps = 0;
                    l.last_miss = ((0, 0, false), 0);
                    l.epoch = l.epoch.wrapping_add(1).max(1);
                    again.push(i);
                }
            }
        }
        next(0, &mut laps);
        self.setup_again(&again)?;
        next(1, &mut laps);
        // (the lanes taken back: their table writes; `setup_again` sent them along with its
        // own when it had any)
        self.flush_pt()?;
        next(2, &mut laps);
        // Device side: records (the start's for the lanes taken back; the lanes set up again
        // keep theirs as their new start), each lane's input, the coverage maps.
        let mut descs: Vec<CopyDesc> = Vec::with_capacity(2 * k);
        let mut is_again = vec![false; k];
        for &i in &again {
            is_again[i] = true;
        }
        for (i, &a) in is_again.iter().enumerate() {
            let (rec, start) = (self.record_addr(i), self.start_addr(i));
            let (src, dst) = if a { (rec, start) } else { (start, rec) };
            descs.push(CopyDesc {
                src,
                dst,
                words: S_WORDS as u64,
            });
        }
        let io = self.upload_inputs(inputs)?;
        // the (address, length) pairs first in the staging buffer, then the copies
        let io_bytes = io.len() * 8;
        let stage = self.ensure_stage(io_bytes + (2 * k) * std::mem::size_of::<CopyDesc>())?;
        htod_slice(&*self.dev, stage, &io)?;
        for i in 0..k {
            descs.push(CopyDesc {
                src: stage + 16 * i as u64,
                dst: self.params.sysd + (i * SYSD_WORDS * 8) as u64,
                words: 2,
            });
        }
        self.run_copies(&descs, stage + io_bytes as u64)?;
        next(3, &mut laps);
        if self.d_cov != 0 {
            self.dev.zero(self.d_cov, k * COV_MAP_BYTES)?;
            self.cov_collected = false;
        }
        next(4, &mut laps);
        for (sum, p) in self.stats.restart_parts.iter_mut().zip(laps) {
            *sum += p;
        }
        self.active = (0..k as u32).collect();
        self.active_dirty = true;
        self.done
            .store(self.lanes.len() - k, std::sync::atomic::Ordering::Relaxed);
        self.stats.restarts += 1;
        self.stats.restarted_again += again.len() as u64;
        self.stats.restart_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// How lane `i` ended where the kernel ended it at exit without the host (persistent
    /// lanes): (exit status, instructions retired).
    pub fn device_exit(&self, i: usize) -> Option<(i32, u64)> {
        self.lanes.get(i).and_then(|l| l.dev_exit)
    }

    /// Lane `i`'s host lane.
    pub fn lane_mut(&mut self, i: usize) -> &mut Lane {
        &mut self.lanes[i].lane
    }

    /// Persistent lanes: the listed lanes that stopped at an exit the kernel ended them at
    /// are over (their status and instruction count come from their records; the host does
    /// not service them, so their host state stays their start); returns the others.
    pub(super) fn end_on_device(&mut self, svc: Vec<u32>) -> Result<Vec<u32>, Error> {
        let (exits, rest): (Vec<u32>, Vec<u32>) = svc
            .into_iter()
            .partition(|&l| self.stops[l as usize] == STOP_EXIT);
        if exits.is_empty() {
            return Ok(rest);
        }
        let t = Instant::now();
        let status = self.download_records(&exits, S_X, 1)?;
        let retired = self.download_records(&exits, S_RETIRED, 1)?;
        for (k, &l) in exits.iter().enumerate() {
            let lh = &mut self.lanes[l as usize];
            lh.dev_exit = Some((status[k] as i32 & 0xff, retired[k]));
            lh.done = true;
        }
        self.retire_done();
        *self.stats.stops.entry(stop_name(STOP_EXIT)).or_insert(0) += exits.len() as u64;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        Ok(rest)
    }

    /// Sets the listed lanes up again from their host lanes, as `Batch::new` does (entries,
    /// pages, reserve, record), and keeps that as their start.
    fn setup_again(&mut self, again: &[usize]) -> Result<(), Error> {
        if again.is_empty() {
            return Ok(());
        }
        let images = &self.images;
        let pt = &self.pt;
        let lazy = self.lazy;
        let mut is_again = vec![false; self.lanes.len()];
        for &i in again {
            is_again[i] = true;
        }
        let plans: Vec<(usize, Plan, super::apply::Applied)> = self
            .lanes
            .par_iter_mut()
            .enumerate()
            .filter(|(i, _)| is_again[*i])
            .map(|(i, l)| {
                let mut plan = Plan {
                    wants: start_wants(l, &images[l.image], lazy),
                    ..Default::default()
                };
                let applied = apply_shared(pt, l, i, &mut plan);
                (i, plan, applied)
            })
            .collect();
        let incoming: u64 = plans.iter().map(|p| p.1.wants.len() as u64).sum();
        self.ensure_pt_room(incoming)?;
        let mut uploads = Vec::new();
        let mut records = Vec::with_capacity(again.len());
        for (i, plan, applied) in plans {
            self.apply_rest(i, applied, plan, &mut uploads)?;
            let reserve = self.top_up(i)?;
            let l = &mut self.lanes[i];
            l.start_reserve.clone_from(&l.reserve);
            let l = &self.lanes[i];
            let rec = start_record(l, &self.images[l.image], self.devio, reserve);
            records.push((i as u32, 0, rec));
        }
        self.upload(&records, uploads)
    }

    fn record_addr(&self, i: usize) -> u64 {
        self.d_lanes + (i * S_WORDS * 8) as u64
    }

    fn start_addr(&self, i: usize) -> u64 {
        self.d_start + (i * S_WORDS * 8) as u64
    }

    /// Runs `descs` through the copy kernel (the descriptors staged first).
    fn copy_on_device(&mut self, descs: &[CopyDesc]) -> Result<(), Error> {
        let stage = self.ensure_stage(std::mem::size_of_val(descs))?;
        self.run_copies(descs, stage)
    }
}
