//! The fd table and open file descriptions of a process: guest fds are numbers in a
//! per-process table that point at open file descriptions (shared by dup); a description is
//! a host fd, a pipe end, a captured stream, a virtual file or an event object. Host fds are
//! opened close-on-exec and closed when the last guest fd referring to them goes; inherited
//! stdio (fds 0..2 of the host) is never closed on the host. Also the guest's open flags and
//! their translation to the host's.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use crate::io::events::Object;
use crate::{Errno, Stdio};

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

/// Captured stdout/stderr stop growing here (ENOSPC after).
pub const OUTPUT_CAP: usize = 1 << 30;
/// armada's pipes hold at most this much, as Linux's by default: a writer that finds the
/// pipe full blocks until a reader makes room (a write of at most [`PIPE_BUF`] bytes goes in
/// whole or waits).
pub const PIPE_CAP: usize = 65536;
/// Writes of at most this many bytes to a pipe are atomic.
pub const PIPE_BUF: usize = 4096;
/// /proc/sys/fs/pipe-max-size: the most F_SETPIPE_SZ gives without CAP_SYS_RESOURCE.
pub(crate) const PIPE_MAX_SIZE: u64 = 1 << 20;

#[cfg(target_arch = "x86_64")]
pub(crate) const HOST_O_LARGEFILE: i32 = 0o100000;
#[cfg(not(target_arch = "x86_64"))]
pub(crate) const HOST_O_LARGEFILE: i32 = libc::O_LARGEFILE;

