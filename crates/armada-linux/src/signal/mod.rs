//! Signals: dispositions (the process's), masks, pending sets and alternate stacks (each
//! thread's), kill and tgkill, and frames for handlers.
//!
//! Signals a process sends itself (kill, tgkill, raise, abort, SIGPIPE) and synchronous
//! signals from faults ([`Process::deliver_fault`]) are delivered as Linux/arm64 does: a
//! blocked signal stays pending until the mask lets it through; SIG_IGN drops it; SIG_DFL
//! takes the default action (usually ending the process); a handler runs on an arm64
//! `rt_sigframe` (siginfo, ucontext with the registers and an FPSIMD record) built on the
//! stack or the alternate stack, and returns through `rt_sigreturn`. Since the guest has
//! no vDSO, handlers installed without SA_RESTORER (glibc on arm64) return through a
//! two-instruction trampoline armada maps at [`SIGTRAMP_ADDR`]. One handler frame is set
//! up per return to the guest, lowest signal number first. Asynchronous signals from
//! outside (timers, other processes) do not exist here.

use crate::{rd, rd_u32, rd_u64, wr, wr_u64, Errno, Process, SysOutcome, SysResult};
use armada_machine::memory::{AddressSpace, PageBuf, Perm, PAGE_SIZE};
use armada_machine::state::CpuState;
use std::sync::{Arc, OnceLock};

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGQUIT: i32 = 3;
pub const SIGILL: i32 = 4;
pub const SIGTRAP: i32 = 5;
pub const SIGABRT: i32 = 6;
pub const SIGBUS: i32 = 7;
pub const SIGFPE: i32 = 8;
pub const SIGKILL: i32 = 9;
pub const SIGUSR1: i32 = 10;
pub const SIGSEGV: i32 = 11;
pub const SIGUSR2: i32 = 12;
pub const SIGPIPE: i32 = 13;
pub const SIGALRM: i32 = 14;
pub const SIGTERM: i32 = 15;
pub const SIGCHLD: i32 = 17;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;
pub const SIGTSTP: i32 = 20;
pub const SIGTTIN: i32 = 21;
pub const SIGTTOU: i32 = 22;
pub const SIGURG: i32 = 23;
pub const SIGWINCH: i32 = 28;
pub const NSIG: i32 = 64;

const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;

/// Signal name for messages ("SIGSEGV"; "SIGRT5" for real-time signals).
pub fn name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match sig {
        0..=31 => NAMES[sig as usize].to_string(),
        32..=64 => format!("SIGRT{}", sig - 32),
        _ => format!("signal {sig}"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Default_ {
    Terminate,
    Ignore,
    Stop,
}

fn default_action(sig: i32) -> Default_ {
    match sig {
        SIGCHLD | SIGURG | SIGWINCH | SIGCONT => Default_::Ignore,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Default_::Stop,
        _ => Default_::Terminate,
    }
}

fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// Marks `sig` pending in a set; a signal already pending keeps its first info (standard
/// signals do not queue).
fn add_pending(pending: &mut u64, info: &mut PendingInfo, sig: i32, si: SigInfo) {
    if *pending & bit(sig) == 0 {
        info.set(sig, si);
    }
    *pending |= bit(sig);
}

/// The infos of the pending signals, one per signal at most (a signal's bit may be cleared
/// without its info taken: the next `set` replaces it). A list, not a table of every signal:
/// those took 1.5 KiB in each process and each thread, a seventh of a lane that a GPU batch
/// restores tens of thousands of times from a snapshot.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingInfo(Vec<(i32, SigInfo)>);

impl PendingInfo {
    fn set(&mut self, sig: i32, si: SigInfo) {
        match self.0.iter_mut().find(|e| e.0 == sig) {
            Some(e) => e.1 = si,
            None => self.0.push((sig, si)),
        }
    }

    /// The info of `sig`, taken out (a default one where none was set).
    fn take(&mut self, sig: i32) -> SigInfo {
        match self.0.iter().position(|e| e.0 == sig) {
            Some(i) => self.0.swap_remove(i).1,
            None => SigInfo::default(),
        }
    }
}

const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SigAction {
    handler: u64,
    flags: u64,
    restorer: u64,
    mask: u64,
}

impl SigAction {
    fn has_handler(&self) -> bool {
        self.handler != SIG_DFL && self.handler != SIG_IGN
    }
}

/// What the handler's siginfo says about a signal.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SigInfo {
    code: i32,
    /// si_addr for faults; for kill/tgkill the sender's pid (low 32 bits) and uid (high).
    value: u64,
    /// The word after: si_status for SIGCHLD.
    extra: u64,
}

impl SigInfo {
    fn new(code: i32, value: u64) -> SigInfo {
        SigInfo {
            code,
            value,
            extra: 0,
        }
    }

    /// As a `struct signalfd_siginfo`: the same facts at fixed places.
    fn signalfd_info(&self, sig: i32) -> [u8; 128] {
        let mut b = [0u8; 128];
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let (lo, hi) = (self.value as u32, (self.value >> 32) as u32);
        put(&mut b, 0, sig as u32);
        put(&mut b, 8, self.code as u32);
        let fault = matches!(sig, SIGSEGV | SIGBUS | SIGILL | SIGFPE | SIGTRAP);
        match self.code {
            SI_TIMER => {
                put(&mut b, 24, lo); // ssi_tid: the timer's id
                put(&mut b, 32, hi); // ssi_overrun
                put(&mut b, 44, self.extra as u32); // ssi_int
                b[48..56].copy_from_slice(&self.extra.to_le_bytes()); // ssi_ptr
            }
            c if c > 0 && fault => b[72..80].copy_from_slice(&self.value.to_le_bytes()),
            c if c > 0 && sig == SIGCHLD => {
                put(&mut b, 12, lo);
                put(&mut b, 16, hi);
                put(&mut b, 40, self.extra as u32); // ssi_status
            }
            _ => {
                put(&mut b, 12, lo); // ssi_pid
                put(&mut b, 16, hi); // ssi_uid
            }
        }
        b
    }

    /// As a guest `siginfo_t`: si_signo, si_errno, si_code, then the union (the sender's
    /// pid and uid; a child's pid, uid and status; a timer's id, overrun and value; a
    /// fault's address).
    pub(crate) fn siginfo(&self, sig: i32) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&sig.to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        b[16..24].copy_from_slice(&self.value.to_le_bytes());
        b[24..32].copy_from_slice(&self.extra.to_le_bytes());
        b
    }
}

