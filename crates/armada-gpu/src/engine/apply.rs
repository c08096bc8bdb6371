//! Page-table apply (step 5 of the round, before the upload): what servicing each lane
//! produced (its `Plan`) goes into the host's page table and the frame pool. Most of it is
//! applied on the thread that serviced the lane (`apply_shared`); the serial part
//! (`Batch::apply_serviced`) takes that in, applies the wants that need new frames or table
//! room, tops up the lanes' frame reserves (lazy pages), retires the lanes that ended, and
//! hands the records and pages to upload. The claim log of each launch (`Batch::take_claims`)
//! comes in here too.

use super::code::CodeArea;
use super::file_frames::FileFrames;
use super::pagetable::{HostTable, ZERO_FRAME};
use super::pool::FramePool;
use super::records::Records;
use super::service::Plan;
use super::upload::PageSrc;
use super::wants::Want;
use super::{Batch, Entry, LaneHost};
use crate::device::{dtoh_vec, Device};
use crate::layout::*;
use crate::Error;
use armada_core::memory::PAGE_SIZE;
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::time::Instant;

/// A lane's reserve is drawn on for its pages on the servicing thread while it holds more
/// than this many frames (`apply_shared`); below it the serial part refills it.
const RES_LOW: usize = 4;

/// A lazy page the kernel gave a frame of the lane's reserve or of the batch's pool (the
/// claim log's entry).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Claim {
    pub(super) frame: u32,
    /// The frame came from the pool (`pool`), not the lane's reserve.
    pub(super) pooled: bool,
    pub(super) vpn: u64,
    /// The slot + 1 of the entry the kernel inserted for it (a copy-on-write image page);
    /// 0: the page was a lazy entry of the lane's.
    pub(super) inserted: u64,
}

/// Takes lane `lane`'s claims that the host has not applied yet (`LaneHost::unapplied`) into
/// its entries and the host's table: each page becomes the lane's private page on its frame.
pub(super) fn apply_claims(l: &mut LaneHost, pt: &HostTable, lane: usize) -> Result<(), Error> {
    for c in std::mem::take(&mut l.unapplied) {
        let (frame, vpn) = (c.frame, c.vpn);
        let bad = || Error::Device(format!("lane {lane} claimed page {vpn:#x} out of step"));
        // the kernel takes frames from the end of the list, as the host does here (a frame of
        // the pool was counted against the pool's slots as the log was read)
        if !c.pooled && l.reserve.pop() != Some(frame) {
            return Err(bad());
        }
        if c.inserted != 0 {
            // a copy-on-write image page: the kernel took a free slot for the lane's entry
            let slot = c.inserted - 1;
            let val = frame as u64 | PT_R | PT_W;
            if l.entries.contains_key(&vpn) || !pt.take_free(slot, pt_key(l.space, vpn), val) {
                return Err(bad());
            }
            l.entries.insert(vpn, Entry::own(slot, frame));
            l.claimed.push(vpn);
            continue;
        }
        let e = l.entries.get_mut(&vpn).filter(|e| e.lazy).ok_or_else(bad)?;
        let was = *e;
        *e = Entry::own(e.slot, frame);
        let slot = e.slot;
        if let Some(f) = l.unshare(&was) {
            l.cow_freed.push(f);
        }
        // the kernel wrote the same value to its copy
        let v = pt.val(slot);
        pt.set_val(slot, frame as u64 | (v & (PT_R | PT_W)));
        l.claimed.push(vpn);
    }
    Ok(())
}

/// What `apply_shared` did for one lane, for the serial part of the round.
#[derive(Default)]
pub(super) struct Applied {
    /// Page-table slots written.
    pub(super) dirty: Vec<u64>,
    /// Frames the lane no longer uses.
    pub(super) freed: Vec<u32>,
    uploads: Vec<(u32, PageSrc)>,
    /// Keys of address spaces the lane dropped (`spaces`).
    pub(super) keys: Vec<u64>,
    /// Frames taken from the lane's reserve for pages of its own (`Frames::reserved`).
    unreserved: u64,
}

