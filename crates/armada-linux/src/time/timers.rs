//! Interval timers and POSIX timers: `setitimer`/`getitimer` (and glibc's `alarm`, which is
//! setitimer on arm64), `timer_create`, `timer_settime`, `timer_gettime`,
//! `timer_getoverrun` and `timer_delete`.
//!
//! A process's timers are kept here, per process; the scheduler (`runner::Lane`) fires
//! them. Each timer runs on one of two clocks: the wall clock (CLOCK_MONOTONIC, on which
//! REALTIME and BOOTTIME timers are kept too: armada's clocks never jump) or the process's
//! CPU clock (ITIMER_VIRTUAL, ITIMER_PROF, CLOCK_PROCESS_CPUTIME_ID). Under
//! `--deterministic` both are functions of the lane's retired instruction count, and the
//! scheduler ends a task's turn at the instruction where the next timer is due, so the
//! same run delivers the same signals at the same instruction counts. Otherwise the
//! host's clocks are read at every turn boundary (at most the scheduler's quantum of
//! instructions apart).
//!
//! A timer whose signal is still pending when it expires again counts an overrun instead
//! (si_overrun and timer_getoverrun, as on Linux). Timers are not inherited by fork;
//! execve deletes POSIX timers and keeps interval timers (POSIX).

use std::collections::BTreeMap;

use crate::read_timespec_ns;
use crate::signal::{self as sig, Outgoing, NSIG, SI_TIMER};
use crate::time::clock::{
    CLOCK_BOOTTIME, CLOCK_BOOTTIME_ALARM, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID,
    CLOCK_REALTIME, CLOCK_REALTIME_ALARM, CLOCK_TAI, CLOCK_THREAD_CPUTIME_ID,
};
use crate::{rd, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const NS: u64 = 1_000_000_000;

pub const ITIMER_REAL: i32 = 0;
pub const ITIMER_VIRTUAL: i32 = 1;
pub const ITIMER_PROF: i32 = 2;

const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD: i32 = 2;
const SIGEV_THREAD_ID: i32 = 4;
const TIMER_ABSTIME: i32 = 1;
/// Most POSIX timers a process may hold (Linux's bound is RLIMIT_SIGPENDING).
pub const MAX_TIMERS: usize = 4096;

/// Which clock a timer counts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// CLOCK_MONOTONIC, ns: advances while tasks sleep.
    Wall,
    /// The process's CPU time, ns.
    Cpu,
}

/// How an expiry is announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notify {
    /// Nothing (SIGEV_NONE: the program polls timer_gettime).
    None,
    /// `signal` to the process, or to thread `tid` (SIGEV_THREAD_ID), with `value` as
    /// si_value. `posix`: si_code is SI_TIMER with the timer's id and overrun, otherwise
    /// SI_KERNEL (interval timers).
    Signal {
        signal: i32,
        value: u64,
        tid: i32,
        posix: bool,
    },
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Timer {
    base: Base,
    /// The clock the program named (for TIMER_ABSTIME and timer_gettime).
    clock: i32,
    /// Next expiry on `base`; None: disarmed.
    next: Option<u64>,
    interval: u64,
    notify: Notify,
    /// Expirations since the last signal was sent, while that signal was still pending.
    overrun_acc: u32,
    /// The overrun the last signal carried (timer_getoverrun).
    overrun: u32,
    /// The signal sent last, not yet taken by the process (see [`Process::timer_signal_taken`]).
    queued: bool,
}

impl Timer {
    fn new(base: Base, clock: i32, notify: Notify) -> Timer {
        Timer {
            base,
            clock,
            next: None,
            interval: 0,
            notify,
            overrun_acc: 0,
            overrun: 0,
            queued: false,
        }
    }

    /// Counts the expirations up to `now` (on its base); the next expiry moves on.
    fn expire(&mut self, now: u64) -> u64 {
        let Some(d) = self.next else { return 0 };
        if now < d {
            return 0;
        }
        match (now - d).checked_div(self.interval) {
            None => {
                self.next = None;
                1
            }
            Some(k) => {
                let n = k + 1;
                self.next = Some(d.saturating_add(n.saturating_mul(self.interval)));
                n
            }
        }
    }
}

