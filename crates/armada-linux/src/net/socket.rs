//! The lane's own network: AF_INET, AF_INET6 and AF_UNIX sockets on loopback, in
//! memory, with no host socket (so a run's servers and clients never meet the host's
//! or another lane's, and every run is deterministic).
//!
//! A socket from `socket()` is an open file description of kind [`Kind::NetSock`] until it
//! connects; its name, options and listen queue are in [`Net`], keyed by the description.
//! `connect` to a listening socket makes two of armada's pipes (one each way), turns the
//! client's description into a [`Kind::Socket`] (what socketpair makes: reads, writes,
//! poll, epoll, shutdown, SCM_RIGHTS work unchanged) and queues the server's end on the
//! listener, where `accept` finds it. The connection is made at once, so a non-blocking
//! TCP connect says EINPROGRESS (as Linux does) and is writable at once.
//!
//! Names: IPv4 and IPv6 loopback and wildcard addresses (127.0.0.0/8, ::1, 0.0.0.0, ::,
//! and v4-mapped ones), ports from 1 to 65535 with ephemeral ports from 32768 (the TCP
//! ports of the run are its own: binding 8080 never touches the host's 8080); AF_UNIX
//! path names (bind makes a socket file through the guest's view of the file system, and
//! connect finds the listener by that file's device and inode) and abstract names.
//! A connect to any other address fails with ENETUNREACH.
//!
//! Datagram sockets (UDP, AF_UNIX SOCK_DGRAM) are in `dgram`; `--net host` (the host's
//! sockets instead) in `host`; addresses and socket numbers in `addr`; the socket table in
//! `table`.

use std::collections::VecDeque;

