//! Memory syscalls: brk, mmap, munmap, mremap, mprotect, madvise, mincore; and the guest
//! address space layout.
//!
//! Layout (like Linux/arm64 built for 39-bit addresses, `CONFIG_ARM64_VA_BITS_39`): the
//! program at its link address (or at `elf::PIE_LOAD_BIAS`), the heap (brk) right after it,
//! the stack at the top below [`STACK_TOP`], and mmap areas placed top-down below
//! [`MMAP_TOP`]. Nothing is mapped at or above [`TASK_SIZE`], so that every page can be in
//! an address space's window (`memory::window`), where translated code reads it. Programs that ask for higher addresses (Go's heap hints) are given lower ones, as
//! such a kernel gives them.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use crate::{Errno, Process, SysResult};
use armada_machine::memory::{
    AddressSpace, MapError, PageBuf, Perm, ADDR_LIMIT, PAGE_MASK, PAGE_SHIFT, PAGE_SIZE,
};

/// End (exclusive) of the addresses a process can map.
pub const TASK_SIZE: u64 = armada_machine::memory::WINDOW_BYTES;
/// End (exclusive) of the main thread's stack.
pub const STACK_TOP: u64 = TASK_SIZE - 0x1_0000;
/// Size of the stack area (RLIMIT_STACK).
pub const STACK_SIZE: u64 = 8 << 20;
/// mmap areas are placed below this, top-down (a 256 MiB gap under the stack).
pub const MMAP_TOP: u64 = STACK_TOP - STACK_SIZE - 0x1000_0000;
/// Lowest address mmap hands out (vm.mmap_min_addr).
pub const MMAP_MIN: u64 = 0x1_0000;

const PROT_BTI: u64 = 0x10;
const PROT_MTE: u64 = 0x20;

const MAP_SHARED: u32 = 0x01;
const MAP_PRIVATE: u32 = 0x02;
const MAP_SHARED_VALIDATE: u32 = 0x03;
const MAP_TYPE: u32 = 0x0f;
const MAP_FIXED: u32 = 0x10;
const MAP_ANONYMOUS: u32 = 0x20;
const MAP_FIXED_NOREPLACE: u32 = 0x10_0000;

const MREMAP_MAYMOVE: u32 = 1;
const MREMAP_FIXED: u32 = 2;
const MREMAP_DONTUNMAP: u32 = 4;

/// mremap moves at most this many pages (16 GiB): it looks at each page of the range.
const MREMAP_MOVE_MAX_PAGES: u64 = 1 << 22;

const MADV_DONTNEED: i32 = 4;
const MADV_REMOVE: i32 = 9;

/// A MAP_SHARED file mapping. Guest memory is private to the lane, so the file sees the
/// guest's writes when armada writes them back: on msync, munmap, a mapping replacing it, and
/// when the process ends. Only bytes that differ from the contents last read or written back
/// are written (each page's snapshot is the `Arc` the page had then; a guest write makes the
/// page private, so an unchanged page is recognized without comparing). The mapping is not
/// coherent with read()/write() on the same file while it exists.
#[derive(Clone, Debug)]
pub(crate) struct SharedMap {
    start: u64,
    /// The file (a snapshot's copies write back to the same file, as forked ones do).
    fd: Arc<OwnedFd>,
    off: u64,
    /// vpn -> snapshot (None: the page was zero, e.g. beyond the end of the file).
    pages: BTreeMap<u64, Option<Arc<PageBuf>>>,
}

/// What /proc/self/maps says of a file mapping: the file (device, inode, guest path) and
/// the offset of `start` in it.
#[derive(Clone, Debug)]
pub(crate) struct FileMap {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) off: u64,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) name: Vec<u8>,
}

