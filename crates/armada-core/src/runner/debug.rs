//! Running a lane under a debugger (`armada run -g`): the engine side of a gdb stub, with
//! no protocol in it.
//!
//! A debugger follows one process of the lane, its first (gdb's `follow-fork-mode parent`),
//! and sees its threads. Its breakpoints are decoded into that process's code as `BRK`s
//! ([`CodeCache::set_traps`]) and its watchpoints kept out of the TLB
//! ([`AddressSpace::set_watches`](crate::memory::AddressSpace::set_watches)), so the
//! program runs at the interpreter's speed between stops and its memory keeps its own
//! bytes. The followed process runs on the interpreter, the reference engine; the others
//! (forked children) on the default tier, without breakpoints.
//!
//! The scheduler runs as it does without a debugger: stepping a thread runs the lane until
//! that thread has run one instruction (other threads may run first, at their turns), so
//! a program switches threads at the same instructions with and without gdb, and a
//! deterministic run stays deterministic under it.
//!
//! Signals stop the followed process before they are delivered, as on Linux under ptrace:
//! synchronous ones (faults, undefined instructions, the program's own `BRK`), those its own
//! syscalls send it that would end it (abort's), those another process sends it that would
//! end it (held by the runner, `Lane::held_kill`), and any on its way to a handler (held by
//! the Linux layer, `Process::stop_signals_for_debugger`). Resuming with the signal delivers
//! it, resuming without drops it (a fault's instruction then runs again).

use super::{Exit, Lane};
use crate::cpu;
use crate::linux::SysOutcome;
use crate::memory::{Watch, WatchHit};
use crate::state::{CpuState, Stop};
use std::collections::BTreeSet;

/// Why the program stopped for the debugger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Thread `tid` is at one of the debugger's breakpoints (not executed yet).
    Breakpoint { tid: i32 },
    /// Thread `tid`'s instruction at its PC would make this access (it has not).
    Watch { tid: i32, hit: WatchHit },
    /// The thread being stepped ran one instruction.
    Stepped { tid: i32 },
    /// Thread `tid` would now get `signal` (a fault, an undefined instruction, a `BRK` of
    /// the program's own): resuming with it delivers it.
    Signal { tid: i32, signal: i32 },
    /// The lane ended.
    Exited(Exit),
    /// A task of the lane executed an SVC (it has retired) and its syscall waits to be
    /// serviced (only when asked for, see [`Lane::debug_run`]).
    Syscall,
    /// The slice of instructions asked for ran without a stop (the caller looks for an
    /// interrupt from the debugger, then resumes).
    Slice,
}

/// How the program resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Every thread runs until a stop.
    Continue,
    /// Until thread `tid` has run one instruction (others run meanwhile at their turns).
    Step(i32),
}

/// A signal the debugger stopped the program for, not delivered yet.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// A synchronous one: the engine's stop, serviced as without a debugger.
    Stop(Stop),
    /// The process's own syscall (abort's `tgkill`, `raise`, `kill` of itself) sent it a
    /// signal that ends it: the syscall has completed, and this is its outcome.
    Killed(SysOutcome),
    /// A signal on its way to the process's handler, held by the Linux layer.
    Caught,
    /// A signal from another process that would end the followed process, held by the
    /// runner (`Lane::held_kill`).
    HeldKill,
}

/// The debugger's state: what it follows, its breakpoints and watchpoints, and the stop it
/// reported last.
pub struct Debugger {
    pid: i32,
    breakpoints: BTreeSet<u64>,
    watches: Vec<Watch>,
    /// What a `Signal` event reported: delivered on a resume with its signal.
    pending: Option<Pending>,
    /// Stepping: whether the stepped thread has run its instruction yet.
    stepped: bool,
}

impl Debugger {
    /// A debugger for `lane`, following its first process.
    pub fn new(lane: &mut Lane) -> Debugger {
        lane.code.set_tier(None);
        lane.program.process.stop_signals_for_debugger(true);
        Debugger {
            pid: lane.program.process.first_pid(),
            breakpoints: BTreeSet::new(),
            watches: Vec::new(),
            pending: None,
            stepped: false,
        }
    }

    /// The process followed.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Adds a breakpoint at `addr`; false if there was one.
    pub fn add_breakpoint(&mut self, addr: u64) -> bool {
        self.breakpoints.insert(addr)
    }

    /// Removes the breakpoint at `addr`; false if there was none.
    pub fn remove_breakpoint(&mut self, addr: u64) -> bool {
        self.breakpoints.remove(&addr)
    }

    pub fn add_watch(&mut self, w: Watch) -> bool {
        if self.watches.contains(&w) {
            return false;
        }
        self.watches.push(w);
        true
    }

