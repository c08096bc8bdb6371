//! Running a program to its end: the engine runs until a stop, the Linux layer services
//! syscalls, and faults end the program as the matching signal would.
//!
//! A lane is one run of a program: its first process and every process it forks, each
//! with its threads (tasks), which the scheduler (`sched`) runs one at a time. The tasks of
//! a lane share one instruction count, so `--max-instructions` and the virtual clock count
//! them all.
//!
//! Processes: the process whose task runs is `Lane::program` (registers, memory, Linux
//! state) with its decoded code; the others wait in `parked`. The lane-wide kernel state
//! (open file descriptions and pipes, the process table, the clock) is held by the
//! process being serviced and handed over at each process switch. A process that ends
//! becomes a zombie in the table and its parent hears of it (SIGCHLD, wait4); the lane
//! ends when its first process does, and the run's status is that process's.

use crate::coverage::{CmpLog, CoverageMap};
use crate::cpu::{self, CodeCache, DecodedPages};
use crate::linux::proc::table as procs;
use crate::linux::sched::WaitKind;
use crate::linux::signal as sig;
use crate::linux::signal::Received;
use crate::linux::time::timers::Due;
use crate::linux::SysOutcome;
use crate::memory::Access;
use crate::process::Program;
use crate::state::Stop;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

pub mod crash;
pub mod debug;
pub mod history;
pub(crate) mod pause;
mod sched;
pub use sched::QUANTUM;
use sched::{Parked, Run, Task};

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

/// Syscalls that a handler with SA_RESTART restarts when a signal interrupts their wait
/// (the others end with EINTR, as on Linux: poll, select, sleeps, sigsuspend, epoll).
fn restartable(nr: u64) -> bool {
    use crate::linux::nr::*;
    matches!(
        nr,
        READ | READV | WRITE | WRITEV | PREAD64 | PWRITE64 | WAIT4 | WAITID | OPENAT | FUTEX
    )
}

/// The signal and si_code a memory fault of `p`'s running task raises.
fn fault_signal(p: &mut Program, f: &crate::memory::Fault) -> (i32, i32) {
    if f.access == Access::Execute && p.state.pc & 3 != 0 {
        (sig::SIGBUS, sig::BUS_ADRALN)
    } else if f.mapped && p.process.past_eof(f.addr) {
        (sig::SIGBUS, sig::BUS_ADRERR)
    } else if f.mapped {
        (sig::SIGSEGV, sig::SEGV_ACCERR)
    } else {
        (sig::SIGSEGV, sig::SEGV_MAPERR)
    }
}

/// A program together with its decoded code: one lane.
pub struct Lane {
    /// The process being serviced: its running task's registers, its memory, its Linux
    /// state.
    pub program: Program,
    pub code: CodeCache,
    pub exit: Option<Exit>,
    /// The tasks other than the running one, of every process, in the order they get
    /// their turn.
    tasks: VecDeque<Task>,
    /// The other live processes, by pid.
    parked: BTreeMap<i32, Parked>,
    /// vfork children running on their parent's memory: child pid -> parent pid.
    lent: BTreeMap<i32, i32>,
    /// Decoded code shared by the lane's processes (and by the lanes of a batch).
    decoded: Arc<DecodedPages>,
    /// The instruction count at which the running task's turn ends (its syscalls do not
    /// start a new turn, so a task that spins on a syscall still gives way).
    turn_end: u64,
    /// A signal from another process ended the process being serviced.
    cur_killed: Option<i32>,
    /// When the next timer of any of the lane's processes is due (see `linux::time::timers`).
    timer_due: Due,
    /// (instruction count, expiries): timer expiries while every task waited, at that
    /// count (see [`IDLE_TIMER_LIMIT`]).
    idle_fires: (u64, u32),
    /// Edge coverage of every task of the lane, when asked for (see `coverage`).
    pub(crate) coverage: Option<CoverageMap>,
    /// Compare operands of every task, when asked for (see `coverage::CmpLog`).
    pub(crate) cmplog: Option<Box<CmpLog>>,
    /// Where the run pauses for a snapshot (see `snapshot`), and whether it has.
    pub(crate) pause: Option<pause::PauseAt>,
    pub(crate) paused: bool,
    /// A return to this address (the page after a buffer input, see `snapshot`) ends the
    /// process with status 0 (a fuzz target function that returned).
    pub(crate) return_trap: Option<u64>,
    /// The decoded code of the lane's last process that ended (not a vfork child), for the
    /// next one it forks (see [`Lane::code_for_child`]).
    spare_code: Option<CodeCache>,
    /// The last memory fault the engine raised: (signal, address), for a crash's report.
    fault: Option<(i32, u64)>,
    /// The pid of the first process the lane forked (a debugger says which one it follows).
    first_child: Option<i32>,
    /// (pid, signal): a signal from another process that would end the process a debugger
    /// follows, held until the debugger delivers or drops it (`debug`).
    held_kill: Option<(i32, i32)>,
}

