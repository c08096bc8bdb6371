//! Sockets, as far as armada has them: socketpair(AF_UNIX, SOCK_STREAM), the pair
//! programs use to talk to a child process, built from two of armada's pipes (one each
//! way), so it is deterministic and needs no host socket. Reads, writes, poll, select,
//! epoll, shutdown, send/recv (and their msg forms, without ancillary data) work on it.
//! Every other socket call fails as it would on a system without networking: socket()
//! with EAFNOSUPPORT, a socket call on an fd that is not a socket with ENOTSOCK.

use super::fd::o::*;
use super::fd::{Kind, OpenFile};
use super::{check_writable, rd_u64, wr, wr_u32, Errno, Process, SysResult};
use crate::memory::AddressSpace;

const AF_UNIX: i32 = 1;
const SOCK_STREAM: i32 = 1;
const SOCK_NONBLOCK: i32 = 0o4000;
const SOCK_CLOEXEC: i32 = 0o2000000;
const MSG_DONTWAIT: i32 = 0x40;
const MSG_NOSIGNAL: i32 = 0x4000;
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
        if ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != SOCK_STREAM {
            super::note_once(super::NOTE_UNSUPPORTED, 0x3_0000_0000 | ty as u32 as u64, || {
                format!("socketpair of type {ty:#x} is not supported (only SOCK_STREAM); returning EOPNOTSUPP")
            });
            return Err(Errno::EOPNOTSUPP);
        }
        if protocol != 0 {
            return Err(Errno(libc::EPROTONOSUPPORT));
        }
        check_writable(mem, sv, 8)?;
        let a = self.files.new_pipe();
        let b = self.files.new_pipe();
        for id in [a, b] {
            if let Some(Some(p)) = self.files.pipes.get_mut(id) {
                p.readers = 1;
                p.writers = 1;
            }
        }
        let st = if ty & SOCK_NONBLOCK != 0 { O_NONBLOCK } else { 0 };
        let end = |rx, tx| Kind::Socket {
            rx,
            tx,
            rd: true,
            wr: true,
        };
        let x = self.files.add(OpenFile::new(end(a, b), O_RDWR | st, Vec::new()));
        let y = self.files.add(OpenFile::new(end(b, a), O_RDWR | st, Vec::new()));
        let limit = self.nofile();
        let cloexec = ty & SOCK_CLOEXEC != 0;
        let fx = match self.files.install(x, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                self.files.drop_file(y);
                return Err(e);
            }
        };
        let fy = match self.files.install(y, 0, cloexec, limit) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = self.files.close(fx);
                return Err(e);
            }
        };
        let mut out = [0u8; 8];
        out[..4].copy_from_slice(&fx.to_le_bytes());
        out[4..].copy_from_slice(&fy.to_le_bytes());
        wr(mem, sv, &out)?;
        Ok(0)
    }

    /// ENOTSOCK unless `fd` is one of armada's sockets (EBADF if it is no fd at all).
    fn socket_check(&self, fd: i32) -> Result<(), Errno> {
        match self.files.file(fd)?.kind {
            Kind::Socket { .. } => Ok(()),
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

    /// Runs `f` with the description of `fd` non-blocking when `flags` has MSG_DONTWAIT.
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
        let r = f(self);
        if dontwait {
            if let Ok(file) = self.files.file_mut(fd) {
                file.flags = old;
            }
        }
        r
    }

    pub(crate) fn sys_sendto(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
    ) -> SysResult {
        if addr != 0 {
            // a connected stream socket ignores the address... but says so
            self.socket_check(fd)?;
            return Err(Errno(libc::EISCONN));
        }
        let _ = flags & MSG_NOSIGNAL;
        self.with_msg_flags(fd, flags, |p| p.sys_write(mem, fd, buf, len))
    }

    pub(crate) fn sys_recvfrom(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        buf: u64,
        len: u64,
        flags: i32,
        addr_len: u64,
    ) -> SysResult {
        let r = self.with_msg_flags(fd, flags, |p| p.sys_read(mem, fd, buf, len))?;
        if addr_len != 0 {
            // an unnamed peer: no address
            wr_u32(mem, addr_len, 0)?;
        }
        Ok(r)
    }

    /// sendmsg/recvmsg: the data of the iovecs; names are ignored (the pair is connected)
    /// and ancillary data (SCM_RIGHTS, credentials) is not supported.
    pub(crate) fn sys_msg(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        msg: u64,
        flags: i32,
        send: bool,
    ) -> SysResult {
        self.socket_check(fd)?;
        let iov = rd_u64(mem, msg + 16)?;
        let iovlen = rd_u64(mem, msg + 24)?;
        let control = rd_u64(mem, msg + 32)?;
        let controllen = rd_u64(mem, msg + 40)?;
        if send && control != 0 && controllen != 0 {
            super::note_once(super::NOTE_UNSUPPORTED, 0x4_0000_0000, || {
                "sendmsg with ancillary data (passing fds) is not supported; returning EOPNOTSUPP"
                    .to_string()
            });
            return Err(Errno::EOPNOTSUPP);
        }
        let r = self.with_msg_flags(fd, flags, |p| {
            if send {
                p.sys_writev(mem, fd, iov, iovlen, None)
            } else {
                p.sys_readv(mem, fd, iov, iovlen, None)
            }
        })?;
        if !send {
            // msg_namelen, msg_controllen and msg_flags: nothing of those came
            wr_u32(mem, msg + 8, 0)?;
            super::wr_u64(mem, msg + 40, 0)?;
            wr_u32(mem, msg + 48, 0)?;
        }
        Ok(r)
    }

    /// getsockname/getpeername: an unnamed AF_UNIX socket (just the family).
    pub(crate) fn sys_sockname(&mut self, mem: &mut AddressSpace, fd: i32, addr: u64, len: u64) -> SysResult {
        self.socket_check(fd)?;
        let have = super::rd_u32(mem, len)?;
        if have >= 2 {
            wr(mem, addr, &(AF_UNIX as u16).to_le_bytes())?;
        }
        wr_u32(mem, len, 2)?;
        Ok(0)
    }

    /// getsockopt: SO_TYPE, SO_DOMAIN, SO_ERROR and buffer sizes of a socketpair end.
    pub(crate) fn sys_getsockopt(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        level: i32,
        name: i32,
        val: u64,
        len: u64,
    ) -> SysResult {
        const SOL_SOCKET: i32 = 1;
        const SO_TYPE: i32 = 3;
        const SO_ERROR: i32 = 4;
        const SO_SNDBUF: i32 = 7;
        const SO_RCVBUF: i32 = 8;
        const SO_DOMAIN: i32 = 39;
        self.socket_check(fd)?;
        if level != SOL_SOCKET {
            return Err(Errno(libc::ENOPROTOOPT));
        }
        let v: i32 = match name {
            SO_TYPE => SOCK_STREAM,
            SO_DOMAIN => AF_UNIX,
            SO_ERROR => 0,
            SO_SNDBUF | SO_RCVBUF => super::fd::PIPE_CAP as i32,
            _ => return Err(Errno(libc::ENOPROTOOPT)),
        };
        let have = super::rd_u32(mem, len)?;
        if have < 4 {
            return Err(Errno::EINVAL);
        }
        wr_u32(mem, val, v as u32)?;
        wr_u32(mem, len, 4)?;
        Ok(0)
    }
}
