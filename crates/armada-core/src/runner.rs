//! Running a program to its end: the engine runs until a stop, the Linux layer services
//! syscalls, and faults end the program as the matching signal would.

use crate::cpu::{self, CodeCache};
use crate::linux::SysOutcome;
use crate::memory::Access;
use crate::process::Program;
use crate::state::Stop;

/// Linux signal numbers the runner reports.
pub mod signal {
    pub const SIGILL: i32 = 4;
    pub const SIGTRAP: i32 = 5;
    pub const SIGABRT: i32 = 6;
    pub const SIGBUS: i32 = 7;
    pub const SIGKILL: i32 = 9;
    pub const SIGSEGV: i32 = 11;

    pub fn name(sig: i32) -> &'static str {
        match sig {
            1 => "SIGHUP",
            2 => "SIGINT",
            3 => "SIGQUIT",
            4 => "SIGILL",
            5 => "SIGTRAP",
            6 => "SIGABRT",
            7 => "SIGBUS",
            8 => "SIGFPE",
            9 => "SIGKILL",
            10 => "SIGUSR1",
            11 => "SIGSEGV",
            12 => "SIGUSR2",
            13 => "SIGPIPE",
            14 => "SIGALRM",
            15 => "SIGTERM",
            _ => "signal",
        }
    }
}

/// How a program ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// exit/exit_group with this status.
    Code(i32),
    /// Killed by a signal; `message` says why when armada raised it (a fault, say).
    Signal { signal: i32, message: Option<String> },
    /// The instruction limit was reached before the program ended.
    InstructionLimit,
}

impl Exit {
    /// The status a shell would report: the exit code, or 128 + the signal number.
    pub fn status(&self) -> i32 {
        match self {
            Exit::Code(c) => *c & 0xff,
            Exit::Signal { signal, .. } => 128 + signal,
            Exit::InstructionLimit => 124,
        }
    }
}

/// A program together with its decoded code: one lane.
pub struct Lane {
    pub program: Program,
    pub code: CodeCache,
    pub exit: Option<Exit>,
}

impl Lane {
    pub fn new(program: Program) -> Self {
        Lane {
            program,
            code: CodeCache::new(),
            exit: None,
        }
    }

    pub fn retired(&self) -> u64 {
        self.program.state.retired
    }

    /// Runs until the program ends or `max_instructions` (in total) have retired.
    pub fn run(&mut self, max_instructions: Option<u64>) -> &Exit {
        while self.exit.is_none() {
            let budget = match max_instructions {
                Some(m) => m.saturating_sub(self.retired()),
                None => u64::MAX,
            };
            let stop = cpu::run(
                &mut self.program.state,
                &mut self.program.mem,
                &mut self.code,
                budget,
            );
            self.exit = self.service(stop);
        }
        self.exit.as_ref().unwrap()
    }

    /// Handles one stop of the engine; returns how the program ended, if it did.
    pub fn service(&mut self, stop: Stop) -> Option<Exit> {
        let p = &mut self.program;
        let pc = p.state.pc;
        match stop {
            Stop::Syscall => match p.process.syscall(&mut p.state, &mut p.mem) {
                SysOutcome::Continue => None,
                SysOutcome::Exit(code) => Some(Exit::Code(code)),
                SysOutcome::Killed(sig) => Some(Exit::Signal {
                    signal: sig,
                    message: None,
                }),
            },
            Stop::Budget => Some(Exit::InstructionLimit),
            Stop::Fault(f) => {
                let sig = if f.access == Access::Execute && pc & 3 != 0 {
                    signal::SIGBUS
                } else {
                    signal::SIGSEGV
                };
                Some(Exit::Signal {
                    signal: sig,
                    message: Some(format!("{} at pc {pc:#x}: {f}", signal::name(sig))),
                })
            }
            Stop::Undefined(word) => Some(Exit::Signal {
                signal: signal::SIGILL,
                message: Some(format!(
                    "SIGILL at pc {pc:#x}: undefined or unimplemented instruction {word:#010x}"
                )),
            }),
            Stop::Breakpoint(imm) => Some(Exit::Signal {
                signal: signal::SIGTRAP,
                message: Some(format!("SIGTRAP at pc {pc:#x}: brk #{imm:#x}")),
            }),
            Stop::Halt(imm) => Some(Exit::Signal {
                // HLT is undefined at EL0 on Linux.
                signal: signal::SIGILL,
                message: Some(format!("SIGILL at pc {:#x}: hlt #{imm:#x}", pc.wrapping_sub(4))),
            }),
        }
    }
}
