//! Signals (dispositions, mask, pending set, signals a process sends itself) and futex.
//!
//! armada cannot run guest signal handlers yet. Dispositions are recorded and returned as
//! Linux does; a signal that arrives (kill/tgkill to self, SIGPIPE, a fault) takes its
//! default action when its handler is SIG_DFL, is dropped when SIG_IGN, and when the guest
//! installed a handler armada says so once and applies the default action. A blocked signal
//! stays pending until the mask lets it through (glibc's raise() blocks signals around the
//! tgkill, and abort() relies on delivery when it unblocks).

use super::{rd, rd_u32, rd_u64, wr, wr_u32, wr_u64, Errno, Process, SysOutcome, SysResult};
use crate::memory::AddressSpace;

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

const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SigAction {
    handler: u64,
    flags: u64,
    restorer: u64,
    mask: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Signals {
    actions: [SigAction; NSIG as usize + 1],
    mask: u64,
    pending: u64,
    altstack: (u64, i32, u64),
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            actions: [SigAction::default(); NSIG as usize + 1],
            mask: 0,
            pending: 0,
            altstack: (0, 2, 0), // SS_DISABLE
        }
    }
}

impl Process {
    /// A signal arrives for the process: pend it if blocked, otherwise act on it. Sets
    /// `self.outcome` when it ends the process.
    pub(crate) fn raise(&mut self, sig: i32) {
        if !(1..=NSIG).contains(&sig) {
            return;
        }
        if self.signals.mask & bit(sig) & !UNBLOCKABLE != 0 {
            self.signals.pending |= bit(sig);
            return;
        }
        self.deliver(sig);
    }

    fn deliver(&mut self, sig: i32) {
        let act = self.signals.actions[sig as usize];
        let unstoppable = sig == SIGKILL || sig == SIGSTOP;
        if !unstoppable && act.handler == SIG_IGN {
            return;
        }
        if !unstoppable && act.handler != SIG_DFL {
            super::note_once(super::NOTE_SIGNAL_HANDLER, sig as u64, || {
                format!(
                    "the guest has a handler for {}, but armada cannot run signal handlers yet: the default action applies",
                    name(sig)
                )
            });
        }
        match default_action(sig) {
            Default_::Terminate => self.outcome = Some(SysOutcome::Killed(sig)),
            Default_::Ignore => {}
            Default_::Stop => super::note_once(super::NOTE_MISC, 100 + sig as u64, || {
                format!("{} would stop the guest; armada ignores it", name(sig))
            }),
        }
    }

