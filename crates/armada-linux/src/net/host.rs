//! `--net host`: IPv4, IPv6 and netlink sockets are the host's, as under qemu-user, for
//! programs that must reach real servers. This leaves the sandbox: the guest can talk to
//! anything the host can, ports it binds are the host's, and runs are no longer
//! deterministic. AF_UNIX sockets stay armada's own (their names live in the guest's view
//! of the file system).
//!
//! A host socket is a `Kind::Host` description like a host file, so read, write, poll,
//! epoll and fcntl already reach the host. The socket calls on it go to the host here, with
//! the guest's buffers, addresses and options copied (arm64 and x86-64 Linux lay out
//! sockaddrs, msghdrs, `struct linger` and `struct timeval` the same way). A call that would
//! block while other tasks of the run could go on waits as a task instead, looking at the
//! socket again every few milliseconds, as reads of the host's pipes do.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::io::fd::o::*;
use crate::io::fd::{HostFd, Kind, OpenFile};
use crate::nr::*;
use crate::sched::WOULD_BLOCK;
use crate::{check_writable, rd, rd_u32, rd_u64, wr, wr_u32, wr_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// How the guest's sockets reach a network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NetMode {
    /// The run's own in-memory loopback network (`net`, `dgram`).
    #[default]
    Loopback,
    /// IPv4, IPv6 and netlink sockets are the host's.
    Host,
}

use crate::net::addr::{MSG_DONTWAIT, MSG_NOSIGNAL, SOCK_CLOEXEC, SOCK_NONBLOCK};

const AF_NETLINK: i32 = 16;
/// Most bytes one send or receive moves (the rest is a short count, as sockets allow).
const CHUNK: usize = 1 << 20;

fn cvt(r: isize) -> Result<u64, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as u64)
    }
}

impl Process {
    /// Whether `socket(domain, ...)` makes a host socket.
    pub(crate) fn host_family(&self, domain: i32) -> bool {
        self.cfg.net == NetMode::Host
            && matches!(domain, libc::AF_INET | libc::AF_INET6 | AF_NETLINK)
    }

    /// socket() on the host.
    pub(crate) fn host_socket(&mut self, domain: i32, ty: i32, protocol: i32) -> SysResult {
        let host_ty = (ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC))
            | libc::SOCK_CLOEXEC
            | if ty & SOCK_NONBLOCK != 0 {
                libc::SOCK_NONBLOCK
            } else {
                0
            };
        // SAFETY: plain arguments.
        let fd = unsafe { libc::socket(domain, host_ty, protocol) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: a fresh fd nobody else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        self.install_host_socket(owned, ty & SOCK_NONBLOCK != 0, ty & SOCK_CLOEXEC != 0)
    }

    fn install_host_socket(&mut self, fd: OwnedFd, nonblock: bool, cloexec: bool) -> SysResult {
        let kind = Kind::Host {
            fd: HostFd::Owned(fd),
            mode: libc::S_IFSOCK | 0o777,
        };
        let flags = O_RDWR | if nonblock { O_NONBLOCK } else { 0 };
        let idx = self.files.add(OpenFile::new(kind, flags, Vec::new()));
        let limit = self.nofile();
        self.files
            .install(idx, 0, cloexec, limit)
            .map(|fd| fd as u64)
    }

    /// The host fd behind guest fd `fd` when it is one of the host's sockets.
    fn host_socket_fd(&self, fd: i32) -> Option<(RawFd, bool)> {
        let f = self.files.file(fd).ok()?;
        match &f.kind {
            Kind::Host { fd: h, mode } if mode & libc::S_IFMT == libc::S_IFSOCK => {
                Some((h.raw(), f.flags & O_NONBLOCK != 0))
            }
            _ => None,
        }
    }

