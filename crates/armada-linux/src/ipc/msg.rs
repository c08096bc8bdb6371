//! System V message queues: `msgget`, `msgsnd`, `msgrcv`, `msgctl`. A send to a full queue
//! and a receive that finds no matching message block their task (`WaitKind::Retry`)
//! unless IPC_NOWAIT says otherwise; removing a queue ends its waiters with EIDRM.

use std::collections::VecDeque;

use crate::ipc::{self, IpcPerm, Keyed, IPC_INFO, IPC_NOWAIT, IPC_RMID, IPC_SET, IPC_STAT};
use crate::sched::WaitKind;
use crate::{rd, rd_u64, wr, wr_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// Largest message and a queue's default capacity in bytes (Linux's MSGMAX, MSGMNB).
const MSGMAX: u64 = 8192;
const MSGMNB: u64 = 16384;
const MSG_NOERROR: i32 = 0o10000;
const MSG_EXCEPT: i32 = 0o20000;
const MSG_COPY: i32 = 0o40000;
const MSG_STAT: i32 = 11;
const MSG_INFO: i32 = 12;
const MSG_STAT_ANY: i32 = 13;

/// A message queue.
#[derive(Clone, Debug)]
pub(crate) struct Queue {
    perm: IpcPerm,
    msgs: VecDeque<(i64, Vec<u8>)>,
    bytes: u64,
    qbytes: u64,
    stime: i64,
    rtime: i64,
    ctime: i64,
    lspid: i32,
    lrpid: i32,
}

impl Keyed for Queue {
    fn perm(&self) -> &IpcPerm {
        &self.perm
    }
}

impl Process {
    pub(crate) fn sys_msgget(&mut self, key: i32, flags: i32) -> SysResult {
        if let Some(id) = ipc::lookup(&self.ipc.msg, key, flags)? {
            return Ok(id as u64);
        }
        let q = Queue {
            perm: IpcPerm::new(self, key, flags as u32),
            msgs: VecDeque::new(),
            bytes: 0,
            qbytes: MSGMNB,
            stime: 0,
            rtime: 0,
            ctime: ipc::now_s(self),
            lspid: 0,
            lrpid: 0,
        };
        let id = self.ipc.new_id();
        self.ipc.msg.insert(id, q);
        Ok(id as u64)
    }

    /// The queue `id`; EIDRM for one removed while this syscall waited on it.
    fn queue(&mut self, id: i32) -> Result<&mut Queue, Errno> {
        let gone = if self.restarting {
            Errno(libc::EIDRM)
        } else {
            Errno::EINVAL
        };
        self.ipc.msg.get_mut(&id).ok_or(gone)
    }

    pub(crate) fn sys_msgsnd(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        msgp: u64,
        size: u64,
        flags: i32,
    ) -> SysResult {
        if size > MSGMAX {
            return Err(Errno::EINVAL);
        }
        let mtype = rd_u64(mem, msgp)? as i64;
        if mtype <= 0 {
            return Err(Errno::EINVAL);
        }
        let mut text = vec![0u8; size as usize];
        rd(mem, msgp + 8, &mut text)?;
        let (pid, now) = (self.pid, ipc::now_s(self));
        let q = self.queue(id)?;
        if q.bytes + size > q.qbytes || q.msgs.len() as u64 >= q.qbytes {
            if flags & IPC_NOWAIT != 0 {
                return Err(Errno::EAGAIN);
            }
            return Err(self.block(WaitKind::Retry, None));
        }
        q.bytes += size;
        q.msgs.push_back((mtype, text));
        q.stime = now;
        q.lspid = pid;
        Ok(0)
    }

    pub(crate) fn sys_msgrcv(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        msgp: u64,
        size: u64,
        typ: i64,
        flags: i32,
    ) -> SysResult {
        if flags & MSG_COPY != 0 {
            // (a checkpoint/restore interface, needs CONFIG_CHECKPOINT_RESTORE)
            return Err(Errno::ENOSYS);
        }
        if (size as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        let (pid, now) = (self.pid, ipc::now_s(self));
        let q = self.queue(id)?;
        let except = flags & MSG_EXCEPT != 0;
        let pick = match typ {
            0 => (!q.msgs.is_empty()).then_some(0),
            t if t > 0 => q
                .msgs
                .iter()
                .position(|(mt, _)| if except { *mt != t } else { *mt == t }),
            t => {
                // the lowest type <= |t|, the first of it
                let lim = t.unsigned_abs() as i64;
                q.msgs
                    .iter()
                    .enumerate()
                    .filter(|(_, (mt, _))| *mt <= lim)
                    .min_by_key(|(k, (mt, _))| (*mt, *k))
                    .map(|(k, _)| k)
            }
        };
        let Some(k) = pick else {
            if flags & IPC_NOWAIT != 0 {
                return Err(Errno(libc::ENOMSG));
            }
            return Err(self.block(WaitKind::Retry, None));
        };
        let len = q.msgs[k].1.len() as u64;
        if len > size && flags & MSG_NOERROR == 0 {
            return Err(Errno::E2BIG);
        }
        let n = len.min(size);
        let (mtype, text) = q.msgs[k].clone();
        crate::check_writable(mem, msgp, 8 + n)?;
        wr_u64(mem, msgp, mtype as u64)?;
        wr(mem, msgp + 8, &text[..n as usize])?;
        let q = self.queue(id)?;
        q.msgs.remove(k);
        q.bytes -= len;
        q.rtime = now;
        q.lrpid = pid;
        Ok(n)
    }

    pub(crate) fn sys_msgctl(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        cmd: i32,
        buf: u64,
    ) -> SysResult {
        let cmd = cmd & !ipc::IPC_64;
        if cmd == IPC_INFO || cmd == MSG_INFO {
            // struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni, msgssz, msgtql (int),
            // msgseg (unsigned short)
            let (n, msgs, bytes) = self.ipc.msg.values().fold((0, 0, 0), |(a, b, c), q| {
                (a + 1, b + q.msgs.len() as i32, c + q.bytes as i32)
            });
            let v: [i32; 7] = if cmd == MSG_INFO {
                [n, msgs, MSGMAX as i32, MSGMNB as i32, 32000, bytes, msgs]
            } else {
                [
                    32000,
                    16384 * 4,
                    MSGMAX as i32,
                    MSGMNB as i32,
                    32000,
                    16,
                    16384 * 4,
                ]
            };
            let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            b.extend_from_slice(&0xffffu16.to_le_bytes());
            b.extend_from_slice(&[0, 0]);
            wr(mem, buf, &b)?;
            return Ok(self.ipc.msg.keys().max().copied().unwrap_or(0) as u64);
        }
        let now = ipc::now_s(self);
        let q = self.ipc.msg.get_mut(&id).ok_or(Errno::EINVAL)?;
        match cmd {
            IPC_STAT | MSG_STAT | MSG_STAT_ANY => {
                let mut b = [0u8; 120];
                q.perm.encode(&mut b);
                let put = |b: &mut [u8], at: usize, v: u64| {
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes())
                };
                put(&mut b, 48, q.stime as u64);
                put(&mut b, 56, q.rtime as u64);
                put(&mut b, 64, q.ctime as u64);
                put(&mut b, 72, q.bytes);
                put(&mut b, 80, q.msgs.len() as u64);
                put(&mut b, 88, q.qbytes);
                b[96..100].copy_from_slice(&q.lspid.to_le_bytes());
                b[100..104].copy_from_slice(&q.lrpid.to_le_bytes());
                ipc::write_ds(mem, buf, &b)?;
                Ok(if cmd == IPC_STAT { 0 } else { id as u64 })
            }
            IPC_SET => {
                let mut b = [0u8; 96];
                rd(mem, buf, &mut b)?;
                q.perm.set_from(&b[..ipc::PERM_SIZE]);
                let qbytes = u64::from_le_bytes(b[88..96].try_into().unwrap_or_default());
                if qbytes > MSGMNB * 64 {
                    return Err(Errno::EPERM);
                }
                if qbytes > 0 {
                    q.qbytes = qbytes;
                }
                q.ctime = now;
                Ok(0)
            }
            IPC_RMID => {
                self.ipc.msg.remove(&id);
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        }
    }
}
