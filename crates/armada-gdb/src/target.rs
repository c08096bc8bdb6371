//! The debugged program as gdbstub's target: a lane and its debugger (see
//! `armada_core::runner::debug`), gdb's requests mapped onto them.

use crate::arch::{gdb_signal, Aarch64Linux, Regs};
use armada_core::memory::{Watch, WatchKind as Kind};
use armada_core::runner::debug::{Debugger, Event, Resume};
use armada_core::runner::history::{Back, Timeline};
use armada_core::runner::{Exit, Lane};
use gdbstub::common::{Pid, Signal, Tid};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::auxv::{Auxv, AuxvOps};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::reverse_exec::{
    ReplayLogPosition, ReverseCont, ReverseContOps, ReverseStep, ReverseStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, HwBreakpoint, HwBreakpointOps, HwWatchpoint, HwWatchpointOps,
    SwBreakpoint, SwBreakpointOps, WatchKind,
};
use gdbstub::target::ext::exec_file::{ExecFile, ExecFileOps};
use gdbstub::target::{Target, TargetError, TargetResult};

/// Instructions the program runs between looks at the connection for gdb's interrupt
/// (Ctrl-C): about a tenth of a second on the interpreter.
pub(crate) const SLICE: u64 = 4 << 20;

/// Which way gdb asked the program to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    /// `bs`: one instruction of this thread back.
    BackStep(i32),
    /// `bc`: back to the last breakpoint or watched access.
    BackContinue,
}

/// A program under gdb.
pub struct Session {
    /// The program, with its history when it runs deterministically.
    pub tl: Timeline,
    pub dbg: Debugger,
    direction: Direction,
    /// `--max-instructions`.
    pub max: Option<u64>,
    resume: Resume,
    deliver: bool,
    /// The program's auxiliary vector as it started (gdb finds a PIE's load address and
    /// the dynamic loader through it).
    auxv: Vec<u8>,
    /// The program's path on the host (gdb loads its symbols from it).
    exe: Vec<u8>,
    /// Whether armada has said which process gdb follows (at the first other process).
    told_follow: bool,
}

impl Session {
    /// A session for a lane that has not run yet.
    pub fn new(mut lane: Lane, max: Option<u64>) -> Session {
        let dbg = Debugger::new(&mut lane);
        let auxv = initial_auxv(&mut lane);
        let deterministic = lane.program.process.cfg.deterministic;
        let exe = {
            use std::os::unix::ffi::OsStrExt;
            lane.program
                .process
                .cfg
                .exe_host_path
                .as_os_str()
                .as_bytes()
                .to_vec()
        };
        Session {
            tl: Timeline::new(lane, deterministic),
            dbg,
            direction: Direction::Forward,
            max,
            resume: Resume::Continue,
            deliver: false,
            auxv,
            exe,
            told_follow: false,
        }
    }

    /// Runs the program as gdb last asked, for one slice; None: no stop yet.
    pub(crate) fn run_slice(&mut self) -> Option<MultiThreadStopReason<u64>> {
        let ev = match self.direction {
            Direction::Forward => self.tl.run(
                &mut self.dbg,
                self.resume,
                std::mem::take(&mut self.deliver),
                SLICE,
                self.max,
            ),
            Direction::BackStep(_) | Direction::BackContinue => {
                let back = match self.direction {
                    Direction::BackStep(tid) => self.tl.step_back(&mut self.dbg, tid),
                    _ => self.tl.continue_back(&mut self.dbg),
                };
                match back {
                    Back::At(ev) => ev,
                    Back::Begin { tid } => {
                        return Some(MultiThreadStopReason::ReplayLog {
                            tid: Some(tid_of(tid)),
                            pos: ReplayLogPosition::Begin,
                        })
                    }
                }
            }
        };
        if !self.told_follow {
            self.tell_follow();
        }
        Some(match ev {
            Event::Slice | Event::Syscall => return None,
            Event::Breakpoint { tid } => MultiThreadStopReason::SwBreak(tid_of(tid)),
            Event::Watch { tid, hit } => MultiThreadStopReason::Watch {
                tid: tid_of(tid),
                kind: match hit.watch.kind {
                    Kind::Write => WatchKind::Write,
                    Kind::Read => WatchKind::Read,
                    Kind::Access => WatchKind::ReadWrite,
                },
                addr: hit
                    .addr
                    .clamp(hit.watch.addr, hit.watch.addr + hit.watch.len - 1),
            },
            Event::Stepped { tid } => MultiThreadStopReason::SignalWithThread {
                tid: tid_of(tid),
                signal: Signal::SIGTRAP,
            },
            Event::Signal { tid, signal } => MultiThreadStopReason::SignalWithThread {
                tid: tid_of(tid),
                signal: gdb_signal(signal),
            },
            Event::Exited(e) => match e {
                Exit::Code(c) => MultiThreadStopReason::Exited(c as u8),
                Exit::Signal { signal, .. } => {
                    MultiThreadStopReason::Terminated(gdb_signal(signal))
                }
                Exit::InstructionLimit | Exit::Unsupported(_) => {
                    MultiThreadStopReason::Terminated(Signal::SIGKILL)
                }
            },
        })
    }

