//! System V semaphores: `semget`, `semop`, `semtimedop`, `semctl`. A semop that cannot
//! proceed blocks its task (`WaitKind::Retry`: it runs again whenever another task's
//! syscall completes, and ends with EAGAIN at semtimedop's timeout); one that nothing can
//! ever release is reported by the scheduler as a deadlock. SEM_UNDO adjustments are kept
//! per process and applied when it ends. Operations are all-or-nothing, as on Linux.

use std::collections::BTreeMap;

use crate::ipc::{self, IpcPerm, Keyed, IPC_INFO, IPC_NOWAIT, IPC_RMID, IPC_SET, IPC_STAT};
use crate::sched::WaitKind;
use crate::{rd, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// Most semaphores in a set, operations in one semop, and a semaphore's largest value
/// (Linux's SEMMSL, SEMOPM, SEMVMX).
const SEMMSL: usize = 32000;
const SEMOPM: usize = 500;
const SEMVMX: i32 = 32767;
const SEM_UNDO: i16 = 0x1000;
const GETPID: i32 = 11;
const GETVAL: i32 = 12;
const GETALL: i32 = 13;
const GETNCNT: i32 = 14;
const GETZCNT: i32 = 15;
const SETVAL: i32 = 16;
const SETALL: i32 = 17;
const SEM_STAT: i32 = 18;
const SEM_INFO: i32 = 19;
const SEM_STAT_ANY: i32 = 20;

#[derive(Clone, Copy, Debug, Default)]
struct Sem {
    val: i32,
    pid: i32,
}

/// A semaphore set.
#[derive(Clone, Debug)]
pub(crate) struct SemSet {
    perm: IpcPerm,
    sems: Vec<Sem>,
    otime: i64,
    ctime: i64,
    /// Tasks blocked in semop on each semaphore (for GETNCNT/GETZCNT): (tid, sem, zero?).
    waiters: Vec<(i32, u16, bool)>,
}

impl Keyed for SemSet {
    fn perm(&self) -> &IpcPerm {
        &self.perm
    }
}

/// SEM_UNDO adjustments of one process: (set, semaphore) -> value to add at its end.
pub(crate) type Undo = BTreeMap<(i32, u16), i32>;

impl Process {
    pub(crate) fn sys_semget(&mut self, key: i32, nsems: i32, flags: i32) -> SysResult {
        match ipc::lookup(&self.ipc.sem, key, flags)? {
            Some(id) => {
                if nsems < 0 || nsems as usize > self.ipc.sem[&id].sems.len() {
                    return Err(Errno::EINVAL);
                }
                Ok(id as u64)
            }
            None => {
                if nsems <= 0 || nsems as usize > SEMMSL {
                    return Err(Errno::EINVAL);
                }
                let set = SemSet {
                    perm: IpcPerm::new(self, key, flags as u32),
                    sems: vec![Sem::default(); nsems as usize],
                    otime: 0,
                    ctime: ipc::now_s(self),
                    waiters: Vec::new(),
                };
                let id = self.ipc.new_id();
                self.ipc.sem.insert(id, set);
                Ok(id as u64)
            }
        }
    }

    /// semop and semtimedop (`timeout`: a guest timespec, 0 for none).
    pub(crate) fn sys_semtimedop(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        sops: u64,
        nsops: u64,
        timeout: u64,
    ) -> SysResult {
        if nsops == 0 {
            return Err(Errno::EINVAL);
        }
        if nsops as usize > SEMOPM {
            return Err(Errno::E2BIG);
        }
        let mut raw = vec![0u8; nsops as usize * 6];
        rd(mem, sops, &mut raw)?;
        let ops: Vec<(u16, i16, i16)> = raw
            .chunks(6)
            .map(|c| {
                (
                    u16::from_le_bytes([c[0], c[1]]),
                    i16::from_le_bytes([c[2], c[3]]),
                    i16::from_le_bytes([c[4], c[5]]),
                )
            })
            .collect();
        let deadline = if timeout != 0 {
            let ns = crate::read_timespec_ns(mem, timeout)?;
            Some(self.deadline_after(ns))
        } else {
            None
        };
        let tid = self.thread.tid;
        let pid = self.pid;
        let now = ipc::now_s(self);
        // (a set removed while this semop waited: EIDRM)
        let gone = if self.restarting {
            Errno(libc::EIDRM)
        } else {
            Errno::EINVAL
        };
        let set = self.ipc.sem.get_mut(&id).ok_or(gone)?;
        set.waiters.retain(|w| w.0 != tid);
        if ops.iter().any(|o| o.0 as usize >= set.sems.len()) {
            return Err(Errno::EFBIG);
        }
        // all or nothing: try them in order on a copy
        let mut vals: Vec<i32> = set.sems.iter().map(|s| s.val).collect();
        let mut blocked = None;
        for &(n, op, flg) in &ops {
            let v = &mut vals[n as usize];
            if op > 0 {
                if *v + op as i32 > SEMVMX {
                    return Err(Errno::ERANGE);
                }
                *v += op as i32;
            } else if op < 0 {
                if *v + (op as i32) < 0 {
                    blocked = Some((n, false, flg));
                    break;
                }
                *v += op as i32;
            } else if *v != 0 {
                blocked = Some((n, true, flg));
                break;
            }
        }
        if let Some((n, zero, flg)) = blocked {
            if flg as i32 & IPC_NOWAIT != 0 {
                return Err(Errno::EAGAIN);
            }
            if deadline.is_some_and(|d| self.deadline_passed(d)) {
                return Err(Errno::EAGAIN);
            }
            if let Some(set) = self.ipc.sem.get_mut(&id) {
                set.waiters.push((tid, n, zero));
            }
            return Err(self.block(WaitKind::Retry, deadline));
        }
        for (k, s) in set.sems.iter_mut().enumerate() {
            if s.val != vals[k] || ops.iter().any(|o| o.0 as usize == k) {
                s.pid = pid;
            }
            s.val = vals[k];
        }
        set.otime = now;
        for &(n, op, flg) in &ops {
            if flg & SEM_UNDO != 0 && op != 0 {
                let e = self.sem_undo.entry((id, n)).or_insert(0);
                *e -= op as i32;
            }
        }
        Ok(0)
    }

    /// The process ends: its SEM_UNDO adjustments are applied (clamped at 0 and SEMVMX).
    pub(crate) fn sem_exit(&mut self) {
        let pid = self.pid;
        for ((id, n), adj) in std::mem::take(&mut self.sem_undo) {
            if let Some(s) = self
                .ipc
                .sem
                .get_mut(&id)
                .and_then(|set| set.sems.get_mut(n as usize))
            {
                s.val = (s.val + adj).clamp(0, SEMVMX);
                s.pid = pid;
            }
        }
    }

    pub(crate) fn sys_semctl(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        num: i32,
        cmd: i32,
        arg: u64,
    ) -> SysResult {
        let cmd = cmd & !ipc::IPC_64;
        if cmd == IPC_INFO || cmd == SEM_INFO {
            // struct seminfo: semmap, semmni, semmns, semmnu, semmsl, semopm, semume,
            // semusz, semvmx, semaem (ints)
            let (sets, sems) = self
                .ipc
                .sem
                .values()
                .fold((0, 0), |(a, b), s| (a + 1, b + s.sems.len() as i32));
            let info: [i32; 10] = if cmd == SEM_INFO {
                [
                    32000,
                    32000,
                    1024000000,
                    sets,
                    SEMMSL as i32,
                    SEMOPM as i32,
                    500,
                    sems,
                    SEMVMX,
                    0,
                ]
            } else {
                [
                    32000,
                    32000,
                    1024000000,
                    32000,
                    SEMMSL as i32,
                    SEMOPM as i32,
                    500,
                    16,
                    SEMVMX,
                    32767,
                ]
            };
            let b: Vec<u8> = info.iter().flat_map(|v| v.to_le_bytes()).collect();
            wr(mem, arg, &b)?;
            return Ok(self.ipc.sem.keys().max().copied().unwrap_or(0) as u64);
        }
        let now = ipc::now_s(self);
        let pid = self.pid;
        let set = self.ipc.sem.get_mut(&id).ok_or(Errno::EINVAL)?;
        let len = set.sems.len();
        let sem_at = |n: i32| -> Result<usize, Errno> {
            usize::try_from(n)
                .ok()
                .filter(|&n| n < len)
                .ok_or(Errno::EINVAL)
        };
        match cmd {
            IPC_STAT | SEM_STAT | SEM_STAT_ANY => {
                let mut b = [0u8; 88];
                set.perm.encode(&mut b);
                b[48..56].copy_from_slice(&set.otime.to_le_bytes());
                b[56..64].copy_from_slice(&set.ctime.to_le_bytes());
                b[64..72].copy_from_slice(&(len as u64).to_le_bytes());
                ipc::write_ds(mem, arg, &b)?;
                Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
            }
            IPC_SET => {
                let mut b = [0u8; ipc::PERM_SIZE];
                rd(mem, arg, &mut b)?;
                set.perm.set_from(&b);
                set.ctime = now;
                Ok(0)
            }
            IPC_RMID => {
                // blocked semops end with EIDRM when they look again (the set is gone)
                self.ipc.sem.remove(&id);
                Ok(0)
            }
            GETVAL => Ok(set.sems[sem_at(num)?].val as u64),
            GETPID => Ok(set.sems[sem_at(num)?].pid as u64),
            GETNCNT | GETZCNT => {
                let n = sem_at(num)? as u16;
                let zero = cmd == GETZCNT;
                Ok(set
                    .waiters
                    .iter()
                    .filter(|w| w.1 == n && w.2 == zero)
                    .count() as u64)
            }
            GETALL => {
                let b: Vec<u8> = set
                    .sems
                    .iter()
                    .flat_map(|s| (s.val as u16).to_le_bytes())
                    .collect();
                wr(mem, arg, &b)?;
                Ok(0)
            }
            SETVAL => {
                let n = sem_at(num)?;
                let v = arg as i32;
                if !(0..=SEMVMX).contains(&v) {
                    return Err(Errno::ERANGE);
                }
                set.sems[n] = Sem { val: v, pid };
                set.ctime = now;
                self.sem_clear_undo(id, Some(n as u16));
                Ok(0)
            }
            SETALL => {
                let mut b = vec![0u8; len * 2];
                rd(mem, arg, &mut b)?;
                let vals: Vec<i32> = b
                    .chunks(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]) as i32)
                    .collect();
                if vals.iter().any(|&v| v > SEMVMX) {
                    return Err(Errno::ERANGE);
                }
                for (s, v) in set.sems.iter_mut().zip(vals) {
                    *s = Sem { val: v, pid };
                }
                set.ctime = now;
                self.sem_clear_undo(id, None);
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// SETVAL/SETALL clear the undo adjustments of the semaphores set (this process's; a
    /// run's other processes keep theirs, a simplification of Linux's per-set lists).
    fn sem_clear_undo(&mut self, id: i32, n: Option<u16>) {
        self.sem_undo
            .retain(|&(i, k), _| i != id || n.is_some_and(|n| n != k));
    }
}
