//! Tasks: the threads of a guest process, as the kernel side sees them.
//!
//! A guest thread is a task. Its registers live with the engine (the scheduler in
//! `runner` holds each task's `CpuState`); its kernel-side state lives here, in
//! [`ThreadLinux`]: the thread id, its side of signals (mask, pending set, alternate stack),
//! `clear_child_tid` and the robust-list head. The threads of a process share everything
//! else in [`Process`]: the address space, fds, signal handlers, cwd, umask and brk.
//!
//! The Linux layer services one task at a time, the *current* one (`Process::thread`);
//! the others wait in `Process::others`, and the scheduler switches with
//! [`Process::switch_thread`]. Syscalls hand the scheduler what it must act on through
//! [`Events`]: tasks cloned, tasks a futex woke, a block of the current task, a yield.
//!
//! clone makes tasks (see `clone`).

use std::collections::BTreeMap;

use crate::signal::ThreadSignals;
use crate::{rd_u64, wr_u32, Errno, Process, SysOutcome, SysResult};
use armada_machine::memory::AddressSpace;

/// Most threads one process may have at once (Linux's default RLIMIT_NPROC-like cap);
/// clone past it fails with EAGAIN, as pthread_create does on a real system out of room.
pub const MAX_THREADS: usize = 4096;

/// The kernel-side state of one thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadLinux {
    pub(crate) tid: i32,
    pub(crate) sig: ThreadSignals,
    /// CLONE_CHILD_CLEARTID / set_tid_address: zeroed and futex-woken when the thread ends.
    pub(crate) clear_child_tid: u64,
    /// set_robust_list: the head of the thread's list of held robust futexes.
    pub(crate) robust_list: u64,
    /// A blocking write(fd, addr, len) to a full pipe or socket that waits for room: the
    /// bytes it has put in so far (Linux returns only once all are in, or a signal came).
    pub(crate) write_done: Option<((i32, u64, u64), u64)>,
}

impl Process {
    /// The tid of the task being serviced.
    pub fn tid(&self) -> i32 {
        self.thread.tid
    }

    /// A signal ended thread `tid`'s wait: the bytes a blocking write had put in by then,
    /// which is what the write returns (not EINTR), if it had put in any.
    pub fn interrupted_write(&mut self, tid: i32) -> Option<u64> {
        let t = if tid == self.thread.tid {
            &mut self.thread
        } else {
            self.others.get_mut(&tid)?
        };
        t.write_done.take().map(|(_, n)| n).filter(|&n| n > 0)
    }

    /// Whether `tid` is one of this process's threads.
    pub(crate) fn is_thread(&self, tid: i32) -> bool {
        tid == self.thread.tid || self.others.contains_key(&tid)
    }

    /// Live threads of the process.
    pub fn thread_count(&self) -> usize {
        1 + self.others.len()
    }

    /// Makes `tid` the current task: the kernel-side state of the one that was current goes
    /// back among the others (unless it ended: `outgoing_alive` false).
    pub fn switch_thread(&mut self, tid: i32, outgoing_alive: bool) {
        if tid == self.thread.tid {
            return;
        }
        let Some(next) = self.others.remove(&tid) else {
            return;
        };
        let prev = std::mem::replace(&mut self.thread, next);
        if outgoing_alive {
            self.others.insert(prev.tid, prev);
        }
    }

    /// Whether a signal with a handler is ready for thread `tid` (one that is not running):
    /// the scheduler then interrupts its wait.
    pub fn signal_ready_for(&self, tid: i32) -> bool {
        if tid == self.thread.tid {
            return self.handler_ready();
        }
        self.others
            .get(&tid)
            .is_some_and(|t| self.handler_ready_in(&t.sig))
    }

    pub(crate) fn sys_gettid(&self) -> SysResult {
        Ok(self.thread.tid as u64)
    }

    pub(crate) fn sys_set_tid_address(&mut self, addr: u64) -> SysResult {
        self.thread.clear_child_tid = addr;
        Ok(self.thread.tid as u64)
    }

    pub(crate) fn sys_set_robust_list(&mut self, head: u64, len: u64) -> SysResult {
        if len != 24 {
            return Err(Errno::EINVAL);
        }
        self.thread.robust_list = head;
        Ok(0)
    }