/// Applies the wants of lane `i` that need neither a new frame nor more table room than the
/// table has (most of them: entries on shared frames, lazy entries, bytes for frames the lane
/// owns), on the thread that serviced the lane; returns the rest (in `plan.wants`) for the
/// serial path. Wants name distinct pages, so the order they are applied in does not matter.
pub(super) fn apply_shared(
    pt: &HostTable,
    files: &FileFrames,
    l: &mut LaneHost,
    plan: &mut Plan,
    pool_on: bool,
) -> Applied {
    let mut out = Applied::default();
    if plan.exited {
        return out;
    }
    let limit = pt.shared_limit();
    // the table's count taken once for the lane's entries, not once an entry
    let mut budget = pt.reserve(plan.wants.len() as u64, limit);
    let mut rest = Vec::new();
    for (vpn, want) in plan.wants.drain(..) {
        let key = pt_key(l.space, vpn);
        let cur = l.entries.get(&vpn).copied();
        let (frame, private, lazy, val, data) = match &want {
            Want::Nothing => {
                if let Some(e) = cur {
                    pt.remove_shared(e.slot, &mut out.dirty);
                    if e.private {
                        out.freed.push(e.frame);
                    }
                    out.freed.extend(l.unshare(&e));
                    l.entries.remove(&vpn);
                }
                continue;
            }
            Want::Shared { frame, perms } => (*frame, false, false, *frame as u64 | perms, None),
            Want::File { buf, perms } => match files.get(buf) {
                Some(f) => (f, false, false, f as u64 | perms, None),
                None => {
                    rest.push((vpn, want));
                    continue;
                }
            },
            Want::Lazy { frame, perms } => {
                (*frame, false, true, *frame as u64 | perms | PT_LAZY, None)
            }
            Want::Private { perms, .. } => match cur {
                Some(e) if e.private => (e.frame, true, false, e.frame as u64 | perms, Some(())),
                // A page new to the lane (a write miss, a syscall's write to a page it
                // shared): a frame of its own reserve, where the batch's pool stands behind
                // the reserve (the serial part refills it only once it runs low), so that
                // most lanes need nothing of the batch's allocator.
                _ if pool_on && l.reserve.len() > RES_LOW => {
                    let f = l.reserve.pop().unwrap_or(ZERO_FRAME);
                    l.res_taken = true;
                    (f, true, false, f as u64 | perms, Some(()))
                }
                _ => {
                    rest.push((vpn, want));
                    continue;
                }
            },
        };
        match pt.set_budgeted(key, val, plan.force, &mut budget, &mut out.dirty) {
            Ok(Some(slot)) => {
                if let Some(e) = cur {
                    if e.private && !private {
                        out.freed.push(e.frame);
                    }
                    out.freed.extend(l.unshare(&e));
                }
                l.entries.insert(
                    vpn,
                    Entry {
                        slot,
                        frame,
                        private,
                        lazy,
                        cow: false,
                    },
                );
                if data.is_some() {
                    let fresh = !cur.is_some_and(|e| e.private);
                    if fresh {
                        out.unreserved += 1;
                    }
                    match want {
                        Want::Private { data: Some(d), .. } => out.uploads.push((frame, d)),
                        // (by construction a new frame comes with its bytes, but one must
                        // never show a reserve frame's stale bytes)
                        _ if fresh => out.uploads.push((frame, PageSrc::Frame(ZERO_FRAME))),
                        _ => {}
                    }
                }
            }
            // no room (or a full table, which the serial path reports)
            _ => {
                if private && !cur.is_some_and(|e| e.private) {
                    l.reserve.push(frame);
                }
                rest.push((vpn, want))
            }
        }
    }
    pt.unreserve(budget);
    plan.wants = rest;
    out
}

/// What the apply leaves to the upload: records and pages (frame, bytes).
type ToUpload = (Records, Vec<(u32, PageSrc)>);