    /// Says once, when the program first has another process, which one gdb follows: gdb
    /// is not told of forks as events (gdbstub has none), so without this word a user
    /// setting `follow-fork-mode child` would wait for a child that never stops.
    fn tell_follow(&mut self) {
        if let Some(child) = self.tl.lane.first_child() {
            self.told_follow = true;
            eprintln!(
                "armada: the program started process {child}; gdb follows process {} only \
                 (follow-fork-mode parent): other processes run without breakpoints, and \
                 armada says this once",
                self.dbg.pid()
            );
        }
    }

    /// The stop an interrupt from gdb makes: SIGINT in the thread that runs.
    pub(crate) fn interrupted(&self) -> MultiThreadStopReason<u64> {
        let tid = self
            .tl
            .lane
            .debug_current_thread(&self.dbg)
            .or_else(|| self.tl.lane.debug_threads(&self.dbg).first().copied())
            .unwrap_or(self.dbg.pid());
        MultiThreadStopReason::SignalWithThread {
            tid: tid_of(tid),
            signal: Signal::SIGINT,
        }
    }
}

fn tid_of(tid: i32) -> Tid {
    Tid::new(tid.max(1) as usize).expect("positive")
}

/// The auxiliary vector on a fresh process's stack: after argc, argv and envp.
fn initial_auxv(lane: &mut Lane) -> Vec<u8> {
    let p = &mut lane.program;
    let mut at = p.state.x[31];
    let mut word = |at: &mut u64| {
        let v = p.mem.read_u64(*at).ok();
        *at += 8;
        v
    };
    let Some(argc) = word(&mut at) else {
        return Vec::new();
    };
    at += (argc + 1) * 8;
    // envp, to its NULL
    while let Some(w) = word(&mut at) {
        if w == 0 {
            break;
        }
    }
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (word(&mut at), word(&mut at)) {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
        if k == 0 || out.len() > 64 * 16 {
            break;
        }
    }
    out
}

/// Copies `data[offset..]` into `buf`, as the qXfer reads want.
fn xfer(data: &[u8], offset: u64, length: usize, buf: &mut [u8]) -> usize {
    let Some(rest) = usize::try_from(offset).ok().and_then(|o| data.get(o..)) else {
        return 0;
    };
    let n = rest.len().min(length).min(buf.len());
    buf[..n].copy_from_slice(&rest[..n]);
    n
}

