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
//!
//! The kernel does the device's side itself, as each lane's next launch starts (`persist.cu`,
//! `Params::restart`): every claim also goes to the lane's undo list, whose slots get their
//! lazy values back; the record comes from the start copy; the input from the lane's new
//! (address, length); the coverage map is cleared. At exit it writes the lane's end (status,
//! instructions, and its map's news against the virgin map of `set_virgin`) where the host
//! reads all lanes' ends in one transfer. So a round of lanes the host left alone moves no
//! claim log, record or map between rounds, and runs no small kernel: such kernels wait
//! for SMs that another batch's kernel may hold (a pipelined fuzzer runs two batches).
//! The host's table still shows those lanes' lazy entries (their claims were never applied
//! there), except after the table grew: the new table was made with the claims applied, so
//! the undo lists are cleared and the host gives the entries back their lazy values itself.

use super::apply::apply_shared;
use super::records::Records;
use super::service::Plan;
use super::setup::{start_record, start_wants};
use super::wants::{want_for, Want};
use super::{Batch, Entry};
use crate::device::{dtoh_vec, htod_slice, DevPtr};
use crate::layout::*;
use crate::Error;
use armada_core::runner::Lane;
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::time::Instant;

/// The device buffers of the kernel's side of `restart` (`Params::undo` ..; 0: none yet).
#[derive(Default)]
pub(super) struct DevicePersist {
    pub(super) undo: DevPtr,
    pub(super) restart: DevPtr,
    pub(super) newio: DevPtr,
    pub(super) ends: DevPtr,
    pub(super) virgin: DevPtr,
    pub(super) covlist: DevPtr,
}

