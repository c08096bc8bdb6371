//! The lock syscalls: fcntl's record-lock commands (F_GETLK, F_SETLK, F_SETLKW and their
//! F_OFD_* forms) and flock, over the lane's lock table (`locks`).

use crate::io::locks::{
    FileKey, Lock, Owner, F_RDLCK, F_UNLCK, F_WRLCK, LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN,
};
use crate::{Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// A lock request as read from a guest `struct flock`.
#[derive(Clone, Copy, Debug)]
struct Request {
    kind: i16,
    start: u64,
    end: u64,
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
                return Err(self.block(crate::sched::WaitKind::Retry, None));
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
            return Err(self.block(crate::sched::WaitKind::Retry, None));
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
