//! Running a program to its end: the engine runs until a stop, the Linux layer services
//! syscalls, and faults end the program as the matching signal would.
//!
//! A lane is one guest process, and a process may have many threads (tasks). The
//! scheduler here is armada's own and deterministic: one host thread runs the tasks of a
//! lane one at a time, each for at most [`QUANTUM`] instructions, in a fixed round-robin
//! order. A task whose syscall blocks (a futex wait, a read of an empty pipe, a sleep)
//! is parked with what it waits for; when no task can run, the clock moves on to the
//! earliest deadline (the virtual clock jumps; the host's is waited for), and when there is
//! none either the process is deadlocked: armada reports every task and its syscall and
//! ends the process as SIGKILL would (status 137). The tasks of a lane share one
//! instruction count, so `--max-instructions` and the virtual clock count them all.

use crate::cpu::{self, CodeCache, DecodedPages};
use crate::linux::signal as sig;
use crate::linux::wait::{Wait, WaitKind};
use crate::linux::SysOutcome;
use crate::memory::Access;
use crate::process::Program;
use crate::state::{CpuState, Stop};
use std::collections::VecDeque;
use std::sync::Arc;

/// Instructions a task runs before the next runnable one gets its turn.
pub const QUANTUM: u64 = 100_000;

/// How a program ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// exit/exit_group with this status.
    Code(i32),
    /// Killed by a signal; `message` says why when armada raised it (a fault, say).
    Signal {
        signal: i32,
        message: Option<String>,
    },
    /// The instruction limit was reached before the program ended.
    InstructionLimit,
    /// The program needs what this engine cannot do yet (guest threads on a GPU engine);
    /// the message says what and what to do.
    Unsupported(String),
}

impl Exit {
    /// The status a shell would report: the exit code, or 128 + the signal number.
    pub fn status(&self) -> i32 {
        match self {
            Exit::Code(c) => *c & 0xff,
            Exit::Signal { signal, .. } => 128 + signal,
            Exit::InstructionLimit => 124,
            Exit::Unsupported(_) => 125,
        }
    }
}

/// Where a parked task stands.
#[derive(Clone, Copy, Debug)]
enum Run {
    /// Runs from its registers.
    Ready,
    /// Its syscall runs again first (a `WaitKind::Retry` wait that may be over).
    Restart(Option<u64>),
    /// Blocked.
    Waiting(Wait),
}

/// A task that is not running now.
struct Task {
    tid: i32,
    state: CpuState,
    run: Run,
}

/// A program together with its decoded code: one lane.
pub struct Lane {
    pub program: Program,
    pub code: CodeCache,
    pub exit: Option<Exit>,
    /// The tasks other than the running one (whose registers are `program.state`), in
    /// the order they get their turn.
    tasks: VecDeque<Task>,
    /// Set for an engine that does not run guest threads yet: a clone ends the lane with
    /// [`Exit::Unsupported`] naming it.
    single_task: Option<&'static str>,
    /// The instruction count at which the running task's turn ends (its syscalls do not
    /// start a new turn, so a task that spins on a syscall still gives way).
    turn_end: u64,
}

impl Lane {
    pub fn new(program: Program) -> Self {
        Lane {
            program,
            code: CodeCache::new(),
            exit: None,
            tasks: VecDeque::new(),
            single_task: None,
            turn_end: QUANTUM,
        }
    }

    /// A lane that shares decoded code with the other lanes of a batch.
    pub fn with_decoded(program: Program, decoded: Arc<DecodedPages>) -> Self {
        Lane {
            code: CodeCache::with_shared(decoded),
            ..Lane::new(program)
        }
    }

    /// Marks the lane as run by `engine`, which runs one task per lane: a guest thread
    /// ends it with [`Exit::Unsupported`] (and never a hang or a wrong answer).
    pub fn single_task_engine(&mut self, engine: &'static str) {
        self.single_task = Some(engine);
    }

    pub fn retired(&self) -> u64 {
        self.program.state.retired
    }

    /// Live threads of the lane's process.
    pub fn thread_count(&self) -> usize {
        1 + self.tasks.len()
    }

    /// Runs until the program ends or `max_instructions` (in total) have retired.
    pub fn run(&mut self, max_instructions: Option<u64>) -> &Exit {
        while self.exit.is_none() {
            self.run_slice(max_instructions, u64::MAX);
        }
        self.exit.as_ref().unwrap()
    }