    /// Before a host call that may block: when other tasks of the run could go on and the
    /// socket is not ready, the task waits (WOULD_BLOCK) instead of the host thread.
    fn host_wait_ready(&self, h: RawFd, events: i16, nonblock: bool) -> Result<(), Errno> {
        if nonblock || self.cfg.deterministic || !self.others_may_run() {
            return Ok(());
        }
        let mut p = libc::pollfd {
            fd: h,
            events,
            revents: 0,
        };
        // SAFETY: one pollfd.
        if unsafe { libc::poll(&mut p, 1, 0) } == 0 {
            return Err(WOULD_BLOCK);
        }
        Ok(())
    }

    /// A socket syscall on one of the host's sockets (None: `a[0]` is not one, or the run
    /// keeps its own network).
    pub(crate) fn host_socket_call(
        &mut self,
        nr: u64,
        a: [u64; 6],
        mem: &mut AddressSpace,
    ) -> Option<SysResult> {
        if self.cfg.net != NetMode::Host {
            return None;
        }
        let fd = a[0] as i32;
        let (h, nonblock) = self.host_socket_fd(fd)?;
        let r = match nr {
            BIND | CONNECT => (|| {
                let addr = read_sockaddr(mem, a[1], a[2] as u32)?;
                // SAFETY: the buffer holds addr.len() bytes.
                let r = unsafe {
                    let p = addr.as_ptr().cast();
                    let n = addr.len() as libc::socklen_t;
                    if nr == BIND {
                        libc::bind(h, p, n)
                    } else {
                        libc::connect(h, p, n)
                    }
                };
                cvt(r as isize)
            })(),
            // SAFETY: plain arguments.
            LISTEN => cvt(unsafe { libc::listen(h, a[1] as i32) } as isize),
            // SAFETY: plain arguments.
            SHUTDOWN => cvt(unsafe { libc::shutdown(h, a[1] as i32) } as isize),
            ACCEPT | ACCEPT4 => {
                let flags = if nr == ACCEPT4 { a[3] as i32 } else { 0 };
                self.host_accept(mem, h, nonblock, a[1], a[2], flags)
            }
            GETSOCKNAME | GETPEERNAME => (|| {
                let mut buf = [0u8; 128];
                let mut len = buf.len() as libc::socklen_t;
                // SAFETY: buf holds len bytes.
                let r = unsafe {
                    let p = buf.as_mut_ptr().cast();
                    if nr == GETSOCKNAME {
                        libc::getsockname(h, p, &mut len)
                    } else {
                        libc::getpeername(h, p, &mut len)
                    }
                };
                cvt(r as isize)?;
                write_sockaddr(mem, a[1], a[2], &buf[..(len as usize).min(buf.len())])?;
                Ok(0)
            })(),
            SETSOCKOPT => (|| {
                let len = (a[4] as u32).min(256) as usize;
                let mut v = vec![0u8; len];
                rd(mem, a[3], &mut v)?;
                // SAFETY: v holds len bytes.
                let r = unsafe {
                    libc::setsockopt(h, a[1] as i32, a[2] as i32, v.as_ptr().cast(), len as _)
                };
                cvt(r as isize)
            })(),
            GETSOCKOPT => (|| {
                let room = rd_u32(mem, a[4])?.min(256);
                let mut v = vec![0u8; room as usize];
                let mut len = room as libc::socklen_t;
                // SAFETY: v holds len bytes.
                let r = unsafe {
                    libc::getsockopt(h, a[1] as i32, a[2] as i32, v.as_mut_ptr().cast(), &mut len)
                };
                cvt(r as isize)?;
                wr(mem, a[3], &v[..(len as usize).min(v.len())])?;
                wr_u32(mem, a[4], len)?;
                Ok(0)
            })(),
            SENDTO => self.host_send(mem, h, nonblock, a[1], a[2], a[3] as i32, a[4], a[5] as u32),
            RECVFROM => self.host_recv(
                mem,
                h,
                nonblock,
                &[(a[1], a[2])],
                a[3] as i32,
                a[4],
                a[5],
                None,
            ),
            SENDMSG | RECVMSG => self.host_msg(mem, h, nonblock, a[1], a[2] as i32, nr == SENDMSG),
            SENDMMSG | RECVMMSG => (|| {
                let mut done = 0u64;
                for k in 0..(a[2] as u32).min(1024) as u64 {
                    let hdr = a[1] + 64 * k;
                    match self.host_msg(mem, h, nonblock, hdr, a[3] as i32, nr == SENDMMSG) {
                        Ok(n) => {
                            wr_u32(mem, hdr + 56, n as u32)?;
                            done += 1;
                        }
                        Err(e) if done == 0 => return Err(e),
                        Err(_) => {
                            self.events.block = None;
                            break;
                        }
                    }
                }
                Ok(done)
            })(),
            _ => return None,
        };
        Some(r.map_err(|e| self.io_error(e, fd)))
    }

