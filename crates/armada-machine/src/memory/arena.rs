//! Page buffers, kept in one shared-memory file (a memfd) where the host allows it.
//!
//! Why a file: the translation tier reads guest memory at `window + address` (see
//! `window.rs`), and for that each page a lane reads must appear at its guest address in the
//! lane's window while staying the same bytes the rest of armada reads and writes through
//! [`PageBuf`], and while lanes and forked processes still share a page until one of them
//! writes it. A page that is a slot of one file can be mapped into any number of windows
//! and read through all of them, with no copy. Where there is no memfd (other hosts, or
//! `ARMADA_PAGE_FILE=0`) buffers come from the heap and no lane gets a window.
//!
//! Slots are 4 KiB at offsets `slot << 12` of the file, which grows in chunks that are
//! each mapped once into the host. Freed slots are reused (their bytes are not returned to
//! the system, as a heap keeps freed blocks); a thread keeps a few free slots of its own so
//! that the lanes of a batch do not all take one lock for every page they copy.

use super::{PageData, PAGE_SHIFT, PAGE_SIZE};
use std::cell::RefCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

/// Slots a chunk of the file holds (64 MiB), each chunk mapped into the host on its own.
const CHUNK_SLOTS: u32 = 1 << 14;
/// Free slots a thread keeps before it gives half back.
const LOCAL_MAX: usize = 64;
/// Slots handed out (8 MiB) before fresh ones are populated as they are taken (see
/// [`populate`]): a short program takes a few dozen, and a thread's cache of them
/// populated at once cost `hello` a millisecond.
const POPULATE_PAST: u32 = 2048;
/// A buffer not in the file (taken from the heap).
const NO_SLOT: u32 = u32::MAX;

struct Arena {
    fd: OwnedFd,
    inner: Mutex<Inner>,
}

struct Inner {
    /// Each chunk's host address.
    chunks: Vec<usize>,
    /// Slots below this have been handed out at least once (slots above are still zeros).
    next: u32,
    free: Vec<u32>,
}

static ARENA: OnceLock<Option<Arena>> = OnceLock::new();

fn arena() -> Option<&'static Arena> {
    ARENA.get_or_init(Arena::open).as_ref()
}

/// Set by [`heap_only`]: the process keeps its page buffers on the heap.
static HEAP_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Page buffers from the heap for the rest of the process, where none was made in the file
/// yet: for processes whose address spaces never get windows, such as the host's mirrors of
/// GPU lanes, where a heap page's first touch is a private page fault and a slot's a fault
/// on the shared file, which its threads contend for (on the CUDA simulator, 128 Python
/// lanes' "written pages" 0.54-0.88 s -> 0.11-0.21 s, system time 1.1-2.3 s -> 0.4-0.8 s).
/// False where the file is already in use (then nothing changes).
pub(crate) fn heap_only() -> bool {
    // (`ARMADA_PAGE_FILE=1` keeps the file, to measure)
    if std::env::var_os("ARMADA_PAGE_FILE").is_some_and(|v| v == "1") {
        return false;
    }
    HEAP_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
    ARENA.get().is_none_or(|a| a.is_none())
}

/// Whether page buffers live in the shared file, so that windows can be made.
pub(crate) fn shared() -> bool {
    arena().is_some()
}

/// The file, for mapping slots into windows.
pub(crate) fn fd() -> Option<RawFd> {
    arena().map(|a| a.fd.as_raw_fd())
}

impl Arena {
    #[cfg(target_os = "linux")]
    fn open() -> Option<Arena> {
        if std::env::var_os("ARMADA_PAGE_FILE").is_some_and(|v| v == "0")
            || HEAP_ONLY.load(std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        // SAFETY: a plain syscall with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"armada-pages".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        Some(Arena {
            // SAFETY: a new descriptor nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            inner: Mutex::new(Inner {
                chunks: Vec::new(),
                next: 0,
                free: Vec::new(),
            }),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn open() -> Option<Arena> {
        None
    }

    /// Host address of `slot`'s bytes.
    fn addr(inner: &Inner, slot: u32) -> *mut u8 {
        let chunk = inner.chunks[(slot / CHUNK_SLOTS) as usize];
        (chunk + ((slot % CHUNK_SLOTS) as usize) * PAGE_SIZE as usize) as *mut u8
    }

