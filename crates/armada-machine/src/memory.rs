//! Guest address space: 4 KiB pages with permissions.
//!
//! The model every engine follows:
//! - the address space is a set of *areas* (like Linux VMAs: start, end, permissions), and a
//!   sparse set of *materialized pages*; a page inside an area that was never touched reads
//!   as zeros and costs nothing;
//! - pages of the loaded image are `Arc`-shared by every lane and copied on a lane's first
//!   write (copy-on-write), so N lanes of one program share its read-only data;
//! - every access is checked against the area's permissions; a bad access yields a `Fault`
//!   with the address and never touches memory outside the lane;
//! - a lane's private memory can be capped (`set_limit`), and running over the cap is a fault
//!   for that lane alone (brk/mmap see ENOMEM first).
//!
//! The CPU engine reaches pages through a small direct-mapped TLB of host pointers. Pointers
//! in the TLB always point into page buffers owned (through `Arc`) by this address space, or
//! into its window, where those buffers are mapped (`window.rs`), and every operation that
//! drops or replaces a page flushes the entries that could see it. Page buffers are slots
//! of one shared-memory file where the host has one (`arena.rs`).

mod arena;
mod gpu;
mod pagemap;
#[cfg(test)]
mod tests;
mod tlb;
mod watch;
mod window;

pub use arena::PageBuf;
use pagemap::PageMap;
use tlb::{biased, TlbEntry, EMPTY, NO_TAG, TLB_RECENT};
pub use tlb::{tlb_layout, TlbView};
pub use watch::{Watch, WatchHit, WatchKind};
use window::{Shown, Window};
pub use window::{WINDOW_BITS, WINDOW_BYTES, WINDOW_RESERVED};

// page-number keys: the Fx hash (one multiply) instead of SipHash, which showed in profiles
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
pub const PAGE_MASK: u64 = PAGE_SIZE - 1;
/// Guest virtual addresses are 48 bits, as on Linux/arm64 with 4 KiB pages.
pub const ADDR_LIMIT: u64 = 1 << 48;

pub type PageData = [u8; PAGE_SIZE as usize];

/// Whether address spaces get windows in this process (see `window.rs`): translated code
/// then reads where an address space's view gives a window. On where guards are
/// ([`guards_possible`], the default), else where `ARMADA_WINDOWS=1` or [`set_windows`];
/// `ARMADA_WINDOWS=0` turns them off. Mapping each page into a window costs a host `mmap`
/// (5-55 µs a page: TLB shootdowns to the compile threads' cores, the process's memory
/// lock), so a window gives itself up where that costs more than it wins (`Window::worth`,
/// docs/performance.md, stops 42 and 44), and lanes that run many at once get none
/// (`Lane::without_windows`).
pub fn windows_possible() -> bool {
    arena::shared() && windows_on()
}

/// Whether windows are guarded (the default; `ARMADA_GUARDS=0` or [`set_guards`] turns
/// them off; implies windows):
/// translated code reads and writes an address space's window without looking at its TLB,
/// the window shows only what the guest may do, and a host fault shows the page or, where
/// the guest itself faults, sends the access to its way out (armada-jit's `guard`). As
/// qemu-user does, the host's MMU is the check.
pub fn guards_possible() -> bool {
    windows_possible() && guards_on()
}

static GUARDS_ON: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

fn guards_on() -> bool {
    match GUARDS_ON.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os("ARMADA_GUARDS").is_none_or(|v| v != "0");
            GUARDS_ON.store(1 + on as u8, Ordering::Relaxed);
            on
        }
        v => v == 2,
    }
}

/// Keeps this process's page buffers on the heap instead of the shared page file (so no
/// address space gets a window): for processes that run GPU lanes, whose host mirrors never
/// get windows and make their pages faster on the heap. Call it before any page is made;
/// false (and no change) where the page file is already in use.
pub fn heap_pages_only() -> bool {
    arena::heap_only()
}

/// Turns guards on or off (and windows with them, when on) for address spaces whose
/// windows are made from now on.
pub fn set_guards(on: bool) {
    GUARDS_ON.store(1 + on as u8, Ordering::Relaxed);
    if on {
        set_windows(true);
    }
}

/// 0: not decided yet (the environment decides), 1: off, 2: on.
static WINDOWS_ON: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

fn windows_on() -> bool {
    match WINDOWS_ON.load(Ordering::Relaxed) {
        0 => {
            let on = match std::env::var_os("ARMADA_WINDOWS") {
                Some(v) => v != "0",
                None => guards_on(),
            };
            WINDOWS_ON.store(1 + on as u8, Ordering::Relaxed);
            on
        }
        v => v == 2,
    }
}

/// Turns windows on or off for address spaces that translated code starts on from now
/// (those with one keep it). Either way is correct for code already translated: a read
/// looks at its address space's window each time.
pub fn set_windows(on: bool) {
    WINDOWS_ON.store(1 + on as u8, Ordering::Relaxed);
}

/// Page permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Perm(pub u8);

impl Perm {
    pub const NONE: Perm = Perm(0);
    pub const R: Perm = Perm(1);
    pub const W: Perm = Perm(2);
    pub const X: Perm = Perm(4);
    pub const RW: Perm = Perm(3);
    pub const RX: Perm = Perm(5);
    pub const RWX: Perm = Perm(7);
    pub fn contains(self, other: Perm) -> bool {
        self.0 & other.0 == other.0
    }
    /// From Linux PROT_* bits (PROT_READ=1, PROT_WRITE=2, PROT_EXEC=4 are the same bits).
    pub fn from_prot(prot: u64) -> Perm {
        Perm((prot & 7) as u8)
    }
}

impl std::fmt::Display for Perm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = |p: Perm, ch: char| if self.contains(p) { ch } else { '-' };
        write!(
            f,
            "{}{}{}",
            c(Perm::R, 'r'),
            c(Perm::W, 'w'),
            c(Perm::X, 'x')
        )
    }
}

/// What kind of access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Execute,
}