/// A signal from one process to another, for the scheduler to deliver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub pid: i32,
    /// One thread of it (a timer's SIGEV_THREAD_ID), or 0: the process.
    pub tid: i32,
    pub signal: i32,
    /// si_code and the sender's pid (low 32 bits) and uid (high), as the receiver's
    /// siginfo gives them.
    pub code: i32,
    pub value: u64,
    /// si_status (SIGCHLD).
    pub extra: u64,
    /// For SIGCHLD: the child it is about (reaped at once if the parent ignores SIGCHLD).
    pub child: Option<i32>,
}

/// si_code values.
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TKILL: i32 = -6;
/// A POSIX timer's signal (see `time::timers`).
pub const SI_TIMER: i32 = -2;
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const BUS_ADRALN: i32 = 1;
pub const BUS_ADRERR: i32 = 2;
pub const ILL_ILLOPC: i32 = 1;
pub const TRAP_BRKPT: i32 = 1;

const SA_ONSTACK: u64 = 0x0800_0000;
const SA_RESTORER: u64 = 0x0400_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
const SS_ONSTACK: i32 = 1;
const SS_DISABLE: i32 = 2;

/// Where armada puts its signal-return trampoline (`mov x8, #139; svc #0`): the guest has
/// no vDSO, and glibc on arm64 returns from handlers through the vDSO's sigreturn.
pub const SIGTRAMP_ADDR: u64 = crate::mm::mmap::STACK_TOP - crate::mm::mmap::STACK_SIZE - 0x1_0000;
const SIGTRAMP_CODE: [u32; 2] = [0xd280_1168, 0xd400_0001];

/// The trampoline's page: one buffer that every address space maps, held for the process's
/// life (`PageBuf::held_by_cache`), as a loaded image's pages are. So it is not a page of the
/// lane's own (nor counted against its memory cap), and the GPU engines decode it once for all
/// lanes and give it one frame: written into each lane's own page, every return from a signal
/// handler left the GPU to run these two instructions on the host (a forking dash script's
/// SIGCHLD, nine a run).
fn trampoline_page() -> Arc<PageBuf> {
    static PAGE: OnceLock<Arc<PageBuf>> = OnceLock::new();
    PAGE.get_or_init(|| {
        let mut page = [0u8; PAGE_SIZE as usize];
        page[..4].copy_from_slice(&SIGTRAMP_CODE[0].to_le_bytes());
        page[4..8].copy_from_slice(&SIGTRAMP_CODE[1].to_le_bytes());
        Arc::new(PageBuf::from_bytes(&page).held_by_cache())
    })
    .clone()
}

// arm64 signal frame layout (arch/arm64/include/uapi/asm/{sigcontext,ucontext}.h)
const SIGINFO_SIZE: u64 = 128;
const UC_STACK: u64 = 16;
const UC_SIGMASK: u64 = 40;
const UC_MCONTEXT: u64 = 176;
const UCONTEXT_SIZE: u64 = 4560;
const MC_REGS: u64 = 8;
const MC_SP: u64 = 256;
const MC_PC: u64 = 264;
const MC_PSTATE: u64 = 272;
const MC_RESERVED: u64 = 288;
const RESERVED_SIZE: u64 = 4096;
const FPSIMD_MAGIC: u32 = 0x4650_8001;
const FPSIMD_SIZE: u32 = 528;
const ESR_MAGIC: u32 = 0x4553_5201;
const FRAME_SIZE: u64 = SIGINFO_SIZE + UCONTEXT_SIZE;

/// The process's side of signals, shared by its threads: dispositions, and the signals
/// pending for the process as a whole (sent while every thread blocked them).
#[derive(Clone, Debug)]
pub(crate) struct Signals {
    actions: [SigAction; NSIG as usize + 1],
    shared: u64,
    shared_info: PendingInfo,
    /// A debugger's hold on the signals going to a handler (see
    /// [`Process::stop_signals_for_debugger`]).
    debug: Option<Box<DebugSignals>>,
}

/// The signals a debugger stops: those of process `pid` only (a fork's copy of this state
/// belongs to another pid, and does not stop).
#[derive(Clone, Debug)]
struct DebugSignals {
    pid: i32,
    /// A signal taken from the pending set for its handler, held for the debugger.
    caught: Option<(i32, SigInfo)>,
    /// The held signal the debugger let through: its handler runs next.
    passing: Option<(i32, SigInfo)>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            actions: [SigAction::default(); NSIG as usize + 1],
            shared: 0,
            shared_info: PendingInfo::default(),
            debug: None,
        }
    }
}