/// (guest bit, host bits), for translating open flags both ways.
pub(crate) fn flag_table() -> [(u32, i32); 14] {
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

/// The fds above 2 that this process was started with (a shell's `3>file`, make's
/// jobserver pipes), for `Stdio::Inherit`: call it first thing, before the process opens
/// fds of its own.
pub fn inherited_host_fds() -> Vec<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<RawFd> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    // the listing's own fd was open while it was read, and is closed now
    // SAFETY: F_GETFD takes no pointer argument.
    fds.retain(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0);
    fds.sort_unstable();
    fds
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

/// A copy for a snapshot's restored lane: a new open file description of the same file where
/// the host can reopen it (a regular file or directory, at the same offset), so lanes that
/// run side by side keep their own offsets; the same description (dup) otherwise (pipes,
/// sockets and devices of the host). If the host has no fd left, the copy is a closed fd
/// (EBADF to the guest) and a note says so.
impl Clone for HostFd {
    fn clone(&self) -> Self {
        match self {
            HostFd::Inherited(fd) => HostFd::Inherited(*fd),
            HostFd::Owned(f) => match reopen_at_offset(f.as_raw_fd()).or_else(|_| f.try_clone()) {
                Ok(f) => HostFd::Owned(f),
                Err(e) => {
                    crate::note_once(crate::NOTE_MISC, 9, || {
                        format!("a restored snapshot lost a host file ({e}): raise `ulimit -n`")
                    });
                    HostFd::Inherited(-1)
                }
            },
        }
    }
}

/// A fresh description of the regular file or directory behind `fd`, at its offset.
fn reopen_at_offset(fd: RawFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let st = host_fstat(fd).map_err(|e| std::io::Error::from_raw_os_error(e.0))?;
    let ty = st.st_mode & libc::S_IFMT;
    if ty != libc::S_IFREG && ty != libc::S_IFDIR {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: F_GETFL takes no pointer argument.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let keep =
        libc::O_ACCMODE | libc::O_APPEND | libc::O_NONBLOCK | libc::O_DIRECTORY | libc::O_PATH;
    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
    // SAFETY: path is a valid C string.
    let nfd = unsafe { libc::open(path.as_ptr(), (fl & keep) | libc::O_CLOEXEC) };
    if nfd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh fd owned by nobody else.
    let new = unsafe { OwnedFd::from_raw_fd(nfd) };
    if fl & libc::O_PATH == 0 {
        // SAFETY: lseek takes no pointers.
        let pos = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
        if pos > 0 && unsafe { libc::lseek(nfd, pos, libc::SEEK_SET) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(new)
}

impl HostFd {
    pub(crate) fn raw(&self) -> RawFd {
        match self {
            HostFd::Owned(f) => f.as_raw_fd(),
            HostFd::Inherited(fd) => *fd,
        }
    }
}

#[derive(Clone, Debug)]
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
    /// One end of a socketpair(AF_UNIX, SOCK_STREAM): it reads pipe `rx` and writes pipe
    /// `tx` (the other end the reverse); `rd`/`wr`: the directions not shut down.
    Socket {
        rx: usize,
        tx: usize,
        rd: bool,
        wr: bool,
    },
    /// A socket from socket() that is not connected (yet): fresh, bound or listening
    /// (its state is in `Files::net`; connecting makes it a `Socket`).
    NetSock,
    /// A read-only virtual file (/proc/self/maps, ...).
    Mem(Vec<u8>),
    /// An eventfd, timerfd or epoll instance (see `events`).
    Event(Object),
    Null,
    Zero,
    Random,
}

#[derive(Clone, Debug)]
pub(crate) struct OpenFile {
    pub(crate) kind: Kind,
    /// Guest open flags (access mode and status flags).
    pub(crate) flags: u32,
    /// Position for virtual files (host files keep theirs on the host).
    pub(crate) pos: u64,
    /// The guest path it was opened by (absolute when known).
    pub(crate) path: Vec<u8>,
    pub(crate) refs: u32,
}

impl OpenFile {
    pub(crate) fn new(kind: Kind, flags: u32, path: Vec<u8>) -> Self {
        OpenFile {
            kind,
            flags,
            pos: 0,
            path,
            refs: 0,
        }
    }
    pub(crate) fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Host { mode, .. } if mode & libc::S_IFMT == libc::S_IFDIR)
    }
    /// Whether a read that returns less than asked means end of file (so a big read may be
    /// split into steps), rather than "that is what is available now".
    pub(crate) fn fills(&self) -> bool {
        match &self.kind {
            Kind::Host { mode, .. } => mode & libc::S_IFMT == libc::S_IFREG,
            Kind::StdinBuf(_) | Kind::Mem(_) | Kind::Null | Kind::Zero | Kind::Random => true,
            Kind::Out(_) => true,
            Kind::Pipe { .. } | Kind::Socket { .. } | Kind::NetSock | Kind::Event(_) => false,
        }
    }
    /// What a read at `off` (else at the file's position) can give of armada's in-memory
    /// files (a lane's stdin, a fuzzer's input); None for the others.
    pub(crate) fn in_memory_left(&self, off: Option<u64>) -> Option<usize> {
        match &self.kind {
            Kind::StdinBuf(d) | Kind::Mem(d) => {
                let pos = usize::try_from(off.unwrap_or(self.pos)).unwrap_or(usize::MAX);
                Some(d.len().saturating_sub(pos))
            }
            _ => None,
        }
    }
    /// The host's stat of the file behind this description (None for armada's own files).
    pub(crate) fn host_stat(&self) -> Option<libc::stat> {
        host_fstat(self.host_fd()?).ok()
    }

    pub(crate) fn host_fd_pub(&self) -> Option<RawFd> {
        self.host_fd()
    }
    pub(crate) fn host_fd(&self) -> Option<RawFd> {
        match &self.kind {
            Kind::Host { fd, .. } => Some(fd.raw()),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Pipe {
    pub(crate) buf: VecDeque<u8>,
    /// For a datagram or seqpacket socket: the lengths of the messages in `buf`, in
    /// order (a read takes one message at most, and drops what does not fit).
    pub(crate) bounds: Option<VecDeque<usize>>,
    /// Bytes ever written and ever taken: positions in the stream.
    pub(crate) written: u64,
    pub(crate) taken: u64,
    /// Open file descriptions in flight (SCM_RIGHTS), each list at the stream position of
    /// the first byte it was sent with; each holds a reference until it is received.
    pub(crate) rights: VecDeque<(u64, Vec<usize>)>,
    pub(crate) readers: u32,
    pub(crate) writers: u32,
    /// The writer was a TCP socket closed with SO_LINGER 0 (a reset): once the bytes
    /// here are read, one read says ECONNRESET, and end of file after it.
    pub(crate) reset: bool,
    /// F_SETPIPE_SZ's capacity (0: the default, PIPE_CAP).
    pub(crate) size: usize,
    /// For a socket: the credentials its bytes were sent with (SCM_CREDENTIALS), as change
    /// points: from each stream position on, the bytes carry these (None: none, as when
    /// the sender passed none and neither end had SO_PASSCRED).
    pub(crate) creds: VecDeque<(u64, Option<Ucred>)>,
    /// The stream of a TCP connection: a write after its reader closed goes nowhere once
    /// (on Linux the closed end answers those bytes with a reset), and only the writes
    /// after it fail with EPIPE. (An AF_UNIX stream fails at once.)
    pub(crate) tcp: bool,
    /// A write found the reader of this TCP stream gone (the reset is on its way).
    pub(crate) reset_coming: bool,
    /// For a socket with message boundaries: its type (SOCK_DGRAM or SOCK_SEQPACKET).
    pub(crate) sock_type: i32,
    /// For a socket: the end that reads this pipe has SO_PASSCRED set.
    pub(crate) passcred: bool,
    /// For a socket: SO_PEERCRED of the end that reads this pipe (its peer's credentials
    /// when the two were connected).
    pub(crate) peer: Option<Ucred>,
}

/// `struct ucred`: a process's pid, user and group, as SCM_CREDENTIALS and SO_PEERCRED
/// carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ucred {
    pub(crate) pid: i32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl Ucred {
    /// What a receiver with SO_PASSCRED gets for bytes sent with no credentials: no pid,
    /// and the overflow user and group (nobody).
    pub(crate) const NONE: Ucred = Ucred {
        pid: 0,
        uid: 65534,
        gid: 65534,
    };

    pub(crate) fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.pid.to_le_bytes());
        b[4..8].copy_from_slice(&self.uid.to_le_bytes());
        b[8..].copy_from_slice(&self.gid.to_le_bytes());
        b
    }
}

impl Pipe {
    /// Whether a read would find something: a message (a datagram pipe's may be empty), or
    /// bytes.
    pub(crate) fn has_data(&self) -> bool {
        match &self.bounds {
            Some(b) => !b.is_empty(),
            None => !self.buf.is_empty(),
        }
    }

    /// The credentials the bytes at stream position `at` were sent with.
    pub(crate) fn creds_at(&self, at: u64) -> Option<Ucred> {
        self.creds
            .iter()
            .take_while(|(from, _)| *from <= at)
            .last()
            .and_then(|(_, c)| *c)
    }

    /// Records that the bytes written from now on carry `c`.
    pub(crate) fn stamp_creds(&mut self, c: Option<Ucred>) {
        if self
            .creds
            .back()
            .map_or(c.is_none(), |&(_, last)| last == c)
        {
            return;
        }
        if self
            .creds
            .back()
            .is_some_and(|&(from, _)| from == self.written)
        {
            self.creds.pop_back();
        }
        self.creds.push_back((self.written, c));
    }

    /// Forgets the change points that no unread byte needs.
    fn drop_read_creds(&mut self) {
        while self.creds.len() > 1 && self.creds[1].0 <= self.taken {
            self.creds.pop_front();
        }
    }

    /// Takes `n` bytes (`drop` of them from the queue: a message read short loses the rest).
    pub(crate) fn took(&mut self, drop: usize) {
        self.taken += drop as u64;
        self.drop_read_creds();
    }

    /// How many bytes a stream read from here may take at once: up to where the sender's
    /// credentials change, when the reader asked for them (Linux does not merge bytes with
    /// different credentials into one read).
    pub(crate) fn stream_run(&self, want: usize) -> usize {
        if !self.passcred {
            return want;
        }
        match self.creds.iter().find(|(from, _)| *from > self.taken) {
            Some(&(from, _)) => want.min((from - self.taken) as usize),
            None => want,
        }
    }

    /// How many bytes the pipe holds at most.
    pub(crate) fn cap(&self) -> usize {
        if self.size == 0 {
            PIPE_CAP
        } else {
            self.size
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct FdEntry {
    pub(crate) file: usize,
    pub(crate) cloexec: bool,
}

/// Lane-wide state that another subsystem keeps per open file description (the socket
/// table: names bound, listen queues, datagram queues), held beside the descriptions and
/// handed over with them. The fd layer tells it when a description goes, through this
/// trait, and does not know its type: the network builds on descriptors, not the reverse.
pub(crate) trait DescriptionState: std::any::Any + std::fmt::Debug + Send + Sync {
    /// Description `idx` is gone: forget it, and say what it held that goes with it.
    fn dropped(&mut self, idx: usize) -> Released;
    /// Whether closing description `idx` resets its connection (SO_LINGER with a time
    /// of 0) rather than ending it cleanly.
    fn resets_on_close(&self, idx: usize) -> bool;
    fn clone_box(&self) -> Box<dyn DescriptionState>;
    fn as_any(&self) -> &dyn std::any::Any;
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl Clone for Box<dyn DescriptionState> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// What a dropped description held that the fd layer must let go of too.
#[derive(Debug, Default)]
pub(crate) struct Released {
    /// Open file descriptions it held a reference to (a listener's queued connections).
    pub(crate) descriptions: Vec<usize>,
    /// Pipe ends it had open, as (pipe, writing end).
    pub(crate) pipe_ends: Vec<(usize, bool)>,
}

/// The fd table and open file descriptions of one process.
#[derive(Clone, Debug, Default)]
pub struct Files {
    pub(crate) fds: Vec<Option<FdEntry>>,
    pub(crate) files: Vec<Option<OpenFile>>,
    pub(crate) pipes: Vec<Option<Pipe>>,
    pub(crate) out: Vec<u8>,
    pub(crate) err: Vec<u8>,
    /// Bytes written to captured stdout and stderr that a GPU kernel answered and dropped
    /// (`Process::device_io`): they count toward OUTPUT_CAP as if kept.
    pub(crate) dropped: [u64; 2],
    /// The lane's sockets from socket() and the names they hold: the network's state
    /// (`net::table`), which the fd layer knows only as a [`DescriptionState`].
    pub(crate) sockets: Option<Box<dyn DescriptionState>>,
    /// The lane's advisory file locks (see `locks`).
    pub(crate) locks: crate::io::locks::Locks,
    /// The pid of the process whose fd table this is: its record locks go when it closes
    /// an fd of the file.
    pub(crate) lock_pid: i32,
}

pub(crate) fn host_getfl(fd: RawFd) -> u32 {
    // SAFETY: F_GETFL takes no pointer argument.
    let r = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if r < 0 {
        O_RDWR
    } else {
        guest_open_flags(r)
    }
}

pub(crate) fn host_mode(fd: RawFd) -> u32 {
    host_fstat(fd).map(|s| s.st_mode).unwrap_or(libc::S_IFCHR)
}

impl Files {
    pub(crate) fn new(stdio: Stdio) -> Self {
        let mut f = Files::default();
        match stdio {
            Stdio::Inherit { extra } => {
                let open = |fd: RawFd| {
                    // SAFETY: F_GETFD takes no pointer argument.
                    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
                };
                let extra = extra.into_iter().filter(|&fd| fd > 2 && open(fd));
                for fd in (0..3).chain(extra) {
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

    pub(crate) fn add(&mut self, of: OpenFile) -> usize {
        if let Some(i) = self.files.iter().position(|f| f.is_none()) {
            self.files[i] = Some(of);
            i
        } else {
            self.files.push(Some(of));
            self.files.len() - 1
        }
    }

    pub(crate) fn entry(&self, fd: i32) -> Result<FdEntry, Errno> {
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

    /// An event object (eventfd, timerfd, epoll) opened read-write at the lowest free fd.
    pub(crate) fn install_event(
        &mut self,
        o: Object,
        nonblock: bool,
        cloexec: bool,
        limit: u64,
    ) -> Result<i32, Errno> {
        let flags = O_RDWR | if nonblock { O_NONBLOCK } else { 0 };
        let idx = self.add(OpenFile::new(Kind::Event(o), flags, Vec::new()));
        self.install(idx, 0, cloexec, limit)
    }

    /// The event object behind `fd` (EINVAL for any other kind of file).
    pub(crate) fn event(&self, fd: i32) -> Result<&Object, Errno> {
        match &self.file(fd)?.kind {
            Kind::Event(o) => Ok(o),
            _ => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn event_mut(&mut self, fd: i32) -> Result<&mut Object, Errno> {
        match &mut self.file_mut(fd)?.kind {
            Kind::Event(o) => Ok(o),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Whether poll and epoll can wait on `fd`: not on a regular file or directory.
    pub(crate) fn pollable(&self, fd: i32) -> Result<bool, Errno> {
        Ok(match &self.file(fd)?.kind {
            Kind::Host { mode, .. } => {
                let t = mode & libc::S_IFMT;
                t != libc::S_IFREG && t != libc::S_IFDIR
            }
            _ => true,
        })
    }

    pub(crate) fn file_mut(&mut self, fd: i32) -> Result<&mut OpenFile, Errno> {
        let e = self.entry(fd)?;
        self.files
            .get_mut(e.file)
            .and_then(|f| f.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Puts file `idx` at the lowest free fd >= `min`.
    pub(crate) fn install(
        &mut self,
        idx: usize,
        min: usize,
        cloexec: bool,
        limit: u64,
    ) -> Result<i32, Errno> {
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
    pub(crate) fn install_at(&mut self, idx: usize, fd: usize, cloexec: bool) -> Result<(), Errno> {
        if let Some(f) = self.files.get_mut(idx).and_then(|f| f.as_mut()) {
            f.refs += 1;
        } else {
            return Err(Errno::EBADF);
        }
        if fd >= self.fds.len() {
            self.fds.resize(fd + 1, None);
        }
        if let Some(old) = self.fds[fd].take() {
            self.fd_closed(old.file);
        }
        self.fds[fd] = Some(FdEntry { file: idx, cloexec });
        Ok(())
    }

    /// Takes one more reference to open file description `idx` (one in flight).
    pub(crate) fn retain_file(&mut self, idx: usize) {
        if let Some(Some(f)) = self.files.get_mut(idx) {
            f.refs += 1;
        }
    }

    pub(crate) fn release_if_unused(&mut self, idx: usize) {
        if matches!(self.files.get(idx), Some(Some(f)) if f.refs == 0) {
            self.drop_file(idx);
        }
    }

    pub(crate) fn release(&mut self, idx: usize) {
        let Some(Some(f)) = self.files.get_mut(idx) else {
            return;
        };
        f.refs = f.refs.saturating_sub(1);
        if f.refs == 0 {
            self.drop_file(idx);
        }
    }

    /// One of this process's fds of description `idx` was closed: the process's record
    /// locks on the file go (Linux drops them on any close), then the reference.
    fn fd_closed(&mut self, idx: usize) {
        if !self.locks.is_empty() {
            let key = self.lock_key(idx);
            let pid = self.lock_pid;
            self.locks.process_closed(pid, key);
        }
        self.release(idx);
    }

    pub(crate) fn drop_file(&mut self, idx: usize) {
        if !self.locks.is_empty() {
            self.locks.description_dropped(idx);
        }
        if let Some(f) = self.files.get_mut(idx).and_then(|f| f.take()) {
            match f.kind {
                Kind::Pipe { id, write } => self.pipe_end_closed(id, write),
                Kind::Socket { rx, tx, rd, wr } => {
                    if rd {
                        self.pipe_end_closed(rx, false);
                    }
                    if self
                        .sockets
                        .as_ref()
                        .is_some_and(|s| s.resets_on_close(idx))
                    {
                        if let Some(Some(p)) = self.pipes.get_mut(tx) {
                            p.reset = true;
                        }
                    }
                    if wr {
                        self.pipe_end_closed(tx, true);
                    }
                }
                _ => {}
            }
            self.description_state_dropped(idx);
            // host fds close when `f` drops here
        }
    }

    /// Description `idx` is gone (or no longer a socket from socket()): the state other
    /// subsystems kept for it goes, with what it held.
    pub(crate) fn description_state_dropped(&mut self, idx: usize) {
        let Some(r) = self.sockets.as_mut().map(|s| s.dropped(idx)) else {
            return;
        };
        for c in r.descriptions {
            self.release(c);
        }
        for (pipe, write) in r.pipe_ends {
            self.pipe_end_closed(pipe, write);
        }
    }

    /// A reading or writing end of pipe `id` is gone (a pipe end or a socket direction
    /// closed or shut down); the pipe goes with its last end.
    pub(crate) fn pipe_end_closed(&mut self, id: usize, write: bool) {
        if let Some(Some(p)) = self.pipes.get_mut(id) {
            if write {
                p.writers = p.writers.saturating_sub(1);
            } else {
                p.readers = p.readers.saturating_sub(1);
            }
            if p.readers == 0 && p.writers == 0 {
                let in_flight = std::mem::take(&mut p.rights);
                self.pipes[id] = None;
                for idx in in_flight.into_iter().flat_map(|(_, v)| v) {
                    self.release(idx);
                }
            } else if p.readers == 0 {
                // nobody can receive them any more
                let in_flight = std::mem::take(&mut p.rights);
                for idx in in_flight.into_iter().flat_map(|(_, v)| v) {
                    self.release(idx);
                }
            }
        }
    }

    pub(crate) fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let e = self.entry(fd)?;
        self.fds[fd as usize] = None;
        self.fd_closed(e.file);
        Ok(())
    }

    /// A new pipe with one reading and one writing end.
    pub(crate) fn new_pipe(&mut self) -> usize {
        let p = Pipe {
            readers: 1,
            writers: 1,
            ..Pipe::default()
        };
        if let Some(i) = self.pipes.iter().position(|p| p.is_none()) {
            self.pipes[i] = Some(p);
            i
        } else {
            self.pipes.push(Some(p));
            self.pipes.len() - 1
        }
    }

    /// Gives the open file descriptions (and pipes, and captured output) to `to`. They are
    /// the lane's, not one process's: fds of several processes point at one description
    /// after a fork, sharing its offset and flags as on Linux. Only the process the Linux
    /// layer is servicing holds them; the scheduler hands them over when it switches
    /// processes (see `Process::hand_over`).
    pub(crate) fn hand_over(&mut self, to: &mut Files) {
        std::mem::swap(&mut self.files, &mut to.files);
        std::mem::swap(&mut self.pipes, &mut to.pipes);
        std::mem::swap(&mut self.out, &mut to.out);
        std::mem::swap(&mut self.err, &mut to.err);
        std::mem::swap(&mut self.sockets, &mut to.sockets);
        std::mem::swap(&mut self.locks, &mut to.locks);
    }

    /// The fd table of a forked child: the same fds, each pointing at the same open file
    /// description (whose reference count grows). The descriptions stay with `self`.
    pub(crate) fn fork_table(&mut self) -> Files {
        for e in self.fds.iter().flatten() {
            if let Some(Some(f)) = self.files.get_mut(e.file) {
                f.refs += 1;
            }
        }
        Files {
            fds: self.fds.clone(),
            lock_pid: self.lock_pid,
            ..Files::default()
        }
    }

    /// Closes every fd (a process that ends).
    pub(crate) fn close_all(&mut self) {
        for fd in 0..self.fds.len() {
            if let Some(e) = self.fds[fd].take() {
                self.fd_closed(e.file);
            }
        }
        let pid = self.lock_pid;
        self.locks.process_ended(pid);
    }

    /// Closes the close-on-exec fds (a successful execve).
    pub(crate) fn close_on_exec(&mut self) {
        for fd in 0..self.fds.len() {
            if self.fds[fd].is_some_and(|e| e.cloexec) {
                if let Some(e) = self.fds[fd].take() {
                    self.fd_closed(e.file);
                }
            }
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
#[derive(Clone, Debug)]
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

pub(crate) fn fd_path(fd: RawFd) -> Option<Vec<u8>> {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|p| p.as_os_str().as_bytes().to_vec())
}

/// Largest single read/write, as Linux (0x7ffff000).
pub const MAX_RW: u64 = 0x7fff_f000;

pub(crate) fn cvt(r: libc::c_int) -> Result<u64, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as u64)
    }
}

pub(crate) fn cvt_size(r: isize) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

pub(crate) fn host_fstat(fd: RawFd) -> Result<libc::stat, Errno> {
    // SAFETY: st is plain data written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) < 0 {
            return Err(Errno::last());
        }
        Ok(st)
    }
}
