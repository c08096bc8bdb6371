//! The lane's socket table: each socket's state (family, type, names, listen queue,
//! options, a datagram socket's receive queue), keyed by its open file description, and
//! the names bound. The calls that change it are in `socket`, `dgram`, `raw` and `netlink`.

use std::collections::{BTreeMap, VecDeque};

use crate::io::fd::{DescriptionState, Files, Released, Ucred};
use crate::net::addr::{Addr, SOL_SOCKET};

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
    /// A listener: who listened (its clients' SO_PEERCRED).
    pub(crate) listener_creds: Option<Ucred>,
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
            listener_creds: None,
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

/// A table with no socket in it: what a process that holds none of the lane's state sees.
static NO_SOCKETS: Net = Net {
    socks: BTreeMap::new(),
    bound: BTreeMap::new(),
    next_port: 0,
    ip_id: 0,
};

impl Files {
    /// The lane's socket table.
    pub(crate) fn net(&self) -> &Net {
        self.sockets
            .as_deref()
            .and_then(|s| s.as_any().downcast_ref::<Net>())
            .unwrap_or(&NO_SOCKETS)
    }

    /// The lane's socket table, made on the first socket.
    pub(crate) fn net_mut(&mut self) -> &mut Net {
        if !self
            .sockets
            .as_deref()
            .is_some_and(|s| s.as_any().is::<Net>())
        {
            self.sockets = Some(Box::<Net>::default());
        }
        self.sockets
            .as_deref_mut()
            .and_then(|s| s.as_any_mut().downcast_mut::<Net>())
            .expect("the socket table was just made")
    }
}

impl DescriptionState for Net {
    /// A socket's description is gone: its name is free again, and the connections it had
    /// queued are dropped (their clients read end of file).
    fn dropped(&mut self, idx: usize) -> Released {
        let mut r = Released::default();
        let Some(s) = self.socks.remove(&idx) else {
            return r;
        };
        if let Some(k) = s.key {
            if let Some(v) = self.bound.get_mut(&k) {
                v.retain(|&i| i != idx);
                if v.is_empty() {
                    self.bound.remove(&k);
                }
            }
        }
        if let Some((_, q)) = s.listen {
            r.descriptions.extend(q);
        }
        if let Some(d) = s.dgram {
            r.pipe_ends.extend([(d.pipe, false), (d.pipe, true)]);
        }
        r
    }

    /// SO_LINGER on, with a time of 0.
    fn resets_on_close(&self, idx: usize) -> bool {
        const SO_LINGER: i32 = 13;
        self.socks
            .get(&idx)
            .and_then(|s| s.opts.get(&(SOL_SOCKET, SO_LINGER)))
            .is_some_and(|v| v.len() >= 8 && v[..4] != [0; 4] && v[4..8] == [0; 4])
    }

    fn clone_box(&self) -> Box<dyn DescriptionState> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
