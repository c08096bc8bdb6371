//! Running a program to its end: the engine runs until a stop, the Linux layer services
//! syscalls, and faults end the program as the matching signal would.

use crate::cpu::{self, CodeCache, DecodedPages};
use crate::linux::signal as sig;
use crate::linux::SysOutcome;
use crate::memory::Access;
use crate::process::Program;
use crate::state::Stop;
use std::sync::Arc;

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

    /// A lane that shares decoded code with the other lanes of a batch.
    pub fn with_decoded(program: Program, decoded: Arc<DecodedPages>) -> Self {
        Lane {
            program,
            code: CodeCache::with_shared(decoded),
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
                let (sig, code) = if f.access == Access::Execute && pc & 3 != 0 {
                    (sig::SIGBUS, sig::BUS_ADRALN)
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
                    SysOutcome::Continue => None,
                }
            }
        }
    }
}
