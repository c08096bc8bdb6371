//! Memory shared between the processes of a run: System V segments (`shmget`, `shmat`,
//! `shmdt`, `shmctl`) and anonymous `MAP_SHARED` mappings, which a fork leaves shared.
//!
//! Each process has its own address space, and the processes of a lane run one at a time
//! on one host thread. So a segment is a list of page buffers, and a process that has it
//! attached holds the same buffers (`Arc`s) in its pages. A write by the process makes its
//! page private (copy-on-write, as for any shared page); when the scheduler switches
//! processes, the outgoing one's changed pages become the segment's (`shm_sync_out`: a
//! pointer comparison per page, no copy) and the incoming one takes the segment's current
//! pages (`shm_sync_in`). Between two switches only one process runs, so every process
//! sees every write made before it was switched in: the memory behaves as shared memory
//! does on one CPU. A process with nothing attached pays nothing.
//!
//! One process that attaches one segment twice sees its writes through one attachment in
//! the other when it attaches, detaches or is switched out and in again, not at once (its
//! two mappings are two sets of pages in one address space).

use std::sync::Arc;

use crate::ipc::{self, IpcPerm, Keyed, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT};
use crate::mm::mmap::{MMAP_MIN, MMAP_TOP};
use crate::{rd, wr, Errno, Process, SysResult};
use armada_machine::memory::{AddressSpace, PageBuf, Perm, PAGE_SHIFT, PAGE_SIZE};

const SHM_RDONLY: i32 = 0o10000;
const SHM_RND: i32 = 0o20000;
const SHM_REMAP: i32 = 0o40000;
const SHM_EXEC: i32 = 0o100000;
const SHM_LOCK: i32 = 11;
const SHM_UNLOCK: i32 = 12;
const SHM_STAT: i32 = 13;
const SHM_INFO: i32 = 14;
const SHM_STAT_ANY: i32 = 15;
/// mode bits Linux shows: the segment is marked for removal.
const SHM_DEST: u32 = 0o1000;
/// Largest segment and most pages of all segments of a run (Linux's defaults are larger;
/// these keep one run's shared memory within what a host can give it).
const SHMMAX: u64 = 1 << 36;
const SHMALL_PAGES: u64 = 1 << 24;

/// A shared memory segment.
#[derive(Clone, Debug)]
pub(crate) struct Segment {
    perm: IpcPerm,
    size: u64,
    pub(crate) pages: Vec<Arc<PageBuf>>,
    atime: i64,
    dtime: i64,
    ctime: i64,
    cpid: i32,
    lpid: i32,
    nattch: u64,
    /// Marked for removal (IPC_RMID), or an anonymous mapping's: it goes with its last
    /// attachment.
    dest: bool,
    /// Anonymous MAP_SHARED memory: no key or id reaches it.
    anon: bool,
}

impl Keyed for Segment {
    fn perm(&self) -> &IpcPerm {
        &self.perm
    }
    fn removed(&self) -> bool {
        self.dest
    }
}

/// A segment mapped into a process at `start`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attach {
    start: u64,
    pages: u64,
    seg: i32,
}

/// The pages of attachment `a` that its process changed become the segment's (a page
/// that is not the segment's `Arc` any more was written: copy-on-write made it private).
fn sync_out(ipc: &mut ipc::Ipc, mem: &AddressSpace, a: &Attach) {
    let Some(seg) = ipc.shm.get_mut(&a.seg) else {
        return;
    };
    for k in 0..a.pages.min(seg.pages.len() as u64) {
        let addr = a.start + (k << PAGE_SHIFT);
        if !mem.is_mapped(addr, PAGE_SIZE) {
            continue;
        }
        if let Some(cur) = mem.page_data(addr >> PAGE_SHIFT) {
            let slot = &mut seg.pages[k as usize];
            if !Arc::ptr_eq(cur, slot) {
                *slot = cur.clone();
            }
        }
    }
}

