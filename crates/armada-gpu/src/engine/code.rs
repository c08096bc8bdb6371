//! The micro-ops the kernel runs, and the regions lanes run them from.
//!
//! At setup each program image's executable areas are decoded once (`setup`). A lane whose
//! executable areas change while it runs (ld.so mapping libc and the other libraries of a
//! dynamically linked program, a `dlopen`) gets its new areas decoded here: an area is
//! decoded once for every lane that maps the same bytes at the same place, which is known
//! from its pages' buffers (a private file mapping's pages are one buffer for every mapper,
//! see `armada-linux/src/mm/filepages.rs`; the decoded area holds them, so a buffer's address
//! is not reused while it stands for that code). A lane's regions are a contiguous run of the
//! region table (`S_REGIONS`: first, count), and lanes with the same areas share one run.
//! An area with a page only its lane holds (code it wrote and made executable) is not
//! decoded: the host runs it, as it runs code outside every region.
//!
//! The table and the micro-ops grow on the host and go to the device whole, into buffers
//! that double when full, between launches.

use crate::device::{htod_slice, DevPtr, Device};
use crate::Error;
use armada_core::memory::{AddressSpace, PageBuf, Perm, PAGE_SHIFT, PAGE_SIZE};
use armada_isa::{decode, ops};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// An area's identity: where it is and the buffers of its pages (0: never written, zeros).
type AreaKey = (u64, u64, Vec<usize>);

/// One decoded area: (start, end, first micro-op), as the region table holds it.
pub(super) type Region = (u64, u64, u64);

#[derive(Default)]
pub(super) struct Code {
    /// The micro-ops (two words each; a sentinel after each region, and one more at the
    /// end, since the kernel loads the micro-op after the one it runs).
    pub(super) ops: Vec<u64>,
    /// The region table (three words a region).
    pub(super) regions: Vec<u64>,
    /// Decoded areas, with the page buffers they were decoded from.
    decoded: FxHashMap<AreaKey, (Region, Vec<Arc<PageBuf>>)>,
    /// Runs of the region table by their regions: the first region's index.
    sets: FxHashMap<Vec<Region>, u32>,
    /// Compare + B.cond pairs fused (`layout::fused`).
    fused: bool,
    /// Words the device buffers hold room for.
    ops_room: usize,
    regions_room: usize,
    /// The device copies are older than the host's.
    stale: bool,
}

/// The executable, non-writable areas of `mem` (what the kernel may run).
pub(super) fn code_areas(mem: &AddressSpace) -> Vec<(u64, u64)> {
    mem.areas()
        .filter(|a| a.2.contains(Perm::X) && !a.2.contains(Perm::W))
        .map(|a| (a.0, a.1))
        .collect()
}

/// The key of area `start..end` of `mem`; None when a page of it is the lane's own (not to
/// be shared). Reads only: the parallel part of a round works keys out for the serial one.
fn area_key(mem: &AddressSpace, start: u64, end: u64) -> Option<AreaKey> {
    let mut ptrs = Vec::with_capacity(((end - start) >> PAGE_SHIFT) as usize + 1);
    for vpn in start >> PAGE_SHIFT..end.div_ceil(PAGE_SIZE) {
        match mem.gpu_page(vpn) {
            None => ptrs.push(0),
            Some((_, true)) => return None,
            Some((d, false)) => ptrs.push(Arc::as_ptr(d) as usize),
        }
    }
    Some((start, end, ptrs))
}

/// The page buffers of area `start..end` that a decoded area holds (so that their addresses,
/// its key, are not reused while it stands).
fn area_pages(mem: &AddressSpace, start: u64, end: u64) -> Vec<Arc<PageBuf>> {
    (start >> PAGE_SHIFT..end.div_ceil(PAGE_SIZE))
        .filter_map(|vpn| mem.gpu_page(vpn).map(|(d, _)| d.clone()))
        .collect()
}

/// An executable area's key (`area_keys`), for `Code::region_keyed`.
pub(super) type CodeArea = AreaKey;

/// The keys of `mem`'s executable areas but those holding a page of the lane's own: what
/// the lane's regions are looked up by (`Code::region_keyed`). Reads only, so it runs on
/// the thread that serviced the lane (a few hundred page lookups an area, which in the
/// serial part showed up for lanes that map libraries and fork).
pub(super) fn area_keys(mem: &AddressSpace) -> Vec<CodeArea> {
    code_areas(mem)
        .into_iter()
        .filter_map(|(start, end)| area_key(mem, start, end))
        .collect()
}

/// The two words of the micro-op of `word` at `addr`, as the kernels read them.
pub(super) fn encode_uop(word: u32, addr: u64) -> [u64; 2] {
    let u = decode(word, addr);
    [u.fields_word(), u.imm]
}

impl Code {
    /// No code yet; `fused`: compare + B.cond pairs in one dispatch.
    pub(super) fn new(fused: bool) -> Code {
        Code {
            // the padding the kernel's look-ahead reads after the last sentinel
            ops: vec![ops::END_OF_REGION as u64, 0],
            fused,
            ..Default::default()
        }
    }

