//! AF_NETLINK sockets of the NETLINK_ROUTE family on the run's own network: the requests
//! programs make to learn the machine's interfaces and addresses (RTM_GETLINK and
//! RTM_GETADDR), answered from `netdev`'s one loopback interface.
//!
//! Go's `net.Interfaces` and `InterfaceAddrs`, glibc's `getifaddrs`, `if_nameindex` and
//! `getaddrinfo`'s AI_ADDRCONFIG check all open a NETLINK_ROUTE socket, bind it, send a
//! dump request to the kernel (port 0) and read replies until NLMSG_DONE. A netlink socket
//! here is a datagram socket (`dgram`) whose sends go to this module instead of another
//! socket: each request's replies are queued on the sender's own receive queue, one
//! datagram of messages and a second with NLMSG_DONE, each message carrying the request's
//! sequence number and the socket's port id (Go checks both). Requests the kernel would
//! refuse get NLMSG_ERROR with Linux's errno; other netlink families, and messages to
//! other sockets (there is no multicast here), are refused with the errors Linux gives
//! where such a family or peer does not exist.

use crate::net::addr::Addr;
use crate::net::device::{
    IfAddr, LO_ADDRS, LO_FLAGS, LO_INDEX, LO_MTU, LO_NAME, LO_TXQLEN, LO_TYPE,
};
use crate::net::table::Dgram;
use crate::{Errno, Process};

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;

const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;

const IFLA_ADDRESS: u16 = 1;
const IFLA_BROADCAST: u16 = 2;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_QDISC: u16 = 6;
const IFLA_STATS: u16 = 7;
const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_LINKMODE: u16 = 17;
const IFLA_STATS64: u16 = 23;
const IFLA_GROUP: u16 = 27;
const IFLA_PROMISCUITY: u16 = 30;
const IFLA_NUM_TX_QUEUES: u16 = 31;
const IFLA_NUM_RX_QUEUES: u16 = 32;
const IFLA_CARRIER: u16 = 33;

const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_LABEL: u16 = 3;
const IFA_CACHEINFO: u16 = 6;
const IFA_FLAGS: u16 = 8;
/// IFA_F_PERMANENT: an address configured, not learned.
const IFA_F_PERMANENT: u32 = 0x80;
/// RT_SCOPE_HOST: loopback addresses reach this machine only.
const RT_SCOPE_HOST: u8 = 254;
/// Where autobound port ids go when the process's pid is taken (Linux counts down).
const FIRST_AUTOBIND: i32 = -4096;

/// A message being built: header, fixed part, attributes, each 4-byte aligned.
struct Msg(Vec<u8>);

impl Msg {
    fn new(ty: u16, flags: u16, seq: u32, pid: u32) -> Msg {
        let mut b = vec![0u8; NLMSG_HDRLEN];
        b[4..6].copy_from_slice(&ty.to_le_bytes());
        b[6..8].copy_from_slice(&flags.to_le_bytes());
        b[8..12].copy_from_slice(&seq.to_le_bytes());
        b[12..16].copy_from_slice(&pid.to_le_bytes());
        Msg(b)
    }

    fn bytes(&mut self, b: &[u8]) -> &mut Msg {
        self.0.extend_from_slice(b);
        self
    }

    fn attr(&mut self, ty: u16, v: &[u8]) -> &mut Msg {
        let len = 4 + v.len();
        self.0.extend_from_slice(&(len as u16).to_le_bytes());
        self.0.extend_from_slice(&ty.to_le_bytes());
        self.0.extend_from_slice(v);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }

    fn u32(&mut self, ty: u16, v: u32) -> &mut Msg {
        self.attr(ty, &v.to_le_bytes())
    }