impl Process {
    fn new_segment(&mut self, key: i32, size: u64, mode: u32, anon: bool) -> Result<i32, Errno> {
        let pages = size.div_ceil(PAGE_SIZE);
        let total: u64 = self.ipc.shm.values().map(|s| s.pages.len() as u64).sum();
        if total.saturating_add(pages) > SHMALL_PAGES {
            return Err(if anon { Errno::ENOMEM } else { Errno::ENOSPC });
        }
        let now = ipc::now_s(self);
        let seg = Segment {
            perm: IpcPerm::new(self, key, mode),
            size,
            pages: vec![AddressSpace::zero_page_data(); pages as usize],
            atime: 0,
            dtime: 0,
            ctime: now,
            cpid: self.pid,
            lpid: 0,
            nattch: 0,
            dest: anon,
            anon,
        };
        let id = self.ipc.new_id();
        self.ipc.shm.insert(id, seg);
        Ok(id)
    }

    pub(crate) fn sys_shmget(&mut self, key: i32, size: u64, flags: i32) -> SysResult {
        match ipc::lookup(&self.ipc.shm, key, flags)? {
            Some(id) => {
                let s = &self.ipc.shm[&id];
                if size > s.size {
                    return Err(Errno::EINVAL);
                }
                Ok(id as u64)
            }
            None => {
                if size == 0 || size > SHMMAX {
                    return Err(Errno::EINVAL);
                }
                self.new_segment(key, size, flags as u32, false)
                    .map(|id| id as u64)
            }
        }
    }

    /// Maps segment `id` at `start` (whose range is free) and records the attachment.
    fn attach_at(&mut self, mem: &mut AddressSpace, id: i32, start: u64, perm: Perm) -> SysResult {
        // what this process wrote through another attachment of the segment is the
        // segment's first
        for a in self.shm_attach.iter().filter(|a| a.seg == id) {
            sync_out(&mut self.ipc, mem, a);
        }
        let now = ipc::now_s(self);
        let pid = self.pid;
        let seg = self.ipc.shm.get_mut(&id).ok_or(Errno::EINVAL)?;
        let pages = seg.pages.len() as u64;
        mem.map(start, pages << PAGE_SHIFT, perm)
            .map_err(|_| Errno::ENOMEM)?;
        let zero = AddressSpace::zero_page_data();
        for (k, data) in seg.pages.iter().enumerate() {
            // (an untouched page reads as zeros already: a large fresh mapping costs nothing)
            if !Arc::ptr_eq(data, &zero) {
                mem.share_page((start >> PAGE_SHIFT) + k as u64, data.clone());
            }
        }
        seg.nattch += 1;
        seg.atime = now;
        seg.lpid = pid;
        self.shm_attach.push(Attach {
            start,
            pages,
            seg: id,
        });
        Ok(start)
    }

    pub(crate) fn sys_shmat(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        addr: u64,
        flags: i32,
    ) -> SysResult {
        let seg = match self.ipc.shm.get(&id) {
            Some(s) if !s.anon => s,
            _ => return Err(Errno::EINVAL),
        };
        let len = (seg.pages.len() as u64) << PAGE_SHIFT;
        let mut perm = if flags & SHM_RDONLY != 0 {
            Perm::R
        } else {
            Perm::RW
        };
        if flags & SHM_EXEC != 0 {
            perm = Perm(perm.0 | Perm::X.0);
        }
        let start = if addr == 0 {
            mem.find_free(len, MMAP_MIN, MMAP_TOP)
                .ok_or(Errno::ENOMEM)?
        } else {
            let a = if flags & SHM_RND != 0 {
                addr & !(PAGE_SIZE - 1)
            } else {
                addr
            };
            let end = a.checked_add(len).ok_or(Errno::EINVAL)?;
            if a & (PAGE_SIZE - 1) != 0 || a < MMAP_MIN || end > MMAP_TOP {
                return Err(Errno::EINVAL);
            }
            if !crate::mm::mmap::range_free(mem, a, end) {
                if flags & SHM_REMAP == 0 {
                    return Err(Errno::EINVAL);
                }
                self.sys_munmap(mem, a, len)?;
            }
            a
        };
        self.attach_at(mem, id, start, perm)
    }