    pub fn remove_watch(&mut self, w: Watch) -> bool {
        let before = self.watches.len();
        self.watches.retain(|x| *x != w);
        self.watches.len() != before
    }

    /// A debugger of the same process with the same breakpoints and watchpoints and
    /// nothing pending (for looking through a copy of the lane: reverse execution).
    pub fn same_stops(&self) -> Debugger {
        Debugger {
            pid: self.pid,
            breakpoints: self.breakpoints.clone(),
            watches: self.watches.clone(),
            pending: None,
            stepped: false,
        }
    }

    /// A debugger of the same process with no breakpoints or watchpoints.
    pub fn no_stops(&self) -> Debugger {
        Debugger {
            pid: self.pid,
            breakpoints: BTreeSet::new(),
            watches: Vec::new(),
            pending: None,
            stepped: false,
        }
    }

    /// gdb resumes the program: a step starts afresh (a step that another stop cut short
    /// is over).
    pub fn begin_resume(&mut self) {
        self.stepped = false;
    }

    /// Whether a signal the last stop reported waits for the resume.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Forgets the signal the last stop reported (the program moved in time).
    pub fn drop_pending(&mut self) {
        self.pending = None;
        self.stepped = false;
    }

    /// Drops every breakpoint and watchpoint (the debugger went away).
    pub fn clear(&mut self) {
        self.breakpoints.clear();
        self.watches.clear();
    }
}

impl Lane {
    /// Whether the process being serviced is the one `dbg` follows.
    fn following(&self, dbg: &Debugger) -> bool {
        self.cur_pid() == dbg.pid
    }

    /// The threads of the followed process (tids), in ascending order.
    pub fn debug_threads(&self, dbg: &Debugger) -> Vec<i32> {
        let mut v: Vec<i32> = self
            .tasks
            .iter()
            .filter(|t| t.pid == dbg.pid)
            .map(|t| t.tid)
            .collect();
        if self.following(dbg) && self.exit.is_none() {
            v.push(self.program.process.tid());
        }
        v.sort_unstable();
        v
    }

    /// The thread the followed process runs now (the one a stop is about).
    pub fn debug_current_thread(&self, dbg: &Debugger) -> Option<i32> {
        self.following(dbg).then(|| self.program.process.tid())
    }

    /// The registers of thread `tid` of the followed process.
    pub fn debug_regs(&mut self, dbg: &Debugger, tid: i32) -> Option<&mut CpuState> {
        if self.following(dbg) && self.program.process.tid() == tid {
            return Some(&mut self.program.state);
        }
        self.tasks
            .iter_mut()
            .find(|t| t.pid == dbg.pid && t.tid == tid)
            .map(|t| &mut t.state)
    }

    /// The followed process's memory.
    pub fn debug_mem(&mut self, dbg: &Debugger) -> Option<&mut crate::memory::AddressSpace> {
        if self.following(dbg) {
            return Some(&mut self.program.mem);
        }
        self.parked.get_mut(&dbg.pid).map(|p| &mut p.program.mem)
    }

    /// Writes `data` into the followed process's memory as a debugger does (read-only
    /// code too); decoded code there is decoded again.
    pub fn debug_write(&mut self, dbg: &Debugger, addr: u64, data: &[u8]) -> bool {
        let Some(mem) = self.debug_mem(dbg) else {
            return false;
        };
        // through the loader's path: permissions aside, and a write to decoded code is
        // reported to the code cache as the guest's own would be
        mem.poke_bytes(addr, data).is_ok()
    }

