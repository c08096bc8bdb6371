//! fork, vfork and clone without CLONE_THREAD: a new process.
//!
//! The child is built here from the parent (the process being serviced): a copy-on-write
//! copy of the address space (`AddressSpace::fork`: no page is copied until one side
//! writes it), a copy of the fd table whose fds point at the parent's open file
//! descriptions (shared offsets and flags), the same signal dispositions and mask with
//! nothing pending, the same cwd, umask, brk, limits and credentials; only the calling
//! thread is copied. The scheduler takes the child from [`Process::take_forked`] and runs
//! it as one more task.
//!
//! vfork (and posix_spawn's `CLONE_VM | CLONE_VFORK`) shares the parent's memory: the
//! child runs on the parent's address space, which the scheduler lends it, and the parent
//! waits (`WaitKind::Vfork`) until the child execs or ends and gives it back. A child
//! that shares memory without CLONE_VFORK, or shares the fd table or handlers with its
//! parent, is refused with EINVAL and a note.

use crate::proc::clone::{
    ForkArgs, CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_DETACHED, CLONE_FILES, CLONE_FS,
    CLONE_IO, CLONE_PARENT, CLONE_PARENT_SETTID, CLONE_PTRACE, CLONE_SETTLS, CLONE_SIGHAND,
    CLONE_SYSVSEM, CLONE_UNTRACED, CLONE_VFORK, CLONE_VM,
};
use crate::proc::table::ProcEntry;
use crate::proc::task::ThreadLinux;
use crate::sched::WaitKind;
use crate::{wr_u32, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;
use armada_machine::state::CpuState;

/// Flags a new process may carry, each understood here (or harmless: no ptrace, no SysV
/// undo lists to share, no I/O contexts).
const PROCESS_MAY: u64 = CLONE_VM
    | CLONE_VFORK
    | CLONE_PARENT
    | CLONE_SETTLS
    | CLONE_PARENT_SETTID
    | CLONE_CHILD_SETTID
    | CLONE_CHILD_CLEARTID
    | CLONE_DETACHED
    | CLONE_UNTRACED
    | CLONE_PTRACE
    | CLONE_SYSVSEM
    | CLONE_IO;

/// A process made by fork, vfork or clone, for the scheduler.
#[derive(Clone)]
pub struct NewProcess {
    pub pid: i32,
    pub process: Box<Process>,
    /// The child's address space; None when it borrows the parent's (vfork).
    pub mem: Option<AddressSpace>,
    /// The child's registers: the parent's at the syscall, x0 = 0.
    pub state: CpuState,
}

impl Process {
    /// clone without CLONE_THREAD, clone3 likewise, fork and vfork.
    pub(crate) fn fork_process(
        &mut self,
        st: &CpuState,
        mem: &mut AddressSpace,
        a: ForkArgs,
    ) -> SysResult {
        let flags = a.flags;
        if flags & !PROCESS_MAY != 0 || flags & (CLONE_FILES | CLONE_FS | CLONE_SIGHAND) != 0 {
            return self.fork_refused(flags, "a new process sharing the fd table, cwd or handlers");
        }
        if flags & CLONE_VM != 0 && flags & CLONE_VFORK == 0 {
            return self.fork_refused(flags, "a new process sharing memory without CLONE_VFORK");
        }
        if self.procs.count() >= self.procs.max_processes {
            crate::note_once(crate::NOTE_MISC, 7, || {
                format!(
                    "the lane reached its process limit ({}; --max-processes): fork fails with EAGAIN",
                    self.procs.max_processes
                )
            });
            return Err(Errno::EAGAIN);
        }
        let pid = self.procs.alloc_id().ok_or(Errno::EAGAIN)?;
        if flags & CLONE_PARENT_SETTID != 0 {
            wr_u32(mem, a.parent_tid, pid as u32)?;
        }
        let vfork = flags & CLONE_VFORK != 0;
        let shares_mem = flags & CLONE_VM != 0;
        let mut child_mem = (!shares_mem).then(|| mem.fork());
        if flags & CLONE_CHILD_SETTID != 0 {
            // written in the child's memory (the parent's, when it is shared)
            let target = child_mem.as_mut().unwrap_or(mem);
            wr_u32(target, a.child_tid, pid as u32)?;
        }
        let mut state = st.clone();
        state.x[0] = 0;
        if a.stack != 0 {
            state.x[31] = a.stack;
        }
        if flags & CLONE_SETTLS != 0 {
            state.tpidr = a.tls;
        }
        state.excl_addr = u64::MAX;
        let me = self.pid;
        let parent = if flags & CLONE_PARENT != 0 {
            self.procs.procs.get(&me).map_or(self.ppid, |e| e.ppid)
        } else {
            me
        };
        // (the caller is always in the table; a fresh entry if that ever failed)
        let mut entry: ProcEntry = self.procs.procs.get(&me).cloned().unwrap_or(ProcEntry {
            ppid: self.ppid,
            pgid: me,
            sid: me,
            zombie: None,
            stopped: false,
            report: None,
            execed: false,
            subreaper: false,
            pdeathsig: 0,
            cmdline: Vec::new(),
            exe: Vec::new(),
            nice: 0,
            creds: None,
            umask: 0o022,
        });
        entry.ppid = parent;
        entry.creds = Some(self.creds.clone());
        entry.umask = self.umask;
        entry.zombie = None;
        entry.stopped = false;
        entry.report = None;
        entry.execed = false;
        // (a child does not inherit PR_SET_PDEATHSIG)
        entry.pdeathsig = 0;
        self.procs.procs.insert(pid, entry);
        let child = self.fork_child(pid, parent, &a);
        self.forked = Some(NewProcess {
            pid,
            process: Box::new(child),
            mem: child_mem,
            state,
        });
        if vfork {
            // the parent sleeps until the child execs or ends (x0 is then the child's pid)
            return Err(self.block(WaitKind::Vfork { child: pid }, None));
        }
        Ok(pid as u64)
    }

    fn fork_refused(&mut self, flags: u64, why: &str) -> SysResult {
        crate::note_once(crate::NOTE_UNSUPPORTED, 0x2_0000_0000 | flags, || {
            format!("clone with flags {flags:#x} ({why}) is not supported; returning EINVAL")
        });
        Err(Errno::EINVAL)
    }

    /// The child's Linux state (see the module comment).
    fn fork_child(&mut self, pid: i32, ppid: i32, a: &ForkArgs) -> Process {
        let (signals, tsig) = self.fork_signals();
        let rng = self.rng.fork();
        let mut comm = [0u8; 16];
        comm.copy_from_slice(&self.comm);
        Process {
            cfg: self.cfg.clone(),
            root: self.root.clone(),
            pid,
            ppid,
            creds: self.creds.clone(),
            files: crate::io::fd::Files {
                lock_pid: pid,
                ..self.files.fork_table()
            },
            cwd: crate::io::fd::Cwd {
                guest: self.cwd.guest.clone(),
            },
            umask: self.umask,
            brk_start: self.brk_start,
            brk_cur: self.brk_cur,
            // the lane's clock and process table stay with the process being serviced
            clock: crate::time::clock::Clock::new(self.cfg.deterministic),
            procs: Default::default(),
            rng,
            signals,
            thread: ThreadLinux {
                write_done: None,
                tid: pid,
                sig: tsig,
                clear_child_tid: if a.flags & CLONE_CHILD_CLEARTID != 0 {
                    a.child_tid
                } else {
                    0
                },
                robust_list: 0,
            },
            others: Default::default(),
            events: Default::default(),
            futexes: Default::default(),
            timers: Default::default(),
            // the lane's IPC table stays with the process being serviced
            ipc: Default::default(),
            shm_attach: self.shm_fork(),
            sem_undo: Default::default(),
            restart_deadline: None,
            restarting: false,
            cur_nr: 0,
            cur_args: [0; 6],
            rlimits: self.rlimits,
            comm,
            prctl: self.prctl,
            host_child: None,
            host_execed: false,
            fifo_opens: Vec::new(),
            retired: self.retired,
            outcome: None,
            shared_maps: self.fork_shared_maps(),
            past_eof: self.past_eof.clone(),
            file_maps: self.file_maps.clone(),
            input: self.input.clone(),
            forked: None,
            exec: None,
            exit_signal: a.exit_signal as i32,
            no_sigpipe: false,
            send_creds: None,
            recv_peek: false,
        }
    }

    /// Takes the process the last syscall made.
    pub fn take_forked(&mut self) -> Option<NewProcess> {
        self.forked.take()
    }

    /// Gives the lane's shared kernel state (open file descriptions, pipes, captured
    /// output, the process table and the clock) to `to`, the process the Linux layer
    /// services next. Only one process of a lane holds it at a time.
    pub fn hand_over(&mut self, to: &mut Process) {
        // what others may ask of this process while it waits
        if let Some(e) = self.procs.procs.get_mut(&self.pid) {
            e.creds = Some(self.creds.clone());
            e.umask = self.umask;
        }
        self.files.hand_over(&mut to.files);
        std::mem::swap(&mut self.procs, &mut to.procs);
        std::mem::swap(&mut self.clock, &mut to.clock);
        std::mem::swap(&mut self.ipc, &mut to.ipc);
    }
}