    /// Delivers pending signals that the mask now lets through.
    fn deliver_pending(&mut self) {
        while self.outcome.is_none() {
            let ready = self.signals.pending & !self.signals.mask;
            if ready == 0 {
                break;
            }
            let sig = ready.trailing_zeros() as i32 + 1;
            self.signals.pending &= !bit(sig);
            self.deliver(sig);
        }
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
                self.signals.pending &= !bit(sig);
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
                0 => self.signals.mask | s,
                1 => self.signals.mask & !s,
                2 => s,
                _ => return Err(Errno::EINVAL),
            })
        } else {
            None
        };
        if oset != 0 {
            wr_u64(mem, oset, self.signals.mask)?;
        }
        if let Some(m) = new {
            self.signals.mask = m & !UNBLOCKABLE;
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
        let v = (self.signals.pending & self.signals.mask).to_le_bytes();
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
        let old = self.signals.mask;
        self.signals.mask = m;
        self.deliver_pending();
        self.signals.mask = old;
        if self.outcome.is_none() {
            return Err(self.deadlock("rt_sigsuspend"));
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
        let hit = self.signals.pending & want;
        if hit != 0 {
            let sig = hit.trailing_zeros() as i32 + 1;
            self.signals.pending &= !bit(sig);
            if info != 0 {
                // siginfo_t: si_signo, si_errno, si_code (SI_TKILL = -6), then pid, uid
                let mut b = [0u8; 128];
                b[0..4].copy_from_slice(&sig.to_le_bytes());
                b[8..12].copy_from_slice(&(-6i32).to_le_bytes());
                b[16..20].copy_from_slice(&self.pid.to_le_bytes());
                b[20..24].copy_from_slice(&self.uid.to_le_bytes());
                wr(mem, info, &b)?;
            }
            return Ok(sig as u64);
        }
        if tmo == 0 {
            return Err(self.deadlock("rt_sigtimedwait"));
        }
        let ns = super::time::read_timespec_ns(mem, tmo)?;
        self.sleep_ns(ns);
        Err(Errno::EAGAIN)
    }

    pub(crate) fn sys_sigaltstack(
        &mut self,
        mem: &mut AddressSpace,
        ss: u64,
        old: u64,
    ) -> SysResult {
        const SS_ONSTACK: i32 = 1;
        const SS_DISABLE: i32 = 2;
        const SS_AUTODISARM: i32 = 1 << 31;
        const MINSIGSTKSZ: u64 = 5120;
        let new = if ss != 0 {
            let sp = rd_u64(mem, ss)?;
            let flags = rd_u32(mem, ss + 8)? as i32;
            let size = rd_u64(mem, ss + 16)?;
            let mode = flags & !SS_AUTODISARM;
            if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
                return Err(Errno::EINVAL);
            }
            if mode == SS_DISABLE {
                Some((0, SS_DISABLE, 0))
            } else {
                if size < MINSIGSTKSZ {
                    return Err(Errno::ENOMEM);
                }
                Some((sp, flags & SS_AUTODISARM, size))
            }
        } else {
            None
        };
        if old != 0 {
            let (sp, flags, size) = self.signals.altstack;
            let mut b = [0u8; 24];
            b[0..8].copy_from_slice(&sp.to_le_bytes());
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..24].copy_from_slice(&size.to_le_bytes());
            wr(mem, old, &b)?;
        }
        if let Some(n) = new {
            self.signals.altstack = n;
        }
        Ok(0)
    }

    fn signal_self(&mut self, sig: i32) -> SysResult {
        if !(0..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        if sig != 0 {
            self.raise(sig);
        }
        Ok(0)
    }

    pub(crate) fn sys_kill(&mut self, pid: i32, sig: i32) -> SysResult {
        if !(0..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        if pid == self.pid || pid == 0 || pid == -1 || pid == -self.pid {
            return self.signal_self(sig);
        }
        Err(Errno::ESRCH)
    }

    pub(crate) fn sys_tgkill(&mut self, tgid: i32, tid: i32, sig: i32) -> SysResult {
        if tgid <= 0 || tid <= 0 || !(0..=NSIG).contains(&sig) {
            return Err(Errno::EINVAL);
        }
        if tgid == self.pid && tid == self.pid {
            return self.signal_self(sig);
        }
        Err(Errno::ESRCH)
    }

    /// futex for a single-threaded process: nobody else can wake a waiter.
    pub(crate) fn sys_futex(&mut self, mem: &mut AddressSpace, a: [u64; 6]) -> SysResult {
        const FUTEX_WAIT: u32 = 0;
        const FUTEX_WAKE: u32 = 1;
        const FUTEX_REQUEUE: u32 = 3;
        const FUTEX_CMP_REQUEUE: u32 = 4;
        const FUTEX_WAKE_OP: u32 = 5;
        const FUTEX_WAIT_BITSET: u32 = 9;
        const FUTEX_WAKE_BITSET: u32 = 10;
        const FUTEX_CLOCK_REALTIME: u32 = 256;
        let (uaddr, op, val, timeout, uaddr2, val3) =
            (a[0], a[1] as u32, a[2] as u32, a[3], a[4], a[5] as u32);
        let cmd = op & 0x7f;
        if uaddr & 3 != 0 {
            return Err(Errno::EINVAL);
        }
        match cmd {
            FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                if cmd == FUTEX_WAIT_BITSET && val3 == 0 {
                    return Err(Errno::EINVAL);
                }
                let cur = rd_u32(mem, uaddr)?;
                if cur != val {
                    return Err(Errno::EAGAIN);
                }
                if timeout == 0 {
                    return Err(self.deadlock("futex wait"));
                }
                let ns = super::time::read_timespec_ns(mem, timeout)?;
                let wait = if cmd == FUTEX_WAIT_BITSET {
                    // absolute time on CLOCK_MONOTONIC (or REALTIME)
                    let id = if op & FUTEX_CLOCK_REALTIME != 0 { 0 } else { 1 };
                    let (s, n) = self.clock_now(id)?;
                    ns.saturating_sub(
                        (s as u64)
                            .saturating_mul(1_000_000_000)
                            .saturating_add(n as u64),
                    )
                } else {
                    ns
                };
                self.sleep_ns(wait);
                Err(Errno::ETIMEDOUT)
            }
            FUTEX_WAKE | FUTEX_WAKE_BITSET => Ok(0),
            FUTEX_REQUEUE => Ok(0),
            FUTEX_CMP_REQUEUE => {
                if rd_u32(mem, uaddr)? != val3 {
                    return Err(Errno::EAGAIN);
                }
                Ok(0)
            }
            FUTEX_WAKE_OP => {
                if uaddr2 & 3 != 0 {
                    return Err(Errno::EINVAL);
                }
                let encoded = val3;
                let opc = (encoded >> 28) & 7;
                let shift = encoded & (8 << 28) != 0;
                let cmp = (encoded >> 24) & 15;
                let mut oparg = (encoded >> 12) & 0xfff;
                let cmparg = encoded & 0xfff;
                if shift {
                    oparg = 1u32.checked_shl(oparg).unwrap_or(0);
                }
                let old = rd_u32(mem, uaddr2)?;
                let new = match opc {
                    0 => oparg,
                    1 => old.wrapping_add(oparg),
                    2 => old | oparg,
                    3 => old & !oparg,
                    4 => old ^ oparg,
                    _ => return Err(Errno::ENOSYS),
                };
                wr_u32(mem, uaddr2, new)?;
                let _ = (cmp, cmparg);
                Ok(0)
            }
            _ => {
                self.unsupported(super::nr::FUTEX);
                Err(Errno::ENOSYS)
            }
        }
    }
}
