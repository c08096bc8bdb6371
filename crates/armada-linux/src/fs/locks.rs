//! Advisory file locks (fs/locks.c): POSIX record locks (fcntl F_SETLK/F_SETLKW/F_GETLK,
//! owned by a process), open-file-description locks (F_OFD_*, owned by the description)
//! and flock (owned by the description).
//!
//! The lane keeps its own lock table, beside its open file descriptions: every guest
//! process is a task of one host process, so the host's POSIX locks could not tell them
//! apart (a host process never conflicts with itself). The consequence, as with the rest of
//! a run's confinement: programs outside the run do not see the guest's locks, nor the
//! guest theirs.
//!
//! Linux's rules kept here: record locks and flock locks do not see each other; a process
//! holds at most one record lock per byte (a new lock replaces and splits its own, and
//! adjacent ones of a type merge); a process's record locks on a file go when it closes any
//! fd of that file or ends; OFD and flock locks go with the description's last fd. A
//! blocking F_SETLKW that would wait on a process that waits on this one is EDEADLK.

use crate::{Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const F_RDLCK: i16 = 0;
const F_WRLCK: i16 = 1;
const F_UNLCK: i16 = 2;

const LOCK_SH: i32 = 1;
const LOCK_EX: i32 = 2;
const LOCK_NB: i32 = 4;
const LOCK_UN: i32 = 8;

/// Who holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Owner {
    /// A POSIX record lock's process.
    Process(i32),
    /// An OFD or flock lock's open file description.
    Description(usize),
}

/// A file as locks know it: the host's device and inode, or for a lane object (a pipe, a
/// socket) its description.
pub(crate) type FileKey = (u64, u64);

#[derive(Clone, Debug)]
struct Lock {
    file: FileKey,
    owner: Owner,
    /// flock's space, not the record locks'.
    flock: bool,
    write: bool,
    /// Bytes `start..=end` (`end` u64::MAX: to the end of file, whatever it becomes).
    start: u64,
    end: u64,
}

impl Lock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }
}

/// The lane's locks, and which process waits on which owner (for EDEADLK).
#[derive(Clone, Debug, Default)]
pub(crate) struct Locks {
    held: Vec<Lock>,
    waiting: std::collections::BTreeMap<i32, Owner>,
}

/// A lock request as read from a guest `struct flock`.
#[derive(Clone, Copy, Debug)]
struct Request {
    kind: i16,
    start: u64,
    end: u64,
}

impl Locks {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The first lock of another owner that keeps `want`'s owner from taking it.
    fn conflict(&self, want: &Lock) -> Option<&Lock> {
        self.held.iter().find(|l| {
            l.file == want.file
                && l.flock == want.flock
                && l.owner != want.owner
                && (want.write || l.write)
                && l.overlaps(want.start, want.end)
        })
    }

    /// Sets (or with F_UNLCK clears) `owner`'s record lock on `start..=end`, splitting
    /// and merging its own locks as Linux does.
    fn set_range(&mut self, file: FileKey, owner: Owner, kind: i16, start: u64, end: u64) {
        let mut kept = Vec::with_capacity(self.held.len() + 2);
        let mut new = Lock {
            file,
            owner,
            flock: false,
            write: kind == F_WRLCK,
            start,
            end,
        };
        for l in self.held.drain(..) {
            let mine = l.file == file && l.owner == owner && !l.flock;
            if !mine {
                kept.push(l);
                continue;
            }
            let adjacent =
                (end != u64::MAX && l.start == end + 1) || (start != 0 && l.end == start - 1);
            if kind != F_UNLCK && l.write == new.write && (l.overlaps(start, end) || adjacent) {
                // the same type: one lock over both
                new.start = new.start.min(l.start);
                new.end = new.end.max(l.end);
                continue;
            }
            if !l.overlaps(start, end) {
                kept.push(l);
                continue;
            }
            // what of the old lock lies outside the new range stays
            if l.start < start {
                kept.push(Lock {
                    end: start - 1,
                    ..l.clone()
                });
            }
            if l.end > end {
                kept.push(Lock {
                    start: end + 1,
                    ..l
                });
            }
        }
        if kind != F_UNLCK {
            kept.push(new);
        }
        self.held = kept;
    }

    /// A process closed an fd of `file`: its record locks on it go.
    pub(crate) fn process_closed(&mut self, pid: i32, file: FileKey) {
        self.held
            .retain(|l| !(l.file == file && l.owner == Owner::Process(pid)));
    }

    /// A process ended: its record locks go, and it waits for nothing.
    pub(crate) fn process_ended(&mut self, pid: i32) {
        self.held.retain(|l| l.owner != Owner::Process(pid));
        self.waiting.remove(&pid);
    }

    /// An open file description went: its OFD and flock locks go.
    pub(crate) fn description_dropped(&mut self, idx: usize) {
        self.held.retain(|l| l.owner != Owner::Description(idx));
    }

