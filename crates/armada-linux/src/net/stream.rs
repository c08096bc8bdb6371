//! Connected sockets: socketpair(AF_UNIX, SOCK_STREAM, and the message forms SOCK_DGRAM
//! and SOCK_SEQPACKET), built from two of armada's pipes (one each way), so it is
//! deterministic and needs no host socket; a stream connected on the run's own network
//! (`net`) is the same kind of description. Reads, writes, poll, select, epoll, shutdown,
//! send/recv and their msg forms work on it, and so does passing fds with SCM_RIGHTS (open
//! file descriptions are the lane's, so either process can hold them). A socket call on
//! an fd that is not a socket fails with ENOTSOCK.

use crate::io::fd::o::*;
use crate::io::fd::{Kind, OpenFile, Ucred};
use crate::{check_writable, rd_u64, wr, wr_u32, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

use crate::net::addr::{
    AF_UNIX, MSG_DONTWAIT, MSG_NOSIGNAL, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOCK_SEQPACKET,
    SOCK_STREAM, SOL_SOCKET, SO_PASSCRED, SO_PEERCRED,
};

const SCM_RIGHTS: i32 = 1;
const SCM_CREDENTIALS: i32 = 2;
const MSG_CMSG_CLOEXEC: i32 = 0x4000_0000;
const MSG_CTRUNC: u32 = 8;
const MSG_PEEK: i32 = 2;
const SHUT_RD: i32 = 0;
const SHUT_WR: i32 = 1;
const SHUT_RDWR: i32 = 2;

impl Process {
    pub(crate) fn sys_socketpair(
        &mut self,
        mem: &mut AddressSpace,
        domain: i32,
        ty: i32,
        protocol: i32,
        sv: u64,
    ) -> SysResult {
        if domain != AF_UNIX {
            return Err(Errno(libc::EAFNOSUPPORT));
        }
        let kind = ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC);
        if ![SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET].contains(&kind) {
            crate::note_once(
                crate::NOTE_UNSUPPORTED,
                0x3_0000_0000 | ty as u32 as u64,
                || {
                    format!("socketpair of type {ty:#x} is not supported (SOCK_STREAM, SOCK_DGRAM and SOCK_SEQPACKET are); returning EOPNOTSUPP")
                },
            );
            return Err(Errno::EOPNOTSUPP);
        }
        if protocol != 0 {
            return Err(Errno(libc::EPROTONOSUPPORT));
        }
        check_writable(mem, sv, 8)?;
        let a = self.files.new_pipe();
        let b = self.files.new_pipe();
        if kind != SOCK_STREAM {
            for id in [a, b] {
                if let Some(Some(p)) = self.files.pipes.get_mut(id) {
                    p.bounds = Some(Default::default());
                    p.sock_type = kind;
                }
            }
        }
        let st = if ty & SOCK_NONBLOCK != 0 {
            O_NONBLOCK
        } else {
            0
        };
        // SO_PEERCRED: each end's peer is the caller, as the pair was made
        let me = self.own_ucred_effective();
        for id in [a, b] {
            if let Some(Some(p)) = self.files.pipes.get_mut(id) {
                p.peer = Some(me);
            }
        }
        let end = |rx, tx| Kind::Socket {
            rx,
            tx,
            rd: true,
            wr: true,
        };
        let x = self
            .files
            .add(OpenFile::new(end(a, b), O_RDWR | st, Vec::new()));
        let y = self
            .files
            .add(OpenFile::new(end(b, a), O_RDWR | st, Vec::new()));
        self.install_pair(mem, sv, x, y, ty & SOCK_CLOEXEC != 0)
    }

    /// ENOTSOCK unless `fd` is one of armada's connected sockets (ENOTCONN for one that is
    /// not connected, EBADF if it is no fd at all).
    fn socket_check(&self, fd: i32) -> Result<(), Errno> {
        match self.files.file(fd)?.kind {
            Kind::Socket { .. } => Ok(()),
            Kind::NetSock => Err(Errno(libc::ENOTCONN)),
            _ => Err(Errno::ENOTSOCK),
        }
    }

    pub(crate) fn sys_shutdown(&mut self, fd: i32, how: i32) -> SysResult {
        self.socket_check(fd)?;
        if !(SHUT_RD..=SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        let f = self.files.file_mut(fd)?;
        let Kind::Socket { rx, tx, rd, wr } = &mut f.kind else {
            return Err(Errno::ENOTSOCK);
        };
        let (rx, tx) = (*rx, *tx);
        let close_rd = how != SHUT_WR && std::mem::replace(rd, false);
        let close_wr = how != SHUT_RD && std::mem::replace(wr, false);
        if close_rd {
            self.files.pipe_end_closed(rx, false);
        }
        if close_wr {
            self.files.pipe_end_closed(tx, true);
        }
        Ok(0)
    }

    /// Runs `f` with the description of `fd` non-blocking when `flags` has MSG_DONTWAIT,
    /// with no SIGPIPE for a broken connection when it has MSG_NOSIGNAL, and reading
    /// without taking (a receive) when it has MSG_PEEK.
    fn with_msg_flags(
        &mut self,
        fd: i32,
        flags: i32,
        f: impl FnOnce(&mut Process) -> SysResult,
    ) -> SysResult {
        self.socket_check(fd)?;
        let dontwait = flags & MSG_DONTWAIT != 0;
        let old = self.files.file(fd)?.flags;
        if dontwait {
            self.files.file_mut(fd)?.flags |= O_NONBLOCK;
        }
        self.no_sigpipe = flags & MSG_NOSIGNAL != 0;
        self.recv_peek = flags & MSG_PEEK != 0;
        let r = f(self);
        self.no_sigpipe = false;
        self.recv_peek = false;
        if dontwait {
            if let Ok(file) = self.files.file_mut(fd) {
                file.flags = old;
            }
        }
        r
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_sendto(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
        addrlen: u64,
    ) -> SysResult {
        if let Some(r) = self.net_sendto(mem, fd, buf, len, flags, addr, addrlen) {
            return r;
        }
        if addr != 0 {
            // connected: TCP ignores the address; AF_UNIX says EISCONN, as Linux does
            self.socket_check(fd)?;
            let idx = self.files.entry(fd)?.file;
            if self.socket_family(idx).is_none_or(|f| f == AF_UNIX) {
                return Err(Errno(libc::EISCONN));
            }
        }
        self.with_msg_flags(fd, flags, |p| p.sys_write(mem, fd, buf, len))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sys_recvfrom(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
        addr_len: u64,
    ) -> SysResult {
        if let Some(r) = self.net_recvfrom(mem, fd, buf, len, flags, addr, addr_len) {
            return r;
        }
        let r = self.with_msg_flags(fd, flags, |p| p.sys_read(mem, fd, buf, len))?;
        if addr_len != 0 {
            // an unnamed peer: no address
            wr_u32(mem, addr_len, 0)?;
        }
        Ok(r)
    }

    /// sendmsg/recvmsg: the data of the iovecs, fds passed with SCM_RIGHTS (the receiver
    /// gets new fds for the same open file descriptions) and credentials with
    /// SCM_CREDENTIALS (checked as Linux checks them; a receiver with SO_PASSCRED gets the
    /// sender's). Names are ignored (the pair is connected).
    pub(crate) fn sys_msg(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        msg: u64,
        flags: i32,
        send: bool,
    ) -> SysResult {
        if let Some(r) = self.net_msg(mem, fd, msg, flags, send) {
            return r;
        }
        self.socket_check(fd)?;
        let iov = rd_u64(mem, msg + 16)?;
        let iovlen = rd_u64(mem, msg + 24)?;
        let control = rd_u64(mem, msg + 32)?;
        let controllen = rd_u64(mem, msg + 40)?;
        let Kind::Socket { rx, tx, .. } = self.files.file(fd)?.kind else {
            return Err(Errno::ENOTSOCK);
        };
        let messages = |p: &Process, id: usize| matches!(p.files.pipes.get(id), Some(Some(p)) if p.bounds.is_some());
        // the iovecs hold nothing: a datagram socket still sends and takes a message
        let empty = self.read_iovecs(mem, iov, iovlen)?.iter().all(|v| v.1 == 0);
        if send {
            let (rights, creds) = if control != 0 && controllen != 0 {
                self.read_control(mem, control, controllen)?
            } else {
                (Vec::new(), None)
            };
            let pos = match self.files.pipes.get(tx) {
                Some(Some(p)) => p.written,
                _ => 0,
            };
            self.send_creds = creds;
            let r = self.with_msg_flags(fd, flags, |p| {
                if empty && messages(p, tx) {
                    p.do_write(fd, &[], None)
                        .map(|n| n as u64)
                        .map_err(|e| p.io_error(e, fd))
                } else {
                    p.sys_writev(mem, fd, iov, iovlen, None)
                }
            });
            self.send_creds = None;
            match (&r, self.files.pipes.get_mut(tx)) {
                (Ok(_), Some(Some(p))) if !rights.is_empty() => p.rights.push_back((pos, rights)),
                _ => {
                    for idx in rights {
                        self.files.release(idx);
                    }
                }
            }
            return r;
        }
        let (start, passcred) = match self.files.pipes.get(rx) {
            Some(Some(p)) => (p.taken, p.passcred),
            _ => (0, false),
        };
        let r = self.with_msg_flags(fd, flags, |p| {
            if empty && messages(p, rx) {
                p.do_read(fd, &mut [], None)
                    .map(|n| n as u64)
                    .map_err(|e| p.io_error(e, fd))
            } else {
                p.sys_readv(mem, fd, iov, iovlen, None)
            }
        })?;
        let end = match self.files.pipes.get(rx) {
            Some(Some(p)) => p.taken,
            _ => start,
        };
        // the credentials and the fds sent with the bytes just read
        let creds = match self.files.pipes.get(rx) {
            Some(Some(p)) if passcred => Some(p.creds_at(start).unwrap_or(Ucred::NONE)),
            _ => None,
        };
        let mut got = Vec::new();
        let peek = flags & MSG_PEEK != 0;
        if let Some(Some(p)) = self.files.pipes.get_mut(rx) {
            if peek {
                // the fds stay queued too: the receiver gets new ones for the same files
                let at = start.max(p.taken);
                got.extend(
                    p.rights
                        .iter()
                        .take_while(|(pos, _)| *pos < at + r.max(1))
                        .flat_map(|(_, v)| v.iter().copied()),
                );
            } else {
                while p
                    .rights
                    .front()
                    .is_some_and(|(at, _)| *at < end.max(start + 1))
                {
                    if let Some((_, v)) = p.rights.pop_front() {
                        got.extend(v);
                    }
                }
            }
        }
        if peek {
            // (a reference for each, as an in-flight one would be)
            for &idx in &got {
                self.files.retain_file(idx);
            }
        }
        // msg_flags echoes MSG_CMSG_CLOEXEC, as Linux's recvmsg does
        let mut msg_flags = (flags & MSG_CMSG_CLOEXEC) as u32;
        let mut cmsgs = Vec::new();
        if let Some(c) = creds {
            if controllen >= 16 + 12 && control != 0 {
                push_cmsg(&mut cmsgs, SCM_CREDENTIALS, &c.to_bytes());
            } else {
                msg_flags |= MSG_CTRUNC;
            }
        }
        if !got.is_empty() {
            let room = controllen.saturating_sub(cmsgs.len() as u64 + 16) / 4;
            let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
            let limit = self.nofile();
            let mut fds = Vec::new();
            for (k, idx) in got.into_iter().enumerate() {
                if (k as u64) < room && control != 0 && controllen >= cmsgs.len() as u64 + 16 {
                    if let Ok(nfd) = self.files.install(idx, 0, cloexec, limit) {
                        fds.push(nfd);
                    } else {
                        msg_flags |= MSG_CTRUNC;
                    }
                } else {
                    msg_flags |= MSG_CTRUNC;
                }
                // the in-flight reference
                self.files.release(idx);
            }
            if !fds.is_empty() {
                let data: Vec<u8> = fds.iter().flat_map(|f| f.to_le_bytes()).collect();
                push_cmsg(&mut cmsgs, SCM_RIGHTS, &data);
            }
        }
        // the last message's padding is not counted when it would not fit
        let used = (cmsgs.len() as u64).min(controllen);
        if used > 0 {
            wr(mem, control, &cmsgs[..used as usize])?;
        }
        // msg_namelen, msg_controllen and msg_flags
        wr_u32(mem, msg + 8, 0)?;
        crate::wr_u64(mem, msg + 40, used)?;
        wr_u32(mem, msg + 48, msg_flags)?;
        Ok(r)
    }

    /// sendmmsg/recvmmsg: sendmsg/recvmsg for each `struct mmsghdr` (a msghdr and the
    /// count it moved) until one fails or, receiving, nothing more is there; the count of
    /// messages done, or the first one's error.
    pub(crate) fn sys_mmsg(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        vec: u64,
        vlen: u32,
        flags: i32,
        send: bool,
    ) -> SysResult {
        const MMSGHDR: u64 = 64;
        const MSG_WAITFORONE: i32 = 0x10000;
        const UIO_MAXIOV: u32 = 1024;
        let vlen = vlen.min(UIO_MAXIOV);
        let mut done = 0u32;
        let wait_one = !send && flags & MSG_WAITFORONE != 0;
        let mut flags = flags & !MSG_WAITFORONE;
        while done < vlen {
            let hdr = vec + done as u64 * MMSGHDR;
            match self.sys_msg(mem, fd, hdr, flags, send) {
                Ok(n) => {
                    wr_u32(mem, hdr + 56, n as u32)?;
                    done += 1;
                    if wait_one {
                        flags |= MSG_DONTWAIT;
                    }
                }
                Err(e) if done == 0 => return Err(e),
                // (a block after the first message: return what was moved)
                Err(_) => {
                    self.events.block = None;
                    break;
                }
            }
        }
        Ok(done as u64)
    }

    /// The ancillary data of a sendmsg: the open file descriptions SCM_RIGHTS names, each
    /// with a reference taken (EBADF for a bad fd), and the credentials SCM_CREDENTIALS
    /// passes (EPERM unless they are the sender's own pid, and one of its user and group
    /// ids, or it has the capability to say otherwise). Other ancillary data: EOPNOTSUPP.
    fn read_control(
        &mut self,
        mem: &mut AddressSpace,
        control: u64,
        len: u64,
    ) -> Result<(Vec<usize>, Option<Ucred>), Errno> {
        let mut out = Vec::new();
        let mut creds = None;
        let mut at = 0u64;
        let res = (|| {
            while at + 16 <= len {
                let clen = rd_u64(mem, control + at)?;
                let level = crate::rd_u32(mem, control + at + 8)? as i32;
                let ty = crate::rd_u32(mem, control + at + 12)? as i32;
                if clen < 16 || at + clen > len {
                    return Err(Errno::EINVAL);
                }
                match (level, ty) {
                    (SOL_SOCKET, SCM_RIGHTS) => {
                        for k in 0..(clen - 16) / 4 {
                            let fd = crate::rd_u32(mem, control + at + 16 + 4 * k)? as i32;
                            let idx = self.files.entry(fd)?.file;
                            self.files.retain_file(idx);
                            out.push(idx);
                        }
                    }
                    (SOL_SOCKET, SCM_CREDENTIALS) => {
                        if clen != 16 + 12 {
                            return Err(Errno::EINVAL);
                        }
                        let mut b = [0u8; 12];
                        crate::rd(mem, control + at + 16, &mut b)?;
                        let word = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
                        let c = Ucred {
                            pid: i32::from_le_bytes(word(0)),
                            uid: u32::from_le_bytes(word(4)),
                            gid: u32::from_le_bytes(word(8)),
                        };
                        self.check_sent_creds(c)?;
                        creds = Some(c);
                    }
                    _ => {
                        crate::note_once(crate::NOTE_UNSUPPORTED, 0x4_0000_0000, || {
                            "sendmsg with ancillary data other than SCM_RIGHTS and SCM_CREDENTIALS is not supported; returning EOPNOTSUPP"
                                .to_string()
                        });
                        return Err(Errno::EOPNOTSUPP);
                    }
                }
                at += (clen + 7) & !7;
            }
            Ok(())
        })();
        if let Err(e) = res {
            for idx in out {
                self.files.release(idx);
            }
            return Err(e);
        }
        Ok((out, creds))
    }

    /// Linux's check of credentials a process sends (scm_check_creds): its own pid unless
    /// CAP_SYS_ADMIN, one of its real, effective or saved user ids unless CAP_SETUID, and
    /// likewise for groups with CAP_SETGID; ESRCH for a pid no process of the run has.
    fn check_sent_creds(&self, c: Ucred) -> Result<(), Errno> {
        use crate::proc::creds::{CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN};
        let cr = &self.creds;
        let pid_ok = c.pid == self.pid || cr.capable(CAP_SYS_ADMIN);
        let uid_ok = cr.uid.has(c.uid) || cr.capable(CAP_SETUID);
        let gid_ok = cr.gid.has(c.gid) || cr.capable(CAP_SETGID);
        if !(pid_ok && uid_ok && gid_ok) {
            return Err(Errno::EPERM);
        }
        // a pid the sender may name must still be a process of the run
        if c.pid != self.pid && !self.procs.procs.contains_key(&c.pid) {
            return Err(Errno(libc::ESRCH));
        }
        Ok(())
    }

    /// This process as SO_PEERCRED shows it: its pid and effective user and group.
    pub(crate) fn own_ucred_effective(&self) -> Ucred {
        Ucred {
            pid: self.pid,
            uid: self.creds.uid.eff,
            gid: self.creds.gid.eff,
        }
    }

    /// getsockname/getpeername: a socket's name (see `net`), or for a socketpair end an
    /// unnamed AF_UNIX socket (just the family).
    pub(crate) fn sys_sockname(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        peer: bool,
    ) -> SysResult {
        if let Some(r) = self.net_name(mem, fd, addr, len, peer) {
            return r;
        }
        self.socket_check(fd)?;
        let have = crate::rd_u32(mem, len)?;
        if have >= 2 {
            wr(mem, addr, &(AF_UNIX as u16).to_le_bytes())?;
        }
        wr_u32(mem, len, 2)?;
        Ok(0)
    }

    /// getsockopt: SO_TYPE, SO_DOMAIN, SO_ERROR, SO_PASSCRED, SO_PEERCRED and buffer sizes
    /// of a socketpair end.
    pub(crate) fn sys_getsockopt(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        level: i32,
        name: i32,
        val: u64,
        len: u64,
    ) -> SysResult {
        const SO_TYPE: i32 = 3;
        const SO_ERROR: i32 = 4;
        const SO_SNDBUF: i32 = 7;
        const SO_RCVBUF: i32 = 8;
        const SO_DOMAIN: i32 = 39;
        if let Some(r) = self.net_getsockopt(fd, level, name) {
            let v = r?;
            let have = crate::rd_u32(mem, len)? as i32;
            if have < 0 {
                return Err(Errno::EINVAL);
            }
            let n = v.len().min(have as usize);
            wr(mem, val, &v[..n])?;
            wr_u32(mem, len, n as u32)?;
            return Ok(0);
        }
        self.socket_check(fd)?;
        if level != SOL_SOCKET {
            return Err(Errno(libc::ENOPROTOOPT));
        }
        let Kind::Socket { rx, .. } = self.files.file(fd)?.kind else {
            return Err(Errno::ENOTSOCK);
        };
        let pipe = match self.files.pipes.get(rx) {
            Some(Some(p)) => Some(p),
            _ => None,
        };
        if name == SO_PEERCRED {
            let c = pipe.and_then(|p| p.peer).unwrap_or(Ucred::NONE);
            let have = crate::rd_u32(mem, len)? as i32;
            if have < 0 {
                return Err(Errno::EINVAL);
            }
            let n = (have as usize).min(12);
            wr(mem, val, &c.to_bytes()[..n])?;
            wr_u32(mem, len, n as u32)?;
            return Ok(0);
        }
        let v: i32 = match name {
            SO_PASSCRED => pipe.is_some_and(|p| p.passcred) as i32,
            SO_TYPE => match self.files.file(fd)?.kind {
                Kind::Socket { rx, .. } => match self.files.pipes.get(rx) {
                    Some(Some(p)) if p.bounds.is_some() => p.sock_type,
                    _ => SOCK_STREAM,
                },
                _ => SOCK_STREAM,
            },
            SO_DOMAIN => AF_UNIX,
            SO_ERROR => 0,
            SO_SNDBUF | SO_RCVBUF => crate::io::fd::PIPE_CAP as i32,
            _ => return Err(Errno(libc::ENOPROTOOPT)),
        };
        let have = crate::rd_u32(mem, len)?;
        if have < 4 {
            return Err(Errno::EINVAL);
        }
        wr_u32(mem, val, v as u32)?;
        wr_u32(mem, len, 4)?;
        Ok(0)
    }
}

/// Appends one control message (`struct cmsghdr` and its data) to `out`, padded to 8 bytes.
fn push_cmsg(out: &mut Vec<u8>, ty: i32, data: &[u8]) {
    let len = 16 + data.len() as u64;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&SOL_SOCKET.to_le_bytes());
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(8), 0);
}
