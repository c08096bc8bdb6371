//! The run's network: sockets on its own loopback (stream, datagram, raw IP, netlink), its
//! one network device, and `--net host`.

pub(crate) mod addr;
pub(crate) mod device;
pub(crate) mod dgram;
pub mod host;
pub(crate) mod netlink;
pub(crate) mod raw;
pub(crate) mod socket;
pub(crate) mod stream;
pub(crate) mod table;
