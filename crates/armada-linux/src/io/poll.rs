//! Readiness: poll(2) of every kind of fd, ppoll and pselect6. A wait with nothing ready
//! blocks the task (`WaitKind::Retry`) until another task acts, its timeout passes or a
//! timerfd it polls expires; the host's own fds are waited for on the host only while a
//! single-threaded process runs in real time.

use crate::io::events::mix;
use crate::io::fd::Kind;
use crate::{check_writable, rd, rd_u64, wr, wr_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

impl Process {
    /// Readiness of `fd` for poll `events` right now (POLLNVAL for a bad fd).
    pub(crate) fn poll_ready(&self, fd: i32, events: i16) -> i16 {
        const POLLIN: i16 = 1;
        const POLLOUT: i16 = 4;
        const POLLERR: i16 = 8;
        const POLLHUP: i16 = 0x10;
        const POLLNVAL: i16 = 0x20;
        const POLLRDHUP: i16 = 0x2000;
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
                    (if p.has_data() { POLLIN } else { 0 })
                        | (if p.writers == 0 { POLLHUP } else { 0 })
                }
                Some(Some(p)) => {
                    if p.readers == 0 {
                        // writable (a write fails at once with EPIPE), and an error
                        POLLOUT | POLLERR
                    } else if p.buf.len() < p.cap() {
                        POLLOUT
                    } else {
                        0
                    }
                }
                _ => POLLNVAL,
            },
            Kind::Socket { rx, tx, rd, wr } => {
                let pipes = &self.files.pipes;
                let mut r = 0;
                match pipes.get(*rx) {
                    Some(Some(p)) if *rd => {
                        if p.has_data() {
                            r |= POLLIN;
                        }
                        if p.writers == 0 {
                            r |= POLLIN | POLLRDHUP;
                        }
                    }
                    _ => r |= POLLIN | POLLRDHUP,
                }
                let mut peer_reads = true;
                match pipes.get(*tx) {
                    Some(Some(p)) if *wr && p.readers > 0 => {
                        if p.buf.len() < p.cap() {
                            r |= POLLOUT;
                        }
                    }
                    Some(Some(p)) => {
                        peer_reads = p.readers > 0;
                        r |= POLLOUT;
                    }
                    _ => r |= POLLOUT,
                }
                // Hung up when both directions are over. TCP ends its sending side only by
                // its own shutdown or close; an AF_UNIX socket's also ends when the peer
                // stops reading (its close): Linux's unix_poll and tcp_poll.
                let unix = self
                    .files
                    .entry(fd)
                    .ok()
                    .and_then(|e| self.socket_family(e.file))
                    .is_none_or(|family| family == libc::AF_UNIX);
                let send_over = !*wr || (unix && !peer_reads);
                if send_over && (!*rd || r & POLLRDHUP != 0) {
                    r |= POLLHUP;
                }
                r
            }
            Kind::NetSock => match self.files.entry(fd) {
                Ok(e) => self.net_poll(e.file),
                Err(_) => POLLNVAL,
            },
            Kind::Out(_) => POLLOUT,
            Kind::StdinBuf(_) => POLLIN,
            Kind::Event(o) => self.object_poll(o),
            _ => POLLIN | POLLOUT,
        };
        r & (want | POLLNVAL)
    }

    /// A number that moves whenever something happens to `fd` that wakes its waiters on
    /// Linux: data written to what it reads, room made in what it writes, an end closed, a
    /// connection queued. Edge-triggered epoll reports an fd again after each move (None:
    /// the host's fds and the rest, whose readiness changes alone are watched).
    pub(crate) fn poll_stamp(&self, fd: i32) -> Option<u64> {
        let f = self.files.file(fd).ok()?;
        let pipe = |id: usize| match self.files.pipes.get(id) {
            Some(Some(p)) => mix(
                mix(p.written, p.taken),
                (p.readers as u64) << 32 | p.writers as u64,
            ),
            _ => u64::MAX,
        };
        match &f.kind {
            Kind::Pipe { id, .. } => Some(pipe(*id)),
            Kind::Socket { rx, tx, .. } => Some(mix(pipe(*rx), pipe(*tx))),
            Kind::NetSock => {
                let e = self.files.entry(fd).ok()?;
                let (queue, arrivals) = self.socket_wakeups(e.file)?;
                Some(queue.map_or(arrivals, pipe))
            }
            Kind::Event(o) => self.object_stamp(o),
            _ => None,
        }
    }

    pub(crate) fn wait_host(&mut self, hostfds: &mut [libc::pollfd], timeout_ns: Option<u64>) {
        if hostfds.is_empty() || self.cfg.deterministic {
            return;
        }
        let ms = timeout_ns.map_or(-1, |ns| (ns / 1_000_000).min(i32::MAX as u64) as i32);
        // SAFETY: hostfds is a valid slice of pollfd.
        unsafe { libc::poll(hostfds.as_mut_ptr(), hostfds.len() as libc::nfds_t, ms) };
    }

    /// How often a task that waits on host fds among other tasks looks at them again: the
    /// scheduler cannot block the host thread on them while other tasks may run.
    const HOST_POLL_NS: u64 = 10_000_000;

    /// `wake_at`, brought forward to the next look at the host's fds when the wait includes
    /// some. Under `--deterministic` the host's fds are never waited for (what is not ready
    /// now counts as never ready), as in a single-threaded wait.
    pub(crate) fn host_poll_wake(&self, wake_at: Option<u64>, host_fds: bool) -> Option<u64> {
        if !host_fds || self.cfg.deterministic {
            return wake_at;
        }
        let next = self.monotonic_ns().saturating_add(Self::HOST_POLL_NS);
        Some(wake_at.map_or(next, |w| w.min(next)))
    }

    /// The earliest time one of `fds` (a timerfd) becomes ready by itself.
    pub(crate) fn fds_wake_at(&self, fds: impl Iterator<Item = i32>) -> Option<u64> {
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
            Some(crate::read_timespec_ns(mem, tmo)?)
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
            if hostfds.is_empty() || self.cfg.deterministic || self.others_may_run() {
                // wait for another task (or the deadline): the poll runs again then
                let deadline = timeout.map(|ns| self.deadline_after(ns));
                if deadline.is_some_and(|d| self.deadline_passed(d)) {
                    return Ok(0);
                }
                let wake_at = self.fds_wake_at(list.iter().map(|&(fd, _)| fd));
                let wake_at = self.host_poll_wake(wake_at, !hostfds.is_empty());
                return Err(self.block_until(crate::sched::WaitKind::Retry, deadline, wake_at));
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
            Some(crate::read_timespec_ns(mem, tmo)?)
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
            if hostfds.is_empty() || self.cfg.deterministic || self.others_may_run() {
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
                let wake_at = self.host_poll_wake(wake_at, !hostfds.is_empty());
                return Err(self.block_until(crate::sched::WaitKind::Retry, deadline, wake_at));
            }
            self.wait_host(&mut hostfds, timeout);
        }
        Ok(0)
    }
}