    /// Slots for a thread's cache: up to `n`, each with its address and whether it was
    /// never used (so still zeros).
    fn take(&self, n: usize, out: &mut Vec<(u32, usize, bool)>) {
        let from = out.len();
        if self.take_locked(n, out) > POPULATE_PAST {
            populate(&out[from..]);
        }
    }

    /// As [`Self::take`], without populating; the slots handed out so far.
    fn take_locked(&self, n: usize, out: &mut Vec<(u32, usize, bool)>) -> u32 {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        while out.len() < n {
            if let Some(s) = inner.free.pop() {
                let a = Self::addr(&inner, s) as usize;
                out.push((s, a, false));
                continue;
            }
            if inner.next as usize == inner.chunks.len() * CHUNK_SLOTS as usize
                && !self.grow(&mut inner)
            {
                return inner.next;
            }
            let s = inner.next;
            inner.next += 1;
            let a = Self::addr(&inner, s) as usize;
            out.push((s, a, true));
        }
        inner.next
    }

    /// Adds a chunk to the file and maps it.
    fn grow(&self, inner: &mut Inner) -> bool {
        let chunk_bytes = (CHUNK_SLOTS as u64) << PAGE_SHIFT;
        let Some(len) = (inner.chunks.len() as u64 + 1).checked_mul(chunk_bytes) else {
            return false;
        };
        if len > (NO_SLOT as u64) << PAGE_SHIFT {
            return false;
        }
        // SAFETY: resizing and mapping our own descriptor; the mapping is new memory.
        unsafe {
            if libc::ftruncate(self.fd.as_raw_fd(), len as libc::off_t) != 0 {
                return false;
            }
            let p = libc::mmap(
                std::ptr::null_mut(),
                chunk_bytes as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                (len - chunk_bytes) as libc::off_t,
            );
            if p == libc::MAP_FAILED {
                return false;
            }
            inner.chunks.push(p as usize);
        }
        true
    }
}

/// Has the kernel put pages under the slots never used in `slots` (taken in order, so in
/// runs of neighbours), with one call per run rather than one page fault per slot at its
/// first write: a slot of the file is shared memory, whose faults cost 2-3 µs each.
fn populate(slots: &[(u32, usize, bool)]) {
    let mut i = 0;
    while i < slots.len() {
        if !slots[i].2 {
            i += 1;
            continue;
        }
        let start = slots[i].1;
        let mut end = start + PAGE_SIZE as usize;
        i += 1;
        while i < slots.len() && slots[i].2 && slots[i].1 == end {
            end += PAGE_SIZE as usize;
            i += 1;
        }
        // SAFETY: the range is slots of a chunk's mapping, ours and never used; the call
        // only fills them with zeros (a kernel without it fails it, and faults instead).
        #[cfg(target_os = "linux")]
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            );
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, end);
    }
}

/// This thread's free slots: (slot, host address, still zeros), given back when it ends.
struct Local(Vec<(u32, usize, bool)>);

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(a) = arena() {
            let mut inner = a.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.free.extend(self.0.iter().map(|x| x.0));
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local(Vec::new())) };
}

/// A slot of the file, or None where there is no file (or it cannot grow).
fn alloc_slot() -> Option<(u32, *mut u8, bool)> {
    let a = arena()?;
    LOCAL
        .try_with(|l| {
            let l = &mut l.borrow_mut().0;
            if l.is_empty() {
                a.take(LOCAL_MAX / 2, l);
            }
            l.pop().map(|(s, p, z)| (s, p as *mut u8, z))
        })
        .ok()
        .flatten()
}

fn free_slot(slot: u32, ptr: *mut u8) {
    let Some(a) = arena() else { return };
    let give_back = |s: &[(u32, usize, bool)]| {
        let mut inner = a.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.free.extend(s.iter().map(|x| x.0));
    };
    let kept = LOCAL.try_with(|l| {
        let l = &mut l.borrow_mut().0;
        l.push((slot, ptr as usize, false));
        if l.len() > LOCAL_MAX {
            let half = l.len() - LOCAL_MAX / 2;
            give_back(&l[..half]);
            l.drain(..half);
        }
    });
    if kept.is_err() {
        // the thread is ending: its cache is gone
        give_back(&[(slot, ptr as usize, false)]);
    }
}