impl Signals {
    /// /proc/PID/status's masks: the process's pending signals, those ignored and those
    /// caught (bit `sig - 1`).
    pub(crate) fn status_masks(&self) -> (u64, u64, u64) {
        let (mut ign, mut cgt) = (0u64, 0u64);
        for sig in 1..=NSIG {
            let a = &self.actions[sig as usize];
            if a.handler == SIG_IGN {
                ign |= 1 << (sig - 1);
            } else if a.handler != SIG_DFL {
                cgt |= 1 << (sig - 1);
            }
        }
        (self.shared, ign, cgt)
    }

    /// Default dispositions but SIG_IGN for the signals in `mask` (bit `sig - 1`; SIGKILL
    /// and SIGSTOP cannot be ignored): a process executed by a parent that ignored them.
    pub(crate) fn ignoring(mask: u64) -> Signals {
        let mut s = Signals::default();
        for sig in 1..=NSIG {
            if mask & (1 << (sig - 1)) != 0 && sig != SIGKILL && sig != SIGSTOP {
                s.actions[sig as usize].handler = SIG_IGN;
            }
        }
        s
    }
}

/// One thread's side of signals: its mask, the signals pending for it and its alternate
/// stack.
#[derive(Clone, Debug)]
pub(crate) struct ThreadSignals {
    pub(crate) mask: u64,
    pub(crate) pending: u64,
    info: PendingInfo,
    altstack: (u64, i32, u64),
    /// rt_sigsuspend: the mask to save in the frame (restored by sigreturn).
    suspend_mask: Option<u64>,
}

impl Default for ThreadSignals {
    fn default() -> Self {
        ThreadSignals {
            mask: 0,
            pending: 0,
            info: PendingInfo::default(),
            altstack: (0, SS_DISABLE, 0),
            suspend_mask: None,
        }
    }
}

impl ThreadSignals {
    /// A new thread's: the creator's mask, nothing pending, no alternate stack (clone).
    pub(crate) fn for_new_thread(&self) -> ThreadSignals {
        ThreadSignals {
            mask: self.mask,
            ..ThreadSignals::default()
        }
    }
}

impl Process {
    /// A signal arrives for the process (kill/tgkill to self, SIGPIPE). It stays pending
    /// while blocked; a handler runs when the syscall returns; otherwise the default action
    /// (or SIG_IGN) applies now. Sets `self.outcome` when the signal ends the process.
    pub(crate) fn raise(&mut self, sig: i32) {
        self.raise_info(sig, SigInfo::new(SI_KERNEL, 0));
    }

    /// A signal for the process: like Linux's complete_signal, the current thread takes it
    /// unless it blocks it and another thread does not; blocked by every thread, it stays
    /// pending for the process (the first thread to unblock it or sigwait for it takes it).
    fn raise_info(&mut self, sig: i32, si: SigInfo) {
        if !(1..=NSIG).contains(&sig) {
            return;
        }
        let unstoppable = sig == SIGKILL || sig == SIGSTOP;
        if self.thread.sig.mask & bit(sig) != 0 && !unstoppable {
            if let Some(tid) = self
                .others
                .iter()
                .find(|(_, t)| t.sig.mask & bit(sig) == 0)
                .map(|(&tid, _)| tid)
            {
                self.raise_thread(tid, sig, si);
                return;
            }
            add_pending(
                &mut self.signals.shared,
                &mut self.signals.shared_info,
                sig,
                si,
            );
            return;
        }
        self.raise_current(sig, si);
    }

    /// The signals pending for the current thread: its own and the process's.
    pub(crate) fn pending_now(&self) -> u64 {
        self.thread.sig.pending | self.signals.shared
    }

    /// Takes pending signal `sig` (the thread's own first, else the process's) and its info.
    fn take_pending(&mut self, sig: i32) -> SigInfo {
        let mut si = if self.thread.sig.pending & bit(sig) != 0 {
            self.thread.sig.pending &= !bit(sig);
            self.thread.sig.info.take(sig)
        } else {
            self.signals.shared &= !bit(sig);
            self.signals.shared_info.take(sig)
        };
        self.timer_signal_taken(si.code, &mut si.value);
        si
    }

    /// read(2) of a signalfd whose mask is `mask`: one `struct signalfd_siginfo` per
    /// pending signal of the mask (taken, lowest first), as many as fit.
    pub(crate) fn signalfd_read(
        &mut self,
        mask: u64,
        buf: &mut [u8],
        nonblock: bool,
    ) -> Result<usize, Errno> {
        const SIZE: usize = 128;
        if buf.len() < SIZE {
            return Err(Errno::EINVAL);
        }
        let mut n = 0;
        while n + SIZE <= buf.len() {
            let hit = self.pending_now() & mask;
            if hit == 0 {
                break;
            }
            let sig = hit.trailing_zeros() as i32 + 1;
            let si = self.take_pending(sig);
            buf[n..n + SIZE].copy_from_slice(&si.signalfd_info(sig));
            n += SIZE;
        }
        match n {
            0 if nonblock => Err(Errno::EAGAIN),
            0 => Err(crate::sched::WOULD_BLOCK),
            n => Ok(n),
        }
    }

    /// The signals pending for the process or any of its threads (bit n-1: signal n).
    pub(crate) fn pending_anywhere(&self) -> u64 {
        self.others
            .values()
            .fold(self.thread.sig.pending | self.signals.shared, |acc, t| {
                acc | t.sig.pending
            })
    }

    fn raise_current(&mut self, sig: i32, si: SigInfo) {
        add_pending(
            &mut self.thread.sig.pending,
            &mut self.thread.sig.info,
            sig,
            si,
        );
        self.deliver_pending();
    }