impl Lane {
    pub fn new(program: Program) -> Self {
        Lane::with_decoded(program, DecodedPages::new())
    }

    /// A lane that shares decoded code with the other lanes of a batch.
    pub fn with_decoded(program: Program, decoded: Arc<DecodedPages>) -> Self {
        Lane {
            program,
            code: CodeCache::with_shared(decoded.clone()),
            exit: None,
            tasks: VecDeque::new(),
            parked: BTreeMap::new(),
            lent: BTreeMap::new(),
            decoded,
            turn_end: QUANTUM,
            cur_killed: None,
            timer_due: Due::default(),
            idle_fires: (0, 0),
            coverage: None,
            cmplog: None,
            pause: None,
            paused: false,
            return_trap: None,
            spare_code: None,
            fault: None,
            first_child: None,
            held_kill: None,
        }
    }

    /// An independent copy of a paused lane, for a snapshot's restore: every task and
    /// process, memory shared copy-on-write, its own open file descriptions (see
    /// `HostFd`'s Clone) and Linux state. Decoded code is shared. The copy does not pause.
    /// Call [`Lane::freeze`] on the original first.
    pub(crate) fn copy_frozen(&self) -> Lane {
        let parked = self
            .parked
            .iter()
            .map(|(&pid, p)| {
                (
                    pid,
                    Parked {
                        program: p.program.copy_frozen(),
                        code: CodeCache::with_shared(self.decoded.clone()),
                    },
                )
            })
            .collect();
        Lane {
            program: self.program.copy_frozen(),
            code: CodeCache::with_shared(self.decoded.clone()),
            exit: self.exit.clone(),
            tasks: self.tasks.clone(),
            parked,
            lent: self.lent.clone(),
            decoded: self.decoded.clone(),
            turn_end: self.turn_end,
            cur_killed: self.cur_killed,
            timer_due: self.timer_due,
            idle_fires: self.idle_fires,
            coverage: None,
            cmplog: None,
            pause: None,
            paused: false,
            return_trap: self.return_trap,
            spare_code: None,
            fault: None,
            first_child: self.first_child,
            held_kill: self.held_kill,
        }
    }

    /// Keeps every address space of the lane, and those it makes later (forks, execs),
    /// from getting a window (see `AddressSpace::set_window_cap`): for lanes that run many
    /// at once on the host's cores. Each page a window shows is a host `mmap`, and the
    /// `mmap`s of many threads of one process wait on each other (its memory lock, and the
    /// TLB shootdowns each sends to every core the process runs on): a CPU batch of 1,024
    /// lanes of sieve took 11.2-12.9 s with guarded windows against 3.9-4.0 s without on
    /// the 16-core host.
    pub fn without_windows(&mut self) {
        self.program.mem.set_window_cap(0);
        for p in self.parked.values_mut() {
            p.program.mem.set_window_cap(0);
        }
    }

