//! clone and clone3: their flags and arguments, and the choice between a new thread and a
//! new process.
//!
//! With CLONE_THREAD they make a thread of the calling process (`CLONE_VM | CLONE_THREAD`
//! with the flag sets glibc's pthread_create and Go's runtime use; its state is in `task`);
//! without it a new process (see `fork`). A thread with flags beyond those (namespaces,
//! CLONE_PIDFD, a thread without CLONE_VM, ...) gets EINVAL with a note on stderr.

use crate::proc::task::{ThreadLinux, MAX_THREADS};
use crate::sched::NewTask;
use crate::{rd_u64, wr_u32, Errno, Process, SysResult};
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

/// The arguments of a process clone.
pub(crate) struct ForkArgs {
    pub(crate) flags: u64,
    pub(crate) exit_signal: u64,
    pub(crate) stack: u64,
    pub(crate) parent_tid: u64,
    pub(crate) tls: u64,
    pub(crate) child_tid: u64,
}

impl Process {
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
}
