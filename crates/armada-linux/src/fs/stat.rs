//! stat: `struct stat` and `struct statx` as arm64 lays them out, what armada's own files
//! report, and the stat and statfs syscalls.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::fs::path::{
    AT_EMPTY_PATH, AT_FDCWD, AT_NO_AUTOMOUNT, AT_STATX_SYNC_TYPE, AT_SYMLINK_NOFOLLOW,
};
use crate::fs::procfs::Special;
use crate::io::fd::host_fstat;
use crate::io::fd::Kind;
use crate::{cstr, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// What `stat` reports, independent of layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatInfo {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i32,
    pub blocks: i64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

pub(crate) fn dev_major(d: u64) -> u32 {
    (((d >> 32) & 0xffff_f000) | ((d >> 8) & 0xfff)) as u32
}
pub(crate) fn dev_minor(d: u64) -> u32 {
    (((d >> 12) & 0xffff_ff00) | (d & 0xff)) as u32
}
pub(crate) fn makedev(major: u64, minor: u64) -> u64 {
    ((major & 0xffff_f000) << 32)
        | ((major & 0xfff) << 8)
        | ((minor & 0xffff_ff00) << 12)
        | (minor & 0xff)
}

impl StatInfo {
    pub(crate) fn from_host(s: &libc::stat) -> StatInfo {
        StatInfo {
            dev: s.st_dev,
            ino: s.st_ino,
            mode: s.st_mode,
            nlink: s.st_nlink as u32,
            uid: s.st_uid,
            gid: s.st_gid,
            rdev: s.st_rdev,
            size: s.st_size,
            blksize: s.st_blksize as i32,
            blocks: s.st_blocks,
            atime: (s.st_atime, s.st_atime_nsec),
            mtime: (s.st_mtime, s.st_mtime_nsec),
            ctime: (s.st_ctime, s.st_ctime_nsec),
        }
    }

    /// The arm64 `struct stat` (128 bytes).
    pub fn to_arm64(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..8].copy_from_slice(&self.dev.to_le_bytes());
        b[8..16].copy_from_slice(&self.ino.to_le_bytes());
        b[16..20].copy_from_slice(&self.mode.to_le_bytes());
        b[20..24].copy_from_slice(&self.nlink.to_le_bytes());
        b[24..28].copy_from_slice(&self.uid.to_le_bytes());
        b[28..32].copy_from_slice(&self.gid.to_le_bytes());
        b[32..40].copy_from_slice(&self.rdev.to_le_bytes());
        b[48..56].copy_from_slice(&self.size.to_le_bytes());
        b[56..60].copy_from_slice(&self.blksize.to_le_bytes());
        b[64..72].copy_from_slice(&self.blocks.to_le_bytes());
        b[72..80].copy_from_slice(&self.atime.0.to_le_bytes());
        b[80..88].copy_from_slice(&self.atime.1.to_le_bytes());
        b[88..96].copy_from_slice(&self.mtime.0.to_le_bytes());
        b[96..104].copy_from_slice(&self.mtime.1.to_le_bytes());
        b[104..112].copy_from_slice(&self.ctime.0.to_le_bytes());
        b[112..120].copy_from_slice(&self.ctime.1.to_le_bytes());
        b
    }

    /// `struct statx` (256 bytes, the same on every architecture).
    pub fn to_statx(&self) -> [u8; 256] {
        let mut b = [0u8; 256];
        let mask: u32 = 0x7ff; // STATX_BASIC_STATS
        b[0..4].copy_from_slice(&mask.to_le_bytes());
        b[4..8].copy_from_slice(&(self.blksize as u32).to_le_bytes());
        b[16..20].copy_from_slice(&self.nlink.to_le_bytes());
        b[20..24].copy_from_slice(&self.uid.to_le_bytes());
        b[24..28].copy_from_slice(&self.gid.to_le_bytes());
        b[28..30].copy_from_slice(&(self.mode as u16).to_le_bytes());
        b[32..40].copy_from_slice(&self.ino.to_le_bytes());
        b[40..48].copy_from_slice(&(self.size as u64).to_le_bytes());
        b[48..56].copy_from_slice(&(self.blocks as u64).to_le_bytes());
        let ts = |b: &mut [u8; 256], at: usize, t: (i64, i64)| {
            b[at..at + 8].copy_from_slice(&t.0.to_le_bytes());
            b[at + 8..at + 12].copy_from_slice(&(t.1 as u32).to_le_bytes());
        };
        ts(&mut b, 64, self.atime);
        ts(&mut b, 96, self.ctime);
        ts(&mut b, 112, self.mtime);
        b[128..132].copy_from_slice(&dev_major(self.rdev).to_le_bytes());
        b[132..136].copy_from_slice(&dev_minor(self.rdev).to_le_bytes());
        b[136..140].copy_from_slice(&dev_major(self.dev).to_le_bytes());
        b[140..144].copy_from_slice(&dev_minor(self.dev).to_le_bytes());
        b
    }
}

