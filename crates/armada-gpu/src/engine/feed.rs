//! Lanes fed into the slots of lanes that ended: a batch of more lanes than it holds at once.
//!
//! A batch runs `slots` lanes at a time; the others wait on the host, in order. When a lane
//! ends, its result is taken and the next waiting lane is set up in its slot (as
//! `Batch::new` sets up a lane: its entries, reserve, record and kernel I/O block), while the
//! other lanes go on where they are. So lanes whose runs differ in length keep the device
//! full until the last lanes start, where batches run one after another each wait for their
//! longest lane; and a batch whose lanes do not all fit in device memory at once runs in as
//! many slots as fit instead of in batches one after the other.
//!
//! A lane's result does not depend on its slot or on the lanes beside it, so the results are
//! those of one batch of all the lanes. A slot is given back to a new lane only once the old
//! one's page-table entries have left the device's table (its key is the slot's, see
//! `apply::release_lane`).

use super::devio::{pack_inputs, sys_block};
use super::upload::PageSrc;
use super::{Batch, LaneHost};
use crate::device::{htod_slice, DevPtr};
use crate::layout::*;
use crate::Error;
use armada_core::batch::LaneResult;
use armada_core::memory::PAGE_SIZE;
use armada_core::runner::Lane;
use rustc_hash::FxHashSet;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The lanes waiting for a slot, and what the slots' lanes were.
pub(super) struct Feed {
    /// Waiting lanes, with their numbers in the batch, and each one's stdin on the device
    /// (address, length) where the kernel answers reads (`devio`).
    waiting: VecDeque<(usize, Box<Lane>, [u64; 2])>,
    /// The number in the batch of the lane each slot holds.
    slot_lane: Vec<usize>,
    /// Slots whose lane ended and whose result was taken (they hold no lane now).
    empty: Vec<bool>,
    /// Results of the lanes that ended and left their slot.
    pub(super) ended: Vec<LaneResult>,
    /// All lanes, slots and waiting.
    pub(super) total: usize,
    /// Instructions the lanes that left their slot retired (for progress readers).
    pub(super) retired: Arc<AtomicU64>,
    /// The waiting lanes' stdin, all uploaded at the start (0: none).
    pub(super) d_inputs: DevPtr,
    /// Lanes set up in a slot that another lane held, and rounds after which a slot stayed
    /// empty (or a lane that left the device stayed off it) for want of memory.
    pub(super) fed: u64,
    pub(super) waits: u64,
    /// Slots whose lane left the device for want of memory (`Batch::park`), in the order
    /// they left: they come back first, as memory frees.
    parked: VecDeque<usize>,
    /// Times a lane left the device so, and lanes that left it since the active list last
    /// dropped them (`retire_done`).
    pub(super) parks: u64,
    pub(super) fresh_parks: usize,
    /// This batch's part of `PARKED_BYTES` (given back when the batch goes, whatever
    /// its lanes then).
    parked_bytes: u64,
    /// Lanes may leave the device so (`ARMADA_GPU_PARK=0`: no, a batch that runs out of
    /// memory fails and runs again with fewer lanes at once, as before; for comparisons and
    /// for the tests of that path).
    park: bool,
}

/// Bytes of guest pages the host holds for lanes that left the device (`Batch::park`), over
/// every batch of the process (shards of one device, several devices).
static PARKED_BYTES: AtomicU64 = AtomicU64::new(0);

/// The most `PARKED_BYTES` may reach: a quarter of the host's memory (8 GiB where
/// /proc/meminfo does not say). A lane that leaves the device keeps its pages on the host
/// until it comes back; a batch that starts 32,768 Python lanes, of which a third fit,
/// would otherwise hold the rest's pages (about 1.7 MB a lane at its end) all at once.
/// Past it, a lane the device refuses fails the batch, as without parking.
fn parked_budget() -> u64 {
    static BUDGET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map_or(32 << 30, |kib| kib << 10);
        total / 4
    })
}

impl Drop for Feed {
    fn drop(&mut self) {
        PARKED_BYTES.fetch_sub(self.parked_bytes, Ordering::Relaxed);
    }
}