    /// Readies a paused lane to be copied: no address space keeps write pointers into
    /// pages that its copies will share.
    pub(crate) fn freeze(&mut self) {
        self.program.mem.flush_tlb();
        for p in self.parked.values_mut() {
            p.program.mem.flush_tlb();
        }
    }

    /// Every address space of the lane: the running process's, then the parked ones'.
    pub(crate) fn spaces(&self) -> impl Iterator<Item = &crate::memory::AddressSpace> {
        std::iter::once(&self.program.mem).chain(self.parked.values().map(|p| &p.program.mem))
    }

    /// Runs `f` on every address space of the lane.
    pub(crate) fn for_each_space(&mut self, mut f: impl FnMut(&mut crate::memory::AddressSpace)) {
        f(&mut self.program.mem);
        for p in self.parked.values_mut() {
            f(&mut p.program.mem);
        }
    }

    /// Runs `f` on the Linux state of every process of the lane that is not running now.
    pub(crate) fn for_parked_processes(&mut self, mut f: impl FnMut(&mut crate::linux::Process)) {
        for p in self.parked.values_mut() {
            f(&mut p.program.process);
        }
    }

    /// Turns edge coverage on (an empty map) or off.
    pub fn set_coverage(&mut self, on: bool) {
        self.coverage = on.then(Default::default);
    }

    /// Turns edge coverage on with `map` (cleared here), a map an earlier lane gave back
    /// through [`Lane::take_coverage`]: no allocation per run.
    pub fn set_coverage_map(&mut self, mut map: CoverageMap) {
        map.clear();
        self.coverage = Some(map);
    }

    /// Adds `counts` (a map of hit counters another engine recorded for this lane: a GPU
    /// kernel's) to the lane's map, when coverage is on.
    pub fn add_coverage(&mut self, counts: &[u8]) {
        if let Some(m) = self.coverage.as_mut() {
            m.add(counts);
        }
    }

    /// Gives this lane the decoded code of a lane that has ended (see
    /// [`CodeCache::recycle`]): lanes restored from one snapshot then decode and map their
    /// code once per thread, not once each.
    pub fn reuse_code(&mut self, mut code: CodeCache) {
        code.recycle(&mut self.program.mem);
        self.code = code;
    }

    /// Takes the lane's decoded code (for [`Lane::reuse_code`] by the next lane).
    pub fn take_code(&mut self) -> CodeCache {
        std::mem::replace(&mut self.code, CodeCache::with_shared(self.decoded.clone()))
    }

    /// [`Lane::take_code`] of a lane that ran on: its code brought up to date with what its
    /// memory became first (its writes to decoded pages, its changed executable areas).
    pub fn take_settled_code(&mut self) -> CodeCache {
        self.code.settle(&mut self.program.mem);
        self.take_code()
    }

    /// Turns compare logging on (an empty log) or off.
    pub fn set_cmplog(&mut self, on: bool) {
        self.cmplog = on.then(Default::default);
    }

    /// Takes the compare log, leaving logging off.
    pub fn take_cmplog(&mut self) -> Option<Box<CmpLog>> {
        self.cmplog.take()
    }

    /// Takes the coverage map, leaving coverage off.
    pub fn take_coverage(&mut self) -> Option<CoverageMap> {
        self.coverage.take()
    }

    /// Where the running task stood when `signal` ended the lane, for filing the crash (see
    /// [`crash::CrashSite`]); `symbols`: the program's, where it has them.
    pub fn crash_site(
        &mut self,
        signal: i32,
        symbols: Option<&crash::Symbols>,
    ) -> crash::CrashSite {
        let p = &mut self.program;
        let mut x = [0u64; 31];
        x.copy_from_slice(&p.state.x[..31]);
        let addr = self.fault.filter(|f| f.0 == signal).map(|f| f.1);
        crash::CrashSite::read(&mut p.mem, signal, p.state.pc, &x, addr, symbols)
    }

