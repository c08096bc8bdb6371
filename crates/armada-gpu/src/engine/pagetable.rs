//! The page table and the frame pool: the host's copy of the device page table (`HostTable`,
//! written from the service threads in parallel), the device frames (`Frames`), and their
//! device side: growing the table (`Batch::ensure_pt_room`) and sending pending writes
//! (`Batch::flush_pt`, at each upload). What goes in them is decided in `apply`.

use super::Batch;
use crate::device::{dtoh_vec, htod_slice, DevPtr, Device};
use crate::layout::*;
use crate::Error;
use armada_core::memory::{PAGE_SHIFT, PAGE_SIZE};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Most chunks of the frame pool (1 TiB of frames with the usual 64 MiB chunks).
pub(super) const MAX_CHUNKS: usize = 16384;
/// The frame that holds zeros and is never written.
pub(super) const ZERO_FRAME: u32 = 0;

// ----- host copy of the page table -----------------------------------------------------------

/// The host's copy of the device page table (open addressing, linear probing, as the kernel
/// reads it), each slot's key and value side by side. Lanes are applied in parallel: a key
/// belongs to one lane and only the thread servicing that lane inserts or removes it, so a
/// free slot is claimed with a compare-and-swap and everything else is a relaxed load or
/// store (the parallel section's end orders them for the serial code after it). Written slots
/// are listed (`pending`, or the caller's list); the flush sends each one's contents as they
/// are then, since the order of writes from different threads is not kept.
pub(super) struct HostTable {
    slots: Vec<[AtomicU64; 2]>,
    mask: u64,
    shift: u32,
    used: AtomicU64,
    pub(super) pending: Vec<u64>,
}

