//! A lane's address spaces on the device: one for each of its processes.
//!
//! The page table is keyed by (space, page), and the lane's record names the space its
//! running process has (`S_SPACE`): a lane's first process has the lane's number, and every
//! address space a fork or an exec makes gets a key of its own (`SpaceKeys`). The entries of
//! a process that is not running stay in the table under its key, so a switch between
//! processes (which the lane's scheduler makes at a stop, as on the CPU engine) is the
//! record's word and the entries of the pages the host wrote meanwhile, not a new table.
//!
//! The host keeps the running space's entries in `LaneHost::entries`, and each other one's
//! in `LaneHost::spaces` by its address space's identity (`AddressSpace::space_id`), with
//! the areas, code regions and image it had when it stopped running. A parked process's
//! memory keeps recording what the host writes to it (a signal frame, a pipe read's bytes,
//! shared memory coming in), so that when it runs again those pages go up and nothing else.
//! A new space (a fork's child, an exec's image) starts with every page it has planned, as
//! a lane's first does; a space no live process runs on any more gives its entries, frames
//! and key back.

use super::apply::Applied;
use super::pagetable::{HostTable, ZERO_FRAME};
use super::{Entry, Image, LaneHost};
use crate::layout::*;
use crate::Error;
use armada_core::memory::Perm;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// A space whose process is not running now.
pub(super) struct Space {
    pub(super) key: u64,
    pub(super) entries: FxHashMap<u64, Entry>,
    /// Its areas when it stopped running (what the entries were planned from).
    pub(super) areas: Vec<(u64, u64, Perm)>,
    pub(super) code: Vec<(u64, u64)>,
    pub(super) regions: u64,
    pub(super) image: usize,
}

/// The page-table keys of the spaces after the lanes' first: taken from `next` up, and
/// given back when a space is dropped (its entries removed from the device's table too,
/// since a key used again must find none of them).
pub(super) struct SpaceKeys {
    next: AtomicU64,
    /// Keys from `end` up are the images'.
    end: u64,
    free: Mutex<Vec<u64>>,
}

impl SpaceKeys {
    /// Keys `first..end` (the lanes have the ones below `first`).
    pub(super) fn new(first: u64, end: u64) -> SpaceKeys {
        SpaceKeys {
            next: AtomicU64::new(first),
            end,
            free: Mutex::new(Vec::new()),
        }
    }

    /// A key for a new space; None when every key is in use.
    pub(super) fn take(&self) -> Option<u64> {
        if let Some(k) = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Some(k);
        }
        let k = self.next.fetch_add(1, Relaxed);
        (k < self.end).then_some(k)
    }

    pub(super) fn give_back(&self, keys: impl IntoIterator<Item = u64>) {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(keys);
    }
}

/// How the lane's running space changed in a service.
pub(super) enum Followed {
    /// The same process's space, or another of the same space (threads; a vfork child).
    Same,
    /// A space that ran before: the areas its entries were planned from.
    Back(Vec<(u64, u64, Perm)>),
    /// A space never run on the device (its entries are to be planned whole).
    New,
}

/// The index of the image `lh`'s running program was loaded from (its pages are that
/// image's shared ones), or `empty` (the batch's image without pages) for a program the
/// batch did not start with (an exec's).
fn image_of(lh: &LaneHost, images: &[Image], empty: usize) -> usize {
    let elf = &lh.lane.program.image;
    images
        .iter()
        .position(|i| i.elf.as_ref().is_some_and(|e| Arc::ptr_eq(e, elf)))
        .unwrap_or(empty)
}