pub(crate) fn host_fstatat(dirfd: RawFd, path: &CString, flags: i32) -> Result<libc::stat, Errno> {
    // SAFETY: path is a valid C string; st is plain data written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(dirfd, path.as_ptr(), &mut st, flags) < 0 {
            return Err(Errno::last());
        }
        Ok(st)
    }
}

pub(crate) fn host_statx(
    dirfd: RawFd,
    path: &CString,
    flags: i32,
    mask: u32,
) -> Result<[u8; 256], Errno> {
    let mut buf = [0u8; 256];
    // SAFETY: statx writes at most 256 bytes into buf; path is a valid C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            dirfd,
            path.as_ptr(),
            flags,
            mask,
            buf.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(Errno::last());
    }
    Ok(buf)
}

impl Process {
    /// What stat says of /proc/PID for a process of the lane: a directory owned by the
    /// guest's user (ps looks at it for the owner).
    pub(crate) fn proc_dir_stat(&self, pid: i32) -> StatInfo {
        let mut s = self.virtual_stat(&Kind::Mem(Vec::new()), 5000 + pid as u64);
        s.mode = libc::S_IFDIR | 0o555;
        s.nlink = 9;
        s.size = 0;
        s
    }

    pub(crate) fn virtual_stat(&self, kind: &Kind, id: u64) -> StatInfo {
        let t = (crate::time::clock::DET_REALTIME_BASE_S, 0);
        let base = StatInfo {
            uid: self.creds.uid.fs,
            gid: self.creds.gid.fs,
            nlink: 1,
            blksize: 4096,
            atime: t,
            mtime: t,
            ctime: t,
            ..Default::default()
        };
        match kind {
            Kind::Host { .. } => base,
            Kind::StdinBuf(_) | Kind::Out(_) | Kind::Pipe { .. } => StatInfo {
                dev: 0xc,
                ino: 1000 + id,
                mode: libc::S_IFIFO | 0o600,
                ..base
            },
            Kind::Socket { .. } | Kind::NetSock => StatInfo {
                dev: 0x8,
                ino: 3000 + id,
                mode: libc::S_IFSOCK | 0o777,
                ..base
            },
            Kind::Event(_) => StatInfo {
                dev: 0xe,
                ino: 4000 + id,
                mode: 0o600,
                ..base
            },
            Kind::Mem(data) => StatInfo {
                dev: 0x16,
                ino: 2000 + id,
                mode: libc::S_IFREG | 0o444,
                size: data.len() as i64,
                ..base
            },
            Kind::Null | Kind::Zero | Kind::Random => {
                let minor = match kind {
                    Kind::Null => 3,
                    Kind::Zero => 5,
                    _ => 9,
                };
                StatInfo {
                    dev: 0x5,
                    ino: 3000 + minor,
                    mode: libc::S_IFCHR | 0o666,
                    rdev: makedev(1, minor),
                    uid: 0,
                    gid: 0,
                    ..base
                }
            }
        }
    }

    pub(crate) fn stat_fd(&self, fd: i32) -> Result<StatInfo, Errno> {
        let e = self.files.entry(fd)?;
        let f = self.files.file(fd)?;
        match &f.kind {
            Kind::Host { fd, .. } => Ok(StatInfo::from_host(&host_fstat(fd.raw())?)),
            Kind::Pipe { id, .. } => Ok(self.virtual_stat(&f.kind, *id as u64)),
            Kind::Socket { rx, .. } => Ok(self.virtual_stat(&f.kind, *rx as u64)),
            Kind::NetSock => Ok(self.virtual_stat(&f.kind, 60000 + e.file as u64)),
            k => Ok(self.virtual_stat(k, e.file as u64)),
        }
    }

    pub(crate) fn stat_special(&self, sp: Special, follow: bool) -> Result<StatInfo, Errno> {
        match sp {
            Special::Exe => {
                let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
                let _ = flags; // the guest sees a symlink only through readlink
                Ok(StatInfo::from_host(&host_fstatat(
                    libc::AT_FDCWD,
                    &self.exe_host_cpath()?,
                    0,
                )?))
            }
            Special::Maps | Special::System(_) | Special::Proc(..) => {
                let mut s = self.virtual_stat(&Kind::Mem(Vec::new()), 0);
                s.size = 0;
                Ok(s)
            }
            Special::Input => {
                let n = self.input.as_ref().map_or(0, |f| f.data.len());
                let mut s = self.virtual_stat(&Kind::Mem(Vec::new()), 0);
                s.size = n as i64;
                s.blocks = (n as i64 + 511) / 512;
                Ok(s)
            }
            Special::Null => Ok(self.virtual_stat(&Kind::Null, 0)),
            Special::Zero => Ok(self.virtual_stat(&Kind::Zero, 0)),
            Special::Random => Ok(self.virtual_stat(&Kind::Random, 0)),
            Special::Fd(n) => self.stat_fd(n),
        }
    }

