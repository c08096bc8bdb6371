//! Files: path resolution for host calls and the file syscalls (open, close, directories,
//! links, fcntl, dup, pipes, ioctl, cwd, modes). The fd table is in `fd`, reading and
//! writing in `rw`, stat in `stat`, readiness in `poll`, armada's own paths in `proc`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::fs::path::*;
use crate::fs::procfs::Special;
use crate::io::fd::o::*;
use crate::io::fd::*;
use crate::io::tty::{Arg, FIONREAD};
use crate::{check_writable, cstr, rd, wr, wr_u32};
use crate::{Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// The host process's umask, read once: the host kernel takes it from the mode of every
/// file armada creates for a guest, on top of the guest's own umask.
fn host_umask() -> u32 {
    static U: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *U.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let l = s.lines().find(|l| l.starts_with("Umask:"))?;
                u32::from_str_radix(l["Umask:".len()..].trim(), 8).ok()
            })
            .unwrap_or(0o022)
    })
}

/// The bits of a guest's `mode` (its umask applied) that the host's umask would take
/// away: a file made with them must get them back with a chmod, so `umask(0)` then
/// `open(..., 0666)` makes a 0666 file as on Linux.
pub(crate) fn lost_to_host_umask(mode: u32) -> u32 {
    mode & 0o777 & host_umask()
}

/// Gives a file just made at `t` the guest's `mode` when the host's umask took bits.
pub(crate) fn restore_mode(t: &HostTarget, mode: u32) {
    if lost_to_host_umask(mode) != 0 {
        // SAFETY: valid C string; the file was just made there.
        unsafe { libc::fchmodat(t.dirfd, t.path.as_ptr(), mode & 0o7777, 0) };
    }
}

/// Whether `t` is a FIFO (following a final symlink when `follow`).
fn is_fifo(t: &HostTarget, follow: bool) -> bool {
    // SAFETY: a zeroed stat is a valid out-buffer; valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let fl = if follow && !t.confined {
        0
    } else {
        libc::AT_SYMLINK_NOFOLLOW
    };
    // SAFETY: as above.
    let ok = unsafe { libc::fstatat(t.dirfd, t.path.as_ptr(), &mut st, fl) } == 0;
    ok && st.st_mode & libc::S_IFMT == libc::S_IFIFO
}

/// A path resolved for a host call: `path` relative to host directory `dirfd`.
pub(crate) struct HostTarget {
    pub(crate) dirfd: RawFd,
    pub(crate) path: CString,
    pub(crate) guest: Vec<u8>,
    /// Resolved by armada inside the root: the final component is already followed (when
    /// asked), so host calls should not follow symlinks again.
    pub(crate) confined: bool,
    /// The directory `dirfd` is, when this target opened it (see [`walk_long`]).
    _held: Option<OwnedFd>,
}