    /// The coverage map of the run so far (None when coverage is off).
    pub fn coverage(&self) -> Option<&CoverageMap> {
        self.coverage.as_ref()
    }

    /// Marks the lane as run by a GPU engine, whose host runs the lane a few instructions
    /// at a time (its stops): on the interpreter, since a translation tier's tables per lane
    /// would never pay for themselves over tens of thousands of lanes.
    pub fn device_engine(&mut self) {
        self.code.set_tier(None);
    }

    /// The running process's memory, and that of the parked process whose address space is
    /// `id` (None: no parked process runs on it), for an engine that keeps its own copy of
    /// each (a GPU engine sharing a fork's pages with its parent's on the device).
    pub fn with_parked_space(
        &mut self,
        id: u64,
    ) -> Option<(
        &crate::memory::AddressSpace,
        &mut crate::memory::AddressSpace,
    )> {
        let cur = &self.program.mem;
        let p = self
            .parked
            .values_mut()
            .find(|p| p.program.mem.space_id() == id)?;
        Some((cur, &mut p.program.mem))
    }

    /// The identities of the address spaces the lane's live processes run on
    /// ([`AddressSpace::space_id`](crate::memory::AddressSpace::space_id)), the running
    /// one's first. (A vfork parent's, lent to its child, is the child's.)
    pub fn space_ids(&self) -> Vec<u64> {
        let mut v = vec![self.program.mem.space_id()];
        v.extend(
            self.parked
                .iter()
                .filter(|(pid, _)| !self.lent.values().any(|p| p == *pid))
                .map(|(_, p)| p.program.mem.space_id()),
        );
        v
    }

    pub fn retired(&self) -> u64 {
        self.program.state.retired
    }

    /// Live threads of the lane, all processes together.
    pub fn thread_count(&self) -> usize {
        1 + self.tasks.len()
    }