/// A process's timers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timers {
    itimers: [Option<Timer>; 3],
    posix: BTreeMap<i32, Timer>,
}

/// When a lane's next timer is due, on each clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Due {
    pub wall: Option<u64>,
    pub cpu: Option<u64>,
}

impl Due {
    /// The earlier of two.
    pub fn min(self, o: Due) -> Due {
        let m = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        Due {
            wall: m(self.wall, o.wall),
            cpu: m(self.cpu, o.cpu),
        }
    }

    pub fn is_none(&self) -> bool {
        self.wall.is_none() && self.cpu.is_none()
    }

    /// Whether a timer is due at these clock readings.
    pub fn reached(&self, wall: u64, cpu: u64) -> bool {
        self.wall.is_some_and(|d| wall >= d) || self.cpu.is_some_and(|d| cpu >= d)
    }
}

impl Timers {
    fn all(&self) -> impl Iterator<Item = &Timer> {
        self.itimers.iter().flatten().chain(self.posix.values())
    }

    pub(crate) fn due(&self) -> Due {
        let mut d = Due::default();
        // a SIGEV_NONE timer wakes nobody: it is read by timer_gettime only
        for t in self.all().filter(|t| t.notify != Notify::None) {
            let Some(n) = t.next else { continue };
            let one = match t.base {
                Base::Wall => Due {
                    wall: Some(n),
                    cpu: None,
                },
                Base::Cpu => Due {
                    wall: None,
                    cpu: Some(n),
                },
            };
            d = d.min(one);
        }
        d
    }

    /// What execve keeps: the interval timers.
    pub(crate) fn after_exec(&mut self) {
        self.posix.clear();
    }
}

/// The base and clock of an interval timer.
fn itimer_clock(which: i32) -> Result<(Base, i32), Errno> {
    match which {
        ITIMER_REAL => Ok((Base::Wall, CLOCK_MONOTONIC)),
        ITIMER_VIRTUAL | ITIMER_PROF => Ok((Base::Cpu, CLOCK_PROCESS_CPUTIME_ID)),
        _ => Err(Errno::EINVAL),
    }
}

fn itimer_signal(which: i32) -> i32 {
    match which {
        ITIMER_REAL => sig::SIGALRM,
        ITIMER_VIRTUAL => 26, // SIGVTALRM
        _ => 27,              // SIGPROF
    }
}

/// Reads a guest `struct timeval` as nanoseconds (EINVAL when usec is out of range).
fn read_timeval_ns(mem: &mut AddressSpace, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 16];
    rd(mem, addr, &mut b)?;
    let s = i64::from_le_bytes(b[..8].try_into().unwrap_or_default());
    let us = i64::from_le_bytes(b[8..].try_into().unwrap_or_default());
    if s < 0 || !(0..1_000_000).contains(&us) {
        return Err(Errno::EINVAL);
    }
    Ok((s as u64)
        .saturating_mul(NS)
        .saturating_add(us as u64 * 1000))
}

fn put_pair(b: &mut [u8], s: u64, sub: u64) {
    b[..8].copy_from_slice(&s.to_le_bytes());
    b[8..16].copy_from_slice(&sub.to_le_bytes());
}

impl Process {
    /// The process's CPU clock, ns.
    fn cpu_clock_ns(&self) -> u64 {
        let (s, n) = self.clock_now(CLOCK_PROCESS_CPUTIME_ID).unwrap_or((0, 0));
        (s as u64).saturating_mul(NS).saturating_add(n as u64)
    }

    /// The reading of a timer's base clock now.
    fn base_now(&self, base: Base) -> u64 {
        match base {
            Base::Wall => self.monotonic_ns(),
            Base::Cpu => self.cpu_clock_ns(),
        }
    }