/// The most frames each lane held, over the lanes that gave theirs up.
#[derive(Default)]
pub(super) struct Peaks {
    pub(super) max: u64,
    sum: u64,
    n: u64,
}

impl Peaks {
    pub(super) fn add(&mut self, frames: u64) {
        self.max = self.max.max(frames);
        self.sum += frames;
        self.n += 1;
    }

    /// What a lane to come is taken to need: the mean with a quarter more, at most the
    /// largest (0 before any lane ended).
    pub(super) fn typical(&self) -> u64 {
        let mean = self.sum / self.n.max(1);
        (mean + mean / 4).min(self.max)
    }
}

/// Why the lanes `waiting` cannot wait for the slots of a batch that starts with `first`
/// (`Batch::feed`), or None: a waiting lane must run a program one of the starting lanes
/// runs (the slots' setup knows only their images), and no lane may collect coverage (its
/// map is the slot's).
pub fn feed_refusal(first: &[&Lane], waiting: &[&Lane]) -> Option<String> {
    if first.iter().chain(waiting).any(|l| l.coverage().is_some()) {
        return Some("the lanes collect coverage".into());
    }
    waiting
        .iter()
        .position(|w| {
            !first
                .iter()
                .any(|f| Arc::ptr_eq(&f.program.image, &w.program.image))
        })
        .map(|k| {
            format!(
                "waiting lane {k} runs a program none of the {} starting lanes runs",
                first.len()
            )
        })
}

impl Batch {
    /// Makes `waiting` wait for the slots of lanes that end. Before the first round, in a
    /// batch that is not persistent and collects no coverage; every waiting lane must run a
    /// program one of the starting lanes runs. The lanes are numbered: the starting lanes
    /// (the batch's, in its order) are `first`, each waiting lane comes with its number, and
    /// `kept` are the results of the batch's other lanes, which ended in an earlier batch (one
    /// that ran out of memory, `take_ended`). The results then come in the order of the
    /// numbers. With no lane waiting, each lane's result is still taken as it ends, so that a
    /// batch that fails keeps those (`take_ended`).
    pub fn feed(
        &mut self,
        first: Vec<usize>,
        waiting: Vec<(usize, Box<Lane>)>,
        kept: Vec<LaneResult>,
    ) -> Result<(), Error> {
        if first.len() != self.lanes.len() {
            return Err(Error::Device(format!(
                "{} numbers for a batch of {} lanes (a bug in armada)",
                first.len(),
                self.lanes.len()
            )));
        }
        let refuse = |why: String| Err(Error::Device(format!("lanes waiting for slots: {why}")));
        if self.stats.launches > 0 || self.feed.is_some() {
            return refuse("they must be given before the first round, once".into());
        }
        if self.d_start != 0 || self.d_cov != 0 {
            return refuse("not with persistent lanes or coverage".into());
        }
        for (k, (_, w)) in waiting.iter().enumerate() {
            if self.image_index(w).is_none() {
                return refuse(format!(
                    "waiting lane {k} runs a program none of the starting lanes runs"
                ));
            }
        }
        let slots = self.lanes.len();
        // their stdin goes up once, in a buffer of its own (the slots' blocks point into
        // `d_inputs`, which a new upload would free)
        let mut io: Vec<[u64; 2]> = vec![[0, 0]; waiting.len()];
        let mut d_inputs = 0;
        if self.devio {
            let inputs: Vec<&[u8]> = waiting
                .iter()
                .map(|(_, l)| l.program.process.stdin_bytes().unwrap_or(&[]))
                .collect();
            let (mut bytes, at) = pack_inputs(&inputs);
            bytes.resize(bytes.len().max(8), 0);
            d_inputs = self.dev.alloc(bytes.len())?;
            self.dev.htod(d_inputs, &bytes)?;
            for ((slot, i), &a) in io.iter_mut().zip(&inputs).zip(&at) {
                *slot = [d_inputs + a as u64, i.len() as u64];
            }
        }
        let total = slots + waiting.len() + kept.len();
        let waiting = waiting
            .into_iter()
            .zip(io)
            .map(|((number, mut l), io)| {
                l.device_engine();
                (number, l, io)
            })
            .collect();
        let retired: u64 = kept.iter().map(|r| r.instructions).sum();
        self.feed = Some(Feed {
            waiting,
            slot_lane: first,
            empty: vec![false; slots],
            ended: kept,
            total,
            retired: Arc::new(AtomicU64::new(retired)),
            d_inputs,
            fed: 0,
            waits: 0,
            parked: VecDeque::new(),
            parks: 0,
            fresh_parks: 0,
            parked_bytes: 0,
            park: std::env::var("ARMADA_GPU_PARK").map_or(true, |v| v != "0"),
        });
        self.stats.slots = Some(slots);
        Ok(())
    }

