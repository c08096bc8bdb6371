//! futex: the wait queues under every pthread mutex, condition variable and join, and Go's
//! notes.
//!
//! A waiting task is queued here by the word's address (one process, one address space, so
//! private and shared futexes name words the same way) and blocks (`WaitKind::Futex`);
//! wakes take waiters in FIFO order and hand their tids to the scheduler, which resumes
//! them with 0. A waiter's deadline or an interrupting signal is the scheduler's to act on:
//! it calls [`Process::futex_cancel`] and resumes the task with ETIMEDOUT or EINTR.

use crate::read_timespec_ns;
use crate::sched::WaitKind;
use crate::time::clock::{CLOCK_MONOTONIC, CLOCK_REALTIME};
use crate::{rd_u32, wr_u32, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const FUTEX_WAIT: u32 = 0;
const FUTEX_WAKE: u32 = 1;
const FUTEX_REQUEUE: u32 = 3;
const FUTEX_CMP_REQUEUE: u32 = 4;
const FUTEX_WAKE_OP: u32 = 5;
const FUTEX_WAIT_BITSET: u32 = 9;
const FUTEX_WAKE_BITSET: u32 = 10;
const FUTEX_PRIVATE_FLAG: u32 = 128;
const FUTEX_CLOCK_REALTIME: u32 = 256;
const FUTEX_BITSET_MATCH_ANY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Waiter {
    tid: i32,
    addr: u64,
    bitset: u32,
}

/// The process's futex waiters, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Futexes {
    waiters: Vec<Waiter>,
}

impl Process {
    /// Wakes up to `n` waiters on `addr` whose bitset meets `bitset`; returns how many.
    pub(crate) fn futex_wake(&mut self, addr: u64, n: u64, bitset: u32) -> u64 {
        let mut woken = 0u64;
        let mut k = 0;
        while k < self.futexes.waiters.len() && woken < n {
            let w = self.futexes.waiters[k];
            if w.addr == addr && w.bitset & bitset != 0 {
                self.futexes.waiters.remove(k);
                self.events.woken.push(w.tid);
                woken += 1;
            } else {
                k += 1;
            }
        }
        woken
    }

    /// Takes task `tid` off the futex queues (its wait timed out or a signal interrupted it).
    pub fn futex_cancel(&mut self, tid: i32) {
        self.futexes.waiters.retain(|w| w.tid != tid);
    }

    /// Moves up to `n` waiters on `from` to `to`; returns how many.
    fn futex_requeue(&mut self, from: u64, to: u64, n: u64) -> u64 {
        let mut moved = 0;
        for w in self.futexes.waiters.iter_mut() {
            if moved >= n {
                break;
            }
            if w.addr == from {
                w.addr = to;
                moved += 1;
            }
        }
        moved
    }

