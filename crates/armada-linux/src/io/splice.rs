//! Moving bytes between descriptors without the guest's buffers (Linux's fs/splice.c):
//! splice, tee and vmsplice, and the one transfer that sendfile and splice share.
//!
//! A transfer looks at its source's bytes first and takes them only once the destination
//! has them, so a full pipe or socket never loses what was read: an armada pipe (or a
//! stream socket's receive side) is read in place and drained by what was written; a file
//! armada or the host positions is read, then its position is given back what did not go
//! out. What is read from the remaining sources (the host's pipes and sockets, datagram
//! sockets, event objects) is capped at the room the destination has.
//!
//! Which calls take which descriptors follows Linux: splice needs a pipe on one side (else
//! EINVAL) and no offset for a pipe (ESPIPE); tee needs two pipes; sendfile's source must
//! read like a file, so a pipe, socket or event object as its source is EINVAL (Go's
//! `io.Copy` from a pipe into a TCP connection tries sendfile first and falls back on that
//! answer).

use crate::io::fd::o::*;
use crate::io::fd::Kind;
use crate::sched::WOULD_BLOCK;
use crate::{rd, rd_u64, wr_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const SPLICE_F_MOVE: u32 = 1;
const SPLICE_F_NONBLOCK: u32 = 2;
const SPLICE_F_MORE: u32 = 4;
const SPLICE_F_GIFT: u32 = 8;
const SPLICE_FLAGS: u32 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

/// Most bytes one call moves (a pipe's size; callers loop, as they must on Linux too).
const STEP: usize = 1 << 20;

/// Where a transfer's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum From {
    /// An armada pipe's or stream socket's buffer: read in place, drained by what was
    /// written (not drained at all for tee).
    Buffer(usize, bool),
    /// A file at this offset, given by the caller; the description's position stays.
    At(u64),
    /// A file at its description's position, moved on by what was written.
    Position,
    /// Anything else: read, then written (capped at the destination's room).
    Stream,
}

/// Where a transfer's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum To {
    /// An armada pipe or stream socket's send side.
    Buffer(usize),
    /// Written through `do_write`, at this offset when given.
    Write(Option<u64>),
}

/// What a transfer did: bytes moved, or the error and the fd it is about.
type Moved = Result<usize, (Errno, i32)>;

impl Process {
    /// The pipe behind `fd` when it is an armada pipe's end (`write`: which end it is).
    fn pipe_end(&self, fd: i32) -> Result<Option<(usize, bool)>, Errno> {
        Ok(match self.files.file(fd)?.kind {
            Kind::Pipe { id, write } => Some((id, write)),
            _ => None,
        })
    }

    /// How `fd` is read from by a transfer (`off`: the caller's offset, if any).
    fn source(&self, fd: i32, off: Option<u64>) -> Result<From, Errno> {
        let f = self.files.file(fd)?;
        if f.flags & O_PATH != 0 || f.flags & O_ACCMODE == O_WRONLY {
            return Err(Errno::EBADF);
        }
        let seekable = match &f.kind {
            Kind::Pipe { id, .. } => return Ok(From::Buffer(*id, true)),
            Kind::Socket { rx, rd: true, .. } => return Ok(From::Buffer(*rx, true)),
            Kind::Host { mode, .. } => {
                matches!(mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFBLK)
            }
            Kind::Mem(_) => true,
            // the captured stdin has a position but no offsets, as a pipe or terminal
            Kind::StdinBuf(_) if off.is_none() => return Ok(From::Position),
            _ => false,
        };
        Ok(match (off, seekable) {
            (Some(o), true) => From::At(o),
            (Some(_), false) => return Err(Errno::ESPIPE),
            (None, true) => From::Position,
            (None, false) => From::Stream,
        })
    }

    /// How `fd` is written to by a transfer.
    fn sink(&self, fd: i32, off: Option<u64>) -> Result<To, Errno> {
        let f = self.files.file(fd)?;
        if f.flags & O_PATH != 0 || f.flags & O_ACCMODE == O_RDONLY {
            return Err(Errno::EBADF);
        }
        match (&f.kind, off) {
            (Kind::Pipe { id, write: true }, None) => Ok(To::Buffer(*id)),
            (Kind::Socket { tx, wr: true, .. }, None) => Ok(To::Buffer(*tx)),
            (Kind::Pipe { .. } | Kind::Socket { .. }, Some(_)) => Err(Errno::ESPIPE),
            _ => Ok(To::Write(off)),
        }
    }

    /// Room in armada pipe `id` (EPIPE with no reader left; a block or EAGAIN when full).
    fn room(&self, id: usize, nonblock: bool) -> Result<usize, Errno> {
        let Some(Some(p)) = self.files.pipes.get(id) else {
            return Err(Errno::EBADF);
        };
        if p.readers == 0 {
            return Err(Errno::EPIPE);
        }
        match p.cap().saturating_sub(p.buf.len()) {
            0 if nonblock => Err(Errno::EAGAIN),
            0 => Err(WOULD_BLOCK),
            n => Ok(n),
        }
    }

