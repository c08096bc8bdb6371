//! The lane's scheduler: armada's own, and deterministic. One host thread runs all the tasks
//! of a lane one at a time, each for at most [`QUANTUM`] instructions, in a fixed
//! round-robin order, whichever process they belong to. A task whose syscall blocks (a
//! futex wait, a read of an empty pipe, a sleep) is parked with what it waits for; when no
//! task can run, the clock moves on to the earliest deadline (the virtual clock jumps; the
//! host's is waited for), and when there is none either the process is deadlocked: armada
//! reports every task and its syscall and ends the process as SIGKILL would (status 137).
//! Timers fire here too, at the instruction where they are due, so every engine switches
//! tasks and delivers timer signals at the same instruction counts.
//!
//! The stops the engine makes (syscalls, faults) are serviced in `runner`; this module
//! decides which task runs next and for how long.

use super::{restartable, Exit, Lane};
use crate::cpu::CodeCache;
use crate::linux::sched::{Wait, WaitKind};
use crate::linux::signal as sig;
use crate::linux::SysOutcome;
use crate::process::Program;
use crate::state::CpuState;

/// Instructions a task runs before the next runnable one gets its turn (armada-linux's, where
/// sched_rr_get_interval reports it).
pub use crate::linux::sched::QUANTUM;

/// Timer expiries in a row, with every task waiting and none woken, after which a
/// deterministic run is reported as deadlocked (its virtual clock would otherwise run on
/// forever for a timer whose signal nobody takes).
const IDLE_TIMER_LIMIT: u32 = 100_000;

/// Where a parked task stands.
#[derive(Clone, Copy, Debug)]
pub(super) enum Run {
    /// Runs from its registers.
    Ready,
    /// Its syscall runs again first (a `WaitKind::Retry` wait that may be over).
    Restart(Option<u64>),
    /// Blocked.
    Waiting(Wait),
}

/// A task that is not running now.
#[derive(Clone)]
pub(super) struct Task {
    pub(super) pid: i32,
    pub(super) tid: i32,
    pub(super) state: CpuState,
    pub(super) run: Run,
}

/// A process whose tasks are not running now: its memory, Linux state and decoded code.
/// (Its `program.state` is unused: each of its tasks keeps its own registers.)
pub(super) struct Parked {
    pub(super) program: Program,
    pub(super) code: CodeCache,
}

impl Lane {
    /// Readies the running task to run on: fires the timers that are due and, when its
    /// turn is over, switches to the next task, as often as that takes. Returns how many
    /// instructions the task may then run before the scheduler must look again (the end of
    /// its turn while other tasks wait for theirs, or the instruction at which the next
    /// timer is due; `u64::MAX`: only a stop of the task's own), or None when the lane ended
    /// (`exit` is set). Every engine runs a task exactly that far (the GPU engines make it
    /// the lane's instruction limit on the device), so tasks switch at the same
    /// instructions on all of them.
    pub fn schedule(&mut self) -> Option<u64> {
        loop {
            if self.exit.is_some() {
                return None;
            }
            let mut until = u64::MAX;
            if !self.timer_due.is_none() {
                if self.fire_timers() {
                    if let Some(e) = self.after_timers() {
                        self.exit = Some(e);
                    }
                    continue;
                }
                // the turn ends where the next timer is due
                until = self.timer_cap();
            }
            if !self.tasks.is_empty() {
                let turn_left = self.turn_end.saturating_sub(self.retired());
                if turn_left == 0 {
                    if let Some(e) = self.preempt() {
                        self.exit = Some(e);
                    }
                    continue;
                }
                until = until.min(turn_left);
            }
            return Some(until);
        }
    }

    /// The turn of the running task is over: the next runnable one (if any) runs.
    pub(super) fn preempt(&mut self) -> Option<Exit> {
        if self.tasks.is_empty() {
            return None;
        }
        match self.switch(None, true, true) {
            Err(e) => Some(e),
            Ok(None) => None,
            Ok(Some(o)) => self.after_syscall(o),
        }
    }

