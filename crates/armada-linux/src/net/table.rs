//! The lane's socket table: each socket's state (family, type, names, listen queue,
//! options, a datagram socket's receive queue), keyed by its open file description, and
//! the names bound. The calls that change it are in `socket`, `dgram`, `raw` and `netlink`.

use std::collections::{BTreeMap, VecDeque};

use crate::net::addr::Addr;

/// What a bound name is known by: the port space, or the AF_UNIX socket file, or the
/// abstract name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    Port(u16),
    UnixFile { dev: u64, ino: u64 },
    Abstract(Vec<u8>),
}

/// A socket's state in the lane's network.
#[derive(Clone, Debug)]
pub(crate) struct Sock {
    pub(crate) family: i32,
    pub(crate) ty: i32,
    pub(crate) protocol: i32,
    pub(crate) local: Option<Addr>,
    pub(crate) peer: Option<Addr>,
    pub(crate) key: Option<Key>,
    /// Listening: the connections not accepted yet (server-side descriptions, each holding
    /// a reference) and the backlog.
    pub(crate) listen: Option<(usize, VecDeque<usize>)>,
    /// Connections ever queued on it (a wakeup stamp, see `Process::poll_stamp`).
    pub(crate) arrivals: u64,
    pub(crate) reuseaddr: bool,
    pub(crate) reuseport: bool,
    pub(crate) v6only: bool,
    /// Options set and not otherwise interpreted, to be read back by getsockopt.
    pub(crate) opts: BTreeMap<(i32, i32), Vec<u8>>,
    /// A non-blocking connect was started (a second connect says EISCONN).
    pub(crate) connecting: bool,
    /// A datagram socket's receive queue (see `dgram`).
    pub(crate) dgram: Option<crate::net::table::Dgram>,
}

impl Sock {
    pub(crate) fn new(family: i32, ty: i32, protocol: i32) -> Sock {
        Sock {
            family,
            ty,
            protocol,
            local: None,
            peer: None,
            key: None,
            listen: None,
            arrivals: 0,
            reuseaddr: false,
            reuseport: false,
            v6only: false,
            opts: BTreeMap::new(),
            connecting: false,
            dgram: None,
        }
    }
}

/// The lane's network: its sockets and the names they are bound to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Net {
    pub(crate) socks: BTreeMap<usize, Sock>,
    pub(crate) bound: BTreeMap<Key, Vec<usize>>,
    pub(crate) next_port: u16,
    /// The IPv4 identification of the last raw packet (see `rawsock`).
    pub(crate) ip_id: u16,
}

/// A datagram socket's receive queue: a pipe with message boundaries, and the sender of
/// each message in it.
#[derive(Clone, Debug)]
pub(crate) struct Dgram {
    pub(crate) pipe: usize,
    pub(crate) from: VecDeque<Addr>,
}