    fn host_accept(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        nonblock: bool,
        addr: u64,
        len: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        self.host_wait_ready(h, libc::POLLIN, nonblock)?;
        let mut buf = [0u8; 128];
        let mut blen = buf.len() as libc::socklen_t;
        let hflags = libc::SOCK_CLOEXEC
            | if flags & SOCK_NONBLOCK != 0 {
                libc::SOCK_NONBLOCK
            } else {
                0
            };
        // SAFETY: buf holds blen bytes.
        let nfd = unsafe { libc::accept4(h, buf.as_mut_ptr().cast(), &mut blen, hflags) };
        if nfd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: a fresh fd nobody else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(nfd) };
        let r =
            self.install_host_socket(owned, flags & SOCK_NONBLOCK != 0, flags & SOCK_CLOEXEC != 0)?;
        write_sockaddr(mem, addr, len, &buf[..(blen as usize).min(buf.len())])?;
        Ok(r)
    }

    #[allow(clippy::too_many_arguments)]
    fn host_send(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        nonblock: bool,
        buf: u64,
        len: u64,
        flags: i32,
        addr: u64,
        alen: u32,
    ) -> SysResult {
        let to = if addr != 0 {
            read_sockaddr(mem, addr, alen)?
        } else {
            Vec::new()
        };
        let mut data = vec![0u8; (len as usize).min(CHUNK)];
        rd(mem, buf, &mut data)?;
        self.host_sendto(h, nonblock, &data, flags, &to)
    }

    /// One sendto on the host (`to` empty: the connected peer).
    fn host_sendto(
        &mut self,
        h: RawFd,
        nonblock: bool,
        data: &[u8],
        flags: i32,
        to: &[u8],
    ) -> SysResult {
        self.host_wait_ready(h, libc::POLLOUT, nonblock || flags & MSG_DONTWAIT != 0)?;
        self.no_sigpipe = flags & MSG_NOSIGNAL != 0;
        // SAFETY: data and to hold their lengths; MSG_NOSIGNAL keeps the host's SIGPIPE
        // away (the guest's is raised from EPIPE).
        let r = unsafe {
            libc::sendto(
                h,
                data.as_ptr().cast(),
                data.len(),
                flags | MSG_NOSIGNAL,
                if to.is_empty() {
                    std::ptr::null()
                } else {
                    to.as_ptr().cast()
                },
                to.len() as libc::socklen_t,
            )
        };
        cvt(r)
    }

    /// recvfrom (one buffer) or recvmsg (several): the bytes received, the sender.
    #[allow(clippy::too_many_arguments)]
    fn host_recv(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        nonblock: bool,
        bufs: &[(u64, u64)],
        flags: i32,
        addr: u64,
        alen: u64,
        msg_flags: Option<u64>,
    ) -> SysResult {
        let total: u64 = bufs.iter().map(|b| b.1).sum::<u64>().min(CHUNK as u64);
        for &(b, l) in bufs {
            check_writable(mem, b, l)?;
        }
        self.host_wait_ready(h, libc::POLLIN, nonblock || flags & MSG_DONTWAIT != 0)?;
        let mut tmp = vec![0u8; total as usize];
        let mut from = [0u8; 128];
        let mut flen = from.len() as libc::socklen_t;
        let mut iov = libc::iovec {
            iov_base: tmp.as_mut_ptr().cast(),
            iov_len: tmp.len(),
        };
        // SAFETY: zeroed msghdr, then pointers to live buffers of the stated lengths.
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_name = from.as_mut_ptr().cast();
        m.msg_namelen = flen;
        m.msg_iov = &mut iov;
        m.msg_iovlen = 1;
        // SAFETY: m describes live buffers.
        let r = unsafe { libc::recvmsg(h, &mut m, flags) };
        let n = cvt(r)?;
        flen = m.msg_namelen;
        let got = (n as usize).min(tmp.len());
        let mut at = 0usize;
        for &(b, l) in bufs {
            if at >= got {
                break;
            }
            let k = (l as usize).min(got - at);
            wr(mem, b, &tmp[at..at + k])?;
            at += k;
        }
        if addr != 0 && alen != 0 {
            write_sockaddr(mem, addr, alen, &from[..(flen as usize).min(from.len())])?;
        }
        if let Some(mf) = msg_flags {
            wr_u32(mem, mf, m.msg_flags as u32)?;
        }
        Ok(n)
    }

    /// sendmsg/recvmsg of one `struct msghdr` on a host socket (ancillary data is not
    /// passed: the receiver sees none).
    fn host_msg(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        nonblock: bool,
        msg: u64,
        flags: i32,
        send: bool,
    ) -> SysResult {
        let name = rd_u64(mem, msg)?;
        let namelen = rd_u32(mem, msg + 8)?;
        let iov = rd_u64(mem, msg + 16)?;
        let iovlen = rd_u64(mem, msg + 24)?.min(1024);
        let mut bufs = Vec::new();
        for k in 0..iovlen {
            bufs.push((rd_u64(mem, iov + 16 * k)?, rd_u64(mem, iov + 16 * k + 8)?));
        }
        if send {
            let total: u64 = bufs.iter().map(|b| b.1).sum::<u64>().min(CHUNK as u64);
            let mut data = Vec::with_capacity(total as usize);
            for &(b, l) in &bufs {
                let take = l.min(total - data.len() as u64) as usize;
                let at = data.len();
                data.resize(at + take, 0);
                rd(mem, b, &mut data[at..])?;
            }
            let to = if name != 0 && namelen != 0 {
                read_sockaddr(mem, name, namelen)?
            } else {
                Vec::new()
            };
            return self.host_sendto(h, nonblock, &data, flags, &to);
        }
        let n = self.host_recv(
            mem,
            h,
            nonblock,
            &bufs,
            flags,
            name,
            msg + 8,
            Some(msg + 48),
        )?;
        if name == 0 {
            wr_u32(mem, msg + 8, 0)?;
        }
        // no ancillary data
        wr_u64(mem, msg + 40, 0)?;
        Ok(n)
    }
}

/// A guest sockaddr as bytes (EINVAL past 128 bytes).
fn read_sockaddr(mem: &mut AddressSpace, addr: u64, len: u32) -> Result<Vec<u8>, Errno> {
    if len > 128 {
        return Err(Errno::EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    rd(mem, addr, &mut b)?;
    Ok(b)
}

/// Writes a host sockaddr to a guest (sockaddr, socklen_t*) pair.
fn write_sockaddr(mem: &mut AddressSpace, addr: u64, len_ptr: u64, a: &[u8]) -> Result<(), Errno> {
    if addr == 0 || len_ptr == 0 {
        return Ok(());
    }
    let room = rd_u32(mem, len_ptr)? as usize;
    wr(mem, addr, &a[..a.len().min(room)])?;
    wr_u32(mem, len_ptr, a.len() as u32)
}