    /// Tasks blocked in a `WaitKind::Retry` wait run their syscall again: another task's
    /// syscall completed and may have given them what they wait for.
    pub(super) fn wake_retries(&mut self) {
        for t in self.tasks.iter_mut() {
            if let Run::Waiting(w) = t.run {
                if w.kind == WaitKind::Retry {
                    t.run = Run::Restart(w.deadline);
                }
            }
        }
    }

    /// Ends the waits whose deadline has passed, and the waits a signal with a handler
    /// interrupts (EINTR, or the syscall again after the handler when it asked for
    /// SA_RESTART; the handler runs when the task is switched in).
    pub(super) fn wake_expired(&mut self) {
        let now = self.program.process.monotonic_ns();
        let cur = self.cur_pid();
        for t in self.tasks.iter_mut() {
            let Run::Waiting(w) = t.run else { continue };
            if let WaitKind::Vfork { .. } = w.kind {
                continue;
            }
            let (p, mem) = if t.pid == cur {
                (&mut self.program.process, &mut self.program.mem)
            } else {
                match self.parked.get_mut(&t.pid) {
                    Some(x) => (&mut x.program.process, &mut x.program.mem),
                    None => continue,
                }
            };
            let expired = w.deadline.is_some_and(|d| now >= d);
            let look = w.wake_at.is_some_and(|d| now >= d);
            let interrupted = p.signal_ready_for(t.tid);
            if !expired && !look && !interrupted {
                continue;
            }
            if let WaitKind::Futex { .. } = w.kind {
                p.futex_cancel(t.tid);
            }
            t.run = if interrupted {
                if let Some(done) = p.interrupted_write(t.tid) {
                    // a write that had put bytes in returns their count, never EINTR
                    t.state.x[0] = done;
                } else if restartable(w.nr) && p.restart_after_handler(t.tid) {
                    // back to the SVC with its first argument: it runs again after the
                    // handler returns
                    t.state.pc = t.state.pc.wrapping_sub(4);
                    t.state.x[0] = w.args[0];
                } else {
                    t.state.x[0] = (-(libc::EINTR as i64)) as u64;
                    p.sleep_interrupted(&w, mem);
                }
                Run::Ready
            } else if matches!(w.kind, WaitKind::Retry | WaitKind::Sleep) {
                Run::Restart(w.deadline)
            } else {
                t.state.x[0] = (-(libc::ETIMEDOUT as i64)) as u64;
                Run::Ready
            };
        }
    }

