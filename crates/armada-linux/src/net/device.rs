//! The run's network device: one loopback interface, `lo`, as a Linux machine with no
//! other interface shows it (net/core/dev.c's view), and the SIOCGIF* ioctls that ask
//! about it on any socket.
//!
//! The run's own network (`net`) is loopback only, so `lo` is all a guest may see: index
//! 1, up and running, MTU 65536, with 127.0.0.1/8 and ::1/128. The same facts answer
//! rtnetlink (`netlink`: `net.Interfaces` in Go, glibc's `getifaddrs` and
//! `if_nameindex`) and the ioctls here (`ifconfig`-style tools, Python's
//! `socket.if_nametoindex` on old libcs), so the two never disagree.

use crate::io::fd::Kind;
use crate::{rd, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// The loopback interface's index, name and link facts.
pub(crate) const LO_INDEX: i32 = 1;
pub(crate) const LO_NAME: &[u8] = b"lo";
pub(crate) const LO_MTU: u32 = 65536;
pub(crate) const LO_TXQLEN: u32 = 1000;
/// ARPHRD_LOOPBACK.
pub(crate) const LO_TYPE: u16 = 772;
/// IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP.
pub(crate) const LO_FLAGS: u32 = 0x1 | 0x8 | 0x40 | 0x1_0000;

/// One address of the interface.
pub(crate) struct IfAddr {
    /// AF_INET or AF_INET6.
    pub(crate) family: u8,
    pub(crate) prefix: u8,
    pub(crate) addr: &'static [u8],
}

/// `lo`'s addresses, in the order Linux lists them (IPv4 first).
pub(crate) const LO_ADDRS: [IfAddr; 2] = [
    IfAddr {
        family: libc::AF_INET as u8,
        prefix: 8,
        addr: &[127, 0, 0, 1],
    },
    IfAddr {
        family: libc::AF_INET6 as u8,
        prefix: 128,
        addr: &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    },
];

const SIOCGIFNAME: u32 = 0x8910;
const SIOCGIFCONF: u32 = 0x8912;
const SIOCGIFFLAGS: u32 = 0x8913;
const SIOCGIFADDR: u32 = 0x8915;
const SIOCGIFDSTADDR: u32 = 0x8917;
const SIOCGIFBRDADDR: u32 = 0x8919;
const SIOCGIFNETMASK: u32 = 0x891b;
const SIOCGIFMETRIC: u32 = 0x891d;
const SIOCGIFMTU: u32 = 0x8921;
const SIOCGIFHWADDR: u32 = 0x8927;
const SIOCGIFINDEX: u32 = 0x8933;
const SIOCGIFTXQLEN: u32 = 0x8942;

/// `struct ifreq`: a 16-byte name and a 24-byte union.
const IFREQ: usize = 40;
const IFNAMSIZ: usize = 16;

impl Process {
    /// Whether `req` is one of the interface ioctls (SIOCGIF*).
    pub(crate) fn is_ifreq(req: u32) -> bool {
        matches!(
            req,
            SIOCGIFNAME
                | SIOCGIFCONF
                | SIOCGIFFLAGS
                | SIOCGIFADDR
                | SIOCGIFDSTADDR
                | SIOCGIFBRDADDR
                | SIOCGIFNETMASK
                | SIOCGIFMETRIC
                | SIOCGIFMTU
                | SIOCGIFHWADDR
                | SIOCGIFINDEX
                | SIOCGIFTXQLEN
        )
    }

    /// An ioctl on one of the run's own sockets that the network answers (SIOCGIF*), or
    /// None for the file layer to answer.
    pub(crate) fn socket_ioctl(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        req: u32,
        arg: u64,
    ) -> Option<SysResult> {
        let own_socket = self
            .files
            .file(fd)
            .is_ok_and(|f| matches!(f.kind, Kind::NetSock | Kind::Socket { .. }));
        (own_socket && Self::is_ifreq(req)).then(|| self.sys_ifreq(mem, req, arg))
    }
}

/// A sockaddr_in of `ip` in an ifreq's union.
fn sockaddr_in(u: &mut [u8], ip: [u8; 4]) {
    u[..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
    u[4..8].copy_from_slice(&ip);
}

impl Process {
    /// SIOCGIF* on a socket: what the run's one interface is (ENODEV for any other name).
    pub(crate) fn sys_ifreq(&mut self, mem: &mut AddressSpace, req: u32, arg: u64) -> SysResult {
        if req == SIOCGIFCONF {
            return Self::ifconf(mem, arg);
        }
        let mut r = [0u8; IFREQ];
        rd(mem, arg, &mut r)?;
        let name_len = r[..IFNAMSIZ]
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(IFNAMSIZ);
        if req == SIOCGIFNAME {
            // by index (the union's int)
            if i32::from_le_bytes([r[16], r[17], r[18], r[19]]) != LO_INDEX {
                return Err(Errno::ENODEV);
            }
            r[..IFNAMSIZ].fill(0);
            r[..LO_NAME.len()].copy_from_slice(LO_NAME);
            wr(mem, arg, &r)?;
            return Ok(0);
        }
        if &r[..name_len] != LO_NAME {
            return Err(Errno::ENODEV);
        }
        let u = &mut r[IFNAMSIZ..];
        u.fill(0);
        match req {
            SIOCGIFFLAGS => u[..2].copy_from_slice(&(LO_FLAGS as u16).to_le_bytes()),
            SIOCGIFADDR | SIOCGIFDSTADDR => sockaddr_in(u, [127, 0, 0, 1]),
            SIOCGIFNETMASK => sockaddr_in(u, [255, 0, 0, 0]),
            // no broadcast address on loopback: Linux gives 0.0.0.0
            SIOCGIFBRDADDR => sockaddr_in(u, [0; 4]),
            SIOCGIFMETRIC => {}
            SIOCGIFMTU => u[..4].copy_from_slice(&LO_MTU.to_le_bytes()),
            // sa_family ARPHRD_LOOPBACK, an all-zero hardware address
            SIOCGIFHWADDR => u[..2].copy_from_slice(&LO_TYPE.to_le_bytes()),
            SIOCGIFINDEX => u[..4].copy_from_slice(&LO_INDEX.to_le_bytes()),
            SIOCGIFTXQLEN => u[..4].copy_from_slice(&LO_TXQLEN.to_le_bytes()),
            _ => return Err(Errno::EINVAL),
        }
        wr(mem, arg, &r)?;
        Ok(0)
    }

    /// SIOCGIFCONF: the interfaces with an IPv4 address (`lo`), or with a NULL buffer the
    /// room they need.
    fn ifconf(mem: &mut AddressSpace, arg: u64) -> SysResult {
        let mut c = [0u8; 16];
        rd(mem, arg, &mut c)?;
        let len = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let buf = u64::from_le_bytes(c[8..16].try_into().unwrap_or([0; 8]));
        let used = if buf == 0 {
            IFREQ as i32
        } else if len >= IFREQ as i32 {
            let mut r = [0u8; IFREQ];
            r[..LO_NAME.len()].copy_from_slice(LO_NAME);
            sockaddr_in(&mut r[IFNAMSIZ..], [127, 0, 0, 1]);
            wr(mem, buf, &r)?;
            IFREQ as i32
        } else {
            0
        };
        wr(mem, arg, &used.to_le_bytes())?;
        Ok(0)
    }
}