/// What `restart` does for one lane on the host side.
enum Reset {
    /// Taken back on the device: the page-table slots the host gives their lazy values back
    /// (claims it applied), and the frames that return to its reserve.
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
        let dp = DevicePersist {
            undo: self.dev.alloc(n * UNDO_WORDS * 8)?,
            restart: self.dev.alloc(n * 4)?,
            newio: self.dev.alloc(n * 16)?,
            ends: self.dev.alloc(n * END_WORDS * 8)?,
            virgin: 0,
            covlist: if self.d_cov != 0 {
                self.dev.alloc(n * COVLIST_WORDS * 4)?
            } else {
                0
            },
        };
        self.params.undo = dp.undo;
        self.params.restart = dp.restart;
        self.params.start = self.d_start;
        self.params.newio = dp.newio;
        self.params.ends = dp.ends;
        self.params.covlist = dp.covlist;
        // A round's lanes that stop for the host wait for the launch's end (a few finish on
        // the host, see `service`) rather than make every lane leave the launch early for
        // them (the grace period): that would take another launch, which waits for the SMs
        // the other batch's kernel holds where a fuzzer runs two.
        self.params.min_grace_ns = 1 << 50;
        self.d_persist = dp;
        Ok(())
    }

    /// Persistent lanes with coverage: the virgin map (`armada_core::coverage::Virgin::seen`)
    /// the kernel judges each lane's map against at its exit, for [`Batch::coverage_news`].
    /// Judged against an older map than the caller's at that call, a lane's map may show news
    /// that are no longer new (the caller finds that in the map): never the other way round,
    /// as a virgin map only fills.
    pub fn set_virgin(&mut self, seen: &[u8]) -> Result<(), Error> {
        if self.d_start == 0 || self.d_cov == 0 {
            return Ok(());
        }
        if seen.len() != COV_MAP_BYTES {
            return Err(Error::Device(format!(
                "a virgin map of {} bytes, not {COV_MAP_BYTES}",
                seen.len()
            )));
        }
        if self.d_persist.virgin == 0 {
            self.d_persist.virgin = self.dev.alloc(COV_MAP_BYTES)?;
        }
        self.dev.htod(self.d_persist.virgin, seen)?;
        self.params.virgin = self.d_persist.virgin;
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
        // Host side, in parallel: a lane the host left alone gets its stdin and its reserve
        // back, and the claims the host applied (after the table grew) their lazy entries
        // again (from the mirror, which is still the lane's start); the kernel takes back the
        // others. A serviced lane gets its new host lane.
        let images = &self.images;
        let pt = &self.pt;
        let resets: Vec<Result<Reset, Error>> = self.lanes[..k]
            .par_iter_mut()
            .zip(inputs.par_iter())
            .enumerate()
            .map(|(i, (l, input))| {
                l.dev_exit = None;
                l.dev_news = None;
                l.ended_private = 0;
                if l.touched {
                    let mut lane = fresh(i)?;
                    lane.device_engine();
                    return Ok(Reset::Again(Box::new(lane)));
                }
                let claimed = (l.unapplied.len() + l.claimed.len()) as u64;
                l.unapplied.clear();
                let mut slots = Vec::new();
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
                        cow: false,
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
        let mut laps = [0.0f64; 4];
        let mut lap = t;
        let mut next = |i: usize, laps: &mut [f64; 4]| {
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
                    self.release_lane(i, false)?;
                    let l = &mut self.lanes[i];
                    l.lane = lane;
                    // (one process, so one space: the lane's own key)
                    l.space = i as u64;
                    l.space_mem = l.lane.program.mem.space_id();
                    l.touched = false;
                    l.done = false;
                    l.host_steps = 0;
                    l.last_miss = ((0, 0, false), 0);
                    l.regions = 0;
                    l.epoch = l.epoch.wrapping_add(1).max(1);
                    again.push(i);
                }
            }
        }
        next(0, &mut laps);
        self.setup_again(&again)?;
        next(1, &mut laps);
        // (the host's table writes; `setup_again` sent them along with its own when it had
        // any)
        self.flush_pt()?;
        next(2, &mut laps);
        // Device side: the lanes set up again keep their records as their new start; every
        // lane's restart bits and next input, for the kernel.
        let descs: Vec<CopyDesc> = again
            .iter()
            .map(|&i| CopyDesc {
                src: self.record_addr(i),
                dst: self.start_addr(i),
                words: S_WORDS as u64,
            })
            .collect();
        if !descs.is_empty() {
            self.copy_on_device(&descs)?;
        }
        let mut bits = vec![(RESTART_TABLE | RESTART_RECORD | RESTART_INPUT) as u32; k];
        for &i in &again {
            // (its old claims went with its entries: its undo list is only cleared)
            bits[i] = RESTART_INPUT as u32;
        }
        let io = self.upload_inputs(inputs)?;
        htod_slice(&*self.dev, self.d_persist.newio, &io)?;
        htod_slice(&*self.dev, self.d_persist.restart, &bits)?;
        next(3, &mut laps);
        self.cov_collected = false;
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

    /// Of lanes `0..n`, how many the host serviced since their start (persistent lanes):
    /// each is set up again at the next restart, as a new batch would set it up.
    pub fn lanes_serviced(&self, n: usize) -> usize {
        self.lanes.iter().take(n).filter(|l| l.touched).count()
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
        // every lane's end, in one transfer (no gather kernel: it would wait for the SMs
        // another batch's kernel holds)
        let ends: Vec<u64> = dtoh_vec(
            &*self.dev,
            self.d_persist.ends,
            self.lanes.len() * END_WORDS,
        )?;
        let news = self.params.cov != 0 && self.params.virgin != 0;
        for &l in &exits {
            let e = &ends[l as usize * END_WORDS..(l as usize + 1) * END_WORDS];
            let lh = &mut self.lanes[l as usize];
            lh.dev_exit = Some((e[0] as i32 & 0xff, e[1]));
            lh.dev_news = news.then_some(e[2]);
            lh.done = true;
        }
        self.retire_done();
        *self.stats.stops.entry(stop_name(STOP_EXIT)).or_insert(0) += exits.len() as u64;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        Ok(rest)
    }

    /// Sets the listed lanes up again from their host lanes, as `Batch::new` does (entries,
    /// pages, reserve, record), and keeps that as their start.
    pub(super) fn setup_again(&mut self, again: &[usize]) -> Result<(), Error> {
        if again.is_empty() {
            return Ok(());
        }
        let images = &self.images;
        let files = &self.files;
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
                let mut wants = start_wants(l, &images[l.image], lazy, false);
                // (a lane that left the device for want of memory: the entries it had)
                let back = std::mem::take(&mut l.back);
                if !back.is_empty() {
                    let mut wanted: FxHashSet<u64> = wants.iter().map(|w| w.0).collect();
                    let mem = &l.lane.program.mem;
                    for v in back {
                        if wanted.insert(v) {
                            match want_for(mem, v, &images[l.image], false, false, true, lazy) {
                                Want::Nothing => {}
                                w => wants.push((v, w)),
                            }
                        }
                    }
                }
                let mut plan = Plan {
                    wants,
                    ..Default::default()
                };
                let applied = apply_shared(pt, files, l, &mut plan, false);
                (i, plan, applied)
            })
            .collect();
        let incoming: u64 = plans.iter().map(|p| p.1.wants.len() as u64).sum();
        self.ensure_pt_room(incoming)?;
        let mut uploads = Vec::new();
        let mut records = Records::default();
        for (i, plan, applied) in plans {
            // (a lane the device has no room for waits on the host again: `park`)
            if !self.apply_or_park(i, applied, plan, &mut uploads)? {
                continue;
            }
            let reserve = self.top_up(i)?;
            let l = &mut self.lanes[i];
            l.start_reserve.clone_from(&l.reserve);
            let l = &mut self.lanes[i];
            let rec = start_record(l, &self.images[l.image], self.devio, reserve);
            records.push(i as u32, 0, &rec);
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
