//! Raw IP sockets (`SOCK_RAW` over AF_INET and AF_INET6) on the run's own network (see
//! `net`): what `ping`, Go's `ip4:icmp` connections and packet tools open.
//!
//! A raw socket is a datagram socket (its receive queue is `dgram`'s) keyed by its IP
//! protocol instead of a port. A send builds the packet the kernel would put on `lo` and
//! hands a copy to every raw socket of the same family and protocol that would take it
//! (bound to the destination or the wildcard, connected to the source or to nobody, and
//! for ICMP not filtering the type out). IPv4 receivers get the packet with its IP header,
//! IPv6 ones the payload only, as on Linux. An ICMP or ICMPv6 echo request to the run's
//! own address is answered by the "kernel" with an echo reply, delivered the same way.
//!
//! What this network does not have: raw sockets of other protocols see only what other
//! raw sockets send (the run's TCP and UDP carry no packets), and a raw send never reaches
//! a TCP or UDP socket. As on Linux, opening one takes root (CAP_NET_RAW): EPERM otherwise.

use crate::net::addr::{Addr, AF_INET, AF_INET6, IPPROTO_ICMPV6, SOCK_RAW, SOL_RAW};
use crate::{Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

pub(crate) const IPPROTO_ICMP: i32 = 1;
/// A send-only raw socket whose sends carry their own IPv4 header.
const IPPROTO_RAW: i32 = 255;
/// SOL_RAW's option: a mask of the ICMP types the socket drops.
const ICMP_FILTER: i32 = 1;
/// IPPROTO_IP option: sends carry their own IPv4 header.
const IP_HDRINCL: i32 = 3;
const IPV4_HEADER: usize = 20;
/// The largest IPv4 packet.
const IPV4_MAX: usize = 65535;

/// The Internet checksum (RFC 1071) of `data`, starting from the partial sum `sum`.
fn checksum(data: &[u8], mut sum: u32) -> u16 {
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += w as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The ICMPv6 checksum's pseudo-header sum (RFC 8200 section 8.1).
fn v6_pseudo_sum(src: &[u8; 16], dst: &[u8; 16], len: usize) -> u32 {
    let mut sum = 0u32;
    for a in [src, dst] {
        for c in a.chunks(2) {
            sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
    }
    sum + (len as u32 >> 16) + (len as u32 & 0xffff) + IPPROTO_ICMPV6 as u32
}

/// An IPv4 header for `payload` bytes of `proto` from `src` to `dst`.
fn ipv4_header(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    id: u16,
    df: bool,
    payload: usize,
) -> [u8; 20] {
    let mut h = [0u8; IPV4_HEADER];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&((IPV4_HEADER + payload) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    if df {
        h[6] = 0x40;
    }
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = checksum(&h, 0);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// A packet on `lo`: its family's addresses, protocol, and payload after the IP header.
struct Packet {
    family: i32,
    src: Addr,
    dst: Addr,
    proto: i32,
    /// IPv4: the whole packet, header included (what IPv4 raw sockets read); IPv6: the
    /// payload.
    bytes: Vec<u8>,
    /// Where the payload starts in `bytes`.
    at: usize,
}

impl Packet {
    fn payload(&self) -> &[u8] {
        &self.bytes[self.at..]
    }
}

fn ip_of(a: &Addr) -> Addr {
    match a {
        Addr::V4 { ip, .. } => Addr::V4 { ip: *ip, port: 0 },
        Addr::V6 { ip, .. } => Addr::V6 { ip: *ip, port: 0 },
        other => other.clone(),
    }
}

impl Process {
    /// socket(AF_INET|AF_INET6, SOCK_RAW, protocol): who may open one, and of what.
    pub(crate) fn raw_allowed(&self, protocol: i32) -> Result<(), Errno> {
        if !(0..=255).contains(&protocol) {
            return Err(Errno::EINVAL);
        }
        if protocol == 0 {
            return Err(Errno(libc::EPROTONOSUPPORT));
        }
        if !self.creds.capable(crate::proc::creds::CAP_NET_RAW) {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// The name a raw socket has before any bind: the wildcard, with its protocol where
    /// the port would be (what getsockname shows on Linux).
    pub(crate) fn raw_unbound(family: i32, protocol: i32) -> Addr {
        match family {
            AF_INET6 => Addr::V6 {
                ip: [0; 16],
                port: protocol as u16,
            },
            _ => Addr::V4 {
                ip: [0; 4],
                port: protocol as u16,
            },
        }
    }

    /// bind of a raw socket: an address of this machine or the wildcard; it takes nothing
    /// from anyone (raw sockets share addresses), and binds again freely.
    pub(crate) fn raw_bind(&mut self, idx: usize, a: Addr) -> Result<(), Errno> {
        if !a.is_local() {
            return Err(Errno(libc::EADDRNOTAVAIL));
        }
        let s = self.sock_mut(idx)?;
        s.local = Some(a.with_port(s.protocol as u16));
        Ok(())
    }

    /// connect of a raw socket: its default destination, the only source it receives
    /// from, and (when bound to the wildcard) the route's source as its own address.
    pub(crate) fn raw_connect(
        &mut self,
        mem: &mut AddressSpace,
        idx: usize,
        addr: u64,
        len: u64,
    ) -> SysResult {
        let (f, to) = crate::net::addr::read_addr(mem, addr, len)?;
        let s = self.sock_mut(idx)?;
        if f == 0 {
            s.peer = None;
            return Ok(0);
        }
        if f != s.family {
            return Err(Errno(libc::EAFNOSUPPORT));
        }
        if !to.is_local() {
            return Err(Errno(libc::ENETUNREACH));
        }
        let family = s.family;
        if let Some(l) = s.local.clone().filter(|l| l.is_wildcard()) {
            s.local = Some(l.seen_by(family));
        }
        s.peer = Some(to);
        Ok(0)
    }

    /// A send on raw socket `idx` to `to` (its peer when None): the packet goes to the
    /// raw sockets that take it, and an echo request is answered.
    pub(crate) fn raw_send(
        &mut self,
        idx: usize,
        data: &[u8],
        to: Option<Addr>,
    ) -> Result<usize, Errno> {
        let s = self.files.net().socks.get(&idx).ok_or(Errno::ENOTSOCK)?;
        let (family, proto) = (s.family, s.protocol);
        let hdrincl = proto == IPPROTO_RAW
            || s.opts
                .get(&(crate::net::addr::SOL_IP, IP_HDRINCL))
                .is_some_and(|v| v.iter().any(|&b| b != 0));
        let local = s.local.clone();
        let to = match to.or_else(|| s.peer.clone()) {
            Some(a) => a,
            None => return Err(Errno(libc::EDESTADDRREQ)),
        };
        if !to.is_local() {
            return Err(Errno(libc::ENETUNREACH));
        }
        let dst = ip_of(&to.or_loopback(family));
        // the source: the bound address, else the route's (the loopback address)
        let src = match local {
            Some(l) if !l.is_wildcard() => ip_of(&l),
            _ => crate::net::addr::loopback(family),
        };
        let packet = if family == AF_INET6 {
            if data.len() > IPV4_MAX {
                return Err(Errno(libc::EMSGSIZE));
            }
            let mut bytes = data.to_vec();
            if proto == IPPROTO_ICMPV6 {
                // the kernel fills in ICMPv6's checksum
                if bytes.len() < 4 {
                    return Err(Errno::EINVAL);
                }
                set_icmpv6_checksum(&mut bytes, &src, &dst);
            }
            Packet {
                family,
                src,
                dst,
                proto,
                bytes,
                at: 0,
            }
        } else if hdrincl {
            self.raw_v4_own_header(data)?
        } else {
            if data.len() > IPV4_MAX - IPV4_HEADER {
                return Err(Errno(libc::EMSGSIZE));
            }
            let (Some(s4), Some(d4)) = (src.v4(), dst.v4()) else {
                return Err(Errno(libc::EAFNOSUPPORT));
            };
            // numbered even with DF: a raw socket's packets may be fragmented locally
            // (Linux's ignore_df below IP_PMTUDISC_DO)
            let id = self.next_ip_id();
            let mut bytes = ipv4_header(s4, d4, proto as u8, id, true, data.len()).to_vec();
            bytes.extend_from_slice(data);
            Packet {
                family,
                src,
                dst,
                proto,
                bytes,
                at: IPV4_HEADER,
            }
        };
        self.raw_deliver(&packet);
        if let Some(reply) = self.echo_reply(&packet) {
            self.raw_deliver(&reply);
        }
        Ok(data.len())
    }

    /// An IPv4 packet a sender wrote whole (IP_HDRINCL): Linux fills in the total length
    /// and checksum, and the source address and id when they are 0.
    fn raw_v4_own_header(&mut self, data: &[u8]) -> Result<Packet, Errno> {
        if data.len() < IPV4_HEADER || data.len() > IPV4_MAX {
            return Err(Errno::EINVAL);
        }
        let ihl = (data[0] & 0xf) as usize * 4;
        if ihl < IPV4_HEADER || ihl > data.len() {
            return Err(Errno::EINVAL);
        }
        let mut bytes = data.to_vec();
        let total = bytes.len() as u16;
        bytes[2..4].copy_from_slice(&total.to_be_bytes());
        if bytes[12..16] == [0; 4] {
            bytes[12..16].copy_from_slice(&[127, 0, 0, 1]);
        }
        // Linux numbers a sender's own header only when it may be fragmented (no DF)
        if bytes[4..6] == [0; 2] && bytes[6] & 0x40 == 0 {
            let id = self.next_ip_id();
            bytes[4..6].copy_from_slice(&id.to_be_bytes());
        }
        bytes[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&bytes[..ihl], 0);
        bytes[10..12].copy_from_slice(&c.to_be_bytes());
        let ip4 = |o: usize| [bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]];
        Ok(Packet {
            family: AF_INET,
            src: Addr::V4 {
                ip: ip4(12),
                port: 0,
            },
            dst: Addr::V4 {
                ip: ip4(16),
                port: 0,
            },
            proto: bytes[9] as i32,
            at: ihl,
            bytes,
        })
    }

    /// The IPv4 identification of the run's next packet.
    fn next_ip_id(&mut self) -> u16 {
        let n = &mut self.files.net_mut().ip_id;
        *n = n.wrapping_add(1);
        *n
    }

    /// Queues a copy of `p` on every raw socket that takes it (a full queue drops it).
    fn raw_deliver(&mut self, p: &Packet) {
        if !p.dst.is_local() {
            // not for this machine, and there is no other
            return;
        }
        let icmp_type = match p.proto {
            IPPROTO_ICMP if p.family == AF_INET => p.payload().first().copied(),
            _ => None,
        };
        let takers: Vec<(usize, usize)> = self
            .files
            .net()
            .socks
            .iter()
            .filter(|(_, s)| s.ty == SOCK_RAW && s.family == p.family && s.protocol == p.proto)
            .filter(|(_, s)| {
                s.local
                    .as_ref()
                    .is_none_or(|l| l.is_wildcard() || ip_of(l) == p.dst)
            })
            .filter(|(_, s)| s.peer.as_ref().is_none_or(|r| ip_of(r) == p.src))
            .filter(|(_, s)| {
                // ICMP_FILTER: a mask of the ICMP types (below 32) the socket drops
                let mask = s
                    .opts
                    .get(&(SOL_RAW, ICMP_FILTER))
                    .filter(|v| v.len() >= 4)
                    .map_or(0, |v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]));
                icmp_type.is_none_or(|t| t >= 32 || mask & (1 << t) == 0)
            })
            .filter_map(|(&i, s)| s.dgram.as_ref().map(|d| (i, d.pipe)))
            .collect();
        let bytes = if p.family == AF_INET {
            &p.bytes[..]
        } else {
            p.payload()
        };
        for (idx, pipe) in takers {
            // a full queue drops the packet
            let _ = self.dgram_queue(idx, pipe, bytes, p.src.clone(), true);
        }
    }

    /// The kernel's answer to an ICMP (ICMPv6) echo request with a good checksum.
    fn echo_reply(&mut self, p: &Packet) -> Option<Packet> {
        let body = p.payload();
        if body.len() < 8 || !p.dst.is_local() {
            return None;
        }
        match (p.family, p.proto) {
            (AF_INET, IPPROTO_ICMP) if body[0] == 8 && body[1] == 0 => {
                if checksum(body, 0) != 0 {
                    return None;
                }
                let mut reply = body.to_vec();
                reply[0] = 0;
                reply[2..4].copy_from_slice(&[0, 0]);
                let c = checksum(&reply, 0);
                reply[2..4].copy_from_slice(&c.to_be_bytes());
                let (s4, d4) = (p.dst.v4()?, p.src.v4()?);
                let id = self.next_ip_id();
                let mut bytes =
                    ipv4_header(s4, d4, IPPROTO_ICMP as u8, id, false, reply.len()).to_vec();
                bytes.extend_from_slice(&reply);
                Some(Packet {
                    family: AF_INET,
                    src: p.dst.clone(),
                    dst: p.src.clone(),
                    proto: IPPROTO_ICMP,
                    bytes,
                    at: IPV4_HEADER,
                })
            }
            (AF_INET6, IPPROTO_ICMPV6) if body[0] == 128 && body[1] == 0 => {
                let mut reply = body.to_vec();
                reply[0] = 129;
                set_icmpv6_checksum(&mut reply, &p.dst, &p.src);
                Some(Packet {
                    family: AF_INET6,
                    src: p.dst.clone(),
                    dst: p.src.clone(),
                    proto: IPPROTO_ICMPV6,
                    bytes: reply,
                    at: 0,
                })
            }
            _ => None,
        }
    }
}

/// Writes the ICMPv6 checksum of `msg` (at offset 2) from `src` to `dst`.
fn set_icmpv6_checksum(msg: &mut [u8], src: &Addr, dst: &Addr) {
    let (Addr::V6 { ip: s, .. }, Addr::V6 { ip: d, .. }) = (src, dst) else {
        return;
    };
    msg[2..4].copy_from_slice(&[0, 0]);
    let c = checksum(msg, v6_pseudo_sum(s, d, msg.len()));
    msg[2..4].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 section 3's bytes sum to 0xddf2 (before the complement)
        let b = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&b, 0), !0xddf2);
        // a header with its checksum in place sums to zero
        let h = ipv4_header([127, 0, 0, 1], [127, 0, 0, 1], 1, 7, true, 11);
        assert_eq!(checksum(&h, 0), 0);
    }
}