    /// Runs at most `slice` more instructions (callers that check for interruption between
    /// slices); sets `self.exit` when the program ends.
    pub fn run_slice(&mut self, max_instructions: Option<u64>, slice: u64) {
        let start = self.retired();
        while self.exit.is_none() {
            let done = self.retired() - start;
            if done >= slice {
                return;
            }
            let budget = match max_instructions {
                Some(m) => m.saturating_sub(self.retired()),
                None => u64::MAX,
            };
            let left = budget.min(slice - done);
            let turn = if self.tasks.is_empty() {
                left
            } else {
                let turn_left = self.turn_end.saturating_sub(self.retired());
                if turn_left == 0 {
                    if let Some(e) = self.preempt() {
                        self.exit = Some(e);
                    }
                    continue;
                }
                left.min(turn_left)
            };
            let stop = cpu::run(
                &mut self.program.state,
                &mut self.program.mem,
                &mut self.code,
                turn,
            );
            if stop == Stop::Budget && turn < budget {
                // the turn or the slice is over, not the program's budget
                continue;
            }
            self.exit = self.service(stop);
        }
    }

    /// Handles one stop of the engine; returns how the program ended, if it did.
    pub fn service(&mut self, stop: Stop) -> Option<Exit> {
        let p = &mut self.program;
        let pc = p.state.pc;
        match stop {
            Stop::Syscall => {
                let outcome = p.process.syscall(&mut p.state, &mut p.mem);
                self.after_syscall(outcome)
            }
            Stop::Budget => Some(Exit::InstructionLimit),
            Stop::Fault(f) => {
                let (sig, code) = if f.access == Access::Execute && pc & 3 != 0 {
                    (sig::SIGBUS, sig::BUS_ADRALN)
                } else if f.mapped && p.process.past_eof(f.addr) {
                    (sig::SIGBUS, sig::BUS_ADRERR)
                } else if f.mapped {
                    (sig::SIGSEGV, sig::SEGV_ACCERR)
                } else {
                    (sig::SIGSEGV, sig::SEGV_MAPERR)
                };
                let why = format!("{} at pc {pc:#x}: {f}", sig::name(sig));
                self.signal(sig, code, f.addr, why)
            }
            Stop::Undefined(word) => self.signal(
                sig::SIGILL,
                sig::ILL_ILLOPC,
                pc,
                format!(
                    "SIGILL at pc {pc:#x}: undefined or unimplemented instruction {word:#010x}"
                ),
            ),
            Stop::Breakpoint(imm) => self.signal(
                sig::SIGTRAP,
                sig::TRAP_BRKPT,
                pc,
                format!("SIGTRAP at pc {pc:#x}: brk #{imm:#x}"),
            ),
            Stop::Halt(imm) => {
                // HLT is undefined at EL0 on Linux; the signal reports the HLT itself.
                let at = pc.wrapping_sub(4);
                self.program.state.pc = at;
                self.signal(
                    sig::SIGILL,
                    sig::ILL_ILLOPC,
                    at,
                    format!("SIGILL at pc {at:#x}: hlt #{imm:#x}"),
                )
            }
        }
    }

    /// Acts on a syscall's outcome and on what it did to other tasks (threads cloned,
    /// futex waiters woken); switches tasks when the current one blocks, yields or ends.
    fn after_syscall(&mut self, mut outcome: SysOutcome) -> Option<Exit> {
        loop {
            let p = &mut self.program.process;
            let spawned = p.take_spawned();
            if !spawned.is_empty() {
                if let Some(engine) = self.single_task {
                    return Some(Exit::Unsupported(format!(
                        "the program starts threads, and the {engine} engine runs single-threaded programs only so far: run it with --backend cpu"
                    )));
                }
            }
            for t in spawned {
                self.tasks.push_back(Task {
                    tid: t.tid,
                    state: t.state,
                    run: Run::Ready,
                });
            }
            for tid in self.program.process.take_woken() {
                if let Some(t) = self.tasks.iter_mut().find(|t| t.tid == tid) {
                    if matches!(t.run, Run::Waiting(_)) {
                        t.state.x[0] = 0;
                        t.run = Run::Ready;
                    }
                }
            }
            let yielded = self.program.process.take_yield();
            let next = match outcome {
                SysOutcome::Continue => {
                    self.wake_retries();
                    if !yielded {
                        return None;
                    }
                    self.switch(None, true)
                }
                SysOutcome::Exit(code) => return Some(Exit::Code(code)),
                SysOutcome::Killed(signal) => {
                    return Some(Exit::Signal {
                        signal,
                        message: None,
                    })
                }
                SysOutcome::ThreadExit => {
                    self.wake_retries();
                    self.switch(None, false)
                }
                SysOutcome::Block => {
                    let wait = self.program.process.take_block();
                    self.switch(wait, true)
                }
            };
            match next {
                Err(e) => return Some(e),
                Ok(None) => return None,
                Ok(Some(o)) => outcome = o,
            }
        }
    }