    /// A signal for thread `tid`, which is not running now. A handler runs when the
    /// scheduler next switches to it (interrupting its wait); a default action that ends
    /// the process ends it now, from whichever thread.
    fn raise_thread(&mut self, tid: i32, sig: i32, si: SigInfo) {
        if tid == self.thread.tid {
            return self.raise_current(sig, si);
        }
        let act = self.signals.actions[sig as usize];
        let Some(t) = self.others.get_mut(&tid) else {
            return;
        };
        let unstoppable = sig == SIGKILL || sig == SIGSTOP;
        let blocked = !unstoppable && t.sig.mask & bit(sig) != 0;
        if !blocked && !act.has_handler() || unstoppable {
            if act.handler == SIG_IGN && !unstoppable {
                return;
            }
            match default_action(sig) {
                Default_::Terminate => self.outcome = Some(SysOutcome::Killed(sig)),
                Default_::Ignore => {}
                Default_::Stop => self.events.stop = Some(sig),
            }
            return;
        }
        add_pending(&mut t.sig.pending, &mut t.sig.info, sig, si);
    }

    /// Acts on pending, unblocked signals whose action is not a handler (handlers run when
    /// the syscall returns to the guest, through `deliver_frame`).
    fn deliver_pending(&mut self) {
        while self.outcome.is_none() {
            let ready = self.pending_now() & !(self.thread.sig.mask & !UNBLOCKABLE);
            let Some(sig) = (0..64)
                .filter(|b| ready & (1 << b) != 0)
                .map(|b| b + 1)
                .find(|&s| {
                    !self.signals.actions[s as usize].has_handler() || s == SIGKILL || s == SIGSTOP
                })
            else {
                break;
            };
            self.take_pending(sig);
            let act = self.signals.actions[sig as usize];
            let unstoppable = sig == SIGKILL || sig == SIGSTOP;
            if !unstoppable && act.handler == SIG_IGN {
                continue;
            }
            match default_action(sig) {
                Default_::Terminate => self.outcome = Some(SysOutcome::Killed(sig)),
                Default_::Ignore => {}
                Default_::Stop => self.events.stop = Some(sig),
            }
        }
    }

    /// Whether a handler is waiting to run.
    pub(crate) fn handler_ready(&self) -> bool {
        self.handler_ready_in(&self.thread.sig)
    }

    /// Whether a handler is waiting to run for a thread with this signal state.
    pub(crate) fn handler_ready_in(&self, t: &ThreadSignals) -> bool {
        let ready = (t.pending | self.signals.shared) & !t.mask;
        ready != 0
            && (1..=NSIG)
                .any(|s| ready & bit(s) != 0 && self.signals.actions[s as usize].has_handler())
    }

    /// Sets up the frame of the lowest pending, unblocked signal that has a handler, so
    /// that the guest continues in the handler. One signal per return to the guest (the
    /// next one is delivered when the handler's sigreturn or next syscall returns).
    pub(crate) fn deliver_frame(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
    ) -> Option<SysOutcome> {
        let passing = self.signals.debug.as_mut().and_then(|d| d.passing.take());
        let (sig, info) = match passing {
            Some(p) => p,
            None => {
                let ready = self.pending_now() & !self.thread.sig.mask;
                let sig = (1..=NSIG).find(|&s| {
                    ready & bit(s) != 0 && self.signals.actions[s as usize].has_handler()
                })?;
                let pid = self.pid;
                let held = self.signals.debug.as_ref().filter(|d| d.pid == pid);
                if let Some(free) = held.map(|d| d.caught.is_none()) {
                    // held for the debugger (one at a time), as ptrace stops a tracee
                    if free {
                        let info = self.take_pending(sig);
                        if let Some(d) = self.signals.debug.as_mut() {
                            d.caught = Some((sig, info));
                        }
                    }
                    return None;
                }
                (sig, self.take_pending(sig))
            }
        };
        if self.cfg.strace {
            eprintln!("{} --- {} (si_code={}) ---", self.pid, name(sig), info.code);
        }
        if self.setup_frame(st, mem, sig, info, 0).is_err() {
            return Some(SysOutcome::Killed(SIGSEGV));
        }
        None
    }

    /// A debugger stops the signals this process is about to take to a handler (`armada run
    /// -g`): each is held ([`Self::caught_signal`]) instead of delivered, until the debugger
    /// lets it through or drops it ([`Self::resume_caught_signal`]).
    pub fn stop_signals_for_debugger(&mut self, on: bool) {
        self.signals.debug = on.then(|| {
            Box::new(DebugSignals {
                pid: self.pid,
                caught: None,
                passing: None,
            })
        });
    }

    /// Whether a debugger follows this process (`stop_signals_for_debugger`): a signal from
    /// another process that would end it is then held for the debugger too (the runner's
    /// `held_kill`), as Linux stops a traced process before such a signal ends it.
    pub fn debugger_follows(&self) -> bool {
        self.signals
            .debug
            .as_ref()
            .is_some_and(|d| d.pid == self.pid)
    }

    /// Whether the debugger let a held signal through (its handler runs at the next
    /// delivery).
    pub(crate) fn signal_passing(&self) -> bool {
        self.signals
            .debug
            .as_ref()
            .is_some_and(|d| d.passing.is_some())
    }

    /// The signal held for the debugger, if one is.
    pub fn caught_signal(&self) -> Option<i32> {
        self.signals
            .debug
            .as_ref()
            .filter(|d| d.pid == self.pid)
            .and_then(|d| d.caught.map(|c| c.0))
    }