    /// Frames the slots' lanes may hold in all: the batch's frames that hold no shared page
    /// and are not the pool's (the size it is filled to now: it shrinks once lanes take few,
    /// `fill_pool`), and half of what the device has free (the rest is for the page table's
    /// growth and for the batches beside this one on the device), or where the batch has a
    /// share of the device (`share_device`), what its share has left.
    fn room(&self) -> u64 {
        let chunks = self.frames.chunks.len() as u64;
        let have = chunks << self.frames.shift;
        let (free, _) = self.dev.mem_info();
        // (a frame takes its page and its shadow; a batch with a share of the device takes
        // what its share has left, the device permitting)
        let more = match self.frames.max_chunks {
            Some((most, _, _)) => (free / (2 * PAGE_SIZE))
                .min(((most as u64).saturating_sub(chunks)) << self.frames.shift),
            None => free / 2 / (2 * PAGE_SIZE),
        };
        (have + more).saturating_sub(self.frames.shared + self.pool.holds() as u64)
    }

    /// This batch is one of `k` side by side on its device (`shards_on_one_device`): it holds
    /// at most a `k`th of the device's memory in frames (of nine tenths of it, the rest for
    /// page tables and buffers; rounded up to whole chunks). A batch that cannot hold fewer
    /// lanes runs again without it (`multi::run_fed`). Without shares the first batch to
    /// find a size that fit took most of the device, and the other ran out of memory again
    /// and again: on an H100, 65,536 Python lanes in two batches, one ran in 12,108 slots
    /// with 26 GiB of frames and the other, after three failed attempts, in 3,076 with 7 GiB.
    pub fn share_device(&mut self, k: usize) {
        if k < 2 {
            self.frames.max_chunks = None;
            return;
        }
        let (_, total) = self.dev.mem_info();
        let share = total / 10 * 9 / k as u64;
        // (a chunk is its frames and their shadows; the share rounded up to whole chunks)
        let chunk = 2 * (PAGE_SIZE << self.frames.shift);
        let most = share.div_ceil(chunk).max(1) as usize;
        self.frames.max_chunks = Some((most, share >> 20, k));
    }

    /// Whether lanes still wait for slots or to come back to the device (a lane that ends
    /// then gives its slot up, and its memory to them).
    pub(super) fn feeding(&self) -> bool {
        self.feed
            .as_ref()
            .is_some_and(|f| !f.waiting.is_empty() || !f.parked.is_empty())
    }

    /// Whether lane `i`, which the device just refused a frame, may leave it and wait on the
    /// host to come back (`park`): in a batch that feeds its slots (not persistent), a lane
    /// that runs one process (its state then all in its host lane and its one space), while
    /// another lane stays on the device to free memory.
    pub(super) fn may_park(&self, i: usize) -> bool {
        let Some(f) = self.feed.as_ref() else {
            return false;
        };
        let l = &self.lanes[i];
        let on_device = self.active.len() - f.fresh_parks;
        f.park
            && self.d_start == 0
            && !l.done
            && !l.parked
            && l.spaces.is_empty()
            && l.cow.is_empty()
            && l.lane.process_count() == 1
            && on_device > 1
            && PARKED_BYTES.load(Ordering::Relaxed) + l.lane.program.mem.private_bytes()
                <= parked_budget()
    }

