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
use super::pagetable::HostTable;
use super::{Entry, Image, LaneHost};
use armada_core::memory::Perm;
use rustc_hash::FxHashMap;
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
pub(super) fn drop_spaces(pt: &HostTable, dead: Vec<Space>, out: &mut Applied) {
    for s in dead {
        for e in s.entries.into_values() {
            pt.remove_shared(e.slot, &mut out.dirty);
            if e.private {
                out.freed.push(e.frame);
            }
        }
        out.keys.push(s.key);
    }
}