/// The figures of a round's serviced lanes, summed (`Batch::apply_serviced` adds them to the
/// batch's).
#[derive(Default)]
pub(super) struct Figures {
    syscalls: u64,
    misses: u64,
    host_steps: u64,
    host_instructions: u64,
    /// The micro-ops of the host steps (one an instruction the kernel left to the host).
    host_ops: Vec<u16>,
    /// Stops by kind (index: the stop code, the last for codes past STOP_EXIT).
    stops: [u64; STOP_EXIT as usize + 2],
}

impl Figures {
    pub(super) fn count(&mut self, plan: &Plan, stop: u32) {
        self.syscalls += plan.syscalls;
        self.misses += plan.misses;
        self.host_steps += plan.host_steps;
        self.host_instructions += plan.host_instructions;
        self.host_ops.extend(plan.host_op);
        self.stops[(stop as usize).min(STOP_EXIT as usize + 1)] += 1;
    }

    fn add(&mut self, o: Figures) {
        self.syscalls += o.syscalls;
        self.misses += o.misses;
        self.host_steps += o.host_steps;
        self.host_instructions += o.host_instructions;
        self.host_ops.extend(o.host_ops);
        for (a, b) in self.stops.iter_mut().zip(o.stops) {
            *a += b;
        }
    }
}

/// What servicing a round's lanes produced, gathered on the servicing threads (rayon's fold,
/// in lane order): what most lanes need of the batch (table writes, frames given back,
/// uploads, record words) is settled there whole, and only the lanes that need the batch's
/// allocators or decoder (`slow`, `top_up`) are left to the serial part. That part used to
/// take every lane in turn, half a microsecond each a round: at 65,536 forking lanes a
/// quarter of the batch's time, on one core.
#[derive(Default)]
pub(super) struct Done {
    pub(super) records: Records,
    dirty: Vec<u64>,
    freed: Vec<u32>,
    keys: Vec<u64>,
    uploads: Vec<(u32, PageSrc)>,
    unreserved: u64,
    pub(super) figures: Figures,
    /// Lanes whose frame reserve changes size (frames from the batch's allocator).
    top_up: Vec<u32>,
    /// Lanes with wants left, forks the shared table had no room for, new code areas, or an
    /// end: the serial part applies them whole, as before.
    slow: Vec<(usize, Plan, Applied)>,
    /// The first error, by lane.
    pub(super) err: Option<Error>,
}

impl Done {
    /// Takes lane `lane`'s service: settled here where it needs nothing of the batch but
    /// what `apply_shared` did, else kept for the serial part.
    pub(super) fn take(
        &mut self,
        l: &mut LaneHost,
        lane: usize,
        plan: Plan,
        applied: Applied,
        reserve: ReserveRule,
    ) {
        if plan.exited || !plan.wants.is_empty() || plan.forked.is_some() || plan.code {
            self.slow.push((lane, plan, applied));
            return;
        }
        self.dirty.extend(applied.dirty);
        self.freed.extend(applied.freed);
        self.freed.append(&mut l.cow_freed);
        self.keys.extend(applied.keys);
        self.uploads.extend(applied.uploads);
        self.unreserved += applied.unreserved;
        if reserve.lazy {
            let (room, cap_room) = reserve.room(l);
            let n = l.reserve.len();
            let left = reserve.pool_left(cap_room, n);
            if room == n && !l.res_taken {
                self.records.push(lane as u32, S_POOL_LEFT, &[left]);
            } else if n <= room && (n == room || n > RES_LOW) && l.res_taken {
                // only its count changed (the host took frames from its end, where the
                // kernel takes them): the pool stands behind it until it runs low
                l.res_taken = false;
                self.records
                    .push(lane as u32, S_POOL_LEFT, &[left, n as u64]);
            } else {
                self.top_up.push(lane as u32);
            }
        }
    }

    /// `other`'s lanes after this one's.
    pub(super) fn merge(mut self, other: Done) -> Done {
        if self.err.is_none() {
            self.err = other.err;
        }
        self.records.append(other.records);
        self.dirty.extend(other.dirty);
        self.freed.extend(other.freed);
        self.keys.extend(other.keys);
        self.uploads.extend(other.uploads);
        self.unreserved += other.unreserved;
        self.figures.add(other.figures);
        self.top_up.extend(other.top_up);
        self.slow.extend(other.slow);
        self
    }
}