    /// After a round in which the device refused frames: lanes serviced in it (`svc`) leave
    /// the device (`park`), those that have run least first, until an eighth of the
    /// batch's frames is unused, and `uploads` drops what went to their frames. Lanes of one
    /// program grow together; with each refused lane alone leaving, the batch ran with its
    /// frames all taken, its pool empty, and its lanes stopping at every write to a new page
    /// (512 Python lanes in 128 MiB of simulated frames: 5,197 such stops against 189 in
    /// slots that fit).
    pub(super) fn shed(
        &mut self,
        svc: &[u32],
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        if self.feed.is_none() || self.frames.refusals == self.refusals_seen {
            return Ok(());
        }
        self.refusals_seen = self.frames.refusals;
        let target = self.frames.spare();
        let mut unused = self.frames.unused();
        if unused >= target {
            return Ok(());
        }
        let mut lanes: Vec<usize> = svc.iter().map(|&l| l as usize).collect();
        lanes.sort_by_key(|&i| self.lanes[i].lane.retired());
        let mut freed: FxHashSet<u32> = FxHashSet::default();
        for i in lanes {
            if unused >= target {
                break;
            }
            if !self.may_park(i) {
                continue;
            }
            let f = self.park(i)?;
            unused += f.len() as u64;
            freed.extend(f);
        }
        if !freed.is_empty() {
            uploads.retain(|(f, _)| !freed.contains(f));
            self.retire_done();
        }
        Ok(())
    }

    /// Lane `i` leaves the device for want of memory, and waits on the host, in its slot, to
    /// come back when lanes that end free some (`refill`). The host has its whole state: the
    /// lane stopped in this round and was serviced (its registers and written pages came
    /// down), or it has not started. So it gives back its frames, entries and reserve, and
    /// comes back as a lane from a snapshot starts (`setup_again`), its pages going up again;
    /// nothing it ran is lost. Before this, the batch failed, and ran again with fewer lanes
    /// at once from their start. Returns the frames it gave back.
    pub(super) fn park(&mut self, i: usize) -> Result<Vec<u32>, Error> {
        let held = self.lanes[i].own_frames();
        let back: Vec<u64> = self.lanes[i].entries.keys().copied().collect();
        let before = self.frames.free.len();
        self.release_lane(i, true)?;
        let freed = self.frames.free[before..].to_vec();
        let lh = &mut self.lanes[i];
        // (it needs more than it held: it was refused a frame)
        lh.peak_own = lh.peak_own.max(held + 1);
        lh.vacate();
        lh.back = back;
        lh.parked = true;
        lh.parked_bytes = lh.lane.program.mem.private_bytes();
        PARKED_BYTES.fetch_add(lh.parked_bytes, Ordering::Relaxed);
        let f = self.feed.as_mut().expect("may_park checked it");
        f.parked_bytes += lh.parked_bytes;
        f.parked.push_back(i);
        f.parks += 1;
        f.fresh_parks += 1;
        Ok(freed)
    }

    /// The position in `images` of the program `lane` runs.
    fn image_index(&self, lane: &Lane) -> Option<usize> {
        self.images[..self.empty_image].iter().position(|i| {
            i.elf
                .as_ref()
                .is_some_and(|e| Arc::ptr_eq(e, &lane.program.image))
        })
    }

