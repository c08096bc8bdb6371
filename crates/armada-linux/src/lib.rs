//! The Linux syscall layer, host side: one [`Process`] per lane.
//!
//! A lane that executes `SVC #0` stops with the PC past the SVC; the engine calls
//! [`Process::syscall`], which reads the number from x8 and the arguments from x0..x5, does the
//! work against the lane's [`AddressSpace`] and the host, and writes the result (or `-errno`)
//! to x0. [`service_batch`] does the same for many stopped lanes at once, in parallel.
//!
//! Everything the guest passes in is untrusted: pointers are checked through the address
//! space (a bad one is `EFAULT`), sizes are checked and capped, and nothing here panics on
//! guest input. Guest file access can be confined to a root directory (see `path`).
//! With `deterministic` set, time and random bytes come from a virtual clock driven by the
//! lane's retired instruction count and a seeded generator, so runs repeat exactly.
//!
//! Struct layouts are arm64's (asm-generic): `struct stat` is 128 bytes, `struct sigaction`
//! is handler/flags/restorer/mask, open flags differ from x86-64 in O_DIRECTORY, O_NOFOLLOW,
//! O_DIRECT and O_LARGEFILE (translated in `io::fd`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use rayon::prelude::*;

use armada_machine::memory::{AddressSpace, Perm};
use armada_machine::state::CpuState;

pub mod fs;
pub mod io;
pub mod ipc;
pub mod mm;
pub mod net;
pub mod proc;
pub mod sched;
pub mod signal;
mod strace;
pub mod syscalls;
pub mod time;

pub use fs::input::DeviceIo;
pub use syscalls::nr;

/// How a lane's guest sees the host.
#[derive(Clone, Debug, Default)]
pub struct LinuxConfig {
    /// Guest paths resolve inside this host directory: no `..`, absolute path or symlink
    /// escapes it. `None`: guest paths are host paths (as with qemu-user).
    pub root: Option<PathBuf>,
    /// qemu's `-L DIR`: absolute guest paths name DIR/path when that exists, the host's path
    /// otherwise (where a dynamically linked program finds its interpreter and libraries).
    /// Ignored when `root` is set: everything already resolves inside the root.
    pub sysroot: Option<PathBuf>,
    /// Print one line per syscall to the host's stderr.
    pub strace: bool,
    /// Virtual clock and seeded random bytes instead of the host's.
    pub deterministic: bool,
    /// Seed of the random bytes (AT_RANDOM, getrandom, /dev/urandom) in deterministic mode.
    pub seed: u64,
    /// The program file on the host (what `/proc/self/exe` opens).
    pub exe_host_path: PathBuf,
    /// The program's path as the guest sees it (what `/proc/self/exe` reads as).
    pub exe_guest_path: Vec<u8>,
    /// Most processes of the lane at once, zombies included (fork fails with EAGAIN past
    /// it); None: [`proc::table::DEFAULT_MAX_PROCESSES`].
    pub max_processes: Option<usize>,
    /// The run's own loopback network (default), or the host's (`--net host`).
    pub net: net::host::NetMode,
    /// Signals the first process starts with ignored (bit `sig - 1`), as a program that
    /// a parent ignoring them executes does: Linux keeps SIG_IGN across `execve`, so under
    /// `nohup` SIGHUP stays ignored. `armada run` passes the host's; batches start every
    /// lane with none, whatever the host.
    pub ignored_signals: u64,
    /// A guest's exec of a host-architecture program runs it natively (`--host-exec`,
    /// see `hostexec`); off: such an exec is ENOEXEC.
    pub host_exec: bool,
}

/// Where the guest's standard streams go.
#[derive(Clone, Debug)]
pub enum Stdio {
    /// The host's fds: 0, 1 and 2, and `extra` (those of [`io::fd::inherited_host_fds`]),
    /// each at its own number, as under qemu-user. armada never closes them on the host.
    Inherit { extra: Vec<i32> },
    /// stdin reads from this buffer; stdout and stderr are collected in memory
    /// ([`Process::take_output`]).
    Captured { stdin: Vec<u8> },
}