/// How a lane's frame reserve is sized (`Batch::top_up`), for the servicing threads.
#[derive(Clone, Copy)]
pub(super) struct ReserveRule {
    /// Lanes have reserves (lazy pages).
    pub(super) lazy: bool,
    pub(super) target: usize,
    pub(super) pool_on: bool,
}

impl ReserveRule {
    /// Lane `l`'s reserve as it should be (its target within its memory cap, counting the
    /// pages it claimed that the mirror does not show yet), and the frames its cap leaves.
    fn room(&self, l: &LaneHost) -> (usize, u64) {
        let mem = &l.lane.program.mem;
        let used = mem.private_bytes() + l.claimed.len() as u64 * PAGE_SIZE;
        let target = (self.target << l.res_grown.min(8)).min(RES_CAP);
        let cap_room = mem.limit().saturating_sub(used) / PAGE_SIZE;
        (cap_room.min(target as u64) as usize, cap_room)
    }

    /// The frames a lane may take from the pool with a reserve of `reserve` frames.
    fn pool_left(&self, cap_room: u64, reserve: usize) -> u64 {
        if self.pool_on {
            cap_room.saturating_sub(reserve as u64)
        } else {
            0
        }
    }
}

impl Batch {
    /// How lanes' reserves are sized now.
    pub(super) fn reserve_rule(&self) -> ReserveRule {
        ReserveRule {
            lazy: self.lazy,
            target: self.res_target,
            pool_on: self.pool_on(),
        }
    }

    /// The serial part of servicing a round's lanes (`done`, from `service_lanes`): what the
    /// servicing threads settled goes into the batch (table writes, frames given back,
    /// figures); the lanes left to it get their wants, forks, code and ends applied in lane
    /// order, and the reserves that change size are topped up. Returns the records and
    /// pages to upload.
    pub(super) fn apply_serviced(&mut self, done: Done) -> Result<ToUpload, Error> {
        let t_apply = Instant::now();
        let Done {
            mut records,
            dirty,
            freed,
            keys,
            mut uploads,
            unreserved,
            figures,
            top_up,
            slow,
            err,
        } = done;
        if let Some(e) = err {
            return Err(e);
        }
        self.pt.pending.extend_from_slice(&dirty);
        for f in freed {
            self.frames.release(f);
        }
        self.space_keys.give_back(keys);
        self.frames.unreserve(unreserved);
        let incoming: u64 = slow.iter().map(|r| r.1.wants.len() as u64).sum();
        self.ensure_pt_room(incoming)?;
        // The batch's last lanes ending at once (not persistent: no lane runs here again):
        // their entries, frames and reserves are not given back one by one, which for a
        // batch of short runs ending in one launch was a tenth of a second of serial work.
        // The device memory goes with the batch.
        let closing = self.d_start == 0
            && !self.feeding()
            && slow.iter().filter(|r| r.1.exited).count() == self.active.len();
        let mut ended = false;
        let mut parked = false;
        // collect, running lanes, forks, code, ended lanes, reserves (APPLY_PARTS)
        let mut parts = [t_apply.elapsed().as_secs_f64(), 0.0, 0.0, 0.0, 0.0, 0.0];
        // (a stuck lane never gets here: the servicing thread made it the round's error)
        for (lane_id, mut plan, applied) in slow {
            let exited = plan.exited;
            let code = plan.code && !exited;
            let t_lane = Instant::now();
            let forked = plan.forked.take();
            let code_keys = std::mem::take(&mut plan.code_keys);
            // (a lane the device refuses a frame may leave it: `park`)
            let stays =
                closing && exited || self.apply_or_park(lane_id, applied, plan, &mut uploads)?;
            if !stays {
                parked = true;
                continue;
            }
            if exited {
                let lh = &mut self.lanes[lane_id];
                lh.done = true;
                ended = true;
                parts[4] += t_lane.elapsed().as_secs_f64();
                continue;
            }
            let t_forks = Instant::now();
            parts[1] += (t_forks - t_lane).as_secs_f64();
            if let Some(excluded) = forked {
                // (the forks the parallel part had no table room for)
                self.adopt_forks(lane_id, &excluded)?;
            }
            let t_code = Instant::now();
            parts[2] += (t_code - t_forks).as_secs_f64();
            if code {
                let word = self.lane_regions(lane_id, code_keys);
                records.push(lane_id as u32, S_REGIONS, &[word]);
            }
            let t_res = Instant::now();
            parts[3] += (t_res - t_code).as_secs_f64();
            if let Some(r) = self.top_up(lane_id)? {
                records.push(lane_id as u32, S_POOL_LEFT, &r);
            }
            parts[5] += t_res.elapsed().as_secs_f64();
        }
        let t_res = Instant::now();
        for lane in top_up {
            // (not for a lane that left the device)
            if self.lanes[lane as usize].parked {
                continue;
            }
            if let Some(r) = self.top_up(lane as usize)? {
                records.push(lane, S_POOL_LEFT, &r);
            }
        }
        parts[5] += t_res.elapsed().as_secs_f64();
        for (sum, p) in self.stats.apply_parts.iter_mut().zip(parts) {
            *sum += p;
        }
        let s = &mut self.stats;
        s.syscalls += figures.syscalls;
        s.misses += figures.misses;
        s.host_steps += figures.host_steps;
        s.host_instructions += figures.host_instructions;
        if !figures.host_ops.is_empty() {
            self.dev.host_stepped(&figures.host_ops);
        }
        for &op in &figures.host_ops {
            *s.host_ops.entry(armada_isa::ops::name(op)).or_insert(0) += 1;
        }
        for (code, &n) in figures.stops.iter().enumerate() {
            if n > 0 {
                *s.stops.entry(stop_name(code as u32)).or_insert(0) += n;
            }
        }
        if ended || parked {
            self.retire_done();
        }
        self.stats.apply_s += t_apply.elapsed().as_secs_f64();
        Ok((records, uploads))
    }

