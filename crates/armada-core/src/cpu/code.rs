//! Decoded code: micro-ops for the executable areas of one address space.
//!
//! A *region* covers one executable area. Its micro-op array has one slot per instruction
//! word plus an `END_OF_REGION` sentinel, and starts all `NOT_DECODED` (op number 0, so a
//! fresh array is zeroed memory the OS hands out lazily). The interpreter decodes a page of
//! slots the first time it runs into `NOT_DECODED`. A branch inside the region is an index
//! computation; only leaving the region costs a lookup.
//!
//! Regions follow the address space: when one of its executable areas changes
//! (`generation`), every region is dropped and decoded again on demand, and a write to a page whose words were decoded (reported by
//! the address space) resets that page's slots to `NOT_DECODED`.

use crate::memory::{Access, AddressSpace, Fault, PageBuf, Perm, PAGE_SHIFT, PAGE_SIZE};
use armada_isa::{decode, ops, MicroOp};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const WORDS_PER_PAGE: usize = (PAGE_SIZE / 4) as usize;

/// The immediate of the `BRK` a debugger's breakpoint decodes as (see
/// [`CodeCache::set_traps`]); a stop is the debugger's when its PC is one of its addresses.
pub const DEBUG_BRK_IMM: u64 = 0xdb9;

/// `len` slots of `NOT_DECODED` (op number 0) in memory mapped straight from the OS: its
/// pages are zero until touched, and only the pages of code that runs are ever touched,
/// so a large executable area costs nothing up front. (Through the allocator, a process
/// that execs a 1 MB program a thousand times paid for zeroing its whole slot array, in
/// 2 MB transparent huge pages, every time: most of a spawn's cost. Huge pages are turned
/// off for the mapping for the same reason, and MAP_NORESERVE keeps a guest's huge
/// executable mapping from reserving host memory it never touches.)
pub(crate) struct Slots {
    ptr: std::ptr::NonNull<MicroOp>,
    len: usize,
    bytes: usize,
}

// SAFETY: Slots owns its mapping exclusively, like a Vec owns its buffer.
unsafe impl Send for Slots {}
unsafe impl Sync for Slots {}

impl Slots {
    fn zeroed(len: usize) -> Slots {
        const _: () = assert!(ops::NOT_DECODED == 0);
        let bytes = (len.max(1) * std::mem::size_of::<MicroOp>()).next_multiple_of(4096);
        // SAFETY: an anonymous private mapping of `bytes` bytes, checked below; MicroOp is
        // plain integers (#[repr(C)]), so all-zero bytes are a valid value (NOT_DECODED).
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(bytes, 4096).expect("size fits"),
                );
            }
            libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE);
            Slots {
                ptr: std::ptr::NonNull::new_unchecked(p as *mut MicroOp),
                len,
                bytes,
            }
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `zeroed`, unmapped once.
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.bytes);
        }
    }
}