impl HostTable {
    pub(super) fn new(slots: u64) -> HostTable {
        const {
            assert!(PT_EMPTY == 0);
            assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());
        };
        // zeroed memory straight from the allocator (the OS maps its pages as they are first
        // touched, by the threads that apply lanes in parallel), rather than every slot of a
        // table of 16M (256 MB) written by one thread at the setup
        let words: Vec<[u64; 2]> = vec![[0u64; 2]; slots as usize];
        let mut words = std::mem::ManuallyDrop::new(words);
        // SAFETY: [AtomicU64; 2] has the size, alignment and bit validity of [u64; 2]
        // (AtomicU64 is documented to have u64's in-memory representation, and is 8-aligned
        // where it exists), so the buffer is reinterpreted with its length and capacity.
        let slots_vec = unsafe {
            Vec::from_raw_parts(
                words.as_mut_ptr().cast::<[AtomicU64; 2]>(),
                words.len(),
                words.capacity(),
            )
        };
        HostTable {
            slots: slots_vec,
            mask: slots - 1,
            shift: 64 - slots.trailing_zeros(),
            used: AtomicU64::new(0),
            pending: Vec::new(),
        }
    }

    pub(super) fn key(&self, s: u64) -> u64 {
        self.slots[s as usize][0].load(Relaxed)
    }

    pub(super) fn val(&self, s: u64) -> u64 {
        self.slots[s as usize][1].load(Relaxed)
    }

    pub(super) fn set_val(&self, s: u64, val: u64) {
        self.slots[s as usize][1].store(val, Relaxed)
    }

    fn find(&self, key: u64) -> Option<u64> {
        let mut s = pt_hash(key, self.shift);
        for _ in 0..=self.mask {
            let k = self.key(s);
            if k == key {
                return Some(s);
            }
            if k == PT_EMPTY {
                return None;
            }
            s = (s + 1) & self.mask;
        }
        None
    }

    /// Sets `key` to `val`, inserting it if needed, and lists the slot in `pending`; returns
    /// the slot. The caller made room (`has_room`).
    pub(super) fn set(&mut self, key: u64, val: u64, force: bool) -> Result<u64, Error> {
        let mut pending = std::mem::take(&mut self.pending);
        let r = self.set_shared(key, val, force, u64::MAX, &mut pending);
        self.pending = pending;
        r?.ok_or_else(|| {
            Error::Device(format!(
                "the device page table is full ({} slots)",
                self.mask + 1
            ))
        })
    }

    /// As `set`, from any thread (for a key of the lane it services), listing a written slot
    /// in `dirty`; `force` lists it even when it already holds the value. None when an
    /// insertion would take the table past `limit` used slots (the serial path grows it).
    pub(super) fn set_shared(
        &self,
        key: u64,
        val: u64,
        force: bool,
        limit: u64,
        dirty: &mut Vec<u64>,
    ) -> Result<Option<u64>, Error> {
        let cap = limit.min(self.mask);
        let take = || {
            if self.used.fetch_add(1, Relaxed) >= cap {
                self.used.fetch_sub(1, Relaxed);
                return false;
            }
            true
        };
        let give_back = || {
            self.used.fetch_sub(1, Relaxed);
        };
        self.insert(key, val, force, dirty, take, give_back)
    }

    /// As `set_shared`, a fresh slot counted against `budget`: counts the caller took from
    /// the table beforehand (`reserve`). Threads that insert at once then do not all update
    /// the one shared count for each entry (on 16 cores that contention made planning
    /// 16,384 lanes' entries cost 0.15 s). None when the budget is spent.
    pub(super) fn set_budgeted(
        &self,
        key: u64,
        val: u64,
        force: bool,
        budget: &mut u64,
        dirty: &mut Vec<u64>,
    ) -> Result<Option<u64>, Error> {
        let left = std::cell::Cell::new(*budget);
        let take = || {
            if left.get() == 0 {
                return false;
            }
            left.set(left.get() - 1);
            true
        };
        let give_back = || left.set(left.get() + 1);
        let r = self.insert(key, val, force, dirty, take, give_back);
        *budget = left.get();
        r
    }

    /// Takes up to `n` counts of used slots for `set_budgeted`, as far as `limit` allows.
    pub(super) fn reserve(&self, n: u64, limit: u64) -> u64 {
        let cap = limit.min(self.mask);
        let mut cur = self.used.load(Relaxed);
        loop {
            let take = n.min(cap.saturating_sub(cur));
            if take == 0 {
                return 0;
            }
            match self
                .used
                .compare_exchange_weak(cur, cur + take, Relaxed, Relaxed)
            {
                Ok(_) => return take,
                Err(c) => cur = c,
            }
        }
    }

    /// Gives back counts `reserve` took that no insertion used.
    pub(super) fn unreserve(&self, n: u64) {
        if n > 0 {
            self.used.fetch_sub(n, Relaxed);
        }
    }

    /// Sets or inserts `key`: a fresh slot is counted by `take` (false: no room, None) and
    /// uncounted by `give_back` when another thread took that slot first.
    fn insert(
        &self,
        key: u64,
        val: u64,
        force: bool,
        dirty: &mut Vec<u64>,
        take: impl Fn() -> bool,
        give_back: impl Fn(),
    ) -> Result<Option<u64>, Error> {
        if let Some(s) = self.find(key) {
            if force || self.val(s) != val {
                self.set_val(s, val);
                dirty.push(s);
            }
            return Ok(Some(s));
        }
        let mut s = pt_hash(key, self.shift);
        for _ in 0..=self.mask {
            let k = self.key(s);
            if k == PT_EMPTY || k == PT_TOMB {
                if k == PT_EMPTY && !take() {
                    return Ok(None);
                }
                let slot = &self.slots[s as usize];
                if slot[0].compare_exchange(k, key, Relaxed, Relaxed).is_ok() {
                    slot[1].store(val, Relaxed);
                    dirty.push(s);
                    return Ok(Some(s));
                }
                // another lane took it first
                if k == PT_EMPTY {
                    give_back();
                }
                continue;
            }
            s = (s + 1) & self.mask;
        }
        Err(Error::Device(format!(
            "the device page table is full ({} slots)",
            self.mask + 1
        )))
    }

    /// Takes free slot `slot` for `key` (the kernel inserted it there already, so it is not
    /// listed to be sent); false when the slot is not free here, which is the host out of
    /// step with the device.
    pub(super) fn take_free(&self, slot: u64, key: u64, val: u64) -> bool {
        let Some(s) = self.slots.get(slot as usize) else {
            return false;
        };
        if s[0]
            .compare_exchange(PT_EMPTY, key, Relaxed, Relaxed)
            .is_err()
        {
            return false;
        }
        s[1].store(val, Relaxed);
        self.used.fetch_add(1, Relaxed);
        true
    }

    /// Whether `more` insertions keep the table at most half full.
    fn has_room(&self, more: u64) -> bool {
        (self.used.load(Relaxed) + more) * 2 <= self.mask + 1
    }

    /// Used slots at which inserting lanes in parallel leave the rest to the serial path.
    pub(super) fn shared_limit(&self) -> u64 {
        (self.mask >> 1) + 1
    }

    /// Removes the entry at `slot`, listing it in `pending`.
    pub(super) fn remove(&mut self, slot: u64) {
        self.forget(slot);
        self.pending.push(slot);
    }

    /// As `remove`, from any thread, listing the slot in `dirty`.
    pub(super) fn remove_shared(&self, slot: u64, dirty: &mut Vec<u64>) {
        self.forget(slot);
        dirty.push(slot);
    }

    /// The whole table as the device holds it (key, value, key, value...).
    pub(super) fn words(&self) -> Vec<u64> {
        self.slots
            .iter()
            .flat_map(|s| [s[0].load(Relaxed), s[1].load(Relaxed)])
            .collect()
    }

    /// As `remove`, leaving the device's copy as it is: for the entries of a lane that ended,
    /// whose keys no lookup asks for again (to other keys' probes a stale key is as good as a
    /// tombstone, and the slot's next owner overwrites it). Tens of thousands of lanes end in
    /// the same round; this saves writing all their entries.
    pub(super) fn forget(&self, slot: u64) {
        let s = &self.slots[slot as usize];
        s[0].store(PT_TOMB, Relaxed);
        s[1].store(0, Relaxed);
    }
}