    /// The turn of the running task is over: the next runnable one (if any) runs.
    fn preempt(&mut self) -> Option<Exit> {
        if self.tasks.is_empty() {
            return None;
        }
        match self.switch(None, true) {
            Err(e) => Some(e),
            Ok(None) => None,
            Ok(Some(o)) => self.after_syscall(o),
        }
    }

    /// Tasks blocked in a `WaitKind::Retry` wait run their syscall again: another task's
    /// syscall completed and may have given them what they wait for.
    fn wake_retries(&mut self) {
        for t in self.tasks.iter_mut() {
            if let Run::Waiting(w) = t.run {
                if w.kind == WaitKind::Retry {
                    t.run = Run::Restart(w.deadline);
                }
            }
        }
    }

    /// Ends the waits whose deadline has passed, and the waits a signal with a handler
    /// interrupts (EINTR; the handler runs when the task is switched in).
    fn wake_expired(&mut self) {
        let p = &mut self.program.process;
        let now = p.monotonic_ns();
        for t in self.tasks.iter_mut() {
            let Run::Waiting(w) = t.run else { continue };
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
                t.state.x[0] = (-(libc::EINTR as i64)) as u64;
                Run::Ready
            } else if w.kind == WaitKind::Retry {
                Run::Restart(w.deadline)
            } else {
                t.state.x[0] = (-(libc::ETIMEDOUT as i64)) as u64;
                Run::Ready
            };
        }
    }

    /// Switches from the running task to the next one that can run, in turn order. The
    /// running task is parked with `wait` (None: it stays runnable), or dropped when it
    /// ended (`alive` false). When none can run, the clock moves on to the earliest
    /// deadline; with none, the process is deadlocked. Returns the outcome of the syscall
    /// the task switched to ran again, if it was one to run again.
    fn switch(&mut self, wait: Option<Wait>, alive: bool) -> Result<Option<SysOutcome>, Exit> {
        let retired = self.program.state.retired;
        // the virtual clock runs on instructions: deadlines are checked against the count now
        self.program.process.set_retired(retired);
        let cur_tid = self.program.process.tid();
        if alive {
            // park the running task at the back of the turn order
            self.tasks.push_back(Task {
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
            if let Some(i) = self
                .tasks
                .iter()
                .position(|t| !matches!(t.run, Run::Waiting(_)))
            {
                break i;
            }
            let earliest = self
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
            match earliest {
                Some(d) => self.program.process.idle_until(d),
                None => return Err(self.deadlock()),
            }
        };
        let Some(next) = self.tasks.remove(idx) else {
            return Err(self.deadlock());
        };
        self.program.process.switch_thread(next.tid, alive);
        self.program.state = next.state;
        self.program.state.retired = retired;
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

    /// Every task waits and nothing can wake any of them: the report, and the end.
    fn deadlock(&mut self) -> Exit {
        let mut lines = vec![format!(
            "deadlock: every thread of the process is blocked and nothing can wake them ({} thread{}); armada ends it as SIGKILL would",
            self.tasks.len(),
            if self.tasks.len() == 1 { "" } else { "s" }
        )];
        let mem = &mut self.program.mem;
        let mut tasks: Vec<&Task> = self.tasks.iter().collect();
        tasks.sort_by_key(|t| t.tid);
        for t in tasks {
            if let Run::Waiting(w) = t.run {
                lines.push(format!(
                    "  thread {} at pc {:#x}: {}",
                    t.tid,
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

    /// Raises a synchronous signal: the guest's handler runs if it installed one, otherwise
    /// the program ends with `why` as the message.
    fn signal(&mut self, signal: i32, code: i32, addr: u64, why: String) -> Option<Exit> {
        let p = &mut self.program;
        match p
            .process
            .deliver_fault(&mut p.state, &mut p.mem, signal, code, addr)
        {
            None => None,
            Some(outcome) => {
                p.process.flush_shared_mappings(&p.mem);
                match outcome {
                    SysOutcome::Exit(c) => Some(Exit::Code(c)),
                    SysOutcome::Killed(s) if s == signal => Some(Exit::Signal {
                        signal,
                        message: Some(why),
                    }),
                    SysOutcome::Killed(s) => Some(Exit::Signal {
                        signal: s,
                        message: None,
                    }),
                    SysOutcome::Continue | SysOutcome::ThreadExit | SysOutcome::Block => None,
                }
            }
        }
    }
}