impl Stdio {
    /// The host's fds 0, 1 and 2 and no others.
    pub fn inherit() -> Stdio {
        Stdio::Inherit { extra: Vec::new() }
    }
}

/// What the lane does after a syscall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysOutcome {
    /// Resume the lane (x0 holds the result).
    Continue,
    /// exit/exit_group with this status (0..=255).
    Exit(i32),
    /// Killed by this signal.
    Killed(i32),
    /// The calling thread ended (exit) and other threads of the process go on.
    ThreadExit,
    /// The calling thread blocks: the scheduler runs others until it can go on
    /// ([`Process::take_block`] says what it waits for; x0 is not written yet).
    Block,
}

/// A Linux errno value (positive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    pub const EINTR: Errno = Errno(libc::EINTR);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const ECHILD: Errno = Errno(libc::ECHILD);
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EMFILE: Errno = Errno(libc::EMFILE);
    pub const ENOTTY: Errno = Errno(libc::ENOTTY);
    pub const EFBIG: Errno = Errno(libc::EFBIG);
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    pub const ESPIPE: Errno = Errno(libc::ESPIPE);
    pub const EPIPE: Errno = Errno(libc::EPIPE);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    pub const ELOOP: Errno = Errno(libc::ELOOP);
    pub const ETIMEDOUT: Errno = Errno(libc::ETIMEDOUT);
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    pub const EXDEV: Errno = Errno(libc::EXDEV);
    pub const ENOTSOCK: Errno = Errno(libc::ENOTSOCK);
    pub const ENOEXEC: Errno = Errno(libc::ENOEXEC);
    pub const E2BIG: Errno = Errno(libc::E2BIG);

    /// The errno of a host I/O error (EIO when it carries none).
    pub fn from_io(e: &std::io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// The errno the last failing libc call left.
    pub(crate) fn last() -> Errno {
        Errno::from_io(&std::io::Error::last_os_error())
    }

    /// The symbolic name, for traces.
    pub fn name(self) -> &'static str {
        errno_name(self.0)
    }
}

pub(crate) type SysResult = Result<u64, Errno>;

fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EDEADLK => "EDEADLK",
        libc::ENODATA => "ENODATA",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNRESET => "ECONNRESET",
        libc::EISCONN => "EISCONN",
        libc::ENOTCONN => "ENOTCONN",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EDESTADDRREQ => "EDESTADDRREQ",
        _ => "E?",
    }
}

// ----- guest memory helpers ---------------------------------------------------------------

/// Longest path accepted (PATH_MAX, including the NUL).
pub(crate) const PATH_MAX: usize = 4096;

pub(crate) fn rd(mem: &mut AddressSpace, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    mem.read_bytes(addr, buf).map_err(|_| Errno::EFAULT)
}

pub(crate) fn wr(mem: &mut AddressSpace, addr: u64, data: &[u8]) -> Result<(), Errno> {
    mem.write_bytes(addr, data).map_err(|_| Errno::EFAULT)
}

pub(crate) fn rd_u64(mem: &mut AddressSpace, addr: u64) -> Result<u64, Errno> {
    mem.read_u64(addr).map_err(|_| Errno::EFAULT)
}

pub(crate) fn rd_u32(mem: &mut AddressSpace, addr: u64) -> Result<u32, Errno> {
    mem.read_u32(addr).map_err(|_| Errno::EFAULT)
}

pub(crate) fn wr_u64(mem: &mut AddressSpace, addr: u64, v: u64) -> Result<(), Errno> {
    mem.write_u64(addr, v).map_err(|_| Errno::EFAULT)
}

pub(crate) fn wr_u32(mem: &mut AddressSpace, addr: u64, v: u32) -> Result<(), Errno> {
    mem.write_u32(addr, v).map_err(|_| Errno::EFAULT)
}

/// Reads a guest `struct timespec` and returns it in nanoseconds (EINVAL if invalid).
pub(crate) fn read_timespec_ns(mem: &mut AddressSpace, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    rd(mem, addr, &mut b)?;
    let sec = i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
    let nsec = i64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64))
}

/// A NUL-terminated guest string of at most PATH_MAX bytes.
pub(crate) fn cstr(mem: &mut AddressSpace, addr: u64) -> Result<Vec<u8>, Errno> {
    let s = mem.read_cstr(addr, PATH_MAX).map_err(|_| Errno::EFAULT)?;
    if s.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(s)
}