    /// The lane's clocks now: (wall, cpu), as the scheduler compares them with [`Due`].
    pub fn timer_clocks(&self) -> (u64, u64) {
        (self.monotonic_ns(), self.cpu_clock_ns())
    }

    /// When this process's next timer is due.
    pub fn timers_due(&self) -> Due {
        self.timers.due()
    }

    /// Whether the last syscall armed, changed or deleted a timer (the scheduler's cached
    /// [`Due`] is stale then).
    pub fn take_timers_changed(&mut self) -> bool {
        std::mem::take(&mut self.events.timers_changed)
    }

    /// Fires this process's timers that are due at the clock readings (`wall`, `cpu`): the
    /// signals to send, for the scheduler to deliver. The process need not be the one
    /// being serviced (it does not hold the lane's clock then: hence the readings).
    pub fn expire_timers(&mut self, wall: u64, cpu: u64) -> Vec<Outgoing> {
        let mut out = Vec::new();
        let pid = self.pid;
        let pending = self.pending_anywhere();
        let mut fire = |id: i32, t: &mut Timer| {
            let now = match t.base {
                Base::Wall => wall,
                Base::Cpu => cpu,
            };
            let n = t.expire(now);
            if n == 0 {
                return;
            }
            let Notify::Signal {
                signal,
                value,
                tid,
                posix,
            } = t.notify
            else {
                return;
            };
            let missed = u32::try_from(n - 1).unwrap_or(u32::MAX);
            if t.queued && pending & (1u64 << (signal - 1)) != 0 {
                // its last signal is still pending: an overrun, not a second signal
                t.overrun_acc = t.overrun_acc.saturating_add(missed.saturating_add(1));
                return;
            }
            // (si_overrun is set when the signal is taken: see `timer_signal_taken`)
            t.overrun_acc = missed;
            t.queued = posix;
            let (code, value, extra) = if posix {
                (SI_TIMER, id as u32 as u64, value)
            } else {
                (sig::SI_KERNEL, 0, 0)
            };
            out.push(Outgoing {
                pid,
                tid,
                signal,
                code,
                value,
                extra,
                child: None,
            });
        };
        for (which, t) in self.timers.itimers.iter_mut().enumerate() {
            if let Some(t) = t {
                fire(which as i32, t);
            }
        }
        for (&id, t) in self.timers.posix.iter_mut() {
            fire(id, t);
        }
        out
    }

    pub(crate) fn sys_getitimer(
        &mut self,
        mem: &mut AddressSpace,
        which: i32,
        val: u64,
    ) -> SysResult {
        itimer_clock(which)?;
        let b = self.itimer_value(which);
        wr(mem, val, &b)?;
        Ok(0)
    }

    /// An interval timer as a `struct itimerval` (interval, then the time left), rounded up
    /// to microseconds as Linux does.
    fn itimer_value(&self, which: i32) -> [u8; 32] {
        let mut b = [0u8; 32];
        if let Some(t) = self.timers.itimers[which as usize] {
            let left = t
                .next
                .map_or(0, |d| d.saturating_sub(self.base_now(t.base)).max(1));
            let us = |ns: u64| ns.div_ceil(1000);
            put_pair(&mut b[..16], t.interval / NS, us(t.interval % NS));
            let l = us(left);
            put_pair(&mut b[16..], l / 1_000_000, l % 1_000_000);
        }
        b
    }

    pub(crate) fn sys_setitimer(
        &mut self,
        mem: &mut AddressSpace,
        which: i32,
        new: u64,
        old: u64,
    ) -> SysResult {
        let (base, clock) = itimer_clock(which)?;
        let set = if new != 0 {
            Some((read_timeval_ns(mem, new)?, read_timeval_ns(mem, new + 16)?))
        } else {
            None
        };
        if old != 0 {
            let b = self.itimer_value(which);
            wr(mem, old, &b)?;
        }
        if let Some((interval, value)) = set {
            let slot = &mut self.timers.itimers[which as usize];
            if value == 0 {
                *slot = None;
            } else {
                let now = self.base_now(base);
                let mut t = Timer::new(
                    base,
                    clock,
                    Notify::Signal {
                        signal: itimer_signal(which),
                        value: 0,
                        tid: 0,
                        posix: false,
                    },
                );
                t.next = Some(now.saturating_add(value));
                t.interval = interval;
                self.timers.itimers[which as usize] = Some(t);
            }
            self.events.timers_changed = true;
        }
        Ok(0)
    }

