//! Sockets' numbers and names: families, types, levels and options as arm64 Linux numbers
//! them, and socket addresses (`sockaddr_in`, `sockaddr_in6`, `sockaddr_un`, `sockaddr_nl`)
//! in and out of guest memory.

use crate::{rd, rd_u32, wr, wr_u32, Errno};
use armada_machine::memory::AddressSpace;

pub(crate) const AF_UNIX: i32 = 1;
pub(crate) const AF_INET: i32 = 2;
pub(crate) const AF_INET6: i32 = 10;
pub(crate) const SOCK_STREAM: i32 = 1;
pub(crate) const SOCK_DGRAM: i32 = 2;
pub(crate) const SOCK_RAW: i32 = 3;
pub(crate) const SOCK_SEQPACKET: i32 = 5;
pub(crate) const SOCK_NONBLOCK: i32 = 0o4000;
pub(crate) const SOCK_CLOEXEC: i32 = 0o2000000;
pub(crate) const MSG_DONTWAIT: i32 = 0x40;
pub(crate) const MSG_NOSIGNAL: i32 = 0x4000;
pub(crate) const IPPROTO_TCP: i32 = 6;
pub(crate) const IPPROTO_UDP: i32 = 17;
pub(crate) const IPPROTO_UDPLITE: i32 = 136;
pub(crate) const UDPLITE_SEND_CSCOV: i32 = 10;
pub(crate) const UDPLITE_RECV_CSCOV: i32 = 11;
pub(crate) const SOL_SOCKET: i32 = 1;
pub(crate) const SOL_IPV6: i32 = 41;
pub(crate) const SOL_IP: i32 = 0;
/// Raw sockets' option level (ICMP_FILTER), and ICMPv6's (ICMP6_FILTER; see `rawsock`).
pub(crate) const SOL_RAW: i32 = 255;
pub(crate) const IPPROTO_ICMPV6: i32 = 58;
pub(crate) const SOL_NETLINK: i32 = 270;
pub(crate) const SO_REUSEADDR: i32 = 2;
pub(crate) const SO_TYPE: i32 = 3;
pub(crate) const SO_ERROR: i32 = 4;
pub(crate) const SO_SNDBUF: i32 = 7;
pub(crate) const SO_RCVBUF: i32 = 8;
pub(crate) const SO_REUSEPORT: i32 = 15;
pub(crate) const SO_PASSCRED: i32 = 16;
pub(crate) const SO_PEERCRED: i32 = 17;
pub(crate) const SO_ACCEPTCONN: i32 = 30;
pub(crate) const SO_PROTOCOL: i32 = 38;
pub(crate) const SO_DOMAIN: i32 = 39;
pub(crate) const IPV6_V6ONLY: i32 = 26;
pub(crate) const AF_NETLINK: i32 = 16;
pub(crate) const NETLINK_ROUTE: i32 = 0;

/// A socket address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    V4 {
        ip: [u8; 4],
        port: u16,
    },
    V6 {
        ip: [u8; 16],
        port: u16,
    },
    /// An AF_UNIX name: a path, an abstract name (leading NUL), or unnamed (empty).
    Unix(Vec<u8>),
    /// A netlink port id (0: the kernel) and multicast groups (see `netlink`).
    Netlink {
        pid: u32,
        groups: u32,
    },
}

impl Addr {
    pub(crate) fn port(&self) -> u16 {
        match self {
            Addr::V4 { port, .. } | Addr::V6 { port, .. } => *port,
            Addr::Unix(_) | Addr::Netlink { .. } => 0,
        }
    }

    pub(crate) fn with_port(&self, port: u16) -> Addr {
        match self {
            Addr::V4 { ip, .. } => Addr::V4 { ip: *ip, port },
            Addr::V6 { ip, .. } => Addr::V6 { ip: *ip, port },
            u => u.clone(),
        }
    }

    /// The IPv4 address this one stands for (IPv4, or IPv6 v4-mapped).
    pub(crate) fn v4(&self) -> Option<[u8; 4]> {
        match self {
            Addr::V4 { ip, .. } => Some(*ip),
            Addr::V6 { ip, .. } if ip[..10] == [0; 10] && ip[10..12] == [0xff, 0xff] => {
                Some([ip[12], ip[13], ip[14], ip[15]])
            }
            _ => None,
        }
    }

    pub(crate) fn is_wildcard(&self) -> bool {
        match self {
            Addr::V4 { ip, .. } => *ip == [0; 4],
            Addr::V6 { ip, .. } => *ip == [0; 16],
            Addr::Unix(_) | Addr::Netlink { .. } => false,
        }
    }

    /// A loopback address of this machine (or the wildcard, which connect takes as one).
    pub(crate) fn is_local(&self) -> bool {
        if self.is_wildcard() {
            return true;
        }
        if let Some(v4) = self.v4() {
            return v4[0] == 127 || v4 == [0; 4];
        }
        match self {
            Addr::V6 { ip, .. } => {
                let mut one = [0u8; 16];
                one[15] = 1;
                *ip == one
            }
            _ => true,
        }
    }

    /// The address a connect or send to this one reaches: the wildcard means this
    /// machine's loopback.
    pub(crate) fn or_loopback(&self, family: i32) -> Addr {
        if self.is_wildcard() {
            loopback(family).with_port(self.port())
        } else {
            self.clone()
        }
    }

