//! Reading and writing: one read or write of every kind of fd (host files, armada's pipes,
//! captured stdio, virtual files, event objects), guest buffers moved in host-sized steps,
//! and the read/write family: read, write, pread, pwrite, readv, writev and their
//! offset forms, copy_file_range, and the reads behind file-backed mmap (sendfile is with
//! splice, in `splice`).

use crate::io::fd::o::*;
use crate::io::fd::*;
use crate::sched::WOULD_BLOCK;
use crate::{check_readable, check_writable, rd, rd_u64, wr, wr_u64};
use crate::{Errno, Process, SysResult};
use armada_machine::memory::{AddressSpace, PAGE_SHIFT, PAGE_SIZE};

/// Runs `io(base, len, offset)` over the (base, len) buffers of a readv/writev family call
/// until one comes up short, as the kernel does: the total transferred, or the first
/// buffer's error when nothing was transferred. `off` is the file offset of the p-forms.
pub(crate) fn each_iov(
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
/// Writes `data` over the guest buffers `iovs` in order (readv's scatter).
pub(crate) fn scatter(
    mem: &mut AddressSpace,
    iovs: &[(u64, u64)],
    data: &[u8],
) -> Result<(), Errno> {
    let mut done = 0usize;
    for &(base, len) in iovs {
        if done == data.len() {
            break;
        }
        let k = (len as usize).min(data.len() - done);
        wr(mem, base, &data[done..done + k])?;
        done += k;
    }
    Ok(())
}

/// Host buffer used per step of a large read/write.
pub(crate) const CHUNK: usize = 1 << 20;

impl Process {
    /// One read from `fd` into a host buffer (may be short).
    pub(crate) fn do_read(
        &mut self,
        fd: i32,
        buf: &mut [u8],
        off: Option<u64>,
    ) -> Result<usize, Errno> {
        // a read of the host's pipe or terminal must not hold the host thread while other
        // tasks of the lane could run: it waits as a task instead (see `host_poll_wake`)
        let others = !self.cfg.deterministic && self.others_may_run();
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
                let t = *mode & libc::S_IFMT;
                // (no file type: an anonymous inode, such as an inotify instance)
                let waits = matches!(t, libc::S_IFIFO | libc::S_IFCHR | libc::S_IFSOCK | 0);
                if others && waits && off.is_none() && !nonblock && !buf.is_empty() {
                    let mut p = libc::pollfd {
                        fd: fd.raw(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one pollfd.
                    if unsafe { libc::poll(&mut p, 1, 0) } == 0 {
                        return Err(WOULD_BLOCK);
                    }
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
                self.pipe_take(id, buf, nonblock)
            }
            Kind::Socket { rx, rd, .. } => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                if !*rd {
                    return Ok(0);
                }
                let id = *rx;
                self.pipe_take(id, buf, nonblock)
            }
            // a datagram socket's next message; a stream not connected: ENOTCONN
            Kind::NetSock => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                let idx = self.files.entry(fd)?.file;
                self.dgram_recv(idx, buf, nonblock, false).map(|r| r.0)
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
        let others = !self.cfg.deterministic && self.others_may_run();
        let f = self.files.file_mut(fd)?;
        if f.flags & O_PATH != 0 || f.flags & O_ACCMODE == O_RDONLY {
            return Err(Errno::EBADF);
        }
        let nonblock = f.flags & O_NONBLOCK != 0;
        if let Kind::Event(_) = &f.kind {
            return self.object_write(fd, data, nonblock);
        }
        match &mut f.kind {
            Kind::Host { fd, mode } => {
                if *mode & libc::S_IFMT == libc::S_IFSOCK && others && !nonblock && off.is_none() {
                    // one of the host's sockets (--net host): a full one must not hold the
                    // host thread while the task that would drain it cannot run
                    // SAFETY: data is valid for data.len() bytes.
                    let r = unsafe {
                        libc::send(
                            fd.raw(),
                            data.as_ptr().cast(),
                            data.len(),
                            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                        )
                    };
                    return match cvt_size(r) {
                        Err(Errno::EAGAIN) => Err(WOULD_BLOCK),
                        r => r,
                    };
                }
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
                let is_err = *is_err;
                let dropped = self.files.dropped[is_err as usize] as usize;
                let buf = if is_err {
                    &mut self.files.err
                } else {
                    &mut self.files.out
                };
                let room = OUTPUT_CAP.saturating_sub(buf.len().saturating_add(dropped));
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
                self.pipe_put(id, data, nonblock)
            }
            Kind::Socket { rx, tx, wr, .. } => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                if !*wr {
                    return Err(Errno::EPIPE);
                }
                let (rx, tx) = (*rx, *tx);
                self.stamp_send_creds(rx, tx);
                self.pipe_put(tx, data, nonblock)
            }
            Kind::StdinBuf(_) | Kind::Mem(_) | Kind::Event(_) => Err(Errno::EBADF),
            Kind::NetSock => {
                if off.is_some() {
                    return Err(Errno::ESPIPE);
                }
                let idx = self.files.entry(fd)?.file;
                self.dgram_send(idx, data, None, nonblock)
            }
            Kind::Null | Kind::Zero | Kind::Random => Ok(data.len()),
        }
    }

    /// Reads what pipe `id` holds (0 at end of file: no writer left).
    pub(crate) fn pipe_take(
        &mut self,
        id: usize,
        buf: &mut [u8],
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let peek = self.recv_peek;
        let Some(Some(p)) = self.files.pipes.get_mut(id) else {
            return Err(Errno::EBADF);
        };
        // an empty read takes nothing from a stream, and the next message of a datagram
        // socket (recvmsg with no buffer)
        if buf.is_empty() && p.bounds.is_none() {
            return Ok(0);
        }
        if !p.has_data() {
            if p.writers == 0 {
                if std::mem::take(&mut p.reset) {
                    return Err(Errno(libc::ECONNRESET));
                }
                return Ok(0);
            }
            return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
        }
        let (n, drop) = match p.bounds.as_ref().and_then(|b| b.front()) {
            Some(&len) => (len.min(buf.len()), len),
            None => {
                let n = p.stream_run(p.buf.len().min(buf.len()));
                (n, n)
            }
        };
        for (d, s) in buf[..n].iter_mut().zip(p.buf.iter()) {
            *d = *s;
        }
        // MSG_PEEK (recv's): the bytes stay for the next read
        if !peek {
            p.buf.drain(..drop);
            if let Some(b) = p.bounds.as_mut() {
                b.pop_front();
            }
            p.took(drop);
        }
        Ok(n)
    }

    /// The credentials the bytes a socket end writes into pipe `tx` carry (it reads `rx`):
    /// those sendmsg passed with SCM_CREDENTIALS, else the sender's own (pid, real user and
    /// group) when either end has SO_PASSCRED, else none.
    fn stamp_send_creds(&mut self, rx: usize, tx: usize) {
        let passcred = |id: usize| matches!(self.files.pipes.get(id), Some(Some(p)) if p.passcred);
        let c = self.send_creds.or_else(|| {
            (passcred(rx) || passcred(tx)).then_some(Ucred {
                pid: self.pid,
                uid: self.creds.uid.real,
                gid: self.creds.gid.real,
            })
        });
        if let Some(Some(p)) = self.files.pipes.get_mut(tx) {
            p.stamp_creds(c);
        }
    }

    /// Writes into pipe `id` what fits (EPIPE when no reader is left).
    pub(crate) fn pipe_put(
        &mut self,
        id: usize,
        data: &[u8],
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let Some(Some(p)) = self.files.pipes.get_mut(id) else {
            return Err(Errno::EBADF);
        };
        if p.readers == 0 {
            if p.tcp && !std::mem::replace(&mut p.reset_coming, true) {
                return Ok(data.len());
            }
            return Err(Errno::EPIPE);
        }
        let cap = p.cap();
        let room = cap.saturating_sub(p.buf.len());
        if let Some(b) = p.bounds.as_mut() {
            // a message goes in whole or not at all
            if data.len() > cap {
                return Err(Errno(libc::EMSGSIZE));
            }
            if room < data.len() {
                return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
            }
            b.push_back(data.len());
            p.buf.extend(data);
            p.written += data.len() as u64;
            return Ok(data.len());
        }
        let atomic = data.len() <= crate::io::fd::PIPE_BUF;
        if (room == 0 || atomic && room < data.len()) && !data.is_empty() {
            return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
        }
        let n = room.min(data.len());
        p.buf.extend(&data[..n]);
        p.written += n as u64;
        Ok(n)
    }

    /// Turns internal I/O errors into what the guest sees (SIGPIPE, a block).
    pub(crate) fn io_error(&mut self, e: Errno, fd: i32) -> Errno {
        if e == WOULD_BLOCK {
            let host = matches!(
                self.files.file(fd).map(|f| &f.kind),
                Ok(crate::io::fd::Kind::Host { .. })
            );
            let wake_at = self.host_poll_wake(self.fd_wake_at(fd), host);
            return self.block_until(crate::sched::WaitKind::Retry, None, wake_at);
        }
        if e == Errno::EPIPE && !self.no_sigpipe {
            self.raise(crate::signal::SIGPIPE);
        }
        e
    }

    pub(crate) fn fills(&self, fd: i32) -> bool {
        self.files.file(fd).map(|f| f.fills()).unwrap_or(false)
    }

    /// Reads up to `len` bytes from `fd` into guest memory at `addr`.
    pub(crate) fn read_to_guest(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        off: Option<u64>,
    ) -> Result<u64, Errno> {
        // (an in-memory file gives at most what it has left: the buffer is made no larger,
        // since zeroing 1 MiB for a read of a short fuzz input was 7% of a short target's
        // executions)
        let left = self
            .files
            .file(fd)?
            .in_memory_left(off)
            .unwrap_or(usize::MAX);
        if len == 0 {
            return Ok(0);
        }
        check_writable(mem, addr, len)?;
        let fills = self.fills(fd);
        let mut tmp = vec![0u8; (len as usize).min(CHUNK).min(left)];
        let mut total = 0u64;
        while total < len {
            let want = ((len - total) as usize).min(tmp.len());
            match self.do_read(fd, &mut tmp[..want], off.map(|o| o + total)) {
                Ok(n) => {
                    wr(mem, addr + total, &tmp[..n])?;
                    total += n as u64;
                    if n < want || n == 0 || !fills {
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
    pub(crate) fn write_from_guest(
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
        // a blocking write to the run's own pipe or socket goes in whole: what does not fit
        // waits for room, and the write goes on from there when it runs again
        let key = (fd, addr, len);
        let whole = off.is_none() && self.waits_for_room(fd);
        let mut total = self.resume_write(key, whole);
        let before = total;
        let mut tmp = vec![0u8; (len as usize).min(CHUNK)];
        while total < len {
            let n = ((len - total) as usize).min(CHUNK);
            rd(mem, addr + total, &mut tmp[..n])?;
            let full = match self.do_write(fd, &tmp[..n], off.map(|o| o + total)) {
                Ok(w) => {
                    total += w as u64;
                    w < n
                }
                Err(e) if e == WOULD_BLOCK && total > 0 => true,
                Err(e) if total > 0 => {
                    // what went in is the result; a reader gone still raises SIGPIPE
                    if e == Errno::EPIPE {
                        self.io_error(e, fd);
                    }
                    break;
                }
                Err(e) => return Err(self.io_error(e, fd)),
            };
            if full {
                if whole && total < len {
                    return Err(self.wait_for_room(key, total, before));
                }
                break;
            }
        }
        Ok(total)
    }

    /// How much of the write `key` (fd and buffers) the calling thread already put in
    /// before it waited for room (0: none, or `whole` is false).
    fn resume_write(&mut self, key: (i32, u64, u64), whole: bool) -> u64 {
        match self.thread.write_done.take() {
            Some((k, done)) if k == key && whole => done,
            _ => 0,
        }
    }

    /// The write `key` has put `total` bytes in (`before` of them before this run) and
    /// waits for room for the rest.
    fn wait_for_room(&mut self, key: (i32, u64, u64), total: u64, before: u64) -> Errno {
        self.thread.write_done = Some((key, total));
        // the bytes that went in may be what a reader waits for
        self.events.stirred |= total > before;
        self.block(crate::sched::WaitKind::Retry, None)
    }

    /// Whether a write to `fd` that finds no room waits for it: a blocking pipe or
    /// stream socket of the run's own.
    fn waits_for_room(&self, fd: i32) -> bool {
        self.files.file(fd).is_ok_and(|f| {
            f.flags & O_NONBLOCK == 0 && matches!(f.kind, Kind::Pipe { .. } | Kind::Socket { .. })
        })
    }

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
    pub(crate) fn pos_check(&self, fd: i32) -> Result<(), Errno> {
        match &self.files.file(fd)?.kind {
            Kind::Pipe { .. } | Kind::Socket { .. } | Kind::StdinBuf(_) | Kind::Out(_) => {
                Err(Errno::ESPIPE)
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn read_iovecs(
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
            scatter(mem, &iovs, &tmp[..n])?;
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
            // in whole, as write() (see write_from_guest)
            let key = (fd, iov, cnt);
            let whole = off.is_none() && self.waits_for_room(fd);
            let done = self.resume_write(key, whole);
            return match self.do_write(fd, &data[done as usize..], off) {
                Ok(n) if whole && done + (n as u64) < sum => {
                    Err(self.wait_for_room(key, done + n as u64, done))
                }
                Ok(n) => Ok(done + n as u64),
                Err(e) if e == WOULD_BLOCK && done > 0 => Err(self.wait_for_room(key, done, done)),
                Err(e) if done > 0 => {
                    if e == Errno::EPIPE {
                        self.io_error(e, fd);
                    }
                    Ok(done)
                }
                Err(e) => Err(self.io_error(e, fd)),
            };
        }
        each_iov(&iovs, off, |base, len, at| {
            self.write_from_guest(mem, fd, base, len, at)
        })
    }

    /// preadv2/pwritev2: readv/writev at `off` (-1: the file's position) with RWF_* flags.
    /// The durability hints (RWF_HIPRI, RWF_DSYNC, RWF_SYNC) change nothing a guest can
    /// see here; RWF_NOWAIT and RWF_APPEND are EOPNOTSUPP, which Linux also answers for
    /// files that cannot honour them, and callers fall back.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_rw_v2(
        &mut self,
        nr: u64,
        mem: &mut AddressSpace,
        fd: i32,
        iov: u64,
        cnt: u64,
        off: u64,
        flags: u32,
    ) -> SysResult {
        const RWF_HIPRI: u32 = 1;
        const RWF_DSYNC: u32 = 2;
        const RWF_SYNC: u32 = 4;
        const RWF_NOWAIT: u32 = 8;
        const RWF_APPEND: u32 = 16;
        if flags & !(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        self.files.file(fd)?;
        if flags & (RWF_NOWAIT | RWF_APPEND) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let off = (off as i64 != -1).then_some(off);
        if nr == crate::nr::PREADV2 {
            self.sys_readv(mem, fd, iov, cnt, off)
        } else {
            self.sys_writev(mem, fd, iov, cnt, off)
        }
    }

    /// copy_file_range between two host files (the host copies; offsets from and back to
    /// guest memory when given). Anything else is EINVAL, as Linux says for non-files.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_copy_file_range(
        &mut self,
        mem: &mut AddressSpace,
        fd_in: i32,
        off_in: u64,
        fd_out: i32,
        off_out: u64,
        len: u64,
        flags: u32,
    ) -> SysResult {
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let hin = self.files.file(fd_in)?.host_fd().ok_or(Errno::EINVAL)?;
        let hout = self.files.file(fd_out)?.host_fd().ok_or(Errno::EINVAL)?;
        let mut oin = if off_in != 0 {
            Some(rd_u64(mem, off_in)? as i64)
        } else {
            None
        };
        let mut oout = if off_out != 0 {
            Some(rd_u64(mem, off_out)? as i64)
        } else {
            None
        };
        let p = |o: &mut Option<i64>| o.as_mut().map_or(std::ptr::null_mut(), |v| v as *mut i64);
        // SAFETY: the offset pointers are null or point at the locals above.
        let r = unsafe {
            libc::copy_file_range(
                hin,
                p(&mut oin),
                hout,
                p(&mut oout),
                len.min(MAX_RW) as usize,
                0,
            )
        };
        let n = cvt_size(r)?;
        if let Some(v) = oin {
            wr_u64(mem, off_in, v as u64)?;
        }
        if let Some(v) = oout {
            wr_u64(mem, off_out, v as u64)?;
        }
        Ok(n as u64)
    }

    /// The pages of a file mapping at `addr` (mapped already), from the file at `off`: for
    /// a private mapping of a host file, the pages every mapper of that file shares (see
    /// `filepages`; a write copies the page), else bytes read into the mapping's own.
    pub(crate) fn map_file(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        off: u64,
        private: bool,
    ) -> Result<(), Errno> {
        let st = match self.files.file(fd) {
            Ok(f) if private && crate::mm::filepages::enabled() => f.host_stat(),
            _ => None,
        };
        let Some(st) = st.filter(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG) else {
            return self.fill_from_file(mem, fd, addr, len, off);
        };
        let key = crate::mm::filepages::FileKey::of(&st);
        let size = st.st_size.max(0) as u64;
        let first = off >> PAGE_SHIFT;
        // pages wholly past the end of the file stay unfilled (sys_mmap makes them SIGBUS)
        let pages = (len >> PAGE_SHIFT).min(size.saturating_sub(off).div_ceil(PAGE_SIZE));
        for k in 0..pages {
            let page = crate::mm::filepages::page(key, first + k, |buf| {
                let pos = (first + k) << PAGE_SHIFT;
                let mut done = 0;
                while done < buf.len() {
                    let n = self.do_read(fd, &mut buf[done..], Some(pos + done as u64))?;
                    if n == 0 {
                        break;
                    }
                    done += n;
                }
                Ok(())
            })?;
            mem.share_page((addr >> PAGE_SHIFT) + k, page);
        }
        Ok(())
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
}