    pub(crate) fn sys_shmdt(&mut self, mem: &mut AddressSpace, addr: u64) -> SysResult {
        let k = self
            .shm_attach
            .iter()
            .position(|a| a.start == addr && self.ipc.shm.get(&a.seg).is_some_and(|s| !s.anon))
            .ok_or(Errno::EINVAL)?;
        let a = self.shm_attach[k];
        self.sync_out_one(mem, &a);
        let _ = mem.unmap(a.start, a.pages << PAGE_SHIFT);
        self.shm_attach.remove(k);
        self.detached(a.seg);
        Ok(0)
    }

    /// One attachment of segment `id` went: the segment goes with its last one when it is
    /// marked for removal.
    fn detached(&mut self, id: i32) {
        let now = ipc::now_s(self);
        let pid = self.pid;
        if let Some(s) = self.ipc.shm.get_mut(&id) {
            s.nattch = s.nattch.saturating_sub(1);
            s.dtime = now;
            s.lpid = pid;
            if s.dest && s.nattch == 0 {
                self.ipc.shm.remove(&id);
            }
        }
    }

    /// A MAP_SHARED|MAP_ANONYMOUS mapping at [start, start+len), already mapped with
    /// `perm`: a segment of its own, so that a fork shares it.
    pub(crate) fn shared_anon_mapping(
        &mut self,
        mem: &mut AddressSpace,
        start: u64,
        len: u64,
        perm: Perm,
    ) -> Result<(), Errno> {
        let id = self.new_segment(ipc::IPC_PRIVATE, len, 0o600, true)?;
        let _ = mem.unmap(start, len);
        self.attach_at(mem, id, start, perm).map(|_| ())
    }

    /// A MAP_SHARED file mapping at [start, start+len), already filled from its file: its
    /// pages become a segment of their own, so that a fork shares them (the mapping still
    /// writes back to its file, see `mm::SharedMap`).
    pub(crate) fn shared_file_mapping(
        &mut self,
        mem: &AddressSpace,
        start: u64,
        len: u64,
    ) -> Result<(), Errno> {
        let id = self.new_segment(ipc::IPC_PRIVATE, len, 0o600, true)?;
        let pid = self.pid;
        let zero = AddressSpace::zero_page_data();
        if let Some(seg) = self.ipc.shm.get_mut(&id) {
            for (k, slot) in seg.pages.iter_mut().enumerate() {
                let vpn = (start >> PAGE_SHIFT) + k as u64;
                *slot = mem.page_data(vpn).cloned().unwrap_or_else(|| zero.clone());
            }
            seg.nattch = 1;
            seg.lpid = pid;
        }
        self.shm_attach.push(Attach {
            start,
            pages: len >> PAGE_SHIFT,
            seg: id,
        });
        Ok(())
    }

    /// [a, b) is being unmapped (munmap, a mapping replacing it): the attachments wholly
    /// inside it end (their pages become the segment's first); one that straddles an end
    /// stays for its pages still mapped.
    pub(crate) fn shm_unmapped(&mut self, mem: &AddressSpace, a: u64, b: u64) {
        if self.shm_attach.is_empty() {
            return;
        }
        let mut k = 0;
        while k < self.shm_attach.len() {
            let at = self.shm_attach[k];
            let end = at.start + (at.pages << PAGE_SHIFT);
            if at.start < b && end > a {
                self.sync_out_one(mem, &at);
            }
            if at.start >= a && end <= b {
                self.shm_attach.remove(k);
                self.detached(at.seg);
            } else {
                k += 1;
            }
        }
    }

    fn sync_out_one(&mut self, mem: &AddressSpace, a: &Attach) {
        sync_out(&mut self.ipc, mem, a);
    }

    /// The pages this process changed in its shared segments become the segments' (it is
    /// switched out, or ends, or execs).
    pub fn shm_sync_out(&mut self, mem: &AddressSpace) {
        for a in &self.shm_attach {
            sync_out(&mut self.ipc, mem, a);
        }
    }

    /// This process takes its shared segments' current pages (it is switched in).
    pub fn shm_sync_in(&mut self, mem: &mut AddressSpace) {
        let zero = AddressSpace::zero_page_data();
        for a in &self.shm_attach {
            let Some(seg) = self.ipc.shm.get(&a.seg) else {
                continue;
            };
            for k in 0..a.pages.min(seg.pages.len() as u64) {
                let addr = a.start + (k << PAGE_SHIFT);
                let want = &seg.pages[k as usize];
                let vpn = addr >> PAGE_SHIFT;
                match mem.page_data(vpn) {
                    Some(p) if Arc::ptr_eq(p, want) => continue,
                    None if Arc::ptr_eq(want, &zero) => continue,
                    _ => {}
                }
                if mem.is_mapped(addr, PAGE_SIZE) {
                    mem.share_page(vpn, want.clone());
                }
            }
        }
    }