    /// Runs the lane as `how` says until a stop for the debugger, or until about `slice`
    /// instructions have run (then [`Event::Slice`]); `max`: the run's instruction limit
    /// (`--max-instructions`). `deliver`: resume with the signal the last
    /// [`Event::Signal`] reported (delivered now, to the guest's handler or to its end);
    /// without it the signal is dropped, as gdb's `signal 0` does. `syscalls`: stop at
    /// every syscall of any process of the lane ([`Event::Syscall`]) for the caller to
    /// service with [`Lane::debug_syscall`] (reverse execution keeps the state after each).
    pub fn debug_run(
        &mut self,
        dbg: &mut Debugger,
        how: Resume,
        deliver: bool,
        slice: u64,
        max: Option<u64>,
        syscalls: bool,
    ) -> Event {
        let ended = match dbg.pending.take() {
            Some(Pending::Stop(stop)) if deliver => self.service(stop),
            Some(Pending::Killed(o)) if deliver => self.after_syscall(o),
            // the signal is dropped: the syscall's caller goes on
            Some(Pending::Killed(_)) => self.after_syscall(SysOutcome::Continue),
            Some(Pending::HeldKill) if deliver => self.end_held(),
            // dropped: the process goes on (a syscall it waited in goes on waiting, as a
            // restarted one does on Linux)
            Some(Pending::HeldKill) => {
                self.held_kill = None;
                None
            }
            Some(Pending::Caught) => {
                let p = &mut self.program;
                match p
                    .process
                    .resume_caught_signal(&mut p.state, &mut p.mem, deliver)
                {
                    SysOutcome::Continue => None,
                    o => self.after_syscall(o),
                }
            }
            _ => None,
        };
        if let Some(e) = ended {
            self.exit = Some(e);
        }
        let start = self.retired();
        loop {
            if self.exit.is_none() && max.is_some_and(|m| self.retired() >= m) {
                self.exit = Some(Exit::InstructionLimit);
            }
            if let Some(e) = &self.exit {
                return Event::Exited(e.clone());
            }
            let cur = self.program.process.tid();
            if let Resume::Step(tid) = how {
                if dbg.stepped && self.following(dbg) && cur == tid {
                    dbg.stepped = false;
                    return Event::Stepped { tid };
                }
                if !dbg.stepped && !self.debug_threads(dbg).contains(&tid) {
                    // the thread is gone: nothing to step
                    return Event::Stepped { tid: cur };
                }
            }
            if self.retired() - start >= slice {
                return Event::Slice;
            }
            if let Some(ev) = self.caught(dbg).or_else(|| self.held(dbg)) {
                return ev;
            }
            let Some(until) = self.schedule() else {
                continue;
            };
            // (a timer's signal may have come for a handler)
            if let Some(ev) = self.caught(dbg) {
                return ev;
            }
            let following = self.following(dbg);
            let cur = self.program.process.tid();
            if following {
                self.install_debugger(dbg);
            }
            let left = slice - (self.retired() - start);
            let to_max = max.map_or(u64::MAX, |m| m.saturating_sub(self.retired()));
            let stepping = matches!(how, Resume::Step(t) if following && t == cur);
            let turn = if stepping {
                1
            } else {
                until.min(left).min(to_max)
            };
            let armed = following && !dbg.watches.is_empty();
            let p = &mut self.program;
            p.mem.arm_watches(armed);
            let stop = cpu::run(&mut p.state, &mut p.mem, &mut self.code, turn);
            p.mem.arm_watches(false);
            if stop == Stop::Syscall {
                if stepping {
                    dbg.stepped = true;
                }
                if syscalls {
                    // (the SVC has retired; its service is the caller's)
                    return Event::Syscall;
                }
                match self.debug_syscall(dbg) {
                    Some(ev) => return ev,
                    None => continue,
                }
            }
            if following {
                let pc = self.program.state.pc;
                let hit = match stop {
                    Stop::Fault(_) => self.program.mem.take_watch_hit(),
                    _ => None,
                };
                match stop {
                    Stop::Breakpoint(_) if dbg.breakpoints.contains(&pc) => {
                        return Event::Breakpoint { tid: cur };
                    }
                    Stop::Fault(_) if hit.is_some() => {
                        return Event::Watch {
                            tid: cur,
                            hit: hit.unwrap(),
                        };
                    }
                    Stop::Fault(_) | Stop::Undefined(_) | Stop::Breakpoint(_) => {
                        dbg.pending = Some(Pending::Stop(stop));
                        return Event::Signal {
                            tid: cur,
                            signal: self.signal_of(&stop),
                        };
                    }
                    _ => {}
                }
            } else if matches!(stop, Stop::Breakpoint(_))
                && self.code.traps().contains(&self.program.state.pc)
            {
                // a vfork child running on the followed process's code: it runs the
                // program's own instructions, without the debugger's breakpoints
                self.code.set_traps(&BTreeSet::new());
                continue;
            }
            if stepping {
                dbg.stepped = true;
            }
            if stop == Stop::Budget {
                // a turn, the slice or the instruction limit is over: looked at above
                continue;
            }
            if let Some(e) = self.service(stop) {
                self.exit = Some(e);
            }
        }
    }

    /// A signal held for the debugger on its way to the followed process's handler: the
    /// stop that shows it.
    fn caught(&mut self, dbg: &mut Debugger) -> Option<Event> {
        if !self.following(dbg) || dbg.pending.is_some() {
            return None;
        }
        let signal = self.program.process.caught_signal()?;
        dbg.pending = Some(Pending::Caught);
        Some(Event::Signal {
            tid: self.program.process.tid(),
            signal,
        })
    }