impl Target for Session {
    type Arch = Aarch64Linux;
    type Error = String;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_exec_file(&mut self) -> Option<ExecFileOps<'_, Self>> {
        Some(self)
    }

    fn support_auxv(&mut self) -> Option<AuxvOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for Session {
    fn read_registers(&mut self, regs: &mut Regs, tid: Tid) -> TargetResult<(), Self> {
        let st = self
            .tl
            .lane
            .debug_regs(&self.dbg, tid.get() as i32)
            .ok_or(TargetError::NonFatal)?;
        *regs = Regs::from_state(st);
        Ok(())
    }

    fn write_registers(&mut self, regs: &Regs, tid: Tid) -> TargetResult<(), Self> {
        self.tl.changed();
        let st = self
            .tl
            .lane
            .debug_regs(&self.dbg, tid.get() as i32)
            .ok_or(TargetError::NonFatal)?;
        regs.to_state(st);
        Ok(())
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], _tid: Tid) -> TargetResult<usize, Self> {
        let mem = self
            .tl
            .lane
            .debug_mem(&self.dbg)
            .ok_or(TargetError::NonFatal)?;
        // page by page: a read that runs into unmapped memory returns what it got
        let mut done = 0;
        while done < data.len() {
            let a = start.wrapping_add(done as u64);
            let n = (4096 - (a & 4095) as usize).min(data.len() - done);
            let chunk = &mut data[done..done + n];
            if mem.read_bytes(a, chunk).is_err() && mem.fetch_bytes(a, chunk).is_err() {
                break;
            }
            done += n;
        }
        if done == 0 && !data.is_empty() {
            return Err(TargetError::Errno(14)); // EFAULT
        }
        Ok(done)
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        self.tl.changed();
        if self.tl.lane.debug_write(&self.dbg, start, data) {
            Ok(())
        } else {
            Err(TargetError::Errno(14))
        }
    }

    fn list_active_threads(&mut self, register: &mut dyn FnMut(Tid)) -> Result<(), String> {
        // the thread of the last stop first: gdbstub takes the first thread for gdb's "any
        // thread" (`Hc0`), which is what gdb sends before a reverse step, and reverse-stepi
        // should go back in the thread the user looks at
        let cur = self.tl.lane.debug_current_thread(&self.dbg);
        let mut all = self.tl.lane.debug_threads(&self.dbg);
        all.sort_by_key(|t| Some(*t) != cur);
        for t in all {
            register(tid_of(t));
        }
        Ok(())
    }

    fn is_thread_alive(&mut self, tid: Tid) -> Result<bool, String> {
        Ok(self
            .tl
            .lane
            .debug_threads(&self.dbg)
            .contains(&(tid.get() as i32)))
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadResume for Session {
    fn resume(&mut self) -> Result<(), String> {
        // the program runs in the event loop (`wait_for_stop_reason`)
        self.dbg.begin_resume();
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), String> {
        self.resume = Resume::Continue;
        self.direction = Direction::Forward;
        self.deliver = false;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        _tid: Tid,
        signal: Option<Signal>,
    ) -> Result<(), String> {
        self.deliver |= signal.is_some();
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }

    fn support_reverse_step(&mut self) -> Option<ReverseStepOps<'_, Tid, Self>> {
        self.tl.enabled().then_some(self as _)
    }

    fn support_reverse_cont(&mut self) -> Option<ReverseContOps<'_, Tid, Self>> {
        self.tl.enabled().then_some(self as _)
    }
}

impl ReverseStep<Tid> for Session {
    fn reverse_step(&mut self, tid: Tid) -> Result<(), String> {
        self.direction = Direction::BackStep(tid.get() as i32);
        Ok(())
    }
}

impl ReverseCont<Tid> for Session {
    fn reverse_cont(&mut self) -> Result<(), String> {
        self.direction = Direction::BackContinue;
        Ok(())
    }
}

/// gdb resumes one thread alone (`vCont;c:TID` with no action for the others) for
/// `finish`, `until` and `set scheduler-locking on`. armada's scheduler still gives the
/// other threads their turns, as it does without a debugger: the program switches threads
/// at the same instructions either way, which reverse execution and replay rely on. The
/// resumed thread's stop is reported as asked.
impl MultiThreadSchedulerLocking for Session {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), String> {
        Ok(())
    }
}

impl MultiThreadSingleStep for Session {
    fn set_resume_action_step(&mut self, tid: Tid, signal: Option<Signal>) -> Result<(), String> {
        self.resume = Resume::Step(tid.get() as i32);
        self.deliver |= signal.is_some();
        Ok(())
    }
}

impl Breakpoints for Session {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_breakpoint(&mut self) -> Option<HwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for Session {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.dbg.add_breakpoint(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.dbg.remove_breakpoint(addr))
    }
}

/// A "hardware" breakpoint is the same as a software one here: neither changes memory.
impl HwBreakpoint for Session {
    fn add_hw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.dbg.add_breakpoint(addr);
        Ok(true)
    }

    fn remove_hw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.dbg.remove_breakpoint(addr))
    }
}

fn watch(addr: u64, len: u64, kind: WatchKind) -> Watch {
    Watch {
        addr,
        len: len.max(1),
        kind: match kind {
            WatchKind::Write => Kind::Write,
            WatchKind::Read => Kind::Read,
            WatchKind::ReadWrite => Kind::Access,
        },
    }
}

impl HwWatchpoint for Session {
    fn add_hw_watchpoint(
        &mut self,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        self.dbg.add_watch(watch(addr, len, kind));
        Ok(true)
    }

    fn remove_hw_watchpoint(
        &mut self,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        Ok(self.dbg.remove_watch(watch(addr, len, kind)))
    }
}

impl ExecFile for Session {
    fn get_exec_file(
        &self,
        _pid: Option<Pid>,
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        Ok(xfer(&self.exe, offset, length, buf))
    }
}

impl Auxv for Session {
    fn get_auxv(&self, offset: u64, length: usize, buf: &mut [u8]) -> TargetResult<usize, Self> {
        Ok(xfer(&self.auxv, offset, length, buf))
    }
}