/// A guest memory access that the address space refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub addr: u64,
    pub access: Access,
    /// True when the address is mapped but the permission is missing (SEGV_ACCERR), false when
    /// nothing is mapped there (SEGV_MAPERR) or the lane's memory cap was reached.
    pub mapped: bool,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.access {
            Access::Read => "read from",
            Access::Write => "write to",
            Access::Execute => "execute at",
        };
        let why = if self.mapped {
            "permission denied"
        } else {
            "address not mapped"
        };
        write!(f, "{what} {:#x}: {why}", self.addr)
    }
}

/// Errors of the mapping calls (what mmap/munmap/mprotect/brk report as errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("address range is not page-aligned or outside the guest address space")]
    Invalid,
    #[error("no free address range of that size")]
    NoSpace,
    #[error("the lane's memory limit would be exceeded")]
    OverLimit,
    #[error("range is not mapped")]
    NotMapped,
}

#[derive(Clone, Debug)]
struct Area {
    end: u64,
    perm: Perm,
}

#[derive(Clone)]
struct Flat {
    base: u64,
    buf: Box<[u8]>,
}

impl Flat {
    /// Pointer to the start of the page holding `addr`, if the buffer covers it.
    #[inline]
    fn page_ptr(&mut self, addr: u64) -> Option<*mut u8> {
        let off = addr.checked_sub(self.base)?;
        if off >= self.buf.len() as u64 {
            return None;
        }
        // SAFETY: off is inside the buffer; page starts are inside it as base is page-aligned.
        Some(unsafe { self.buf.as_mut_ptr().add((off & !PAGE_MASK) as usize) })
    }
}

#[derive(Clone)]
struct Page {
    data: Arc<PageBuf>,
}

/// The one all-zero page buffer every untouched page shares.
pub(crate) fn zero_page() -> Arc<PageBuf> {
    zero_page_ref().clone()
}

fn zero_page_ref() -> &'static Arc<PageBuf> {
    static ZERO: OnceLock<Arc<PageBuf>> = OnceLock::new();
    ZERO.get_or_init(|| Arc::new(PageBuf::zeroed()))
}

/// `data`'s bytes, this page's own to write (`Arc::make_mut`). A page that shares the zero
/// page gets a new page of zeros rather than a copy: a slot of the page file never used is
/// zeros already, and copying 4 KiB of zeros into it touched it (a host page fault) for
/// nothing; a program that wrote 256 MiB once spent a tenth of its time in that copy.
fn own_page(data: &mut Arc<PageBuf>) -> &mut PageBuf {
    if Arc::ptr_eq(data, zero_page_ref()) {
        *data = Arc::new(PageBuf::zeroed());
    }
    Arc::make_mut(data)
}

/// One lane's guest address space.
pub struct AddressSpace {
    /// start -> area; areas never overlap and are page-aligned.
    areas: BTreeMap<u64, Area>,
    /// Materialized pages by page number.
    pages: PageMap,
    /// Pages whose contents were decoded into micro-ops: writes to them go the slow way and
    /// are reported so the engine can drop the stale micro-ops.
    code_pages: HashSet<u64>,
    /// The translation cache: one entry until the first fill, then TLB_SIZE, growing to
    /// TLB_MAX where it misses much (`tlb_mask` the index mask), so that the tens of thousands of address spaces a GPU batch restores
    /// from a snapshot, most of which the host never reads, do not each start with 8 KiB.
    tlb: Box<[TlbEntry]>,
    tlb_mask: usize,
    /// Fills since the TLB was made or last grew (see [`tlb::TLB_GROW_FILLS`]).
    tlb_fills: usize,
    /// Entries filled since the TLB was last emptied (saturating), and the first
    /// [`TLB_RECENT`] of their indices: emptying it clears those alone. The GPU engines empty
    /// it at every stop they service, and a service touches a few pages of guest memory;
    /// zeroing the whole TLB (up to 256 KiB) each time was 4-5% of the H200 host's time on
    /// forking lanes.
    tlb_dirty: usize,
    tlb_recent: [u32; TLB_RECENT],
    /// `tlb`'s address and `tlb_mask`, for translated code (see [`TlbView`]).
    view: TlbView,
    /// Private bytes the lane may own; `u64::MAX` when unlimited.
    limit: u64,
    private_pages: u64,
    /// Private pages of every address space of the lane (its processes: a fork shares the
    /// counter), which the cap applies to.
    lane_pages: Arc<AtomicU64>,
    /// Pages in `code_pages` that writes hit since the engine last asked (`take_code_write`).
    /// A list, since one store can straddle two decoded pages.
    code_written: Vec<u64>,
    /// One contiguous buffer backing [base, base + len) instead of individual pages (the
    /// bare-machine API hands it out as a zero-copy view). Never shared, never copied.
    flat: Option<Flat>,
    /// Bumped whenever an executable area changes (mapped, unmapped, re-protected or
    /// resized), so an engine knows its decoded code may be stale. Data-only mappings leave it
    /// alone, so programs that mmap and munmap buffers keep their decoded code.
    generation: u64,
    /// Bumped by [`Self::invalidate_code`] (code changed behind the engines' back): an
    /// engine drops everything it decoded, where a change of `generation` alone lets it
    /// keep what it decoded from areas and pages that are as they were.
    invalidations: u64,
    /// Where translated code reads this address space's pages (see `window.rs`): made when
    /// translated code first asks for the TLB's view.
    window: Option<Window>,
    /// The host refused this address space a window, or it gave its window up.
    no_window: bool,
    /// A guarded window given up (see [`Self::retire_window`]), kept until no translated
    /// code runs on it.
    retired: Option<Window>,
    /// Whether the window it gets is guarded, where not as the process says (see
    /// [`Self::set_guards`]).
    guards: Option<bool>,
    /// Pages its window may show (see [`Self::set_window_cap`]).
    window_cap: usize,
    /// Scratch pages put in its guarded window (see [`Self::guard_scratches`]).
    scratches: u64,
    /// GPU engine support: pages written through this address space while tracking is on
    /// (`gpu_track_writes`), so the GPU engine uploads only what the host changed.
    host_written: Option<HashSet<u64>>,
    /// With `gpu_track_writes_keep`: each written page's bytes before the host's first write
    /// to it, so the engine sends the device only the bytes that changed (None: the page was
    /// dropped, so its old bytes say nothing, or it is flat memory).
    host_before: Option<HashMap<u64, Option<Box<PageData>>>>,
    /// This address space's identity ([`Self::space_id`]): a fresh one for every address
    /// space made, a fork's copy included.
    id: u64,
    /// A debugger's watchpoints (see `watch.rs`); a fork's copy has none.
    watch: Option<Box<watch::Watches>>,
}

