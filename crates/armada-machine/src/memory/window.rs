//! Windows: an address space's pages at `base + address` in the host, for translated code.
//!
//! A load through the TLB waits for two loads in a row: the entry's pointer, then the data
//! at the address plus that pointer (about 12 cycles where qemu-user's load, at a fixed
//! offset, takes 5). With a window, translated code still compares the TLB entry's tag, but
//! loads the data from `base + address`, which does not wait for the entry: the branch on
//! the tag is predicted and the load runs ahead of it.
//!
//! A window is a host reservation of [`WINDOW_BYTES`] (no memory, only addresses, reading
//! as zeros) into which each page is mapped from its slot of the page file (`arena.rs`)
//! when the TLB is filled for it: read-only where other address spaces share the page,
//! else writable. The page of zeros, which stands for every page never written, is shown
//! as the reservation's own zeros, with no mapping. The rule translated code relies on is:
//! **while a TLB entry of an address space with a window holds a read tag, the window
//! shows that page's current bytes at its address, and while it holds a write tag, shows
//! them writable.** Every
//! change of a page's buffer already empties the page's TLB entry (the entry's pointer
//! would be stale too); the fill after it maps the new buffer. Pages no TLB entry holds may
//! show old bytes, which nothing reads or writes.
//!
//! The TLB entries of an address space with a window point into the window too, so the
//! interpreter and translated code reach guest memory by the same host addresses. They
//! must: a load from one mapping of a page does not take its bytes from a store to the
//! other mapping still in the store buffer, and waits for it instead (reads through a
//! window after writes through the page file's own mapping made bzip2 12-25% slower).
//!
//! Windows are a shared resource: each takes [`WINDOW_BYTES`] of the host's address space
//! and each page in one a mapping of the process's (up to `vm.max_map_count`, see
//! [`room`]). So at most [`MAX_WINDOWS`] exist at once, an address space gets one only
//! when translated code first runs on it, and one that would pass the process's share of
//! mappings gives its window up, as does one whose mappings cost more than they are worth
//! ([`Window::worth`]). An address space without a window is read through the entries'
//! pointers. (A guarded window given up is kept, showing nothing, until no translated code
//! runs on it: `AddressSpace::retire_window`.)

use super::arena::{self, PageBuf};
use super::PAGE_SHIFT;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Guest addresses a window covers: 39 bits, as an arm64 Linux kernel built for 39-bit
/// addresses gives its processes (the Linux layer places everything below).
pub const WINDOW_BITS: u32 = 39;
pub const WINDOW_BYTES: u64 = 1 << WINDOW_BITS;
/// Bytes reserved past the window's end and never shown, so that an access that starts in
/// the window and runs past its end faults there (translated code sends accesses that
/// start past the end to their slow paths).
pub const WINDOW_GUARD_BYTES: u64 = 64 << 10;
/// All a window reserves.
pub const WINDOW_RESERVED: u64 = WINDOW_BYTES + WINDOW_GUARD_BYTES;
/// Windows that may exist at once (32 TiB of the host's 128 TiB of addresses).
pub(crate) const MAX_WINDOWS: usize = 64;

static WINDOWS: AtomicUsize = AtomicUsize::new(0);
/// Pages shown in all windows together.
static SHOWN: AtomicUsize = AtomicUsize::new(0);
/// How far [`SHOWN`] may grow before the process's mappings are counted again (see
/// [`room`]); 0 before the first count.
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// The process's mappings at most (`vm.max_map_count`).
fn max_maps() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(65530)
    })
}

/// The process's mappings now (None where the host does not say).
fn maps_now() -> Option<usize> {
    let maps = std::fs::read("/proc/self/maps").ok()?;
    Some(maps.iter().filter(|&&b| b == b'\n').count())
}