    /// Lane `i`'s regions after its executable areas changed: each area decoded (or found
    /// decoded for the same pages), the lane's run of the region table; returns its
    /// `S_REGIONS` word. Areas of its own pages are left to the host. `keys`: its areas'
    /// keys, worked out in the parallel part of the round (`code::area_keys`).
    fn lane_regions(&mut self, i: usize, keys: Vec<CodeArea>) -> u64 {
        let l = &mut self.lanes[i];
        let mem = &mut l.lane.program.mem;
        let set: Vec<_> = keys
            .into_iter()
            .filter_map(|a| self.code.region_keyed(mem, a))
            .collect();
        l.code = set.iter().map(|r| (r.0, r.1)).collect();
        l.regions = self.code.set(&set) as u64 | (set.len() as u64) << 32;
        l.regions
    }

    /// Applies one lane's wanted page states to the table and frames (the serial path: for
    /// the wants `apply_shared` left, and for a lane that ended); collects uploads.
    fn apply_plan(
        &mut self,
        i: usize,
        plan: Plan,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        let dev: &dyn Device = &*self.dev;
        let l = &mut self.lanes[i];
        for (vpn, want) in plan.wants {
            let key = pt_key(l.space, vpn);
            let cur = l.entries.get(&vpn).copied();
            // a library's page: the batch's frame for it (a new one goes up with this
            // round), else the lane's own frame like any shared page
            let want = match want {
                Want::File { buf, perms } => {
                    match self.files.frame_for(&buf, &mut self.frames, dev, uploads)? {
                        Some(frame) => Want::Shared { frame, perms },
                        None => Want::Private {
                            perms,
                            data: Some(PageSrc::Bytes(Box::new(**buf))),
                        },
                    }
                }
                w => w,
            };
            match want {
                Want::File { .. } => {
                    return Err(Error::Device(format!(
                        "lane {i}: page {vpn:#x}'s library frame was not worked out"
                    )))
                }
                Want::Nothing => {
                    if let Some(e) = cur {
                        self.pt.remove(e.slot);
                        if e.private {
                            self.frames.release(e.frame);
                        }
                        if let Some(f) = l.unshare(&e) {
                            self.frames.release(f);
                        }
                        l.entries.remove(&vpn);
                    }
                }
                Want::Shared { frame, perms } | Want::Lazy { frame, perms } => {
                    // an entry on a frame the lane does not own (a lazy one: until the kernel
                    // gives it a frame on the first write)
                    let lazy = matches!(want, Want::Lazy { .. });
                    if let Some(e) = cur {
                        if e.private {
                            self.frames.release(e.frame);
                        }
                        if let Some(f) = l.unshare(&e) {
                            self.frames.release(f);
                        }
                    }
                    let val = frame as u64 | perms | if lazy { PT_LAZY } else { 0 };
                    let slot = self.pt.set(key, val, plan.force)?;
                    l.entries.insert(
                        vpn,
                        Entry {
                            slot,
                            frame,
                            private: false,
                            lazy,
                            cow: false,
                        },
                    );
                }
                Want::Private { perms, data } => {
                    let (frame, fresh) = match cur {
                        Some(e) if e.private => (e.frame, false),
                        _ => (self.frames.alloc(dev)?, true),
                    };
                    if let Some(f) = cur.and_then(|e| l.unshare(&e)) {
                        self.frames.release(f);
                    }
                    let slot = self.pt.set(key, frame as u64 | perms, plan.force)?;
                    l.entries.insert(vpn, Entry::own(slot, frame));
                    match data {
                        Some(d) => uploads.push((frame, d)),
                        None if fresh => {
                            // never happens by construction (a new frame always comes with its
                            // bytes), but a fresh frame must not show stale bytes
                            uploads.push((frame, PageSrc::Frame(ZERO_FRAME)));
                        }
                        None => {}
                    }
                }
            }
        }
        if plan.exited {
            self.release_lane(i, false)?;
        }
        self.stats.frames_peak = self.frames.peak;
        self.stats.guest_frames_peak = self.frames.guest_peak;
        Ok(())
    }

