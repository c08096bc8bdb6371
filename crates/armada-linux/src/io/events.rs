//! eventfd, timerfd and epoll: armada's own objects, in memory, like its pipes.
//!
//! They need no host fd, so they behave the same in every mode and engine, and a task
//! waiting on one blocks in armada's scheduler (`WaitKind::Retry`), not on the host. A
//! timer's expiry is a time the scheduler wakes waiters at (`Wait::wake_at`), so a program
//! whose only source of events is a timerfd (Go's timers, in an event loop) sleeps on the
//! virtual clock in deterministic mode.
//!
//! epoll keeps its interest list by fd number (Linux keys it by fd and open file; the
//! difference shows only for a closed-then-reused fd, which is dropped here when closed).
//! Ready events come back in fd order. Edge-triggered interests report a readiness bit
//! when it appears (again after it went away); one-shot interests stop after one report
//! until EPOLL_CTL_MOD.

use std::collections::BTreeMap;

use crate::read_timespec_ns;
use crate::sched::WaitKind;
use crate::sched::WOULD_BLOCK;
use crate::time::clock::{CLOCK_BOOTTIME, CLOCK_MONOTONIC, CLOCK_REALTIME};
use crate::{rd, rd_u64, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const NS: u64 = 1_000_000_000;

const EPOLLIN: u32 = 0x001;
const EPOLLOUT: u32 = 0x004;
const EPOLLERR: u32 = 0x008;
const EPOLLHUP: u32 = 0x010;
const EPOLLEXCLUSIVE: u32 = 1 << 28;
const EPOLLWAKEUP: u32 = 1 << 29;
const EPOLLONESHOT: u32 = 1 << 30;
const EPOLLET: u32 = 1 << 31;
const EPOLL_CTL_ADD: i32 = 1;
const EPOLL_CTL_DEL: i32 = 2;
const EPOLL_CTL_MOD: i32 = 3;
/// arm64's struct epoll_event: u32 events, 4 bytes of padding, u64 data.
const EPOLL_EVENT_SIZE: u64 = 16;
/// Most events one epoll_wait returns (Linux: INT_MAX / sizeof(struct epoll_event)).
const EP_MAX_EVENTS: i32 = i32::MAX / EPOLL_EVENT_SIZE as i32;

/// EFD_CLOEXEC, TFD_CLOEXEC and EPOLL_CLOEXEC are O_CLOEXEC; the NONBLOCK ones O_NONBLOCK.
const CLOEXEC: u32 = 0o2000000;
const NONBLOCK: u32 = 0o4000;
const EFD_SEMAPHORE: u32 = 1;
const TFD_TIMER_ABSTIME: i32 = 1;
const TFD_TIMER_CANCEL_ON_SET: i32 = 2;

/// An in-memory event object behind an fd.
#[derive(Clone, Debug)]
pub(crate) enum Object {
    EventFd {
        count: u64,
        semaphore: bool,
        /// Writes ever made: each wakes edge-triggered epoll waiters (see `poll_stamp`).
        writes: u64,
    },
    TimerFd(Timer),
    Epoll(Epoll),
    /// A signalfd: reads take the reading thread's pending signals of `mask`.
    SignalFd {
        mask: u64,
    },
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Timer {
    clock: i32,
    /// Next expiry, on CLOCK_MONOTONIC (ns); None: disarmed.
    next: Option<u64>,
    interval: u64,
    /// Expirations counted and not read yet.
    pending: u64,
}

impl Timer {
    /// Counts the expirations up to `now`.
    fn tick(&mut self, now: u64) {
        let Some(d) = self.next else { return };
        if now < d {
            return;
        }
        match (now - d).checked_div(self.interval) {
            None => {
                // one-shot
                self.pending += 1;
                self.next = None;
            }
            Some(k) => {
                let n = k + 1;
                self.pending = self.pending.saturating_add(n);
                self.next = Some(d.saturating_add(n.saturating_mul(self.interval)));
            }
        }
    }

    fn readable(&self, now: u64) -> bool {
        self.pending > 0 || self.next.is_some_and(|d| now >= d)
    }
}

#[derive(Clone, Copy, Debug)]
struct Interest {
    events: u32,
    data: u64,
    /// Edge-triggered: the readiness seen at the last wait, and the fd's wakeup stamp
    /// then ([`Process::poll_stamp`]): an fd is reported again when it has become ready
    /// since, or when something happened to it (new data, room freed) while it stayed ready.
    reported: u32,
    stamp: Option<u64>,
    /// One-shot: reported once, off until EPOLL_CTL_MOD.
    disabled: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Epoll {
    interest: BTreeMap<i32, Interest>,
}

impl Object {
    /// The name /proc/self/fd shows ("anon_inode:[eventfd]").
    pub(crate) fn link_name(&self) -> &'static [u8] {
        match self {
            Object::EventFd { .. } => b"anon_inode:[eventfd]",
            Object::TimerFd(_) => b"anon_inode:[timerfd]",
            Object::Epoll(_) => b"anon_inode:[eventpoll]",
            Object::SignalFd { .. } => b"anon_inode:[signalfd]",
        }
    }
}

impl Process {
    fn object(&self, fd: i32) -> Result<&Object, Errno> {
        self.files.event(fd)
    }

    fn object_mut(&mut self, fd: i32) -> Result<&mut Object, Errno> {
        self.files.event_mut(fd)
    }

    /// poll(2) readiness of an event object.
    pub(crate) fn object_poll(&self, o: &Object) -> i16 {
        let r = match o {
            Object::EventFd { count, .. } => {
                (if *count > 0 { EPOLLIN } else { 0 })
                    | (if *count < u64::MAX - 1 { EPOLLOUT } else { 0 })
            }
            Object::TimerFd(t) => {
                if t.readable(self.monotonic_ns()) {
                    EPOLLIN
                } else {
                    0
                }
            }
            Object::Epoll(_) => 0,
            Object::SignalFd { mask } => {
                if self.pending_now() & mask != 0 {
                    EPOLLIN
                } else {
                    0
                }
            }
        };
        r as i16
    }

    /// A number that moves whenever an event object may have become ready again (see
    /// [`Process::poll_stamp`]).
    pub(crate) fn object_stamp(&self, o: &Object) -> Option<u64> {
        match o {
            Object::EventFd { writes, .. } => Some(*writes),
            Object::TimerFd(t) => Some(mix(t.next.unwrap_or(0), t.pending)),
            Object::SignalFd { mask } => Some(self.pending_now() & mask),
            Object::Epoll(_) => None,
        }
    }

    /// When waiting on `fd` should be looked at again without any other task acting: a
    /// timerfd's next expiry.
    pub(crate) fn fd_wake_at(&self, fd: i32) -> Option<u64> {
        match self.object(fd) {
            Ok(Object::TimerFd(t)) => t.next,
            _ => None,
        }
    }

    /// read(2) of an event object: 8 bytes (the counter, or the timer's expirations).
    pub(crate) fn object_read(
        &mut self,
        fd: i32,
        buf: &mut [u8],
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let now = self.monotonic_ns();
        if let Object::SignalFd { mask } = *self.object(fd)? {
            return self.signalfd_read(mask, buf, nonblock);
        }
        let o = self.object_mut(fd)?;
        if matches!(o, Object::Epoll(_)) {
            return Err(Errno::EINVAL);
        }
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let v = match o {
            Object::EventFd {
                count, semaphore, ..
            } => {
                if *count == 0 {
                    None
                } else if *semaphore {
                    *count -= 1;
                    Some(1)
                } else {
                    Some(std::mem::take(count))
                }
            }
            Object::TimerFd(t) => {
                t.tick(now);
                (t.pending > 0).then(|| std::mem::take(&mut t.pending))
            }
            Object::Epoll(_) | Object::SignalFd { .. } => None,
        };
        match v {
            Some(v) => {
                buf[..8].copy_from_slice(&v.to_le_bytes());
                Ok(8)
            }
            None if nonblock => Err(Errno::EAGAIN),
            None => Err(WOULD_BLOCK),
        }
    }

    /// write(2) of an event object: an eventfd adds the 8-byte value to its counter.
    pub(crate) fn object_write(
        &mut self,
        fd: i32,
        data: &[u8],
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let Object::EventFd { count, writes, .. } = self.object_mut(fd)? else {
            return Err(Errno::EINVAL);
        };
        let Some(v) = data.get(..8) else {
            return Err(Errno::EINVAL);
        };
        let v = u64::from_le_bytes(v.try_into().unwrap_or([0xff; 8]));
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        if count.checked_add(v).is_none_or(|s| s > u64::MAX - 1) {
            return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
        }
        *count += v;
        *writes += 1;
        Ok(8)
    }

    pub(crate) fn sys_eventfd2(&mut self, initval: u32, flags: u32) -> SysResult {
        if flags & !(EFD_SEMAPHORE | CLOEXEC | NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        let o = Object::EventFd {
            count: initval as u64,
            semaphore: flags & EFD_SEMAPHORE != 0,
            writes: 0,
        };
        self.install_object(o, flags & NONBLOCK != 0, flags & CLOEXEC != 0)
    }

    /// signalfd4(fd, mask, sizemask, flags): a new signalfd (fd -1) or a new mask for one.
    pub(crate) fn sys_signalfd4(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        mask: u64,
        size: u64,
        flags: u32,
    ) -> SysResult {
        if flags & !(CLOEXEC | NONBLOCK) != 0 || size != 8 {
            return Err(Errno::EINVAL);
        }
        // SIGKILL and SIGSTOP are never read through a signalfd
        let m = rd_u64(mem, mask)? & !((1 << 8) | (1 << 18));
        if fd == -1 {
            return self.install_object(
                Object::SignalFd { mask: m },
                flags & NONBLOCK != 0,
                flags & CLOEXEC != 0,
            );
        }
        match self.object_mut(fd) {
            Ok(Object::SignalFd { mask }) => {
                *mask = m;
                Ok(fd as u64)
            }
            Ok(_) => Err(Errno::EINVAL),
            Err(Errno::EINVAL) => Err(Errno::EINVAL),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn sys_timerfd_create(&mut self, clock: i32, flags: u32) -> SysResult {
        if flags & !(CLOEXEC | NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        if !matches!(clock, CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_BOOTTIME) {
            return Err(Errno::EINVAL);
        }
        let o = Object::TimerFd(Timer {
            clock,
            ..Timer::default()
        });
        self.install_object(o, flags & NONBLOCK != 0, flags & CLOEXEC != 0)
    }

    /// The time left and interval of a timer, as an itimerspec.
    fn timer_spec(&self, t: &Timer) -> [u8; 32] {
        let left = t
            .next
            .map_or(0, |d| d.saturating_sub(self.monotonic_ns()).max(1));
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&(t.interval / NS).to_le_bytes());
        b[8..16].copy_from_slice(&(t.interval % NS).to_le_bytes());
        b[16..24].copy_from_slice(&(left / NS).to_le_bytes());
        b[24..32].copy_from_slice(&(left % NS).to_le_bytes());
        b
    }

    pub(crate) fn sys_timerfd_settime(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        flags: i32,
        new: u64,
        old: u64,
    ) -> SysResult {
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(Errno::EINVAL);
        }
        let interval = read_timespec_ns(mem, new)?;
        let value = read_timespec_ns(mem, new + 16)?;
        let clock = match self.object(fd) {
            Ok(Object::TimerFd(t)) => t.clock,
            Ok(_) => return Err(Errno::EINVAL),
            Err(e) => return Err(e),
        };
        let now = self.monotonic_ns();
        let next = if value == 0 {
            None
        } else if flags & TFD_TIMER_ABSTIME != 0 {
            // the clock's absolute time, as a point on CLOCK_MONOTONIC
            let (s, n) = self.clock_now(clock)?;
            let clock_now = (s as u64).saturating_mul(NS).saturating_add(n as u64);
            Some(now.saturating_add(value.saturating_sub(clock_now)))
        } else {
            Some(now.saturating_add(value))
        };
        let spec = match self.object(fd)? {
            Object::TimerFd(t) => self.timer_spec(t),
            _ => return Err(Errno::EINVAL),
        };
        if old != 0 {
            wr(mem, old, &spec)?;
        }
        if let Object::TimerFd(t) = self.object_mut(fd)? {
            t.next = next;
            t.interval = interval;
            t.pending = 0;
        }
        Ok(0)
    }

    pub(crate) fn sys_timerfd_gettime(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        cur: u64,
    ) -> SysResult {
        let now = self.monotonic_ns();
        if let Object::TimerFd(t) = self.object_mut(fd)? {
            t.tick(now);
        }
        let spec = match self.object(fd)? {
            Object::TimerFd(t) => self.timer_spec(t),
            _ => return Err(Errno::EINVAL),
        };
        wr(mem, cur, &spec)?;
        Ok(0)
    }

    pub(crate) fn sys_epoll_create1(&mut self, flags: u32) -> SysResult {
        if flags & !CLOEXEC != 0 {
            return Err(Errno::EINVAL);
        }
        self.install_object(Object::Epoll(Epoll::default()), false, flags & CLOEXEC != 0)
    }

    pub(crate) fn sys_epoll_ctl(
        &mut self,
        mem: &mut AddressSpace,
        epfd: i32,
        op: i32,
        fd: i32,
        event: u64,
    ) -> SysResult {
        // regular files and directories are always ready: Linux refuses them
        if !self.files.pollable(fd)? {
            return Err(Errno::EPERM);
        }
        if !matches!(self.object(epfd)?, Object::Epoll(_)) || fd == epfd {
            return Err(Errno::EINVAL);
        }
        let (events, data) = if op == EPOLL_CTL_DEL {
            (0, 0)
        } else {
            let mut b = [0u8; EPOLL_EVENT_SIZE as usize];
            rd(mem, event, &mut b)?;
            let ev = u32::from_le_bytes(b[0..4].try_into().unwrap_or_default());
            let data = u64::from_le_bytes(b[8..16].try_into().unwrap_or_default());
            if ev & EPOLLEXCLUSIVE != 0 && (op == EPOLL_CTL_MOD || ev & EPOLLONESHOT != 0) {
                return Err(Errno::EINVAL);
            }
            (ev & !(EPOLLEXCLUSIVE | EPOLLWAKEUP), data)
        };
        let Object::Epoll(ep) = self.object_mut(epfd)? else {
            return Err(Errno::EINVAL);
        };
        let interest = Interest {
            events: events | EPOLLERR | EPOLLHUP,
            data,
            reported: 0,
            stamp: None,
            disabled: false,
        };
        match op {
            EPOLL_CTL_ADD => {
                if ep.interest.contains_key(&fd) {
                    return Err(Errno::EEXIST);
                }
                ep.interest.insert(fd, interest);
            }
            EPOLL_CTL_MOD => match ep.interest.get_mut(&fd) {
                Some(i) => *i = interest,
                None => return Err(Errno::ENOENT),
            },
            EPOLL_CTL_DEL => {
                if ep.interest.remove(&fd).is_none() {
                    return Err(Errno::ENOENT);
                }
            }
            _ => return Err(Errno::EINVAL),
        }
        Ok(0)
    }

    /// epoll_pwait and epoll_pwait2 (`timeout_ns` None: wait without end). The signal mask
    /// argument is checked but not applied: armada delivers signals at syscall boundaries.
    pub(crate) fn sys_epoll_pwait(
        &mut self,
        mem: &mut AddressSpace,
        epfd: i32,
        events: u64,
        maxevents: i32,
        timeout_ns: Option<u64>,
    ) -> SysResult {
        if maxevents <= 0 || maxevents > EP_MAX_EVENTS {
            return Err(Errno::EINVAL);
        }
        let fds: Vec<i32> = match self.object(epfd)? {
            Object::Epoll(ep) => ep.interest.keys().copied().collect(),
            _ => return Err(Errno::EINVAL),
        };
        crate::check_writable(mem, events, maxevents as u64 * EPOLL_EVENT_SIZE)?;
        let mut out: Vec<(u32, u64)> = Vec::new();
        let mut wake_at: Option<u64> = None;
        let mut host_fds = false;
        for fd in fds {
            if out.len() >= maxevents as usize {
                break;
            }
            let valid = self.files.file(fd).is_ok();
            let rev = if valid {
                self.poll_ready(fd, 0x7fff) as u16 as u32
            } else {
                0
            };
            let stamp = if valid { self.poll_stamp(fd) } else { None };
            if let Some(w) = self.fd_wake_at(fd) {
                wake_at = Some(wake_at.map_or(w, |x: u64| x.min(w)));
            }
            host_fds |= valid && self.files.file(fd).is_ok_and(|f| f.host_fd_pub().is_some());
            let Object::Epoll(ep) = self.object_mut(epfd)? else {
                return Err(Errno::EINVAL);
            };
            if !valid {
                // the fd was closed: its interest goes with it
                ep.interest.remove(&fd);
                continue;
            }
            let Some(i) = ep.interest.get_mut(&fd) else {
                continue;
            };
            if i.disabled {
                continue;
            }
            let mut hit = rev & i.events;
            if i.events & EPOLLET != 0 {
                // Linux reports an edge-triggered fd after each wakeup of it that finds it
                // ready: data drained and refilled between two waits is a new edge
                let woken = stamp.is_some() && stamp != i.stamp;
                let fresh = if woken { hit } else { hit & !i.reported };
                i.reported = hit;
                i.stamp = stamp;
                hit = fresh;
            }
            if hit != 0 {
                if i.events & EPOLLONESHOT != 0 {
                    i.disabled = true;
                }
                out.push((hit, i.data));
            }
        }
        if out.is_empty() && timeout_ns != Some(0) {
            let deadline = timeout_ns.map(|ns| self.deadline_after(ns));
            if !deadline.is_some_and(|d| self.deadline_passed(d)) {
                let wake_at = self.host_poll_wake(wake_at, host_fds);
                return Err(self.block_until(WaitKind::Retry, deadline, wake_at));
            }
        }
        for (k, (ev, data)) in out.iter().enumerate() {
            let mut b = [0u8; EPOLL_EVENT_SIZE as usize];
            b[0..4].copy_from_slice(&ev.to_le_bytes());
            b[8..16].copy_from_slice(&data.to_le_bytes());
            wr(mem, events + k as u64 * EPOLL_EVENT_SIZE, &b)?;
        }
        Ok(out.len() as u64)
    }

    /// epoll_pwait(epfd, events, maxevents, timeout_ms, sigmask, sigsetsize).
    pub(crate) fn sys_epoll_pwait_ms(&mut self, mem: &mut AddressSpace, a: [u64; 6]) -> SysResult {
        self.check_sigmask_arg(mem, a[4], a[5])?;
        let ms = a[3] as i32;
        let timeout = (ms >= 0).then(|| ms as u64 * 1_000_000);
        self.sys_epoll_pwait(mem, a[0] as i32, a[1], a[2] as i32, timeout)
    }

    /// epoll_pwait2(epfd, events, maxevents, const struct timespec *timeout, sigmask, size).
    pub(crate) fn sys_epoll_pwait2(&mut self, mem: &mut AddressSpace, a: [u64; 6]) -> SysResult {
        self.check_sigmask_arg(mem, a[4], a[5])?;
        let timeout = if a[3] == 0 {
            None
        } else {
            Some(read_timespec_ns(mem, a[3])?)
        };
        self.sys_epoll_pwait(mem, a[0] as i32, a[1], a[2] as i32, timeout)
    }

    fn check_sigmask_arg(&self, mem: &mut AddressSpace, set: u64, size: u64) -> Result<(), Errno> {
        if set != 0 {
            if size != 8 {
                return Err(Errno::EINVAL);
            }
            rd_u64(mem, set)?;
        }
        Ok(())
    }

    fn install_object(&mut self, o: Object, nonblock: bool, cloexec: bool) -> SysResult {
        let limit = self.nofile();
        self.files
            .install_event(o, nonblock, cloexec, limit)
            .map(|fd| fd as u64)
    }
}

/// Two counters in one readiness stamp (poll's and epoll's test for a change): a change of
/// either changes it, but for collisions no program can arrange.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    a.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ b
}