    pub(crate) fn sys_fstat(&mut self, mem: &mut AddressSpace, fd: i32, buf: u64) -> SysResult {
        let s = self.stat_fd(fd)?;
        wr(mem, buf, &s.to_arm64())?;
        Ok(0)
    }

    pub(crate) fn stat_path(&self, dirfd: i32, p: &[u8], flags: i32) -> Result<StatInfo, Errno> {
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        if p.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            if dirfd == AT_FDCWD {
                return self.stat_path(AT_FDCWD, b".", 0);
            }
            return self.stat_fd(dirfd);
        }
        if let Some(sp) = self.special(dirfd, p) {
            return self.stat_special(sp, follow);
        }
        if let Some(pid) = self.proc_pid_dir(dirfd, p) {
            return Ok(self.proc_dir_stat(pid));
        }
        let t = self.resolve(dirfd, p, follow)?;
        let st = host_fstatat(t.dirfd, &t.path, Self::at_nofollow(&t, follow))?;
        Ok(StatInfo::from_host(&st))
    }

    pub(crate) fn sys_newfstatat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        buf: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let s = self.stat_path(dirfd, &p, flags)?;
        wr(mem, buf, &s.to_arm64())?;
        Ok(0)
    }

    pub(crate) fn sys_statx(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        flags: i32,
        mask: u32,
        buf: u64,
    ) -> SysResult {
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE)
            != 0
            || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        {
            return Err(Errno::EINVAL);
        }
        let p = cstr(mem, path)?;
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        let sync = flags & (AT_STATX_SYNC_TYPE | AT_NO_AUTOMOUNT);
        let out: [u8; 256] = if p.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            if dirfd == AT_FDCWD {
                self.statx_path(AT_FDCWD, b".", true, sync, mask)?
            } else {
                match self.files.file(dirfd)?.host_fd() {
                    Some(h) => host_statx(h, &CString::default(), AT_EMPTY_PATH | sync, mask)?,
                    None => self.stat_fd(dirfd)?.to_statx(),
                }
            }
        } else {
            self.statx_path(dirfd, &p, follow, sync, mask)?
        };
        wr(mem, buf, &out)?;
        Ok(0)
    }

    pub(crate) fn statx_path(
        &self,
        dirfd: i32,
        p: &[u8],
        follow: bool,
        sync: i32,
        mask: u32,
    ) -> Result<[u8; 256], Errno> {
        if let Some(pid) = self.proc_pid_dir(dirfd, p) {
            return Ok(self.proc_dir_stat(pid).to_statx());
        }
        if let Some(sp) = self.special(dirfd, p) {
            return match sp {
                Special::Exe => host_statx(libc::AT_FDCWD, &self.exe_host_cpath()?, sync, mask),
                Special::Fd(n) => match self.files.file(n)?.host_fd() {
                    Some(h) => host_statx(h, &CString::default(), AT_EMPTY_PATH | sync, mask),
                    None => Ok(self.stat_fd(n)?.to_statx()),
                },
                sp => Ok(self.stat_special(sp, follow)?.to_statx()),
            };
        }
        let t = self.resolve(dirfd, p, follow)?;
        host_statx(t.dirfd, &t.path, Self::at_nofollow(&t, follow) | sync, mask)
    }

    pub(crate) fn sys_statfs(&mut self, mem: &mut AddressSpace, path: u64, buf: u64) -> SysResult {
        let p = cstr(mem, path)?;
        let t = self.resolve(AT_FDCWD, &p, true)?;
        // open O_PATH then fstatfs, so relative paths resolve against our cwd
        // SAFETY: valid C string.
        let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        self.statfs_fd(mem, fd.as_raw_fd(), buf)
    }

    pub(crate) fn sys_fstatfs(&mut self, mem: &mut AddressSpace, fd: i32, buf: u64) -> SysResult {
        match self.files.file(fd)?.host_fd() {
            Some(h) => self.statfs_fd(mem, h, buf),
            None => {
                // pipefs-like
                let mut b = [0u8; 120];
                b[0..8].copy_from_slice(&0x5049_5045u64.to_le_bytes()); // PIPEFS_MAGIC
                b[8..16].copy_from_slice(&4096u64.to_le_bytes());
                b[64..72].copy_from_slice(&255u64.to_le_bytes());
                b[72..80].copy_from_slice(&4096u64.to_le_bytes());
                wr(mem, buf, &b)?;
                Ok(0)
            }
        }
    }

    pub(crate) fn statfs_fd(&mut self, mem: &mut AddressSpace, fd: RawFd, buf: u64) -> SysResult {
        // The kernel's struct statfs on 64-bit hosts is the arm64 (asm-generic) layout:
        // 64-bit fields, f_fsid two ints, 120 bytes.
        let mut b = [0u8; 120];
        // SAFETY: the kernel writes at most sizeof(struct statfs) = 120 bytes.
        let r = unsafe { libc::syscall(libc::SYS_fstatfs, fd, b.as_mut_ptr()) };
        if r < 0 {
            return Err(Errno::last());
        }
        wr(mem, buf, &b)?;
        Ok(0)
    }
}