    /// Lane `i` gives up its page-table entries, its frames and its reserve (it ended, or it
    /// is set up again, or with `parks` it leaves the device to come back later: `park`).
    /// A persistent lane's entries leave the device's table too (its keys are looked up
    /// again once it runs again), as do those of a lane whose slot a waiting lane takes or
    /// that comes back (`feed`); otherwise the device keeps the stale keys, which no lookup
    /// asks for (`HostTable::forget`).
    pub(super) fn release_lane(&mut self, i: usize, parks: bool) -> Result<(), Error> {
        let l = &mut self.lanes[i];
        // (claims it made after the host last looked: their frames are the lane's now)
        apply_claims(l, &self.pt, i)?;
        // (a slot a waiting lane takes next has its key looked up again too)
        let reused = parks || self.d_start != 0 || self.feeding();
        let l = &mut self.lanes[i];
        // (the most the lane held, for the slots' lanes to come: `feed`; a lane that comes
        // back has not ended)
        if !parks {
            self.lane_peaks.add(l.peak_own.max(l.own_frames()));
        }
        for (_, e) in l.entries.drain() {
            if reused {
                self.pt.remove(e.slot);
            } else {
                self.pt.forget(e.slot);
            }
            if e.private {
                self.frames.release(e.frame);
            }
        }
        // its other processes' spaces: their keys are used again, so their entries leave
        // the device's table
        let parked: Vec<_> = l.spaces.drain().map(|(_, s)| s).collect();
        let mut out = Applied::default();
        super::spaces::drop_spaces(&self.pt, l, parked, &mut out);
        self.pt.pending.extend_from_slice(&out.dirty);
        for f in out.freed {
            self.frames.release(f);
        }
        self.space_keys.give_back(out.keys);
        // the frames the running space shared with them, once each
        for (f, _) in l.cow.drain() {
            self.frames.release(f);
        }
        for f in l.cow_freed.drain(..) {
            self.frames.release(f);
        }
        l.res_taken = false;
        for f in std::mem::take(&mut l.reserve) {
            self.frames.release(f);
            self.frames.reserved -= 1;
        }
        l.claimed.clear();
        Ok(())
    }