    /// The debugger resumes after [`Self::caught_signal`]: with `deliver`, the signal goes to
    /// its handler now (the registers and stack set up as Linux would); without, it is
    /// dropped.
    pub fn resume_caught_signal(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        deliver: bool,
    ) -> SysOutcome {
        let Some(d) = self.signals.debug.as_mut() else {
            return SysOutcome::Continue;
        };
        let caught = d.caught.take();
        if deliver {
            d.passing = caught;
            return self.deliver_signals(st, mem);
        }
        SysOutcome::Continue
    }

    /// Delivers a synchronous signal caused by the instruction at `st.pc` (a fault, an
    /// undefined instruction, a breakpoint): runs the guest's handler if it has one and the
    /// signal is neither blocked nor ignored, otherwise the process dies of it (as Linux's
    /// force_sig). `code` is the si_code (e.g. [`SEGV_MAPERR`]), `addr` the si_addr.
    /// Returns the outcome when the process ends; None when the lane should continue (at
    /// the handler).
    pub fn deliver_fault(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        sig: i32,
        code: i32,
        addr: u64,
    ) -> Option<SysOutcome> {
        if !(1..=NSIG).contains(&sig) {
            return Some(SysOutcome::Killed(SIGSEGV));
        }
        let act = self.signals.actions[sig as usize];
        if !act.has_handler() || self.thread.sig.mask & bit(sig) != 0 {
            return Some(SysOutcome::Killed(sig));
        }
        if self.cfg.strace {
            eprintln!(
                "{} --- {} (si_code={code}, si_addr={addr:#x}) ---",
                self.pid,
                name(sig)
            );
        }
        let esr = match sig {
            SIGSEGV | SIGBUS => 0x9200_0000u64, // data abort from EL0; enough for handlers
            _ => 0,
        };
        match self.setup_frame(
            st,
            mem,
            sig,
            SigInfo {
                code,
                value: addr,
                extra: 0,
            },
            esr,
        ) {
            Ok(()) => None,
            Err(()) => Some(SysOutcome::Killed(SIGSEGV)),
        }
    }

    fn ensure_trampoline(&mut self, mem: &mut AddressSpace) -> Result<(), ()> {
        if matches!(mem.area_at(SIGTRAMP_ADDR), Some((_, _, p)) if p == Perm::RX) {
            let mut w = [0u8; 8];
            if mem.fetch_bytes(SIGTRAMP_ADDR, &mut w).is_ok()
                && w[..4] == SIGTRAMP_CODE[0].to_le_bytes()
                && w[4..] == SIGTRAMP_CODE[1].to_le_bytes()
            {
                return Ok(());
            }
        }
        mem.map(SIGTRAMP_ADDR, PAGE_SIZE, Perm::RX)
            .map_err(|_| ())?;
        mem.share_page(SIGTRAMP_ADDR / PAGE_SIZE, trampoline_page());
        Ok(())
    }

    fn on_altstack(&self, sp: u64) -> bool {
        let (ss_sp, flags, size) = self.thread.sig.altstack;
        flags != SS_DISABLE && sp > ss_sp && sp - ss_sp <= size
    }

    /// Builds the arm64 rt_sigframe and points the registers at the handler.
    fn setup_frame(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        sig: i32,
        info: SigInfo,
        esr: u64,
    ) -> Result<(), ()> {
        let act = self.signals.actions[sig as usize];
        let sp0 = st.x[31];
        let (ss_sp, ss_flags, ss_size) = self.thread.sig.altstack;
        let use_alt =
            act.flags & SA_ONSTACK != 0 && ss_flags != SS_DISABLE && !self.on_altstack(sp0);
        let top = if use_alt {
            ss_sp.wrapping_add(ss_size)
        } else {
            sp0
        };
        let record = top.checked_sub(16).ok_or(())? & !15;
        let frame = record.checked_sub(FRAME_SIZE).ok_or(())? & !15;

        let mut f = vec![0u8; (record + 16 - frame) as usize];
        let put = |f: &mut Vec<u8>, at: u64, v: &[u8]| {
            let at = at as usize;
            f[at..at + v.len()].copy_from_slice(v);
        };
        put(&mut f, 0, &info.siginfo(sig));
        // ucontext
        let uc = SIGINFO_SIZE;
        let cur_flags = if ss_flags == SS_DISABLE {
            SS_DISABLE
        } else if self.on_altstack(sp0) {
            SS_ONSTACK
        } else {
            0
        };
        put(&mut f, uc + UC_STACK, &ss_sp.to_le_bytes());
        put(&mut f, uc + UC_STACK + 8, &cur_flags.to_le_bytes());
        put(&mut f, uc + UC_STACK + 16, &ss_size.to_le_bytes());
        let saved_mask = self
            .thread
            .sig
            .suspend_mask
            .take()
            .unwrap_or(self.thread.sig.mask);
        put(&mut f, uc + UC_SIGMASK, &saved_mask.to_le_bytes());
        let mc = uc + UC_MCONTEXT;
        if esr != 0 {
            put(&mut f, mc, &info.value.to_le_bytes()); // fault_address
        }
        for r in 0..31 {
            put(
                &mut f,
                mc + MC_REGS + 8 * r,
                &st.x[r as usize].to_le_bytes(),
            );
        }
        put(&mut f, mc + MC_SP, &sp0.to_le_bytes());
        put(&mut f, mc + MC_PC, &st.pc.to_le_bytes());
        put(
            &mut f,
            mc + MC_PSTATE,
            &(st.nzcv & 0xf000_0000).to_le_bytes(),
        );
        let mut rsv = mc + MC_RESERVED;
        put(&mut f, rsv, &FPSIMD_MAGIC.to_le_bytes());
        put(&mut f, rsv + 4, &FPSIMD_SIZE.to_le_bytes());
        put(&mut f, rsv + 8, &(st.fpsr as u32).to_le_bytes());
        put(&mut f, rsv + 12, &(st.fpcr as u32).to_le_bytes());
        for (k, v) in st.v.iter().enumerate() {
            put(&mut f, rsv + 16 + 16 * k as u64, &v.to_le_bytes());
        }
        rsv += FPSIMD_SIZE as u64;
        if esr != 0 {
            put(&mut f, rsv, &ESR_MAGIC.to_le_bytes());
            put(&mut f, rsv + 4, &16u32.to_le_bytes());
            put(&mut f, rsv + 8, &esr.to_le_bytes());
        }
        // frame record {fp, lr} above the frame
        let rec = record - frame;
        put(&mut f, rec, &st.x[29].to_le_bytes());
        put(&mut f, rec + 8, &st.x[30].to_le_bytes());
        mem.write_bytes(frame, &f).map_err(|_| ())?;

        let ret = if act.flags & SA_RESTORER != 0 && act.restorer != 0 {
            act.restorer
        } else {
            self.ensure_trampoline(mem)?;
            SIGTRAMP_ADDR
        };
        st.x[0] = sig as u64;
        st.x[1] = frame;
        st.x[2] = frame + uc;
        st.x[29] = record;
        st.x[30] = ret;
        st.x[31] = frame;
        st.pc = act.handler;
        st.excl_addr = u64::MAX;
        let mut m = self.thread.sig.mask | act.mask;
        if act.flags & SA_NODEFER == 0 {
            m |= bit(sig);
        }
        self.thread.sig.mask = m & !UNBLOCKABLE;
        if act.flags & SA_RESETHAND != 0 {
            self.signals.actions[sig as usize] = SigAction::default();
        }
        Ok(())
    }