/// Whether windows may show one more page. Each page shown may be a mapping of the
/// process's, or two (one in the middle of the reservation splits it), and the process has
/// at most `vm.max_map_count`; but the kernel merges neighbours that continue each other
/// (slots in a row, as a heap filled in order takes them; pages of zeros next to each
/// other), so a program's pages often take a handful. Counting pages alone stopped at half
/// the mappings' worth (128 MiB): so the pages shown grow to a limit, and there the
/// mappings are counted (`/proc/self/maps`: well under a millisecond for a few hundred,
/// tens of milliseconds for 50,000, so a few counts at most) and the limit set from what
/// is left. A quarter of the mappings stay for the rest of the process (its heap, its
/// threads' stacks, a GPU driver).
fn room() -> bool {
    let shown = SHOWN.load(Ordering::Relaxed);
    if shown < LIMIT.load(Ordering::Relaxed) {
        return true;
    }
    static COUNTING: Mutex<()> = Mutex::new(());
    let _one = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    // (another thread may have counted meanwhile)
    let shown = SHOWN.load(Ordering::Relaxed);
    if shown < LIMIT.load(Ordering::Relaxed) {
        return true;
    }
    let max = max_maps();
    let used = maps_now().unwrap_or(max);
    // two mappings a page from here on, at worst
    let spare = (max - max / 4).saturating_sub(used) / 2;
    if spare < max / 8 {
        // full: shown pages must go (a window given up, pages unmapped) before the next
        // count, so that a full process does not count again and again (a count of
        // 50,000 mappings takes tens of milliseconds)
        LIMIT.store(shown.saturating_sub(max / 8), Ordering::Relaxed);
        return false;
    }
    LIMIT.store(shown + spare, Ordering::Relaxed);
    true
}

/// What [`Window::show`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    Yes,
    /// The page is above the window: it must stay out of the TLB.
    Outside,
    /// The window cannot show more (or this buffer): give the window up.
    Full,
}

#[cfg(target_os = "linux")]
const POPULATE: libc::c_int = libc::MAP_POPULATE;
#[cfg(not(target_os = "linux"))]
const POPULATE: libc::c_int = 0;

pub(crate) struct Window {
    base: *mut u8,
    /// Guarded (see `memory::guards_possible`): the reservation faults rather than reading
    /// as zeros, and the page of zeros is shown as a mapping like any other page.
    guarded: bool,
    /// Page number -> the slot shown there, and whether writable. Pages not here show the
    /// reservation: zeros, read-only (the page of zeros is shown so, with no mapping).
    shown: HashMap<u64, (u32, bool)>,
    /// When the window was made, the time its mappings have taken since, and the pages
    /// shown and taken back since (see [`Self::worth`]).
    born: std::time::Instant,
    cost: std::time::Duration,
    shows: u64,
    taken_back: u64,
    /// Pages this window may show at most (see `AddressSpace::set_window_cap`).
    cap: usize,
}

/// Pages a window shows between looks at what showing them costs (see [`Window::worth`]).
const LOOK_EVERY: u64 = 2048;
/// The share of its life a window may cost past [`COST_CEILING`] (or past [`COST_FLOOR`]
/// while its pages churn). On the 16-core host, with ceilings of 40, 80 and 150 ms and
/// none: xz -6 (50 MiB of tables, then 4 s of work) gave its window up at 40 ms and took
/// 5.6-6.9 s, else 3.6-4.5 s; a process that writes 100 MiB and forks took 167-180, 225-232,
/// 288-307 and 281-409 ms (140 ms without guards); pagetouch 256 1 287-401, 431-475,
/// 461-536 and 876-945 ms (226-238 ms without).
const MOST_COST: u32 = 4;
const COST_FLOOR: std::time::Duration = std::time::Duration::from_millis(40);
const COST_CEILING: std::time::Duration = std::time::Duration::from_millis(80);
/// Pages past which a guarded window is given up rather than emptied when its address
/// space's TLB is flushed (a fork: see `AddressSpace::flush_tlb`).
pub(crate) const RESET_MOST: usize = 2048;

