//! Files: the guest fd table, open file descriptions, in-process pipes, captured stdio,
//! virtual files (/proc/self/maps, /dev/null, ...) and the file syscalls.
//!
//! Guest fds are numbers in a per-process table that point at open file descriptions
//! (shared by dup); a description is a host fd, a pipe end, a captured stream or a virtual
//! file. Host fds are opened close-on-exec and closed when the last guest fd referring to
//! them goes; inherited stdio (fds 0..2 of the host) is never closed on the host.

use std::collections::VecDeque;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::path::{normalize_lexically, resolve_in_root};
use super::{check_readable, check_writable, cstr, rd, rd_u64, wr, wr_u32, wr_u64};
use super::{Errno, Process, Stdio, SysResult};
use crate::memory::{AddressSpace, Perm};

/// Guest (arm64, asm-generic) open flags.
pub mod o {
    pub const O_ACCMODE: u32 = 3;
    pub const O_RDONLY: u32 = 0;
    pub const O_WRONLY: u32 = 1;
    pub const O_RDWR: u32 = 2;
    pub const O_CREAT: u32 = 0o100;
    pub const O_EXCL: u32 = 0o200;
    pub const O_NOCTTY: u32 = 0o400;
    pub const O_TRUNC: u32 = 0o1000;
    pub const O_APPEND: u32 = 0o2000;
    pub const O_NONBLOCK: u32 = 0o4000;
    pub const O_DSYNC: u32 = 0o10000;
    pub const O_ASYNC: u32 = 0o20000;
    pub const O_DIRECTORY: u32 = 0o40000;
    pub const O_NOFOLLOW: u32 = 0o100000;
    pub const O_DIRECT: u32 = 0o200000;
    pub const O_LARGEFILE: u32 = 0o400000;
    pub const O_NOATIME: u32 = 0o1000000;
    pub const O_CLOEXEC: u32 = 0o2000000;
    pub const O_SYNC_BIT: u32 = 0o4000000;
    pub const O_PATH: u32 = 0o10000000;
    pub const O_TMPFILE_BIT: u32 = 0o20000000;
}
use o::*;

pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
pub const AT_REMOVEDIR: i32 = 0x200;
pub const AT_EACCESS: i32 = 0x200;
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
pub const AT_NO_AUTOMOUNT: i32 = 0x800;
pub const AT_EMPTY_PATH: i32 = 0x1000;
pub const AT_STATX_SYNC_TYPE: i32 = 0x6000;

/// Largest single read/write, as Linux (0x7ffff000).
pub const MAX_RW: u64 = 0x7fff_f000;