/// Removes [a, b) from a list of ranges: entries inside go, entries across an end are cut
/// (`piece(entry, start, end)` makes the part kept).
fn cut<T>(
    list: &mut Vec<T>,
    a: u64,
    b: u64,
    range: impl Fn(&T) -> (u64, u64),
    piece: impl Fn(&T, u64, u64) -> T,
) {
    if list.is_empty() {
        return;
    }
    let mut out = Vec::with_capacity(list.len());
    for e in list.drain(..) {
        let (x, y) = range(&e);
        if y <= a || x >= b {
            out.push(e);
            continue;
        }
        if x < a {
            out.push(piece(&e, x, a));
        }
        if y > b {
            out.push(piece(&e, b, y));
        }
    }
    *list = out;
}

fn page_up(x: u64) -> Option<u64> {
    x.checked_add(PAGE_MASK).map(|v| v & !PAGE_MASK)
}

fn map_err(e: MapError) -> Errno {
    match e {
        MapError::Invalid => Errno::EINVAL,
        MapError::NoSpace | MapError::OverLimit | MapError::NotMapped => Errno::ENOMEM,
    }
}

/// Whether no area intersects [a, b).
pub(crate) fn range_free(mem: &AddressSpace, a: u64, b: u64) -> bool {
    if mem.area_at(a).is_some() {
        return false;
    }
    !mem.areas().any(|(s, e, _)| s < b && e > a)
}

/// The areas intersecting [a, b), clipped to it, or Err if part of it is unmapped.
fn pieces(mem: &AddressSpace, a: u64, b: u64) -> Result<Vec<(u64, u64, Perm)>, Errno> {
    let mut out = Vec::new();
    let mut cur = a;
    while cur < b {
        match mem.area_at(cur) {
            Some((_, e, p)) => {
                let e = e.min(b);
                out.push((cur, e, p));
                cur = e;
            }
            None => return Err(Errno::ENOMEM),
        }
    }
    Ok(out)
}