    /// Every attachment ends (the process ends or execs; its memory was synced out).
    pub(crate) fn shm_detach_all(&mut self) {
        for a in std::mem::take(&mut self.shm_attach) {
            self.detached(a.seg);
        }
    }

    /// A forked child's attachments: the parent's (each segment gains one).
    pub(crate) fn shm_fork(&mut self) -> Vec<Attach> {
        for a in &self.shm_attach {
            if let Some(s) = self.ipc.shm.get_mut(&a.seg) {
                s.nattch += 1;
            }
        }
        self.shm_attach.clone()
    }

    pub(crate) fn sys_shmctl(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        cmd: i32,
        buf: u64,
    ) -> SysResult {
        let cmd = cmd & !ipc::IPC_64;
        match cmd {
            IPC_INFO => {
                // struct shminfo64: shmmax, shmmin, shmmni, shmseg, shmall, 4 unused
                let mut b = [0u8; 72];
                for (k, v) in [SHMMAX, 1, ipc::MAX_OBJECTS as u64, 4096, SHMALL_PAGES]
                    .iter()
                    .enumerate()
                {
                    b[k * 8..k * 8 + 8].copy_from_slice(&v.to_le_bytes());
                }
                wr(mem, buf, &b)?;
                return Ok(self.ipc.shm.keys().max().copied().unwrap_or(0) as u64);
            }
            SHM_INFO => {
                // struct shm_info: used_ids, then shm_tot, shm_rss, shm_swp, 2 unused
                let sysv = self.ipc.shm.values().filter(|s| !s.anon);
                let (n, pages) =
                    sysv.fold((0u64, 0u64), |(n, p), s| (n + 1, p + s.pages.len() as u64));
                let mut b = [0u8; 48];
                b[0..4].copy_from_slice(&(n as u32).to_le_bytes());
                b[8..16].copy_from_slice(&pages.to_le_bytes());
                b[16..24].copy_from_slice(&pages.to_le_bytes());
                wr(mem, buf, &b)?;
                return Ok(self.ipc.shm.keys().max().copied().unwrap_or(0) as u64);
            }
            _ => {}
        }
        let now = ipc::now_s(self);
        let seg = match self.ipc.shm.get_mut(&id) {
            Some(s) if !s.anon => s,
            _ => return Err(Errno::EINVAL),
        };
        match cmd {
            IPC_STAT | SHM_STAT | SHM_STAT_ANY => {
                let mut b = [0u8; 112];
                let mut perm = seg.perm;
                if seg.dest {
                    perm.mode |= SHM_DEST;
                }
                perm.encode(&mut b);
                let put = |b: &mut [u8], at: usize, v: u64| {
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes())
                };
                put(&mut b, 48, seg.size);
                put(&mut b, 56, seg.atime as u64);
                put(&mut b, 64, seg.dtime as u64);
                put(&mut b, 72, seg.ctime as u64);
                b[80..84].copy_from_slice(&seg.cpid.to_le_bytes());
                b[84..88].copy_from_slice(&seg.lpid.to_le_bytes());
                put(&mut b, 88, seg.nattch);
                ipc::write_ds(mem, buf, &b)?;
                Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
            }
            IPC_SET => {
                let mut b = [0u8; ipc::PERM_SIZE];
                rd(mem, buf, &mut b)?;
                seg.perm.set_from(&b);
                seg.ctime = now;
                Ok(0)
            }
            IPC_RMID => {
                seg.dest = true;
                seg.perm.key = ipc::IPC_PRIVATE;
                if seg.nattch == 0 {
                    self.ipc.shm.remove(&id);
                }
                Ok(0)
            }
            SHM_LOCK | SHM_UNLOCK => Ok(0),
            _ => Err(Errno::EINVAL),
        }
    }
}