/// Runs `io(base, len, offset)` over the (base, len) buffers of a readv/writev family call
/// until one comes up short, as the kernel does: the total transferred, or the first
/// buffer's error when nothing was transferred. `off` is the file offset of the p-forms.
fn each_iov(
    iovs: &[(u64, u64)],
    off: Option<u64>,
    mut io: impl FnMut(u64, u64, Option<u64>) -> Result<u64, Errno>,
) -> Result<u64, Errno> {
    let mut total = 0u64;
    for &(base, len) in iovs {
        let len = len.min(MAX_RW - total);
        if len == 0 {
            continue;
        }
        match io(base, len, off.map(|o| o + total)) {
            Ok(n) => {
                total += n;
                if n < len {
                    break;
                }
            }
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(total)
}
/// Host buffer used per step of a large read/write.
const CHUNK: usize = 1 << 20;
/// Captured stdout/stderr stop growing here (ENOSPC after).
pub const OUTPUT_CAP: usize = 1 << 30;
/// In-process pipes hold at most this much.
pub const PIPE_CAP: usize = 16 << 20;
/// Reported pipe size (F_GETPIPE_SZ).
const PIPE_SIZE: u64 = 65536;
/// Internal marker: the operation would block (the task waits until another changes
/// something: see `WaitKind::Retry`).
pub(crate) const WOULD_BLOCK: Errno = Errno(-1);

#[cfg(target_arch = "x86_64")]
const HOST_O_LARGEFILE: i32 = 0o100000;
#[cfg(not(target_arch = "x86_64"))]
const HOST_O_LARGEFILE: i32 = libc::O_LARGEFILE;

/// (guest bit, host bits), for translating open flags both ways.
fn flag_table() -> [(u32, i32); 14] {
    [
        (O_CREAT, libc::O_CREAT),
        (O_EXCL, libc::O_EXCL),
        (O_NOCTTY, libc::O_NOCTTY),
        (O_TRUNC, libc::O_TRUNC),
        (O_APPEND, libc::O_APPEND),
        (O_NONBLOCK, libc::O_NONBLOCK),
        (O_DSYNC, libc::O_DSYNC),
        (O_ASYNC, libc::O_ASYNC),
        (O_DIRECTORY, libc::O_DIRECTORY),
        (O_NOFOLLOW, libc::O_NOFOLLOW),
        (O_DIRECT, libc::O_DIRECT),
        (O_NOATIME, libc::O_NOATIME),
        (O_SYNC_BIT, libc::O_SYNC & !libc::O_DSYNC),
        (O_PATH, libc::O_PATH),
    ]
}

/// Guest open flags to host open flags (O_CLOEXEC is handled by the caller).
pub fn host_open_flags(g: u32) -> i32 {
    let mut h = (g & O_ACCMODE) as i32;
    for (gb, hb) in flag_table() {
        if g & gb != 0 {
            h |= hb;
        }
    }
    if g & O_TMPFILE_BIT != 0 {
        h |= libc::O_TMPFILE & !libc::O_DIRECTORY;
    }
    h
}

/// Host file status flags (F_GETFL) to guest flags.
pub fn guest_open_flags(h: i32) -> u32 {
    let mut g = (h & libc::O_ACCMODE) as u32;
    for (gb, hb) in flag_table() {
        if hb != 0 && h & hb == hb {
            g |= gb;
        }
    }
    if HOST_O_LARGEFILE != 0 && h & HOST_O_LARGEFILE != 0 {
        g |= O_LARGEFILE;
    }
    g
}

// ----- open files ------------------------------------------------------------------------

#[derive(Debug)]
pub(crate) enum HostFd {
    Owned(OwnedFd),
    /// One of the host's own stdio fds: used, never closed.
    Inherited(RawFd),
}

impl HostFd {
    pub(crate) fn raw(&self) -> RawFd {
        match self {
            HostFd::Owned(f) => f.as_raw_fd(),
            HostFd::Inherited(fd) => *fd,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Kind {
    Host {
        fd: HostFd,
        /// st_mode at open time (file type bits are what matter).
        mode: u32,
    },
    /// Captured stdin: a buffer read from the description's position.
    StdinBuf(Vec<u8>),
    /// Captured stdout (false) or stderr (true).
    Out(bool),
    Pipe {
        id: usize,
        write: bool,
    },
    /// A read-only virtual file (/proc/self/maps, ...).
    Mem(Vec<u8>),
    /// An eventfd, timerfd or epoll instance (see `events`).
    Event(super::events::Object),
    Null,
    Zero,
    Random,
}

#[derive(Debug)]
pub(crate) struct OpenFile {
    pub(crate) kind: Kind,
    /// Guest open flags (access mode and status flags).
    pub(crate) flags: u32,
    /// Position for virtual files (host files keep theirs on the host).
    pub(crate) pos: u64,
    /// The guest path it was opened by (absolute when known).
    pub(crate) path: Vec<u8>,
    refs: u32,
}

impl OpenFile {
    fn new(kind: Kind, flags: u32, path: Vec<u8>) -> Self {
        OpenFile {
            kind,
            flags,
            pos: 0,
            path,
            refs: 0,
        }
    }
    fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Host { mode, .. } if mode & libc::S_IFMT == libc::S_IFDIR)
    }
    /// Whether a read that returns less than asked means end of file (so a big read may be
    /// split into steps), rather than "that is what is available now".
    fn fills(&self) -> bool {
        match &self.kind {
            Kind::Host { mode, .. } => mode & libc::S_IFMT == libc::S_IFREG,
            Kind::StdinBuf(_) | Kind::Mem(_) | Kind::Null | Kind::Zero | Kind::Random => true,
            Kind::Out(_) => true,
            Kind::Pipe { .. } | Kind::Event(_) => false,
        }
    }
    pub(crate) fn host_fd_pub(&self) -> Option<RawFd> {
        self.host_fd()
    }
    fn host_fd(&self) -> Option<RawFd> {
        match &self.kind {
            Kind::Host { fd, .. } => Some(fd.raw()),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Pipe {
    buf: VecDeque<u8>,
    readers: u32,
    writers: u32,
}

#[derive(Clone, Copy, Debug)]
struct FdEntry {
    file: usize,
    cloexec: bool,
}

/// The fd table and open file descriptions of one process.
#[derive(Debug, Default)]
pub struct Files {
    fds: Vec<Option<FdEntry>>,
    files: Vec<Option<OpenFile>>,
    pipes: Vec<Option<Pipe>>,
    pub(crate) out: Vec<u8>,
    pub(crate) err: Vec<u8>,
}

fn host_getfl(fd: RawFd) -> u32 {
    // SAFETY: F_GETFL takes no pointer argument.
    let r = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if r < 0 {
        O_RDWR
    } else {
        guest_open_flags(r)
    }
}

fn host_mode(fd: RawFd) -> u32 {
    host_fstat(fd).map(|s| s.st_mode).unwrap_or(libc::S_IFCHR)
}

impl Files {
    pub(crate) fn new(stdio: Stdio) -> Self {
        let mut f = Files::default();
        match stdio {
            Stdio::Inherit => {
                for fd in 0..3 {
                    let kind = Kind::Host {
                        fd: HostFd::Inherited(fd),
                        mode: host_mode(fd),
                    };
                    let flags = host_getfl(fd);
                    let idx = f.add(OpenFile::new(kind, flags, Vec::new()));
                    let _ = f.install_at(idx, fd as usize, false);
                }
            }
            Stdio::Captured { stdin } => {
                let i = f.add(OpenFile::new(Kind::StdinBuf(stdin), O_RDONLY, Vec::new()));
                let _ = f.install_at(i, 0, false);
                let o = f.add(OpenFile::new(Kind::Out(false), O_WRONLY, Vec::new()));
                let _ = f.install_at(o, 1, false);
                let e = f.add(OpenFile::new(Kind::Out(true), O_WRONLY, Vec::new()));
                let _ = f.install_at(e, 2, false);
            }
        }
        f
    }

    fn add(&mut self, of: OpenFile) -> usize {
        if let Some(i) = self.files.iter().position(|f| f.is_none()) {
            self.files[i] = Some(of);
            i
        } else {
            self.files.push(Some(of));
            self.files.len() - 1
        }
    }

    fn entry(&self, fd: i32) -> Result<FdEntry, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get(i).copied().flatten())
            .ok_or(Errno::EBADF)
    }

    pub(crate) fn file(&self, fd: i32) -> Result<&OpenFile, Errno> {
        let e = self.entry(fd)?;
        self.files
            .get(e.file)
            .and_then(|f| f.as_ref())
            .ok_or(Errno::EBADF)
    }

    /// A new open file description of `kind` at the lowest free fd.
    pub(crate) fn install_new(
        &mut self,
        kind: Kind,
        flags: u32,
        cloexec: bool,
        limit: u64,
    ) -> Result<i32, Errno> {
        let idx = self.add(OpenFile::new(kind, flags, Vec::new()));
        self.install(idx, 0, cloexec, limit)
    }

    pub(crate) fn file_mut(&mut self, fd: i32) -> Result<&mut OpenFile, Errno> {
        let e = self.entry(fd)?;
        self.files
            .get_mut(e.file)
            .and_then(|f| f.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Puts file `idx` at the lowest free fd >= `min`.
    fn install(&mut self, idx: usize, min: usize, cloexec: bool, limit: u64) -> Result<i32, Errno> {
        let mut fd = min;
        while fd < self.fds.len() && self.fds[fd].is_some() {
            fd += 1;
        }
        if fd as u64 >= limit {
            self.release_if_unused(idx);
            return Err(Errno::EMFILE);
        }
        self.install_at(idx, fd, cloexec)?;
        Ok(fd as i32)
    }

    /// Puts file `idx` at `fd`, closing what was there.
    fn install_at(&mut self, idx: usize, fd: usize, cloexec: bool) -> Result<(), Errno> {
        if let Some(f) = self.files.get_mut(idx).and_then(|f| f.as_mut()) {
            f.refs += 1;
        } else {
            return Err(Errno::EBADF);
        }
        if fd >= self.fds.len() {
            self.fds.resize(fd + 1, None);
        }
        if let Some(old) = self.fds[fd].take() {
            self.release(old.file);
        }
        self.fds[fd] = Some(FdEntry { file: idx, cloexec });
        Ok(())
    }

    fn release_if_unused(&mut self, idx: usize) {
        if matches!(self.files.get(idx), Some(Some(f)) if f.refs == 0) {
            self.drop_file(idx);
        }
    }

    fn release(&mut self, idx: usize) {
        let Some(Some(f)) = self.files.get_mut(idx) else {
            return;
        };
        f.refs = f.refs.saturating_sub(1);
        if f.refs == 0 {
            self.drop_file(idx);
        }
    }

    fn drop_file(&mut self, idx: usize) {
        if let Some(f) = self.files.get_mut(idx).and_then(|f| f.take()) {
            if let Kind::Pipe { id, write } = f.kind {
                if let Some(Some(p)) = self.pipes.get_mut(id) {
                    if write {
                        p.writers = p.writers.saturating_sub(1);
                    } else {
                        p.readers = p.readers.saturating_sub(1);
                    }
                    if p.readers == 0 && p.writers == 0 {
                        self.pipes[id] = None;
                    }
                }
            }
            // host fds close when `f` drops here
        }
    }

    pub(crate) fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let e = self.entry(fd)?;
        self.fds[fd as usize] = None;
        self.release(e.file);
        Ok(())
    }

    fn new_pipe(&mut self) -> usize {
        let p = Pipe::default();
        if let Some(i) = self.pipes.iter().position(|p| p.is_none()) {
            self.pipes[i] = Some(p);
            i
        } else {
            self.pipes.push(Some(p));
            self.pipes.len() - 1
        }
    }

    /// Number of open guest fds.
    pub fn open_count(&self) -> usize {
        self.fds.iter().filter(|f| f.is_some()).count()
    }
}

/// The current directory, as a path: the guest path inside the root when confined, the
/// host path otherwise (relative paths are joined to it, so each lane has its own cwd and
/// holds no host fd for it).
#[derive(Debug)]
pub(crate) struct Cwd {
    pub(crate) guest: Vec<u8>,
}

impl Cwd {
    pub(crate) fn initial(confined: bool) -> Cwd {
        if confined {
            return Cwd {
                guest: b"/".to_vec(),
            };
        }
        let guest = std::env::current_dir()
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .unwrap_or_else(|_| b"/".to_vec());
        Cwd { guest }
    }
}

fn fd_path(fd: RawFd) -> Option<Vec<u8>> {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|p| p.as_os_str().as_bytes().to_vec())
}

// ----- stat ------------------------------------------------------------------------------

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

fn dev_major(d: u64) -> u32 {
    (((d >> 32) & 0xffff_f000) | ((d >> 8) & 0xfff)) as u32
}
fn dev_minor(d: u64) -> u32 {
    (((d >> 12) & 0xffff_ff00) | (d & 0xff)) as u32
}
fn makedev(major: u64, minor: u64) -> u64 {
    ((major & 0xffff_f000) << 32)
        | ((major & 0xfff) << 8)
        | ((minor & 0xffff_ff00) << 12)
        | (minor & 0xff)
}

impl StatInfo {
    fn from_host(s: &libc::stat) -> StatInfo {
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

fn host_fstat(fd: RawFd) -> Result<libc::stat, Errno> {
    // SAFETY: st is plain data written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) < 0 {
            return Err(Errno::last());
        }
        Ok(st)
    }
}

fn host_fstatat(dirfd: RawFd, path: &CString, flags: i32) -> Result<libc::stat, Errno> {
    // SAFETY: path is a valid C string; st is plain data written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(dirfd, path.as_ptr(), &mut st, flags) < 0 {
            return Err(Errno::last());
        }
        Ok(st)
    }
}

fn host_statx(dirfd: RawFd, path: &CString, flags: i32, mask: u32) -> Result<[u8; 256], Errno> {
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

fn cvt(r: libc::c_int) -> Result<u64, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as u64)
    }
}

