//! The processes of a lane, as the kernel's process table sees them: pids, parents,
//! process groups and sessions, zombies and their exit statuses, and the signals one
//! process sends another. Also the syscalls that read and change that table: getppid,
//! getpgid/setpgid, getsid/setsid, kill of another process, wait4 and waitid.
//!
//! The table is the lane's, shared by its processes; like the open file descriptions it
//! is held by the process the Linux layer is servicing and handed over by the scheduler
//! (`Process::hand_over`). Pids are virtual and deterministic: the first process has the
//! host's pid (1000 under `--deterministic`) and every new process or thread takes the
//! next number, so the same run gives the same pids. An orphan goes to its nearest living
//! ancestor that is a child subreaper (PR_SET_CHILD_SUBREAPER), else to init, which is not
//! part of the lane: it has pid 1 and reaps what it inherits, as Linux's init does.
//!
//! What needs another process's own state (its signal dispositions, its tasks) is left
//! to the scheduler in `runner`, which holds every process: a signal for another process
//! goes out through [`ProcTable::outbox`], and a process that ends is recorded here by
//! [`Process::end_process`] while its parent learns of it through SIGCHLD.

use std::collections::BTreeMap;

use crate::proc::creds::Creds;
use crate::sched::WaitKind;
use crate::signal::{self as sig, Outgoing, SIGCHLD};
use crate::{wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// The pid of init, which is not part of the lane: the parent of orphans (it reaps them).
pub const INIT: i32 = 1;

/// Default most processes of one lane alive at once (zombies included); fork past it fails
/// with EAGAIN, so a fork bomb ends cleanly. `--max-processes` changes it.
pub const DEFAULT_MAX_PROCESSES: usize = 1024;

/// How a process ended, as wait4 reports it: `(code << 8)` for an exit, the signal number
/// for a death by signal.
pub type WaitStatus = i32;

pub fn exited(code: i32) -> WaitStatus {
    (code & 0xff) << 8
}

pub fn killed(signal: i32) -> WaitStatus {
    signal & 0x7f
}

/// si_code values of SIGCHLD and waitid.
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;

/// One process of the lane.
#[derive(Clone, Debug)]
pub(crate) struct ProcEntry {
    pub(crate) ppid: i32,
    pub(crate) pgid: i32,
    pub(crate) sid: i32,
    /// Set when it ended and is not reaped yet (a zombie).
    pub(crate) zombie: Option<WaitStatus>,
    /// Stopped by SIGSTOP and the like (its tasks do not run).
    pub(crate) stopped: bool,
    /// A stop (the signal) or a continue (SIGCONT) its parent has not waited for yet
    /// (WUNTRACED, WCONTINUED).
    pub(crate) report: Option<Report>,
    /// Whether it has called execve since it was forked (setpgid by the parent fails then).
    pub(crate) execed: bool,
    /// PR_SET_CHILD_SUBREAPER: it inherits its descendants' orphans.
    pub(crate) subreaper: bool,
    /// PR_SET_PDEATHSIG: the signal it gets when its parent ends (0: none).
    pub(crate) pdeathsig: i32,
    /// Its command line (NUL-separated) and command name, for /proc/PID.
    pub(crate) cmdline: Vec<u8>,
    pub(crate) exe: Vec<u8>,
    /// Its nice value (-20..=19), inherited by its children.
    pub(crate) nice: i32,
    /// Its credentials and umask as of when it last gave the lane's state on (for other
    /// processes' /proc/PID/status and kill's permission check; a process reads its own
    /// from itself).
    pub(crate) creds: Option<Creds>,
    pub(crate) umask: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    Stopped(i32),
    Continued,
}

/// The lane's process table.
#[derive(Clone, Debug, Default)]
pub struct ProcTable {
    pub(crate) procs: BTreeMap<i32, ProcEntry>,
    pub(crate) next_pid: i32,
    pub(crate) max_processes: usize,
    /// The lane's first process: its end ends the run.
    pub(crate) first: i32,
    pub(crate) outbox: Vec<Outgoing>,
    /// Syscalls serviced, every process's.
    pub(crate) syscalls: u64,
    /// The run's host and domain names once a process set them (sethostname,
    /// setdomainname): the run's own, as a UTS namespace would keep them; the host's are
    /// never changed.
    pub(crate) hostname: Option<Vec<u8>>,
    pub(crate) domainname: Option<Vec<u8>>,
}

impl ProcTable {
    pub(crate) fn new(pid: i32, ppid: i32, pgid: i32, sid: i32, max_processes: usize) -> Self {
        let mut procs = BTreeMap::new();
        procs.insert(
            pid,
            ProcEntry {
                ppid,
                pgid,
                sid,
                zombie: None,
                stopped: false,
                report: None,
                execed: true,
                subreaper: false,
                pdeathsig: 0,
                cmdline: Vec::new(),
                exe: Vec::new(),
                nice: 0,
                creds: None,
                umask: 0o022,
            },
        );
        ProcTable {
            procs,
            next_pid: pid + 1,
            max_processes: max_processes.max(1),
            first: pid,
            outbox: Vec::new(),
            syscalls: 0,
            hostname: None,
            domainname: None,
        }
    }

    /// Takes the next free id for a process or a thread (they share one space, as on
    /// Linux); None when none is left.
    pub(crate) fn alloc_id(&mut self) -> Option<i32> {
        let id = self.next_pid;
        if id == i32::MAX {
            return None;
        }
        self.next_pid += 1;
        Some(id)
    }

    /// The pids of the live (not zombie) processes that `target` names for kill: a pid, 0
    /// (the sender's group), -1 (all but the sender), -PGID.
    fn kill_targets(&self, sender: i32, target: i32) -> Vec<i32> {
        let pgid_of = |p: i32| self.procs.get(&p).map(|e| e.pgid);
        let live = self.procs.iter().filter(|(_, e)| e.zombie.is_none());
        match target {
            t if t > 0 => self
                .procs
                .contains_key(&t)
                .then_some(t)
                .into_iter()
                .collect(),
            0 => {
                let g = pgid_of(sender);
                live.filter(|(_, e)| Some(e.pgid) == g)
                    .map(|(&p, _)| p)
                    .collect()
            }
            -1 => live
                .filter(|(&p, _)| p != sender)
                .map(|(&p, _)| p)
                .collect(),
            t => live
                .filter(|(_, e)| e.pgid == -t)
                .map(|(&p, _)| p)
                .collect(),
        }
    }

    /// Whether a wait4/waitid `which` (a pid, -1 for any, 0 for the caller's group, -PGID)
    /// matches `child`.
    fn matches(&self, caller: i32, which: Which, child: i32) -> bool {
        let Some(e) = self.procs.get(&child) else {
            return false;
        };
        match which {
            Which::Any => true,
            Which::Pid(p) => p == child,
            Which::Group(0) => Some(e.pgid) == self.procs.get(&caller).map(|c| c.pgid),
            Which::Group(g) => e.pgid == g,
        }
    }

    /// Who inherits the children of `pid` when it ends: its nearest living ancestor that
    /// is a child subreaper, else init.
    fn heir(&self, pid: i32) -> i32 {
        let mut at = self.procs.get(&pid).map_or(INIT, |e| e.ppid);
        let mut steps = 0;
        while let Some(e) = self.procs.get(&at) {
            if e.subreaper && e.zombie.is_none() {
                return at;
            }
            at = e.ppid;
            steps += 1;
            if steps > self.procs.len() {
                break;
            }
        }
        INIT
    }

    /// The children of `pid`, in the order they were made.
    pub(crate) fn children(&self, pid: i32) -> Vec<i32> {
        self.procs
            .iter()
            .filter(|(_, e)| e.ppid == pid)
            .map(|(&p, _)| p)
            .collect()
    }

    /// Live processes and zombies.
    pub fn count(&self) -> usize {
        self.procs.len()
    }
}

/// Which children a wait names.
#[derive(Clone, Copy, Debug)]
enum Which {
    Any,
    Pid(i32),
    Group(i32),
}

/// What a wait found.
struct Found {
    pid: i32,
    /// si_code (CLD_*) and si_status, and the wait4 status word.
    code: i32,
    status: i32,
    wstatus: i32,
}

const WNOHANG: i32 = 1;
const WUNTRACED: i32 = 2;
const WSTOPPED: i32 = 2;
const WEXITED: i32 = 4;
const WCONTINUED: i32 = 8;
const WNOWAIT: i32 = 0x0100_0000;
const WNOTHREAD: i32 = 0x2000_0000;
const WALL: i32 = 0x4000_0000;
const WCLONE: i32 = i32::MIN;

impl Process {
    pub(crate) fn sys_getppid(&self) -> SysResult {
        Ok(self
            .procs
            .procs
            .get(&self.pid)
            .map_or(self.ppid, |e| e.ppid) as u64)
    }

    pub(crate) fn sys_getpgid(&mut self, nr: u64, pid: i32) -> SysResult {
        let pid = if pid == 0 { self.pid } else { pid };
        let e = self.procs.procs.get(&pid).ok_or(Errno::ESRCH)?;
        Ok(if nr == crate::nr::GETSID {
            e.sid
        } else {
            e.pgid
        } as u64)
    }

    /// setpgid: a process may move itself or a child that has not exec'd yet, within its
    /// session, into a group of that session (or a new one named after the mover).
    pub(crate) fn sys_setpgid(&mut self, pid: i32, pgid: i32) -> SysResult {
        if pgid < 0 {
            return Err(Errno::EINVAL);
        }
        let me = self.pid;
        let pid = if pid == 0 { me } else { pid };
        let pgid = if pgid == 0 { pid } else { pgid };
        let t = &self.procs.procs;
        let target = t.get(&pid).ok_or(Errno::ESRCH)?;
        let my_sid = t.get(&me).map_or(0, |e| e.sid);
        if pid != me {
            if target.ppid != me {
                return Err(Errno::ESRCH);
            }
            if target.execed {
                return Err(Errno::EACCES);
            }
        }
        if target.sid != my_sid || target.sid == pid {
            // another session, or a session leader
            return Err(Errno::EPERM);
        }
        if pgid != pid && !t.values().any(|e| e.pgid == pgid && e.sid == my_sid) {
            return Err(Errno::EPERM);
        }
        if let Some(e) = self.procs.procs.get_mut(&pid) {
            e.pgid = pgid;
        }
        Ok(0)
    }

    pub(crate) fn sys_setsid(&mut self) -> SysResult {
        let me = self.pid;
        if self.procs.procs.values().any(|e| e.pgid == me) {
            return Err(Errno::EPERM);
        }
        if let Some(e) = self.procs.procs.get_mut(&me) {
            e.pgid = me;
            e.sid = me;
        }
        Ok(me as u64)
    }

    /// kill(pid, sig) for every pid form: the caller's own part is raised here, the rest
    /// goes to the scheduler. A zombie takes the signal and nothing happens (as Linux).
    pub(crate) fn sys_kill(&mut self, target: i32, signal: i32) -> SysResult {
        if !(0..=sig::NSIG).contains(&signal) {
            return Err(Errno::EINVAL);
        }
        if target == i32::MIN {
            return Err(Errno::ESRCH);
        }
        let me = self.pid;
        let found = self.procs.kill_targets(me, target);
        if found.is_empty() {
            return Err(Errno::ESRCH);
        }
        // only those this process may signal (EPERM when that leaves none)
        let pids: Vec<i32> = found
            .into_iter()
            .filter(|&p| self.may_signal(p, signal))
            .collect();
        if pids.is_empty() {
            return Err(Errno::EPERM);
        }
        if signal == 0 {
            return Ok(0);
        }
        let sender = (me as u32 as u64) | ((self.creds.uid.real as u64) << 32);
        let mut to_self = false;
        for pid in pids {
            if pid == me {
                to_self = true;
            } else if self
                .procs
                .procs
                .get(&pid)
                .is_some_and(|e| e.zombie.is_none())
            {
                self.procs.outbox.push(Outgoing {
                    pid,
                    tid: 0,
                    signal,
                    code: sig::SI_USER,
                    value: sender,
                    extra: 0,
                    child: None,
                });
            }
        }
        if to_self {
            self.signal_self(signal, sig::SI_USER)?;
        }
        Ok(0)
    }

    /// Linux's permission to signal process `pid` (kill_ok_by_cred): the sender's real or
    /// effective user is the target's real or saved one, or the sender has CAP_KILL; and
    /// SIGCONT within the session.
    fn may_signal(&self, pid: i32, signal: i32) -> bool {
        use crate::proc::creds::CAP_KILL;
        let Some(e) = self.procs.procs.get(&pid) else {
            return false;
        };
        let Some(t) = e.creds.as_ref().filter(|_| pid != self.pid) else {
            return true;
        };
        let me = &self.creds;
        let same_session = self
            .procs
            .procs
            .get(&self.pid)
            .is_some_and(|m| m.sid == e.sid);
        [me.uid.real, me.uid.eff]
            .iter()
            .any(|&u| u == t.uid.real || u == t.uid.saved)
            || me.capable(CAP_KILL)
            || (signal == sig::SIGCONT && same_session)
    }

    /// Looks for a child that `which` and `options` name with something to report.
    /// Ok(None): there are such children, none has news yet; ECHILD: there are none.
    fn find_child(&mut self, which: Which, options: i32) -> Result<Option<Found>, Errno> {
        let me = self.pid;
        let t = &self.procs;
        let kids: Vec<i32> = t
            .children(me)
            .into_iter()
            .filter(|&c| t.matches(me, which, c))
            .collect();
        if kids.is_empty() {
            return Err(Errno::ECHILD);
        }
        for c in kids {
            let Some(e) = t.procs.get(&c) else { continue };
            if let Some(ws) = e.zombie {
                if options & WEXITED == 0 {
                    continue;
                }
                let (code, status) = if ws & 0x7f == 0 {
                    (CLD_EXITED, (ws >> 8) & 0xff)
                } else {
                    (CLD_KILLED, ws & 0x7f)
                };
                if options & WNOWAIT == 0 {
                    self.procs.procs.remove(&c);
                }
                return Ok(Some(Found {
                    pid: c,
                    code,
                    status,
                    wstatus: ws,
                }));
            }
            let found = match e.report {
                Some(Report::Stopped(s)) if options & WSTOPPED != 0 => Found {
                    pid: c,
                    code: CLD_STOPPED,
                    status: s,
                    wstatus: (s << 8) | 0x7f,
                },
                Some(Report::Continued) if options & WCONTINUED != 0 => Found {
                    pid: c,
                    code: CLD_CONTINUED,
                    status: sig::SIGCONT,
                    wstatus: 0xffff,
                },
                _ => continue,
            };
            if options & WNOWAIT == 0 {
                if let Some(e) = self.procs.procs.get_mut(&c) {
                    e.report = None;
                }
            }
            return Ok(Some(found));
        }
        Ok(None)
    }

    /// wait4(pid, wstatus, options, rusage).
    pub(crate) fn sys_wait4(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        wstatus: u64,
        options: i32,
        rusage: u64,
    ) -> SysResult {
        if options & !(WNOHANG | WUNTRACED | WCONTINUED | WNOTHREAD | WALL | WCLONE) != 0 {
            return Err(Errno::EINVAL);
        }
        let which = match pid {
            -1 => Which::Any,
            p if p > 0 => Which::Pid(p),
            0 => Which::Group(0),
            i32::MIN => return Err(Errno::ESRCH),
            p => Which::Group(-p),
        };
        let mut opts = WEXITED | (options & WCONTINUED);
        if options & WUNTRACED != 0 {
            opts |= WSTOPPED;
        }
        // check the pointers before reaping anything
        if wstatus != 0 {
            crate::check_writable(mem, wstatus, 4)?;
        }
        if rusage != 0 {
            crate::check_writable(mem, rusage, RUSAGE_SIZE)?;
        }
        match self.find_child(which, opts)? {
            Some(f) => {
                if wstatus != 0 {
                    crate::wr_u32(mem, wstatus, f.wstatus as u32)?;
                }
                if rusage != 0 {
                    wr(mem, rusage, &[0u8; RUSAGE_SIZE as usize])?;
                }
                Ok(f.pid as u64)
            }
            None if options & WNOHANG != 0 => Ok(0),
            None => Err(self.block(WaitKind::Retry, None)),
        }
    }

    /// waitid(idtype, id, infop, options, rusage).
    pub(crate) fn sys_waitid(
        &mut self,
        mem: &mut AddressSpace,
        idtype: i32,
        id: i32,
        infop: u64,
        options: i32,
        rusage: u64,
    ) -> SysResult {
        const P_ALL: i32 = 0;
        const P_PID: i32 = 1;
        const P_PGID: i32 = 2;
        if options
            & !(WNOHANG | WSTOPPED | WEXITED | WCONTINUED | WNOWAIT | WNOTHREAD | WALL | WCLONE)
            != 0
            || options & (WEXITED | WSTOPPED | WCONTINUED) == 0
        {
            return Err(Errno::EINVAL);
        }
        let which = match idtype {
            P_ALL => Which::Any,
            P_PID if id > 0 => Which::Pid(id),
            P_PGID if id >= 0 => Which::Group(id),
            _ => return Err(Errno::EINVAL),
        };
        if infop != 0 {
            crate::check_writable(mem, infop, 128)?;
        }
        if rusage != 0 {
            crate::check_writable(mem, rusage, RUSAGE_SIZE)?;
        }
        let found = match self.find_child(which, options)? {
            Some(f) => f,
            None if options & WNOHANG != 0 => {
                // nothing to report: the siginfo is zeroed (si_pid 0 says so)
                if infop != 0 {
                    wr(mem, infop, &[0u8; 128])?;
                }
                return Ok(0);
            }
            None => return Err(self.block(WaitKind::Retry, None)),
        };
        if infop != 0 {
            let mut si = [0u8; 128];
            si[0..4].copy_from_slice(&SIGCHLD.to_le_bytes());
            si[8..12].copy_from_slice(&found.code.to_le_bytes());
            si[16..20].copy_from_slice(&found.pid.to_le_bytes());
            si[20..24].copy_from_slice(&self.creds.uid.real.to_le_bytes());
            si[24..28].copy_from_slice(&found.status.to_le_bytes());
            wr(mem, infop, &si)?;
        }
        if rusage != 0 {
            wr(mem, rusage, &[0u8; RUSAGE_SIZE as usize])?;
        }
        Ok(0)
    }

    /// Records the end of this process (the one being serviced): its fds close, it
    /// becomes a zombie with `status`, its children go to a subreaper or init, and its
    /// parent gets SIGCHLD (through the outbox). Called by the scheduler.
    pub fn end_process(&mut self, status: WaitStatus) {
        self.files.close_all();
        self.timers = Default::default();
        // (its shared pages were synced out by flush_shared_mappings)
        self.shm_detach_all();
        self.sem_exit();
        let me = self.pid;
        let first = self.procs.first;
        let orphans = self.procs.children(me);
        let heir = self.procs.heir(me);
        for c in &orphans {
            if let Some(e) = self.procs.procs.get_mut(c) {
                e.ppid = heir;
                if e.pdeathsig != 0 && e.zombie.is_none() {
                    // PR_SET_PDEATHSIG: the child hears that its parent ended
                    self.procs.outbox.push(Outgoing {
                        pid: *c,
                        tid: 0,
                        signal: e.pdeathsig,
                        code: sig::SI_USER,
                        value: (me as u32 as u64) | ((self.creds.uid.real as u64) << 32),
                        extra: 0,
                        child: None,
                    });
                }
            }
        }
        let ppid = match self.procs.procs.get_mut(&me) {
            Some(e) => {
                e.zombie = Some(status);
                e.stopped = false;
                e.report = None;
                e.ppid
            }
            None => return,
        };
        let (code, value) = if status & 0x7f == 0 {
            (CLD_EXITED, (status >> 8) & 0xff)
        } else {
            (CLD_KILLED, status & 0x7f)
        };
        if me != first && self.procs.procs.contains_key(&ppid) {
            self.procs.outbox.push(Outgoing {
                pid: ppid,
                tid: 0,
                // 0: clone asked for no signal (the parent still waits for it)
                signal: self.exit_signal,
                code,
                value: (me as u32 as u64) | ((self.creds.uid.real as u64) << 32),
                extra: value as u64,
                child: Some(me),
            });
        }
        for c in orphans {
            if self.procs.procs.get(&c).is_some_and(|e| e.zombie.is_some()) {
                if heir == INIT {
                    // init reaps what it inherits
                    self.procs.procs.remove(&c);
                } else {
                    // a subreaper hears of the zombie it inherited
                    self.procs.outbox.push(Outgoing {
                        pid: heir,
                        tid: 0,
                        signal: SIGCHLD,
                        code: CLD_EXITED,
                        value: c as u32 as u64,
                        extra: 0,
                        child: Some(c),
                    });
                }
            }
        }
        if ppid == INIT {
            // init reaps it at once
            self.procs.procs.remove(&me);
        }
    }

    pub(crate) fn set_subreaper(&mut self, on: bool) {
        let me = self.pid;
        if let Some(e) = self.procs.procs.get_mut(&me) {
            e.subreaper = on;
        }
    }

    pub(crate) fn set_pdeathsig(&mut self, signal: i32) {
        let me = self.pid;
        if let Some(e) = self.procs.procs.get_mut(&me) {
            e.pdeathsig = signal;
        }
    }

    pub(crate) fn pdeathsig(&self) -> i32 {
        self.procs.procs.get(&self.pid).map_or(0, |e| e.pdeathsig)
    }

    pub(crate) fn is_subreaper(&self) -> bool {
        self.procs.procs.get(&self.pid).is_some_and(|e| e.subreaper)
    }

    /// Queues a signal for another process (the scheduler's own, e.g. SIGCHLD of a stop).
    pub fn queue_outgoing(&mut self, o: Outgoing) {
        self.procs.outbox.push(o);
    }

    /// Whether SIGCHLD is ignored (SIG_IGN).
    pub fn ignores_sigchld(&self) -> bool {
        self.signals.sigchld_ignored()
    }

    /// Signals for other processes that the last syscall (or [`Process::end_process`]) left.
    pub fn take_outgoing(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.procs.outbox)
    }

    /// Removes a zombie child that nobody will wait for (its parent ignores SIGCHLD).
    pub fn reap(&mut self, pid: i32) {
        if self
            .procs
            .procs
            .get(&pid)
            .is_some_and(|e| e.zombie.is_some())
        {
            self.procs.procs.remove(&pid);
        }
    }

    /// Whether this process's children are reaped as they end: SIGCHLD ignored or
    /// SA_NOCLDWAIT (then wait finds no zombie and fails with ECHILD).
    pub fn reaps_children(&self) -> bool {
        self.signals.ignores_children()
    }

    /// Marks process `pid` stopped or continued (its tasks do not run while stopped), and
    /// keeps what its parent's wait with WUNTRACED/WCONTINUED will report. Returns the
    /// parent to tell (SIGCHLD), if the state changed.
    pub fn set_stopped(&mut self, pid: i32, stop: Option<i32>) -> Option<i32> {
        let e = self.procs.procs.get_mut(&pid)?;
        if e.zombie.is_some() || e.stopped == stop.is_some() {
            return None;
        }
        e.stopped = stop.is_some();
        e.report = Some(match stop {
            Some(s) => Report::Stopped(s),
            None => Report::Continued,
        });
        Some(e.ppid)
    }

    /// Whether process `pid` is stopped.
    pub fn is_stopped(&self, pid: i32) -> bool {
        self.procs.procs.get(&pid).is_some_and(|e| e.stopped)
    }

    /// The lane's first process.
    pub fn first_pid(&self) -> i32 {
        self.procs.first
    }

    /// The parent of `pid`.
    pub fn parent_of(&self, pid: i32) -> Option<i32> {
        self.procs.procs.get(&pid).map(|e| e.ppid)
    }

    /// Whether other tasks of the lane may run while this one waits (then a wait on a host
    /// fd must not hold the host thread).
    pub(crate) fn others_may_run(&self) -> bool {
        self.thread_count() > 1 || self.procs.count() > 1
    }

    /// Records the command line and program path /proc/PID shows for this process.
    pub fn set_cmdline(&mut self, argv: &[Vec<u8>], exe: &[u8]) {
        let pid = self.pid;
        if let Some(e) = self.procs.procs.get_mut(&pid) {
            e.cmdline = argv
                .iter()
                .flat_map(|a| a.iter().copied().chain([0]))
                .collect();
            e.exe = exe.to_vec();
        }
    }

    /// Caps the lane's processes (fork fails with EAGAIN past it).
    pub fn set_max_processes(&mut self, n: usize) {
        self.procs.max_processes = n.max(1);
    }
}

/// struct rusage on arm64: two timevals and 14 longs.
const RUSAGE_SIZE: u64 = 144;