use crate::io::fd::o::*;
use crate::io::fd::{Kind, OpenFile, Ucred};
use crate::net::addr::*;
use crate::net::table::{Key, Sock};
use crate::sched::WaitKind;
use crate::{rd, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// Where ephemeral ports start and end (Linux's ip_local_port_range).
const EPHEMERAL: (u16, u16) = (32768, 60999);
/// Most connections a listener queues (Linux's somaxconn).
const SOMAXCONN: usize = 4096;
const AT_FDCWD: i32 = -100;

fn s_local(p: &Process, idx: usize) -> Addr {
    p.files
        .net()
        .socks
        .get(&idx)
        .and_then(|s| s.local.clone())
        .unwrap_or(Addr::Unix(Vec::new()))
}

impl Process {
    fn sock(&self, fd: i32) -> Result<(usize, &Sock), Errno> {
        let idx = self.files.entry(fd)?.file;
        match self.files.net().socks.get(&idx) {
            Some(s) => Ok((idx, s)),
            None => match self.files.file(fd)?.kind {
                Kind::Socket { .. } => Err(Errno::EOPNOTSUPP),
                _ => Err(Errno::ENOTSOCK),
            },
        }
    }

    pub(crate) fn sock_mut(&mut self, idx: usize) -> Result<&mut Sock, Errno> {
        self.files
            .net_mut()
            .socks
            .get_mut(&idx)
            .ok_or(Errno::ENOTSOCK)
    }

    pub(crate) fn sys_socket(&mut self, domain: i32, ty: i32, protocol: i32) -> SysResult {
        if self.host_family(domain) {
            return self.host_socket(domain, ty, protocol);
        }
        let kind = ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC);
        if ![AF_UNIX, AF_INET, AF_INET6, AF_NETLINK].contains(&domain) {
            // AF_PACKET, AF_BLUETOOTH, ...: no such family here
            return Err(Errno(libc::EAFNOSUPPORT));
        }
        if ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC | 0xf) != 0 {
            return Err(Errno::EINVAL);
        }
        let ok_proto = match (domain, kind) {
            (AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET) => protocol == 0,
            (AF_INET | AF_INET6, SOCK_STREAM) => protocol == 0 || protocol == IPPROTO_TCP,
            (AF_UNIX, SOCK_DGRAM) => protocol == 0,
            (AF_INET | AF_INET6, SOCK_DGRAM) => {
                [0, IPPROTO_UDP, IPPROTO_UDPLITE].contains(&protocol)
            }
            (AF_NETLINK, SOCK_DGRAM | SOCK_RAW) => protocol == NETLINK_ROUTE,
            (AF_INET | AF_INET6, SOCK_RAW) => {
                self.raw_allowed(protocol)?;
                true
            }
            _ => return Err(Errno(libc::ESOCKTNOSUPPORT)),
        };
        if !ok_proto {
            return Err(Errno(libc::EPROTONOSUPPORT));
        }
        let flags = O_RDWR
            | if ty & SOCK_NONBLOCK != 0 {
                O_NONBLOCK
            } else {
                0
            };
        let idx = self
            .files
            .add(OpenFile::new(Kind::NetSock, flags, Vec::new()));
        let protocol = match (domain, kind) {
            (AF_UNIX | AF_NETLINK, _) => 0,
            (_, SOCK_RAW) => protocol,
            // UDP-Lite: UDP with partial checksums, which loopback never needs; ports of
            // its own
            (_, SOCK_DGRAM) if protocol == IPPROTO_UDPLITE => IPPROTO_UDPLITE,
            (_, SOCK_DGRAM) => IPPROTO_UDP,
            _ => IPPROTO_TCP,
        };
        let mut sock = Sock::new(domain, kind, protocol);
        if kind == SOCK_RAW && domain != AF_NETLINK {
            sock.local = Some(Process::raw_unbound(domain, protocol));
        }
        if kind == SOCK_DGRAM || kind == SOCK_RAW || domain == AF_NETLINK {
            // its receive queue: a pipe that keeps message boundaries
            let pipe = self.files.new_pipe();
            if let Some(Some(p)) = self.files.pipes.get_mut(pipe) {
                p.bounds = Some(Default::default());
            }
            sock.dgram = Some(crate::net::table::Dgram {
                pipe,
                from: VecDeque::new(),
            });
        }
        self.files.net_mut().socks.insert(idx, sock);
        let limit = self.nofile();
        let r = self
            .files
            .install(idx, 0, ty & SOCK_CLOEXEC != 0, limit)
            .map(|fd| fd as u64);
        if r.is_err() {
            self.files.description_state_dropped(idx);
        }
        r
    }

    /// The key and full address a bind of `a` by socket `idx` takes (the port chosen when
    /// it is 0, the socket file made for an AF_UNIX path).
    fn claim(&mut self, idx: usize, a: Addr) -> Result<(Key, Addr), Errno> {
        let s = self.files.net().socks.get(&idx).ok_or(Errno::ENOTSOCK)?;
        let (ty, protocol, reuseport, v6only, family) =
            (s.ty, s.protocol, s.reuseport, s.v6only, s.family);
        match &a {
            Addr::Unix(name) if name.is_empty() => {
                // autobind: an abstract name of five hex digits, as Linux makes
                let mut n = 0u32;
                loop {
                    let name = format!("\0{n:05x}").into_bytes();
                    let k = Key::Abstract(name.clone());
                    if !self.files.net().bound.contains_key(&k) {
                        return Ok((k, Addr::Unix(name)));
                    }
                    n += 1;
                    if n > 0xfffff {
                        return Err(Errno(libc::EADDRINUSE));
                    }
                }
            }
            Addr::Unix(name) if name[0] == 0 => {
                let k = Key::Abstract(name.clone());
                if self.files.net().bound.contains_key(&k) {
                    return Err(Errno(libc::EADDRINUSE));
                }
                Ok((k, a))
            }
            Addr::Unix(path) => {
                let t = self.resolve(AT_FDCWD, path, false)?;
                let mode = libc::S_IFSOCK | (0o777 & !self.umask);
                // SAFETY: valid C string.
                if unsafe { libc::mknodat(t.dirfd, t.path.as_ptr(), mode, 0) } < 0 {
                    let e = Errno::last();
                    return Err(if e == Errno::EEXIST {
                        Errno(libc::EADDRINUSE)
                    } else {
                        e
                    });
                }
                crate::fs::files::restore_mode(&t, mode & 0o777);
                let (dev, ino) = stat_key(&t, false)?;
                Ok((Key::UnixFile { dev, ino }, a))
            }
            inet => {
                if !inet.is_local() {
                    return Err(Errno(libc::EADDRNOTAVAIL));
                }
                let port = if inet.port() == 0 {
                    self.free_port()?
                } else {
                    inet.port()
                };
                let a = inet.with_port(port);
                let k = Key::Port(port);
                for &o in self.files.net().bound.get(&k).into_iter().flatten() {
                    let Some(other) = self.files.net().socks.get(&o) else {
                        continue;
                    };
                    let Some(oa) = &other.local else { continue };
                    if other.ty != ty
                        || other.protocol != protocol
                        || (reuseport && other.reuseport)
                    {
                        continue;
                    }
                    // v6-only sockets and IPv4 ones share a port; the wildcards overlap
                    // everything of their reach; otherwise the same address conflicts
                    let cross = (family == AF_INET) != (other.family == AF_INET);
                    if cross && (v6only || other.v6only) {
                        continue;
                    }
                    let same = match (a.v4(), oa.v4()) {
                        (Some(x), Some(y)) => x == y,
                        _ => a == *oa,
                    };
                    let any_v6 = |x: &Addr, f: i32| f == AF_INET6 && x.is_wildcard();
                    let overlap = same
                        || a.is_wildcard() && (!cross || any_v6(&a, family))
                        || oa.is_wildcard() && (!cross || any_v6(oa, other.family));
                    if overlap {
                        return Err(Errno(libc::EADDRINUSE));
                    }
                }
                Ok((k, a))
            }
        }
    }

    /// An ephemeral port no socket of the run holds.
    fn free_port(&mut self) -> Result<u16, Errno> {
        let (lo, hi) = EPHEMERAL;
        let span = (hi - lo + 1) as u32;
        for _ in 0..span {
            let n = self.files.net().next_port;
            self.files.net_mut().next_port = n.wrapping_add(1);
            let port = lo + (n as u32 % span) as u16;
            if !self.files.net().bound.contains_key(&Key::Port(port)) {
                return Ok(port);
            }
        }
        Err(Errno(libc::EADDRINUSE))
    }

    fn bind_to(&mut self, idx: usize, a: Addr) -> Result<(), Errno> {
        let (k, full) = self.claim(idx, a)?;
        self.files
            .net_mut()
            .bound
            .entry(k.clone())
            .or_default()
            .push(idx);
        let s = self.sock_mut(idx)?;
        s.key = Some(k);
        s.local = Some(full);
        Ok(())
    }

    pub(crate) fn sys_bind(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
    ) -> SysResult {
        let (idx, s) = self.sock(fd)?;
        let family = s.family;
        let raw = s.ty == SOCK_RAW && family != AF_NETLINK;
        if s.local.is_some() && !raw {
            return Err(Errno::EINVAL);
        }
        let (f, a) = read_addr(mem, addr, len)?;
        if raw {
            if f != family {
                return Err(Errno(libc::EAFNOSUPPORT));
            }
            self.raw_bind(idx, a)?;
            return Ok(0);
        }
        if family == AF_NETLINK && f == family {
            self.netlink_bind(idx, a)?;
            return Ok(0);
        }
        // an IPv6 socket takes IPv6 addresses; an IPv4 one IPv4 (AF_UNSPEC aside)
        if f != family {
            return Err(if family == AF_UNIX {
                Errno::EINVAL
            } else {
                Errno(libc::EAFNOSUPPORT)
            });
        }
        self.bind_to(idx, a)?;
        Ok(0)
    }

    pub(crate) fn sys_listen(&mut self, fd: i32, backlog: i32) -> SysResult {
        let (idx, s) = self.sock(fd)?;
        if s.ty == SOCK_DGRAM || s.ty == SOCK_RAW || s.family == AF_NETLINK {
            return Err(Errno::EOPNOTSUPP);
        }
        if !matches!(self.files.file(fd)?.kind, Kind::NetSock) {
            return Err(Errno::EINVAL);
        }
        if s.local.is_none() {
            // an unbound socket listens on an ephemeral port (an autobound name for AF_UNIX)
            let a = if s.family == AF_UNIX {
                Addr::Unix(Vec::new())
            } else if s.family == AF_INET6 {
                Addr::V6 {
                    ip: [0; 16],
                    port: 0,
                }
            } else {
                Addr::V4 {
                    ip: [0; 4],
                    port: 0,
                }
            };
            self.bind_to(idx, a)?;
        }
        let backlog = (backlog.max(0) as usize).clamp(1, SOMAXCONN);
        let me = self.own_ucred_effective();
        let s = self.sock_mut(idx)?;
        s.listener_creds = Some(me);
        match &mut s.listen {
            Some((b, _)) => *b = backlog,
            None => s.listen = Some((backlog, VecDeque::new())),
        }
        Ok(0)
    }

    /// A socket with no name takes one before it sends or connects: an ephemeral port on
    /// the wildcard address (AF_UNIX: it stays unnamed).
    pub(crate) fn autobind(&mut self, idx: usize) -> Result<(), Errno> {
        let Some(s) = self.files.net().socks.get(&idx) else {
            return Err(Errno::ENOTSOCK);
        };
        if s.local.is_some() {
            return Ok(());
        }
        if s.family == AF_UNIX {
            self.sock_mut(idx)?.local = Some(Addr::Unix(Vec::new()));
            return Ok(());
        }
        let any = loopback(s.family).with_port(0).unspecified();
        self.bind_to(idx, any)
    }

    /// The socket a connect or send to `to` from a socket of `family` and `protocol`
    /// reaches: a listening one (`listening`), or a bound datagram one.
    pub(crate) fn find_bound(
        &self,
        family: i32,
        ty: i32,
        protocol: i32,
        to: &Addr,
        listening: bool,
    ) -> Result<usize, Errno> {
        let keys: Vec<Key> = match to {
            Addr::Unix(name) if name.first() == Some(&0) => vec![Key::Abstract(name.clone())],
            Addr::Unix(path) => {
                let t = self.resolve(AT_FDCWD, path, true)?;
                let (dev, ino) = stat_key(&t, true)?;
                vec![Key::UnixFile { dev, ino }]
            }
            inet => vec![Key::Port(inet.port())],
        };
        for k in keys {
            for &i in self.files.net().bound.get(&k).into_iter().flatten() {
                let Some(s) = self.files.net().socks.get(&i) else {
                    continue;
                };
                let Some(la) = &s.local else { continue };
                if s.listen.is_none() == listening || s.ty != ty || s.protocol != protocol {
                    continue;
                }
                let reach = match to {
                    Addr::Unix(_) => true,
                    _ => match (s.family, family) {
                        // an IPv6 socket reaches IPv4 listeners at v4-mapped addresses
                        (AF_INET, AF_INET | AF_INET6) if to.v4().is_some() => {
                            la.is_wildcard() || la.v4() == to.v4()
                        }
                        (AF_INET6, AF_INET6) if to.v4().is_some() => {
                            !s.v6only && (la.is_wildcard() || la.v4() == to.v4())
                        }
                        (AF_INET6, _) if to.v4().is_some() || family == AF_INET => {
                            !s.v6only && la.is_wildcard()
                        }
                        (AF_INET6, AF_INET6) => la.is_wildcard() || la == &to.with_port(la.port()),
                        _ => false,
                    },
                };
                if reach {
                    return Ok(i);
                }
            }
        }
        Err(Errno(libc::ECONNREFUSED))
    }

    pub(crate) fn sys_connect(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
    ) -> SysResult {
        let idx = self.files.entry(fd)?.file;
        if let Kind::Socket { .. } = self.files.file(fd)?.kind {
            // the first connect after a non-blocking one completed says so; later ones
            // say it is connected
            if self
                .files
                .net()
                .socks
                .get(&idx)
                .is_some_and(|s| s.connecting)
            {
                self.sock_mut(idx)?.connecting = false;
                return Ok(0);
            }
            return Err(Errno(libc::EISCONN));
        }
        let (_, s) = self.sock(fd)?;
        let (family, ty) = (s.family, s.ty);
        if s.listen.is_some() {
            return Err(Errno::EINVAL);
        }
        if family == AF_NETLINK {
            // the default destination of sends: the kernel, or no peer (AF_UNSPEC)
            let (f, to) = read_addr(mem, addr, len)?;
            let peer = match (f, to) {
                (AF_NETLINK, a @ Addr::Netlink { .. }) => Some(a),
                (0, _) => None,
                _ => return Err(Errno::EINVAL),
            };
            self.netlink_autobind(idx)?;
            self.sock_mut(idx)?.peer = peer;
            return Ok(0);
        }
        if ty == SOCK_DGRAM {
            return self.dgram_connect(mem, idx, addr, len);
        }
        if ty == SOCK_RAW {
            return self.raw_connect(mem, idx, addr, len);
        }
        let (f, mut to) = read_addr(mem, addr, len)?;
        if f != family {
            return Err(Errno(libc::EAFNOSUPPORT));
        }
        if !to.is_local() {
            return Err(Errno(libc::ENETUNREACH));
        }
        if to.is_wildcard() {
            // Linux takes the wildcard as this machine
            to = loopback(family).with_port(to.port());
        }
        let protocol = self.files.net().socks.get(&idx).map_or(0, |s| s.protocol);
        let listener = self.find_bound(family, ty, protocol, &to, true)?;
        let nonblock = self.files.file(fd)?.flags & O_NONBLOCK != 0;
        let full = self
            .files
            .net()
            .socks
            .get(&listener)
            .and_then(|l| l.listen.as_ref())
            .is_some_and(|(b, q)| q.len() > *b);
        if full {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            return Err(self.block(WaitKind::Retry, None));
        }
        if self
            .files
            .net()
            .socks
            .get(&idx)
            .is_some_and(|s| s.local.is_none())
        {
            let a = if family == AF_UNIX {
                Addr::Unix(Vec::new())
            } else {
                loopback(family)
            };
            // an unbound client gets an ephemeral port (AF_UNIX: stays unnamed)
            if family == AF_UNIX {
                self.sock_mut(idx)?.local = Some(a);
            } else {
                self.bind_to(idx, a)?;
            }
        }
        self.connect_pair(idx, listener, &to);
        if nonblock && family != AF_UNIX {
            self.sock_mut(idx)?.connecting = true;
            return Err(Errno(libc::EINPROGRESS));
        }
        Ok(0)
    }

    /// Connects socket `client` to `listener`: two pipes, the client's description becomes
    /// a connected socket and the server's end waits in the listen queue.
    fn connect_pair(&mut self, client: usize, listener: usize, to: &Addr) {
        let up = self.files.new_pipe();
        let down = self.files.new_pipe();
        if self
            .files
            .net()
            .socks
            .get(&client)
            .is_some_and(|c| c.ty == SOCK_SEQPACKET)
        {
            // messages keep their boundaries
            for id in [up, down] {
                if let Some(Some(p)) = self.files.pipes.get_mut(id) {
                    p.bounds = Some(Default::default());
                    p.sock_type = SOCK_SEQPACKET;
                }
            }
        }
        let (ty, protocol, client_local) = match self.files.net_mut().socks.get_mut(&client) {
            Some(c) => {
                c.peer = Some(to.clone());
                // a client bound to the wildcard takes the route's source address
                if let Some(a) = c.local.as_mut().filter(|a| a.is_wildcard()) {
                    let src = if to.v4().is_some() {
                        loopback(AF_INET)
                    } else {
                        loopback(AF_INET6)
                    };
                    *a = src.with_port(a.port()).in_family(c.family);
                }
                (c.ty, c.protocol, c.local.clone())
            }
            None => return,
        };
        if let Some(Some(f)) = self.files.files.get_mut(client) {
            f.kind = Kind::Socket {
                rx: down,
                tx: up,
                rd: true,
                wr: true,
            };
        }
        // SO_PASSCRED as each side set it (the server's end inherits the listener's), and
        // SO_PEERCRED: the client sees who listened, the server's end who connected
        let passcred = |p: &Process, idx: usize| {
            p.files
                .net()
                .socks
                .get(&idx)
                .and_then(|s| s.opts.get(&(SOL_SOCKET, SO_PASSCRED)))
                .is_some_and(|v| v.iter().any(|&b| b != 0))
        };
        let me = self.own_ucred_effective();
        let listener_creds = self
            .files
            .net()
            .socks
            .get(&listener)
            .and_then(|l| l.listener_creds);
        // a TCP connection's writes to a peer that closed go nowhere once (see `Pipe::tcp`)
        let tcp = self
            .files
            .net()
            .socks
            .get(&listener)
            .is_some_and(|l| l.family != AF_UNIX);
        for (pipe, on, peer) in [
            (down, passcred(self, client), listener_creds),
            (up, passcred(self, listener), Some(me)),
        ] {
            if let Some(Some(p)) = self.files.pipes.get_mut(pipe) {
                p.passcred = on;
                p.peer = peer;
                p.tcp = tcp;
            }
        }
        let Some(l) = self.files.net().socks.get(&listener) else {
            return;
        };
        // the server's end: the listener's family and name, at the address connected to,
        // each address as the listener's family writes it (IPv4 and v4-mapped meet)
        let mut srv = Sock::new(l.family, ty, protocol);
        srv.local = match &l.local {
            Some(Addr::Unix(n)) => Some(Addr::Unix(n.clone())),
            Some(la) => Some(to.with_port(la.port()).in_family(l.family)),
            None => None,
        };
        srv.peer = client_local.map(|a| a.in_family(l.family));
        let s = self.files.add(OpenFile::new(
            Kind::Socket {
                rx: up,
                tx: down,
                rd: true,
                wr: true,
            },
            O_RDWR,
            Vec::new(),
        ));
        // the listen queue's reference
        self.files.retain_file(s);
        self.files.net_mut().socks.insert(s, srv);
        if let Some(l) = self.files.net_mut().socks.get_mut(&listener) {
            if let Some((_, q)) = l.listen.as_mut() {
                q.push_back(s);
                l.arrivals += 1;
            }
        }
    }

    pub(crate) fn sys_accept4(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let (idx, s) = self.sock(fd)?;
        if s.listen.is_none() {
            return Err(Errno::EINVAL);
        }
        let nonblock = self.files.file(fd)?.flags & O_NONBLOCK != 0;
        let next = self
            .sock_mut(idx)?
            .listen
            .as_mut()
            .and_then(|(_, q)| q.pop_front());
        let Some(c) = next else {
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            return Err(self.block(WaitKind::Retry, None));
        };
        let peer = self
            .files
            .net()
            .socks
            .get(&c)
            .and_then(|s| s.peer.clone())
            .unwrap_or(Addr::Unix(Vec::new()));
        if let Some(Some(f)) = self.files.files.get_mut(c) {
            if flags & SOCK_NONBLOCK != 0 {
                f.flags |= O_NONBLOCK;
            }
        }
        let limit = self.nofile();
        let nfd = match self.files.install(c, 0, flags & SOCK_CLOEXEC != 0, limit) {
            Ok(nfd) => nfd,
            Err(e) => {
                // not accepted: it stays first in the queue
                if let Some((_, q)) = self.sock_mut(idx)?.listen.as_mut() {
                    q.push_front(c);
                }
                return Err(e);
            }
        };
        // the queue's reference goes; the fd holds one now
        self.files.release(c);
        write_addr(mem, addr, len, &peer)?;
        Ok(nfd as u64)
    }

    /// getsockname/getpeername of a socket from socket(); None for one that has no entry
    /// here (a socketpair end).
    pub(crate) fn net_name(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        addr: u64,
        len: u64,
        peer: bool,
    ) -> Option<SysResult> {
        let idx = self.files.entry(fd).ok()?.file;
        let s = self.files.net().socks.get(&idx)?;
        if s.family == AF_NETLINK {
            // a netlink socket's port id, bound on first ask; its peer: the kernel unless
            // connected elsewhere
            let a = match (peer, s.peer.clone()) {
                (true, p) => p.unwrap_or(Addr::Netlink { pid: 0, groups: 0 }),
                (false, _) => match self.netlink_autobind(idx) {
                    Ok(_) => s_local(self, idx),
                    Err(e) => return Some(Err(e)),
                },
            };
            return Some(write_addr(mem, addr, len, &a).map(|_| 0));
        }
        let a = if peer {
            match &s.peer {
                // Linux: an IP peer of port 0 (a raw socket's) is no peer
                Some(a) if matches!(a, Addr::V4 { .. } | Addr::V6 { .. }) && a.port() == 0 => {
                    return Some(Err(Errno(libc::ENOTCONN)))
                }
                Some(a) => a.clone(),
                None => return Some(Err(Errno(libc::ENOTCONN))),
            }
        } else {
            s.local.clone().unwrap_or(match s.family {
                AF_UNIX => Addr::Unix(Vec::new()),
                f => loopback(f).with_port(0).unspecified(),
            })
        };
        Some(write_addr(mem, addr, len, &a).map(|_| 0))
    }

    pub(crate) fn sys_setsockopt(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        level: i32,
        name: i32,
        val: u64,
        len: u64,
    ) -> SysResult {
        let idx = self.files.entry(fd)?.file;
        if len > 256 {
            return Err(Errno::EINVAL);
        }
        let mut b = vec![0u8; len as usize];
        rd(mem, val, &mut b)?;
        let int = (b.len() >= 4).then(|| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        // a connected socket keeps SO_PASSCRED with what it reads (see `stream`)
        let connected = match self.files.file(fd)?.kind {
            Kind::Socket { rx, .. } => Some(rx),
            _ => None,
        };
        if let (Some(rx), (SOL_SOCKET, SO_PASSCRED)) = (connected, (level, name)) {
            let on = int.ok_or(Errno::EINVAL)? != 0;
            if let Some(Some(p)) = self.files.pipes.get_mut(rx) {
                p.passcred = on;
            }
        }
        if !self.files.net().socks.contains_key(&idx) {
            // a socketpair end: other options have no effect
            return match connected {
                Some(_) => Ok(0),
                None => Err(Errno::ENOTSOCK),
            };
        }
        let s = self.sock_mut(idx)?;
        match (level, name) {
            (SOL_SOCKET, SO_REUSEADDR) => s.reuseaddr = int.ok_or(Errno::EINVAL)? != 0,
            (SOL_SOCKET, SO_REUSEPORT) => s.reuseport = int.ok_or(Errno::EINVAL)? != 0,
            (SOL_IPV6, IPV6_V6ONLY) if s.family == AF_INET6 => {
                if s.local.is_some() {
                    return Err(Errno::EINVAL);
                }
                s.v6only = int.ok_or(Errno::EINVAL)? != 0;
            }
            // UDP-Lite's checksum coverage: below the 8-byte header means the default, 8
            (IPPROTO_UDPLITE, UDPLITE_SEND_CSCOV | UDPLITE_RECV_CSCOV)
                if s.protocol == IPPROTO_UDPLITE =>
            {
                let v = int.ok_or(Errno::EINVAL)?;
                let v = if v != 0 && v < 8 { 8 } else { v.min(0xffff) };
                s.opts.insert((level, name), v.to_le_bytes().to_vec());
            }
            (
                SOL_SOCKET | SOL_IP | SOL_IPV6 | IPPROTO_TCP | IPPROTO_UDP | SOL_NETLINK | SOL_RAW
                | IPPROTO_ICMPV6,
                _,
            ) => {
                s.opts.insert((level, name), b);
            }
            _ => return Err(Errno(libc::ENOPROTOOPT)),
        }
        Ok(0)
    }

    /// getsockopt of a socket from socket(); None for one without an entry here.
    pub(crate) fn net_getsockopt(
        &mut self,
        fd: i32,
        level: i32,
        name: i32,
    ) -> Option<Result<Vec<u8>, Errno>> {
        let idx = self.files.entry(fd).ok()?.file;
        let s = self.files.net().socks.get(&idx)?;
        if (level, name) == (SOL_SOCKET, SO_PEERCRED) {
            let peer = match self.files.file(fd).ok()?.kind {
                Kind::Socket { rx, .. } => match self.files.pipes.get(rx) {
                    Some(Some(p)) => p.peer,
                    _ => None,
                },
                _ => None,
            };
            return Some(Ok(peer.unwrap_or(Ucred::NONE).to_bytes().to_vec()));
        }
        let int = |v: i32| Some(Ok(v.to_le_bytes().to_vec()));
        match (level, name) {
            (SOL_SOCKET, SO_TYPE) => int(s.ty),
            (SOL_SOCKET, SO_DOMAIN) => int(s.family),
            (SOL_SOCKET, SO_PROTOCOL) => int(s.protocol),
            (SOL_SOCKET, SO_ERROR) => int(0),
            (SOL_SOCKET, SO_ACCEPTCONN) => int(s.listen.is_some() as i32),
            (SOL_SOCKET, SO_REUSEADDR) => int(s.reuseaddr as i32),
            (SOL_SOCKET, SO_REUSEPORT) => int(s.reuseport as i32),
            (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => int(crate::io::fd::PIPE_CAP as i32),
            (SOL_IPV6, IPV6_V6ONLY) if s.family == AF_INET6 => int(s.v6only as i32),
            (IPPROTO_UDPLITE, _) if s.protocol != IPPROTO_UDPLITE => {
                Some(Err(Errno(libc::ENOPROTOOPT)))
            }
            (
                SOL_SOCKET | SOL_IP | SOL_IPV6 | IPPROTO_TCP | IPPROTO_UDP | IPPROTO_UDPLITE
                | SOL_NETLINK | SOL_RAW | IPPROTO_ICMPV6,
                _,
            ) => {
                match s.opts.get(&(level, name)) {
                    Some(v) => Some(Ok(v.clone())),
                    // options nobody set read as off
                    None => int(0),
                }
            }
            _ => Some(Err(Errno(libc::ENOPROTOOPT))),
        }
    }

    /// The family of the socket from socket() behind description `idx`.
    pub(crate) fn socket_family(&self, idx: usize) -> Option<i32> {
        self.files.net().socks.get(&idx).map(|s| s.family)
    }

    /// What moves when a socket from socket() has news for its waiters: its datagram
    /// queue (a pipe), if it has one, and the connections ever queued on it.
    pub(crate) fn socket_wakeups(&self, idx: usize) -> Option<(Option<usize>, u64)> {
        let s = self.files.net().socks.get(&idx)?;
        Some((s.dgram.as_ref().map(|d| d.pipe), s.arrivals))
    }

    /// poll's view of a socket that is not connected: a listener is readable when a
    /// connection waits; an unconnected TCP socket reports a hang-up (as Linux's does).
    pub(crate) fn net_poll(&self, idx: usize) -> i16 {
        if let Some(d) = self
            .files
            .net()
            .socks
            .get(&idx)
            .and_then(|s| s.dgram.as_ref())
        {
            let queued = matches!(self.files.pipes.get(d.pipe), Some(Some(p)) if !p.buf.is_empty());
            return libc::POLLOUT | if queued { libc::POLLIN } else { 0 };
        }
        match self.files.net().socks.get(&idx) {
            Some(s) => match &s.listen {
                Some((_, q)) if !q.is_empty() => libc::POLLIN,
                Some(_) => 0,
                None if s.family == AF_UNIX => libc::POLLOUT,
                None => libc::POLLHUP,
            },
            None => libc::POLLNVAL,
        }
    }
}

/// The device and inode of the file a resolved AF_UNIX path names (ECONNREFUSED if it is
/// not a socket file).
fn stat_key(t: &crate::fs::files::HostTarget, follow: bool) -> Result<(u64, u64), Errno> {
    let flags = if follow && !t.confined {
        0
    } else {
        libc::AT_SYMLINK_NOFOLLOW
    };
    // SAFETY: st is plain data the kernel writes; the path is a valid C string.
    let st = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(t.dirfd, t.path.as_ptr(), &mut st, flags) < 0 {
            return Err(Errno::last());
        }
        st
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Errno(libc::ECONNREFUSED));
    }
    Ok((st.st_dev, st.st_ino))
}