impl Window {
    /// A new window, or None where there is no page file or no window to spare. `Err` when
    /// the host refused the reservation (do not ask again).
    pub(crate) fn new(guarded: bool) -> Result<Option<Window>, ()> {
        if !super::windows_possible() {
            return Ok(None);
        }
        // (a look first: an address space without one asks again after every helper)
        if WINDOWS.load(Ordering::Relaxed) >= MAX_WINDOWS {
            return Ok(None);
        }
        if WINDOWS.fetch_add(1, Ordering::Relaxed) >= MAX_WINDOWS {
            WINDOWS.fetch_sub(1, Ordering::Relaxed);
            return Ok(None);
        }
        // SAFETY: a new reservation at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                WINDOW_RESERVED as usize,
                reserve_prot(guarded),
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            WINDOWS.fetch_sub(1, Ordering::Relaxed);
            return Err(());
        }
        Ok(Some(Window {
            base: p.cast(),
            guarded,
            shown: HashMap::default(),
            born: std::time::Instant::now(),
            cost: std::time::Duration::ZERO,
            shows: 0,
            taken_back: 0,
            cap: usize::MAX,
        }))
    }

    /// Whether page `vpn` is shown with `slot`'s bytes (None: the page of zeros), and
    /// writable (for the tests of the rule above).
    #[cfg(test)]
    pub(crate) fn shows(&self, vpn: u64, slot: Option<u32>) -> Option<bool> {
        match (self.shown.get(&vpn), slot) {
            (None, None) if !self.guarded => Some(false),
            (Some(&(s, w)), Some(slot)) => (s == slot).then_some(w),
            _ => None,
        }
    }

    /// Every page shown: page number, slot, writable (for the tests).
    #[cfg(test)]
    pub(crate) fn shown_pages(&self) -> Vec<(u64, u32, bool)> {
        self.shown.iter().map(|(&v, &(s, w))| (v, s, w)).collect()
    }

    pub(crate) fn set_cap(&mut self, pages: usize) {
        self.cap = pages;
    }

    /// Pages shown.
    pub(crate) fn shown_len(&self) -> usize {
        self.shown.len()
    }

    /// The time spent on the window so far (see [`Self::worth`]).
    pub(crate) fn cost(&self) -> std::time::Duration {
        self.cost
    }

    /// Adds time spent on the window (a host fault's handling, an emptying).
    pub(crate) fn charge(&mut self, d: std::time::Duration) {
        self.cost += d;
    }

    pub(crate) fn guarded(&self) -> bool {
        self.guarded
    }

    /// Whether page `vpn` is shown (and writable, for `write`).
    pub(crate) fn showing(&self, vpn: u64, write: bool) -> bool {
        self.shown.get(&vpn).is_some_and(|&(_, w)| w || !write)
    }

    /// Where guest address 0 would be.
    pub(crate) fn base(&self) -> *const u8 {
        self.base
    }

    /// Shows `page` (`zero`: the page of zeros, never writable) at page number `vpn`.
    pub(crate) fn show(&mut self, vpn: u64, page: &PageBuf, zero: bool, writable: bool) -> Shown {
        if vpn >= WINDOW_BYTES >> PAGE_SHIFT {
            return Shown::Outside;
        }
        let had = self.shown.get(&vpn).copied();
        if zero && !self.guarded {
            // the reservation itself reads as zeros
            if had.is_some() {
                self.hide(vpn, vpn + 1);
            }
            return Shown::Yes;
        }
        let Some(slot) = page.slot() else {
            return Shown::Full;
        };
        // (a page shown writable stays so when it becomes shared: only a write tag, which
        // a shared page never has, lets anything write through the window; a guarded
        // window is told of every write tag taken back, see `AddressSpace::flush_page`)
        if had == Some((slot, writable)) || (had == Some((slot, true)) && !self.guarded) {
            return Shown::Yes;
        }
        if had.is_none() && (self.shown.len() >= self.cap || !room()) || !self.worth() {
            return Shown::Full;
        }
        let t0 = std::time::Instant::now();
        let Some(fd) = arena::fd() else {
            return Shown::Full;
        };
        let at = self.base.wrapping_add((vpn << PAGE_SHIFT) as usize).cast();
        // SAFETY: replaces one page of our own reservation. (Populated: the first access
        // through the window takes no page fault.)
        let p = unsafe {
            if zero {
                // a guarded window's page of zeros: the host's own zeros, read-only, so
                // that neighbours merge into one mapping (the page of zeros' slot, shown
                // at each of its pages, would be a mapping at each)
                libc::mmap(
                    at,
                    1 << PAGE_SHIFT,
                    libc::PROT_READ,
                    libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            } else {
                let prot = if writable {
                    libc::PROT_READ | libc::PROT_WRITE
                } else {
                    libc::PROT_READ
                };
                libc::mmap(
                    at,
                    1 << PAGE_SHIFT,
                    prot,
                    libc::MAP_FIXED | libc::MAP_SHARED | POPULATE,
                    fd,
                    (slot as libc::off_t) << PAGE_SHIFT,
                )
            }
        };
        if p == libc::MAP_FAILED {
            return Shown::Full;
        }
        self.shows += 1;
        self.cost += t0.elapsed();
        if self.shown.insert(vpn, (slot, writable && !zero)).is_none() {
            SHOWN.fetch_add(1, Ordering::Relaxed);
        }
        Shown::Yes
    }

    /// Whether the window is still worth what it costs. Each page shown costs a host
    /// `mmap` (5-30 µs; in a guarded window a host fault and its handling too), paid back
    /// by faster accesses only while the page is used, and no rule can tell beforehand
    /// how long that is. Most programs touch their pages at the start (xz's tables: 50 MiB)
    /// and use them for long: a window given up there made xz 30-50% slower. But a program
    /// that keeps taking new memory and giving it back (pagetouch: 64 MiB blocks mapped,
    /// touched and unmapped) ran 6x slower with a guarded window than without. So every
    /// [`LOOK_EVERY`] pages shown the window looks at the time it has cost in its life
    /// (mappings, faults, emptyings), and gives up when that is past 1/[`MOST_COST`] of its
    /// life and past [`COST_CEILING`], or past [`COST_FLOOR`] where a quarter of the pages
    /// it showed have been taken back since. What a window can lose is so bounded: a
    /// quarter of the run's time, and no more than the ceiling once the pages' use ends.
    fn worth(&mut self) -> bool {
        // (a look at each LOOK_EVERY pages shown; a show that fails gives the window up)
        if self.shows == 0 || !self.shows.is_multiple_of(LOOK_EVERY) {
            return true;
        }
        let life = self.born.elapsed();
        let churn = self.taken_back * 4 > self.shows;
        let over = self.cost * MOST_COST > life
            && (self.cost > COST_CEILING || churn && self.cost > COST_FLOOR);
        !over
    }

    /// Stops showing pages `first..last` (unmapped from the guest): their mappings go
    /// back into the reservation, so that a program that maps and unmaps new addresses
    /// does not pile mappings up.
    pub(crate) fn hide(&mut self, first: u64, last: u64) {
        let last = last.min(WINDOW_BYTES >> PAGE_SHIFT);
        if first >= last {
            return;
        }
        let before = self.shown.len();
        if last - first > before as u64 {
            self.shown.retain(|&v, _| v < first || v >= last);
        } else {
            for v in first..last {
                self.shown.remove(&v);
            }
        }
        let gone = before - self.shown.len();
        if gone == 0 {
            return;
        }
        self.taken_back += gone as u64;
        SHOWN.fetch_sub(gone, Ordering::Relaxed);
        // SAFETY: replaces a range of our own reservation with the reservation's zeros again
        // (never unmapped: the host could place something of its own there).
        unsafe {
            libc::mmap(
                self.base
                    .wrapping_add((first << PAGE_SHIFT) as usize)
                    .cast(),
                ((last - first) << PAGE_SHIFT) as usize,
                reserve_prot(self.guarded),
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
        }
    }
}

impl Window {
    /// Shows nothing (one mapping over the whole reservation).
    pub(crate) fn reset(&mut self) {
        if !self.shown.is_empty() {
            self.hide(0, WINDOW_BYTES >> PAGE_SHIFT);
        }
    }

    /// Puts a scratch page at `vpn` (`on`) for a guarded access the guest's own memory
    /// would fault on, so that the access completes and its way out can report the fault
    /// (see armada-jit's `guard`); or the reservation back. False if the host refused.
    pub(crate) fn scratch(&mut self, vpn: u64, on: bool) -> bool {
        if vpn >= WINDOW_RESERVED >> PAGE_SHIFT {
            return false;
        }
        if self.shown.remove(&vpn).is_some() {
            SHOWN.fetch_sub(1, Ordering::Relaxed);
        }
        let prot = if on {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            reserve_prot(self.guarded)
        };
        // SAFETY: one page of our own reservation.
        let p = unsafe {
            libc::mmap(
                self.base.wrapping_add((vpn << PAGE_SHIFT) as usize).cast(),
                1 << PAGE_SHIFT,
                prot,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        p != libc::MAP_FAILED
    }
}

/// The reservation's protection: readable zeros, or faulting where guarded.
fn reserve_prot(guarded: bool) -> libc::c_int {
    if guarded {
        libc::PROT_NONE
    } else {
        libc::PROT_READ
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the reservation is ours; nothing reads it once its address space is gone
        // (translated code takes the base from the address space's view each time).
        unsafe { libc::munmap(self.base.cast(), WINDOW_RESERVED as usize) };
        SHOWN.fetch_sub(self.shown.len(), Ordering::Relaxed);
        WINDOWS.fetch_sub(1, Ordering::Relaxed);
    }
}