    pub(crate) fn sys_timer_create(
        &mut self,
        mem: &mut AddressSpace,
        clock: i32,
        sevp: u64,
        id_out: u64,
    ) -> SysResult {
        let base = match clock {
            CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_TAI
            | CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM => Base::Wall,
            CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => Base::Cpu,
            _ => return Err(Errno::EINVAL),
        };
        let id = (0..)
            .find(|i| !self.timers.posix.contains_key(i))
            .unwrap_or(0);
        let notify = if sevp == 0 {
            Notify::Signal {
                signal: sig::SIGALRM,
                value: id as u64,
                tid: 0,
                posix: true,
            }
        } else {
            // struct sigevent: sigval (8), signo (4), notify (4), then _tid (4)
            let mut b = [0u8; 24];
            rd(mem, sevp, &mut b)?;
            let value = u64::from_le_bytes(b[0..8].try_into().unwrap_or_default());
            let signo = i32::from_le_bytes(b[8..12].try_into().unwrap_or_default());
            let how = i32::from_le_bytes(b[12..16].try_into().unwrap_or_default());
            let tid = i32::from_le_bytes(b[16..20].try_into().unwrap_or_default());
            let valid_sig = (1..=NSIG).contains(&signo);
            match how {
                SIGEV_NONE => Notify::None,
                SIGEV_SIGNAL if valid_sig => Notify::Signal {
                    signal: signo,
                    value,
                    tid: 0,
                    posix: true,
                },
                SIGEV_THREAD_ID if valid_sig => {
                    if !self.is_thread(tid) {
                        return Err(Errno::EINVAL);
                    }
                    Notify::Signal {
                        signal: signo,
                        value,
                        tid,
                        posix: true,
                    }
                }
                // SIGEV_THREAD is glibc's (a helper thread and SIGEV_THREAD_ID): the kernel
                // refuses it, as here
                SIGEV_THREAD => return Err(Errno::EINVAL),
                _ => return Err(Errno::EINVAL),
            }
        };
        if self.timers.posix.len() >= MAX_TIMERS {
            return Err(Errno::EAGAIN);
        }
        crate::wr_u32(mem, id_out, id as u32)?;
        self.timers
            .posix
            .insert(id, Timer::new(base, clock, notify));
        Ok(0)
    }

    fn posix_timer(&self, id: i32) -> Result<&Timer, Errno> {
        self.timers.posix.get(&id).ok_or(Errno::EINVAL)
    }

    /// A timer as a `struct itimerspec` (interval, then the time left).
    fn timer_spec_of(&self, t: &Timer) -> [u8; 32] {
        let left = t
            .next
            .map_or(0, |d| d.saturating_sub(self.base_now(t.base)).max(1));
        let mut b = [0u8; 32];
        put_pair(&mut b[..16], t.interval / NS, t.interval % NS);
        put_pair(&mut b[16..], left / NS, left % NS);
        b
    }

    pub(crate) fn sys_timer_settime(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        flags: i32,
        new: u64,
        old: u64,
    ) -> SysResult {
        let t = *self.posix_timer(id)?;
        let interval = read_timespec_ns(mem, new)?;
        let value = read_timespec_ns(mem, new + 16)?;
        if old != 0 {
            let b = self.timer_spec_of(&t);
            wr(mem, old, &b)?;
        }
        let now = self.base_now(t.base);
        let next = if value == 0 {
            None
        } else if flags & TIMER_ABSTIME != 0 {
            // the named clock's absolute time, as a point on the timer's base
            let (s, n) = self.clock_now(t.clock)?;
            let clock_now = (s as u64).saturating_mul(NS).saturating_add(n as u64);
            Some(now.saturating_add(value.saturating_sub(clock_now)))
        } else {
            Some(now.saturating_add(value))
        };
        if let Some(t) = self.timers.posix.get_mut(&id) {
            t.next = next;
            t.interval = interval;
            t.overrun_acc = 0;
        }
        self.events.timers_changed = true;
        Ok(0)
    }