// ----- frames ------------------------------------------------------------------------------------

pub(super) struct Frames {
    /// log2(frames per chunk): each chunk is one allocation, its frames then their shadows.
    pub(super) shift: u32,
    pub(super) chunks: Vec<DevPtr>,
    pub(super) d_chunks: DevPtr,
    pub(super) next: u64,
    pub(super) free: Vec<u32>,
    pub(super) live: u64,
    pub(super) peak: u64,
    /// Frames waiting in lanes' reserves (live, but no guest page yet).
    pub(super) reserved: u64,
    /// Peak of live frames that hold guest pages (reserves left out).
    pub(super) guest_peak: u64,
    /// The batch's lanes, and the frames of the pages they share (images), for saying how
    /// much each lane had when the device ran out.
    pub(super) lanes: u64,
    pub(super) shared: u64,
    /// Set when an allocation failed for want of device memory (`short`); and how many of
    /// the lanes' did (the pool's own are taken back out, `fill_pool`), for `Batch::shed`.
    pub(super) exhausted: bool,
    pub(super) refusals: u64,
    /// The frames in the batch's pool (`pool`), slot by slot: the last ones, past the slots
    /// the last launch took, are what an allocation takes when the device has no memory
    /// left for another chunk.
    pub(super) pool: Vec<u32>,
    pub(super) pool_taken: usize,
    /// The most chunks the batch may hold, where it shares its device with batches beside
    /// it (`Batch::share_device`), and that share's size in MiB and denominator (the
    /// message of a refusal).
    pub(super) max_chunks: Option<(usize, u64, usize)>,
}