/// The next [`AddressSpace::space_id`].
static NEXT_SPACE_ID: AtomicU64 = AtomicU64::new(1);

fn new_space_id() -> u64 {
    NEXT_SPACE_ID.fetch_add(1, Ordering::Relaxed)
}

// SAFETY: the raw pointers in the TLB point into page buffers that this address space keeps
// alive through its own `Arc`s. Buffers shared with other address spaces (image pages) are
// only ever read through those pointers; a write first makes the page private
// (`Arc::make_mut`) and refreshes the TLB. So moving the whole structure to another thread
// moves sole access with it.
unsafe impl Send for AddressSpace {}

impl Clone for AddressSpace {
    fn clone(&self) -> Self {
        AddressSpace {
            areas: self.areas.clone(),
            pages: self.pages.clone(),
            code_pages: HashSet::default(),
            tlb: Box::new([EMPTY]),
            tlb_mask: 0,
            tlb_fills: 0,
            tlb_dirty: 0,
            tlb_recent: [0; TLB_RECENT],
            view: TlbView {
                entries: std::ptr::null(),
                mask: 0,
                window: std::ptr::null(),
            },
            limit: self.limit,
            private_pages: 0,
            lane_pages: Arc::new(AtomicU64::new(0)),
            code_written: Vec::new(),
            flat: self.flat.clone(),
            generation: 0,
            invalidations: 0,
            window: None,
            no_window: false,
            retired: None,
            guards: None,
            window_cap: self.window_cap,
            scratches: 0,
            host_written: None,
            host_before: None,
            id: new_space_id(),
            watch: None,
        }
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        // the lane's count forgets this address space's pages (a process that ended or
        // replaced its image)
        let n = self.private_pages as i64;
        self.add_private(-n);
    }
}

impl Default for AddressSpace {
    fn default() -> Self {
        Self::new()
    }
}

impl AddressSpace {
    pub fn new() -> Self {
        AddressSpace {
            areas: BTreeMap::new(),
            pages: PageMap::default(),
            code_pages: HashSet::default(),
            tlb: Box::new([EMPTY]),
            tlb_mask: 0,
            tlb_fills: 0,
            tlb_dirty: 0,
            tlb_recent: [0; TLB_RECENT],
            view: TlbView {
                entries: std::ptr::null(),
                mask: 0,
                window: std::ptr::null(),
            },
            limit: u64::MAX,
            private_pages: 0,
            lane_pages: Arc::new(AtomicU64::new(0)),
            code_written: Vec::new(),
            flat: None,
            generation: 0,
            invalidations: 0,
            window: None,
            no_window: false,
            retired: None,
            guards: None,
            window_cap: usize::MAX,
            scratches: 0,
            host_written: None,
            host_before: None,
            id: new_space_id(),
            watch: None,
        }
    }

    /// This address space's identity, unique in the host process: a fork's copy and an
    /// exec's new image get new ones, a vfork child runs on its parent's. The GPU engines
    /// key a lane's page-table entries by it.
    pub fn space_id(&self) -> u64 {
        self.id
    }

    /// An address space whose [base, base + len) is one contiguous, zero-filled buffer with
    /// permissions `perm` (the bare machine of the Python API). `base` and `len` must be
    /// page-aligned.
    pub fn with_flat(base: u64, len: u64, perm: Perm) -> Result<Self, MapError> {
        let mut m = Self::new();
        m.map(base, len, perm)?;
        let len = usize::try_from(len).map_err(|_| MapError::Invalid)?;
        m.flat = Some(Flat {
            base,
            buf: vec![0u8; len].into_boxed_slice(),
        });
        Ok(m)
    }

    /// The contiguous buffer of `with_flat`, and its guest base address.
    pub fn flat(&self) -> Option<(u64, &[u8])> {
        self.flat.as_ref().map(|f| (f.base, &f.buf[..]))
    }

    /// The contiguous buffer, writable. Writes through it bypass the engine's view of
    /// decoded code: call `invalidate_code` after changing code this way.
    pub fn flat_mut(&mut self) -> Option<(u64, &mut [u8])> {
        self.flat.as_mut().map(|f| (f.base, &mut f.buf[..]))
    }

    /// Tells the engines that code may have changed behind their back (a write through a raw
    /// view of memory): everything decoded is dropped before the next instruction runs.
    pub fn invalidate_code(&mut self) {
        self.generation += 1;
        self.invalidations += 1;
    }

    /// Changes at each [`Self::invalidate_code`].
    #[inline]
    pub fn invalidations(&self) -> u64 {
        self.invalidations
    }

