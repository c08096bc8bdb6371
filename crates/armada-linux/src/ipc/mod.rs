//! System V IPC, private to one run (one batch lane): the lane's table of shared memory
//! segments, semaphore sets and message queues, their keys and ids, and `struct
//! ipc64_perm`. The objects themselves are in `shm`, `sem` and `msg`. Keys never reach the
//! host's IPC namespace, so two runs (or two lanes) using the same key do not meet.
//!
//! The table is lane-wide kernel state: like the open file descriptions, the process being
//! serviced holds it (`Process::hand_over`).

use std::collections::BTreeMap;

use crate::{wr, Errno, Process};

pub(crate) mod msg;
pub(crate) mod sem;
pub(crate) mod shm;
use armada_machine::memory::AddressSpace;

pub(crate) const IPC_PRIVATE: i32 = 0;
pub(crate) const IPC_CREAT: i32 = 0o1000;
pub(crate) const IPC_EXCL: i32 = 0o2000;
pub(crate) const IPC_NOWAIT: i32 = 0o4000;
pub(crate) const IPC_RMID: i32 = 0;
pub(crate) const IPC_SET: i32 = 1;
pub(crate) const IPC_STAT: i32 = 2;
pub(crate) const IPC_INFO: i32 = 3;
/// glibc ORs this into every *ctl command on 64-bit targets (the layouts are the 64 ones).
pub(crate) const IPC_64: i32 = 0x100;
/// Most objects of each kind one run holds (Linux: IPCMNI is 32768).
pub(crate) const MAX_OBJECTS: usize = 32000;
/// Size of `struct ipc64_perm` on arm64.
pub(crate) const PERM_SIZE: usize = 48;

/// `struct ipc64_perm`: the key, owner, creator and mode of an object.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IpcPerm {
    pub(crate) key: i32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) cuid: u32,
    pub(crate) cgid: u32,
    pub(crate) mode: u32,
    pub(crate) seq: u16,
}

impl IpcPerm {
    pub(crate) fn new(p: &Process, key: i32, mode: u32) -> IpcPerm {
        IpcPerm {
            key,
            uid: p.creds.uid.eff,
            gid: p.creds.gid.eff,
            cuid: p.creds.uid.eff,
            cgid: p.creds.gid.eff,
            mode: mode & 0o777,
            seq: 0,
        }
    }

    pub(crate) fn encode(&self, b: &mut [u8]) {
        let put = |b: &mut [u8], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(b, 0, self.key as u32);
        put(b, 4, self.uid);
        put(b, 8, self.gid);
        put(b, 12, self.cuid);
        put(b, 16, self.cgid);
        put(b, 20, self.mode);
        b[24..26].copy_from_slice(&self.seq.to_le_bytes());
    }

    /// IPC_SET: the owner and the permission bits from a guest ipc64_perm.
    pub(crate) fn set_from(&mut self, b: &[u8]) {
        let get = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        self.uid = get(4);
        self.gid = get(8);
        self.mode = (self.mode & !0o777) | (get(20) & 0o777);
    }
}

/// The lane's IPC objects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ipc {
    pub(crate) shm: BTreeMap<i32, shm::Segment>,
    pub(crate) sem: BTreeMap<i32, sem::SemSet>,
    pub(crate) msg: BTreeMap<i32, msg::Queue>,
    next_id: i32,
}

impl Ipc {
    /// A fresh id (one counter for all kinds, so an id names one object).
    pub(crate) fn new_id(&mut self) -> i32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1) & 0x3fff_ffff;
        id
    }
}

/// An object with an ipc64_perm.
pub(crate) trait Keyed {
    fn perm(&self) -> &IpcPerm;
    /// Removed (IPC_RMID) but still in use: its key no longer finds it.
    fn removed(&self) -> bool {
        false
    }
}

/// The id of the live object with `key`.
pub(crate) fn find_key<T: Keyed>(m: &BTreeMap<i32, T>, key: i32) -> Option<i32> {
    if key == IPC_PRIVATE {
        return None;
    }
    m.iter()
        .find(|(_, o)| o.perm().key == key && !o.removed())
        .map(|(&id, _)| id)
}

/// What a *get call does with `key` and `flags`: Ok(Some(id)) an existing object, Ok(None)
/// one to create, or the error (EEXIST, ENOENT, ENOSPC).
pub(crate) fn lookup<T: Keyed>(
    m: &BTreeMap<i32, T>,
    key: i32,
    flags: i32,
) -> Result<Option<i32>, Errno> {
    match find_key(m, key) {
        Some(_) if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 => Err(Errno::EEXIST),
        Some(id) => Ok(Some(id)),
        None if key != IPC_PRIVATE && flags & IPC_CREAT == 0 => Err(Errno::ENOENT),
        None if m.len() >= MAX_OBJECTS => Err(Errno::ENOSPC),
        None => Ok(None),
    }
}

/// Seconds of the realtime clock, for the *_time fields.
pub(crate) fn now_s(p: &Process) -> i64 {
    p.clock_now(crate::time::clock::CLOCK_REALTIME)
        .map(|(s, _)| s)
        .unwrap_or(0)
}

/// Writes a `struct ipc64_perm`-headed structure to the guest.
pub(crate) fn write_ds(mem: &mut AddressSpace, addr: u64, b: &[u8]) -> Result<(), Errno> {
    wr(mem, addr, b)
}