/// Follows the lane's running space after a service: when its process switched (or
/// exec'd), the outgoing space is parked with `before` (its areas), and the incoming one
/// is taken from the parked ones or made. Err: no key is left for a new space.
pub(super) fn follow(
    lh: &mut LaneHost,
    before: &[(u64, u64, Perm)],
    images: &[Image],
    empty: usize,
    keys: &SpaceKeys,
) -> Result<Followed, String> {
    let id = lh.lane.program.mem.space_id();
    if id == lh.space_mem {
        return Ok(Followed::Same);
    }
    let incoming = lh.spaces.remove(&id);
    let key = match &incoming {
        Some(s) => s.key,
        None => keys.take().ok_or_else(|| {
            "the device page table has no key left for another address space (too many \
             processes at once in the batch)"
                .to_string()
        })?,
    };
    let out = Space {
        key: lh.space,
        entries: std::mem::take(&mut lh.entries),
        areas: before.to_vec(),
        code: std::mem::take(&mut lh.code),
        regions: lh.regions,
        image: lh.image,
    };
    lh.spaces.insert(lh.space_mem, out);
    lh.space_mem = id;
    lh.space = key;
    Ok(match incoming {
        Some(s) => {
            lh.entries = s.entries;
            lh.code = s.code;
            lh.regions = s.regions;
            lh.image = s.image;
            Followed::Back(s.areas)
        }
        None => {
            // (a fork's copy may carry its parent's record of host writes: the whole space
            // is planned instead)
            lh.lane.program.mem.gpu_take_written_keep();
            lh.regions = 0;
            lh.image = image_of(lh, images, empty);
            Followed::New
        }
    })
}

/// Spaces no live process of the lane runs on any more (an exec replaced it, its process
/// ended): taken out of `lh.spaces`, for `drop_spaces`.
pub(super) fn dead_spaces(lh: &mut LaneHost) -> Vec<Space> {
    if lh.spaces.is_empty() {
        return Vec::new();
    }
    let live = lh.lane.space_ids();
    let dead: Vec<u64> = lh
        .spaces
        .keys()
        .copied()
        .filter(|id| !live.contains(id))
        .collect();
    dead.into_iter()
        .filter_map(|id| lh.spaces.remove(&id))
        .collect()
}

/// Removes dead spaces' entries from the table (listing the slots in `out.dirty`) and
/// gives their frames (`out.freed`) and keys (`out.keys`) back.
pub(super) fn drop_spaces(pt: &HostTable, lh: &mut LaneHost, dead: Vec<Space>, out: &mut Applied) {
    for s in dead {
        for e in s.entries.into_values() {
            pt.remove_shared(e.slot, &mut out.dirty);
            if e.private {
                out.freed.push(e.frame);
            }
            out.freed.extend(lh.unshare(&e));
        }
        out.keys.push(s.key);
    }
}

/// How `adopt_space` left one forked child.
pub(super) enum Adopted {
    /// Its space is on the device, sharing its parent's frames.
    Done,
    /// Not adopted: it is planned whole when it runs (its areas are not its parent's).
    Skipped,
    /// Not adopted, nothing changed: the table has no room for its entries, this many (the
    /// serial path makes room and tries again).
    NoRoom(u64),
    /// No space key is left (it is planned whole when it runs, which says what is missing).
    NoKey,
}

/// The children of lane `l`'s running process that have no space on the device yet.
fn unadopted(l: &LaneHost) -> Vec<u64> {
    let ids = l.lane.space_ids();
    ids[1..]
        .iter()
        .copied()
        .filter(|id| !l.spaces.contains_key(id))
        .collect()
}