    /// Caps the memory this lane may own privately (pages it wrote), in bytes.
    pub fn set_limit(&mut self, bytes: u64) {
        self.limit = bytes;
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Counts pages that became (or stopped being) this address space's own.
    fn add_private(&mut self, n: i64) {
        self.private_pages = self.private_pages.saturating_add_signed(n);
        if n >= 0 {
            self.lane_pages.fetch_add(n as u64, Ordering::Relaxed);
        } else {
            let _ = self
                .lane_pages
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(n.unsigned_abs()))
                });
        }
    }

    /// A copy-on-write copy for a forked process: areas and pages are the same, every page
    /// buffer is shared until one side writes it (the write copies it, as the first write to
    /// an image page does). Our TLB may hold write pointers into pages that are shared from
    /// now on, so it is flushed. The copy shares the lane's page count and cap: the cap
    /// covers every process of the lane. (A page that both sides hold stays counted once,
    /// by the side that owned it; a side that drops it while the other still holds it keeps
    /// counting it, which errs on the side of the cap.)
    pub fn fork(&mut self) -> AddressSpace {
        self.flush_tlb();
        let mut child = self.clone();
        child.lane_pages = self.lane_pages.clone();
        child
    }

    /// A new, empty address space of the same lane (execve): same cap, same count.
    pub fn empty_in_lane(&self) -> AddressSpace {
        let mut m = AddressSpace::new();
        m.limit = self.limit;
        m.lane_pages = self.lane_pages.clone();
        m.window_cap = self.window_cap;
        m
    }

    /// Bytes of private memory of every address space of the lane (see [`Self::fork`]).
    pub fn lane_private_bytes(&self) -> u64 {
        self.lane_pages.load(Ordering::Relaxed) * PAGE_SIZE
    }

    /// Bytes of memory owned by this lane alone.
    pub fn private_bytes(&self) -> u64 {
        self.private_pages * PAGE_SIZE + self.flat.as_ref().map_or(0, |f| f.buf.len() as u64)
    }

    /// Bytes of all materialized pages (shared and private).
    pub fn resident_bytes(&self) -> u64 {
        self.pages.len() as u64 * PAGE_SIZE
    }

    /// Gives each page a buffer of its own holding the same bytes, so that this address
    /// space shares no buffer, and no reference count, with another. For copies of a
    /// snapshot that different host threads restore lanes from: every restore clones the
    /// pages' `Arc`s and every end drops them, and with one set of buffers for all threads
    /// each count's cache line went from core to core at each (a fuzzer on 16 cores did a
    /// third of the executions a core it did on one). Returns the pages copied.
    pub fn unshare_pages(&mut self) -> usize {
        self.pages
            .for_each_mut(|_, p| p.data = Arc::new((*p.data).clone()));
        self.flush_tlb();
        self.pages.len()
    }

    /// Pages held (materialized), shared or not.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Keeps translated code reading this address space through the TLB's pointers, never
    /// a window (see `window.rs`): for comparing the two ways, and for address spaces
    /// whose pages should not take up a window.
    pub fn without_window(&mut self) {
        if self.window.take().is_some() {
            self.flush_tlb_only();
        }
        self.no_window = true;
    }

    /// The window this address space gets (where windows are on) is guarded, or not,
    /// whatever the process's setting ([`set_guards`]): for the tests, which try both. No
    /// effect once it has one.
    pub fn set_guards(&mut self, on: bool) {
        self.guards = Some(on);
    }

    /// How many guarded accesses a host fault sent to their slow paths (a scratch page put
    /// in the window for each): the guest's own faults, writes to decoded code, and the
    /// accesses of code still running on a window given up.
    pub fn guard_scratches(&self) -> u64 {
        self.scratches
    }

    /// Caps the pages the window this address space gets may show: past them the window
    /// is given up, as one past the process's share of mappings is (the tests give windows
    /// up under running code with it). 0: no window at all. No effect once it has one.
    /// Forks and execs keep the cap.
    pub fn set_window_cap(&mut self, pages: usize) {
        self.window_cap = pages;
    }

    /// Whether this address space has a window now.
    pub fn has_window(&self) -> bool {
        self.window.is_some()
    }

    /// The base of its guarded window (see [`guards_possible`]) while it has one: guest
    /// address `a` is at `base + a` there (the quick tier's accesses, armada-jit's
    /// `quick::emit`). A window given up is not returned.
    pub fn guarded_window(&self) -> Option<*const u8> {
        self.window
            .as_ref()
            .filter(|w| w.guarded())
            .map(|w| w.base())
    }

    /// Whether it has a guarded window (see [`guards_possible`]), which translated code
    /// reads and writes unchecked. Once it has one, it keeps it.
    pub fn guarded(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.guarded())
    }

    /// A guarded access at `addr` faulted on the host (see [`guards_possible`]): shows the
    /// page as the guest may access it, and says whether the access may now be made
    /// again. False where the guest's access itself faults, or writes decoded code (the
    /// access's way out then makes it through the interpreter's path, which reports it).
    ///
    /// `write` is what the host said of the access, if it did; else a fault on a page shown
    /// readable is taken for a write.
    pub fn guard_fault(&mut self, addr: u64, write: Option<bool>) -> bool {
        let vpn = addr >> PAGE_SHIFT;
        let Some(w) = self.window.as_ref().filter(|w| w.guarded()) else {
            return false;
        };
        let write = write.unwrap_or_else(|| w.showing(vpn, false));
        // (the time a fault takes here is the window's cost too, see `Window::worth`)
        let (t0, cost0) = (std::time::Instant::now(), w.cost());
        let ok = if write {
            !self.code_pages.contains(&vpn) && self.page_for_write(addr).is_ok()
        } else {
            self.page_for_read(addr, Perm::R).is_ok()
        };
        let Some(w) = self.window.as_mut() else {
            return false;
        };
        w.charge(t0.elapsed().saturating_sub(w.cost().saturating_sub(cost0)));
        ok && w.showing(vpn, write)
    }

    /// Puts a scratch page at `addr`'s page of the guarded window (`on`), or takes it away
    /// (see [`Self::guard_fault`] and `Window::scratch`). False if the host refused.
    pub fn guard_scratch(&mut self, addr: u64, on: bool) -> bool {
        let vpn = addr >> PAGE_SHIFT;
        // (a window given up under running code still takes scratch pages)
        let w = self.window.as_mut().or(self.retired.as_mut());
        let Some(w) = w.filter(|w| w.guarded()) else {
            return false;
        };
        let done = w.scratch(vpn, on);
        self.scratches += on as u64;
        let e = &mut self.tlb[(vpn as usize) & self.tlb_mask];
        let tag = vpn << PAGE_SHIFT;
        if e.rtag == tag || e.wtag == tag {
            *e = EMPTY;
        }
        done
    }

    /// Shows page `vpn` (which is materialized) in the address space's window, for a TLB
    /// fill: the pointer the entry keeps for the page at `ptr` (see [`TlbEntry`]), which
    /// is the window's where there is one, or None if the page must stay out of the TLB.
    /// A window that can show no more is given up (and the TLB emptied, as its entries
    /// point into it); the page is then filled as in an address space without one.
    fn shown(&mut self, vpn: u64, ptr: *mut u8) -> Option<*mut u8> {
        if self.watched_page(vpn) {
            return None;
        }
        let Some(w) = self.window.as_mut() else {
            return Some(biased(ptr, vpn));
        };
        let (page, mut writable) = self.pages.get_private(vpn)?;
        let zero = Arc::ptr_eq(&page.data, zero_page_ref());
        if w.guarded() {
            // only what a write tag would allow: never decoded code, never a page the
            // guest may not write
            let perm = self
                .areas
                .range(..=vpn << PAGE_SHIFT)
                .next_back()
                .map_or(Perm::NONE, |(_, a)| a.perm);
            writable &= perm.contains(Perm::W) && !self.code_pages.contains(&vpn);
        }
        match w.show(vpn, &page.data, zero, writable) {
            Shown::Yes => Some(w.base().cast_mut()),
            Shown::Outside => None,
            Shown::Full => {
                if w.guarded() {
                    self.retire_window();
                } else {
                    self.window = None;
                    self.no_window = true;
                    self.flush_tlb_only();
                }
                Some(biased(ptr, vpn))
            }
        }
    }

    /// Gives a guarded window up that can show no more (past the process's share of
    /// mappings, or past what it is worth: `Window::worth`), or that a fork would empty
    /// at great cost: from now on the address space is read through the TLB's pointers, as one
    /// without a window. The window cannot be unmapped while translated code runs on it,
    /// so it is kept, showing nothing (every access to it faults and takes its slow path),
    /// until [`Self::drop_retired_window`]; translated code is told to leave meanwhile (see
    /// [`Self::window_retired`]). (Emptying the window and filling it again instead made a
    /// program whose pages passed the share fault them in over and over: 6x slower.)
    fn retire_window(&mut self) {
        if let Some(mut w) = self.window.take() {
            w.reset();
            self.retired = Some(w);
        }
        self.no_window = true;
        self.flush_tlb_only();
    }

    /// Whether a guarded window was given up that translated code may still run on: the
    /// code must leave, and the window be dropped, before any more runs.
    pub fn window_retired(&self) -> bool {
        self.retired.is_some()
    }

    /// Drops the window given up (see [`Self::retire_window`]); the caller knows no
    /// translated code runs on it.
    pub fn drop_retired_window(&mut self) {
        self.retired = None;
    }

    /// Whether any area intersecting [addr, end) is executable.
    fn any_exec(&self, addr: u64, end: u64) -> bool {
        let before = self
            .areas
            .range(..addr)
            .next_back()
            .is_some_and(|(_, a)| a.end > addr && a.perm.contains(Perm::X));
        before
            || self
                .areas
                .range(addr..end)
                .any(|(_, a)| a.perm.contains(Perm::X))
    }

    /// Changes whenever an executable area changes.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    // ----- areas -----------------------------------------------------------------------

    fn check_range(addr: u64, len: u64) -> Result<u64, MapError> {
        if addr & PAGE_MASK != 0 || len == 0 {
            return Err(MapError::Invalid);
        }
        let end = addr
            .checked_add(len.checked_add(PAGE_MASK).ok_or(MapError::Invalid)? & !PAGE_MASK)
            .ok_or(MapError::Invalid)?;
        if end > ADDR_LIMIT {
            return Err(MapError::Invalid);
        }
        Ok(end)
    }

    /// The area containing `addr`, as (start, end, perm).
    pub fn area_at(&self, addr: u64) -> Option<(u64, u64, Perm)> {
        let (&start, area) = self.areas.range(..=addr).next_back()?;
        (addr < area.end).then_some((start, area.end, area.perm))
    }

    /// All areas, in address order, as (start, end, perm).
    pub fn areas(&self) -> impl Iterator<Item = (u64, u64, Perm)> + '_ {
        self.areas.iter().map(|(&s, a)| (s, a.end, a.perm))
    }

    /// Splits areas so that `at` is an area boundary (if it falls inside one).
    fn split_at(&mut self, at: u64) {
        if let Some((&start, area)) = self.areas.range(..at).next_back() {
            if area.end > at {
                let tail = Area {
                    end: area.end,
                    perm: area.perm,
                };
                self.areas.get_mut(&start).unwrap().end = at;
                self.areas.insert(at, tail);
            }
        }
    }

    /// Removes every area and page in [addr, end).
    fn clear_range(&mut self, addr: u64, end: u64) {
        if self.any_exec(addr, end) {
            self.generation += 1;
        }
        self.split_at(addr);
        self.split_at(end);
        let starts: Vec<u64> = self.areas.range(addr..end).map(|(&s, _)| s).collect();
        for s in starts {
            self.areas.remove(&s);
        }
        self.drop_pages(addr, end);
    }

    fn drop_pages(&mut self, addr: u64, end: u64) {
        let first = addr >> PAGE_SHIFT;
        let last = end >> PAGE_SHIFT;
        let mut gone = Vec::new();
        let mut private = 0;
        self.pages.remove_range(first, last, |vpn, page| {
            private += (Arc::strong_count(&page.data) == 1) as i64;
            gone.push(vpn);
        });
        self.add_private(-private);
        // GPU engine support: a dropped page reads as zeros again, a change the device must
        // see like a write (and its kept bytes no longer tell what the device has).
        if let Some(w) = self.host_written.as_mut() {
            w.extend(gone.iter().copied());
            if let Some(b) = self.host_before.as_mut() {
                b.extend(gone.iter().map(|&v| (v, None)));
            }
        }
        self.code_pages.retain(|&v| v < first || v >= last);
        if let Some(w) = self.window.as_mut() {
            w.hide(first, last);
        }
        if let Some(f) = self.flat.as_mut() {
            // Unmapped flat memory reads as zeros when it is mapped again, like fresh pages.
            let lo = addr.clamp(f.base, f.base + f.buf.len() as u64) - f.base;
            let hi = end.clamp(f.base, f.base + f.buf.len() as u64) - f.base;
            f.buf[lo as usize..hi as usize].fill(0);
        }
        self.flush_tlb_only();
    }

    /// Maps [addr, addr+len) as fresh zero-filled memory with `perm`, replacing whatever was
    /// there (MAP_FIXED semantics).
    pub fn map(&mut self, addr: u64, len: u64, perm: Perm) -> Result<(), MapError> {
        let end = Self::check_range(addr, len)?;
        self.clear_range(addr, end);
        if perm.contains(Perm::X) {
            self.generation += 1;
        }
        self.areas.insert(addr, Area { end, perm });
        Ok(())
    }

    /// Unmaps [addr, addr+len); unmapped holes inside are fine, as in Linux.
    pub fn unmap(&mut self, addr: u64, len: u64) -> Result<(), MapError> {
        let end = Self::check_range(addr, len)?;
        self.clear_range(addr, end);
        Ok(())
    }

    /// Changes permissions of [addr, addr+len); every page in it must be mapped.
    pub fn protect(&mut self, addr: u64, len: u64, perm: Perm) -> Result<(), MapError> {
        let end = Self::check_range(addr, len)?;
        // Linux fails with ENOMEM if any part is unmapped.
        let mut cur = addr;
        while cur < end {
            match self.area_at(cur) {
                Some((_, e, _)) => cur = e,
                None => return Err(MapError::NotMapped),
            }
        }
        if perm.contains(Perm::X) || self.any_exec(addr, end) {
            self.generation += 1;
        }
        self.split_at(addr);
        self.split_at(end);
        for (_, area) in self.areas.range_mut(addr..end) {
            area.perm = perm;
        }
        if let Some(w) = self.window.as_mut() {
            w.hide(addr >> PAGE_SHIFT, end >> PAGE_SHIFT);
        }
        self.flush_tlb_only();
        Ok(())
    }

    /// Whether every byte of [addr, addr+len) is mapped.
    pub fn is_mapped(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        let mut cur = addr;
        while cur < end {
            match self.area_at(cur) {
                Some((_, e, _)) => cur = e,
                None => return false,
            }
        }
        true
    }

    /// Finds a free, page-aligned range of `len` bytes, searching down from `below` to
    /// `above` (the mmap area grows down, as on Linux).
    pub fn find_free(&self, len: u64, above: u64, below: u64) -> Option<u64> {
        let len = (len.checked_add(PAGE_MASK)?) & !PAGE_MASK;
        let mut top = below & !PAGE_MASK;
        for (&start, area) in self.areas.range(..below).rev() {
            if area.end <= top && top - area.end >= len {
                return Some(top - len);
            }
            top = top.min(start);
            if top < above + len {
                return None;
            }
        }
        (top >= above + len).then(|| top - len)
    }

    /// Grows or shrinks an area that ends at `old_end` to `new_end` in place (brk, mremap).
    /// Fails if the growth would overlap another area.
    pub fn resize_area(&mut self, start: u64, new_end: u64) -> Result<(), MapError> {
        let area = self.areas.get(&start).ok_or(MapError::NotMapped)?.clone();
        if new_end & PAGE_MASK != 0 || new_end > ADDR_LIMIT || new_end <= start {
            return Err(MapError::Invalid);
        }
        if area.perm.contains(Perm::X) {
            self.generation += 1;
        }
        if new_end > area.end {
            if self
                .areas
                .range(area.end..new_end)
                .next()
                .is_some_and(|(&s, _)| s < new_end)
            {
                return Err(MapError::NoSpace);
            }
            self.areas.get_mut(&start).unwrap().end = new_end;
        } else if new_end < area.end {
            self.areas.get_mut(&start).unwrap().end = new_end;
            self.drop_pages(new_end, area.end);
        }
        Ok(())
    }

    // ----- pages -----------------------------------------------------------------------

    /// Installs a shared page (from a loaded image) at page number `vpn`. The caller maps the
    /// area. The lane copies it on its first write.
    pub fn share_page(&mut self, vpn: u64, data: Arc<PageBuf>) {
        self.flush_page(vpn);
        if let Some(old) = self.pages.insert(vpn, Page { data }) {
            if Arc::strong_count(&old.data) == 1 {
                self.add_private(-1);
            }
        }
        self.flush_page(vpn);
    }

    /// The all-zero page buffer (a page nobody has written).
    pub fn zero_page_data() -> Arc<PageBuf> {
        zero_page()
    }

    /// The shared page buffers of this address space (for building an image others share).
    pub fn page_data(&self, vpn: u64) -> Option<&Arc<PageBuf>> {
        self.pages.get(vpn).map(|p| &p.data)
    }

    fn perm_at(&self, addr: u64) -> Option<Perm> {
        self.area_at(addr).map(|a| a.2)
    }

    /// Read pointer to the page holding `addr`, after checking `need`.
    fn page_for_read(&mut self, addr: u64, need: Perm) -> Result<*const u8, Fault> {
        let vpn = addr >> PAGE_SHIFT;
        let access = if need == Perm::X {
            Access::Execute
        } else {
            Access::Read
        };
        let perm = self.perm_at(addr).ok_or(Fault {
            addr,
            access,
            mapped: false,
        })?;
        if !perm.contains(need) {
            return Err(Fault {
                addr,
                access,
                mapped: true,
            });
        }
        let ptr = match self.flat.as_mut().and_then(|f| f.page_ptr(addr)) {
            Some(p) => p as *const u8,
            // (a read leaves a chunk shared with a fork's other side as it is)
            None => match self.pages.get(vpn) {
                Some(p) => p.data.as_ptr(),
                None => self
                    .pages
                    .get_or_insert_with(vpn, || Page { data: zero_page() })
                    .data
                    .as_ptr(),
            },
        };
        if need == Perm::R {
            if let Some(p) = self.shown(vpn, ptr.cast_mut()) {
                let e = self.tlb_fill_entry(vpn);
                let tag = vpn << PAGE_SHIFT;
                if e.wtag != tag {
                    e.wtag = NO_TAG;
                }
                e.rtag = tag;
                e.rptr = p.cast_const();
            }
        }
        Ok(ptr)
    }

    fn page_for_write(&mut self, addr: u64) -> Result<*mut u8, Fault> {
        let vpn = addr >> PAGE_SHIFT;
        let perm = self.perm_at(addr).ok_or(Fault {
            addr,
            access: Access::Write,
            mapped: false,
        })?;
        if !perm.contains(Perm::W) {
            return Err(Fault {
                addr,
                access: Access::Write,
                mapped: true,
            });
        }
        if let Some(ptr) = self.flat.as_mut().and_then(|f| f.page_ptr(addr)) {
            return Ok(self.fill_write_entry(vpn, ptr));
        }
        let over = self.lane_pages.load(Ordering::Relaxed) >= self.limit / PAGE_SIZE;
        // (a page not materialized yet gets zeros of its own at once: taking the shared
        // zero page first, then dropping it for a new page, changed a reference count that
        // every thread of a batch shares twice at each lane's first write of each page)
        let fresh = self.pages.get(vpn).is_none();
        if fresh && over {
            return Err(Fault {
                addr,
                access: Access::Write,
                mapped: false,
            });
        }
        let page = self.pages.get_or_insert_with(vpn, || Page {
            data: Arc::new(PageBuf::zeroed()),
        });
        let copy = fresh || Arc::strong_count(&page.data) != 1;
        if copy && over {
            return Err(Fault {
                addr,
                access: Access::Write,
                mapped: false,
            });
        }
        let ptr = own_page(&mut page.data).as_mut_ptr();
        if copy {
            self.add_private(1);
        }
        Ok(self.fill_write_entry(vpn, ptr))
    }

    /// Reports a write to decoded code, and fills the TLB entry of a writable page.
    fn fill_write_entry(&mut self, vpn: u64, ptr: *mut u8) -> *mut u8 {
        // GPU engine support: every host write reaches a page through here after a TLB flush.
        if let Some(w) = self.host_written.as_mut() {
            if w.insert(vpn) {
                if let Some(b) = self.host_before.as_mut() {
                    // (a flat buffer's last page may be short: its bytes are not kept)
                    let kept = self.flat.is_none().then(|| {
                        // SAFETY: `ptr` points to a page buffer of PAGE_SIZE bytes (see the
                        // type's comment); the write this entry is for has not happened yet.
                        Box::new(unsafe { *(ptr as *const PageData) })
                    });
                    b.insert(vpn, kept);
                }
            }
        }
        if self.code_pages.remove(&vpn) {
            self.code_written.push(vpn);
        }
        if let Some(p) = self.shown(vpn, ptr) {
            let e = self.tlb_fill_entry(vpn);
            *e = TlbEntry {
                rtag: vpn << PAGE_SHIFT,
                rptr: p.cast_const(),
                wtag: vpn << PAGE_SHIFT,
                wptr: p,
            };
        }
        ptr
    }

    /// Marks a page as holding decoded code: its next write is reported through
    /// `take_code_write` so the engine can drop stale micro-ops.
    pub fn mark_code_page(&mut self, vpn: u64) {
        if self.code_pages.insert(vpn) {
            self.flush_page(vpn);
        }
    }

    /// Whether a write hit decoded code since the last `take_code_write`.
    #[inline(always)]
    pub fn has_code_write(&self) -> bool {
        !self.code_written.is_empty()
    }

    /// The page numbers of decoded code pages written since the last call.
    #[inline]
    pub fn take_code_write(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.code_written)
    }

    // ----- accesses ---------------------------------------------------------------------

    /// Reads `N` bytes at `addr` (little-endian value), checking read permission.
    #[inline(always)]
    pub fn read<const N: usize>(&mut self, addr: u64) -> Result<[u8; N], Fault> {
        let vpn = addr >> PAGE_SHIFT;
        let off = (addr & PAGE_MASK) as usize;
        // SAFETY: tlb_mask is the TLB's length less one (a power of two).
        let e = unsafe { self.tlb.get_unchecked((vpn as usize) & self.tlb_mask) };
        if e.rtag == addr & !PAGE_MASK && off + N <= PAGE_SIZE as usize {
            // SAFETY: rptr + the page's address points to a live page buffer of PAGE_SIZE
            // bytes (see the type's comment) and off + N is within it.
            let p = e.rptr.wrapping_add(addr as usize);
            return Ok(unsafe { std::ptr::read_unaligned(p as *const [u8; N]) });
        }
        self.read_slow(addr)
    }

    #[inline(never)]
    fn read_slow<const N: usize>(&mut self, addr: u64) -> Result<[u8; N], Fault> {
        let mut out = [0u8; N];
        self.read_bytes(addr, &mut out)?;
        Ok(out)
    }

    /// Writes `N` bytes at `addr`, checking write permission.
    #[inline(always)]
    pub fn write<const N: usize>(&mut self, addr: u64, val: [u8; N]) -> Result<(), Fault> {
        let vpn = addr >> PAGE_SHIFT;
        let off = (addr & PAGE_MASK) as usize;
        // SAFETY: tlb_mask is the TLB's length less one (a power of two).
        let e = unsafe { self.tlb.get_unchecked((vpn as usize) & self.tlb_mask) };
        if e.wtag == addr & !PAGE_MASK && off + N <= PAGE_SIZE as usize {
            // SAFETY: wptr + the page's address points to a page buffer this address space
            // owns alone, and off + N is within it.
            let p = e.wptr.wrapping_add(addr as usize);
            unsafe { std::ptr::write_unaligned(p as *mut [u8; N], val) };
            return Ok(());
        }
        self.write_bytes(addr, &val)
    }

    #[inline(always)]
    pub fn read_u8(&mut self, addr: u64) -> Result<u8, Fault> {
        Ok(self.read::<1>(addr)?[0])
    }
    #[inline(always)]
    pub fn read_u16(&mut self, addr: u64) -> Result<u16, Fault> {
        Ok(u16::from_le_bytes(self.read(addr)?))
    }
    #[inline(always)]
    pub fn read_u32(&mut self, addr: u64) -> Result<u32, Fault> {
        Ok(u32::from_le_bytes(self.read(addr)?))
    }
    #[inline(always)]
    pub fn read_u64(&mut self, addr: u64) -> Result<u64, Fault> {
        Ok(u64::from_le_bytes(self.read(addr)?))
    }
    #[inline(always)]
    pub fn read_u128(&mut self, addr: u64) -> Result<u128, Fault> {
        Ok(u128::from_le_bytes(self.read(addr)?))
    }
    #[inline(always)]
    pub fn write_u8(&mut self, addr: u64, v: u8) -> Result<(), Fault> {
        self.write(addr, [v])
    }
    #[inline(always)]
    pub fn write_u16(&mut self, addr: u64, v: u16) -> Result<(), Fault> {
        self.write(addr, v.to_le_bytes())
    }
    #[inline(always)]
    pub fn write_u32(&mut self, addr: u64, v: u32) -> Result<(), Fault> {
        self.write(addr, v.to_le_bytes())
    }
    #[inline(always)]
    pub fn write_u64(&mut self, addr: u64, v: u64) -> Result<(), Fault> {
        self.write(addr, v.to_le_bytes())
    }
    #[inline(always)]
    pub fn write_u128(&mut self, addr: u64, v: u128) -> Result<(), Fault> {
        self.write(addr, v.to_le_bytes())
    }

    /// Reads guest memory into `buf`, checking read permission on every page.
    pub fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Fault> {
        self.read_bytes_perm(addr, buf, Perm::R)
    }

    /// Reads instruction bytes (execute permission).
    pub fn fetch_bytes(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Fault> {
        self.read_bytes_perm(addr, buf, Perm::X)
    }

    fn read_bytes_perm(&mut self, addr: u64, buf: &mut [u8], need: Perm) -> Result<(), Fault> {
        if need == Perm::R {
            self.check_watch(addr, buf.len() as u64, false)?;
        }
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & PAGE_MASK) as usize;
            let n = (PAGE_SIZE as usize - off).min(buf.len() - done);
            let ptr = self.page_for_read(a, need)?;
            // SAFETY: ptr is a live page buffer; off + n <= PAGE_SIZE.
            let src = unsafe { std::slice::from_raw_parts(ptr.add(off), n) };
            buf[done..done + n].copy_from_slice(src);
            done += n;
        }
        Ok(())
    }

    /// Writes `data` to guest memory, checking write permission on every page first so that
    /// a failing write changes nothing.
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        self.check_writable(addr, data.len() as u64)?;
        self.check_watch(addr, data.len() as u64, true)?;
        let mut done = 0usize;
        while done < data.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & PAGE_MASK) as usize;
            let n = (PAGE_SIZE as usize - off).min(data.len() - done);
            let ptr = self.page_for_write(a)?;
            // SAFETY: ptr is a page buffer owned by this address space alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(ptr.add(off), n) };
            dst.copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    fn check_writable(&self, addr: u64, len: u64) -> Result<(), Fault> {
        if len == 0 {
            return Ok(());
        }
        let mut page = addr & !PAGE_MASK;
        let last = addr.checked_add(len - 1).ok_or(Fault {
            addr,
            access: Access::Write,
            mapped: false,
        })?;
        while page <= last {
            let a = page.max(addr);
            match self.perm_at(a) {
                None => {
                    return Err(Fault {
                        addr: a,
                        access: Access::Write,
                        mapped: false,
                    })
                }
                Some(p) if !p.contains(Perm::W) => {
                    return Err(Fault {
                        addr: a,
                        access: Access::Write,
                        mapped: true,
                    })
                }
                _ => {}
            }
            page = match page.checked_add(PAGE_SIZE) {
                Some(p) => p,
                None => break,
            };
        }
        Ok(())
    }

    /// Writes ignoring permissions (the loader filling read-only segments). The range must be
    /// mapped.
    pub fn poke_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let (start, end, perm) = self.area_at(a).ok_or(Fault {
                addr: a,
                access: Access::Write,
                mapped: false,
            })?;
            let n = ((end - a) as usize).min(data.len() - done);
            self.areas.get_mut(&start).unwrap().perm = Perm::RWX;
            let r = self.write_bytes(a, &data[done..done + n]);
            self.areas.get_mut(&start).unwrap().perm = perm;
            self.flush_tlb();
            r?;
            done += n;
        }
        Ok(())
    }

    /// Reads a NUL-terminated string of at most `max` bytes (without the NUL).
    pub fn read_cstr(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, Fault> {
        let mut out = Vec::new();
        let mut a = addr;
        loop {
            let b = self.read_u8(a)?;
            if b == 0 || out.len() >= max {
                return Ok(out);
            }
            out.push(b);
            a = a.wrapping_add(1);
        }
    }

    /// Fills the `N` bytes at `addr` with zeros (DC ZVA), checking write permission: one
    /// store where the TLB has the page, as any write. (Through `write_bytes` every time, a
    /// permission search and a TLB fill, Go's memclr of large objects took a tenth of
    /// compress/flate's tests.)
    #[inline(always)]
    pub fn zero<const N: usize>(&mut self, addr: u64) -> Result<(), Fault> {
        self.write(addr, [0u8; N])
    }

    /// A view of the page that holds `addr`, for the engines' instruction fetch: the page's
    /// bytes, after checking execute permission.
    pub fn fetch_page(&mut self, addr: u64) -> Result<PageData, Fault> {
        let mut buf = [0u8; PAGE_SIZE as usize];
        self.fetch_bytes(addr & !PAGE_MASK, &mut buf)?;
        Ok(buf)
    }
}