impl Frames {
    /// A free frame. A frame for a lane's reserve is counted in `reserved` before the call.
    pub(super) fn alloc(&mut self, dev: &dyn Device) -> Result<u32, Error> {
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                let f = self.next;
                if f >> self.shift >= self.chunks.len() as u64 {
                    if let Some((most, mib, k)) = self.max_chunks {
                        if self.chunks.len() >= most {
                            if let Some(f) = self.spare_from_pool() {
                                return Ok(f);
                            }
                            let e = Error::Device(format!(
                                "out of memory: {} ({mib} MiB, 1/{k}: the batches beside it \
                                 on the device have the rest)",
                                super::SHARE_REFUSED
                            ));
                            return Err(self.short(e));
                        }
                    }
                    if self.chunks.len() >= MAX_CHUNKS || f > PT_FRAME_MASK {
                        if let Some(f) = self.spare_from_pool() {
                            return Ok(f);
                        }
                        let e =
                            Error::Device("out of device frames (the page table's limit)".into());
                        return Err(self.short(e));
                    }
                    // frames, then their shadows (the bytes the host has, for diffs)
                    let p = match dev.alloc_frames((2 * (PAGE_SIZE << self.shift)) as usize) {
                        Ok(p) => p,
                        Err(e) => {
                            if let Some(f) = self.spare_from_pool() {
                                return Ok(f);
                            }
                            return Err(self.short(e));
                        }
                    };
                    let i = self.chunks.len();
                    self.chunks.push(p);
                    htod_slice(dev, self.d_chunks + 8 * i as u64, &[p])?;
                }
                self.next += 1;
                f as u32
            }
        };
        self.live += 1;
        self.peak = self.peak.max(self.live);
        self.guest_peak = self.guest_peak.max(self.live - self.reserved);
        Ok(f)
    }

    /// A frame the batch's pool holds and no lane took, for an allocation the device has no
    /// memory left for: the pool's spare frames are the lanes' too. It leaves the pool's end
    /// (live already; reserved no longer), so the pool's other slots keep their places.
    fn spare_from_pool(&mut self) -> Option<u32> {
        if self.pool.len() <= self.pool_taken {
            return None;
        }
        let f = self.pool.pop()?;
        self.reserved -= 1;
        self.guest_peak = self.guest_peak.max(self.live - self.reserved);
        Some(f)
    }

    /// `e` (the device out of memory for frames) with what the lanes held then: each lane
    /// needed more than its share of that.
    fn short(&mut self, e: Error) -> Error {
        let Error::Device(m) = e else {
            return e;
        };
        self.exhausted = true;
        self.refusals += 1;
        let own = self.live.saturating_sub(self.shared);
        if self.lanes < 2 || own == 0 {
            return Error::OutOfMemory(m, None);
        }
        let kib = |frames: u64| (frames * PAGE_SIZE) >> 10;
        Error::OutOfMemory(
            format!(
                "{m} (when it ran out, the batch's {} lanes held {} KiB of pages each on \
                 average, and shared {} KiB)",
                self.lanes,
                kib(own.div_ceil(self.lanes)),
                kib(self.shared)
            ),
            None,
        )
    }

    /// Frames the batch has and no one holds: free ones, and those of its chunks not handed
    /// out yet.
    pub(super) fn unused(&self) -> u64 {
        self.free.len() as u64 + self.made().saturating_sub(self.next)
    }

    /// Frames in the batch's chunks.
    fn made(&self) -> u64 {
        (self.chunks.len() as u64) << self.shift
    }

    /// The frames a batch that ran out keeps unused (`Batch::shed`), and that lanes coming
    /// back leave over (`Batch::refill`): an eighth of its frames, so that its pool refills
    /// and its lanes do not stop at their first writes.
    pub(super) fn spare(&self) -> u64 {
        self.made() / 8
    }

    /// `n` frames of lanes' reserves now hold pages of theirs.
    pub(super) fn unreserve(&mut self, n: u64) {
        self.reserved -= n;
        self.guest_peak = self.guest_peak.max(self.live - self.reserved);
    }

    pub(super) fn release(&mut self, f: u32) {
        if f != ZERO_FRAME {
            self.live -= 1;
            self.free.push(f);
        }
    }

    pub(super) fn addr(&self, f: u32) -> DevPtr {
        let f = f as u64;
        self.chunks[(f >> self.shift) as usize] + ((f & ((1 << self.shift) - 1)) << PAGE_SHIFT)
    }

    /// The frame's shadow: the bytes the host mirror has for it.
    pub(super) fn shadow(&self, f: u32) -> DevPtr {
        self.addr(f) + self.shadow_off()
    }

    /// Offset of a frame's shadow from the frame (the second half of its chunk).
    pub(super) fn shadow_off(&self) -> u64 {
        PAGE_SIZE << self.shift
    }
}