    fn done(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[..4].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

/// `lo` as RTM_NEWLINK.
fn link_msg(flags: u16, seq: u32, pid: u32) -> Vec<u8> {
    let mut m = Msg::new(RTM_NEWLINK, flags, seq, pid);
    // ifinfomsg: family, pad, type, index, flags, change
    m.bytes(&[0, 0])
        .bytes(&LO_TYPE.to_le_bytes())
        .bytes(&LO_INDEX.to_le_bytes())
        .bytes(&LO_FLAGS.to_le_bytes())
        .bytes(&0u32.to_le_bytes());
    let mut name = LO_NAME.to_vec();
    name.push(0);
    m.attr(IFLA_IFNAME, &name)
        .u32(IFLA_TXQLEN, LO_TXQLEN)
        .attr(IFLA_OPERSTATE, &[0]) // IF_OPER_UNKNOWN, as loopback reports
        .attr(IFLA_LINKMODE, &[0])
        .u32(IFLA_MTU, LO_MTU)
        .u32(IFLA_GROUP, 0)
        .u32(IFLA_PROMISCUITY, 0)
        .u32(IFLA_NUM_TX_QUEUES, 1)
        .u32(IFLA_NUM_RX_QUEUES, 1)
        .attr(IFLA_CARRIER, &[1])
        .attr(IFLA_QDISC, b"noqueue\0")
        .attr(IFLA_ADDRESS, &[0; 6])
        .attr(IFLA_BROADCAST, &[0; 6])
        // counters: a run's traffic never crosses a device
        .attr(IFLA_STATS64, &[0; 24 * 8])
        .attr(IFLA_STATS, &[0; 24 * 4]);
    m.done()
}

/// One of `lo`'s addresses as RTM_NEWADDR.
fn addr_msg(a: &IfAddr, flags: u16, seq: u32, pid: u32) -> Vec<u8> {
    let mut m = Msg::new(RTM_NEWADDR, flags, seq, pid);
    // ifaddrmsg: family, prefix length, flags, scope, index
    m.bytes(&[a.family, a.prefix, IFA_F_PERMANENT as u8, RT_SCOPE_HOST])
        .bytes(&LO_INDEX.to_le_bytes());
    // ifa_cacheinfo: preferred and valid lifetimes forever, no timestamps
    let mut cache = [0u8; 16];
    cache[..8].fill(0xff);
    if a.family == libc::AF_INET as u8 {
        let mut label = LO_NAME.to_vec();
        label.push(0);
        m.attr(IFA_ADDRESS, a.addr)
            .attr(IFA_LOCAL, a.addr)
            .attr(IFA_LABEL, &label)
            .u32(IFA_FLAGS, IFA_F_PERMANENT)
            .attr(IFA_CACHEINFO, &cache);
    } else {
        m.attr(IFA_ADDRESS, a.addr)
            .attr(IFA_CACHEINFO, &cache)
            .u32(IFA_FLAGS, IFA_F_PERMANENT);
    }
    m.done()
}

/// NLMSG_ERROR for `req` (error 0: an acknowledgement, which carries only its header).
fn error_msg(req: &[u8], err: i32, seq: u32, pid: u32) -> Vec<u8> {
    let mut m = Msg::new(NLMSG_ERROR, 0, seq, pid);
    m.bytes(&(-err).to_le_bytes());
    m.bytes(if err == 0 { &req[..NLMSG_HDRLEN] } else { req });
    m.done()
}

/// The replies to one request message: datagrams in the order they are read.
fn answer(req: &[u8], pid: u32) -> Vec<Vec<u8>> {
    let ty = u16::from_le_bytes([req[4], req[5]]);
    let flags = u16::from_le_bytes([req[6], req[7]]);
    let seq = u32::from_le_bytes([req[8], req[9], req[10], req[11]]);
    let body = &req[NLMSG_HDRLEN..];
    if flags & NLM_F_REQUEST == 0 {
        // the kernel takes only requests
        return Vec::new();
    }
    let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
    let family = body.first().copied().unwrap_or(0) as i32;
    let multi = |msgs: Vec<Vec<u8>>| {
        let mut done = Msg::new(NLMSG_DONE, NLM_F_MULTI, seq, pid);
        done.bytes(&0i32.to_le_bytes());
        let mut out = Vec::new();
        if !msgs.is_empty() {
            out.push(msgs.concat());
        }
        out.push(done.done());
        out
    };
    let mut out = match (ty, dump) {
        (RTM_GETLINK, true) => multi(vec![link_msg(NLM_F_MULTI, seq, pid)]),
        (RTM_GETADDR, true) => multi(
            LO_ADDRS
                .iter()
                .filter(|a| family == 0 || a.family as i32 == family)
                .map(|a| addr_msg(a, NLM_F_MULTI, seq, pid))
                .collect(),
        ),
        (RTM_GETLINK, false) => {
            // by index, or by IFLA_IFNAME when the index is 0
            let index = body
                .get(4..8)
                .map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let by_name = attr(body.get(16..).unwrap_or(&[]), IFLA_IFNAME)
                .map(|n| n.split(|&c| c == 0).next().unwrap_or(&[]) == LO_NAME);
            let lo = match (index, by_name) {
                (0, Some(hit)) => hit,
                (0, None) => return vec![error_msg(req, libc::EINVAL, seq, pid)],
                (i, _) => i == LO_INDEX,
            };
            if !lo {
                return vec![error_msg(req, libc::ENODEV, seq, pid)];
            }
            vec![link_msg(0, seq, pid)]
        }
        // changes to links, addresses, routes: a guest may not configure the machine
        (16 | 17 | 19 | 20 | 21 | 24 | 25, _) => {
            return vec![error_msg(req, libc::EPERM, seq, pid)];
        }
        _ => return vec![error_msg(req, libc::EOPNOTSUPP, seq, pid)],
    };
    if flags & NLM_F_ACK != 0 && !dump {
        out.push(error_msg(req, 0, seq, pid));
    }
    out
}

/// The value of attribute `ty` in a run of attributes.
fn attr(mut b: &[u8], ty: u16) -> Option<&[u8]> {
    while b.len() >= 4 {
        let len = u16::from_le_bytes([b[0], b[1]]) as usize;
        let t = u16::from_le_bytes([b[2], b[3]]);
        if len < 4 || len > b.len() {
            return None;
        }
        if t & 0x3fff == ty {
            return Some(&b[4..len]);
        }
        b = &b[len.next_multiple_of(4).min(b.len())..];
    }
    None
}

impl Process {
    /// A netlink socket's port id: bound by the guest, or autobound to the pid first and
    /// to counted-down negative ids after, as Linux does.
    pub(crate) fn netlink_autobind(&mut self, idx: usize) -> Result<u32, Errno> {
        let s = self.files.net().socks.get(&idx).ok_or(Errno::ENOTSOCK)?;
        if let Some(Addr::Netlink { pid, .. }) = s.local {
            return Ok(pid);
        }
        let taken = |p: &Process, id: u32| {
            p.files
                .net()
                .socks
                .values()
                .any(|s| matches!(s.local, Some(Addr::Netlink { pid, .. }) if pid == id))
        };
        let mut id = self.pid as u32;
        let mut next = FIRST_AUTOBIND;
        while taken(self, id) {
            id = next as u32;
            next -= 1;
        }
        self.sock_mut(idx)?.local = Some(Addr::Netlink { pid: id, groups: 0 });
        Ok(id)
    }

    /// bind of a netlink socket: its port id (0: chosen), and multicast groups (accepted;
    /// nothing here is ever multicast).
    pub(crate) fn netlink_bind(&mut self, idx: usize, a: Addr) -> Result<(), Errno> {
        let Addr::Netlink { pid, groups } = a else {
            return Err(Errno::EINVAL);
        };
        if pid == 0 {
            self.netlink_autobind(idx)?;
        } else {
            let used = self.files.net().socks.iter().any(|(&i, s)| {
                i != idx && matches!(s.local, Some(Addr::Netlink { pid: p, .. }) if p == pid)
            });
            if used {
                return Err(Errno(libc::EADDRINUSE));
            }
            self.sock_mut(idx)?.local = Some(Addr::Netlink { pid, groups });
        }
        if let Some(Some(Addr::Netlink { groups: g, .. })) = self
            .files
            .net_mut()
            .socks
            .get_mut(&idx)
            .map(|s| s.local.as_mut())
        {
            *g = groups;
        }
        Ok(())
    }

    /// A send on netlink socket `idx`: requests to the kernel (port 0) are answered on the
    /// socket's own queue. Any other destination is a socket that does not exist here.
    pub(crate) fn netlink_send(
        &mut self,
        idx: usize,
        data: &[u8],
        to: Option<Addr>,
    ) -> Result<usize, Errno> {
        match to.or_else(|| {
            self.files
                .net()
                .socks
                .get(&idx)
                .and_then(|s| s.peer.clone())
        }) {
            None | Some(Addr::Netlink { pid: 0, .. }) => {}
            Some(Addr::Netlink { .. }) => return Err(Errno(libc::ECONNREFUSED)),
            Some(_) => return Err(Errno::EINVAL),
        }
        let pid = self.netlink_autobind(idx)?;
        let pipe = match self
            .files
            .net()
            .socks
            .get(&idx)
            .and_then(|s| s.dgram.as_ref())
        {
            Some(Dgram { pipe, .. }) => *pipe,
            None => return Err(Errno::ENOTSOCK),
        };
        let mut at = 0;
        while data.len() - at >= NLMSG_HDRLEN {
            let len = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let len = len as usize;
            if len < NLMSG_HDRLEN || len > data.len() - at {
                // a malformed message ends the batch, as the kernel's parser stops there
                break;
            }
            for reply in answer(&data[at..at + len], pid) {
                // a full queue drops the reply (Linux: ENOBUFS on the next read; a run's
                // queue holds 64 KiB, far more than one dump of `lo`)
                let kernel = Addr::Netlink { pid: 0, groups: 0 };
                let _ = self.dgram_queue(idx, pipe, &reply, kernel, true);
            }
            // (the last message's padding may be missing: Go sends 17 bytes)
            at = (at + len.next_multiple_of(4)).min(data.len());
        }
        Ok(data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ty: u16, flags: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Msg::new(ty, flags, 7, 0);
        m.bytes(body);
        m.done()
    }

    /// The messages in a datagram: (type, flags, seq, pid, body).
    fn parse(mut d: &[u8]) -> Vec<(u16, u16, u32, u32, Vec<u8>)> {
        let mut v = Vec::new();
        while d.len() >= NLMSG_HDRLEN {
            let len = u32::from_le_bytes(d[..4].try_into().unwrap()) as usize;
            let w = |i: usize| u16::from_le_bytes([d[i], d[i + 1]]);
            let l = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().unwrap());
            v.push((w(4), w(6), l(8), l(12), d[NLMSG_HDRLEN..len].to_vec()));
            d = &d[len.next_multiple_of(4).min(d.len())..];
        }
        v
    }

    #[test]
    fn a_link_dump_is_lo_then_done() {
        let r = answer(
            &request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, &[0; 16]),
            42,
        );
        assert_eq!(r.len(), 2);
        let links = parse(&r[0]);
        assert_eq!(links.len(), 1);
        let (ty, flags, seq, pid, body) = &links[0];
        assert_eq!((*ty, *flags, *seq, *pid), (RTM_NEWLINK, NLM_F_MULTI, 7, 42));
        assert_eq!(i32::from_le_bytes(body[4..8].try_into().unwrap()), LO_INDEX);
        assert_eq!(attr(&body[16..], IFLA_IFNAME), Some(&b"lo\0"[..]));
        assert_eq!(attr(&body[16..], IFLA_MTU), Some(&LO_MTU.to_le_bytes()[..]));
        let done = parse(&r[1]);
        assert_eq!(done[0].0, NLMSG_DONE);
    }

    #[test]
    fn an_address_dump_filters_by_family() {
        let all = answer(
            &request(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, &[0; 8]),
            1,
        );
        assert_eq!(parse(&all[0]).len(), 2);
        let v6 = answer(
            &request(
                RTM_GETADDR,
                NLM_F_REQUEST | NLM_F_DUMP,
                &[10, 0, 0, 0, 0, 0, 0, 0],
            ),
            1,
        );
        let m = parse(&v6[0]);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].4[1], 128);
        assert_eq!(attr(&m[0].4[8..], IFA_ADDRESS).map(|a| a[15]), Some(1));
        let v4 = answer(
            &request(
                RTM_GETADDR,
                NLM_F_REQUEST | NLM_F_DUMP,
                &[2, 0, 0, 0, 0, 0, 0, 0],
            ),
            1,
        );
        let m = parse(&v4[0]);
        assert_eq!(attr(&m[0].4[8..], IFA_LOCAL), Some(&[127, 0, 0, 1][..]));
    }

    #[test]
    fn other_requests_get_linux_errors() {
        let err = |r: &[Vec<u8>]| {
            let m = parse(&r[0]);
            assert_eq!(m[0].0, NLMSG_ERROR);
            i32::from_le_bytes(m[0].4[..4].try_into().unwrap())
        };
        let mut body = [0u8; 16];
        body[4] = 5; // no interface 5
        assert_eq!(
            err(&answer(&request(RTM_GETLINK, NLM_F_REQUEST, &body), 1)),
            -libc::ENODEV
        );
        assert_eq!(
            err(&answer(&request(20, NLM_F_REQUEST, &[0; 8]), 1)),
            -libc::EPERM
        );
        assert_eq!(
            err(&answer(&request(99, NLM_F_REQUEST, &[]), 1)),
            -libc::EOPNOTSUPP
        );
        // not a request: no answer
        assert!(answer(&request(RTM_GETLINK, 0, &[0; 16]), 1).is_empty());
        // an ack after a get that asked for one
        body[4] = 1;
        let r = answer(&request(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &body), 1);
        assert_eq!(r.len(), 2);
        assert_eq!(err(&r[1..]), 0);
    }
}