/// Gives the process `id` that the lane's running one forked in the last service a space on
/// the device that shares its parent's frames, copy on write, as Linux shares the pages: the
/// parent's own frames become frames of both (`Entry::cow`), lazy where writable, so that
/// either one's first write copies the page on the device (a claim) and the other keeps the
/// frame. The child's entries are the parent's but for the pages whose bytes may differ:
/// those the last service planned anew (`excluded`: its parent's entries for them may not
/// be applied yet), and those whose buffer is not the parent's any more (the host wrote one
/// of the two since the fork). Those get an entry that blocks them (a miss, resolved against
/// the child's memory when it runs), so that neither a stale frame nor the image's page
/// shows through; the child's pages of those the host wrote go up before it first runs. From
/// here on the child's memory records what the host writes to it, which goes up when it first
/// runs.
///
/// From any thread, for the lane it services (the table's insertions are counted against a
/// budget taken for all of the child's entries, once they are known and before any is
/// written: `NoRoom` when there is none); written slots are listed in `out.dirty`.
pub(super) fn adopt_space(
    pt: &HostTable,
    keys: &SpaceKeys,
    l: &mut LaneHost,
    id: u64,
    excluded: &FxHashSet<u64>,
    out: &mut Applied,
) -> Result<Adopted, Error> {
    let (regions, code, image) = (l.regions, l.code.clone(), l.image);
    let Some((pmem, cmem)) = l.lane.with_parked_space(id) else {
        return Ok(Adopted::Skipped);
    };
    let areas: Vec<(u64, u64, Perm)> = cmem.areas().collect();
    if !pmem.areas().eq(areas.iter().copied()) {
        // not a copy of the running process's space (its entries' permissions are its
        // areas'): planned whole when it runs
        return Ok(Adopted::Skipped);
    }
    let same = |vpn: u64| match (pmem.gpu_page(vpn), cmem.gpu_page(vpn)) {
        (None, None) => true,
        (Some((a, _)), Some((b, _))) => Arc::ptr_eq(a, b),
        _ => false,
    };
    // Both have the page, with other bytes in the child: the host wrote the child's copy at
    // the fork (its tid, CLONE_CHILD_SETTID, in its thread block), since the parent's pages
    // the host wrote are planned anew (`excluded`). The page counts as written to the child
    // since, so it goes up (a frame of the child's own, with its bytes) before the child
    // first runs, over the entry that blocks it, instead of a miss at the child's first touch.
    let written_by_host = |vpn: u64| {
        matches!((pmem.gpu_page(vpn), cmem.gpu_page(vpn)),
            (Some((a, _)), Some((b, _))) if !Arc::ptr_eq(a, b))
    };
    let mut host_written: Vec<u64> = Vec::new();
    let mut vals: Vec<(u64, u64, Entry)> = Vec::with_capacity(l.entries.len());
    let mut convert: Vec<u64> = Vec::new();
    for (&vpn, e) in &l.entries {
        if excluded.contains(&vpn) || !same(vpn) {
            if !excluded.contains(&vpn) && written_by_host(vpn) {
                host_written.push(vpn);
            }
            vals.push((vpn, ZERO_FRAME as u64, blocked(e.slot)));
            continue;
        }
        if e.private {
            convert.push(vpn);
        }
        vals.push((vpn, pt.val(e.slot), *e));
    }
    // the child's pages the parent maps through its image or not at all, whose buffer is
    // not the parent's; and the pages planned anew that the parent has no entry for yet
    for (vpn, _, _) in cmem.gpu_pages() {
        if !l.entries.contains_key(&vpn) && !excluded.contains(&vpn) && !same(vpn) {
            if written_by_host(vpn) {
                host_written.push(vpn);
            }
            vals.push((vpn, ZERO_FRAME as u64, blocked(0)));
        }
    }
    for &vpn in excluded {
        if !l.entries.contains_key(&vpn) {
            vals.push((vpn, ZERO_FRAME as u64, blocked(0)));
        }
    }
    let need = vals.len() as u64;
    let mut budget = pt.reserve(need, pt.shared_limit());
    if budget < need {
        pt.unreserve(budget);
        return Ok(Adopted::NoRoom(need));
    }
    let Some(key) = keys.take() else {
        pt.unreserve(budget);
        return Ok(Adopted::NoKey);
    };
    cmem.gpu_track_writes_keep();
    for vpn in host_written {
        cmem.gpu_note_written(vpn, None);
    }
    // the parent's own frames become the two spaces' (lazy where writable)
    for vpn in convert {
        let e = l.entries.get_mut(&vpn).expect("listed above");
        let perms = pt.val(e.slot) & (PT_R | PT_W);
        let nv = e.frame as u64 | perms | if perms & PT_W != 0 { PT_LAZY } else { 0 };
        e.private = false;
        e.lazy = perms & PT_W != 0;
        e.cow = true;
        l.cow.insert(e.frame, 1);
        pt.set_val(e.slot, nv);
        out.dirty.push(e.slot);
    }
    let mut entries = FxHashMap::default();
    entries.reserve(vals.len());
    for (vpn, val, e) in vals {
        let (val, e) = if e.private {
            // (converted above: the value the parent has now)
            let pe = l.entries[&vpn];
            (pt.val(pe.slot), pe)
        } else {
            (val, e)
        };
        if e.cow {
            *l.cow.entry(e.frame).or_insert(0) += 1;
        }
        let slot = pt
            .set_budgeted(pt_key(key, vpn), val, false, &mut budget, &mut out.dirty)?
            .ok_or_else(|| {
                Error::Device(format!(
                    "a forked child's entries took more than the {need} table slots counted for them (an engine bug)"
                ))
            })?;
        entries.insert(vpn, Entry { slot, ..e });
    }
    pt.unreserve(budget);
    l.spaces.insert(
        id,
        Space {
            key,
            entries,
            areas,
            code,
            regions,
            image,
        },
    );
    Ok(Adopted::Done)
}