    /// Whether `pid` waiting on `on` would close a cycle of processes waiting on each
    /// other's record locks.
    fn would_deadlock(&self, pid: i32, on: Owner) -> bool {
        let mut at = on;
        for _ in 0..=self.waiting.len() {
            match at {
                Owner::Process(p) if p == pid => return true,
                Owner::Process(p) => match self.waiting.get(&p) {
                    Some(&next) => at = next,
                    None => return false,
                },
                Owner::Description(_) => return false,
            }
        }
        false
    }
}

/// Reads a guest `struct flock` (l_type, l_whence, l_start, l_len, l_pid) into a range,
/// `base` giving SEEK_CUR's and `size` SEEK_END's origin.
fn read_flock(
    mem: &mut AddressSpace,
    arg: u64,
    pos: u64,
    size: impl FnOnce() -> Result<u64, Errno>,
) -> Result<Request, Errno> {
    let mut b = [0u8; 32];
    crate::rd(mem, arg, &mut b)?;
    let kind = i16::from_le_bytes([b[0], b[1]]);
    let whence = i16::from_le_bytes([b[2], b[3]]);
    let l_start = i64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
    let l_len = i64::from_le_bytes(b[16..24].try_into().unwrap_or_default());
    if ![F_RDLCK, F_WRLCK, F_UNLCK].contains(&kind) {
        return Err(Errno::EINVAL);
    }
    let origin = match whence {
        0 => 0i64,
        1 => pos as i64,
        2 => size()? as i64,
        _ => return Err(Errno::EINVAL),
    };
    let start = origin.checked_add(l_start).ok_or(Errno::EOVERFLOW)?;
    let (start, end) = match l_len {
        0 => (start, u64::MAX as i64),
        n if n > 0 => (start, start.checked_add(n - 1).ok_or(Errno::EOVERFLOW)?),
        n => (start.checked_add(n).ok_or(Errno::EINVAL)?, start - 1),
    };
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let end = if l_len == 0 { u64::MAX } else { end as u64 };
    Ok(Request {
        kind,
        start: start as u64,
        end,
    })
}

impl crate::io::fd::Files {
    /// The lock key of the file behind description `idx`.
    pub(crate) fn lock_key(&self, idx: usize) -> FileKey {
        let host = self
            .files
            .get(idx)
            .and_then(|f| f.as_ref())
            .and_then(|f| f.host_fd());
        match host.map(crate::io::fd::host_fstat) {
            Some(Ok(st)) => (st.st_dev, st.st_ino),
            _ => (u64::MAX, idx as u64),
        }
    }
}

impl Process {
    /// fcntl's lock commands: F_GETLK/F_SETLK/F_SETLKW (`ofd` false) and their F_OFD_*
    /// forms (`ofd` true).
    pub(crate) fn fcntl_lock(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        arg: u64,
        ofd: bool,
        get: bool,
        wait: bool,
    ) -> SysResult {
        let idx = self.files.entry(fd)?.file;
        let f = self.files.file(fd)?;
        let (pos, flags, host) = (f.pos, f.flags, f.host_fd());
        let req = read_flock(mem, arg, pos, || {
            let fd = host.ok_or(Errno::EINVAL)?;
            crate::io::fd::host_fstat(fd).map(|st| st.st_size as u64)
        })?;
        if ofd {
            // an OFD request's l_pid must be 0
            if crate::rd_u32(mem, arg + 24)? != 0 {
                return Err(Errno::EINVAL);
            }
        }
        let owner = if ofd {
            Owner::Description(idx)
        } else {
            Owner::Process(self.pid)
        };
        let file = self.files.lock_key(idx);
        let want = Lock {
            file,
            owner,
            flock: false,
            write: req.kind == F_WRLCK,
            start: req.start,
            end: req.end,
        };
        if get {
            if req.kind == F_UNLCK {
                return Err(Errno::EINVAL);
            }
            let found = self.files.locks.conflict(&want).cloned();
            match found {
                None => crate::wr(mem, arg, &F_UNLCK.to_le_bytes())?,
                Some(l) => {
                    let mut b = [0u8; 32];
                    let kind = if l.write { F_WRLCK } else { F_RDLCK };
                    b[..2].copy_from_slice(&kind.to_le_bytes());
                    b[8..16].copy_from_slice(&(l.start as i64).to_le_bytes());
                    let len = if l.end == u64::MAX {
                        0
                    } else {
                        (l.end - l.start + 1) as i64
                    };
                    b[16..24].copy_from_slice(&len.to_le_bytes());
                    // an OFD lock has no process: -1
                    let pid = match l.owner {
                        Owner::Process(p) => p,
                        Owner::Description(_) => -1,
                    };
                    b[24..28].copy_from_slice(&pid.to_le_bytes());
                    crate::wr(mem, arg, &b)?;
                }
            }
            return Ok(0);
        }
        // the fd must be open for the kind of lock it takes
        let acc = flags & 3;
        let readable = acc == crate::io::fd::o::O_RDONLY || acc == crate::io::fd::o::O_RDWR;
        let writable = acc == crate::io::fd::o::O_WRONLY || acc == crate::io::fd::o::O_RDWR;
        if (req.kind == F_RDLCK && !readable) || (req.kind == F_WRLCK && !writable) {
            return Err(Errno::EBADF);
        }
        if req.kind != F_UNLCK {
            let blocker = self.files.locks.conflict(&want).map(|l| l.owner);
            if let Some(on) = blocker {
                if !wait {
                    return Err(Errno::EAGAIN);
                }
                if !ofd && self.files.locks.would_deadlock(self.pid, on) {
                    self.files.locks.waiting.remove(&self.pid);
                    return Err(Errno(libc::EDEADLK));
                }
                if !ofd {
                    self.files.locks.waiting.insert(self.pid, on);
                }
                return Err(self.block(crate::proc::wait::WaitKind::Retry, None));
            }
        }
        self.files.locks.waiting.remove(&self.pid);
        self.files
            .locks
            .set_range(file, owner, req.kind, req.start, req.end);
        Ok(0)
    }