    /// Switches from the running task to the next one that can run, in turn order. The
    /// running task is parked with `wait` (None: it stays runnable), or dropped when it
    /// ended (`alive` false); `proc_alive` false: its whole process ended. When none can
    /// run, the clock moves on to the earliest deadline; with none, the lane is
    /// deadlocked. Returns the outcome of the syscall the task switched to ran again, if
    /// it was one to run again.
    pub(super) fn switch(
        &mut self,
        wait: Option<Wait>,
        alive: bool,
        proc_alive: bool,
    ) -> Result<Option<SysOutcome>, Exit> {
        let retired = self.program.state.retired;
        // the virtual clock runs on instructions: deadlines are checked against the count now
        self.program.process.set_retired(retired);
        let cur_pid = self.cur_pid();
        let cur_tid = self.program.process.tid();
        // a timer's signal ended the current process while every task waited
        let mut cur_gone = false;
        if !alive && proc_alive {
            // the thread ended: another thread of its process becomes the process's
            // current one (the scheduler may switch to another process first)
            if let Some(t) = self.tasks.iter().find(|t| t.pid == cur_pid) {
                self.program.process.switch_thread(t.tid, false);
            }
        }
        if alive && proc_alive {
            // park the running task at the back of the turn order
            self.tasks.push_back(Task {
                pid: cur_pid,
                tid: cur_tid,
                state: self.program.state.clone(),
                run: wait.map_or(Run::Ready, Run::Waiting),
            });
        }
        if self.tasks.is_empty() {
            // the last thread ended (exit of the only thread is exit_group)
            return Err(Exit::Code(0));
        }
        let idx = loop {
            self.wake_expired();
            let table = &self.program.process;
            let lent = &self.lent;
            // a stopped process does not run, nor does one whose memory a vfork child
            // holds (its other threads wait too: they would find no memory)
            if let Some(i) = self.tasks.iter().position(|t| {
                !matches!(t.run, Run::Waiting(_))
                    && !table.is_stopped(t.pid)
                    && !lent.values().any(|&p| p == t.pid)
            }) {
                break i;
            }
            let earliest_wait = self
                .tasks
                .iter()
                .filter_map(|t| match t.run {
                    Run::Waiting(w) => match (w.deadline, w.wake_at) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    },
                    _ => None,
                })
                .min();
            if earliest_wait.is_none() {
                // only timers can move the lane on: count the expiries that leave it where
                // it was (no instruction retired since)
                let retired = self.program.state.retired;
                if self.idle_fires.0 == retired {
                    self.idle_fires.1 += 1;
                } else {
                    self.idle_fires = (retired, 1);
                }
                if self.idle_fires.1 > IDLE_TIMER_LIMIT && self.program.process.cfg.deterministic {
                    // timers whose signals wake nobody: on the virtual clock that would spin
                    // forever (Linux would sleep forever)
                    return Err(self.deadlock());
                }
            }
            match earliest_wait.into_iter().chain(self.timer_due.wall).min() {
                Some(d) => self.program.process.idle_until(d),
                None => return Err(self.deadlock()),
            }
            // a timer due now sends its signal (which may end a process, the current one
            // included, or interrupt a wait)
            if self.fire_timers() {
                if let Some(e) = self.exit.clone() {
                    return Err(e);
                }
                if let Some(signal) = self.cur_killed.take() {
                    let e = Exit::Signal {
                        signal,
                        message: None,
                    };
                    self.end_process(cur_pid, &e);
                    cur_gone = true;
                }
            }
        };
        let Some(next) = self.tasks.remove(idx) else {
            return Err(self.deadlock());
        };
        if next.pid != cur_pid {
            self.switch_process(next.pid, proc_alive && !cur_gone);
        }
        // (the outgoing thread is alive unless it is the one that ended, handled above)
        self.program.process.switch_thread(next.tid, true);
        self.program.state = next.state;
        self.program.state.retired = retired;
        self.program.process.set_retired(retired);
        self.turn_end = retired.saturating_add(QUANTUM);
        // a context switch clears the exclusive monitor, as Linux's return to user does
        self.program.state.excl_addr = u64::MAX;
        let p = &mut self.program;
        match next.run {
            Run::Restart(deadline) => {
                Ok(Some(p.process.restart(&mut p.state, &mut p.mem, deadline)))
            }
            _ => match p.process.deliver_signals(&mut p.state, &mut p.mem) {
                SysOutcome::Continue => Ok(None),
                o => Ok(Some(o)),
            },
        }
    }

    /// Installs process `pid` as the one being serviced; the current one is parked (or
    /// dropped, when it ended). The lane's kernel state goes with the switch.
    pub(super) fn switch_process(&mut self, pid: i32, cur_alive: bool) {
        let Some(next) = self.parked.remove(&pid) else {
            return;
        };
        // memory shared between processes: what the outgoing one wrote becomes the
        // segments' (a process that ended was synced out then)
        if cur_alive {
            let p = &mut self.program;
            p.process.shm_sync_out(&p.mem);
        }
        let old_pid = self.cur_pid();
        let mut old = Parked {
            program: std::mem::replace(&mut self.program, next.program),
            code: std::mem::replace(&mut self.code, next.code),
        };
        old.program.process.hand_over(&mut self.program.process);
        let p = &mut self.program;
        p.process.shm_sync_in(&mut p.mem);
        if cur_alive {
            self.parked.insert(old_pid, old);
        }
    }

    /// Recomputes when the lane's next timer is due, from every process's timers.
    pub(super) fn refresh_timers(&mut self) {
        let mut d = self.program.process.timers_due();
        for p in self.parked.values() {
            d = d.min(p.program.process.timers_due());
        }
        self.timer_due = d;
    }

    /// Fires the timers that are due now: their signals go out as signals between
    /// processes do. Returns whether any signal was sent.
    pub(super) fn fire_timers(&mut self) -> bool {
        let p = &mut self.program;
        p.process.set_retired(p.state.retired);
        let (wall, cpu) = p.process.timer_clocks();
        if !self.timer_due.reached(wall, cpu) {
            return false;
        }
        let mut out = p.process.expire_timers(wall, cpu);
        for x in self.parked.values_mut() {
            out.extend(x.program.process.expire_timers(wall, cpu));
        }
        self.refresh_timers();
        if out.is_empty() {
            return false;
        }
        for o in out {
            self.program.process.queue_outgoing(o);
        }
        self.deliver_outgoing();
        self.wake_retries();
        true
    }

    /// Instructions the running task may run before the next timer is due: exact on the
    /// virtual clock; on the host's, a quantum (the clocks are read at each turn's end).
    pub(super) fn timer_cap(&mut self) -> u64 {
        let p = &mut self.program;
        if !p.process.cfg.deterministic {
            return QUANTUM;
        }
        p.process.set_retired(p.state.retired);
        let (wall, cpu) = p.process.timer_clocks();
        let per = crate::linux::time::clock::NS_PER_INSN.max(1);
        let left =
            |due: Option<u64>, now: u64| due.map_or(u64::MAX, |d| d.saturating_sub(now) / per);
        left(self.timer_due.wall, wall)
            .min(left(self.timer_due.cpu, cpu))
            .max(1)
    }

    /// After timers fired between two instructions of the running task: the run's end, the
    /// current process's end, or the handler of a signal for the running task.
    pub(super) fn after_timers(&mut self) -> Option<Exit> {
        if let Some(e) = self.exit.clone() {
            return Some(e);
        }
        if let Some(signal) = self.cur_killed.take() {
            return self.current_ended(Exit::Signal {
                signal,
                message: None,
            });
        }
        let p = &mut self.program;
        match p.process.deliver_signals(&mut p.state, &mut p.mem) {
            SysOutcome::Continue => None,
            o => self.after_syscall(o),
        }
    }

    /// Every task waits and nothing can wake any of them: the report, and the end.
    pub(super) fn deadlock(&mut self) -> Exit {
        let n = self.tasks.len();
        let procs = 1 + self.parked.len();
        let mut lines = vec![format!(
            "deadlock: every thread{} blocked and nothing can wake {} ({} thread{}{}); armada ends it as SIGKILL would",
            if procs > 1 { " of every process is" } else { " of the process is" },
            if n == 1 { "it" } else { "them" },
            n,
            if n == 1 { "" } else { "s" },
            if procs > 1 { format!(" in {procs} processes") } else { String::new() },
        )];
        if !self.timer_due.is_none() {
            lines.push(
                "  (a timer is armed, but its signal wakes none of them: it is ignored or blocked)"
                    .to_string(),
            );
        }
        let mut tasks: Vec<&Task> = self.tasks.iter().collect();
        tasks.sort_by_key(|t| (t.pid, t.tid));
        for t in tasks {
            if let Run::Waiting(w) = t.run {
                let mem = if t.pid == self.program.process.pid() {
                    &mut self.program.mem
                } else {
                    match self.parked.get_mut(&t.pid) {
                        Some(p) => &mut p.program.mem,
                        None => continue,
                    }
                };
                let who = if procs > 1 {
                    format!("process {} thread {}", t.pid, t.tid)
                } else {
                    format!("thread {}", t.tid)
                };
                lines.push(format!(
                    "  {who} at pc {:#x}: {}",
                    t.state.pc,
                    crate::linux::format_syscall(w.nr, &w.args, mem)
                ));
            }
        }
        Exit::Signal {
            signal: sig::SIGKILL,
            message: Some(lines.join("\n")),
        }
    }
}