/// Adopts the children lane `l`'s running process forked (`adopt_space`) on the thread that
/// serviced it; returns `excluded` when some are left for the serial path (no table room).
pub(super) fn adopt_forks_shared(
    pt: &HostTable,
    keys: &SpaceKeys,
    l: &mut LaneHost,
    excluded: Vec<u64>,
    out: &mut Applied,
) -> Result<Option<Vec<u64>>, Error> {
    let set: FxHashSet<u64> = excluded.iter().copied().collect();
    for id in unadopted(l) {
        match adopt_space(pt, keys, l, id, &set, out)? {
            Adopted::Done | Adopted::Skipped => {}
            Adopted::NoKey => return Ok(None),
            Adopted::NoRoom(_) => return Ok(Some(excluded)),
        }
    }
    Ok(None)
}

impl super::Batch {
    /// The serial path of `adopt_forks_shared`: the children of lane `i`'s running process
    /// that had no table room in the parallel part get it here.
    pub(super) fn adopt_forks(&mut self, i: usize, excluded: &[u64]) -> Result<(), Error> {
        let set: FxHashSet<u64> = excluded.iter().copied().collect();
        for id in unadopted(&self.lanes[i]) {
            // (twice at most: the second time with room for the entries the first one counted)
            for attempt in 0..2 {
                let mut out = Applied::default();
                let r = adopt_space(
                    &self.pt,
                    &self.space_keys,
                    &mut self.lanes[i],
                    id,
                    &set,
                    &mut out,
                );
                self.pt.pending.extend_from_slice(&out.dirty);
                match r? {
                    Adopted::Done | Adopted::Skipped => break,
                    Adopted::NoKey => return Ok(()),
                    Adopted::NoRoom(need) if attempt == 0 => self.ensure_pt_room(need)?,
                    Adopted::NoRoom(need) => {
                        return Err(Error::Device(format!(
                            "the device page table has no room for a forked child's {need} entries after growing (an engine bug)"
                        )))
                    }
                }
            }
        }
        Ok(())
    }
}

/// An entry that maps nothing (perms 0 on the zero frame): the kernel misses on it, and the
/// image's page does not show through.
fn blocked(slot: u64) -> Entry {
    Entry {
        slot,
        frame: ZERO_FRAME,
        private: false,
        lazy: false,
        cow: false,
    }
}