    /// The deadline (CLOCK_MONOTONIC ns) of a wait whose timeout is at `timeout`: relative
    /// for FUTEX_WAIT, absolute on CLOCK_MONOTONIC or CLOCK_REALTIME for FUTEX_WAIT_BITSET.
    fn futex_deadline(
        &self,
        mem: &mut AddressSpace,
        timeout: u64,
        absolute: bool,
        realtime: bool,
    ) -> Result<Option<u64>, Errno> {
        if timeout == 0 {
            return Ok(None);
        }
        let ns = read_timespec_ns(mem, timeout)?;
        if !absolute {
            return Ok(Some(self.monotonic_ns().saturating_add(ns)));
        }
        let id = if realtime {
            CLOCK_REALTIME
        } else {
            CLOCK_MONOTONIC
        };
        let (s, n) = self.clock_now(id)?;
        let now = (s as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(n as u64);
        Ok(Some(
            self.monotonic_ns().saturating_add(ns.saturating_sub(now)),
        ))
    }

    pub(crate) fn sys_futex(&mut self, mem: &mut AddressSpace, a: [u64; 6]) -> SysResult {
        let (uaddr, op, val, timeout, uaddr2, val3) =
            (a[0], a[1] as u32, a[2] as u32, a[3], a[4], a[5] as u32);
        let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
        if uaddr & 3 != 0 {
            return Err(Errno::EINVAL);
        }
        if op & FUTEX_CLOCK_REALTIME != 0 && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_WAIT {
            return Err(Errno::ENOSYS);
        }
        // A shared futex is found through its page, so an unmapped word is EFAULT even for
        // a wake; a private one is just an address.
        let shared = op & FUTEX_PRIVATE_FLAG == 0;
        if shared {
            rd_u32(mem, uaddr)?;
        }
        match cmd {
            FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                let bitset = if cmd == FUTEX_WAIT_BITSET {
                    val3
                } else {
                    FUTEX_BITSET_MATCH_ANY
                };
                if bitset == 0 {
                    return Err(Errno::EINVAL);
                }
                let deadline = self.futex_deadline(
                    mem,
                    timeout,
                    cmd == FUTEX_WAIT_BITSET,
                    op & FUTEX_CLOCK_REALTIME != 0,
                )?;
                if rd_u32(mem, uaddr)? != val {
                    return Err(Errno::EAGAIN);
                }
                if deadline.is_some_and(|d| self.deadline_passed(d)) {
                    return Err(Errno::ETIMEDOUT);
                }
                self.futexes.waiters.push(Waiter {
                    tid: self.thread.tid,
                    addr: uaddr,
                    bitset,
                });
                Err(self.block(
                    WaitKind::Futex {
                        addr: uaddr,
                        bitset,
                    },
                    deadline,
                ))
            }
            FUTEX_WAKE | FUTEX_WAKE_BITSET => {
                let bitset = if cmd == FUTEX_WAKE_BITSET {
                    val3
                } else {
                    FUTEX_BITSET_MATCH_ANY
                };
                if bitset == 0 {
                    return Err(Errno::EINVAL);
                }
                Ok(self.futex_wake(uaddr, val as u64, bitset))
            }
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
                if uaddr2 & 3 != 0 {
                    return Err(Errno::EINVAL);
                }
                if cmd == FUTEX_CMP_REQUEUE && rd_u32(mem, uaddr)? != val3 {
                    return Err(Errno::EAGAIN);
                }
                // the timeout argument carries the most waiters to requeue
                let requeue = (timeout as u32) as u64;
                let woken = self.futex_wake(uaddr, val as u64, FUTEX_BITSET_MATCH_ANY);
                let moved = self.futex_requeue(uaddr, uaddr2, requeue);
                Ok(woken + if cmd == FUTEX_CMP_REQUEUE { moved } else { 0 })
            }
            FUTEX_WAKE_OP => {
                if uaddr2 & 3 != 0 {
                    return Err(Errno::EINVAL);
                }
                let opc = (val3 >> 28) & 7;
                let shift = val3 & (8 << 28) != 0;
                let cmp = (val3 >> 24) & 15;
                let mut oparg = (val3 >> 12) & 0xfff;
                // cmparg is a sign-extended 12-bit field
                let cmparg = (((val3 & 0xfff) << 20) as i32) >> 20;
                if shift {
                    oparg = 1u32.checked_shl(oparg).unwrap_or(0);
                }
                let old = rd_u32(mem, uaddr2)?;
                let new = match opc {
                    0 => oparg,
                    1 => old.wrapping_add(oparg),
                    2 => old | oparg,
                    3 => old & !oparg,
                    4 => old ^ oparg,
                    _ => return Err(Errno::ENOSYS),
                };
                let hit = match cmp {
                    0 => old as i32 == cmparg,
                    1 => old as i32 != cmparg,
                    2 => (old as i32) < cmparg,
                    3 => old as i32 <= cmparg,
                    4 => old as i32 > cmparg,
                    5 => old as i32 >= cmparg,
                    _ => return Err(Errno::ENOSYS),
                };
                wr_u32(mem, uaddr2, new)?;
                let mut woken = self.futex_wake(uaddr, val as u64, FUTEX_BITSET_MATCH_ANY);
                if hit {
                    let val2 = (timeout as u32) as u64;
                    woken += self.futex_wake(uaddr2, val2, FUTEX_BITSET_MATCH_ANY);
                }
                Ok(woken)
            }
            _ => {
                // priority-inheritance futexes and FUTEX_FD
                self.unsupported(crate::nr::FUTEX);
                Err(Errno::ENOSYS)
            }
        }
    }
}