    pub(crate) fn sys_timer_gettime(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        cur: u64,
    ) -> SysResult {
        let mut t = *self.posix_timer(id)?;
        if t.notify == Notify::None {
            // nobody fires it: it moves on when read
            t.expire(self.base_now(t.base));
            self.timers.posix.insert(id, t);
        }
        let b = self.timer_spec_of(&t);
        wr(mem, cur, &b)?;
        Ok(0)
    }

    pub(crate) fn sys_timer_getoverrun(&mut self, id: i32) -> SysResult {
        Ok(self.posix_timer(id)?.overrun.min(i32::MAX as u32) as u64)
    }

    pub(crate) fn sys_timer_delete(&mut self, id: i32) -> SysResult {
        self.timers.posix.remove(&id).ok_or(Errno::EINVAL)?;
        self.events.timers_changed = true;
        Ok(0)
    }

    /// The process takes a timer's signal (for a handler, or sigwait): the signal says how
    /// many expirations it stands for beyond the first (si_overrun, as Linux counts them at
    /// delivery), and the timer's next expiry sends a new one. `value` is si_value's word
    /// of the siginfo (timer id, then overrun).
    pub(crate) fn timer_signal_taken(&mut self, code: i32, value: &mut u64) {
        if code != SI_TIMER {
            return;
        }
        if let Some(t) = self.timers.posix.get_mut(&(*value as u32 as i32)) {
            t.overrun = t.overrun_acc.min(i32::MAX as u32);
            t.overrun_acc = 0;
            t.queued = false;
            *value = (*value & 0xffff_ffff) | ((t.overrun as u64) << 32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_counts_missed_intervals() {
        let mut t = Timer::new(Base::Wall, CLOCK_MONOTONIC, Notify::None);
        t.next = Some(100);
        t.interval = 10;
        assert_eq!(t.expire(99), 0);
        assert_eq!(t.expire(100), 1);
        assert_eq!(t.next, Some(110));
        assert_eq!(t.expire(135), 3);
        assert_eq!(t.next, Some(140));
        t.interval = 0;
        assert_eq!(t.expire(140), 1);
        assert_eq!(t.next, None);
        assert_eq!(t.expire(1000), 0);
    }

    #[test]
    fn due_is_the_earliest_per_clock() {
        let mut ts = Timers::default();
        let sigalrm = Notify::Signal {
            signal: sig::SIGALRM,
            value: 0,
            tid: 0,
            posix: true,
        };
        let mut a = Timer::new(Base::Wall, CLOCK_MONOTONIC, sigalrm);
        a.next = Some(50);
        let mut b = Timer::new(Base::Cpu, CLOCK_PROCESS_CPUTIME_ID, sigalrm);
        b.next = Some(70);
        let mut c = Timer::new(Base::Wall, CLOCK_REALTIME, sigalrm);
        c.next = Some(30);
        ts.itimers[0] = Some(a);
        ts.posix.insert(0, b);
        ts.posix.insert(1, c);
        let d = ts.due();
        assert_eq!((d.wall, d.cpu), (Some(30), Some(70)));
        assert!(d.reached(30, 0) && d.reached(0, 70) && !d.reached(29, 69));
        let mut quiet = Timer::new(Base::Wall, CLOCK_MONOTONIC, Notify::None);
        quiet.next = Some(10);
        ts.posix.insert(2, quiet);
        assert_eq!(ts.due().wall, Some(30), "a SIGEV_NONE timer wakes nobody");
        ts.after_exec();
        assert_eq!(ts.due().wall, Some(50));
    }
}