    pub(crate) fn sys_get_robust_list(
        &mut self,
        mem: &mut AddressSpace,
        tid: i32,
        head_ptr: u64,
        len_ptr: u64,
    ) -> SysResult {
        let head = if tid == 0 || tid == self.thread.tid {
            self.thread.robust_list
        } else {
            self.others.get(&tid).ok_or(Errno::ESRCH)?.robust_list
        };
        crate::wr_u64(mem, head_ptr, head)?;
        crate::wr_u64(mem, len_ptr, 24)?;
        Ok(0)
    }

    /// exit(status): ends the calling thread; the last one ends the process.
    pub(crate) fn sys_exit_thread(&mut self, mem: &mut AddressSpace, status: u64) -> SysResult {
        if self.others.is_empty() {
            self.outcome = Some(SysOutcome::Exit(status as i32 & 0xff));
            return Ok(0);
        }
        self.thread_cleanup(mem);
        self.outcome = Some(SysOutcome::ThreadExit);
        Ok(0)
    }

    /// What Linux does for a thread that ends while others go on: robust futexes it held
    /// are marked owner-died, and `clear_child_tid` is zeroed and woken (pthread_join
    /// waits on it).
    fn thread_cleanup(&mut self, mem: &mut AddressSpace) {
        self.robust_cleanup(mem);
        let ctid = self.thread.clear_child_tid;
        if ctid != 0 && wr_u32(mem, ctid, 0).is_ok() {
            self.futex_wake(ctid, 1, u32::MAX);
        }
    }

    /// Walks the thread's robust list (at most [`ROBUST_LIST_LIMIT`] entries, as Linux).
    fn robust_cleanup(&mut self, mem: &mut AddressSpace) {
        const ROBUST_LIST_LIMIT: usize = 2048;
        const FUTEX_WAITERS: u32 = 0x8000_0000;
        const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
        const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
        let head = self.thread.robust_list;
        if head == 0 {
            return;
        }
        let (Ok(mut entry), Ok(offset), Ok(pending)) = (
            rd_u64(mem, head),
            rd_u64(mem, head + 8),
            rd_u64(mem, head + 16),
        ) else {
            return;
        };
        let tid = self.thread.tid as u32;
        let handle = |p: &mut Process, mem: &mut AddressSpace, e: u64| {
            // the list pointer's low bit marks a PI futex; the word is at entry + offset
            let addr = (e & !1).wrapping_add(offset);
            let Ok(word) = crate::rd_u32(mem, addr) else {
                return;
            };
            if word & FUTEX_TID_MASK == tid {
                let new = (word & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
                if wr_u32(mem, addr, new).is_ok() && word & FUTEX_WAITERS != 0 {
                    p.futex_wake(addr, 1, u32::MAX);
                }
            }
        };
        let mut n = 0;
        while entry != head && entry != 0 && n < ROBUST_LIST_LIMIT {
            let next = rd_u64(mem, entry & !1).unwrap_or(0);
            if entry != pending {
                handle(self, mem, entry);
            }
            entry = next;
            n += 1;
        }
        if pending != 0 {
            handle(self, mem, pending);
        }
    }

    /// A task's exit of the whole group (exit_group, a fatal signal) needs no per-thread
    /// cleanup; the process ends. The tids of the other threads, for the scheduler.
    pub fn other_tids(&self) -> Vec<i32> {
        self.others.keys().copied().collect()
    }

    /// membarrier: the tasks of a process run one at a time on one host thread, so every
    /// barrier already holds; the commands are accepted as Linux accepts them.
    pub(crate) fn sys_membarrier(&mut self, cmd: i32, flags: u32) -> SysResult {
        const QUERY: i32 = 0;
        // GLOBAL, GLOBAL_EXPEDITED, REGISTER_GLOBAL_EXPEDITED, PRIVATE_EXPEDITED,
        // REGISTER_PRIVATE_EXPEDITED
        const SUPPORTED: i32 = 1 | 2 | 4 | 8 | 16;
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        match cmd {
            QUERY => Ok(SUPPORTED as u64),
            c if c & SUPPORTED == c && c.count_ones() == 1 => Ok(0),
            _ => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_sched_yield(&mut self) -> SysResult {
        self.events.yielded = true;
        Ok(0)
    }
}

/// The table of the non-current threads, by tid.
pub(crate) type Others = BTreeMap<i32, ThreadLinux>;