/// Whether [addr, addr+len) is mapped writable (checked before consuming host data).
pub(crate) fn check_writable(mem: &AddressSpace, addr: u64, len: u64) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    let mut cur = addr;
    while cur < end {
        match mem.area_at(cur) {
            Some((_, e, p)) if p.contains(Perm::W) => cur = e,
            _ => return Err(Errno::EFAULT),
        }
    }
    Ok(())
}

/// Whether [addr, addr+len) is mapped readable.
pub(crate) fn check_readable(mem: &AddressSpace, addr: u64, len: u64) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    let mut cur = addr;
    while cur < end {
        match mem.area_at(cur) {
            Some((_, e, p)) if p.contains(Perm::R) => cur = e,
            _ => return Err(Errno::EFAULT),
        }
    }
    Ok(())
}

// ----- notes printed once -----------------------------------------------------------------

static NOTES: Mutex<BTreeSet<(u8, u64)>> = Mutex::new(BTreeSet::new());

/// Prints `msg` to stderr the first time (kind, key) is seen in this host process.
pub fn note_once(kind: u8, key: u64, msg: impl FnOnce() -> String) {
    let first = match NOTES.lock() {
        Ok(mut s) => s.insert((kind, key)),
        Err(p) => p.into_inner().insert((kind, key)),
    };
    if first {
        eprintln!("armada: {}", msg());
    }
}

pub const NOTE_UNSUPPORTED: u8 = 0;
pub const NOTE_MISC: u8 = 2;

// ----- the process ------------------------------------------------------------------------

/// The Linux-side state of one guest process (one lane): open files, cwd, brk, signal
/// dispositions, clock and random generator.
#[derive(Clone)]
pub struct Process {
    pub cfg: LinuxConfig,
    /// Canonical host root when confined.
    pub(crate) root: Option<PathBuf>,
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    pub(crate) creds: proc::creds::Creds,
    pub(crate) files: io::fd::Files,
    pub(crate) cwd: io::fd::Cwd,
    pub(crate) umask: u32,
    pub(crate) brk_start: u64,
    pub(crate) brk_cur: u64,
    pub(crate) clock: time::clock::Clock,
    pub(crate) rng: time::clock::Rng,
    pub(crate) signals: signal::Signals,
    /// The thread being serviced, and the kernel-side state of the others.
    pub(crate) thread: proc::task::ThreadLinux,
    pub(crate) others: proc::task::Others,
    /// The lane's processes (held by the process being serviced: see `fork`).
    pub(crate) procs: proc::table::ProcTable,
    /// A process the last syscall made, and an exec it asked for, for the scheduler.
    pub(crate) forked: Option<proc::fork::NewProcess>,
    pub(crate) exec: Option<proc::exec::ExecRequest>,
    /// The signal the parent gets when this process ends (SIGCHLD, or clone's choice).
    pub(crate) exit_signal: i32,
    /// Set during a send with MSG_NOSIGNAL: EPIPE without SIGPIPE.
    pub(crate) no_sigpipe: bool,
    /// Set during a recv with MSG_PEEK: reads leave the bytes where they are.
    pub(crate) recv_peek: bool,
    /// Set during a sendmsg with SCM_CREDENTIALS: the credentials its bytes carry.
    pub(crate) send_creds: Option<io::fd::Ucred>,
    /// What the last syscall left for the scheduler.
    pub(crate) events: sched::Events,
    pub(crate) futexes: proc::futex::Futexes,
    /// Interval timers and POSIX timers (fired by the scheduler).
    pub(crate) timers: time::timers::Timers,
    /// The lane's System V IPC objects (held by the process being serviced).
    pub(crate) ipc: ipc::Ipc,
    /// Shared memory this process has attached, and its SEM_UNDO adjustments.
    pub(crate) shm_attach: Vec<ipc::shm::Attach>,
    pub(crate) sem_undo: ipc::sem::Undo,
    /// Set while a blocked syscall runs again: the deadline it had the first time.
    pub(crate) restart_deadline: Option<u64>,
    /// A blocked syscall is running again (for --strace: its block was shown already).
    pub(crate) restarting: bool,
    /// The syscall being serviced (for the wait a blocking one records).
    pub(crate) cur_nr: u64,
    pub(crate) cur_args: [u64; 6],
    pub(crate) rlimits: [(u64, u64); proc::sys::RLIM_NLIMITS],
    pub(crate) comm: [u8; 16],
    /// prctl's per-process settings (keep-caps, no-new-privs, timer slack, ...).
    pub(crate) prctl: proc::sys::Prctl,
    /// The host program this process's image became (`--host-exec`).
    pub(crate) host_child: Option<proc::hostexec::HostChildRef>,
    /// An exec made this process a host program just now (for the scheduler: `take_host_execed`).
    pub(crate) host_execed: bool,
    /// FIFOs a task is opening for reading, kept open while it waits for a writer
    /// (`open_fifo`): (tid, guest path, descriptor).
    pub(crate) fifo_opens: Vec<(i32, Vec<u8>, std::sync::Arc<std::os::fd::OwnedFd>)>,
    /// Retired instructions of the lane at the current syscall (for the virtual clock).
    pub(crate) retired: u64,
    /// Set by a handler that ends the process.
    pub(crate) outcome: Option<SysOutcome>,
    pub(crate) shared_maps: Vec<mm::mmap::SharedMap>,
    /// File mappings' pages past the end of their file, [start, end).
    pub(crate) past_eof: Vec<(u64, u64)>,
    /// File mappings, for /proc/self/maps.
    pub(crate) file_maps: Vec<mm::mmap::FileMap>,
    /// The `@@` file of a fuzz run (see `input`).
    pub(crate) input: Option<fs::input::InputFile>,
}