/// A host path longer than the host's PATH_MAX, as a directory opened on a leading part of
/// it and the rest. The guest's cwd joined with a relative path can pass PATH_MAX where
/// the guest's own argument does not (Go's TestRemoveAllLongPath nests 41 directories of
/// 100 bytes): Linux walks from the cwd it holds, so the guest must not see ENAMETOOLONG.
fn walk_long(mut dirfd: RawFd, path: &[u8]) -> Result<(Option<OwnedFd>, Vec<u8>), Errno> {
    const CHUNK: usize = 2048;
    let mut held: Option<OwnedFd> = None;
    let mut rest = path;
    while rest.len() >= libc::PATH_MAX as usize {
        // the longest run of whole components that fits in CHUNK (a component alone may
        // not be longer than NAME_MAX, so there is one)
        let cut = rest[..CHUNK]
            .iter()
            .rposition(|&c| c == b'/')
            .filter(|&i| i > 0)
            .unwrap_or(1);
        let head = CString::new(&rest[..cut]).map_err(|_| Errno::EINVAL)?;
        let fl = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        // SAFETY: valid C string; dirfd is AT_FDCWD, the caller's, or one we hold.
        let fd = unsafe { libc::openat(dirfd, head.as_ptr(), fl) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: just opened, ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        dirfd = fd.as_raw_fd();
        held = Some(fd);
        rest = &rest[cut..];
        while rest.first() == Some(&b'/') {
            rest = &rest[1..];
        }
    }
    Ok((held, rest.to_vec()))
}

impl Process {
    /// What follows /proc/self/cwd (or /proc/PID/cwd of this process) in `path`, without
    /// its slash: empty for the link itself; None when the path is not under it.
    fn proc_cwd_rest(&self, dirfd: i32, path: &[u8]) -> Option<Vec<u8>> {
        if !path.windows(3).any(|w| w == b"cwd") {
            return None;
        }
        let p = normalize_lexically(&self.dir_guest_path(dirfd).ok()?, path);
        let pid = format!("/proc/{}/cwd", self.pid);
        let rest = p
            .strip_prefix(b"/proc/self/cwd".as_slice())
            .or_else(|| p.strip_prefix(pid.as_bytes()))?;
        match rest {
            [] => Some(Vec::new()),
            [b'/', r @ ..] => Some(r.to_vec()),
            _ => None,
        }
    }

    pub(crate) fn dir_guest_path(&self, dirfd: i32) -> Result<Vec<u8>, Errno> {
        if dirfd == AT_FDCWD {
            return Ok(self.cwd.guest.clone());
        }
        let f = self.files.file(dirfd)?;
        if !f.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(f.path.clone())
    }

    /// Resolves a guest path for a host call. `follow`: whether a final symlink is followed.
    pub(crate) fn resolve(
        &self,
        dirfd: i32,
        path: &[u8],
        follow: bool,
    ) -> Result<HostTarget, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        // /proc/self/cwd is the guest's cwd (the host's would be armada's own)
        let in_cwd;
        let path = match self.proc_cwd_rest(dirfd, path) {
            Some(rest) => {
                let mut p = self.cwd.guest.clone();
                if !rest.is_empty() {
                    if p.last() != Some(&b'/') {
                        p.push(b'/');
                    }
                    p.extend_from_slice(&rest);
                }
                in_cwd = p;
                &in_cwd[..]
            }
            None => path,
        };
        match &self.root {
            None => {
                let abs = path.first() == Some(&b'/');
                let prefixed = abs
                    .then_some(self.cfg.sysroot.as_deref())
                    .flatten()
                    .and_then(|dir| crate::fs::path::under_prefix(dir, path));
                let (host_dirfd, host_path) = if let Some(p) = prefixed {
                    (libc::AT_FDCWD, p.into_os_string().into_vec())
                } else if abs {
                    (libc::AT_FDCWD, path.to_vec())
                } else if dirfd == AT_FDCWD {
                    let mut p = self.cwd.guest.clone();
                    if p.last() != Some(&b'/') {
                        p.push(b'/');
                    }
                    p.extend_from_slice(path);
                    (libc::AT_FDCWD, p)
                } else {
                    let f = self.files.file(dirfd)?;
                    match f.host_fd() {
                        Some(fd) => (fd, path.to_vec()),
                        None => return Err(Errno::ENOTDIR),
                    }
                };
                let base = if abs {
                    b"/".to_vec()
                } else {
                    self.dir_guest_path(dirfd).unwrap_or_else(|_| b"/".to_vec())
                };
                let (held, host_path) = if host_path.len() >= libc::PATH_MAX as usize {
                    if path.len() >= libc::PATH_MAX as usize {
                        return Err(Errno(libc::ENAMETOOLONG));
                    }
                    walk_long(host_dirfd, &host_path)?
                } else {
                    (None, host_path)
                };
                Ok(HostTarget {
                    dirfd: held.as_ref().map_or(host_dirfd, |f| f.as_raw_fd()),
                    path: CString::new(host_path).map_err(|_| Errno::EINVAL)?,
                    guest: normalize_lexically(&base, path),
                    confined: false,
                    _held: held,
                })
            }
            Some(root) => {
                let base = if path.first() == Some(&b'/') {
                    b"/".to_vec()
                } else {
                    self.dir_guest_path(dirfd)?
                };
                let r = resolve_in_root(root, &base, path, follow)?;
                Ok(HostTarget {
                    dirfd: libc::AT_FDCWD,
                    path: CString::new(r.host.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)?,
                    guest: r.guest,
                    confined: true,
                    _held: None,
                })
            }
        }
    }

    /// AT_SYMLINK_NOFOLLOW for a host *at call on `t`.
    pub(crate) fn at_nofollow(t: &HostTarget, follow: bool) -> i32 {
        if !follow || t.confined {
            libc::AT_SYMLINK_NOFOLLOW
        } else {
            0
        }
    }

    // ----- read / write core -------------------------------------------------------------

    // ----- syscalls ----------------------------------------------------------------------

    pub(crate) fn sys_openat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        flags: u32,
        mode: u32,
    ) -> SysResult {
        let p = cstr(mem, path)?;
        if let Some(sp) = self.special(dirfd, &p) {
            return self.open_special(mem, sp, flags);
        }
        let follow = flags & O_NOFOLLOW == 0 && flags & (O_CREAT | O_EXCL) != (O_CREAT | O_EXCL);
        let t = self.resolve(dirfd, &p, follow)?;
        let mut hflags = host_open_flags(flags) | libc::O_CLOEXEC;
        if t.confined {
            hflags |= libc::O_NOFOLLOW;
        }
        let creating = flags & O_CREAT != 0 || flags & O_TMPFILE_BIT != 0;
        let mode = if creating {
            mode & 0o7777 & !self.umask
        } else {
            0
        };
        let open = |fl: i32| {
            // SAFETY: path is a valid C string.
            let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), fl, mode as libc::c_uint) };
            if fd < 0 {
                Err(Errno::last())
            } else {
                Ok(fd)
            }
        };
        let acc = flags & O_ACCMODE;
        let fd = if flags & (O_NONBLOCK | O_PATH) == 0
            && acc != O_RDWR
            && self.others_may_run()
            && is_fifo(&t, follow)
        {
            // a FIFO's open waits for the other end, which another task of the lane may be
            // about to open: wait as a task, never in the host's open
            self.open_fifo(&t, hflags, acc == O_WRONLY, &p)?
        } else if creating && lost_to_host_umask(mode) != 0 {
            // the host's umask would take bits the guest's leaves: make the file
            // exclusively so a new file is known, and give it the guest's mode
            let excl = flags & O_EXCL != 0 || flags & O_TMPFILE_BIT != 0;
            let made = if excl {
                open(hflags)
            } else {
                open(hflags | libc::O_EXCL)
            };
            match made {
                Ok(fd) => {
                    // SAFETY: fd is the file just made.
                    unsafe { libc::fchmod(fd, mode & 0o7777) };
                    fd
                }
                // there already: opened as it is (or made through a dangling symlink)
                Err(Errno::EEXIST) if !excl => match open(hflags & !libc::O_CREAT) {
                    Err(Errno::ENOENT) => open(hflags)?,
                    r => r?,
                },
                Err(e) => return Err(e),
            }
        } else {
            open(hflags)?
        };
        // SAFETY: fresh fd owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let hmode = host_mode(fd.as_raw_fd());
        // no O_LARGEFILE: qemu-user on a 64-bit host does not report it either
        let keep = flags & !(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC | O_LARGEFILE);
        let idx = self.files.add(OpenFile::new(
            Kind::Host {
                fd: HostFd::Owned(fd),
                mode: hmode,
            },
            keep,
            t.guest,
        ));
        let limit = self.nofile();
        self.files
            .install(idx, 0, flags & O_CLOEXEC != 0, limit)
            .map(|fd| fd as u64)
    }

    /// A blocking open of a host FIFO while other tasks may run: opened without blocking,
    /// and the task waits until the other end is there (a writer: a reader exists, else
    /// ENXIO from the host; a reader: a writer has written or come and gone). A reader's
    /// descriptor is kept across the waits, so a writer waiting for it sees a reader.
    fn open_fifo(
        &mut self,
        t: &HostTarget,
        hflags: i32,
        writer: bool,
        guest: &[u8],
    ) -> Result<i32, Errno> {
        let tid = self.thread.tid;
        let kept = self
            .fifo_opens
            .iter()
            .position(|(k, g, _)| *k == tid && g == guest);
        let fd = match kept {
            Some(i) => self.fifo_opens.remove(i).2,
            None => {
                // (another open by this task replaces what an interrupted one kept)
                self.fifo_opens.retain(|(k, _, _)| *k != tid);
                // SAFETY: valid C string.
                let fd =
                    unsafe { libc::openat(t.dirfd, t.path.as_ptr(), hflags | libc::O_NONBLOCK, 0) };
                if fd < 0 {
                    let e = Errno::last();
                    if writer && e == Errno(libc::ENXIO) {
                        let wake = self.host_poll_wake(None, true);
                        return Err(self.block_until(crate::sched::WaitKind::Retry, None, wake));
                    }
                    return Err(e);
                }
                // SAFETY: just opened, ours.
                std::sync::Arc::new(unsafe { OwnedFd::from_raw_fd(fd) })
            }
        };
        if !writer {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd.
            if unsafe { libc::poll(&mut p, 1, 0) } == 0 {
                self.fifo_opens.push((tid, guest.to_vec(), fd));
                let wake = self.host_poll_wake(None, true);
                return Err(self.block_until(crate::sched::WaitKind::Retry, None, wake));
            }
        }
        // SAFETY: dup of our descriptor, as blocking as the guest asked.
        let d = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return Err(Errno::last());
        }
        // SAFETY: fcntl on the descriptor just made.
        unsafe {
            let fl = libc::fcntl(d, libc::F_GETFL);
            libc::fcntl(d, libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
        Ok(d)
    }

    pub(crate) fn sys_close(&mut self, fd: i32) -> SysResult {
        self.files.close(fd).map(|_| 0)
    }

    pub(crate) fn sys_close_range(&mut self, first: u32, last: u32, flags: u32) -> SysResult {
        const CLOSE_RANGE_UNSHARE: u32 = 2;
        const CLOSE_RANGE_CLOEXEC: u32 = 4;
        if first > last || flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let end = (last as usize).min(self.files.fds.len().saturating_sub(1));
        for fd in first as usize..=end {
            if fd >= self.files.fds.len() {
                break;
            }
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                if let Some(e) = self.files.fds[fd].as_mut() {
                    e.cloexec = true;
                }
            } else if self.files.fds[fd].is_some() {
                let _ = self.files.close(fd as i32);
            }
        }
        Ok(0)
    }

    pub(crate) fn sys_lseek(&mut self, fd: i32, off: i64, whence: i32) -> SysResult {
        let f = self.files.file_mut(fd)?;
        if f.flags & O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        match &f.kind {
            Kind::Host { fd, .. } => {
                // SAFETY: plain integer arguments.
                let r = unsafe { libc::lseek(fd.raw(), off, whence) };
                if r < 0 {
                    Err(Errno::last())
                } else {
                    Ok(r as u64)
                }
            }
            Kind::Mem(data) => {
                let new = match whence {
                    0 => Some(off),
                    1 => (f.pos as i64).checked_add(off),
                    2 => (data.len() as i64).checked_add(off),
                    _ => return Err(Errno::EINVAL),
                };
                match new {
                    Some(n) if n >= 0 => {
                        f.pos = n as u64;
                        Ok(n as u64)
                    }
                    _ => Err(Errno::EINVAL),
                }
            }
            Kind::Null | Kind::Zero | Kind::Random => Ok(0),
            Kind::StdinBuf(_)
            | Kind::Out(_)
            | Kind::Pipe { .. }
            | Kind::Socket { .. }
            | Kind::NetSock
            | Kind::Event(_) => Err(Errno::ESPIPE),
        }
    }

    pub(crate) fn sys_getdents64(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        count: u64,
    ) -> SysResult {
        let f = self.files.file(fd)?;
        if f.flags & O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        let Some(h) = f.host_fd() else {
            return Err(Errno::ENOTDIR);
        };
        let n = (count.min(1 << 20)) as usize;
        check_writable(mem, buf, n as u64)?;
        if self.is_own_fd_dir(&self.files.file(fd)?.path) {
            // this process's fds, not armada's (Python's close_fds walks this listing)
            let v = self.fd_listing(h, n)?;
            wr(mem, buf, &v)?;
            return Ok(v.len() as u64);
        }
        let mut tmp = vec![0u8; n];
        // SAFETY: tmp is valid for n bytes.
        let r = unsafe { libc::syscall(libc::SYS_getdents64, h, tmp.as_mut_ptr(), n) };
        if r < 0 {
            return Err(Errno::last());
        }
        let r = (r as usize).min(n);
        if self.root.is_none() && self.files.file(fd)?.path == b"/proc" {
            // the lane's processes, not the host's
            let v = self.proc_listing(fd, &tmp[..r], n);
            if v.is_empty() && r > 0 {
                // a chunk of host processes only: on to the next
                return self.sys_getdents64(mem, fd, buf, count);
            }
            wr(mem, buf, &v)?;
            return Ok(v.len() as u64);
        }
        wr(mem, buf, &tmp[..r])?;
        Ok(r as u64)
    }

    pub(crate) fn sys_readlinkat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        buf: u64,
        size: u64,
    ) -> SysResult {
        let size = size as i32;
        if size <= 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let cwd_link = self.proc_cwd_rest(dirfd, &p).is_some_and(|r| r.is_empty());
        let target = match self.special(dirfd, &p) {
            _ if cwd_link => self.cwd.guest.clone(),
            Some(Special::Exe) => self.exe_guest_bytes(),
            Some(Special::Fd(n)) => {
                let f = self.files.file(n)?;
                match &f.kind {
                    Kind::Pipe { id, .. } => format!("pipe:[{}]", 1000 + id).into_bytes(),
                    Kind::Socket { rx, .. } => format!("socket:[{}]", 3000 + rx).into_bytes(),
                    Kind::NetSock => {
                        let e = self.files.entry(n)?;
                        format!("socket:[{}]", 60000 + e.file).into_bytes()
                    }
                    Kind::Event(o) => o.link_name().to_vec(),
                    Kind::StdinBuf(_) | Kind::Out(_) => format!("pipe:[{}]", 900 + n).into_bytes(),
                    _ if !f.path.is_empty() => f.path.clone(),
                    Kind::Host { fd, .. } => fd_path(fd.raw()).ok_or(Errno::ENOENT)?,
                    _ => return Err(Errno::ENOENT),
                }
            }
            Some(_) => return Err(Errno::EINVAL),
            None => {
                let t = self.resolve(dirfd, &p, false)?;
                let mut out = vec![0u8; crate::PATH_MAX];
                // SAFETY: valid C string; out is valid for its length.
                let r = unsafe {
                    libc::readlinkat(t.dirfd, t.path.as_ptr(), out.as_mut_ptr().cast(), out.len())
                };
                out.truncate(cvt_size(r)?);
                out
            }
        };
        let n = target.len().min(size as usize);
        wr(mem, buf, &target[..n])?;
        Ok(n as u64)
    }

    pub(crate) fn sys_faccessat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        mode: i32,
        flags: i32,
    ) -> SysResult {
        if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        if p.is_empty() {
            return if flags & AT_EMPTY_PATH != 0 {
                self.files.file(dirfd).map(|_| 0)
            } else {
                Err(Errno::ENOENT)
            };
        }
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        if let Some(sp) = self.special(dirfd, &p) {
            return match sp {
                Special::Exe => {
                    let c = self.exe_host_cpath()?;
                    // SAFETY: valid C string.
                    cvt(unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, 0) })
                }
                Special::Fd(n) => self.files.file(n).map(|_| 0),
                Special::Maps | Special::System(_) | Special::Proc(..) if mode & 2 != 0 => {
                    Err(Errno::EACCES)
                }
                _ if mode & 1 != 0 => Err(Errno::EACCES),
                _ => Ok(0),
            };
        }
        let t = self.resolve(dirfd, &p, follow)?;
        let hflags = (flags & AT_EACCESS) | Self::at_nofollow(&t, follow);
        // SAFETY: valid C string.
        cvt(unsafe { libc::faccessat(t.dirfd, t.path.as_ptr(), mode, hflags) })
    }

    pub(crate) fn sys_mkdirat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        mode: u32,
    ) -> SysResult {
        let p = cstr(mem, path)?;
        let t = self.resolve(dirfd, &p, false)?;
        let mode = mode & 0o7777 & !self.umask;
        // SAFETY: valid C string.
        let r = cvt(unsafe { libc::mkdirat(t.dirfd, t.path.as_ptr(), mode) })?;
        restore_mode(&t, mode);
        Ok(r)
    }

    pub(crate) fn sys_mknodat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        mode: u32,
        dev: u64,
    ) -> SysResult {
        let p = cstr(mem, path)?;
        let kind = mode & libc::S_IFMT;
        if kind != 0 && kind != libc::S_IFREG && kind != libc::S_IFIFO {
            return Err(Errno::EPERM);
        }
        let t = self.resolve(dirfd, &p, false)?;
        let m = (mode & libc::S_IFMT) | (mode & 0o7777 & !self.umask);
        // SAFETY: valid C string.
        let r = cvt(unsafe { libc::mknodat(t.dirfd, t.path.as_ptr(), m, dev) })?;
        restore_mode(&t, m & 0o7777);
        Ok(r)
    }

    pub(crate) fn sys_unlinkat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let t = self.resolve(dirfd, &p, false)?;
        // SAFETY: valid C string.
        cvt(unsafe { libc::unlinkat(t.dirfd, t.path.as_ptr(), flags & AT_REMOVEDIR) })
    }

    pub(crate) fn sys_symlinkat(
        &mut self,
        mem: &mut AddressSpace,
        target: u64,
        dirfd: i32,
        path: u64,
    ) -> SysResult {
        let target = cstr(mem, target)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let p = cstr(mem, path)?;
        let t = self.resolve(dirfd, &p, false)?;
        let target = CString::new(target).map_err(|_| Errno::EINVAL)?;
        // SAFETY: valid C strings.
        cvt(unsafe { libc::symlinkat(target.as_ptr(), t.dirfd, t.path.as_ptr()) })
    }

    pub(crate) fn sys_linkat(
        &mut self,
        mem: &mut AddressSpace,
        olddir: i32,
        old: u64,
        newdir: i32,
        new: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let op = cstr(mem, old)?;
        let np = cstr(mem, new)?;
        if op.is_empty() {
            return Err(Errno::ENOENT);
        }
        let follow = flags & AT_SYMLINK_FOLLOW != 0;
        let o = self.resolve(olddir, &op, follow)?;
        let n = self.resolve(newdir, &np, false)?;
        let hflags = if follow && !o.confined {
            libc::AT_SYMLINK_FOLLOW
        } else {
            0
        };
        // SAFETY: valid C strings.
        cvt(unsafe { libc::linkat(o.dirfd, o.path.as_ptr(), n.dirfd, n.path.as_ptr(), hflags) })
    }

    pub(crate) fn sys_renameat2(
        &mut self,
        mem: &mut AddressSpace,
        olddir: i32,
        old: u64,
        newdir: i32,
        new: u64,
        flags: u32,
    ) -> SysResult {
        let op = cstr(mem, old)?;
        let np = cstr(mem, new)?;
        let o = self.resolve(olddir, &op, false)?;
        let n = self.resolve(newdir, &np, false)?;
        if flags == 0 {
            // SAFETY: valid C strings.
            return cvt(unsafe {
                libc::renameat(o.dirfd, o.path.as_ptr(), n.dirfd, n.path.as_ptr())
            });
        }
        // SAFETY: valid C strings.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                o.dirfd,
                o.path.as_ptr(),
                n.dirfd,
                n.path.as_ptr(),
                flags,
            )
        };
        if r < 0 {
            Err(Errno::last())
        } else {
            Ok(0)
        }
    }

    pub(crate) fn sys_truncate(
        &mut self,
        mem: &mut AddressSpace,
        path: u64,
        len: i64,
    ) -> SysResult {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let t = self.resolve(AT_FDCWD, &p, true)?;
        let mut fl = libc::O_WRONLY | libc::O_CLOEXEC;
        if t.confined {
            fl |= libc::O_NOFOLLOW;
        }
        // SAFETY: valid C string.
        let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), fl) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain arguments.
        cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len) })
    }

    pub(crate) fn sys_ftruncate(&mut self, fd: i32, len: i64) -> SysResult {
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        let f = self.files.file(fd)?;
        match f.host_fd() {
            // SAFETY: plain arguments.
            Some(h) if f.flags & O_PATH == 0 => cvt(unsafe { libc::ftruncate(h, len) }),
            Some(_) => Err(Errno::EBADF),
            None => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_fallocate(&mut self, fd: i32, mode: i32, off: i64, len: i64) -> SysResult {
        let f = self.files.file(fd)?;
        match f.host_fd() {
            // SAFETY: plain arguments.
            Some(h) => cvt(unsafe { libc::fallocate(h, mode, off, len) }),
            None => Err(Errno::ESPIPE),
        }
    }

    pub(crate) fn sys_fsync(&mut self, fd: i32) -> SysResult {
        let f = self.files.file(fd)?;
        match f.host_fd() {
            // SAFETY: plain arguments.
            Some(h) => cvt(unsafe { libc::fsync(h) }).or(Ok(0)),
            None => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_fcntl(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        cmd: i32,
        arg: u64,
    ) -> SysResult {
        const F_DUPFD: i32 = 0;
        const F_GETFD: i32 = 1;
        const F_SETFD: i32 = 2;
        const F_GETFL: i32 = 3;
        const F_SETFL: i32 = 4;
        const F_GETLK: i32 = 5;
        const F_SETLK: i32 = 6;
        const F_SETLKW: i32 = 7;
        const F_SETOWN: i32 = 8;
        const F_GETOWN: i32 = 9;
        const F_OFD_GETLK: i32 = 36;
        const F_OFD_SETLK: i32 = 37;
        const F_OFD_SETLKW: i32 = 38;
        const F_DUPFD_CLOEXEC: i32 = 1030;
        const F_SETPIPE_SZ: i32 = 1031;
        const F_GETPIPE_SZ: i32 = 1032;
        let e = self.files.entry(fd)?;
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                let limit = self.nofile();
                if arg >= limit {
                    return Err(Errno::EINVAL);
                }
                self.files
                    .install(e.file, arg as usize, cmd == F_DUPFD_CLOEXEC, limit)
                    .map(|fd| fd as u64)
            }
            F_GETFD => Ok(e.cloexec as u64),
            F_SETFD => {
                if let Some(Some(en)) = self.files.fds.get_mut(fd as usize) {
                    en.cloexec = arg & 1 != 0;
                }
                Ok(0)
            }
            F_GETFL => {
                let f = self.files.file(fd)?;
                Ok(match &f.kind {
                    Kind::Host { fd, .. } if f.flags & O_PATH == 0 => {
                        host_getfl(fd.raw()) & !O_LARGEFILE
                    }
                    _ => f.flags,
                } as u64)
            }
            F_SETFL => {
                let changeable = O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK;
                let f = self.files.file_mut(fd)?;
                if f.flags & O_PATH != 0 {
                    return Err(Errno::EBADF);
                }
                let new = (f.flags & !changeable) | (arg as u32 & changeable);
                if let Kind::Host { fd, .. } = &f.kind {
                    // SAFETY: plain arguments.
                    let cur = unsafe { libc::fcntl(fd.raw(), libc::F_GETFL) };
                    if cur >= 0 {
                        let hmask = libc::O_APPEND | libc::O_NONBLOCK | libc::O_NOATIME;
                        let hnew = (cur & !hmask) | (host_open_flags(new) & hmask);
                        // SAFETY: plain arguments.
                        if unsafe { libc::fcntl(fd.raw(), libc::F_SETFL, hnew) } < 0 {
                            return Err(Errno::last());
                        }
                    }
                }
                f.flags = new;
                Ok(0)
            }
            F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW => {
                let ofd = cmd >= F_OFD_GETLK;
                let get = cmd == F_GETLK || cmd == F_OFD_GETLK;
                let wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
                self.fcntl_lock(mem, fd, arg, ofd, get, wait)
            }
            F_SETOWN | F_GETOWN => Ok(0),
            F_GETPIPE_SZ | F_SETPIPE_SZ => {
                let Kind::Pipe { id, .. } = self.files.file(fd)?.kind else {
                    return Err(Errno::EBADF);
                };
                let Some(Some(p)) = self.files.pipes.get_mut(id) else {
                    return Err(Errno::EBADF);
                };
                if cmd == F_GETPIPE_SZ {
                    return Ok(p.cap() as u64);
                }
                // whole pages, a power of two of them; past /proc/sys/fs/pipe-max-size
                // only with CAP_SYS_RESOURCE; never below what the pipe holds now
                const CAP_SYS_RESOURCE: u32 = 24;
                let size = (arg as u32 as u64).max(4096).next_power_of_two();
                if size > PIPE_MAX_SIZE && !self.creds.capable(CAP_SYS_RESOURCE) {
                    return Err(Errno::EPERM);
                }
                if size > 1 << 31 {
                    return Err(Errno::EINVAL);
                }
                if (size as usize) < p.buf.len() {
                    return Err(Errno(libc::EBUSY));
                }
                p.size = size as usize;
                Ok(size)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_dup(&mut self, fd: i32) -> SysResult {
        let e = self.files.entry(fd)?;
        let limit = self.nofile();
        self.files
            .install(e.file, 0, false, limit)
            .map(|fd| fd as u64)
    }

    pub(crate) fn sys_dup3(&mut self, old: i32, new: i32, flags: i32) -> SysResult {
        if flags & !(O_CLOEXEC as i32) != 0 || old == new {
            return Err(Errno::EINVAL);
        }
        let e = self.files.entry(old)?;
        if new < 0 || new as u64 >= self.nofile() {
            return Err(Errno::EBADF);
        }
        self.files
            .install_at(e.file, new as usize, flags & O_CLOEXEC as i32 != 0)?;
        Ok(new as u64)
    }

    pub(crate) fn sys_pipe2(&mut self, mem: &mut AddressSpace, fds: u64, flags: i32) -> SysResult {
        let flags = flags as u32;
        if flags & !(O_CLOEXEC | O_NONBLOCK | O_DIRECT) != 0 {
            return Err(Errno::EINVAL);
        }
        check_writable(mem, fds, 8)?;
        let id = self.files.new_pipe();
        let st = flags & O_NONBLOCK;
        let r = self.files.add(OpenFile::new(
            Kind::Pipe { id, write: false },
            O_RDONLY | st,
            Vec::new(),
        ));
        let w = self.files.add(OpenFile::new(
            Kind::Pipe { id, write: true },
            O_WRONLY | st,
            Vec::new(),
        ));
        self.install_pair(mem, fds, r, w, flags & O_CLOEXEC != 0)
    }

    /// Installs two new open file descriptions (a pipe's ends, a socketpair's) at the
    /// lowest free fds and writes the two fds to guest memory at `out`; on any failure
    /// neither stays open.
    /// memfd_create: an anonymous file, the host's own memfd (it never appears in any
    /// directory, so confinement is not at stake).
    pub(crate) fn sys_memfd_create(
        &mut self,
        mem: &mut AddressSpace,
        name: u64,
        flags: u32,
    ) -> SysResult {
        const MFD_CLOEXEC: u32 = 1;
        const MFD_ALLOW_SEALING: u32 = 2;
        const MFD_NOEXEC_SEAL: u32 = 8;
        const MFD_EXEC: u32 = 0x10;
        if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0 {
            // MFD_HUGETLB and its size bits
            return Err(Errno::EINVAL);
        }
        let n = cstr(mem, name)?;
        if n.len() > 249 {
            return Err(Errno::EINVAL);
        }
        let c = CString::new(n.clone()).map_err(|_| Errno::EINVAL)?;
        let host_flags = libc::MFD_CLOEXEC | (flags & MFD_ALLOW_SEALING);
        // SAFETY: valid C string; plain flags.
        let fd = unsafe { libc::memfd_create(c.as_ptr(), host_flags) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: a fresh fd nobody else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut path = b"/memfd:".to_vec();
        path.extend_from_slice(&n);
        path.extend_from_slice(b" (deleted)");
        let kind = Kind::Host {
            fd: HostFd::Owned(owned),
            mode: libc::S_IFREG | 0o777,
        };
        let idx = self.files.add(OpenFile::new(kind, O_RDWR, path));
        let limit = self.nofile();
        self.files
            .install(idx, 0, flags & MFD_CLOEXEC != 0, limit)
            .map(|fd| fd as u64)
    }

    pub(crate) fn install_pair(
        &mut self,
        mem: &mut AddressSpace,
        out: u64,
        a: usize,
        b: usize,
        cloexec: bool,
    ) -> SysResult {
        let limit = self.nofile();
        let fa = match self.files.install(a, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                self.files.drop_file(b);
                return Err(e);
            }
        };
        let fb = match self.files.install(b, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = self.files.close(fa);
                return Err(e);
            }
        };
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&fa.to_le_bytes());
        v[4..].copy_from_slice(&fb.to_le_bytes());
        if let Err(e) = wr(mem, out, &v) {
            let _ = self.files.close(fa);
            let _ = self.files.close(fb);
            return Err(e);
        }
        Ok(0)
    }

    pub(crate) fn sys_ioctl(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        req: u32,
        arg: u64,
    ) -> SysResult {
        const FIONBIO: u32 = 0x5421;
        const SIOCGIFCONF: u32 = 0x8912;
        const FIONCLEX: u32 = 0x5450;
        const FIOCLEX: u32 = 0x5451;
        let e = self.files.entry(fd)?;
        match req {
            FIONBIO => {
                let on = rd_u32_e(mem, arg)? != 0;
                let f = self.files.file_mut(fd)?;
                let new = if on {
                    f.flags | O_NONBLOCK
                } else {
                    f.flags & !O_NONBLOCK
                };
                f.flags = new;
                if let Some(h) = f.host_fd() {
                    let v: libc::c_int = on as libc::c_int;
                    // SAFETY: FIONBIO reads one int.
                    unsafe { libc::ioctl(h, libc::FIONBIO, &v) };
                }
                return Ok(0);
            }
            FIOCLEX | FIONCLEX => {
                if let Some(Some(en)) = self.files.fds.get_mut(fd as usize) {
                    en.cloexec = req == FIOCLEX;
                }
                let _ = e;
                return Ok(0);
            }
            _ => {}
        }
        if let Some(r) = self.socket_ioctl(mem, fd, req, arg) {
            return r;
        }
        let f = self.files.file(fd)?;
        match &f.kind {
            Kind::Host { fd: h, mode } => {
                let (h, sock) = (h.raw(), *mode & libc::S_IFMT == libc::S_IFSOCK);
                match req {
                    // `--net host`: the host's interfaces (SIOCGIFCONF's buffer aside)
                    SIOCGIFCONF if sock => Err(Errno::EOPNOTSUPP),
                    r if sock && Self::is_ifreq(r) => {
                        self.host_ioctl_with(mem, h, req, arg, Arg::InOut(40))
                    }
                    _ => self.host_ioctl(mem, h, req, arg),
                }
            }
            Kind::Pipe { id, write: false } if req == FIONREAD => {
                let n = match self.files.pipes.get(*id) {
                    Some(Some(p)) => p.buf.len(),
                    _ => 0,
                };
                wr_u32(mem, arg, n.min(i32::MAX as usize) as u32)?;
                Ok(0)
            }
            // bytes waiting on a stream socket; a datagram socket's next datagram
            Kind::Socket { rx, .. } if req == FIONREAD => {
                let n = match self.files.pipes.get(*rx) {
                    Some(Some(p)) => p.buf.len(),
                    _ => 0,
                };
                wr_u32(mem, arg, n.min(i32::MAX as usize) as u32)?;
                Ok(0)
            }
            Kind::NetSock if req == FIONREAD => {
                let n = self.dgram_next_len(e.file).unwrap_or(0);
                wr_u32(mem, arg, n.min(i32::MAX as usize) as u32)?;
                Ok(0)
            }
            Kind::StdinBuf(d) | Kind::Mem(d) if req == FIONREAD => {
                let n = d.len().saturating_sub(f.pos as usize);
                wr_u32(mem, arg, n.min(i32::MAX as usize) as u32)?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    pub(crate) fn sys_chdir(&mut self, mem: &mut AddressSpace, path: u64) -> SysResult {
        let p = cstr(mem, path)?;
        let t = self.resolve(AT_FDCWD, &p, true)?;
        let mut fl = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        if t.confined {
            fl |= libc::O_NOFOLLOW;
        }
        // SAFETY: valid C string.
        let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), fl) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        self.cwd.guest = if self.root.is_some() {
            t.guest
        } else {
            fd_path(fd.as_raw_fd()).unwrap_or(t.guest)
        };
        Ok(0)
    }

    pub(crate) fn sys_fchdir(&mut self, fd: i32) -> SysResult {
        let f = self.files.file(fd)?;
        if !f.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let path = f.path.clone();
        let h = f.host_fd().ok_or(Errno::ENOTDIR)?;
        self.cwd.guest = if self.root.is_some() {
            path
        } else {
            fd_path(h).unwrap_or(path)
        };
        Ok(0)
    }

    pub(crate) fn sys_getcwd(&mut self, mem: &mut AddressSpace, buf: u64, size: u64) -> SysResult {
        let mut p = self.cwd.guest.clone();
        p.push(0);
        if (size as usize) < p.len() {
            return Err(Errno::ERANGE);
        }
        wr(mem, buf, &p)?;
        Ok(p.len() as u64)
    }

    pub(crate) fn sys_fchmod(&mut self, fd: i32, mode: u32) -> SysResult {
        match self.files.file(fd)?.host_fd() {
            // SAFETY: plain arguments.
            Some(h) => cvt(unsafe { libc::fchmod(h, mode & 0o7777) }),
            None => Ok(0),
        }
    }

    pub(crate) fn sys_fchmodat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        mode: u32,
        flags: i32,
    ) -> SysResult {
        if flags & AT_SYMLINK_NOFOLLOW != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if flags & !AT_SYMLINK_NOFOLLOW != 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let t = self.resolve(dirfd, &p, true)?;
        // SAFETY: valid C string.
        cvt(unsafe { libc::fchmodat(t.dirfd, t.path.as_ptr(), mode & 0o7777, 0) })
    }

    pub(crate) fn sys_fchown(&mut self, fd: i32, uid: u32, gid: u32) -> SysResult {
        match self.files.file(fd)?.host_fd() {
            // SAFETY: plain arguments.
            Some(h) => cvt(unsafe { libc::fchown(h, uid, gid) }),
            None => Ok(0),
        }
    }

    pub(crate) fn sys_fchownat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        uid: u32,
        gid: u32,
        flags: i32,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        if p.is_empty() && flags & AT_EMPTY_PATH != 0 {
            return self.sys_fchown(dirfd, uid, gid);
        }
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let t = self.resolve(dirfd, &p, follow)?;
        // SAFETY: valid C string.
        cvt(unsafe {
            libc::fchownat(
                t.dirfd,
                t.path.as_ptr(),
                uid,
                gid,
                Self::at_nofollow(&t, follow),
            )
        })
    }

    pub(crate) fn sys_utimensat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        times: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let ts: Option<[libc::timespec; 2]> = if times == 0 {
            None
        } else {
            let mut b = [0u8; 32];
            rd(mem, times, &mut b)?;
            let get = |o: usize| i64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
            Some([
                libc::timespec {
                    tv_sec: get(0),
                    tv_nsec: get(8),
                },
                libc::timespec {
                    tv_sec: get(16),
                    tv_nsec: get(24),
                },
            ])
        };
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        if path == 0 {
            // futimens on dirfd
            let h = self.files.file(dirfd)?.host_fd().ok_or(Errno::EBADF)?;
            // SAFETY: tsp is null or points at two timespecs.
            return cvt(unsafe { libc::futimens(h, tsp) });
        }
        let p = cstr(mem, path)?;
        if p.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            let h = self.files.file(dirfd)?.host_fd().ok_or(Errno::EBADF)?;
            // SAFETY: as above.
            return cvt(unsafe { libc::futimens(h, tsp) });
        }
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let t = self.resolve(dirfd, &p, follow)?;
        // SAFETY: valid C string; tsp as above.
        cvt(unsafe {
            libc::utimensat(t.dirfd, t.path.as_ptr(), tsp, Self::at_nofollow(&t, follow))
        })
    }

    /// What kind of mapping the file behind `fd` allows: Ok(true) for /dev/zero (anonymous).
    pub(crate) fn mmap_file_check(&self, fd: i32, shared_write: bool) -> Result<bool, Errno> {
        let f = self.files.file(fd)?;
        if f.flags & O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        let acc = f.flags & O_ACCMODE;
        if acc == O_WRONLY {
            return Err(Errno::EACCES);
        }
        if shared_write && acc != O_RDWR {
            return Err(Errno::EACCES);
        }
        match &f.kind {
            Kind::Host { mode, .. } => {
                let t = mode & libc::S_IFMT;
                if t == libc::S_IFREG || t == libc::S_IFBLK {
                    Ok(false)
                } else {
                    Err(Errno::ENODEV)
                }
            }
            Kind::Mem(_) => Ok(false),
            Kind::Zero => Ok(true),
            _ => Err(Errno::ENODEV),
        }
    }
}

pub(crate) fn rd_u32_e(mem: &mut AddressSpace, addr: u64) -> Result<u32, Errno> {
    crate::rd_u32(mem, addr)
}

impl Errno {
    pub const EOVERFLOW: Errno = Errno(libc::EOVERFLOW);
}
