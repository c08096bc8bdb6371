//! A guest's exec of a host-architecture program (`--host-exec`): the program runs
//! natively on the host, as qemu-user with binfmt_misc runs it, and stands in the lane
//! for the guest process that exec'd it.
//!
//! Why opt-in: a host program leaves the sandbox (it sees the host's whole file system and
//! network, whatever the guest's view) and is not deterministic, so `--root` and
//! `--deterministic` refuse the flag and batches never set it. Without it such an exec is
//! ENOEXEC, with a note that names the flag.
//!
//! The guest process keeps its pid, its parent and its fd table; its image is gone. Its one
//! task stays in a `Retry` wait that looks again every few milliseconds (`poll`): each
//! look moves bytes between the host program and the lane, and once the program has ended
//! the process ends with its status, which the guest parent's wait sees. Signals sent to
//! the process go to the host program.
//!
//! The host program's descriptors are the guest's that are not close-on-exec, at the same
//! numbers: a host file or terminal is passed as it is; /dev/null-like ones are opened on
//! the host; the lane's own pipes, sockets, captured output and captured stdin have no host
//! descriptor, so each gets a host pipe (a socketpair for a socket) whose other end armada
//! keeps and pumps to and from the lane's object. Other kinds (unconnected sockets, event
//! objects, /proc files) are not passed.

use std::collections::VecDeque;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::sync::{Arc, Mutex};

use crate::io::fd::{Kind, OUTPUT_CAP};
use crate::sched::WaitKind;
use crate::{Errno, Process, SysOutcome, SysResult};

/// The ELF machine of the host, whose programs `--host-exec` runs natively.
#[cfg(target_arch = "x86_64")]
pub(crate) const HOST_MACHINE: Option<u16> = Some(62);
#[cfg(not(target_arch = "x86_64"))]
pub(crate) const HOST_MACHINE: Option<u16> = None;

/// How often a host program's process looks at its program and pipes.
const POLL_NS: u64 = 2_000_000;
/// Most bytes one look moves through one bridge.
const STEP: usize = 1 << 16;

/// What the guest asked to run on the host.
#[derive(Debug)]
pub(crate) struct HostExecRequest {
    pub(crate) path: std::path::PathBuf,
    pub(crate) argv: Vec<Vec<u8>>,
    pub(crate) envp: Vec<Vec<u8>>,
}

/// Which way a bridge's bytes go, and the lane's side of it.
#[derive(Debug)]
enum Side {
    /// From the host program into armada pipe `id` (the guest's write end it holds).
    IntoPipe(usize),
    /// From armada pipe `id` (a read end) to the host program.
    FromPipe(usize),
    /// Both ways: a stream socket's receive and send pipes.
    Socket { rx: usize, tx: usize },
    /// Into captured stdout (false) or stderr (true).
    IntoOutput(bool),
    /// From the captured stdin's bytes, at this position.
    FromStdin(Vec<u8>, usize),
}

/// One lane object and the host descriptor armada keeps for it.
#[derive(Debug)]
struct Bridge {
    side: Side,
    host: Option<OwnedFd>,
    /// Bytes read from one side that the other did not take yet.
    pending: VecDeque<u8>,
}

/// A host program standing for a guest process.
#[derive(Debug)]
pub(crate) struct HostChild {
    child: std::process::Child,
    bridges: Vec<Bridge>,
}

impl Drop for HostChild {
    fn drop(&mut self) {
        // a lane that ends takes its host programs with it: nothing of a run outlives it
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Shared by the clones of a process (a lane's snapshots); only the lane that holds the
/// process services it.
pub(crate) type HostChildRef = Arc<Mutex<HostChild>>;

fn pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(Errno::last());
    }
    // SAFETY: both were just made and are ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn socketpair() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0; 2];
    let ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    // SAFETY: fds has room for two.
    if unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) } < 0 {
        return Err(Errno::last());
    }
    // SAFETY: both were just made and are ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