impl Batch {
    /// Makes room for `more` page-table entries, doubling the table (on the host and the
    /// device) as often as needed. Dirty-page marks move with their entries.
    pub(super) fn ensure_pt_room(&mut self, more: u64) -> Result<(), Error> {
        if self.pt.has_room(more) {
            return Ok(());
        }
        let t = Instant::now();
        // the new table is made from the host's: it must show every claim first
        let pt = &self.pt;
        self.lanes
            .par_iter_mut()
            .enumerate()
            .try_for_each(|(i, l)| super::apply::apply_claims(l, pt, i))?;
        self.flush_pt()?;
        let dev: &dyn Device = &*self.dev;
        let old_slots = self.pt.mask + 1;
        let live = (0..old_slots)
            .filter(|&s| {
                let k = self.pt.key(s);
                k != PT_EMPTY && k != PT_TOMB
            })
            .count() as u64;
        let mut slots = old_slots * 2;
        while (live + more) * 2 > slots {
            slots *= 2;
        }
        let epochs: Vec<u32> = dtoh_vec(dev, self.d_pt_epoch, old_slots as usize)?;
        let mut nt = HostTable::new(slots);
        let mut new_epochs = vec![0u32; slots as usize];
        for (s, &epoch) in epochs.iter().enumerate() {
            let k = self.pt.key(s as u64);
            if k == PT_EMPTY || k == PT_TOMB {
                continue;
            }
            let ns = nt.set(k, self.pt.val(s as u64), false)?;
            new_epochs[ns as usize] = epoch;
        }
        nt.pending.clear();
        // every entry's slot in the new table: the running space's and the parked ones'
        // (`spaces`) of each lane
        let table = &nt;
        let moved = |key: u64, entries: &mut rustc_hash::FxHashMap<u64, super::Entry>| {
            for (&vpn, e) in entries.iter_mut() {
                if let Some(s) = table.find(pt_key(key, vpn)) {
                    e.slot = s;
                }
            }
        };
        self.lanes.par_iter_mut().for_each(|l| {
            moved(l.space, &mut l.entries);
            for sp in l.spaces.values_mut() {
                moved(sp.key, &mut sp.entries);
            }
        });
        let words = nt.words();
        let d_pt = dev.alloc(slots as usize * 16)?;
        let d_pt_epoch = dev.alloc(slots as usize * 4)?;
        htod_slice(dev, d_pt, &words)?;
        htod_slice(dev, d_pt_epoch, &new_epochs)?;
        dev.free(self.d_pt);
        dev.free(self.d_pt_epoch);
        self.d_pt = d_pt;
        self.d_pt_epoch = d_pt_epoch;
        self.params.pt = d_pt;
        self.params.pt_epoch = d_pt_epoch;
        self.params.pt_mask = slots - 1;
        self.params.pt_shift = 64 - slots.trailing_zeros();
        self.pt = nt;
        if self.d_persist.undo != 0 {
            // Persistent lanes: the undo lists name slots of the old table. The new one was
            // made with every claim the host knew applied (`restart` takes those back itself)
            // and without those of lanes that ended at exit (not kept: lazy again already).
            dev.zero(self.d_persist.undo, self.lanes.len() * UNDO_WORDS * 8)?;
        }
        self.stats.pt_slots = slots;
        self.stats.pt_grows += 1;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Writes pending page-table changes to the device.
    pub(super) fn flush_pt(&mut self) -> Result<(), Error> {
        if self.pt.pending.is_empty() {
            return Ok(());
        }
        // The kernel applies the writes in parallel, each with what the slot holds now (a
        // slot freed by one lane can be taken by another in the same round). A slot listed
        // twice is written twice with the same words, which is harmless; sorting the list to
        // drop them cost more than they do (a million slots a round of 65,536 forking lanes,
        // none of them listed twice).
        let slots = std::mem::take(&mut self.pt.pending);
        let pt = &self.pt;
        let mut writes = vec![0u64; 3 * slots.len()];
        writes
            .par_chunks_mut(3)
            .zip(slots.par_iter())
            .with_min_len(1024)
            .for_each(|(w, &s)| w.copy_from_slice(&[s, pt.key(s), pt.val(s)]));
        let n = writes.len() / 3;
        let stage = self.ensure_stage(writes.len() * 8)?;
        htod_slice(&*self.dev, stage, &writes)?;
        self.dev
            .pt_write(self.d_pt, self.d_pt_epoch, stage, n as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashSet;

    #[test]
    fn host_table_takes_lanes_in_parallel() {
        // 64 lanes insert, update and remove their own keys from many threads at once, in a
        // table small enough that their probes cross; then every key is where `find` says and
        // the flush list covers every slot written.
        let t = HostTable::new(1 << 12);
        let lanes = 64u64;
        let dirty: Vec<Vec<u64>> = (0..lanes)
            .into_par_iter()
            .map(|lane| {
                let mut dirty = Vec::new();
                for vpn in 0..24u64 {
                    let slot = t
                        .set_shared(pt_key(lane, vpn), vpn, false, u64::MAX, &mut dirty)
                        .unwrap()
                        .unwrap();
                    if vpn % 3 == 0 {
                        t.remove_shared(slot, &mut dirty);
                    } else if vpn % 3 == 1 {
                        t.set_shared(pt_key(lane, vpn), vpn + 100, false, u64::MAX, &mut dirty)
                            .unwrap();
                    }
                }
                dirty
            })
            .collect();
        let written: FxHashSet<u64> = dirty.into_iter().flatten().collect();
        for lane in 0..lanes {
            for vpn in 0..24u64 {
                let found = t.find(pt_key(lane, vpn));
                match vpn % 3 {
                    0 => assert_eq!(found, None),
                    r => {
                        let s = found.expect("a key that was set");
                        assert!(written.contains(&s));
                        assert_eq!(t.key(s), pt_key(lane, vpn));
                        assert_eq!(t.val(s), if r == 1 { vpn + 100 } else { vpn });
                    }
                }
            }
        }
        // past the limit (used slots), an insertion is left to the serial path
        let t = HostTable::new(16);
        let mut dirty = Vec::new();
        for vpn in 0..4 {
            assert!(t
                .set_shared(pt_key(0, vpn), 1, false, 4, &mut dirty)
                .unwrap()
                .is_some());
        }
        let before = dirty.len();
        assert_eq!(
            t.set_shared(pt_key(0, 4), 1, false, 4, &mut dirty).unwrap(),
            None
        );
        assert_eq!((dirty.len(), t.used.load(Relaxed)), (before, 4));

        // a budget taken beforehand: fresh slots spend it, an existing key does not, and
        // what is left goes back
        let t = HostTable::new(16);
        let mut budget = t.reserve(3, 8);
        assert_eq!((budget, t.used.load(Relaxed)), (3, 3));
        for vpn in 0..2 {
            assert!(t
                .set_budgeted(pt_key(1, vpn), 7, false, &mut budget, &mut dirty)
                .unwrap()
                .is_some());
        }
        let again = t.set_budgeted(pt_key(1, 0), 8, false, &mut budget, &mut dirty);
        assert!(again.unwrap().is_some());
        assert_eq!(budget, 1);
        t.unreserve(budget);
        assert_eq!(t.used.load(Relaxed), 2);
        // a spent budget leaves the insertion to the serial path; the limit caps a reserve
        let mut none = 0;
        assert_eq!(
            t.set_budgeted(pt_key(1, 9), 1, false, &mut none, &mut dirty)
                .unwrap(),
            None
        );
        assert_eq!(t.reserve(100, 4), 2);
        assert_eq!(t.reserve(1, 4), 0);
    }
}
