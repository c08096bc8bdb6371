//! Architectural state of one lane, and why a lane stopped.

use crate::memory::Fault;
use armada_isa::uop::reg;

/// Size of the CPU engine's general register array (see `CpuState::x`).
pub const REG_FILE: usize = 64;
const _: () = assert!(reg::COUNT <= REG_FILE);

/// The registers of one guest thread. Plain data: the GPU engines keep the same fields.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct CpuState {
    /// x0..x30, SP (31), the zero register (32, always 0) and a write sink (33). The array is
    /// larger than `reg::COUNT` so that the interpreter can index it with `& 63`, which the
    /// compiler proves in bounds; entries past 33 are never used.
    pub x: [u64; REG_FILE],
    pub pc: u64,
    /// NZCV in bits 31..28, as MRS NZCV reads it.
    pub nzcv: u64,
    /// v0..v31, 128 bits each (little-endian lanes).
    pub v: [u128; 32],
    pub fpcr: u64,
    pub fpsr: u64,
    pub tpidr: u64,
    /// Exclusive monitor: address armed by LDXR/LDAXR, or `u64::MAX` when clear.
    pub excl_addr: u64,
    /// Instructions retired so far.
    pub retired: u64,
}

impl Default for CpuState {
    fn default() -> Self {
        CpuState {
            x: [0; REG_FILE],
            pc: 0,
            nzcv: 0,
            v: [0; 32],
            fpcr: 0,
            fpsr: 0,
            tpidr: 0,
            excl_addr: u64::MAX,
            retired: 0,
        }
    }
}

impl CpuState {
    /// General register n (0..=30), or SP for 31.
    pub fn reg(&self, n: usize) -> u64 {
        self.x[n]
    }
    pub fn set_reg(&mut self, n: usize, v: u64) {
        if n < 32 {
            self.x[n] = v;
        }
    }
    pub fn sp(&self) -> u64 {
        self.x[reg::SP as usize]
    }
}

/// Why a lane stopped running. The PC in the state is where it stopped: at the faulting or
/// undefined instruction, or after the SVC/HLT/BRK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SVC #imm executed; the PC is after it. The syscall number is in x8.
    Syscall,
    /// HLT #imm executed; the PC is after it.
    Halt(u16),
    /// BRK #imm executed; the PC is at it.
    Breakpoint(u16),
    /// A memory access failed; the PC is at the instruction.
    Fault(Fault),
    /// An encoding armada does not implement (or that is unallocated); the PC is at it.
    Undefined(u32),
    /// The instruction budget ran out.
    Budget,
}

impl Stop {
    pub fn name(&self) -> &'static str {
        match self {
            Stop::Syscall => "SYSCALL",
            Stop::Halt(_) => "HALT",
            Stop::Breakpoint(_) => "BREAKPOINT",
            Stop::Fault(_) => "FAULT",
            Stop::Undefined(_) => "UNDEFINED",
            Stop::Budget => "MAX_CYCLES",
        }
    }
}