fn open_host(path: &str, write: bool) -> Result<OwnedFd, Errno> {
    let c = CString::new(path).map_err(|_| Errno::EINVAL)?;
    let fl = if write { libc::O_RDWR } else { libc::O_RDONLY } | libc::O_CLOEXEC;
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), fl) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: just opened.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Process {
    /// Runs `req` on the host in place of this process's image (see the module comment).
    pub(crate) fn host_exec(&mut self, req: HostExecRequest) -> Result<(), Errno> {
        // the host program's descriptors: (number, host fd to give it)
        let mut give: Vec<(i32, OwnedFd)> = Vec::new();
        let mut bridges = Vec::new();
        for fd in 0..self.files.fds.len() as i32 {
            let Some(Some(e)) = self.files.fds.get(fd as usize) else {
                continue;
            };
            if e.cloexec {
                continue;
            }
            let f = self.files.file(fd)?;
            let (theirs, bridge) = match &f.kind {
                Kind::Host { fd: h, .. } => {
                    // SAFETY: a dup of a descriptor the description holds.
                    let d = unsafe { libc::fcntl(h.raw(), libc::F_DUPFD_CLOEXEC, 3) };
                    if d < 0 {
                        return Err(Errno::last());
                    }
                    // SAFETY: just made.
                    (unsafe { OwnedFd::from_raw_fd(d) }, None)
                }
                Kind::Null => (open_host("/dev/null", true)?, None),
                Kind::Zero => (open_host("/dev/zero", true)?, None),
                Kind::Random => (open_host("/dev/urandom", false)?, None),
                Kind::Pipe { id, write: true } => {
                    let (r, w) = pipe()?;
                    (w, Some((Side::IntoPipe(*id), r)))
                }
                Kind::Pipe { id, write: false } => {
                    let (r, w) = pipe()?;
                    (r, Some((Side::FromPipe(*id), w)))
                }
                Kind::Socket { rx, tx, .. } => {
                    let (a, b) = socketpair()?;
                    (a, Some((Side::Socket { rx: *rx, tx: *tx }, b)))
                }
                Kind::Out(err) => {
                    let (r, w) = pipe()?;
                    (w, Some((Side::IntoOutput(*err), r)))
                }
                Kind::StdinBuf(data) => {
                    let (r, w) = pipe()?;
                    let at = (f.pos as usize).min(data.len());
                    (r, Some((Side::FromStdin(data.clone(), at), w)))
                }
                Kind::NetSock | Kind::Event(_) | Kind::Mem(_) => {
                    crate::note_once(crate::NOTE_MISC, 0x4000_0000 | fd as u64, || {
                        format!(
                            "--host-exec: fd {fd} (a socket not connected, an event object or \
                             a /proc file) has no host descriptor; the host program runs without it"
                        )
                    });
                    continue;
                }
            };
            give.push((fd, theirs));
            if let Some((side, ours)) = bridge {
                set_nonblocking(ours.as_raw_fd());
                bridges.push(Bridge {
                    side,
                    host: Some(ours),
                    pending: VecDeque::new(),
                });
            }
        }
        let mut cmd = std::process::Command::new(&req.path);
        if let Some(a0) = req.argv.first() {
            cmd.arg0(OsStr::from_bytes(a0));
        }
        cmd.args(req.argv.iter().skip(1).map(|a| OsStr::from_bytes(a)));
        cmd.env_clear();
        for e in &req.envp {
            let (k, v) = match e.iter().position(|&c| c == b'=') {
                Some(i) => (&e[..i], &e[i + 1..]),
                None => (&e[..], &[][..]),
            };
            if !k.is_empty() {
                cmd.env(OsStr::from_bytes(k), OsStr::from_bytes(v));
            }
        }
        cmd.current_dir(OsStr::from_bytes(&self.cwd.guest));
        let raw: Vec<(i32, RawFd)> = give.iter().map(|(n, f)| (*n, f.as_raw_fd())).collect();
        let top = raw.iter().map(|r| r.0).max().unwrap_or(2).max(2) + 1;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (fcntl, dup2, close) on descriptors it was given.
        unsafe {
            cmd.pre_exec(move || {
                // first out of the way of the numbers they go to, then into place
                let mut moved = Vec::with_capacity(raw.len());
                for &(n, f) in &raw {
                    let d = libc::fcntl(f, libc::F_DUPFD_CLOEXEC, top.max(64));
                    if d < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    moved.push((n, d));
                }
                for n in 0..3 {
                    if !moved.iter().any(|m| m.0 == n) {
                        libc::close(n);
                    }
                }
                for &(n, d) in &moved {
                    if libc::dup2(d, n) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| Errno::from_io(&e))?;
        drop(give);
        self.host_child = Some(Arc::new(Mutex::new(HostChild { child, bridges })));
        Ok(())
    }

    /// The process whose image is a host program: moves bytes, and either waits again or
    /// ends the process with the program's status.
    pub(crate) fn host_child_poll(&mut self) -> SysResult {
        let Some(h) = self.host_child.clone() else {
            return Err(Errno::ENOSYS);
        };
        let mut h = h.lock().unwrap_or_else(|p| p.into_inner());
        let ended = h.child.try_wait().map_err(|e| Errno::from_io(&e))?;
        let mut settled = true;
        for b in &mut h.bridges {
            settled &= self.pump(b);
        }
        // once the program has ended, what it wrote must reach the lane before the
        // process's end closes the lane's ends
        let Some(status) = ended.filter(|_| settled) else {
            let wake = self.monotonic_ns().saturating_add(POLL_NS);
            return Err(self.block_until(WaitKind::Retry, None, Some(wake)));
        };
        drop(h);
        self.host_child = None;
        self.outcome = Some(match status.signal() {
            Some(s) => SysOutcome::Killed(s),
            None => SysOutcome::Exit(status.code().unwrap_or(0) & 0xff),
        });
        Ok(0)
    }

    /// A signal for the process goes to its host program (true: it has one).
    pub(crate) fn host_child_signal(&mut self, sig: i32) -> bool {
        let Some(h) = &self.host_child else {
            return false;
        };
        let h = h.lock().unwrap_or_else(|p| p.into_inner());
        if sig != 0 {
            // SAFETY: kill of our own child process.
            unsafe { libc::kill(h.child.id() as i32, sig) };
        }
        true
    }

    /// Moves what can move through one bridge without waiting. True when nothing the
    /// host program wrote is left on the way into the lane (what it has written so far
    /// is in the lane, or there is nothing to read).
    fn pump(&mut self, b: &mut Bridge) -> bool {
        let Some(fd) = b.host.as_ref().map(|f| f.as_raw_fd()) else {
            return true;
        };
        let mut buf = vec![0u8; STEP];
        // the host program's writes into the lane: read while the lane takes them
        let into = match &b.side {
            Side::IntoPipe(id) | Side::Socket { tx: id, .. } => Some(Ok(*id)),
            Side::IntoOutput(err) => Some(Err(*err)),
            _ => None,
        };
        let mut settled = true;
        if let Some(to) = into {
            settled = false;
            loop {
                if b.pending.is_empty() {
                    // SAFETY: buf is STEP bytes.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), STEP) };
                    if n <= 0 {
                        // end of file, or nothing there now
                        settled = true;
                        break;
                    }
                    b.pending.extend(&buf[..n as usize]);
                }
                let took = match to {
                    Ok(id) => {
                        let (a, _) = b.pending.as_slices();
                        let a = a.to_vec();
                        match self.pipe_put(id, &a, true) {
                            Ok(n) => n,
                            Err(Errno::EAGAIN) => 0,
                            // no reader left: what the program wrote goes nowhere
                            Err(_) => b.pending.len(),
                        }
                    }
                    Err(err) => {
                        let out = if err {
                            &mut self.files.err
                        } else {
                            &mut self.files.out
                        };
                        let room = OUTPUT_CAP.saturating_sub(out.len());
                        let n = b.pending.len().min(room);
                        out.extend(b.pending.iter().take(n));
                        // past the cap the rest is dropped, as the guest's own writes are
                        b.pending.len()
                    }
                };
                b.pending.drain(..took.min(b.pending.len()));
                if took > 0 && to.is_ok() {
                    // a guest reader blocked on the pipe may go on
                    self.events.stirred = true;
                }
                if took == 0 {
                    // the lane's side is full: the rest waits for its reader
                    break;
                }
            }
        }
        // the lane's bytes to the host program
        match &mut b.side {
            Side::Socket { rx, .. } => {
                let rx = *rx;
                // (a socket's two ways share one descriptor: what the program does not
                // take now is read again next time)
                let Some(Some(p)) = self.files.pipes.get_mut(rx) else {
                    return settled;
                };
                if p.buf.is_empty() && p.writers == 0 {
                    // the peer is gone: the program reads end of file
                    // SAFETY: shutdown of our own socket's sending side.
                    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
                } else if !p.buf.is_empty() {
                    let (a, _) = p.buf.as_slices();
                    // SAFETY: a is valid for its length.
                    let w = unsafe { libc::write(fd, a.as_ptr().cast(), a.len()) };
                    if w > 0 {
                        p.buf.drain(..w as usize);
                        p.took(w as usize);
                        self.events.stirred = true;
                    }
                }
            }
            Side::FromPipe(id) => {
                let id = *id;
                if b.pending.is_empty() {
                    match self.pipe_take(id, &mut buf, true) {
                        Ok(0) => {
                            // end of file: the host program reads it too
                            b.host = None;
                            return true;
                        }
                        Ok(n) => {
                            b.pending.extend(&buf[..n]);
                            // a guest writer blocked on the full pipe may go on
                            self.events.stirred = true;
                        }
                        Err(_) => {}
                    }
                }
                write_pending(fd, &mut b.pending);
            }
            Side::FromStdin(data, at) => {
                if b.pending.is_empty() {
                    let n = (data.len() - *at).min(STEP);
                    if n == 0 {
                        b.host = None;
                        return true;
                    }
                    b.pending.extend(&data[*at..*at + n]);
                    *at += n;
                }
                write_pending(fd, &mut b.pending);
            }
            Side::IntoPipe(_) | Side::IntoOutput(_) => {}
        }
        settled
    }
}

/// Writes what the host descriptor takes of `pending`.
fn write_pending(fd: RawFd, pending: &mut VecDeque<u8>) {
    let (a, _) = pending.as_slices();
    // SAFETY: a is valid for its length.
    let n = unsafe { libc::write(fd, a.as_ptr().cast(), a.len()) };
    if n > 0 {
        pending.drain(..n as usize);
    }
}