    /// rt_sigreturn: restores the registers, mask and alternate stack saved in the frame at sp.
    pub(crate) fn sys_rt_sigreturn(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
    ) -> SysResult {
        let frame = st.x[31];
        let uc = frame.wrapping_add(SIGINFO_SIZE);
        let mc = uc.wrapping_add(UC_MCONTEXT);
        let mut buf = vec![0u8; (UC_MCONTEXT + MC_RESERVED + RESERVED_SIZE) as usize];
        if mem.read_bytes(uc, &mut buf).is_err() {
            self.outcome = Some(SysOutcome::Killed(SIGSEGV));
            return Err(Errno::EFAULT);
        }
        let g64 = |at: u64| {
            let at = at as usize;
            u64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or([0; 8]))
        };
        let g32 = |at: u64| {
            let at = at as usize;
            u32::from_le_bytes(buf[at..at + 4].try_into().unwrap_or([0; 4]))
        };
        let m = UC_MCONTEXT;
        for r in 0..31 {
            st.x[r] = g64(m + MC_REGS + 8 * r as u64);
        }
        st.x[31] = g64(m + MC_SP);
        st.pc = g64(m + MC_PC);
        st.nzcv = g64(m + MC_PSTATE) & 0xf000_0000;
        st.excl_addr = u64::MAX;
        // records in __reserved
        let mut at = m + MC_RESERVED;
        let end = at + RESERVED_SIZE;
        while at + 8 <= end {
            let (magic, size) = (g32(at), g32(at + 4) as u64);
            if magic == 0 || size < 8 || at + size > end {
                break;
            }
            if magic == FPSIMD_MAGIC && size >= FPSIMD_SIZE as u64 {
                st.fpsr = g32(at + 8) as u64;
                st.fpcr = g32(at + 12) as u64;
                for k in 0..32u64 {
                    let o = (at + 16 + 16 * k) as usize;
                    st.v[k as usize] =
                        u128::from_le_bytes(buf[o..o + 16].try_into().unwrap_or([0; 16]));
                }
            }
            at += size;
        }
        self.thread.sig.mask = g64(UC_SIGMASK) & !UNBLOCKABLE;
        // restore_altstack: only when it is a valid setting and we are not on it
        let (ss_sp, ss_flags, ss_size) =
            (g64(UC_STACK), g32(UC_STACK + 8) as i32, g64(UC_STACK + 16));
        if !self.on_altstack(st.x[31]) {
            if ss_flags & SS_DISABLE != 0 {
                self.thread.sig.altstack = (0, SS_DISABLE, 0);
            } else if ss_size >= 5120 {
                self.thread.sig.altstack = (ss_sp, ss_flags & (1 << 31), ss_size);
            }
        }
        let _ = mc;
        self.deliver_pending();
        Ok(st.x[0])
    }

    pub(crate) fn sys_rt_sigaction(
        &mut self,
        mem: &mut AddressSpace,
        sig: i32,
        act: u64,
        oact: u64,
        size: u64,
    ) -> SysResult {
        if size != 8 || !(1..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        let new = if act != 0 {
            if sig == SIGKILL || sig == SIGSTOP {
                return Err(Errno::EINVAL);
            }
            let mut b = [0u8; 32];
            rd(mem, act, &mut b)?;
            let g = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
            Some(SigAction {
                handler: g(0),
                flags: g(8),
                restorer: g(16),
                mask: g(24) & !UNBLOCKABLE,
            })
        } else {
            None
        };
        if oact != 0 {
            let o = self.signals.actions[sig as usize];
            let mut b = [0u8; 32];
            b[0..8].copy_from_slice(&o.handler.to_le_bytes());
            b[8..16].copy_from_slice(&o.flags.to_le_bytes());
            b[16..24].copy_from_slice(&o.restorer.to_le_bytes());
            b[24..32].copy_from_slice(&o.mask.to_le_bytes());
            wr(mem, oact, &b)?;
        }
        if let Some(n) = new {
            self.signals.actions[sig as usize] = n;
            let ignored = n.handler == SIG_IGN
                || (n.handler == SIG_DFL && default_action(sig) == Default_::Ignore);
            if ignored {
                // dropped for the process and every thread
                self.thread.sig.pending &= !bit(sig);
                self.signals.shared &= !bit(sig);
                for t in self.others.values_mut() {
                    t.sig.pending &= !bit(sig);
                }
            }
        }
        Ok(0)
    }

    pub(crate) fn sys_rt_sigprocmask(
        &mut self,
        mem: &mut AddressSpace,
        how: i32,
        set: u64,
        oset: u64,
        size: u64,
    ) -> SysResult {
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        let new = if set != 0 {
            let s = rd_u64(mem, set)?;
            Some(match how {
                0 => self.thread.sig.mask | s,
                1 => self.thread.sig.mask & !s,
                2 => s,
                _ => return Err(Errno::EINVAL),
            })
        } else {
            None
        };
        if oset != 0 {
            wr_u64(mem, oset, self.thread.sig.mask)?;
        }
        if let Some(m) = new {
            self.thread.sig.mask = m & !UNBLOCKABLE;
            self.deliver_pending();
        }
        Ok(0)
    }

    pub(crate) fn sys_rt_sigpending(
        &mut self,
        mem: &mut AddressSpace,
        set: u64,
        size: u64,
    ) -> SysResult {
        if size > 8 {
            return Err(Errno::EINVAL);
        }
        let v = (self.pending_now() & self.thread.sig.mask).to_le_bytes();
        wr(mem, set, &v[..size as usize])?;
        Ok(0)
    }

    pub(crate) fn sys_rt_sigsuspend(
        &mut self,
        mem: &mut AddressSpace,
        set: u64,
        size: u64,
    ) -> SysResult {
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        let m = rd_u64(mem, set)? & !UNBLOCKABLE;
        let old = self.thread.sig.mask;
        self.thread.sig.mask = m;
        self.deliver_pending();
        if self.outcome.is_none() && self.handler_ready() {
            // the handler runs on return; its sigreturn restores the old mask
            self.thread.sig.suspend_mask = Some(old);
            return Err(Errno::EINTR);
        }
        self.thread.sig.mask = old;
        if self.outcome.is_none() {
            // runs again when another task has done something (sent a signal, perhaps)
            return Err(self.block(crate::sched::WaitKind::Retry, None));
        }
        Err(Errno::EINTR)
    }

    pub(crate) fn sys_rt_sigtimedwait(
        &mut self,
        mem: &mut AddressSpace,
        set: u64,
        info: u64,
        tmo: u64,
        size: u64,
    ) -> SysResult {
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        let want = rd_u64(mem, set)? & !UNBLOCKABLE;
        let hit = self.pending_now() & want;
        if hit != 0 {
            let sig = hit.trailing_zeros() as i32 + 1;
            let si = self.take_pending(sig);
            if info != 0 {
                wr(mem, info, &si.siginfo(sig))?;
            }
            return Ok(sig as u64);
        }
        let deadline = if tmo == 0 {
            None
        } else {
            let ns = crate::read_timespec_ns(mem, tmo)?;
            Some(self.deadline_after(ns))
        };
        if deadline.is_some_and(|d| self.deadline_passed(d)) {
            return Err(Errno::EAGAIN);
        }
        Err(self.block(crate::sched::WaitKind::Retry, deadline))
    }

    pub(crate) fn sys_sigaltstack(
        &mut self,
        mem: &mut AddressSpace,
        ss: u64,
        old: u64,
        sp: u64,
    ) -> SysResult {
        const SS_AUTODISARM: i32 = 1 << 31;
        const MINSIGSTKSZ: u64 = 5120;
        let on = self.on_altstack(sp);
        let new = if ss != 0 {
            let ss_sp = rd_u64(mem, ss)?;
            let flags = rd_u32(mem, ss + 8)? as i32;
            let size = rd_u64(mem, ss + 16)?;
            let mode = flags & !SS_AUTODISARM;
            if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
                return Err(Errno::EINVAL);
            }
            if on {
                return Err(Errno::EPERM);
            }
            if mode == SS_DISABLE {
                Some((0, SS_DISABLE, 0))
            } else {
                if size < MINSIGSTKSZ {
                    return Err(Errno::ENOMEM);
                }
                Some((ss_sp, flags & SS_AUTODISARM, size))
            }
        } else {
            None
        };
        if old != 0 {
            let (ss_sp, flags, size) = self.thread.sig.altstack;
            let flags = if on { flags | SS_ONSTACK } else { flags };
            let mut b = [0u8; 24];
            b[0..8].copy_from_slice(&ss_sp.to_le_bytes());
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..24].copy_from_slice(&size.to_le_bytes());
            wr(mem, old, &b)?;
        }
        if let Some(n) = new {
            self.thread.sig.altstack = n;
        }
        Ok(0)
    }

    pub(crate) fn signal_self(&mut self, sig: i32, code: i32) -> SysResult {
        if !(0..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        if sig != 0 {
            let sender = (self.pid as u32 as u64) | ((self.creds.uid.real as u64) << 32);
            self.raise_info(sig, SigInfo::new(code, sender));
        }
        Ok(0)
    }

    pub(crate) fn sys_tgkill(&mut self, tgid: i32, tid: i32, sig: i32) -> SysResult {
        if tgid <= 0 {
            return Err(Errno::EINVAL);
        }
        if tgid != self.pid {
            return Err(Errno::ESRCH);
        }
        self.sys_tkill(tid, sig)
    }

    /// tkill/tgkill: a signal for one thread of this process.
    pub(crate) fn sys_tkill(&mut self, tid: i32, sig: i32) -> SysResult {
        if tid <= 0 || !(0..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        if !self.is_thread(tid) {
            return Err(Errno::ESRCH);
        }
        if sig != 0 {
            let sender = (self.pid as u32 as u64) | ((self.creds.uid.real as u64) << 32);
            self.raise_thread(tid, sig, SigInfo::new(SI_TKILL, sender));
        }
        Ok(0)
    }
}

/// What a signal from another process did to its receiver (see [`Process::receive`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// Pending (a handler runs when one of its threads next runs), ignored or blocked.
    Nothing,
    /// Its default action ends the process.
    Killed(i32),
    /// Its default action stops the process (SIGSTOP, and SIGTSTP/TTIN/TTOU not handled).
    Stop(i32),
    /// SIGCONT: the process continues if stopped (a handler, if any, also runs).
    Continue,
}