fn cvt_size(r: isize) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

/// A path resolved for a host call: `path` relative to host directory `dirfd`.
pub(crate) struct HostTarget {
    pub(crate) dirfd: RawFd,
    pub(crate) path: CString,
    pub(crate) guest: Vec<u8>,
    /// Resolved by armada inside the root: the final component is already followed (when
    /// asked), so host calls should not follow symlinks again.
    pub(crate) confined: bool,
}

/// Guest paths armada answers itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    Exe,
    Maps,
    CpuList,
    Null,
    Zero,
    Random,
    Fd(i32),
}

impl Process {
    pub(crate) fn nofile(&self) -> u64 {
        self.rlimits[super::sys::RLIMIT_NOFILE].0.min(1 << 20)
    }

    fn dir_guest_path(&self, dirfd: i32) -> Result<Vec<u8>, Errno> {
        if dirfd == AT_FDCWD {
            return Ok(self.cwd.guest.clone());
        }
        let f = self.files.file(dirfd)?;
        if !f.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(f.path.clone())
    }

    /// Recognizes the guest paths armada serves itself.
    pub(crate) fn special(&self, dirfd: i32, path: &[u8]) -> Option<Special> {
        let base = if path.first() == Some(&b'/') {
            b"/".to_vec()
        } else {
            self.dir_guest_path(dirfd).ok()?
        };
        let p = normalize_lexically(&base, path);
        let proc_fd = |rest: &[u8]| -> Option<Special> {
            std::str::from_utf8(rest)
                .ok()?
                .parse::<i32>()
                .ok()
                .map(Special::Fd)
        };
        let pid_prefix = format!("/proc/{}/", self.pid);
        let p: &[u8] = if let Some(rest) = p.strip_prefix(pid_prefix.as_bytes()) {
            return match rest {
                b"exe" => Some(Special::Exe),
                b"maps" => Some(Special::Maps),
                _ => rest.strip_prefix(b"fd/").and_then(proc_fd),
            };
        } else {
            &p
        };
        match p {
            b"/proc/self/exe" => Some(Special::Exe),
            b"/proc/self/maps" => Some(Special::Maps),
            b"/sys/devices/system/cpu/online" | b"/sys/devices/system/cpu/possible" => {
                Some(Special::CpuList)
            }
            b"/dev/null" => Some(Special::Null),
            b"/dev/zero" => Some(Special::Zero),
            b"/dev/urandom" | b"/dev/random" => Some(Special::Random),
            b"/dev/stdin" => Some(Special::Fd(0)),
            b"/dev/stdout" => Some(Special::Fd(1)),
            b"/dev/stderr" => Some(Special::Fd(2)),
            _ => p
                .strip_prefix(b"/proc/self/fd/")
                .or_else(|| p.strip_prefix(b"/dev/fd/"))
                .and_then(proc_fd),
        }
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
        match &self.root {
            None => {
                let abs = path.first() == Some(&b'/');
                let prefixed = abs
                    .then(|| self.cfg.sysroot.as_deref())
                    .flatten()
                    .and_then(|dir| super::path::under_prefix(dir, path));
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
                Ok(HostTarget {
                    dirfd: host_dirfd,
                    path: CString::new(host_path).map_err(|_| Errno::EINVAL)?,
                    guest: normalize_lexically(&base, path),
                    confined: false,
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
                })
            }
        }
    }