    /// Moves up to `len` bytes from `in_fd` to `out_fd` once: the engine of splice, tee
    /// and sendfile. `nb_in`/`nb_out`: each side's reads or writes do not wait.
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &mut self,
        in_fd: i32,
        from: From,
        out_fd: i32,
        to: To,
        len: usize,
        nb_in: bool,
        nb_out: bool,
    ) -> Moved {
        let len = len.min(STEP);
        // a destination buffer's room first: nothing is read that could not go out
        let room = match to {
            To::Buffer(id) => self.room(id, nb_out).map_err(|e| (e, out_fd))?,
            To::Write(_) => usize::MAX,
        };
        let want = len.min(room);
        let data = match from {
            From::Buffer(id, _) => {
                let Some(Some(p)) = self.files.pipes.get(id) else {
                    return Err((Errno::EBADF, in_fd));
                };
                if p.buf.is_empty() {
                    if p.writers == 0 {
                        return Ok(0);
                    }
                    return Err((if nb_in { Errno::EAGAIN } else { WOULD_BLOCK }, in_fd));
                }
                p.buf.iter().take(want).copied().collect::<Vec<u8>>()
            }
            From::At(o) => self.read_some(in_fd, want, Some(o), nb_in)?,
            From::Position | From::Stream => self.read_some(in_fd, want, None, nb_in)?,
        };
        if data.is_empty() {
            return Ok(0);
        }
        let put = match to {
            To::Buffer(id) => self.pipe_put(id, &data, nb_out),
            To::Write(off) => self.do_write(out_fd, &data, off),
        };
        let n = match put {
            Ok(n) => n,
            Err(e) => {
                self.give_back(in_fd, from, data.len());
                return Err((e, out_fd));
            }
        };
        match from {
            From::Buffer(id, true) => {
                if let Some(Some(p)) = self.files.pipes.get_mut(id) {
                    p.buf.drain(..n);
                    p.took(n);
                }
            }
            From::Position => self.give_back(in_fd, from, data.len() - n),
            _ => {}
        }
        Ok(n)
    }

    /// One read of up to `want` bytes (a block, or EAGAIN with `nonblock`, when none wait).
    fn read_some(
        &mut self,
        fd: i32,
        want: usize,
        off: Option<u64>,
        nonblock: bool,
    ) -> Result<Vec<u8>, (Errno, i32)> {
        let mut buf = vec![0u8; want];
        match self.do_read(fd, &mut buf, off) {
            Ok(n) => {
                buf.truncate(n);
                Ok(buf)
            }
            Err(e) if e == WOULD_BLOCK && nonblock => Err((Errno::EAGAIN, fd)),
            Err(e) => Err((e, fd)),
        }
    }

    /// Moves a positioned source's position back over `n` bytes it read but did not send.
    fn give_back(&mut self, fd: i32, from: From, n: usize) {
        if from != From::Position || n == 0 {
            return;
        }
        if let Ok(f) = self.files.file_mut(fd) {
            match &f.kind {
                Kind::Host { fd, .. } => {
                    // SAFETY: a plain lseek of the description's own host fd.
                    unsafe { libc::lseek(fd.raw(), -(n as i64), libc::SEEK_CUR) };
                }
                _ => f.pos = f.pos.saturating_sub(n as u64),
            }
        }
    }

    /// The result of a transfer as the guest sees it (blocks and SIGPIPE on their fd).
    fn moved(&mut self, r: Moved) -> SysResult {
        r.map(|n| n as u64).map_err(|(e, fd)| self.io_error(e, fd))
    }

    /// Reads a guest's `loff_t *` (None for NULL; EINVAL for a negative offset).
    fn offset_arg(mem: &mut AddressSpace, p: u64) -> Result<Option<u64>, Errno> {
        if p == 0 {
            return Ok(None);
        }
        let o = rd_u64(mem, p)?;
        if (o as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        Ok(Some(o))
    }

    fn nonblocking(&self, fd: i32) -> bool {
        self.files.file(fd).is_ok_and(|f| f.flags & O_NONBLOCK != 0)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_splice(
        &mut self,
        mem: &mut AddressSpace,
        fd_in: i32,
        off_in: u64,
        fd_out: i32,
        off_out: u64,
        len: u64,
        flags: u32,
    ) -> SysResult {
        if flags & !SPLICE_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let pin = self.pipe_end(fd_in)?;
        let pout = self.pipe_end(fd_out)?;
        if pin.is_none() && pout.is_none() {
            return Err(Errno::EINVAL);
        }
        if let (Some((a, _)), Some((b, _))) = (pin, pout) {
            if a == b {
                return Err(Errno::EINVAL);
            }
        }
        if (pin.is_some() && off_in != 0) || (pout.is_some() && off_out != 0) {
            return Err(Errno::ESPIPE);
        }
        let oin = Self::offset_arg(mem, off_in)?;
        let oout = Self::offset_arg(mem, off_out)?;
        let from = self.source(fd_in, oin)?;
        let to = self.sink(fd_out, oout)?;
        if len == 0 {
            return Ok(0);
        }
        let nb = flags & SPLICE_F_NONBLOCK != 0;
        let nb_in = nb || self.nonblocking(fd_in);
        let nb_out = nb || self.nonblocking(fd_out);
        let r = self.transfer(fd_in, from, fd_out, to, len as usize, nb_in, nb_out);
        if let Ok(n) = r {
            if let Some(o) = oin {
                wr_u64(mem, off_in, o + n as u64)?;
            }
            if let Some(o) = oout {
                wr_u64(mem, off_out, o + n as u64)?;
            }
        }
        self.moved(r)
    }

    pub(crate) fn sys_tee(&mut self, fd_in: i32, fd_out: i32, len: u64, flags: u32) -> SysResult {
        if flags & !SPLICE_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let (Some((a, false)), Some((b, true))) = (self.pipe_end(fd_in)?, self.pipe_end(fd_out)?)
        else {
            return Err(Errno::EINVAL);
        };
        if a == b {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let nb = flags & SPLICE_F_NONBLOCK != 0;
        let nb_in = nb || self.nonblocking(fd_in);
        let nb_out = nb || self.nonblocking(fd_out);
        let from = From::Buffer(a, false);
        let r = self.transfer(
            fd_in,
            from,
            fd_out,
            To::Buffer(b),
            len as usize,
            nb_in,
            nb_out,
        );
        self.moved(r)
    }

    /// vmsplice: the guest's buffers into a pipe's write end, or out of its read end.
    pub(crate) fn sys_vmsplice(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        iov: u64,
        cnt: u64,
        flags: u32,
    ) -> SysResult {
        if flags & !SPLICE_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let Some((id, write)) = self.pipe_end(fd)? else {
            return Err(Errno::EBADF);
        };
        let f = self.files.file(fd)?;
        if f.flags & O_ACCMODE != if write { O_WRONLY } else { O_RDONLY } {
            return Err(Errno::EBADF);
        }
        let nonblock = flags & SPLICE_F_NONBLOCK != 0 || f.flags & O_NONBLOCK != 0;
        let iovs = self.read_iovecs(mem, iov, cnt)?;
        let total = (iovs.iter().map(|v| v.1).sum::<u64>() as usize).min(STEP);
        if total == 0 {
            return Ok(0);
        }
        if write {
            let mut data = Vec::with_capacity(total);
            for &(base, len) in &iovs {
                let k = (len as usize).min(total - data.len());
                let at = data.len();
                data.resize(at + k, 0);
                rd(mem, base, &mut data[at..])?;
            }
            let r = self.pipe_put(id, &data, nonblock);
            return r.map(|n| n as u64).map_err(|e| self.io_error(e, fd));
        }
        let mut tmp = vec![0u8; total];
        let n = match self.pipe_take(id, &mut tmp, nonblock) {
            Ok(n) => n,
            Err(e) => return Err(self.io_error(e, fd)),
        };
        crate::io::rw::scatter(mem, &iovs, &tmp[..n])?;
        Ok(n as u64)
    }

    /// sendfile: from a file to any descriptor, once (callers loop).
    pub(crate) fn sys_sendfile(
        &mut self,
        mem: &mut AddressSpace,
        out_fd: i32,
        in_fd: i32,
        offp: u64,
        count: u64,
    ) -> SysResult {
        let off = Self::offset_arg(mem, offp)?;
        // (the source must read like a file: Linux refuses pipes, sockets and event objects)
        let refused = match &self.files.file(in_fd)?.kind {
            Kind::Pipe { .. } | Kind::Socket { .. } | Kind::NetSock | Kind::Event(_) => true,
            Kind::Host { mode, .. } => {
                matches!(mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK)
            }
            _ => false,
        };
        if refused {
            return Err(Errno::EINVAL);
        }
        let from = self.source(in_fd, off)?;
        let to = self.sink(out_fd, None)?;
        if count == 0 {
            return Ok(0);
        }
        let nb_in = self.nonblocking(in_fd);
        let nb_out = self.nonblocking(out_fd);
        let r = self.transfer(in_fd, from, out_fd, to, count as usize, nb_in, nb_out);
        if let (Ok(n), Some(o)) = (&r, off) {
            wr_u64(mem, offp, o + *n as u64)?;
        }
        self.moved(r)
    }
}
