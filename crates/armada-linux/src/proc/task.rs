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
//! clone and clone3 with CLONE_THREAD make threads (`CLONE_VM | CLONE_THREAD` with the flag
//! sets glibc's pthread_create and Go's runtime use); without it they make a process (see
//! `fork`). A thread with flags beyond those (namespaces, CLONE_PIDFD, a thread without
//! CLONE_VM, ...) gets EINVAL with a note on stderr.

use std::collections::BTreeMap;

use crate::proc::fork::ForkArgs;
use crate::proc::wait::NewTask;
use crate::signal::ThreadSignals;
use crate::{rd_u64, wr_u32, Errno, Process, SysOutcome, SysResult};
use armada_machine::memory::AddressSpace;
use armada_machine::state::CpuState;

pub const CLONE_VM: u64 = 0x100;
pub const CLONE_FS: u64 = 0x200;
pub const CLONE_FILES: u64 = 0x400;
pub const CLONE_SIGHAND: u64 = 0x800;
pub const CLONE_PIDFD: u64 = 0x1000;
pub const CLONE_PTRACE: u64 = 0x2000;
pub const CLONE_VFORK: u64 = 0x4000;
pub const CLONE_PARENT: u64 = 0x8000;
pub const CLONE_THREAD: u64 = 0x1_0000;
pub const CLONE_SYSVSEM: u64 = 0x4_0000;
pub const CLONE_SETTLS: u64 = 0x8_0000;
pub const CLONE_PARENT_SETTID: u64 = 0x10_0000;
pub const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
pub const CLONE_DETACHED: u64 = 0x40_0000;
pub const CLONE_UNTRACED: u64 = 0x80_0000;
pub const CLONE_CHILD_SETTID: u64 = 0x100_0000;
pub const CLONE_IO: u64 = 0x8000_0000;

/// What a new thread must share with its creator.
const THREAD_NEEDS: u64 = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
/// Flags a thread may add, each understood here (or harmless: no ptrace, no SysV undo).
const THREAD_MAY: u64 = CLONE_SYSVSEM
    | CLONE_SETTLS
    | CLONE_PARENT_SETTID
    | CLONE_CHILD_CLEARTID
    | CLONE_CHILD_SETTID
    | CLONE_DETACHED
    | CLONE_UNTRACED
    | CLONE_IO;

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

    /// clone(flags, newsp, parent_tid, tls, child_tid): arm64's argument order.
    pub(crate) fn sys_clone(
        &mut self,
        st: &CpuState,
        mem: &mut AddressSpace,
        a: [u64; 6],
    ) -> SysResult {
        let flags = a[0];
        if flags & CLONE_THREAD == 0 {
            // fork, vfork, posix_spawn's CLONE_VM|CLONE_VFORK: a new process
            let f = ForkArgs {
                flags: flags & !0xff,
                exit_signal: flags & 0xff,
                stack: a[1],
                parent_tid: a[2],
                tls: a[3],
                child_tid: a[4],
            };
            return self.fork_process(st, mem, f);
        }
        // the low byte is the exit signal, meaningless for threads
        self.clone_thread(st, mem, flags & !0xff, a[1], a[2], a[3], a[4])
    }

    /// clone3(struct clone_args *, size).
    pub(crate) fn sys_clone3(
        &mut self,
        st: &CpuState,
        mem: &mut AddressSpace,
        args: u64,
        size: u64,
    ) -> SysResult {
        // CLONE_ARGS_SIZE_VER0 is 64 bytes; later versions add set_tid and cgroup
        if !(64..=4096).contains(&size) {
            return Err(Errno::EINVAL);
        }
        let mut f = [0u64; 11];
        for (k, v) in f.iter_mut().enumerate().take((size / 8).min(11) as usize) {
            *v = rd_u64(mem, args + 8 * k as u64)?;
        }
        let [flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup] =
            f;
        if exit_signal > 64 || set_tid != 0 || set_tid_size != 0 || cgroup != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & CLONE_PIDFD != 0 && pidfd != 0 {
            return self.clone_refused(flags, "CLONE_PIDFD");
        }
        if flags & 0xff != 0 {
            return Err(Errno::EINVAL);
        }
        let sp = if stack != 0 {
            stack.checked_add(stack_size).ok_or(Errno::EINVAL)?
        } else {
            0
        };
        if flags & CLONE_THREAD == 0 {
            let f = ForkArgs {
                flags,
                exit_signal,
                stack: sp,
                parent_tid,
                tls,
                child_tid,
            };
            return self.fork_process(st, mem, f);
        }
        self.clone_thread(st, mem, flags, sp, parent_tid, tls, child_tid)
    }

    fn clone_refused(&mut self, flags: u64, why: &str) -> SysResult {
        crate::note_once(crate::NOTE_UNSUPPORTED, 0x1_0000_0000 | flags, || {
            format!("clone with flags {flags:#x} ({why}) is not supported; returning EINVAL")
        });
        Err(Errno::EINVAL)
    }

    #[allow(clippy::too_many_arguments)]
    fn clone_thread(
        &mut self,
        st: &CpuState,
        mem: &mut AddressSpace,
        flags: u64,
        newsp: u64,
        parent_tid: u64,
        tls: u64,
        child_tid: u64,
    ) -> SysResult {
        if flags & THREAD_NEEDS != THREAD_NEEDS {
            return self.clone_refused(
                flags,
                "a thread needs CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD",
            );
        }
        if flags & !(THREAD_NEEDS | THREAD_MAY) != 0 {
            return self.clone_refused(flags, "flags beyond a thread's");
        }
        // past the thread cap, or out of thread ids (after 2^31 threads came and went)
        if self.thread_count() >= MAX_THREADS {
            return Err(Errno::EAGAIN);
        }
        // out of ids (after 2^31 threads and processes came and went)
        let tid = self.procs.alloc_id().ok_or(Errno::EAGAIN)?;
        if flags & CLONE_PARENT_SETTID != 0 {
            wr_u32(mem, parent_tid, tid as u32)?;
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            wr_u32(mem, child_tid, tid as u32)?;
        }
        let mut state = st.clone();
        state.x[0] = 0;
        if newsp != 0 {
            state.x[31] = newsp;
        }
        if flags & CLONE_SETTLS != 0 {
            state.tpidr = tls;
        }
        state.excl_addr = u64::MAX;
        let t = ThreadLinux {
            tid,
            sig: self.thread.sig.for_new_thread(),
            clear_child_tid: if flags & CLONE_CHILD_CLEARTID != 0 {
                child_tid
            } else {
                0
            },
            robust_list: 0,
            write_done: None,
        };
        self.others.insert(tid, t);
        self.events.spawned.push(NewTask { tid, state });
        Ok(tid as u64)
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