    /// After a round: each lane that ended gives its result and its slot up, and waiting
    /// lanes are set up in the empty slots and join the active lanes, as many as the
    /// device's memory has room for (`room`).
    pub(super) fn refill(&mut self) -> Result<(), Error> {
        let Some(feed) = self.feed.as_mut() else {
            return Ok(());
        };
        for (i, lh) in self.lanes.iter_mut().enumerate() {
            if !lh.done || feed.empty[i] {
                continue;
            }
            let mut r = LaneResult::from_lane(feed.slot_lane[i], &mut lh.lane, lh.host_steps);
            r.private_bytes += lh.ended_private * PAGE_SIZE;
            feed.retired.fetch_add(r.instructions, Ordering::Relaxed);
            feed.ended.push(r);
            feed.empty[i] = true;
            // (its memory is not looked at again: its pages go now, not when a waiting lane
            // takes the slot or the batch ends, so slots that no lane takes again do not
            // hold the pages of every lane that ran in them)
            drop(std::mem::take(&mut lh.lane.program.mem));
        }
        if feed.waiting.is_empty() && feed.parked.is_empty() {
            return Ok(());
        }
        let lanes = &self.lanes;
        let on_device = |(i, e): (usize, &bool)| !*e && !lanes[i].parked;
        let mut running = feed
            .empty
            .iter()
            .enumerate()
            .filter(|&x| on_device(x))
            .count();
        let room = self.room();
        let feed = self.feed.as_ref().expect("checked above");
        // What the running lanes may come to hold: each the most the host saw it hold, or
        // what lanes that ended held at most on average with a quarter more, whichever is
        // more (all growing to the largest lane's peak at once would leave a third of the
        // slots of a Python batch empty)
        let each = self.lane_peaks.typical();
        let mut committed: u64 = feed
            .empty
            .iter()
            .enumerate()
            .filter(|&x| on_device(x))
            .map(|(i, _)| self.lanes[i].peak_own.max(each))
            .sum();
        let feed = self.feed.as_mut().expect("checked above");
        let mut again = Vec::new();
        // lanes that left the device come back first (the first always: nothing else would
        // free memory), each taken to need the most it held; but none while no lane has
        // ended, since until then nothing says how far the running lanes grow (they all
        // began together, and each that came back would push another off: 512 Python lanes
        // in 128 MiB of frames left the device 2,385 times so)
        // (and with an eighth of the batch's frames left over, as `shed` leaves them: lanes
        // brought back to the last frame ran with their pool empty, stopping at writes)
        let spare = self.frames.spare();
        while let Some(&i) = feed.parked.front() {
            let need = self.lanes[i].peak_own.max(each);
            if running > 0 && (self.lane_peaks.n == 0 || committed + need + spare > room) {
                feed.waits += 1;
                break;
            }
            feed.parked.pop_front();
            committed += need;
            running += 1;
            let lh = &mut self.lanes[i];
            lh.parked = false;
            let bytes = std::mem::take(&mut lh.parked_bytes);
            feed.parked_bytes -= bytes;
            PARKED_BYTES.fetch_sub(bytes, Ordering::Relaxed);
            again.push(i);
        }
        let back = again.len();
        let mut blocks: Vec<(usize, [u64; 2])> = Vec::new();
        for i in 0..self.lanes.len() {
            if !feed.empty[i] || feed.waiting.is_empty() || !feed.parked.is_empty() {
                continue;
            }
            // (the first lane always goes: nothing else would free memory)
            if running > 0 && committed + each > room {
                feed.waits += 1;
                break;
            }
            committed += each;
            let Some((number, lane, io)) = feed.waiting.pop_front() else {
                break;
            };
            running += 1;
            let lh = &mut self.lanes[i];
            feed.slot_lane[i] = number;
            feed.empty[i] = false;
            feed.fed += 1;
            again.push(i);
            blocks.push((i, io));
            let old_epoch = lh.epoch;
            let limit = lh.limit;
            *lh = LaneHost::new(lane, 0, i, limit, old_epoch.wrapping_add(1).max(1));
        }
        if again.is_empty() {
            return Ok(());
        }
        for &i in &again[back..] {
            let image = self
                .image_index(&self.lanes[i].lane)
                .expect("checked when the lane began to wait");
            self.lanes[i].image = image;
            if let Some(t) = self.trace_last.get_mut(i) {
                *t = 0;
            }
            if !self.progress_host.is_null() {
                // SAFETY: progress_host holds one counter a lane for the batch's life; the
                // kernel writes it only during a launch, and none runs now.
                unsafe { std::ptr::write_volatile(self.progress_host.add(i), 0) };
            }
        }
        if self.devio && self.d_sysd != 0 {
            for &(i, io) in &blocks {
                let mut b = vec![0u64; SYSD_WORDS];
                sys_block(&self.lanes[i].lane, io, &mut b);
                htod_slice(&*self.dev, self.d_sysd + (i * SYSD_WORDS * 8) as u64, &b)?;
            }
        }
        self.setup_again(&again)?;
        // (those the device had no room for after all wait again)
        let lanes = &self.lanes;
        self.active.extend(
            again
                .iter()
                .filter(|&&i| !lanes[i].parked)
                .map(|&i| i as u32),
        );
        if let Some(f) = self.feed.as_mut() {
            f.fresh_parks = 0;
        }
        self.active.sort_unstable();
        self.active_dirty = true;
        Ok(())
    }