    /// Whether a task waits to run its syscall again once another task's completes
    /// (`WaitKind::Retry`: poll, epoll, a read of an empty pipe, a semaphore): then every
    /// completed syscall readies it, and so decides what runs next.
    pub fn waits_to_retry(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| matches!(t.run, Run::Waiting(w) if w.kind == WaitKind::Retry))
    }

    /// Live processes of the lane.
    pub fn process_count(&self) -> usize {
        1 + self.parked.len()
    }

    /// The pid of the first process the lane forked, if it has.
    pub fn first_child(&self) -> Option<i32> {
        self.first_child
    }

    /// Caps the processes of the lane (fork fails with EAGAIN past it).
    pub fn set_max_processes(&mut self, n: usize) {
        self.program.process.set_max_processes(n);
    }

    /// Runs until the program ends or `max_instructions` (in total) have retired.
    pub fn run(&mut self, max_instructions: Option<u64>) -> &Exit {
        while self.exit.is_none() {
            debug_assert!(!self.paused, "a paused lane runs through Snapshot::take");
            self.run_slice(max_instructions, u64::MAX);
        }
        self.exit.as_ref().unwrap()
    }

    /// Runs at most `budget` instructions of the current task on the CPU engine, recording
    /// edges when coverage is on, and returns the engine's stop unserviced (a GPU engine's
    /// host step: the instruction its kernel left to the host).
    pub fn run_cpu(&mut self, budget: u64) -> Stop {
        let p = &mut self.program;
        match self.coverage.as_mut() {
            None => cpu::run(&mut p.state, &mut p.mem, &mut self.code, budget),
            Some(m) => cpu::run_covered(&mut p.state, &mut p.mem, &mut self.code, budget, m),
        }
    }

    /// Runs at most `slice` more instructions (callers that check for interruption between
    /// slices); sets `self.exit` when the program ends.
    pub fn run_slice(&mut self, max_instructions: Option<u64>, slice: u64) {
        let start = self.retired();
        while self.exit.is_none() && !self.paused {
            let done = self.retired() - start;
            if done >= slice {
                return;
            }
            let budget = match max_instructions {
                Some(m) => m.saturating_sub(self.retired()),
                None => u64::MAX,
            };
            let Some(until) = self.schedule() else {
                break;
            };
            let turn = budget.min(slice - done).min(until);
            let p = &mut self.program;
            let (st, mem, code) = (&mut p.state, &mut p.mem, &mut self.code);
            let stop = match (self.coverage.as_mut(), self.cmplog.as_deref_mut()) {
                (None, None) => cpu::run(st, mem, code, turn),
                (Some(m), None) => cpu::run_covered(st, mem, code, turn, m),
                (m, Some(l)) => cpu::run_traced(st, mem, code, turn, m, l),
            };
            if stop == Stop::Budget && turn < budget {
                // the turn or the slice is over, not the program's budget
                continue;
            }
            // (a signal between processes may have ended the run inside, too)
            if let Some(e) = self.service(stop) {
                self.exit = Some(e);
            }
        }
    }

    /// Handles one stop of the engine; returns how the run ended, if it did.
    pub fn service(&mut self, stop: Stop) -> Option<Exit> {
        if self.pause.is_some() && pause::pauses_here(self, &stop) {
            self.paused = true;
            return None;
        }
        if self
            .return_trap
            .is_some_and(|at| pause::returned(&stop, at))
        {
            return self.current_ended(Exit::Code(0));
        }
        let p = &mut self.program;
        let pc = p.state.pc;
        let ended = match stop {
            Stop::Syscall => {
                let outcome = p.process.syscall(&mut p.state, &mut p.mem);
                return self.after_syscall(outcome);
            }
            Stop::Budget => return Some(Exit::InstructionLimit),
            Stop::Fault(f) => {
                let (sig, code) = fault_signal(p, &f);
                let mut why = format!("{} at pc {pc:#x}: {f}", sig::name(sig));
                if !f.mapped && p.mem.area_at(f.addr).is_some() {
                    why = format!(
                        "{} at pc {pc:#x}: {f} (the lane's memory cap of {} KiB is reached: raise --lane-memory)",
                        sig::name(sig),
                        p.mem.limit() / 1024
                    );
                }
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
        };
        let e = ended?;
        self.current_ended(e)
    }

    /// The pid of the process being serviced.
    fn cur_pid(&self) -> i32 {
        self.program.process.pid()
    }

    /// The process being serviced ended with `e`: the run ends if it is the first one;
    /// otherwise it becomes a zombie and another task runs.
    fn current_ended(&mut self, e: Exit) -> Option<Exit> {
        if matches!(e, Exit::InstructionLimit | Exit::Unsupported(_)) {
            return Some(e);
        }
        let pid = self.cur_pid();
        if pid == self.program.process.first_pid() {
            return Some(e);
        }
        self.end_process(pid, &e);
        match self.switch(None, false, false) {
            Err(e) => Some(e),
            Ok(None) => None,
            Ok(Some(o)) => self.after_syscall(o),
        }
    }

    /// Records the end of process `pid` (not the lane's first): its fds close, its
    /// parent hears of it, a vfork parent gets its memory back, its tasks are dropped. The
    /// current process, if it is the one, stays installed until the next switch.
    fn end_process(&mut self, pid: i32, e: &Exit) {
        let status = match e {
            Exit::Code(c) => procs::exited(*c),
            Exit::Signal { signal, .. } => procs::killed(*signal),
            _ => procs::killed(sig::SIGKILL),
        };
        let cur = self.cur_pid();
        if pid == cur {
            let p = &mut self.program;
            p.process.flush_shared_mappings(&p.mem);
            p.process.end_process(status);
        } else if let Some(mut dead) = self.parked.remove(&pid) {
            // it holds the lane's kernel state while it closes its fds
            self.program.process.hand_over(&mut dead.program.process);
            let p = &mut dead.program;
            // its view of shared memory is as old as its last turn: it takes the current
            // pages first, so that what it writes back to files is not older than them
            p.process.shm_sync_in(&mut p.mem);
            p.process.flush_shared_mappings(&p.mem);
            p.process.end_process(status);
            dead.program.process.hand_over(&mut self.program.process);
            let (mem, code) = self.keep_spare_code(pid, dead.program.mem, dead.code);
            self.give_back_lent(pid, Some((mem, code)));
        } else {
            return;
        }
        self.tasks.retain(|t| t.pid != pid);
        if pid == cur {
            let mem = std::mem::take(&mut self.program.mem);
            let code = std::mem::take(&mut self.code);
            let (mem, code) = self.keep_spare_code(pid, mem, code);
            self.give_back_lent(pid, Some((mem, code)));
        }
        self.deliver_outgoing();
        self.wake_retries();
    }

    /// A vfork child execs or ends: its parent gets its memory and code back and wakes
    /// with the child's pid.
    fn give_back_lent(
        &mut self,
        child: i32,
        mem: Option<(crate::memory::AddressSpace, CodeCache)>,
    ) {
        let Some(parent) = self.lent.remove(&child) else {
            return;
        };
        if let (Some((m, c)), Some(p)) = (mem, self.parked.get_mut(&parent)) {
            p.program.mem = m;
            p.code = c;
        }
        for t in self.tasks.iter_mut().filter(|t| t.pid == parent) {
            if let Run::Waiting(w) = t.run {
                if w.kind == (WaitKind::Vfork { child }) {
                    t.state.x[0] = child as u64;
                    t.run = Run::Ready;
                }
            }
        }
    }

    /// Delivers the signals the last syscall or process end sent to other processes.
    fn deliver_outgoing(&mut self) {
        let mut queue: VecDeque<sig::Outgoing> =
            self.program.process.take_outgoing().into_iter().collect();
        while let Some(o) = queue.pop_front() {
            let cur = self.cur_pid();
            let (reaps, ignored) = match self.process_mut(o.pid) {
                Some(t) => (t.reaps_children(), t.ignores_sigchld()),
                None => continue,
            };
            if let Some(child) = o.child {
                if reaps {
                    // SIGCHLD ignored or SA_NOCLDWAIT: nobody waits for the zombie (a
                    // handler, with SA_NOCLDWAIT, still runs)
                    self.program.process.reap(child);
                    if ignored {
                        continue;
                    }
                }
            }
            let Some(target) = self.process_mut(o.pid) else {
                continue;
            };
            if o.signal == 0 {
                continue;
            }
            let followed = target.debugger_follows();
            match target.receive(o.tid, o.signal, o.code, o.value, o.extra) {
                Received::Nothing => {}
                Received::Killed(s) if followed && s != sig::SIGKILL && o.pid != cur => {
                    // under a debugger: the process stops for it first (`debug`)
                    self.held_kill = Some((o.pid, s));
                }
                Received::Killed(s) => {
                    let e = Exit::Signal {
                        signal: s,
                        message: None,
                    };
                    if o.pid == self.program.process.first_pid() {
                        if self.exit.is_none() {
                            self.exit = Some(e);
                        }
                        return;
                    }
                    if o.pid != cur {
                        self.end_process(o.pid, &e);
                        queue.extend(self.program.process.take_outgoing());
                    } else {
                        // the process being serviced: it ends once its syscall is done
                        self.cur_killed = Some(s);
                    }
                }
                Received::Stop(s) => queue.extend(self.stop_process(o.pid, Some(s))),
                Received::Continue => queue.extend(self.stop_process(o.pid, None)),
            }
        }
    }

    /// The Linux state of process `pid` (the current one or a parked one).
    fn process_mut(&mut self, pid: i32) -> Option<&mut crate::linux::Process> {
        if pid == self.cur_pid() {
            Some(&mut self.program.process)
        } else {
            self.parked.get_mut(&pid).map(|p| &mut p.program.process)
        }
    }

    /// Stops (`Some(signal)`) or continues process `pid`: its tasks are not scheduled
    /// while it is stopped. Returns the SIGCHLD its parent gets for it, if any.
    fn stop_process(&mut self, pid: i32, stop: Option<i32>) -> Option<sig::Outgoing> {
        let cur = self.cur_pid();
        let parent = self.program.process.set_stopped(pid, stop)?;
        self.wake_retries();
        let notify = match parent {
            p if p == cur => self.program.process.wants_stop_notice(),
            p => self
                .parked
                .get(&p)
                .is_some_and(|x| x.program.process.wants_stop_notice()),
        };
        if !notify || pid == self.program.process.first_pid() {
            return None;
        }
        let (code, status) = match stop {
            Some(s) => (procs::CLD_STOPPED, s),
            None => (procs::CLD_CONTINUED, sig::SIGCONT),
        };
        Some(sig::Outgoing {
            pid: parent,
            tid: 0,
            signal: sig::SIGCHLD,
            code,
            value: pid as u32 as u64,
            extra: status as u64,
            child: None,
        })
    }

    /// Acts on a syscall's outcome and on what it did to other tasks (threads cloned,
    /// processes forked, futex waiters woken, an exec, signals to other processes);
    /// switches tasks when the current one blocks, yields or ends.
    fn after_syscall(&mut self, mut outcome: SysOutcome) -> Option<Exit> {
        loop {
            let p = &mut self.program.process;
            let spawned = p.take_spawned();
            let forked = p.take_forked();
            let exec = p.take_exec();
            let timers_changed = p.take_timers_changed();
            let pid = self.cur_pid();
            for t in spawned {
                self.tasks.push_back(Task {
                    pid,
                    tid: t.tid,
                    state: t.state,
                    run: Run::Ready,
                });
            }
            if let Some(child) = forked {
                self.add_child(child);
            }
            if let Some(req) = exec {
                self.exec(req);
            }
            if self.program.process.take_host_execed() {
                // the image became a host program (`--host-exec`): as after an exec, a
                // vfork parent gets its memory back; this process keeps none
                let pid = self.cur_pid();
                self.tasks.retain(|t| t.pid != pid);
                let old = std::mem::take(&mut self.program.mem);
                let code =
                    std::mem::replace(&mut self.code, CodeCache::with_shared(self.decoded.clone()));
                self.give_back_lent(pid, Some((old, code)));
            }
            if timers_changed {
                self.refresh_timers();
            }
            for tid in self.program.process.take_woken() {
                if let Some(t) = self.tasks.iter_mut().find(|t| t.tid == tid) {
                    if matches!(t.run, Run::Waiting(_)) {
                        t.state.x[0] = 0;
                        t.run = Run::Ready;
                    }
                }
            }
            self.deliver_outgoing();
            if self.exit.is_some() {
                return self.exit.clone();
            }
            if let Some(signal) = self.cur_killed.take() {
                return self.current_ended(Exit::Signal {
                    signal,
                    message: None,
                });
            }
            let mut yielded = self.program.process.take_yield();
            if let Some(s) = self.program.process.take_stop() {
                // the process stopped itself: its tasks wait for SIGCONT from another
                if let Some(o) = self.stop_process(pid, Some(s)) {
                    self.program.process.queue_outgoing(o);
                    self.deliver_outgoing();
                }
                yielded = true;
            }
            let next = match outcome {
                SysOutcome::Continue => {
                    self.wake_retries();
                    if !yielded {
                        return None;
                    }
                    self.switch(None, true, true)
                }
                SysOutcome::Exit(code) => return self.current_ended(Exit::Code(code)),
                SysOutcome::Killed(signal) => {
                    return self.current_ended(Exit::Signal {
                        signal,
                        message: None,
                    })
                }
                SysOutcome::ThreadExit => {
                    self.wake_retries();
                    self.switch(None, false, true)
                }
                SysOutcome::Block => {
                    if self.program.process.take_stirred() {
                        self.wake_retries();
                    }
                    let wait = self.program.process.take_block();
                    self.switch(wait, true, true)
                }
            };
            match next {
                Err(e) => return Some(e),
                Ok(None) => return None,
                Ok(Some(o)) => outcome = o,
            }
        }
    }

    /// Process `pid` ended with this memory and code. A vfork child's are its parent's and
    /// go back to it (returned as they are); another's code is kept, brought up to date
    /// with the memory it ran on, for the next child the lane forks (returned empty).
    fn keep_spare_code(
        &mut self,
        pid: i32,
        mut mem: crate::memory::AddressSpace,
        mut code: CodeCache,
    ) -> (crate::memory::AddressSpace, CodeCache) {
        if self.lent.contains_key(&pid) {
            return (mem, code);
        }
        code.settle(&mut mem);
        self.spare_code = Some(code);
        (mem, CodeCache::default())
    }

    /// The decoded code for a child forked with memory `mem`: the code of the lane's last
    /// process that ended, where there is one (its regions and pages that `mem` still has
    /// stay decoded, see [`CodeCache::recycle`]), else a new cache. A shell's subshells and
    /// pipelines fork and end again and again: each child used to decode its code anew
    /// into slot arrays fresh from the OS, and the host's page faults on them (a zero page
    /// read, then a copy-on-write fault and a TLB shootdown to every core a page) were
    /// most of such a lane's time on the CPU engine (docs/performance.md).
    fn code_for_child(&mut self, mem: &mut crate::memory::AddressSpace) -> CodeCache {
        match self.spare_code.take() {
            Some(mut code) => {
                code.recycle(mem);
                code
            }
            None => CodeCache::with_shared(self.decoded.clone()),
        }
    }

    /// A process the current one forked joins the lane: as a parked process with one task.
    fn add_child(&mut self, child: crate::linux::proc::fork::NewProcess) {
        let parent = self.cur_pid();
        self.first_child.get_or_insert(child.pid);
        let (mem, code) = match child.mem {
            Some(mut m) => {
                let code = self.code_for_child(&mut m);
                (m, code)
            }
            None => {
                // vfork: the child runs on the parent's memory until it execs or ends
                self.lent.insert(child.pid, parent);
                (
                    std::mem::take(&mut self.program.mem),
                    std::mem::take(&mut self.code),
                )
            }
        };
        let program = Program {
            state: child.state.clone(),
            mem,
            process: *child.process,
            image: self.program.image.clone(),
            interp: self.program.interp.clone(),
        };
        self.parked.insert(child.pid, Parked { program, code });
        self.tasks.push_back(Task {
            pid: child.pid,
            tid: child.pid,
            state: child.state,
            run: Run::Ready,
        });
    }

    /// The current process asked to exec `req`: on success its image, memory, registers
    /// and code are new and its other threads gone; on failure execve returns the errno.
    fn exec(&mut self, req: crate::linux::proc::exec::ExecRequest) {
        let p = &mut self.program;
        p.process.shm_sync_out(&p.mem);
        match self.program.exec(&req) {
            Err(e) => self.program.state.x[0] = (-(e.0 as i64)) as u64,
            Ok(old) => {
                let pid = self.cur_pid();
                self.tasks.retain(|t| t.pid != pid);
                let code =
                    std::mem::replace(&mut self.code, CodeCache::with_shared(self.decoded.clone()));
                self.give_back_lent(pid, Some((old, code)));
            }
        }
    }

    /// Raises a synchronous signal: the guest's handler runs if it installed one, otherwise
    /// the process ends with `why` as the message.
    fn signal(&mut self, signal: i32, code: i32, addr: u64, why: String) -> Option<Exit> {
        if signal == libc::SIGSEGV || signal == libc::SIGBUS {
            self.fault = Some((signal, addr));
        }
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