    /// flock: a shared or exclusive lock of the whole file by the description, or none.
    pub(crate) fn sys_flock(&mut self, fd: i32, op: i32) -> SysResult {
        let idx = self.files.entry(fd)?.file;
        let kind = match op & !LOCK_NB {
            LOCK_SH => F_RDLCK,
            LOCK_EX => F_WRLCK,
            LOCK_UN => F_UNLCK,
            _ => return Err(Errno::EINVAL),
        };
        let file = self.files.lock_key(idx);
        let owner = Owner::Description(idx);
        let want = Lock {
            file,
            owner,
            flock: true,
            write: kind == F_WRLCK,
            start: 0,
            end: u64::MAX,
        };
        if kind != F_UNLCK && self.files.locks.conflict(&want).is_some() {
            if op & LOCK_NB != 0 {
                return Err(Errno::EAGAIN);
            }
            return Err(self.block(crate::proc::wait::WaitKind::Retry, None));
        }
        let locks = &mut self.files.locks;
        locks
            .held
            .retain(|l| !(l.flock && l.file == file && l.owner == owner));
        if kind != F_UNLCK {
            locks.held.push(want);
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileKey = (1, 2);
    const A: Owner = Owner::Process(10);
    const B: Owner = Owner::Process(11);

    fn probe(owner: Owner, flock: bool, write: bool, start: u64, end: u64) -> Lock {
        Lock {
            file: F,
            owner,
            flock,
            write,
            start,
            end,
        }
    }

    fn ranges(l: &Locks, o: Owner) -> Vec<(bool, u64, u64)> {
        let mut v: Vec<_> = l
            .held
            .iter()
            .filter(|x| x.owner == o)
            .map(|x| (x.write, x.start, x.end))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn own_locks_split_and_merge() {
        let mut l = Locks::default();
        l.set_range(F, A, F_WRLCK, 0, 99);
        l.set_range(F, A, F_RDLCK, 10, 19);
        assert_eq!(
            ranges(&l, A),
            vec![(false, 10, 19), (true, 0, 9), (true, 20, 99)]
        );
        l.set_range(F, A, F_WRLCK, 10, 19);
        assert_eq!(ranges(&l, A), vec![(true, 0, 99)]);
        l.set_range(F, A, F_UNLCK, 50, u64::MAX);
        assert_eq!(ranges(&l, A), vec![(true, 0, 49)]);
        // adjacent locks of one type become one
        l.set_range(F, A, F_WRLCK, 50, 59);
        assert_eq!(ranges(&l, A), vec![(true, 0, 59)]);
    }

    #[test]
    fn conflicts_are_between_owners_and_spaces() {
        let mut l = Locks::default();
        l.set_range(F, A, F_RDLCK, 0, 9);
        assert!(l.conflict(&probe(B, false, false, 0, 9)).is_none());
        assert!(l.conflict(&probe(B, false, true, 5, 5)).is_some());
        assert!(l.conflict(&probe(A, false, true, 5, 5)).is_none());
        // flock's space is another
        assert!(l.conflict(&probe(B, true, true, 0, u64::MAX)).is_none());
        l.process_closed(10, F);
        assert!(l.is_empty());
    }

    #[test]
    fn a_cycle_of_waiters_is_a_deadlock() {
        let mut l = Locks::default();
        l.waiting.insert(11, A);
        assert!(l.would_deadlock(10, B));
        assert!(!l.would_deadlock(12, B));
    }
}
