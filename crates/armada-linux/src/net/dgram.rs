//! Datagram sockets on the run's own network (see `net`): UDP over IPv4 and IPv6 loopback
//! and AF_UNIX SOCK_DGRAM with path or abstract names.
//!
//! A datagram socket stays a `NetSock` description all its life. Its receive queue is one
//! of armada's pipes with message boundaries (what socketpair's datagram ends use), with
//! each message's sender kept beside it. `sendto` (or a send on a connected socket) finds
//! the socket bound to the destination and queues the message there whole. As on Linux, a
//! UDP datagram to a port nobody has bound, or to a full queue, is dropped silently; an
//! AF_UNIX one is refused (ECONNREFUSED), or waits for room.

use crate::io::fd::Kind;
use crate::net::addr::{Addr, AF_UNIX, MSG_DONTWAIT};
use crate::sched::WOULD_BLOCK;
use crate::{check_writable, rd, rd_u32, rd_u64, wr, wr_u32, wr_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const MSG_PEEK: i32 = 2;
const MSG_TRUNC: i32 = 0x20;
/// Largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
const UDP_MAX: usize = 65507;
/// Most bytes one sendmsg gathers or recvmsg scatters.
const DGRAM_MAX: usize = 1 << 16;

impl Process {
    /// The description behind `fd` when it is a datagram socket.
    fn dgram_idx(&self, fd: i32) -> Option<usize> {
        let idx = self.files.entry(fd).ok()?.file;
        match self.files.file(fd).ok()?.kind {
            Kind::NetSock => self
                .files
                .net()
                .socks
                .get(&idx)
                .and_then(|s| s.dgram.as_ref())
                .map(|_| idx),
            _ => None,
        }
    }

    /// The length of the next datagram waiting on socket `idx` (None: not a datagram
    /// socket, or none waits): FIONREAD's answer.
    pub(crate) fn dgram_next_len(&self, idx: usize) -> Option<usize> {
        let d = self.files.net().socks.get(&idx)?.dgram.as_ref()?;
        let p = self.files.pipes.get(d.pipe)?.as_ref()?;
        p.bounds.as_ref()?.front().copied()
    }

    /// connect on a datagram socket: its default destination (and the only sender it
    /// receives from); AF_UNSPEC dissolves it.
    pub(crate) fn dgram_connect(
        &mut self,
        mem: &mut AddressSpace,
        idx: usize,
        addr: u64,
        len: u64,
    ) -> SysResult {
        let mut fam = [0u8; 2];
        rd(mem, addr, &mut fam)?;
        if u16::from_le_bytes(fam) == 0 {
            if let Some(s) = self.files.net_mut().socks.get_mut(&idx) {
                s.peer = None;
            }
            return Ok(0);
        }
        let to = self.dest_addr(mem, idx, addr, len)?;
        if !to.is_local() {
            return Err(Errno(libc::ENETUNREACH));
        }
        let (family, protocol) = self
            .files
            .net()
            .socks
            .get(&idx)
            .map_or((0, 0), |s| (s.family, s.protocol));
        let to = to.or_loopback(family);
        if family == AF_UNIX {
            // the peer must exist
            self.find_bound(family, crate::net::addr::SOCK_DGRAM, protocol, &to, false)?;
        }
        self.autobind(idx)?;
        if let Some(s) = self.files.net_mut().socks.get_mut(&idx) {
            // connected, the socket's own address is the route's source
            if let Some(l) = s.local.clone() {
                s.local = Some(l.seen_by(family));
            }
            s.peer = Some(to);
        }
        Ok(0)
    }

    /// Queues one datagram on socket `idx`'s receive queue `pipe` with its sender (what
    /// pipe_put answers: a full queue, or no room for the whole message, is an error).
    pub(crate) fn dgram_queue(
        &mut self,
        idx: usize,
        pipe: usize,
        data: &[u8],
        from: Addr,
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let n = self.pipe_put(pipe, data, nonblock)?;
        if let Some(d) = self
            .files
            .net_mut()
            .socks
            .get_mut(&idx)
            .and_then(|s| s.dgram.as_mut())
        {
            d.from.push_back(from);
        }
        Ok(n)
    }

    /// Sends one datagram from socket `idx` to `to` (its peer when None).
    pub(crate) fn dgram_send(
        &mut self,
        idx: usize,
        data: &[u8],
        to: Option<Addr>,
        nonblock: bool,
    ) -> Result<usize, Errno> {
        let s = self.files.net().socks.get(&idx).ok_or(Errno::ENOTSOCK)?;
        let family = s.family;
        if family == crate::net::addr::AF_NETLINK {
            return self.netlink_send(idx, data, to);
        }
        if s.ty == crate::net::addr::SOCK_RAW {
            return self.raw_send(idx, data, to);
        }
        let to = match to.or_else(|| s.peer.clone()) {
            Some(a) => a,
            None if family == AF_UNIX => return Err(Errno(libc::ENOTCONN)),
            None => return Err(Errno(libc::EDESTADDRREQ)),
        };
        if family != AF_UNIX && data.len() > UDP_MAX {
            return Err(Errno(libc::EMSGSIZE));
        }
        if !to.is_local() {
            return Err(Errno(libc::ENETUNREACH));
        }
        let to = to.or_loopback(family);
        self.autobind(idx)?;
        let protocol = self.files.net().socks.get(&idx).map_or(0, |s| s.protocol);
        let target =
            match self.find_bound(family, crate::net::addr::SOCK_DGRAM, protocol, &to, false) {
                Ok(t) => t,
                // nobody there: UDP drops it, AF_UNIX refuses
                Err(_) if family != AF_UNIX => return Ok(data.len()),
                Err(e) => return Err(e),
            };
        let (pipe, tfamily) = match self.files.net().socks.get(&target) {
            Some(t) => match &t.dgram {
                Some(d) => (d.pipe, t.family),
                None => return Err(Errno(libc::ECONNREFUSED)),
            },
            None => return Err(Errno(libc::ECONNREFUSED)),
        };
        let src = self
            .files
            .net()
            .socks
            .get(&idx)
            .and_then(|s| s.local.clone())
            .unwrap_or(Addr::Unix(Vec::new()))
            .seen_by(tfamily);
        match self.dgram_queue(target, pipe, data, src, nonblock || family != AF_UNIX) {
            Ok(n) => Ok(n),
            // a full UDP queue drops the datagram
            Err(Errno::EAGAIN) if family != AF_UNIX && !nonblock => Ok(data.len()),
            Err(e) => Err(e),
        }
    }

    /// Receives one datagram into `buf`: the bytes copied, the datagram's whole length,
    /// and its sender. With `peek` it stays queued.
    pub(crate) fn dgram_recv(
        &mut self,
        idx: usize,
        buf: &mut [u8],
        nonblock: bool,
        peek: bool,
    ) -> Result<(usize, usize, Addr), Errno> {
        let pipe = match self
            .files
            .net()
            .socks
            .get(&idx)
            .and_then(|s| s.dgram.as_ref())
        {
            Some(d) => d.pipe,
            None => return Err(Errno(libc::ENOTCONN)),
        };
        let Some(Some(p)) = self.files.pipes.get(pipe) else {
            return Err(Errno::EBADF);
        };
        let Some(&len) = p.bounds.as_ref().and_then(|b| b.front()) else {
            return Err(if nonblock { Errno::EAGAIN } else { WOULD_BLOCK });
        };
        let n = len.min(buf.len());
        if peek {
            for (d, s) in buf[..n].iter_mut().zip(p.buf.iter()) {
                *d = *s;
            }
        } else {
            // an empty buffer still takes the datagram, as on Linux
            let mut whole = vec![0u8; len];
            self.pipe_take(pipe, &mut whole, true)?;
            buf[..n].copy_from_slice(&whole[..n]);
        }
        let from = match self
            .files
            .net_mut()
            .socks
            .get_mut(&idx)
            .and_then(|s| s.dgram.as_mut())
        {
            Some(d) if peek => d.from.front().cloned(),
            Some(d) => d.from.pop_front(),
            None => None,
        };
        Ok((n, len, from.unwrap_or(Addr::Unix(Vec::new()))))
    }

    /// sendto on a datagram socket (None: `fd` is not one).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn net_sendto(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
        addrlen: u64,
    ) -> Option<SysResult> {
        let idx = self.dgram_idx(fd)?;
        Some((|| {
            let to = if addr != 0 {
                Some(self.dest_addr(mem, idx, addr, addrlen)?)
            } else {
                None
            };
            let n = (len as usize).min(DGRAM_MAX + 1);
            let mut data = vec![0u8; n];
            rd(mem, buf, &mut data)?;
            let nonblock = self.dgram_nonblock(fd, flags);
            self.dgram_send(idx, &data, to, nonblock)
                .map(|n| n as u64)
                .map_err(|e| self.io_error(e, fd))
        })())
    }

    /// The destination of a sendto/sendmsg: a sockaddr of the socket's family.
    fn dest_addr(
        &mut self,
        mem: &mut AddressSpace,
        idx: usize,
        addr: u64,
        len: u64,
    ) -> Result<Addr, Errno> {
        let family = self.files.net().socks.get(&idx).map_or(0, |s| s.family);
        let (f, a) = crate::net::addr::read_addr(mem, addr, len)?;
        if f != family {
            return Err(Errno(libc::EAFNOSUPPORT));
        }
        Ok(a)
    }

    fn dgram_nonblock(&self, fd: i32, flags: i32) -> bool {
        flags & MSG_DONTWAIT != 0
            || self
                .files
                .file(fd)
                .is_ok_and(|f| f.flags & crate::io::fd::o::O_NONBLOCK != 0)
    }

    /// recvfrom on a datagram socket (None: `fd` is not one).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn net_recvfrom(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
        addrlen: u64,
    ) -> Option<SysResult> {
        let idx = self.dgram_idx(fd)?;
        Some((|| {
            let len = (len as usize).min(DGRAM_MAX);
            check_writable(mem, buf, len as u64)?;
            let mut tmp = vec![0u8; len];
            let nonblock = self.dgram_nonblock(fd, flags);
            let (n, whole, from) = self
                .dgram_recv(idx, &mut tmp, nonblock, flags & MSG_PEEK != 0)
                .map_err(|e| self.io_error(e, fd))?;
            wr(mem, buf, &tmp[..n])?;
            if from == Addr::Unix(Vec::new()) {
                // an unnamed AF_UNIX sender: no address at all
                if addrlen != 0 {
                    wr_u32(mem, addrlen, 0)?;
                }
            } else {
                crate::net::addr::write_addr(mem, addr, addrlen, &from)?;
            }
            Ok(if flags & MSG_TRUNC != 0 { whole } else { n } as u64)
        })())
    }

    /// sendmsg/recvmsg on a datagram socket: the iovecs gathered into one datagram or one
    /// datagram scattered over them, with msg_name (None: `fd` is not one).
    pub(crate) fn net_msg(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        msg: u64,
        flags: i32,
        send: bool,
    ) -> Option<SysResult> {
        let idx = self.dgram_idx(fd)?;
        Some((|| {
            let name = rd_u64(mem, msg)?;
            let namelen = rd_u32(mem, msg + 8)? as u64;
            let iov = rd_u64(mem, msg + 16)?;
            let iovlen = rd_u64(mem, msg + 24)?.min(1024);
            let mut vecs = Vec::new();
            for k in 0..iovlen {
                let base = rd_u64(mem, iov + 16 * k)?;
                let l = rd_u64(mem, iov + 16 * k + 8)?;
                vecs.push((base, l));
            }
            let total: u64 = vecs.iter().map(|v| v.1).sum::<u64>().min(DGRAM_MAX as u64);
            let nonblock = self.dgram_nonblock(fd, flags);
            if send {
                let to = if name != 0 && namelen != 0 {
                    Some(self.dest_addr(mem, idx, name, namelen)?)
                } else {
                    None
                };
                let mut data = Vec::with_capacity(total as usize);
                for &(base, l) in &vecs {
                    let take = l.min(total - data.len() as u64);
                    let at = data.len();
                    data.resize(at + take as usize, 0);
                    rd(mem, base, &mut data[at..])?;
                }
                return self
                    .dgram_send(idx, &data, to, nonblock)
                    .map(|n| n as u64)
                    .map_err(|e| self.io_error(e, fd));
            }
            for &(base, l) in &vecs {
                check_writable(mem, base, l)?;
            }
            let mut tmp = vec![0u8; total as usize];
            let (n, whole, from) = self
                .dgram_recv(idx, &mut tmp, nonblock, flags & MSG_PEEK != 0)
                .map_err(|e| self.io_error(e, fd))?;
            let mut at = 0usize;
            for &(base, l) in &vecs {
                if at >= n {
                    break;
                }
                let k = (l as usize).min(n - at);
                wr(mem, base, &tmp[at..at + k])?;
                at += k;
            }
            if name != 0 && from != Addr::Unix(Vec::new()) {
                let b = from.encode();
                let k = b.len().min(namelen as usize);
                wr(mem, name, &b[..k])?;
                wr_u32(mem, msg + 8, b.len() as u32)?;
            } else {
                wr_u32(mem, msg + 8, 0)?;
            }
            // no ancillary data; MSG_TRUNC when the datagram did not fit
            wr_u64(mem, msg + 40, 0)?;
            let out_flags = if whole > n { MSG_TRUNC as u32 } else { 0 };
            wr_u32(mem, msg + 48, out_flags)?;
            Ok(if flags & MSG_TRUNC != 0 { whole } else { n } as u64)
        })())
    }
}