const SA_NOCLDSTOP: u64 = 1;
const SA_NOCLDWAIT: u64 = 2;

impl Signals {
    pub(crate) fn sigchld_ignored(&self) -> bool {
        self.actions[SIGCHLD as usize].handler == SIG_IGN
    }

    /// Whether children are reaped as they end (SIGCHLD ignored, or SA_NOCLDWAIT).
    pub(crate) fn ignores_children(&self) -> bool {
        let a = self.actions[SIGCHLD as usize];
        a.handler == SIG_IGN || a.flags & SA_NOCLDWAIT != 0
    }
}

impl Process {
    /// A signal sent by another process of the lane (kill, SIGCHLD) arrives at this one,
    /// which is not running now. `extra` is si_status (SIGCHLD).
    /// `tid`: a thread of the process it is for (a timer's SIGEV_THREAD_ID), or 0.
    pub fn receive(&mut self, tid: i32, sig: i32, code: i32, value: u64, extra: u64) -> Received {
        if !(1..=NSIG).contains(&sig) {
            return Received::Nothing;
        }
        if self.host_child_signal(sig) {
            // a host program (`--host-exec`) gets it from the host's kernel
            return Received::Nothing;
        }
        let act = self.signals.actions[sig as usize];
        let stop = match sig {
            SIGSTOP => true,
            SIGTSTP | SIGTTIN | SIGTTOU => act.handler == SIG_DFL,
            _ => false,
        };
        if stop {
            return Received::Stop(sig);
        }
        let blocked = self.thread.sig.mask & bit(sig) != 0
            && self.others.values().all(|t| t.sig.mask & bit(sig) != 0);
        if sig == SIGCHLD && !act.has_handler() && !blocked {
            // ignored by default (and SIG_IGN): nothing is left pending, unless every
            // thread blocks it (Linux never ignores a blocked signal: sigwait or a
            // signalfd may take it)
            return Received::Nothing;
        }
        let before = self.outcome.take();
        let si = SigInfo { code, value, extra };
        if tid != 0 && self.is_thread(tid) {
            self.raise_thread(tid, sig, si);
        } else {
            self.raise_info(sig, si);
        }
        let now = std::mem::replace(&mut self.outcome, before);
        match now {
            Some(SysOutcome::Killed(s)) => Received::Killed(s),
            _ if sig == SIGCONT => Received::Continue,
            _ => Received::Nothing,
        }
    }