    /// AT_SYMLINK_NOFOLLOW for a host *at call on `t`.
    fn at_nofollow(t: &HostTarget, follow: bool) -> i32 {
        if !follow || t.confined {
            libc::AT_SYMLINK_NOFOLLOW
        } else {
            0
        }
    }

    fn exe_guest_bytes(&self) -> Vec<u8> {
        let g = &self.cfg.exe_guest_path;
        if g.first() == Some(&b'/') {
            g.clone()
        } else if self.root.is_none() {
            self.cfg.exe_host_path.as_os_str().as_bytes().to_vec()
        } else {
            let mut v = b"/".to_vec();
            v.extend_from_slice(g);
            normalize_lexically(b"/", &v)
        }
    }

    fn exe_host_cpath(&self) -> Result<CString, Errno> {
        CString::new(self.cfg.exe_host_path.as_os_str().as_bytes()).map_err(|_| Errno::ENOENT)
    }

    fn maps_text(&self, mem: &AddressSpace) -> Vec<u8> {
        use std::fmt::Write;
        let mut s = String::new();
        let exe = String::from_utf8_lossy(&self.exe_guest_bytes()).into_owned();
        for (start, end, perm) in mem.areas() {
            let name = if start == super::signal::SIGTRAMP_ADDR {
                "[sigpage]".to_string()
            } else if start >= super::mm::STACK_TOP - super::mm::STACK_SIZE
                && end <= super::mm::STACK_TOP
            {
                "[stack]".to_string()
            } else if start >= self.brk_start && end <= (self.brk_cur + 0xfff) & !0xfff {
                "[heap]".to_string()
            } else if end <= self.brk_start {
                exe.clone()
            } else {
                String::new()
            };
            let c = |p: Perm, ch: char| if perm.contains(p) { ch } else { '-' };
            let mut line = format!(
                "{start:08x}-{end:08x} {}{}{}p 00000000 00:00 0",
                c(Perm::R, 'r'),
                c(Perm::W, 'w'),
                c(Perm::X, 'x')
            );
            if !name.is_empty() {
                while line.len() < 72 {
                    line.push(' ');
                }
                line.push(' ');
                line.push_str(&name);
            }
            let _ = writeln!(s, "{line}");
        }
        s.into_bytes()
    }

    fn virtual_stat(&self, kind: &Kind, id: u64) -> StatInfo {
        let t = (super::time::DET_REALTIME_BASE_S, 0);
        let base = StatInfo {
            uid: self.uid,
            gid: self.gid,
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

    fn stat_fd(&self, fd: i32) -> Result<StatInfo, Errno> {
        let e = self.files.entry(fd)?;
        let f = self.files.file(fd)?;
        match &f.kind {
            Kind::Host { fd, .. } => Ok(StatInfo::from_host(&host_fstat(fd.raw())?)),
            Kind::Pipe { id, .. } => Ok(self.virtual_stat(&f.kind, *id as u64)),
            k => Ok(self.virtual_stat(k, e.file as u64)),
        }
    }

    fn stat_special(&self, sp: Special, follow: bool) -> Result<StatInfo, Errno> {
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
            Special::Maps | Special::CpuList => {
                let mut s = self.virtual_stat(&Kind::Mem(Vec::new()), 0);
                s.size = 0;
                Ok(s)
            }
            Special::Null => Ok(self.virtual_stat(&Kind::Null, 0)),
            Special::Zero => Ok(self.virtual_stat(&Kind::Zero, 0)),
            Special::Random => Ok(self.virtual_stat(&Kind::Random, 0)),
            Special::Fd(n) => self.stat_fd(n),
        }
    }

    // ----- read / write core -------------------------------------------------------------

    /// One read from `fd` into a host buffer (may be short).
    pub(crate) fn do_read(
        &mut self,
        fd: i32,
        buf: &mut [u8],
        off: Option<u64>,
    ) -> Result<usize, Errno> {
        let f = self.files.file_mut(fd)?;
        if f.flags & O_PATH != 0 || f.flags & O_ACCMODE == O_WRONLY {
            return Err(Errno::EBADF);
        }
        let nonblock = f.flags & O_NONBLOCK != 0;
        if let Kind::Event(_) = &f.kind {
            return self.object_read(fd, buf, nonblock);
        }
        if let Kind::StdinBuf(data) | Kind::Mem(data) = &f.kind {
            let is_stdin = matches!(f.kind, Kind::StdinBuf(_));
            let pos = match off {
                Some(_) if is_stdin => return Err(Errno::ESPIPE),
                Some(o) => o,
                None => f.pos,
            };
            let start = usize::try_from(pos).unwrap_or(usize::MAX).min(data.len());
            let n = (data.len() - start).min(buf.len());
            buf[..n].copy_from_slice(&data[start..start + n]);
            if off.is_none() {
                f.pos = pos + n as u64;
            }
            return Ok(n);
        }
        match &mut f.kind {
            Kind::Host { fd, mode } => {
                if *mode & libc::S_IFMT == libc::S_IFDIR {
                    return Err(Errno::EISDIR);
                }
                let r = match off {
                    // SAFETY: buf is valid for buf.len() bytes.
                    None => unsafe { libc::read(fd.raw(), buf.as_mut_ptr().cast(), buf.len()) },
                    Some(o) => {
                        let o = i64::try_from(o).map_err(|_| Errno::EINVAL)?;
                        // SAFETY: as above.
                        unsafe { libc::pread(fd.raw(), buf.as_mut_ptr().cast(), buf.len(), o) }
                    }
                };
                cvt_size(r)
            }
            Kind::StdinBuf(_) | Kind::Mem(_) | Kind::Event(_) => Ok(0), // handled above
            Kind::Out(_) => Err(Errno::EBADF),
            Kind::Pipe { id, write } => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                if *write {
                    return Err(Errno::EBADF);
                }
                let id = *id;
                let Some(Some(p)) = self.files.pipes.get_mut(id) else {
                    return Err(Errno::EBADF);
                };
                if buf.is_empty() {
                    return Ok(0);
                }
                if p.buf.is_empty() {
                    if p.writers == 0 {
                        return Ok(0);
                    }
                    return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
                }
                let n = p.buf.len().min(buf.len());
                for (d, s) in buf[..n].iter_mut().zip(p.buf.drain(..n)) {
                    *d = s;
                }
                Ok(n)
            }
            Kind::Null => Ok(0),
            Kind::Zero => {
                buf.fill(0);
                Ok(buf.len())
            }
            Kind::Random => {
                self.rng.fill(buf);
                Ok(buf.len())
            }
        }
    }