    /// Takes the lanes that ended, or that left the device to come back later (`park`), out
    /// of the active list.
    pub(super) fn retire_done(&mut self) {
        let lanes = &self.lanes;
        self.active
            .retain(|&l| !lanes[l as usize].done && !lanes[l as usize].parked);
        if let Some(f) = self.feed.as_mut() {
            f.fresh_parks = 0;
        }
        self.active_dirty = true;
        self.done
            .store(self.lanes_done_of().0, std::sync::atomic::Ordering::Relaxed);
    }

    /// Takes what `apply_shared` did for lane `i` into the batch: table writes, freed frames,
    /// uploads; then applies the wants it left (they need frames or table room).
    pub(super) fn apply_rest(
        &mut self,
        i: usize,
        done: Applied,
        plan: Plan,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        self.pt.pending.extend_from_slice(&done.dirty);
        for f in done.freed {
            self.frames.release(f);
        }
        for f in std::mem::take(&mut self.lanes[i].cow_freed) {
            self.frames.release(f);
        }
        self.space_keys.give_back(done.keys);
        self.frames.unreserve(done.unreserved);
        uploads.extend(done.uploads);
        if !plan.wants.is_empty() || plan.exited {
            self.apply_plan(i, plan, uploads)?;
        }
        Ok(())
    }