    /// Decodes `bytes` (the code at `start`) as a new region; returns it.
    fn decode(&mut self, start: u64, bytes: &[u8]) -> Region {
        // the end padding goes after the new region
        self.ops.truncate(self.ops.len().saturating_sub(2));
        let first = (self.ops.len() / 2) as u64;
        for (k, w) in bytes.chunks_exact(4).enumerate() {
            let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            self.ops
                .extend_from_slice(&encode_uop(word, start + 4 * k as u64));
        }
        if self.fused {
            crate::layout::fused::fuse(&mut self.ops[2 * first as usize..]);
        }
        for _ in 0..2 {
            self.ops.push(ops::END_OF_REGION as u64);
            self.ops.push(0);
        }
        self.stale = true;
        (start, start + bytes.len() as u64, first)
    }

    /// The region for area `start..end` of `mem`: decoded before for the same pages, or now.
    /// None when the area cannot be read or is the lane's own.
    pub(super) fn region(
        &mut self,
        mem: &mut AddressSpace,
        start: u64,
        end: u64,
    ) -> Option<Region> {
        let key = area_key(mem, start, end)?;
        self.region_keyed(mem, key)
    }

    /// The region for the area of `key` (`area_keys` of `mem`, which has not changed
    /// since): decoded before for the same pages, or now.
    pub(super) fn region_keyed(&mut self, mem: &mut AddressSpace, key: CodeArea) -> Option<Region> {
        if let Some((r, _)) = self.decoded.get(&key) {
            return Some(*r);
        }
        let (start, end) = (key.0, key.1);
        let mut bytes = vec![0u8; (end - start) as usize];
        mem.fetch_bytes(start, &mut bytes).ok()?;
        let r = self.decode(start, &bytes);
        self.decoded.insert(key, (r, area_pages(mem, start, end)));
        Some(r)
    }

    /// The regions of areas `keys` and the `S_REGIONS` word of their run, where every area
    /// is decoded and the run made already (a fork's child, a process back from a switch, a
    /// lane mapping libraries another lane mapped). Reads only, so the threads that service
    /// lanes look their code up themselves; what it does not find is left to
    /// `region_keyed` and `set` in the serial part. (In that part, a fork's lookups were
    /// 1.4 s of 24 on the H200 host for 65,536 lanes of a forking dash script: each hashes
    /// the buffers of every page of libc's code.)
    pub(super) fn lookup(&self, keys: &[CodeArea]) -> Option<(Vec<Region>, u64)> {
        let set: Vec<Region> = keys
            .iter()
            .map(|k| self.decoded.get(k).map(|(r, _)| *r))
            .collect::<Option<_>>()?;
        let first = *self.sets.get(&set)?;
        let word = first as u64 | (set.len() as u64) << 32;
        Some((set, word))
    }

    /// Decodes an image's area at setup, whoever holds its pages (every lane of the image
    /// runs it); registers it for lanes that map the same pages later.
    pub(super) fn image_region(
        &mut self,
        mem: &mut AddressSpace,
        start: u64,
        end: u64,
    ) -> Option<Region> {
        if let Some(r) = self.region(mem, start, end) {
            return Some(r);
        }
        let mut bytes = vec![0u8; (end - start) as usize];
        mem.fetch_bytes(start, &mut bytes).ok()?;
        Some(self.decode(start, &bytes))
    }

    /// The run of the region table holding `set` (made if new): its first index.
    pub(super) fn set(&mut self, set: &[Region]) -> u32 {
        if let Some(&first) = self.sets.get(set) {
            return first;
        }
        let first = (self.regions.len() / 3) as u32;
        for &(s, e, op) in set {
            self.regions.extend_from_slice(&[s, e, op]);
        }
        self.sets.insert(set.to_vec(), first);
        self.stale = true;
        first
    }

    /// Rewrites the first slot of each translated block (block k's at `heads[k]`) to
    /// `tblock` with the block's number in bits 16-47; the device's build holds each slot's
    /// own micro-op.
    pub(super) fn mark_blocks(&mut self, heads: &[u32], tblock: u16) {
        for (k, &h) in heads.iter().enumerate() {
            self.ops[2 * h as usize] = tblock as u64 | (k as u64) << 16;
        }
        self.stale = true;
    }

    pub(super) fn nregions(&self) -> u32 {
        (self.regions.len() / 3) as u32
    }

    /// Brings the device's copies up to date: into the buffers at `*d_ops` and
    /// `*d_regions`, or into new ones twice as large when they are full (the old ones are
    /// freed; nothing runs between launches).
    pub(super) fn upload(
        &mut self,
        dev: &dyn Device,
        d_ops: &mut DevPtr,
        d_regions: &mut DevPtr,
    ) -> Result<(), Error> {
        if !self.stale {
            return Ok(());
        }
        for (words, d, room) in [
            (&self.ops, &mut *d_ops, &mut self.ops_room),
            (&self.regions, &mut *d_regions, &mut self.regions_room),
        ] {
            if words.len() > *room || *d == 0 {
                let want = (words.len().max(4) * 2).max(*room);
                let fresh = dev.alloc(want * 8)?;
                if *d != 0 {
                    dev.free(*d);
                }
                *d = fresh;
                *room = want;
            }
            htod_slice(dev, *d, words)?;
        }
        self.stale = false;
        Ok(())
    }
}
