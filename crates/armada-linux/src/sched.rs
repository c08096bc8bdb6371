//! What a syscall leaves for the scheduler (`runner::Lane`): threads it cloned, futex
//! waiters it woke, a yield, or a block of the calling task with what it waits for. The
//! handlers of every subsystem block through [`Process::block`]; the scheduler takes the
//! events after each syscall.

use crate::{Errno, Process};
use armada_machine::state::CpuState;

/// Internal marker: the operation would block (the task waits until another changes
/// something: see [`WaitKind::Retry`]).
/// Instructions a task runs before the next runnable one gets its turn (armada-core's
/// `runner::Lane` switches tasks at it; sched_rr_get_interval reports it as a time slice).
pub const QUANTUM: u64 = 100_000;

pub(crate) const WOULD_BLOCK: Errno = Errno(-1);

/// Why the current task cannot go on now (see [`Events::block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// Queued on a futex word; a FUTEX_WAKE on `addr` whose bitset meets `bitset` wakes it
    /// (x0 = 0), its deadline ends it with ETIMEDOUT.
    Futex { addr: u64, bitset: u32 },
    /// The syscall is run again, from the start, when another task's syscall completes
    /// (something it waits for may have changed: a pipe written, an fd closed) or when the
    /// deadline passes: reads of armada's pipes, poll, select, sigsuspend.
    Retry,
    /// A sleep (nanosleep, clock_nanosleep): only its deadline or a signal ends it, so,
    /// unlike `Retry`, another task's syscall does not ready it. That keeps the syscalls the
    /// GPU kernels answer themselves (which the host's scheduler never sees complete) from
    /// changing what runs next while a thread sleeps, as Go's sysmon mostly does.
    Sleep,
    /// A vfork parent, until its child execs or ends (the scheduler wakes it; x0 is the
    /// child's pid). Signals do not interrupt it.
    Vfork { child: i32 },
}

/// A blocked task: what it waits for, until when, and the syscall (for deadlock reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub kind: WaitKind,
    /// When the syscall's own timeout ends (CLOCK_MONOTONIC, ns): a `Retry` syscall runs
    /// again with it (and then returns its timeout result), a futex wait gets ETIMEDOUT.
    pub deadline: Option<u64>,
    /// When a `Retry` syscall should look again although no task acted (a timerfd it
    /// waits on expires then).
    pub wake_at: Option<u64>,
    pub nr: u64,
    pub args: [u64; 6],
}

/// A thread made by clone: its tid and starting registers.
#[derive(Clone, Debug)]
pub struct NewTask {
    pub tid: i32,
    pub state: CpuState,
}

/// What a syscall leaves for the scheduler.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    /// Threads cloned, in order.
    pub(crate) spawned: Vec<NewTask>,
    /// Tasks a futex wake (or a thread's exit) made runnable, in wake order.
    pub(crate) woken: Vec<i32>,
    /// The current task blocks (its syscall has no result yet).
    pub(crate) block: Option<Wait>,
    /// The current task gives up the rest of its quantum (sched_yield).
    pub(crate) yielded: bool,
    /// A signal's default action stops the process (SIGSTOP, SIGTSTP, ... to itself).
    pub(crate) stop: Option<i32>,
    /// A timer was armed, changed or deleted (the scheduler's next due time may be sooner).
    pub(crate) timers_changed: bool,
    /// The syscall blocked but moved something other tasks may wait for (a write that
    /// filled a pipe and waits for the rest to fit, a host program's bridge): `Retry`
    /// waiters look again.
    pub(crate) stirred: bool,
}

impl Process {
    /// Takes the scheduler's events of the last syscall.
    pub fn take_spawned(&mut self) -> Vec<NewTask> {
        std::mem::take(&mut self.events.spawned)
    }

    pub fn take_woken(&mut self) -> Vec<i32> {
        std::mem::take(&mut self.events.woken)
    }

    pub fn take_block(&mut self) -> Option<Wait> {
        self.events.block.take()
    }

    pub fn take_stop(&mut self) -> Option<i32> {
        self.events.stop.take()
    }

    pub fn take_stirred(&mut self) -> bool {
        std::mem::take(&mut self.events.stirred)
    }

    pub fn take_yield(&mut self) -> bool {
        std::mem::take(&mut self.events.yielded)
    }

    /// Blocks the current task (the syscall result is left for later). Returns a
    /// placeholder error: the syscall's result is not written while it blocks.
    pub(crate) fn block(&mut self, kind: WaitKind, deadline: Option<u64>) -> Errno {
        self.block_until(kind, deadline, None)
    }

    /// [`Process::block`], to be looked at again at `wake_at` as well.
    pub(crate) fn block_until(
        &mut self,
        kind: WaitKind,
        deadline: Option<u64>,
        wake_at: Option<u64>,
    ) -> Errno {
        self.events.block = Some(Wait {
            kind,
            deadline,
            wake_at,
            nr: self.cur_nr,
            args: self.cur_args,
        });
        Errno::EINTR
    }

    /// The absolute deadline of a wait of `ns` from now; when the syscall is being run
    /// again after blocking, the deadline it had the first time.
    pub(crate) fn deadline_after(&self, ns: u64) -> u64 {
        self.restart_deadline
            .unwrap_or_else(|| self.monotonic_ns().saturating_add(ns))
    }

    /// Whether the restarted syscall's deadline has passed.
    pub(crate) fn deadline_passed(&self, deadline: u64) -> bool {
        self.monotonic_ns() >= deadline
    }
}