/// One page's bytes: a slot of the shared file, or a heap buffer where there is none.
/// Shared between address spaces through `Arc`, copied (`Arc::make_mut`) on a write.
pub struct PageBuf {
    ptr: NonNull<PageData>,
    slot: u32,
    /// A cache holds it for its whole life ([`PageBuf::held_by_cache`]).
    held: bool,
}

// SAFETY: a PageBuf owns its bytes as a Box would (the slot is its alone until dropped).
unsafe impl Send for PageBuf {}
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// A page of zeros.
    pub fn zeroed() -> PageBuf {
        Self::filled(None)
    }

    /// A page holding `data`.
    pub fn from_bytes(data: &PageData) -> PageBuf {
        Self::filled(Some(data))
    }

    /// A page holding `data`, or zeros: a slot's bytes are written once (a slot never used
    /// is zeros already).
    fn filled(data: Option<&PageData>) -> PageBuf {
        match alloc_slot() {
            Some((slot, p, fresh)) => {
                // SAFETY: the slot's PAGE_SIZE bytes are ours, and no `data` is in them.
                unsafe {
                    match data {
                        Some(d) => p.copy_from_nonoverlapping(d.as_ptr(), PAGE_SIZE as usize),
                        None if !fresh => p.write_bytes(0, PAGE_SIZE as usize),
                        None => {}
                    }
                }
                PageBuf {
                    ptr: NonNull::new(p.cast()).expect("a mapped slot"),
                    slot,
                    held: false,
                }
            }
            None => PageBuf {
                ptr: NonNull::from(Box::leak(Box::new(
                    data.copied().unwrap_or([0u8; PAGE_SIZE as usize]),
                ))),
                slot: NO_SLOT,
                held: false,
            },
        }
    }

    /// The page, marked as one a cache holds for as long as it lives: a file's page in the
    /// file-page cache, a page of a loaded ELF image. Every address space maps a clone of the
    /// cache's `Arc`, so the count never falls to one while the page is mapped, nobody writes
    /// it in place (`Arc::make_mut` copies), and its bytes never change. The GPU engines give
    /// such a page one device frame for every lane that maps it. (A copy is not held.)
    pub fn held_by_cache(mut self) -> PageBuf {
        self.held = true;
        self
    }

    /// Whether a cache holds it for its whole life ([`PageBuf::held_by_cache`]).
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// Its slot in the shared file, if it has one.
    pub(crate) fn slot(&self) -> Option<u32> {
        (self.slot != NO_SLOT).then_some(self.slot)
    }
}

impl Clone for PageBuf {
    fn clone(&self) -> PageBuf {
        PageBuf::from_bytes(self)
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        if self.slot == NO_SLOT {
            // SAFETY: made by Box::leak in `zeroed` and owned by this buffer alone.
            drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
        } else {
            free_slot(self.slot, self.ptr.as_ptr().cast());
        }
    }
}

impl std::ops::Deref for PageBuf {
    type Target = PageData;
    fn deref(&self) -> &PageData {
        // SAFETY: the buffer is valid for as long as self.
        unsafe { self.ptr.as_ref() }
    }
}

impl std::ops::DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut PageData {
        // SAFETY: as above, and `&mut self` is the only way to it.
        unsafe { self.ptr.as_mut() }
    }
}

impl From<Box<PageData>> for PageBuf {
    fn from(b: Box<PageData>) -> PageBuf {
        PageBuf::from_bytes(&b)
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageBuf(slot {})", self.slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_copied_and_reused() {
        let mut a = PageBuf::zeroed();
        assert!(a.iter().all(|&b| b == 0));
        a[5] = 9;
        let b = a.clone();
        assert_eq!(b[5], 9);
        assert_ne!(a.as_ptr(), b.as_ptr());
        drop(a);
        // a reused slot is zeroed again
        for _ in 0..3 * LOCAL_MAX {
            assert!(PageBuf::zeroed().iter().all(|&x| x == 0));
        }
        if shared() {
            assert!(b.slot().is_some());
        }
    }
}