    /// `apply_rest`, where a lane the device refuses a frame leaves it to come back later
    /// instead, if it may (`park`): returns false when it left.
    pub(super) fn apply_or_park(
        &mut self,
        i: usize,
        done: Applied,
        plan: Plan,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<bool, Error> {
        let exited = plan.exited;
        let mark = uploads.len();
        match self.apply_rest(i, done, plan, uploads) {
            Err(Error::OutOfMemory(..)) if !exited && self.may_park(i) => {
                let freed: FxHashSet<u32> = self.park(i)?.into_iter().collect();
                // (its pages' uploads would go to frames that are not its own now)
                let tail = uploads.split_off(mark);
                uploads.extend(tail.into_iter().filter(|(f, _)| !freed.contains(f)));
                Ok(false)
            }
            r => r.map(|()| true),
        }
    }

    /// Fills lane `i`'s frame reserve up to `res_target` frames, within its memory cap (counting the
    /// pages it claimed that the mirror does not show yet). Returns the record words from
    /// S_POOL_LEFT on: the frames the lane may take from the pool, then, where the reserve
    /// changed, the reserve (None without lazy pages).
    pub(super) fn top_up(&mut self, i: usize) -> Result<Option<Vec<u64>>, Error> {
        let rule = self.reserve_rule();
        if !rule.lazy {
            return Ok(None);
        }
        let l = &mut self.lanes[i];
        let (room, cap_room) = rule.room(l);
        let before = l.reserve.len();
        if before == room {
            let left = rule.pool_left(cap_room, before);
            if std::mem::take(&mut l.res_taken) {
                // (the host took frames from its end: the count goes up)
                return Ok(Some(vec![left, before as u64]));
            }
            return Ok(Some(vec![left]));
        }
        while l.reserve.len() > room {
            let f = l.reserve.pop().unwrap_or(ZERO_FRAME);
            self.frames.release(f);
            self.frames.reserved -= 1;
        }
        while l.reserve.len() < room {
            // out of device memory: a smaller reserve (the lane's writes then stop it as
            // misses, and the host says so if it cannot map them either)
            self.frames.reserved += 1;
            let Ok(f) = self.frames.alloc(&*self.dev) else {
                self.frames.reserved -= 1;
                break;
            };
            l.reserve.push(f);
        }
        let left = rule.pool_left(cap_room, l.reserve.len());
        if l.reserve.len() == before && !std::mem::take(&mut l.res_taken) {
            return Ok(Some(vec![left]));
        }
        l.res_taken = false;
        self.stats.frames_peak = self.frames.peak;
        let mut words = Vec::with_capacity(2 + l.reserve.len());
        words.push(left);
        words.push(l.reserve.len() as u64);
        words.extend(l.reserve.iter().map(|&f| f as u64));
        Ok(Some(words))
    }

    /// Reads the claim log of the last launch: each lazy page the kernel gave a frame of the
    /// lane's reserve becomes the lane's private page in the host's table (`apply_claims`).
    /// Persistent lanes keep them unapplied until the host looks at the lane, and the claims
    /// of those that ended at exit are not kept at all: the kernel takes them back (see
    /// `persist`). So where every lane of such a batch ended at exit, the log is not read.
    pub(super) fn take_claims(&mut self) -> Result<(), Error> {
        let pool_taken = self.drain_pool()?;
        let keep = self.d_start != 0;
        let stops = &self.stops;
        let exited = |lane: usize| keep && stops[lane] == STOP_EXIT;
        if keep && self.active.iter().all(|&l| exited(l as usize)) {
            return Ok(());
        }
        let dev: &dyn Device = &*self.dev;
        let n = dtoh_vec::<u64>(dev, self.params.claims, 1)?[0] as usize;
        if n == 0 && pool_taken == 0 {
            return Ok(());
        }
        if n > FramePool::claims_room(self.lanes.len(), self.pool.d != 0) {
            return Err(Error::Device(format!(
                "the claim log holds {n} entries, more than fit"
            )));
        }
        let words: Vec<u64> = dtoh_vec(dev, self.params.claims + 8, 2 * n)?;
        // Frames of the pool: as many as the lanes took from it, each once; those the kernel
        // took and gave no page go back.
        let mut pooled = 0;
        let mut unused = 0;
        for c in words.chunks_exact(2) {
            if c[0] & CLAIM_POOLED != 0 {
                pooled += 1;
                if c[0] & CLAIM_UNUSED != 0 {
                    self.frames.release(c[0] as u32);
                    unused += 1;
                }
            }
        }
        if pooled != pool_taken {
            return Err(Error::Device(format!(
                "the claim log names {pooled} frames of the pool, and {pool_taken} were taken"
            )));
        }
        self.frames.reserved -= unused;
        // Grouped by lane (a stable counting sort: a lane's claims stay in the order it made
        // them), then each lane's taken in parallel: tens of thousands of lanes each claim a
        // few pages a launch, and one thread walking them all showed as most of a fuzz
        // round's host time.
        let lanes = self.lanes.len();
        let mut starts = vec![0usize; lanes + 1];
        let lane_of = |w: u64| ((w & !(CLAIM_POOLED | CLAIM_UNUSED)) >> 32) as usize;
        for c in words.chunks_exact(2) {
            if c[0] & CLAIM_UNUSED != 0 {
                continue;
            }
            let lane = lane_of(c[0]);
            if lane >= lanes {
                return Err(Error::Device(format!(
                    "the claim log names lane {lane} of {lanes}"
                )));
            }
            if !exited(lane) {
                starts[lane + 1] += 1;
            }
        }
        let kept = starts.iter().sum::<usize>();
        for i in 0..lanes {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut order = vec![Claim::default(); kept];
        for c in words.chunks_exact(2) {
            let lane = lane_of(c[0]);
            if c[0] & CLAIM_UNUSED != 0 || exited(lane) {
                continue;
            }
            order[next[lane]] = Claim {
                frame: c[0] as u32,
                pooled: c[0] & CLAIM_POOLED != 0,
                vpn: c[1] & ((1 << CLAIM_SLOT_SHIFT) - 1),
                inserted: c[1] >> CLAIM_SLOT_SHIFT,
            };
            next[lane] += 1;
        }
        let pt = &self.pt;
        self.lanes
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(lane, l)| -> Result<(), Error> {
                let mine = &order[starts[lane]..starts[lane + 1]];
                if mine.is_empty() {
                    return Ok(());
                }
                l.unapplied.extend_from_slice(mine);
                if keep {
                    Ok(())
                } else {
                    apply_claims(l, pt, lane)
                }
            })?;
        self.frames.reserved -= kept as u64;
        let f = &mut self.frames;
        f.guest_peak = f.guest_peak.max(f.live - f.reserved);
        self.stats.guest_frames_peak = f.guest_peak;
        self.stats.lazy_claims += n as u64 - unused;
        Ok(())
    }
}