// Process moves between the rayon worker threads of `service_batch`.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Process>();
};

/// The process id the guest sees in deterministic mode.
pub const DETERMINISTIC_PID: i32 = 1000;

impl Process {
    /// A process whose heap (brk) starts at `brk_start` (page-aligned end of the image).
    pub fn new(cfg: LinuxConfig, stdio: Stdio, brk_start: u64) -> Self {
        let mut cfg = cfg;
        // /proc/self/exe must read as an absolute path (glibc asserts it does).
        if cfg.exe_host_path.is_relative() {
            if let Ok(abs) = std::path::absolute(&cfg.exe_host_path) {
                cfg.exe_host_path = abs;
            }
        }
        let root = cfg
            .root
            .as_ref()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()));
        // SAFETY: these libc calls take no arguments and cannot fail.
        let (host_pid, host_ppid) = unsafe { (libc::getpid(), libc::getppid()) };
        let (pid, ppid) = if cfg.deterministic {
            (DETERMINISTIC_PID, DETERMINISTIC_PID - 1)
        } else {
            (host_pid, host_ppid)
        };
        // the first process's group and session: armada's own under --deterministic, the
        // host's otherwise (a shell's job control compares them with the terminal's)
        let (pgid, sid) = if cfg.deterministic {
            (pid, pid)
        } else {
            // SAFETY: plain integer arguments.
            let (g, s) = unsafe { (libc::getpgid(0), libc::getsid(0)) };
            (if g < 0 { pid } else { g }, if s < 0 { pid } else { s })
        };
        let mut comm = [0u8; 16];
        let base = cfg
            .exe_guest_path
            .rsplit(|&c| c == b'/')
            .next()
            .unwrap_or(&[]);
        let n = base.len().min(15);
        comm[..n].copy_from_slice(&base[..n]);
        let rng = if cfg.deterministic {
            time::clock::Rng::seeded(cfg.seed)
        } else {
            time::clock::Rng::from_host()
        };
        let cwd = io::fd::Cwd::initial(root.is_some());
        Process {
            clock: time::clock::Clock::new(cfg.deterministic),
            files: io::fd::Files {
                lock_pid: pid,
                ..io::fd::Files::new(stdio)
            },
            cwd,
            root,
            pid,
            ppid,
            creds: proc::creds::Creds::host(),
            umask: 0o022,
            brk_start,
            brk_cur: brk_start,
            rng,
            signals: signal::Signals::ignoring(cfg.ignored_signals),
            thread: proc::task::ThreadLinux {
                tid: pid,
                ..Default::default()
            },
            others: proc::task::Others::new(),
            procs: {
                let mut t = proc::table::ProcTable::new(
                    pid,
                    ppid,
                    pgid,
                    sid,
                    cfg.max_processes
                        .unwrap_or(proc::table::DEFAULT_MAX_PROCESSES),
                );
                if !cfg.deterministic {
                    // the host's nice value, as the first process inherits it under qemu
                    // SAFETY: plain integer arguments.
                    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
                    if let Some(e) = t.procs.get_mut(&pid) {
                        e.nice = nice.clamp(-20, 19);
                    }
                }
                t
            },
            forked: None,
            exec: None,
            exit_signal: signal::SIGCHLD,
            no_sigpipe: false,
            send_creds: None,
            recv_peek: false,
            events: sched::Events::default(),
            futexes: proc::futex::Futexes::default(),
            timers: time::timers::Timers::default(),
            ipc: ipc::Ipc::default(),
            shm_attach: Vec::new(),
            sem_undo: ipc::sem::Undo::default(),
            restart_deadline: None,
            restarting: false,
            cur_nr: 0,
            cur_args: [0; 6],
            rlimits: proc::sys::default_rlimits(cfg.deterministic),
            comm,
            prctl: proc::sys::Prctl::default(),
            host_child: None,
            host_execed: false,
            fifo_opens: Vec::new(),
            retired: 0,
            outcome: None,
            shared_maps: Vec::new(),
            past_eof: Vec::new(),
            file_maps: Vec::new(),
            input: None,
            cfg,
        }
    }

    pub fn config(&self) -> &LinuxConfig {
        &self.cfg
    }

    /// The pid the guest sees.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The current program break.
    pub fn brk(&self) -> u64 {
        self.brk_cur
    }

    /// Syscalls serviced so far, by every process of the lane (the count is kept with the
    /// lane's process table, so ask the process being serviced).
    pub fn syscall_count(&self) -> u64 {
        self.procs.syscalls
    }

    /// Takes what the guest wrote to stdout and stderr (with `Stdio::Captured`).
    pub fn take_output(&mut self) -> (Vec<u8>, Vec<u8>) {
        (
            std::mem::take(&mut self.files.out),
            std::mem::take(&mut self.files.err),
        )
    }

    /// Random bytes from the process's generator (seeded in deterministic mode): AT_RANDOM.
    pub fn random_bytes(&mut self, buf: &mut [u8]) {
        self.rng.fill(buf);
    }

    /// Services the syscall the lane stopped at: number in x8, arguments in x0..x5, result
    /// (or -errno) into x0. A syscall that blocks returns [`SysOutcome::Block`] and leaves
    /// x0 alone; the scheduler runs it again ([`Process::restart`]) or resumes the task
    /// with the wait's result.
    pub fn syscall(&mut self, st: &mut CpuState, mem: &mut AddressSpace) -> SysOutcome {
        self.procs.syscalls += 1;
        self.restart_deadline = None;
        self.run_syscall(st, mem)
    }

    /// Runs the blocked syscall of the current task again (its registers are as they were
    /// at the SVC): `deadline` is the one it recorded when it blocked.
    pub fn restart(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        deadline: Option<u64>,
    ) -> SysOutcome {
        self.restart_deadline = deadline;
        self.restarting = true;
        let o = self.run_syscall(st, mem);
        self.restarting = false;
        self.restart_deadline = None;
        o
    }

    fn run_syscall(&mut self, st: &mut CpuState, mem: &mut AddressSpace) -> SysOutcome {
        self.events.block = None;
        let nr = st.x[8];
        let a = [st.x[0], st.x[1], st.x[2], st.x[3], st.x[4], st.x[5]];
        self.retired = st.retired;
        self.cur_nr = nr;
        self.cur_args = a;
        let trace = self.cfg.strace.then(|| strace::format_call(nr, &a, mem));
        let r = self.dispatch(nr, a, st, mem);
        let ret = match r {
            Ok(v) => v,
            Err(e) => (-(e.0 as i64)) as u64,
        };
        if self.events.block.is_some() && self.outcome.is_none() {
            if let Some(t) = &trace {
                if !self.restarting {
                    eprintln!("{} {t} = ? <blocks>", self.thread.tid);
                }
            }
            return SysOutcome::Block;
        }
        if let Some(outcome) = self.outcome.take() {
            if !matches!(outcome, SysOutcome::Continue | SysOutcome::ThreadExit) {
                self.flush_shared_mappings(mem);
            }
            if let Some(t) = &trace {
                eprintln!("{} {t} = ?", self.thread.tid);
                match outcome {
                    SysOutcome::Killed(sig) => {
                        eprintln!("{} +++ killed by {} +++", self.pid, signal::name(sig))
                    }
                    SysOutcome::Exit(code) => eprintln!("{} +++ exited with {code} +++", self.pid),
                    SysOutcome::ThreadExit => {
                        eprintln!("{} +++ thread exited +++", self.thread.tid)
                    }
                    SysOutcome::Continue | SysOutcome::Block => {}
                }
            }
            if outcome != SysOutcome::Continue {
                st.x[0] = ret;
                return outcome;
            }
        }
        st.x[0] = ret;
        if let Some(t) = trace {
            eprintln!("{} {t} = {}", self.thread.tid, strace::format_ret(nr, r));
        }
        self.deliver_signals(st, mem)
    }

    /// Runs the handler of a pending signal, if one is ready: sets up its frame so the
    /// task continues there. Called after a syscall and when a task is switched in.
    pub fn deliver_signals(&mut self, st: &mut CpuState, mem: &mut AddressSpace) -> SysOutcome {
        if self.pending_now() != 0 || self.signal_passing() {
            if let Some(o) = self.deliver_frame(st, mem) {
                self.flush_shared_mappings(mem);
                return o;
            }
        }
        SysOutcome::Continue
    }

    fn dispatch(
        &mut self,
        nr: u64,
        a: [u64; 6],
        st: &mut CpuState,
        mem: &mut AddressSpace,
    ) -> SysResult {
        use nr::*;
        if self.host_child.is_some() {
            // the process is a host program now: its one task only watches it
            return self.host_child_poll();
        }
        if matches!(
            nr,
            BIND | LISTEN
                | ACCEPT
                | ACCEPT4
                | CONNECT
                | GETSOCKNAME
                | GETPEERNAME
                | SETSOCKOPT
                | GETSOCKOPT
                | SHUTDOWN
                | SENDTO
                | RECVFROM
                | SENDMSG
                | RECVMSG
                | SENDMMSG
                | RECVMMSG
        ) {
            // `--net host`: the host's sockets
            if let Some(r) = self.host_socket_call(nr, a, mem) {
                return r;
            }
        }
        let Some(row) = syscalls::row(nr) else {
            self.unsupported(nr);
            return Err(Errno::ENOSYS);
        };
        match (row.support, row.handler) {
            (syscalls::Support::Refused(e, _), _) => Err(Errno(e)),
            (_, Some(handler)) => handler(self, &mut syscalls::Call { nr, a, st, mem }),
            (_, None) => {
                self.unsupported(nr);
                Err(Errno::ENOSYS)
            }
        }
    }

    pub(crate) fn unsupported(&self, nr: u64) {
        note_once(NOTE_UNSUPPORTED, nr, || {
            format!(
                "unsupported syscall {} ({nr}), returning ENOSYS",
                nr::name(nr).unwrap_or("unknown")
            )
        });
    }
}

/// A syscall as `--strace` shows it (`futex(0x4a1b20, FUTEX_WAIT_PRIVATE, 2, NULL)`).
pub fn format_syscall(nr: u64, args: &[u64; 6], mem: &mut AddressSpace) -> String {
    strace::format_call(nr, args, mem)
}

/// Services many stopped lanes in parallel (rayon). Each lane must have stopped at an SVC.
pub fn service_batch(
    lanes: &mut [(&mut Process, &mut CpuState, &mut AddressSpace)],
) -> Vec<SysOutcome> {
    lanes
        .par_iter_mut()
        .map(|(p, st, mem)| p.syscall(st, mem))
        .collect()
}

#[cfg(test)]
mod tests;