    /// The feed's results: every lane's, in lane order (those still in a slot too).
    pub(super) fn feed_results(&mut self) -> Option<Vec<LaneResult>> {
        let mut feed = self.feed.take()?;
        let mut out = std::mem::take(&mut feed.ended);
        for (i, lh) in self.lanes.iter_mut().enumerate() {
            if feed.empty[i] {
                continue;
            }
            if lh.lane.exit.is_none() {
                lh.lane.exit = Some(armada_core::runner::Exit::InstructionLimit);
            }
            let mut r = LaneResult::from_lane(feed.slot_lane[i], &mut lh.lane, lh.host_steps);
            r.private_bytes += lh.ended_private * PAGE_SIZE;
            out.push(r);
        }
        // (lanes that never had a slot: none once the batch ran to its end)
        for (number, mut lane, _) in feed.waiting.drain(..) {
            lane.exit = Some(armada_core::runner::Exit::Unsupported(
                "not run: its batch ended before a slot was free (a bug in armada)".into(),
            ));
            out.push(LaneResult::from_lane(number, &mut lane, 0));
        }
        out.sort_by_key(|r| r.lane);
        self.feed = Some(feed);
        Some(out)
    }

    /// Instructions all the batch's lanes retired, as their host lanes count them (those
    /// that left their slot included).
    pub fn retired_all(&self) -> u64 {
        let empty = self.feed.as_ref().map(|f| &f.empty[..]);
        let in_slots: u64 = self
            .lanes
            .iter()
            .enumerate()
            .filter(|(i, _)| empty.is_none_or(|e| !e[*i]))
            .map(|(_, l)| l.lane.retired())
            .sum();
        in_slots
            + self
                .feed
                .as_ref()
                .map_or(0, |f| f.retired.load(Ordering::Relaxed))
    }

    /// All the batch's lanes, waiting ones included.
    pub fn lanes_all(&self) -> usize {
        self.lanes_done_of().1
    }

    /// The results of the lanes that have ended (those an earlier batch kept too), taken
    /// out of a batch that feeds its slots and failed: the lanes that had not ended run again
    /// elsewhere. None where the batch does not feed its slots.
    pub fn take_ended(&mut self) -> Option<Vec<LaneResult>> {
        let feed = self.feed.as_mut()?;
        let mut out = std::mem::take(&mut feed.ended);
        for (i, lh) in self.lanes.iter_mut().enumerate() {
            if lh.done && !feed.empty[i] {
                let mut r = LaneResult::from_lane(feed.slot_lane[i], &mut lh.lane, lh.host_steps);
                r.private_bytes += lh.ended_private * PAGE_SIZE;
                out.push(r);
                feed.empty[i] = true;
            }
        }
        Some(out)
    }

    /// Lanes that have ended (of all the batch's, waiting ones included) and all its lanes.
    pub(super) fn lanes_done_of(&self) -> (usize, usize) {
        match &self.feed {
            Some(f) => {
                let in_slots = self
                    .lanes
                    .iter()
                    .zip(&f.empty)
                    .filter(|(l, e)| l.done && !**e)
                    .count();
                (f.ended.len() + in_slots, f.total)
            }
            None => (self.lanes.len() - self.active.len(), self.lanes.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Peaks;

    #[test]
    fn a_lane_to_come_needs_the_mean_peak_and_a_quarter_at_most_the_largest() {
        let mut p = Peaks::default();
        assert_eq!(p.typical(), 0, "no lane ended: nothing known");
        for f in [400, 400, 400, 800] {
            p.add(f);
        }
        assert_eq!((p.max, p.typical()), (800, 625));
        let mut one = Peaks::default();
        one.add(100);
        assert_eq!(one.typical(), 100, "never more than the largest");
    }
}