    /// This address as a socket of `family` writes it: IPv4 as v4-mapped IPv6 for an IPv6
    /// socket, v4-mapped IPv6 as IPv4 for an IPv4 one; others as they are.
    pub(crate) fn in_family(&self, family: i32) -> Addr {
        match (self, self.v4()) {
            (Addr::V6 { port, .. }, Some(ip)) if family == AF_INET => Addr::V4 { ip, port: *port },
            (Addr::V4 { .. }, _) if family == AF_INET6 => self.seen_by(AF_INET6),
            _ => self.clone(),
        }
    }

    /// How a socket of `family` sees this sender: a wildcard address is the loopback one
    /// (the route's source), and an IPv4 sender seen by an IPv6 socket is v4-mapped.
    pub(crate) fn seen_by(&self, family: i32) -> Addr {
        let a = match self {
            Addr::V4 { .. } | Addr::V6 { .. } if self.is_wildcard() => {
                let f = if matches!(self, Addr::V4 { .. }) {
                    AF_INET
                } else {
                    AF_INET6
                };
                loopback(f).with_port(self.port())
            }
            other => other.clone(),
        };
        match a {
            Addr::V4 { ip, port } if family == AF_INET6 => {
                let mut m = [0u8; 16];
                m[10] = 0xff;
                m[11] = 0xff;
                m[12..].copy_from_slice(&ip);
                Addr::V6 { ip: m, port }
            }
            a => a,
        }
    }

    /// As a guest sockaddr.
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Addr::V4 { ip, port } => {
                let mut b = vec![0u8; 16];
                b[..2].copy_from_slice(&(AF_INET as u16).to_le_bytes());
                b[2..4].copy_from_slice(&port.to_be_bytes());
                b[4..8].copy_from_slice(ip);
                b
            }
            Addr::V6 { ip, port } => {
                let mut b = vec![0u8; 28];
                b[..2].copy_from_slice(&(AF_INET6 as u16).to_le_bytes());
                b[2..4].copy_from_slice(&port.to_be_bytes());
                b[8..24].copy_from_slice(ip);
                b
            }
            Addr::Unix(name) => {
                let mut b = (AF_UNIX as u16).to_le_bytes().to_vec();
                b.extend_from_slice(name);
                if name.first().is_some_and(|&c| c != 0) {
                    b.push(0);
                }
                b
            }
            Addr::Netlink { pid, groups } => {
                let mut b = vec![0u8; 12];
                b[..2].copy_from_slice(&(AF_NETLINK as u16).to_le_bytes());
                b[4..8].copy_from_slice(&pid.to_le_bytes());
                b[8..12].copy_from_slice(&groups.to_le_bytes());
                b
            }
        }
    }
}

/// A socket's own name as it stands.
impl Addr {
    /// The wildcard address of this one's family (an unbound socket's name).
    pub(crate) fn unspecified(&self) -> Addr {
        match self {
            Addr::V4 { .. } => Addr::V4 {
                ip: [0; 4],
                port: 0,
            },
            Addr::V6 { .. } => Addr::V6 {
                ip: [0; 16],
                port: 0,
            },
            u => u.clone(),
        }
    }
}

/// The loopback address of a family.
pub(crate) fn loopback(family: i32) -> Addr {
    if family == AF_INET6 {
        let mut ip = [0u8; 16];
        ip[15] = 1;
        Addr::V6 { ip, port: 0 }
    } else {
        Addr::V4 {
            ip: [127, 0, 0, 1],
            port: 0,
        }
    }
}

/// Reads a guest sockaddr of `len` bytes.
pub(crate) fn read_addr(mem: &mut AddressSpace, addr: u64, len: u64) -> Result<(i32, Addr), Errno> {
    if !(2..=128).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    rd(mem, addr, &mut b)?;
    let family = u16::from_le_bytes([b[0], b[1]]) as i32;
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match family {
        AF_INET if len >= 16 => Ok((
            family,
            Addr::V4 {
                ip: [b[4], b[5], b[6], b[7]],
                port: port(&b),
            },
        )),
        AF_INET6 if len >= 24 => {
            let mut ip = [0u8; 16];
            ip.copy_from_slice(&b[8..24]);
            Ok((family, Addr::V6 { ip, port: port(&b) }))
        }
        AF_INET | AF_INET6 => Err(Errno::EINVAL),
        AF_NETLINK if len >= 12 => {
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            Ok((
                family,
                Addr::Netlink {
                    pid: w(4),
                    groups: w(8),
                },
            ))
        }
        AF_NETLINK => Err(Errno::EINVAL),
        AF_UNIX => {
            let mut name = b[2..].to_vec();
            if name.first().is_some_and(|&c| c != 0) {
                // a path ends at its first NUL
                if let Some(n) = name.iter().position(|&c| c == 0) {
                    name.truncate(n);
                }
            }
            Ok((family, Addr::Unix(name)))
        }
        _ => Err(Errno(libc::EAFNOSUPPORT)),
    }
}

/// Writes `a` to a guest (sockaddr, socklen_t*) pair: truncated to the room given, the
/// full length reported.
pub(crate) fn write_addr(
    mem: &mut AddressSpace,
    addr: u64,
    len_ptr: u64,
    a: &Addr,
) -> Result<(), Errno> {
    if addr == 0 || len_ptr == 0 {
        return Ok(());
    }
    let room = rd_u32(mem, len_ptr)? as i32;
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let b = a.encode();
    let n = b.len().min(room as usize);
    wr(mem, addr, &b[..n])?;
    wr_u32(mem, len_ptr, b.len() as u32)
}