impl Process {
    /// Writes the guest's changes to shared file mappings in [a, b) back to their files;
    /// with `forget`, stops tracking those pages (they are being unmapped or replaced).
    pub(crate) fn shared_writeback(&mut self, mem: &AddressSpace, a: u64, b: u64, forget: bool) {
        if self.shared_maps.is_empty() {
            return;
        }
        let (va, vb) = (a >> PAGE_SHIFT, (b.saturating_add(PAGE_MASK)) >> PAGE_SHIFT);
        for m in self.shared_maps.iter_mut() {
            // SAFETY: st is plain data written by the kernel.
            let size = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(m.fd.as_raw_fd(), &mut st) < 0 {
                    0
                } else {
                    st.st_size.max(0) as u64
                }
            };
            let vpns: Vec<u64> = m.pages.range(va..vb).map(|(&v, _)| v).collect();
            for vpn in vpns {
                let cur = mem.page_data(vpn).cloned();
                let snap = m.pages.get(&vpn).cloned().flatten();
                let same = match (&cur, &snap) {
                    (Some(c), Some(s)) => Arc::ptr_eq(c, s) || c[..] == s[..],
                    (None, None) => true,
                    (Some(c), None) => c.iter().all(|&x| x == 0),
                    (None, Some(s)) => s.iter().all(|&x| x == 0),
                };
                if !same {
                    let zero = [0u8; PAGE_SIZE as usize];
                    let c: &[u8] = cur.as_deref().map_or(&zero[..], |p| &p[..]);
                    let s: &[u8] = snap.as_deref().map_or(&zero[..], |p| &p[..]);
                    let page_off = m.off + ((vpn << PAGE_SHIFT) - m.start);
                    let mut i = 0;
                    while i < c.len() {
                        if c[i] == s[i] {
                            i += 1;
                            continue;
                        }
                        let j = (i..c.len()).find(|&j| c[j] == s[j]).unwrap_or(c.len());
                        let fo = page_off + i as u64;
                        if fo < size {
                            let n = ((j - i) as u64).min(size - fo) as usize;
                            // SAFETY: c[i..i+n] is valid memory.
                            unsafe {
                                libc::pwrite(m.fd.as_raw_fd(), c[i..].as_ptr().cast(), n, fo as i64)
                            };
                        }
                        i = j;
                    }
                }
                if forget {
                    m.pages.remove(&vpn);
                } else if let Some(e) = m.pages.get_mut(&vpn) {
                    *e = cur;
                }
            }
        }
        self.shared_maps.retain(|m| !m.pages.is_empty());
    }

    /// A forked child's shared file mappings: the parent's (each with its own copy of the
    /// file's fd), so that what the child writes there reaches the file too.
    pub(crate) fn fork_shared_maps(&self) -> Vec<SharedMap> {
        self.shared_maps
            .iter()
            .filter_map(|m| {
                // SAFETY: duplicating a valid fd; the copy is owned by the new mapping.
                let dup = unsafe { libc::fcntl(m.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
                (dup >= 0).then(|| SharedMap {
                    start: m.start,
                    // SAFETY: fresh fd owned by nobody else.
                    fd: Arc::new(unsafe { OwnedFd::from_raw_fd(dup) }),
                    off: m.off,
                    pages: m.pages.clone(),
                })
            })
            .collect()
    }

    /// Writes every shared file mapping back, and gives its shared memory segments the
    /// pages it changed (the process is ending).
    pub fn flush_shared_mappings(&mut self, mem: &AddressSpace) {
        self.shared_writeback(mem, 0, ADDR_LIMIT, true);
        self.shm_sync_out(mem);
    }

    pub(crate) fn sys_msync(
        &mut self,
        mem: &mut AddressSpace,
        addr: u64,
        len: u64,
        flags: i32,
    ) -> SysResult {
        const MS_ASYNC: i32 = 1;
        const MS_INVALIDATE: i32 = 2;
        const MS_SYNC: i32 = 4;
        if addr & PAGE_MASK != 0
            || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
            || flags & (MS_ASYNC | MS_SYNC) == (MS_ASYNC | MS_SYNC)
        {
            return Err(Errno::EINVAL);
        }
        let len = page_up(len).ok_or(Errno::ENOMEM)?;
        let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
        pieces(mem, addr, end)?;
        self.shared_writeback(mem, addr, end, false);
        Ok(0)
    }

    pub(crate) fn sys_brk(&mut self, mem: &mut AddressSpace, addr: u64) -> SysResult {
        let cur = self.brk_cur;
        if addr < self.brk_start {
            return Ok(cur);
        }
        let (Some(old_top), Some(new_top)) = (page_up(cur), page_up(addr)) else {
            return Ok(cur);
        };
        if new_top > MMAP_TOP {
            return Ok(cur);
        }
        if new_top > old_top {
            if new_top - self.brk_start > mem.limit() || !range_free(mem, old_top, new_top) {
                return Ok(cur);
            }
            let extended = old_top > self.brk_start
                && match mem.area_at(old_top - 1) {
                    Some((s, e, p)) if e == old_top && p == Perm::RW => {
                        mem.resize_area(s, new_top).is_ok()
                    }
                    _ => false,
                };
            if !extended && mem.map(old_top, new_top - old_top, Perm::RW).is_err() {
                return Ok(cur);
            }
        } else if new_top < old_top && mem.unmap(new_top, old_top - new_top).is_err() {
            return Ok(cur);
        }
        self.brk_cur = addr;
        Ok(addr)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_mmap(
        &mut self,
        mem: &mut AddressSpace,
        addr: u64,
        len: u64,
        prot: u64,
        flags: u32,
        fd: i32,
        off: u64,
    ) -> SysResult {
        if prot & !(7 | PROT_BTI) != 0 || prot & PROT_MTE != 0 {
            return Err(Errno::EINVAL);
        }
        let typ = flags & MAP_TYPE;
        if typ != MAP_SHARED && typ != MAP_PRIVATE && typ != MAP_SHARED_VALIDATE {
            return Err(Errno::EINVAL);
        }
        if len == 0 || off & PAGE_MASK != 0 {
            return Err(Errno::EINVAL);
        }
        let len = page_up(len).ok_or(Errno::ENOMEM)?;
        if len > TASK_SIZE || len > mem.limit().saturating_add(PAGE_MASK) & !PAGE_MASK {
            return Err(Errno::ENOMEM);
        }
        let anon = flags & MAP_ANONYMOUS != 0;
        let perm = Perm::from_prot(prot);
        let mut zero_dev = false;
        if !anon {
            off.checked_add(len).ok_or(Errno::EOVERFLOW)?;
            let shared_write = typ != MAP_PRIVATE && perm.contains(Perm::W);
            zero_dev = self.mmap_file_check(fd, shared_write)?;
        }

        // placement
        let fixed = flags & MAP_FIXED != 0;
        let noreplace = flags & MAP_FIXED_NOREPLACE != 0;
        let start = if fixed || noreplace {
            if addr & PAGE_MASK != 0 {
                return Err(Errno::EINVAL);
            }
            let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
            if end > TASK_SIZE {
                return Err(Errno::ENOMEM);
            }
            if noreplace && !fixed && !range_free(mem, addr, end) {
                return Err(Errno::EEXIST);
            }
            addr
        } else {
            let hint = page_up(addr).unwrap_or(0);
            let hint_ok = hint >= MMAP_MIN
                && hint
                    .checked_add(len)
                    .is_some_and(|e| e <= MMAP_TOP && range_free(mem, hint, e));
            if hint_ok {
                hint
            } else {
                mem.find_free(len, MMAP_MIN, MMAP_TOP)
                    .ok_or(Errno::ENOMEM)?
            }
        };

        self.shared_writeback(mem, start, start + len, true);
        self.shm_unmapped(mem, start, start + len);
        self.forget_range(start, start + len);
        mem.map(start, len, perm).map_err(map_err)?;
        if anon && typ != MAP_PRIVATE {
            // shared with the children this process forks
            if let Err(e) = self.shared_anon_mapping(mem, start, len, perm) {
                let _ = mem.unmap(start, len);
                return Err(e);
            }
        }
        if !anon && !zero_dev {
            if let Err(e) = self.map_file(mem, fd, start, len, off, typ == MAP_PRIVATE) {
                let _ = mem.unmap(start, len);
                return Err(e);
            }
            let (name, host) = match self.files.file(fd) {
                Ok(f) => (f.path.clone(), f.host_stat()),
                Err(_) => (Vec::new(), None),
            };
            self.file_maps.push(FileMap {
                start,
                end: start + len,
                off,
                dev: host.map_or(0, |s| s.st_dev),
                ino: host.map_or(0, |s| s.st_ino),
                name,
            });
            // Pages wholly past the end of the file: touching one is SIGBUS on Linux.
            if let Some(size) = host.map(|s| s.st_size.max(0) as u64) {
                let valid = page_up(size.saturating_sub(off)).unwrap_or(u64::MAX);
                if valid < len {
                    let from = start + valid;
                    let _ = mem.protect(from, start + len - from, Perm::NONE);
                    self.past_eof.push((from, start + len));
                }
            }
            if typ != MAP_PRIVATE {
                if let Some(h) = self.files.file(fd).ok().and_then(|f| f.host_fd_pub()) {
                    // SAFETY: duplicating a valid fd; the copy is owned by the mapping.
                    let dup = unsafe { libc::fcntl(h, libc::F_DUPFD_CLOEXEC, 0) };
                    if dup >= 0 {
                        let pages = (start >> PAGE_SHIFT..(start + len) >> PAGE_SHIFT)
                            .map(|v| (v, mem.page_data(v).cloned()))
                            .collect();
                        self.shared_maps.push(SharedMap {
                            start,
                            // SAFETY: fresh fd owned by nobody else.
                            fd: Arc::new(unsafe { OwnedFd::from_raw_fd(dup) }),
                            off,
                            pages,
                        });
                    }
                }
                // shared with the children this process forks (shm_open + mmap + fork)
                self.shared_file_mapping(mem, start, len)?;
            }
        }
        Ok(start)
    }

    pub(crate) fn sys_munmap(&mut self, mem: &mut AddressSpace, addr: u64, len: u64) -> SysResult {
        if addr & PAGE_MASK != 0 || len == 0 {
            return Err(Errno::EINVAL);
        }
        let len = page_up(len).ok_or(Errno::EINVAL)?;
        let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
        self.shared_writeback(mem, addr, end, true);
        self.shm_unmapped(mem, addr, end);
        self.forget_range(addr, end);
        mem.unmap(addr, len).map_err(map_err)?;
        Ok(0)
    }

    /// Whether `addr` lies in a file mapping's pages past the end of its file (a fault there
    /// is SIGBUS, not SIGSEGV).
    pub fn past_eof(&self, addr: u64) -> bool {
        self.past_eof.iter().any(|&(a, b)| addr >= a && addr < b)
    }

    /// [a, b) is unmapped or mapped anew: its pages are no longer past a file's end, nor
    /// named after a file.
    fn forget_range(&mut self, a: u64, b: u64) {
        cut(&mut self.past_eof, a, b, |&r| r, |_, x, y| (x, y));
        cut(
            &mut self.file_maps,
            a,
            b,
            |m| (m.start, m.end),
            |m, x, y| FileMap {
                start: x,
                end: y,
                off: m.off + (x - m.start),
                ..m.clone()
            },
        );
    }

    /// Names [start, end) after a file for /proc/self/maps (the program's interpreter,
    /// mapped by the loader).
    pub fn note_file_map(&mut self, start: u64, end: u64, off: u64, name: &[u8]) {
        self.file_maps.push(FileMap {
            start,
            end,
            off,
            dev: 0,
            ino: 0,
            name: name.to_vec(),
        });
    }

    /// The file an address is mapped from, and the file offset there.
    pub(crate) fn file_map_at(&self, addr: u64) -> Option<(&FileMap, u64)> {
        self.file_maps
            .iter()
            .find(|m| addr >= m.start && addr < m.end)
            .map(|m| (m, m.off + (addr - m.start)))
    }

    pub(crate) fn sys_mprotect(
        &mut self,
        mem: &mut AddressSpace,
        addr: u64,
        len: u64,
        prot: u64,
    ) -> SysResult {
        if addr & PAGE_MASK != 0 || prot & !(7 | PROT_BTI) != 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let len = page_up(len).ok_or(Errno::ENOMEM)?;
        mem.protect(addr, len, Perm::from_prot(prot))
            .map_err(|e| match e {
                MapError::Invalid => Errno::ENOMEM,
                e => map_err(e),
            })?;
        // pages past a file's end stay inaccessible whatever their protection
        let end = addr.saturating_add(len);
        for &(x, y) in &self.past_eof {
            let (a, b) = (x.max(addr), y.min(end));
            if a < b {
                let _ = mem.protect(a, b - a, Perm::NONE);
            }
        }
        Ok(0)
    }

    pub(crate) fn sys_mremap(
        &mut self,
        mem: &mut AddressSpace,
        old: u64,
        old_size: u64,
        new_size: u64,
        flags: u32,
        new_addr: u64,
    ) -> SysResult {
        if old & PAGE_MASK != 0
            || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
            || flags & MREMAP_DONTUNMAP != 0
            || (flags & MREMAP_FIXED != 0 && flags & MREMAP_MAYMOVE == 0)
        {
            return Err(Errno::EINVAL);
        }
        let old_size = page_up(old_size).ok_or(Errno::EINVAL)?;
        let new_size = page_up(new_size).ok_or(Errno::EINVAL)?;
        if new_size == 0 || old_size == 0 {
            return Err(Errno::EINVAL);
        }
        let old_end = old.checked_add(old_size).ok_or(Errno::EFAULT)?;
        // the old range must be mapped with one permission (one VMA)
        let ps = pieces(mem, old, old_end).map_err(|_| Errno::EFAULT)?;
        let perm = ps[0].2;
        if ps.iter().any(|p| p.2 != perm) {
            return Err(Errno::EFAULT);
        }
        let fixed = flags & MREMAP_FIXED != 0;
        // a moved or resized shared file mapping becomes private: write it back first
        self.shared_writeback(mem, old, old_end, true);
        if !fixed {
            if new_size <= old_size {
                if new_size < old_size {
                    mem.unmap(old + new_size, old_size - new_size)
                        .map_err(map_err)?;
                }
                return Ok(old);
            }
            let new_end = old.checked_add(new_size).ok_or(Errno::ENOMEM)?;
            if new_end <= MMAP_TOP.max(old_end) && range_free(mem, old_end, new_end) {
                // grow in place
                if let Some((s, e, _)) = mem.area_at(old_end - 1) {
                    if e == old_end && mem.resize_area(s, new_end).is_ok() {
                        return Ok(old);
                    }
                }
                if mem.map(old_end, new_end - old_end, perm).is_ok() {
                    return Ok(old);
                }
            }
            if flags & MREMAP_MAYMOVE == 0 {
                return Err(Errno::ENOMEM);
            }
        }
        let dest = if fixed {
            if new_addr & PAGE_MASK != 0 {
                return Err(Errno::EINVAL);
            }
            let dend = new_addr.checked_add(new_size).ok_or(Errno::EINVAL)?;
            if dend > TASK_SIZE || (new_addr < old_end && dend > old) {
                return Err(Errno::EINVAL);
            }
            new_addr
        } else {
            mem.find_free(new_size, MMAP_MIN, MMAP_TOP)
                .ok_or(Errno::ENOMEM)?
        };
        let keep = old_size.min(new_size) >> PAGE_SHIFT;
        if keep > MREMAP_MOVE_MAX_PAGES {
            return Err(Errno::ENOMEM);
        }
        mem.map(dest, new_size, perm).map_err(map_err)?;
        // move the materialized pages (sharing the buffers, no copy)
        let (ov, dv) = (old >> PAGE_SHIFT, dest >> PAGE_SHIFT);
        for k in 0..keep {
            if let Some(p) = mem.page_data(ov + k).cloned() {
                mem.share_page(dv + k, p);
            }
        }
        mem.unmap(old, old_size).map_err(map_err)?;
        // the moved pages are anonymous now (a file mapping's name stays with the file)
        self.forget_range(old, old_end);
        self.forget_range(dest, dest + new_size);
        Ok(dest)
    }

    pub(crate) fn sys_madvise(
        &mut self,
        mem: &mut AddressSpace,
        addr: u64,
        len: u64,
        advice: i32,
    ) -> SysResult {
        if addr & PAGE_MASK != 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let len = page_up(len).ok_or(Errno::EINVAL)?;
        let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
        let ps = pieces(mem, addr, end)?;
        if advice == MADV_DONTNEED || advice == MADV_REMOVE {
            self.shared_writeback(mem, addr, end, true);
            for (s, e, p) in ps {
                mem.map(s, e - s, p).map_err(map_err)?;
            }
        }
        Ok(0)
    }

    pub(crate) fn sys_mincore(
        &mut self,
        mem: &mut AddressSpace,
        addr: u64,
        len: u64,
        vec: u64,
    ) -> SysResult {
        if addr & PAGE_MASK != 0 {
            return Err(Errno::EINVAL);
        }
        let len = page_up(len).ok_or(Errno::ENOMEM)?;
        let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
        pieces(mem, addr, end)?;
        let n = len / PAGE_SIZE;
        if n > 1 << 20 {
            return Err(Errno::ENOMEM);
        }
        let v: Vec<u8> = (0..n)
            .map(|k| mem.page_data((addr >> PAGE_SHIFT) + k).is_some() as u8)
            .collect();
        crate::wr(mem, vec, &v)?;
        Ok(0)
    }
}