    /// One write of a host buffer to `fd` (may be short).
    pub(crate) fn do_write(
        &mut self,
        fd: i32,
        data: &[u8],
        off: Option<u64>,
    ) -> Result<usize, Errno> {
        let f = self.files.file_mut(fd)?;
        if f.flags & O_PATH != 0 || f.flags & O_ACCMODE == O_RDONLY {
            return Err(Errno::EBADF);
        }
        let nonblock = f.flags & O_NONBLOCK != 0;
        if let Kind::Event(_) = &f.kind {
            return self.object_write(fd, data, nonblock);
        }
        match &mut f.kind {
            Kind::Host { fd, .. } => {
                let r = match off {
                    // SAFETY: data is valid for data.len() bytes.
                    None => unsafe { libc::write(fd.raw(), data.as_ptr().cast(), data.len()) },
                    Some(o) => {
                        let o = i64::try_from(o).map_err(|_| Errno::EINVAL)?;
                        // SAFETY: as above.
                        unsafe { libc::pwrite(fd.raw(), data.as_ptr().cast(), data.len(), o) }
                    }
                };
                cvt_size(r)
            }
            Kind::Out(is_err) => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                let buf = if *is_err {
                    &mut self.files.err
                } else {
                    &mut self.files.out
                };
                let room = OUTPUT_CAP.saturating_sub(buf.len());
                if room == 0 && !data.is_empty() {
                    return Err(Errno::ENOSPC);
                }
                let n = room.min(data.len());
                buf.extend_from_slice(&data[..n]);
                Ok(n)
            }
            Kind::Pipe { id, write } => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                if !*write {
                    return Err(Errno::EBADF);
                }
                let id = *id;
                let Some(Some(p)) = self.files.pipes.get_mut(id) else {
                    return Err(Errno::EBADF);
                };
                if p.readers == 0 {
                    return Err(Errno::EPIPE);
                }
                let room = PIPE_CAP.saturating_sub(p.buf.len());
                if room == 0 && !data.is_empty() {
                    return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
                }
                let n = room.min(data.len());
                p.buf.extend(&data[..n]);
                Ok(n)
            }
            Kind::StdinBuf(_) | Kind::Mem(_) | Kind::Event(_) => Err(Errno::EBADF),
            Kind::Null | Kind::Zero | Kind::Random => Ok(data.len()),
        }
    }

    /// Turns internal I/O errors into what the guest sees (SIGPIPE, a block).
    fn io_error(&mut self, e: Errno, fd: i32) -> Errno {
        if e == WOULD_BLOCK {
            let wake_at = self.fd_wake_at(fd);
            return self.block_until(super::task::WaitKind::Retry, None, wake_at);
        }
        if e == Errno::EPIPE {
            self.raise(super::signal::SIGPIPE);
        }
        e
    }

    fn fills(&self, fd: i32) -> bool {
        self.files.file(fd).map(|f| f.fills()).unwrap_or(false)
    }

    /// Reads up to `len` bytes from `fd` into guest memory at `addr`.
    fn read_to_guest(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        off: Option<u64>,
    ) -> Result<u64, Errno> {
        self.files.file(fd)?;
        if len == 0 {
            return Ok(0);
        }
        check_writable(mem, addr, len)?;
        let fills = self.fills(fd);
        let mut tmp = vec![0u8; (len as usize).min(CHUNK)];
        let mut total = 0u64;
        while total < len {
            let want = ((len - total) as usize).min(CHUNK);
            match self.do_read(fd, &mut tmp[..want], off.map(|o| o + total)) {
                Ok(n) => {
                    wr(mem, addr + total, &tmp[..n])?;
                    total += n as u64;
                    if n < want || !fills {
                        break;
                    }
                }
                Err(e) if total > 0 && e != WOULD_BLOCK => break,
                Err(_) if total > 0 => break,
                Err(e) => return Err(self.io_error(e, fd)),
            }
        }
        Ok(total)
    }

    /// Writes `len` bytes of guest memory at `addr` to `fd`.
    fn write_from_guest(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        off: Option<u64>,
    ) -> Result<u64, Errno> {
        self.files.file(fd)?;
        if len == 0 {
            return Ok(0);
        }
        check_readable(mem, addr, len)?;
        let mut tmp = vec![0u8; (len as usize).min(CHUNK)];
        let mut total = 0u64;
        while total < len {
            let n = ((len - total) as usize).min(CHUNK);
            rd(mem, addr + total, &mut tmp[..n])?;
            match self.do_write(fd, &tmp[..n], off.map(|o| o + total)) {
                Ok(w) => {
                    total += w as u64;
                    if w < n {
                        break;
                    }
                }
                Err(_) if total > 0 => break,
                Err(e) => return Err(self.io_error(e, fd)),
            }
        }
        Ok(total)
    }

    // ----- syscalls ----------------------------------------------------------------------

    pub(crate) fn fd_check(&mut self, fd: i32) -> SysResult {
        self.files.file(fd).map(|_| 0)
    }

    pub(crate) fn sys_read(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        count: u64,
    ) -> SysResult {
        self.read_to_guest(mem, fd, buf, count.min(MAX_RW), None)
    }

    pub(crate) fn sys_write(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        count: u64,
    ) -> SysResult {
        self.write_from_guest(mem, fd, buf, count.min(MAX_RW), None)
    }

    pub(crate) fn sys_pread(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        count: u64,
        off: u64,
    ) -> SysResult {
        if (off as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        self.pos_check(fd)?;
        self.read_to_guest(mem, fd, buf, count.min(MAX_RW), Some(off))
    }

    pub(crate) fn sys_pwrite(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        count: u64,
        off: u64,
    ) -> SysResult {
        if (off as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        self.pos_check(fd)?;
        self.write_from_guest(mem, fd, buf, count.min(MAX_RW), Some(off))
    }

    /// pread/pwrite need a seekable file.
    fn pos_check(&self, fd: i32) -> Result<(), Errno> {
        match &self.files.file(fd)?.kind {
            Kind::Pipe { .. } | Kind::StdinBuf(_) | Kind::Out(_) => Err(Errno::ESPIPE),
            _ => Ok(()),
        }
    }

    fn read_iovecs(
        &self,
        mem: &mut AddressSpace,
        iov: u64,
        cnt: u64,
    ) -> Result<Vec<(u64, u64)>, Errno> {
        if cnt > 1024 {
            return Err(Errno::EINVAL);
        }
        let mut v = Vec::with_capacity(cnt as usize);
        let mut total = 0u64;
        for k in 0..cnt {
            let at = iov.checked_add(k * 16).ok_or(Errno::EFAULT)?;
            let base = rd_u64(mem, at)?;
            let len = rd_u64(mem, at + 8)?;
            if len > i64::MAX as u64 {
                return Err(Errno::EINVAL);
            }
            total = total.checked_add(len).ok_or(Errno::EINVAL)?;
            if total > i64::MAX as u64 {
                return Err(Errno::EINVAL);
            }
            v.push((base, len));
        }
        Ok(v)
    }

    pub(crate) fn sys_readv(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        iov: u64,
        cnt: u64,
        off: Option<u64>,
    ) -> SysResult {
        self.files.file(fd)?;
        if let Some(o) = off {
            if (o as i64) < 0 {
                return Err(Errno::EINVAL);
            }
            self.pos_check(fd)?;
        }
        let iovs = self.read_iovecs(mem, iov, cnt)?;
        if !self.fills(fd) {
            // a pipe or terminal: one read of what is there, scattered over the buffers
            let total = iovs.iter().map(|v| v.1).sum::<u64>().min(CHUNK as u64);
            if total == 0 {
                return Ok(0);
            }
            let mut left = total;
            for &(base, len) in &iovs {
                let n = len.min(left);
                check_writable(mem, base, n)?;
                left -= n;
            }
            let mut tmp = vec![0u8; total as usize];
            let n = match self.do_read(fd, &mut tmp, off) {
                Ok(n) => n,
                Err(e) => return Err(self.io_error(e, fd)),
            };
            let mut done = 0usize;
            for (base, len) in iovs {
                if done == n {
                    break;
                }
                let k = (len as usize).min(n - done);
                wr(mem, base, &tmp[done..done + k])?;
                done += k;
            }
            return Ok(n as u64);
        }
        each_iov(&iovs, off, |base, len, at| {
            self.read_to_guest(mem, fd, base, len, at)
        })
    }

    pub(crate) fn sys_writev(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        iov: u64,
        cnt: u64,
        off: Option<u64>,
    ) -> SysResult {
        self.files.file(fd)?;
        if let Some(o) = off {
            if (o as i64) < 0 {
                return Err(Errno::EINVAL);
            }
            self.pos_check(fd)?;
        }
        let iovs = self.read_iovecs(mem, iov, cnt)?;
        // Gather into one host write when small, so a line written with writev stays whole.
        let sum: u64 = iovs.iter().map(|v| v.1).sum();
        if sum <= CHUNK as u64 {
            let mut data = Vec::with_capacity(sum as usize);
            for &(base, len) in &iovs {
                let at = data.len();
                data.resize(at + len as usize, 0);
                rd(mem, base, &mut data[at..])?;
            }
            if data.is_empty() {
                return Ok(0);
            }
            return match self.do_write(fd, &data, off) {
                Ok(n) => Ok(n as u64),
                Err(e) => Err(self.io_error(e, fd)),
            };
        }
        each_iov(&iovs, off, |base, len, at| {
            self.write_from_guest(mem, fd, base, len, at)
        })
    }

    fn open_special(&mut self, mem: &mut AddressSpace, sp: Special, flags: u32) -> SysResult {
        let cloexec = flags & O_CLOEXEC != 0;
        let acc = flags & O_ACCMODE;
        let limit = self.nofile();
        let (kind, path): (Kind, &[u8]) = match sp {
            Special::Fd(n) => {
                let e = self.files.entry(n)?;
                return self
                    .files
                    .install(e.file, 0, cloexec, limit)
                    .map(|fd| fd as u64);
            }
            Special::Exe => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                let p = self.exe_host_cpath()?;
                // SAFETY: p is a valid C string.
                let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
                if fd < 0 {
                    return Err(Errno::last());
                }
                // SAFETY: fresh fd owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                let mode = host_mode(fd.as_raw_fd());
                (
                    Kind::Host {
                        fd: HostFd::Owned(fd),
                        mode,
                    },
                    b"/proc/self/exe",
                )
            }
            Special::Maps | Special::CpuList => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                if sp == Special::Maps {
                    (Kind::Mem(self.maps_text(mem)), b"/proc/self/maps")
                } else {
                    (
                        Kind::Mem(self.cpu_list()),
                        b"/sys/devices/system/cpu/online",
                    )
                }
            }
            Special::Null => (Kind::Null, b"/dev/null"),
            Special::Zero => (Kind::Zero, b"/dev/zero"),
            Special::Random => (Kind::Random, b"/dev/urandom"),
        };
        let keep = acc | (flags & (O_APPEND | O_NONBLOCK));
        let idx = self.files.add(OpenFile::new(kind, keep, path.to_vec()));
        self.files
            .install(idx, 0, cloexec, limit)
            .map(|fd| fd as u64)
    }

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
        // SAFETY: path is a valid C string.
        let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), hflags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(Errno::last());
        }
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
            Kind::StdinBuf(_) | Kind::Out(_) | Kind::Pipe { .. } | Kind::Event(_) => {
                Err(Errno::ESPIPE)
            }
        }
    }

    pub(crate) fn sys_fstat(&mut self, mem: &mut AddressSpace, fd: i32, buf: u64) -> SysResult {
        let s = self.stat_fd(fd)?;
        wr(mem, buf, &s.to_arm64())?;
        Ok(0)
    }

    fn stat_path(&self, dirfd: i32, p: &[u8], flags: i32) -> Result<StatInfo, Errno> {
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

    fn statx_path(
        &self,
        dirfd: i32,
        p: &[u8],
        follow: bool,
        sync: i32,
        mask: u32,
    ) -> Result<[u8; 256], Errno> {
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

    fn statfs_fd(&mut self, mem: &mut AddressSpace, fd: RawFd, buf: u64) -> SysResult {
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
        let mut tmp = vec![0u8; n];
        // SAFETY: tmp is valid for n bytes.
        let r = unsafe { libc::syscall(libc::SYS_getdents64, h, tmp.as_mut_ptr(), n) };
        if r < 0 {
            return Err(Errno::last());
        }
        let r = (r as usize).min(n);
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
        let target = match self.special(dirfd, &p) {
            Some(Special::Exe) => self.exe_guest_bytes(),
            Some(Special::Fd(n)) => {
                let f = self.files.file(n)?;
                match &f.kind {
                    Kind::Pipe { id, .. } => format!("pipe:[{}]", 1000 + id).into_bytes(),
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
                let mut out = vec![0u8; super::PATH_MAX];
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
                Special::Maps | Special::CpuList if mode & 2 != 0 => Err(Errno::EACCES),
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
        // SAFETY: valid C string.
        cvt(unsafe { libc::mkdirat(t.dirfd, t.path.as_ptr(), mode & 0o7777 & !self.umask) })
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
        cvt(unsafe { libc::mknodat(t.dirfd, t.path.as_ptr(), m, dev) })
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
            F_GETLK | F_OFD_GETLK => {
                // struct flock: l_type is the first i16; F_UNLCK = 2
                wr(mem, arg, &2i16.to_le_bytes())?;
                Ok(0)
            }
            F_SETLK | F_SETLKW | F_OFD_SETLK | F_OFD_SETLKW => Ok(0),
            F_SETOWN | F_GETOWN => Ok(0),
            F_GETPIPE_SZ | F_SETPIPE_SZ => match self.files.file(fd)?.kind {
                Kind::Pipe { .. } => Ok(if cmd == F_SETPIPE_SZ {
                    arg.clamp(4096, 1 << 20).next_power_of_two()
                } else {
                    PIPE_SIZE
                }),
                _ => Err(Errno::EBADF),
            },
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
        if let Some(Some(p)) = self.files.pipes.get_mut(id) {
            p.readers = 1;
            p.writers = 1;
        }
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
        let limit = self.nofile();
        let cloexec = flags & O_CLOEXEC != 0;
        let rfd = match self.files.install(r, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                self.files.drop_file(w);
                return Err(e);
            }
        };
        let wfd = match self.files.install(w, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = self.files.close(rfd);
                return Err(e);
            }
        };
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&rfd.to_le_bytes());
        b[4..].copy_from_slice(&wfd.to_le_bytes());
        if let Err(e) = wr(mem, fds, &b) {
            let _ = self.files.close(rfd);
            let _ = self.files.close(wfd);
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
        const TCGETS: u32 = 0x5401;
        const TCSETS: u32 = 0x5402;
        const TCSETSW: u32 = 0x5403;
        const TCSETSF: u32 = 0x5404;
        const TIOCGPGRP: u32 = 0x540f;
        const TIOCGWINSZ: u32 = 0x5413;
        const FIONREAD: u32 = 0x541b;
        const FIONBIO: u32 = 0x5421;
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
        let f = self.files.file(fd)?;
        match &f.kind {
            Kind::Host { fd: h, .. } => {
                let h = h.raw();
                // (request, bytes out, bytes in)
                let (out_len, in_len) = match req {
                    TCGETS => (36, 0),
                    TCSETS | TCSETSW | TCSETSF => (0, 36),
                    TIOCGWINSZ => (8, 0),
                    TIOCGPGRP | FIONREAD => (4, 0),
                    _ => return Err(Errno::ENOTTY),
                };
                let mut buf = [0u8; 64];
                if in_len > 0 {
                    rd(mem, arg, &mut buf[..in_len])?;
                }
                if out_len > 0 {
                    check_writable(mem, arg, out_len as u64)?;
                }
                // SAFETY: buf is 64 bytes, larger than any of these requests' argument.
                let r = unsafe { libc::ioctl(h, req as _, buf.as_mut_ptr()) };
                if r < 0 {
                    return Err(Errno::last());
                }
                if req == TIOCGPGRP && self.cfg.deterministic {
                    buf[..4].copy_from_slice(&self.pid.to_le_bytes());
                }
                if out_len > 0 {
                    wr(mem, arg, &buf[..out_len])?;
                }
                Ok(r as u64)
            }
            Kind::Pipe { id, write: false } if req == FIONREAD => {
                let n = match self.files.pipes.get(*id) {
                    Some(Some(p)) => p.buf.len(),
                    _ => 0,
                };
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

    pub(crate) fn sys_sendfile(
        &mut self,
        mem: &mut AddressSpace,
        out_fd: i32,
        in_fd: i32,
        offp: u64,
        count: u64,
    ) -> SysResult {
        self.files.file(out_fd)?;
        self.files.file(in_fd)?;
        let mut off = if offp != 0 {
            let o = rd_u64(mem, offp)? as i64;
            if o < 0 {
                return Err(Errno::EINVAL);
            }
            Some(o as u64)
        } else {
            None
        };
        let count = count.min(MAX_RW);
        let mut tmp = vec![0u8; (count as usize).min(CHUNK)];
        let mut total = 0u64;
        while total < count {
            let want = ((count - total) as usize).min(CHUNK);
            let n = match self.do_read(in_fd, &mut tmp[..want], off) {
                Ok(n) => n,
                Err(_) if total > 0 => break,
                Err(e) => return Err(self.io_error(e, in_fd)),
            };
            if n == 0 {
                break;
            }
            let w = match self.do_write(out_fd, &tmp[..n], None) {
                Ok(w) => w,
                Err(_) if total > 0 => break,
                Err(e) => return Err(self.io_error(e, out_fd)),
            };
            total += w as u64;
            if let Some(o) = off.as_mut() {
                *o += w as u64;
            }
            if w < n || n < want {
                break;
            }
        }
        if let Some(o) = off {
            wr_u64(mem, offp, o)?;
        }
        Ok(total)
    }

    /// Readiness of `fd` for poll `events` right now (POLLNVAL for a bad fd).
    pub(crate) fn poll_ready(&self, fd: i32, events: i16) -> i16 {
        const POLLIN: i16 = 1;
        const POLLOUT: i16 = 4;
        const POLLERR: i16 = 8;
        const POLLHUP: i16 = 0x10;
        const POLLNVAL: i16 = 0x20;
        let Ok(f) = self.files.file(fd) else {
            return POLLNVAL;
        };
        let want = events | POLLERR | POLLHUP;
        let r = match &f.kind {
            Kind::Host { fd, .. } => {
                let mut p = libc::pollfd {
                    fd: fd.raw(),
                    events,
                    revents: 0,
                };
                // SAFETY: one pollfd.
                let n = unsafe { libc::poll(&mut p, 1, 0) };
                if n > 0 {
                    p.revents
                } else {
                    0
                }
            }
            Kind::Pipe { id, write } => match self.files.pipes.get(*id) {
                Some(Some(p)) if !*write => {
                    (if p.buf.is_empty() { 0 } else { POLLIN })
                        | (if p.writers == 0 { POLLHUP } else { 0 })
                }
                Some(Some(p)) => {
                    if p.readers == 0 {
                        POLLERR
                    } else if p.buf.len() < PIPE_CAP {
                        POLLOUT
                    } else {
                        0
                    }
                }
                _ => POLLNVAL,
            },
            Kind::Out(_) => POLLOUT,
            Kind::StdinBuf(_) => POLLIN,
            Kind::Event(o) => self.object_poll(o),
            _ => POLLIN | POLLOUT,
        };
        r & (want | POLLNVAL)
    }

    fn wait_host(&mut self, hostfds: &mut [libc::pollfd], timeout_ns: Option<u64>) {
        if hostfds.is_empty() || self.cfg.deterministic {
            return;
        }
        let ms = timeout_ns.map_or(-1, |ns| (ns / 1_000_000).min(i32::MAX as u64) as i32);
        // SAFETY: hostfds is a valid slice of pollfd.
        unsafe { libc::poll(hostfds.as_mut_ptr(), hostfds.len() as libc::nfds_t, ms) };
    }

    /// The earliest time one of `fds` (a timerfd) becomes ready by itself.
    fn fds_wake_at(&self, fds: impl Iterator<Item = i32>) -> Option<u64> {
        fds.filter_map(|fd| self.fd_wake_at(fd)).min()
    }

    pub(crate) fn sys_ppoll(
        &mut self,
        mem: &mut AddressSpace,
        fds: u64,
        nfds: u64,
        tmo: u64,
    ) -> SysResult {
        if nfds > self.nofile() {
            return Err(Errno::EINVAL);
        }
        let timeout = if tmo == 0 {
            None
        } else {
            Some(super::time::read_timespec_ns(mem, tmo)?)
        };
        let mut list = Vec::with_capacity(nfds as usize);
        for k in 0..nfds {
            let mut b = [0u8; 8];
            rd(mem, fds + k * 8, &mut b)?;
            let fd = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let ev = i16::from_le_bytes([b[4], b[5]]);
            list.push((fd, ev));
        }
        check_writable(mem, fds, nfds * 8)?;
        for round in 0..2 {
            let mut ready = 0u64;
            let mut hostfds = Vec::new();
            for (k, &(fd, ev)) in list.iter().enumerate() {
                let rev = if fd < 0 { 0 } else { self.poll_ready(fd, ev) };
                if rev != 0 {
                    ready += 1;
                }
                wr(mem, fds + k as u64 * 8 + 6, &rev.to_le_bytes())?;
                if fd >= 0 {
                    if let Some(h) = self.files.file(fd).ok().and_then(|f| f.host_fd()) {
                        hostfds.push(libc::pollfd {
                            fd: h,
                            events: ev,
                            revents: 0,
                        });
                    }
                }
            }
            if ready > 0 || timeout == Some(0) || round == 1 {
                return Ok(ready);
            }
            if hostfds.is_empty() || self.cfg.deterministic || self.thread_count() > 1 {
                // wait for another task (or the deadline): the poll runs again then
                let deadline = timeout.map(|ns| self.deadline_after(ns));
                if deadline.is_some_and(|d| self.deadline_passed(d)) {
                    return Ok(0);
                }
                let wake_at = self.fds_wake_at(list.iter().map(|&(fd, _)| fd));
                return Err(self.block_until(super::task::WaitKind::Retry, deadline, wake_at));
            }
            self.wait_host(&mut hostfds, timeout);
        }
        Ok(0)
    }

    pub(crate) fn sys_pselect6(
        &mut self,
        mem: &mut AddressSpace,
        nfds: i32,
        rfds: u64,
        wfds: u64,
        efds: u64,
        tmo: u64,
    ) -> SysResult {
        if nfds < 0 || nfds as u64 > self.nofile() {
            return Err(Errno::EINVAL);
        }
        let timeout = if tmo == 0 {
            None
        } else {
            Some(super::time::read_timespec_ns(mem, tmo)?)
        };
        let words = (nfds as usize).div_ceil(64);
        let read_set = |mem: &mut AddressSpace, p: u64| -> Result<Vec<u64>, Errno> {
            let mut v = vec![0u64; words];
            if p != 0 {
                for (k, w) in v.iter_mut().enumerate() {
                    *w = rd_u64(mem, p + k as u64 * 8)?;
                }
            }
            Ok(v)
        };
        let (r, w, e) = (
            read_set(mem, rfds)?,
            read_set(mem, wfds)?,
            read_set(mem, efds)?,
        );
        for round in 0..2 {
            let mut ro = vec![0u64; words];
            let mut wo = vec![0u64; words];
            let eo = vec![0u64; words];
            let mut count = 0u64;
            let mut hostfds = Vec::new();
            for fd in 0..nfds as usize {
                let (wi, bit) = (fd / 64, 1u64 << (fd % 64));
                let want_r = r[wi] & bit != 0;
                let want_w = w[wi] & bit != 0;
                if !want_r && !want_w && e[wi] & bit == 0 {
                    continue;
                }
                let ev = (if want_r { 1 } else { 0 }) | (if want_w { 4 } else { 0 });
                let rev = self.poll_ready(fd as i32, ev);
                if rev & 0x20 != 0 {
                    return Err(Errno::EBADF);
                }
                if want_r && rev & (1 | 0x10 | 8) != 0 {
                    ro[wi] |= bit;
                    count += 1;
                }
                if want_w && rev & (4 | 8) != 0 {
                    wo[wi] |= bit;
                    count += 1;
                }
                if let Some(h) = self.files.file(fd as i32).ok().and_then(|f| f.host_fd()) {
                    hostfds.push(libc::pollfd {
                        fd: h,
                        events: ev,
                        revents: 0,
                    });
                }
            }
            if count > 0 || timeout == Some(0) || round == 1 {
                for (p, set) in [(rfds, &ro), (wfds, &wo), (efds, &eo)] {
                    if p != 0 {
                        for (k, v) in set.iter().enumerate() {
                            wr_u64(mem, p + k as u64 * 8, *v)?;
                        }
                    }
                }
                return Ok(count);
            }
            if hostfds.is_empty() || self.cfg.deterministic || self.thread_count() > 1 {
                // wait for another task (or the deadline): the select runs again then
                let deadline = timeout.map(|ns| self.deadline_after(ns));
                if deadline.is_some_and(|d| self.deadline_passed(d)) {
                    for p in [rfds, wfds, efds] {
                        if p != 0 {
                            for k in 0..words {
                                wr_u64(mem, p + k as u64 * 8, 0)?;
                            }
                        }
                    }
                    return Ok(0);
                }
                let wake_at = self.fds_wake_at(0..nfds);
                return Err(self.block_until(super::task::WaitKind::Retry, deadline, wake_at));
            }
            self.wait_host(&mut hostfds, timeout);
        }
        Ok(0)
    }

    /// Reads `len` bytes of file `fd` at `off` into guest memory at `addr` ignoring page
    /// permissions (file-backed mmap). Bytes past the end of the file stay zero.
    pub(crate) fn fill_from_file(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        off: u64,
    ) -> Result<(), Errno> {
        let mut tmp = vec![0u8; (len as usize).min(CHUNK)];
        let mut done = 0u64;
        while done < len {
            let want = ((len - done) as usize).min(CHUNK);
            let pos = off.checked_add(done).ok_or(Errno::EOVERFLOW)?;
            let n = self.do_read(fd, &mut tmp[..want], Some(pos))?;
            if n == 0 {
                break;
            }
            mem.poke_bytes(addr + done, &tmp[..n])
                .map_err(|_| Errno::ENOMEM)?;
            done += n as u64;
        }
        Ok(())
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

fn rd_u32_e(mem: &mut AddressSpace, addr: u64) -> Result<u32, Errno> {
    super::rd_u32(mem, addr)
}

impl Errno {
    pub const EOVERFLOW: Errno = Errno(libc::EOVERFLOW);
}