    /// Whether the parent wants SIGCHLD when a child stops or continues.
    pub fn wants_stop_notice(&self) -> bool {
        self.signals.actions[SIGCHLD as usize].flags & SA_NOCLDSTOP == 0
    }

    /// Whether the lowest signal with a handler that is ready for the current thread asks
    /// for interrupted syscalls to restart (SA_RESTART).
    pub fn restart_after_handler(&self, tid: i32) -> bool {
        const SA_RESTART: u64 = 0x1000_0000;
        let t = if tid == self.thread.tid {
            &self.thread.sig
        } else {
            match self.others.get(&tid) {
                Some(t) => &t.sig,
                None => return false,
            }
        };
        let ready = (t.pending | self.signals.shared) & !t.mask;
        (1..=NSIG)
            .find(|&s| ready & bit(s) != 0 && self.signals.actions[s as usize].has_handler())
            .is_some_and(|s| self.signals.actions[s as usize].flags & SA_RESTART != 0)
    }

    /// What execve does to signals: handlers go back to the default (ignored signals stay
    /// ignored), the mask and pending signals stay, the alternate stack goes.
    pub(crate) fn exec_signals(&mut self) {
        for a in self.signals.actions.iter_mut() {
            if a.has_handler() {
                *a = SigAction::default();
            }
        }
        self.thread.sig.altstack = (0, SS_DISABLE, 0);
    }

    /// A forked child's signal state: the same dispositions and mask, nothing pending.
    pub(crate) fn fork_signals(&self) -> (Signals, ThreadSignals) {
        let mut s = self.signals.clone();
        s.shared = 0;
        let mut t = self.thread.sig.clone();
        t.pending = 0;
        t.suspend_mask = None;
        (s, t)
    }
}