    /// A signal from another process that would end the followed process (SIGTERM from its
    /// child, say), held for the debugger: the stop that shows it, in the process's main
    /// thread (or its first), wherever the process is (running, or waiting in a syscall).
    fn held(&mut self, dbg: &mut Debugger) -> Option<Event> {
        let (pid, signal) = self.held_kill.filter(|h| h.0 == dbg.pid)?;
        if dbg.pending.is_some() {
            return None;
        }
        let threads = self.debug_threads(dbg);
        let tid = if threads.contains(&pid) {
            pid
        } else {
            *threads.first()?
        };
        dbg.pending = Some(Pending::HeldKill);
        Some(Event::Signal { tid, signal })
    }

    /// The debugger passed the held signal on: the followed process ends of it, as it would
    /// have without the debugger (the run, where it is the program's first process).
    fn end_held(&mut self) -> Option<Exit> {
        let (pid, signal) = self.held_kill.take()?;
        let e = Exit::Signal {
            signal,
            message: None,
        };
        if pid == self.program.process.first_pid() {
            return Some(e);
        }
        self.end_process(pid, &e);
        self.deliver_outgoing();
        None
    }

    /// Services the syscall the running task's SVC asked for (after [`Event::Syscall`], or
    /// from `debug_run`). A signal that the followed process's own syscall sends itself,
    /// and that ends it (abort's `tgkill`), is a stop: [`Event::Signal`], delivered on a
    /// resume with it.
    pub fn debug_syscall(&mut self, dbg: &mut Debugger) -> Option<Event> {
        if self.pause.is_some() || self.return_trap.is_some() {
            if let Some(e) = self.service(Stop::Syscall) {
                self.exit = Some(e);
            }
            return None;
        }
        let following = self.following(dbg);
        let cur = self.program.process.tid();
        let p = &mut self.program;
        let outcome = p.process.syscall(&mut p.state, &mut p.mem);
        if let (true, SysOutcome::Killed(signal)) = (following, outcome) {
            dbg.pending = Some(Pending::Killed(outcome));
            return Some(Event::Signal { tid: cur, signal });
        }
        if let Some(e) = self.after_syscall(outcome) {
            self.exit = Some(e);
        }
        None
    }

    /// Puts the debugger's breakpoints and watchpoints into the followed process (again
    /// after an exec gave it new code and memory), on the interpreter.
    fn install_debugger(&mut self, dbg: &Debugger) {
        if self.code.tier().is_some() {
            self.code.set_tier(None);
        }
        self.code.set_traps(&dbg.breakpoints);
        if self.program.mem.watches() != dbg.watches.as_slice() {
            self.program.mem.set_watches(&dbg.watches);
        }
    }

    /// The signal `stop` raises when delivered (see `service`).
    fn signal_of(&mut self, stop: &Stop) -> i32 {
        use crate::linux::signal as sig;
        match stop {
            Stop::Fault(f) => super::fault_signal(&mut self.program, f).0,
            Stop::Breakpoint(_) => sig::SIGTRAP,
            _ => sig::SIGILL,
        }
    }
}

impl Lane {
    /// The debugger goes away: its breakpoints and watchpoints leave the followed process,
    /// which runs on as if it had never been debugged (a signal a stop reported and gdb
    /// did not pass is dropped; its instruction runs again).
    pub fn debug_detach(&mut self, dbg: &mut Debugger) {
        dbg.clear();
        let pending = dbg.pending.take();
        let caught = matches!(pending, Some(Pending::Caught));
        if self.held_kill.is_some_and(|h| h.0 == dbg.pid) {
            // a signal held for the debugger: it ends the process, as it would have
            if let Some(e) = self.end_held() {
                self.exit = Some(e);
            }
        }
        if self.following(dbg) {
            let p = &mut self.program;
            if caught {
                // the held signal goes to its handler, as it would have without the debugger
                if let SysOutcome::Killed(s) =
                    p.process
                        .resume_caught_signal(&mut p.state, &mut p.mem, true)
                {
                    self.exit = Some(Exit::Signal {
                        signal: s,
                        message: None,
                    });
                }
            }
            self.program.process.stop_signals_for_debugger(false);
        } else if let Some(p) = self.parked.get_mut(&dbg.pid) {
            p.program.process.stop_signals_for_debugger(false);
        }
        let none = BTreeSet::new();
        if self.following(dbg) {
            self.code.set_traps(&none);
            self.program.mem.set_watches(&[]);
        } else if let Some(p) = self.parked.get_mut(&dbg.pid) {
            p.code.set_traps(&none);
            p.program.mem.set_watches(&[]);
        }
    }
}