impl std::ops::Deref for Slots {
    type Target = [MicroOp];
    fn deref(&self) -> &[MicroOp] {
        // SAFETY: the mapping holds `len` MicroOps and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [MicroOp] {
        // SAFETY: as above, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

pub(crate) struct Region {
    pub base: u64,
    pub end: u64,
    /// (end - base) / 4 slots and the sentinel.
    pub ops: Slots,
    /// One bit a slot: a block began there while the interpreter ran for a tier (the entry
    /// it was started at, a branch's target, the slot after a branch not taken). A tier
    /// translates only the blocks that ran (see [`CodePage::ran`]).
    pub ran: Vec<u64>,
    /// Whether the area is writable too (then decoded pages are watched for writes).
    writable: bool,
    /// The area's permissions when the region was made.
    perm: Perm,
    /// Each decoded page: its number and the buffer it was decoded from (held, so the
    /// buffer's address names these bytes for as long as the region lives; see
    /// [`CodeCache::recycle`]).
    decoded: HashMap<u64, Arc<PageBuf>>,
}

impl Region {
    /// Whether `mem` has this region's area as it was when the region was made.
    fn area_holds(&self, mem: &AddressSpace) -> bool {
        mem.area_at(self.base) == Some((self.base, self.end, self.perm))
    }

    /// Keeps the decoded pages whose buffers `mem` holds (the same bytes: a region holds
    /// each buffer it decoded, so its address names those bytes) and marks them as code
    /// again where the area is writable; every other page is decoded again when it runs.
    fn keep_pages(&mut self, mem: &mut AddressSpace) {
        let (slots, ran, writable, base) = (&mut self.ops, &mut self.ran, self.writable, self.base);
        self.decoded.retain(|&vpn, buf| {
            let same = mem.page_data(vpn).is_some_and(|b| Arc::ptr_eq(b, buf));
            if same {
                if writable {
                    mem.mark_code_page(vpn);
                }
            } else {
                let first = (((vpn << PAGE_SHIFT) - base) / 4) as usize;
                let n = WORDS_PER_PAGE.min(slots.len() - 1 - first);
                slots[first..first + n].fill(MicroOp::new(ops::NOT_DECODED));
                clear_ran(ran, first, n);
            }
            same
        });
    }
}

/// Regions a code cache keeps parked (see `CodeCache::parked`).
const PARKED: usize = 32;

/// The decoded code of one lane.
#[derive(Default)]
pub struct CodeCache {
    regions: Vec<Region>,
    /// Regions whose areas went or changed, set aside (at most [`PARKED`]) for an area like
    /// theirs to come back: a dynamically linked program's loader maps its libraries one
    /// by one, each a change of the executable areas, and each lane of a batch starts
    /// before its libraries are mapped. Dropping the regions then (an munmap each, and a
    /// new mapping when the library came back) was 16 of each a lane of `sqlite3`, and on
    /// 16 cores every munmap stops every core the batch runs on for a TLB flush.
    parked: Vec<Region>,
    generation: u64,
    /// The memory's `invalidations` the decoded code is from (see
    /// `AddressSpace::invalidate_code`).
    invalidations: u64,
    shared: Option<Arc<DecodedPages>>,
    /// Bumped whenever decoded code is dropped (a region, a page, a recycle), so a tier
    /// that keeps code of its own made from these slots knows to look again.
    epoch: u64,
    /// The tier that runs this code (see [`super::Tier`]); the interpreter when None.
    pub(crate) tier: Option<Arc<dyn super::Tier>>,
    /// That tier's state for this lane.
    tier_state: Option<Box<dyn std::any::Any + Send>>,
    /// A debugger's breakpoints (see [`Self::set_traps`]).
    traps: std::collections::BTreeSet<u64>,
}

/// One page of decoded code, as [`CodeCache::page_ops`] hands it to a tier: its micro-ops
/// (a copy of the slots), its address, and, for code no lane can write, the buffer its
/// bytes are in (equal buffers mean equal code, as for [`DecodedPages`]).
pub struct CodePage {
    pub base: u64,
    pub ops: Vec<MicroOp>,
    pub buffer: Option<Arc<PageBuf>>,
    /// One bit a slot of `ops`: whether a block began there while the interpreter ran for
    /// the tier (see `super::interpret_step`). Code that only ran translated is not marked.
    pub ran: Vec<u64>,
}

impl CodePage {
    /// Whether a block began at slot `i` of the page while it was interpreted.
    pub fn ran_at(&self, i: usize) -> bool {
        self.ran.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
    }
}

/// Decoded pages shared by the lanes of a batch. A page of a read-only executable area is
/// identified by its number and its buffer (lanes of one image share the image's `Arc` page
/// buffers, so equal pointers mean equal bytes); the cache holds the buffer so the pointer
/// cannot be reused while the entry lives. One lane decodes a page, the others copy it.
#[derive(Default)]
pub struct DecodedPages {
    pages: Mutex<HashMap<PageKey, DecodedPage>>,
    /// A tier's store of code made from these pages, shared by the lanes as the pages are.
    tier_store: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

/// (page number, address of the page's shared buffer).
type PageKey = (u64, usize);
/// The page's buffer (held so its address stays unique) and its micro-ops.
type DecodedPage = (Arc<PageBuf>, Arc<[MicroOp]>);

impl DecodedPages {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Number of pages decoded so far.
    pub fn len(&self) -> usize {
        self.pages.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The store a tier keeps with these pages, made by `make` the first time.
    pub fn tier_store(
        &self,
        make: impl FnOnce() -> Arc<dyn std::any::Any + Send + Sync>,
    ) -> Arc<dyn std::any::Any + Send + Sync> {
        self.tier_store.get_or_init(make).clone()
    }
}

/// Clears the bits of slots `first..first + n` (`first` on a page, so on a word).
fn clear_ran(ran: &mut [u64], first: usize, n: usize) {
    let end = (first + n).div_ceil(64).min(ran.len());
    if let Some(w) = ran.get_mut(first / 64..end) {
        w.fill(0);
    }
}

impl CodeCache {
    /// An empty cache, run by the process's default tier (see [`super::set_default_tier`]).
    pub fn new() -> Self {
        CodeCache {
            tier: super::default_tier(),
            ..Self::default()
        }
    }

    /// A cache that takes decoded pages of read-only code from `shared` and adds the ones it
    /// decodes itself, so the lanes of a batch decode each page once.
    pub fn with_shared(shared: Arc<DecodedPages>) -> Self {
        CodeCache {
            shared: Some(shared),
            ..Self::new()
        }
    }

    /// Sets the tier that runs this code (None: the interpreter).
    pub fn set_tier(&mut self, tier: Option<Arc<dyn super::Tier>>) {
        self.tier = tier;
        self.tier_state = None;
    }

    /// The tier that runs this code (None: the interpreter).
    pub fn tier(&self) -> Option<&Arc<dyn super::Tier>> {
        self.tier.as_ref()
    }

    /// Sets a debugger's breakpoints: the instruction at each address decodes as a `BRK`
    /// (the interpreter stops there with `Stop::Breakpoint`, the PC at it, nothing done) while
    /// memory keeps the program's own bytes, so the guest and the debugger read its code as
    /// it is. Pages whose breakpoints changed are decoded again; pages with breakpoints are
    /// neither taken from nor given to the pages shared with other lanes. A compare fused
    /// with the branch after it is not fused where that branch has a breakpoint, so the
    /// stop comes between them.
    pub fn set_traps(&mut self, traps: &std::collections::BTreeSet<u64>) {
        if *traps == self.traps {
            return;
        }
        let changed: std::collections::BTreeSet<u64> = self
            .traps
            .symmetric_difference(traps)
            .map(|a| a >> PAGE_SHIFT)
            .collect();
        self.traps = traps.clone();
        for vpn in changed {
            self.invalidate_page(vpn);
        }
        // (parked pages were decoded with the old breakpoints)
        self.parked.clear();
    }

    /// The debugger's breakpoints (see [`Self::set_traps`]).
    pub fn traps(&self) -> &std::collections::BTreeSet<u64> {
        &self.traps
    }

    /// Takes the tier's state for this lane out (to be put back with `put_tier_state`).
    pub fn take_tier_state(&mut self) -> Option<Box<dyn std::any::Any + Send>> {
        self.tier_state.take()
    }

    pub fn put_tier_state(&mut self, s: Box<dyn std::any::Any + Send>) {
        self.tier_state = Some(s);
    }

    /// The pages shared with other lanes, if any.
    pub fn shared(&self) -> Option<&Arc<DecodedPages>> {
        self.shared.as_ref()
    }

    /// Changes whenever decoded code is dropped.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Drops what writes to decoded code and changes to executable areas made stale (as the
    /// interpreter does before it looks code up), moving `epoch` if anything went.
    pub fn sync(&mut self, mem: &mut AddressSpace) {
        self.revalidate(mem);
    }

    /// Drops regions that no longer match the address space's areas, and stale pages.
    fn revalidate(&mut self, mem: &mut AddressSpace) {
        for vpn in mem.take_code_write() {
            self.invalidate_page(vpn);
        }
        if self.generation != mem.generation() {
            // An executable area changed: what was decoded is kept where its area and its
            // pages' buffers are as they were
            self.settle_regions(mem);
            self.epoch += 1;
        }
    }

    /// Keeps each region whose area `mem` still has as it was, with the decoded pages whose
    /// buffers `mem` still holds, and parks the others (see [`Self::parked`]).
    fn settle_regions(&mut self, mem: &mut AddressSpace) {
        self.generation = mem.generation();
        // Code changed behind the engines' back, or flat memory, whose pages have no
        // buffers to tell them by: nothing decoded is kept.
        if self.invalidations != mem.invalidations() || mem.flat().is_some() {
            self.invalidations = mem.invalidations();
            self.regions.clear();
            self.parked.clear();
            return;
        }
        let (keep, park): (Vec<Region>, Vec<Region>) = std::mem::take(&mut self.regions)
            .into_iter()
            .partition(|r| r.area_holds(mem));
        self.regions = keep;
        for r in &mut self.regions {
            r.keep_pages(mem);
        }
        for r in park {
            if self.parked.len() == PARKED {
                self.parked.remove(0);
            }
            self.parked.push(r);
        }
    }

    /// Brings the decoded code up to date with `mem`, the memory it was decoded from (its
    /// writes to decoded pages, its changed executable areas), before it is kept for
    /// [`Self::recycle`] into another process's memory.
    pub(crate) fn settle(&mut self, mem: &mut AddressSpace) {
        self.revalidate(mem);
    }

    /// The page buffer [`Self::page_ops`] would give for `pc` (None: writable code, or no
    /// code there), without decoding or copying anything: a tier's key for what it has
    /// already made of that page.
    /// Borrowed, not cloned: every lane of a batch shares the buffer, and a clone is a
    /// change of its reference count on every core that runs one.
    pub fn page_buffer<'m>(
        &mut self,
        pc: u64,
        mem: &'m mut AddressSpace,
    ) -> Option<&'m Arc<PageBuf>> {
        let ri = self.region_for(pc, mem).ok()?;
        if self.regions[ri].writable {
            return None;
        }
        mem.page_data(pc >> PAGE_SHIFT)
    }

    /// The decoded page holding `pc` (decoded now if it was not), for a tier that makes
    /// code of its own from the micro-ops. Fails as the interpreter's fetch would.
    pub fn page_ops(&mut self, pc: u64, mem: &mut AddressSpace) -> Result<CodePage, Fault> {
        let ri = self.region_for(pc, mem)?;
        let r = &self.regions[ri];
        let page = pc & !(PAGE_SIZE - 1);
        let first = ((page.max(r.base) - r.base) / 4) as usize;
        let last = (((page + PAGE_SIZE).min(r.end) - r.base) / 4) as usize;
        if r.ops[first..last].iter().any(|u| u.op == ops::NOT_DECODED) {
            self.decode_page(ri, first, mem)?;
        }
        let r = &self.regions[ri];
        let buffer = if r.writable {
            None
        } else {
            mem.page_data(page >> PAGE_SHIFT).cloned()
        };
        // a region starts on a page, so a page's bits start on a word
        Ok(CodePage {
            base: r.base + first as u64 * 4,
            ops: r.ops[first..last].to_vec(),
            buffer,
            ran: r.ran[first / 64..last.div_ceil(64)].to_vec(),
        })
    }

    /// Resets the slots of page `vpn` so they are decoded again before they run.
    pub fn invalidate_page(&mut self, vpn: u64) {
        self.epoch += 1;
        let addr = vpn << PAGE_SHIFT;
        for r in &mut self.regions {
            if addr >= r.base && addr < r.end {
                let first = ((addr - r.base) / 4) as usize;
                let n = WORDS_PER_PAGE.min(r.ops.len() - 1 - first);
                r.ops[first..first + n].fill(MicroOp::new(ops::NOT_DECODED));
                clear_ran(&mut r.ran, first, n);
            }
        }
    }

    /// Readies this cache, left by a lane that has ended, for another lane whose memory
    /// `mem` holds mostly the same code (lanes restored from one snapshot): a region stays
    /// where `mem` has the same executable area, and a decoded page stays where `mem` has
    /// the very buffer it was decoded from (same bytes); every other page is decoded again
    /// when it runs. Saves each new lane the region mappings and the page copies.
    pub fn recycle(&mut self, mem: &mut AddressSpace) {
        self.epoch += 1;
        let _ = mem.take_code_write();
        self.settle_regions(mem);
    }

    /// Drops every decoded micro-op.
    pub fn clear(&mut self) {
        self.regions.clear();
        self.parked.clear();
        self.epoch += 1;
    }

    /// The index of the region holding `pc`, creating it if `pc` is in an executable area.
    pub(crate) fn region_for(&mut self, pc: u64, mem: &mut AddressSpace) -> Result<usize, Fault> {
        self.revalidate(mem);
        if let Some(i) = self.regions.iter().position(|r| pc >= r.base && pc < r.end) {
            return Ok(i);
        }
        let fault = |mapped| Fault {
            addr: pc,
            access: Access::Execute,
            mapped,
        };
        let (start, end, perm) = mem.area_at(pc).ok_or(fault(false))?;
        if !perm.contains(Perm::X) {
            return Err(fault(true));
        }
        if let Some(k) = self
            .parked
            .iter()
            .rposition(|r| (r.base, r.end, r.perm) == (start, end, perm))
        {
            let mut r = self.parked.remove(k);
            r.keep_pages(mem);
            self.regions.push(r);
            return Ok(self.regions.len() - 1);
        }
        let n = ((end - start) / 4) as usize;
        let mut slots = Slots::zeroed(n + 1);
        slots[n] = MicroOp::new(ops::END_OF_REGION);
        self.regions.push(Region {
            base: start,
            end,
            ops: slots,
            ran: vec![0; (n + 1).div_ceil(64)],
            writable: perm.contains(Perm::W),
            perm,
            decoded: HashMap::new(),
        });
        Ok(self.regions.len() - 1)
    }

    pub(crate) fn region(&self, i: usize) -> &Region {
        &self.regions[i]
    }

    /// Marks a block as begun at `pc` (see [`Region::ran`]), for a tier whose first tier
    /// ran it rather than the interpreter (quick blocks under units): units follow
    /// branches only to blocks that ran, and without the marks a unit made over code that
    /// ran as quick blocks held its entry's block alone.
    pub fn mark_ran(&mut self, pc: u64) {
        if let Some(r) = self.regions.iter_mut().find(|r| pc >= r.base && pc < r.end) {
            let i = ((pc - r.base) / 4) as usize;
            if let Some(w) = r.ran.get_mut(i / 64) {
                *w |= 1 << (i % 64);
            }
        }
    }

    /// Region `i`'s slots, and its bits of where blocks ran, to be marked.
    pub(crate) fn region_ran(&mut self, i: usize) -> (&[MicroOp], &mut [u64]) {
        let r = &mut self.regions[i];
        (&r.ops, &mut r.ran)
    }

    /// Decodes the page of region `i` that holds slot `idx`.
    pub(crate) fn decode_page(
        &mut self,
        i: usize,
        idx: usize,
        mem: &mut AddressSpace,
    ) -> Result<(), Fault> {
        let r = &mut self.regions[i];
        let first = idx & !(WORDS_PER_PAGE - 1);
        let addr = r.base + (first as u64) * 4;
        let page = mem.fetch_page(addr)?;
        let n = WORDS_PER_PAGE.min(r.ops.len() - 1 - first);
        let vpn = addr >> PAGE_SHIFT;
        if let Some(buf) = mem.page_data(vpn) {
            r.decoded.insert(vpn, buf.clone());
        }
        let page_end = addr + n as u64 * 4;
        let trapped = self.traps.range(addr..page_end).next().is_some();
        let shared = match (&self.shared, r.writable || trapped) {
            (Some(s), false) => mem.page_data(vpn).map(|p| (s, p.clone())),
            _ => None,
        };
        if let Some((cache, buf)) = &shared {
            let key = (vpn, Arc::as_ptr(buf) as usize);
            if let Some((_, ops)) = cache.pages.lock().ok().and_then(|p| p.get(&key).cloned()) {
                r.ops[first..first + n].copy_from_slice(&ops[..n]);
                return Ok(());
            }
        }
        for k in 0..n {
            let word = u32::from_le_bytes(page[k * 4..k * 4 + 4].try_into().unwrap());
            r.ops[first + k] = decode(word, addr + (k as u64) * 4);
        }
        // Bitfield moves become shift pairs, and compare-and-branch pairs one dispatch (see
        // `fused`); a pair never spans pages, so invalidating a page takes both halves.
        for k in 0..n {
            if let Some(u) = super::fused::bitfield(&r.ops[first + k]) {
                r.ops[first + k] = u;
            }
        }
        for &at in self.traps.range(addr..page_end) {
            if at & 3 == 0 {
                r.ops[first + ((at - addr) / 4) as usize] =
                    MicroOp::new(ops::BRK).imm(DEBUG_BRK_IMM);
            }
        }
        for k in 0..n.saturating_sub(1) {
            if r.ops[first + k + 1].op == ops::B_COND {
                if let Some(f) = super::fused::with_branch(r.ops[first + k].op) {
                    r.ops[first + k].op = f;
                }
            }
        }
        if r.writable {
            mem.mark_code_page(vpn);
        }
        if let Some((cache, buf)) = shared {
            let key = (vpn, Arc::as_ptr(&buf) as usize);
            let ops: Arc<[MicroOp]> = r.ops[first..first + n].into();
            if let Ok(mut p) = cache.pages.lock() {
                p.insert(key, (buf, ops));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x40_0000;

    /// A page of code holding `word` in every slot.
    fn code_page(word: u32) -> Arc<PageBuf> {
        let mut d = [0u8; PAGE_SIZE as usize];
        for c in d.chunks_mut(4) {
            c.copy_from_slice(&word.to_le_bytes());
        }
        Arc::new(PageBuf::from_bytes(&d))
    }

    fn map(mem: &mut AddressSpace, page: &Arc<PageBuf>) {
        mem.map(BASE, PAGE_SIZE, Perm::RX).unwrap();
        mem.share_page(BASE >> PAGE_SHIFT, page.clone());
    }

    /// Code changed behind the engines' back (a raw view of flat memory, then
    /// `invalidate_code`, as the Python API does) is decoded again: nothing is kept.
    #[test]
    fn invalidated_code_is_decoded_again() {
        let mut mem = AddressSpace::with_flat(0, 0x10000, Perm::RWX).unwrap();
        mem.flat_mut().unwrap().1[..4].copy_from_slice(&0xd503_201fu32.to_le_bytes());
        let mut code = CodeCache::new();
        let first = code.page_ops(0, &mut mem).unwrap().ops[0];
        mem.flat_mut().unwrap().1[..4].copy_from_slice(&0xd420_0000u32.to_le_bytes());
        mem.invalidate_code();
        let other = code.page_ops(0, &mut mem).unwrap().ops[0];
        assert_ne!(
            other.op, first.op,
            "code changed through a raw view ran as it was"
        );
    }

    /// An area of code that goes and comes back (a library unmapped and mapped again, a
    /// lane recycled before its loader maps its libraries) gets its parked region back,
    /// with the pages decoded from the same buffers and no page whose bytes changed.
    #[test]
    fn a_region_whose_area_comes_back_keeps_only_its_unchanged_pages() {
        let (nop, brk) = (code_page(0xd503_201f), code_page(0xd420_0000));
        let mut mem = AddressSpace::new();
        let mut code = CodeCache::new();
        map(&mut mem, &nop);
        let first = code.page_ops(BASE, &mut mem).unwrap().ops[0];
        mem.unmap(BASE, PAGE_SIZE).unwrap();
        map(&mut mem, &nop);
        let again = code.page_ops(BASE, &mut mem).unwrap().ops[0];
        assert_eq!(again, first);
        assert_eq!((code.regions.len(), code.parked.len()), (1, 0));
        assert!(
            code.regions[0].decoded.contains_key(&(BASE >> PAGE_SHIFT)),
            "the page was decoded again, not kept"
        );
        mem.unmap(BASE, PAGE_SIZE).unwrap();
        map(&mut mem, &brk);
        let other = code.page_ops(BASE, &mut mem).unwrap().ops[0];
        assert_ne!(
            other.op, first.op,
            "a parked page ran with another page's bytes"
        );
        // and a recycled cache into memory with other bytes there
        let mut fresh = AddressSpace::new();
        map(&mut fresh, &nop);
        code.recycle(&mut fresh);
        assert_eq!(code.page_ops(BASE, &mut fresh).unwrap().ops[0], first);
    }
}
