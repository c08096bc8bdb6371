//! What translated code calls out to: the context it runs with, and the helpers for the
//! slow paths (a TLB miss, an FP/SIMD op, an op only the interpreter runs).
//!
//! Every helper is `extern "C"` and takes the context first. A helper that fails leaves
//! the stop in `Ctx::stop` and says so in `Ctx::status` (or its return value), and the
//! translated code leaves the unit with the state as it was before the instruction.

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Fault, TlbView};
use armada_core::state::{CpuState, Stop};
use armada_isa::MicroOp;

/// What a unit runs with. Translated code reads the fields at the `CTX_*` offsets.
#[repr(C)]
pub struct Ctx {
    pub st: *mut CpuState,
    pub tlb: *const TlbView,
    /// The instruction count the run must not pass.
    pub limit: u64,
    pub mem: *mut AddressSpace,
    pub code: *mut CodeCache,
    /// The code cache's epoch when the unit was entered.
    pub epoch: u64,
    /// A 16-byte read's result.
    pub buf: [u64; 2],
    /// Set by a helper that stopped: 1.
    pub status: u64,
    /// The flags as a unit leaves them: kind, operands and NZCV (see `flags`).
    pub flags: [u64; 5],
    /// The lane's direct-mapped table of units (`LOOKUP` entries of PC and unit, 0 for
    /// none), where a unit looks for the next one to jump to.
    pub lookup: *const (u64, Option<crate::store::UnitFn>),
    /// A helper's return value, left by its adapter (see `adapters`).
    pub ret: u64,
    pub stop: Option<Stop>,
}

pub const CTX_ST: i32 = 0;
pub const CTX_TLB: i32 = 8;
pub const CTX_LIMIT: i32 = 16;
pub const CTX_BUF: i32 = 48;
pub const CTX_STATUS: i32 = 64;
pub const CTX_FK: i32 = 72;
pub const CTX_LOOKUP: i32 = 112;
pub const CTX_RET: i32 = 120;
const _: () = {
    assert!(std::mem::offset_of!(Ctx, st) == CTX_ST as usize);
    assert!(std::mem::offset_of!(Ctx, tlb) == CTX_TLB as usize);
    assert!(std::mem::offset_of!(Ctx, limit) == CTX_LIMIT as usize);
    assert!(std::mem::offset_of!(Ctx, buf) == CTX_BUF as usize);
    assert!(std::mem::offset_of!(Ctx, status) == CTX_STATUS as usize);
    assert!(std::mem::offset_of!(Ctx, flags) == CTX_FK as usize);
    assert!(std::mem::offset_of!(Ctx, lookup) == CTX_LOOKUP as usize);
    assert!(std::mem::offset_of!(Ctx, ret) == CTX_RET as usize);
    assert!(std::mem::size_of::<(u64, Option<crate::store::UnitFn>)>() == 16);
};

/// Helper status: the instruction completed.
pub const OK: u64 = 0;
/// It stopped the lane (`Ctx::stop`); nothing of it happened.
pub const STOPPED: u64 = 1;
/// It completed and wrote decoded code (or changed what is decoded): the unit must leave
/// after it, as the interpreter goes back to its outer loop.
pub const CODE_CHANGED: u64 = 2;

/// How a unit returns to the dispatcher.
pub mod exit {
    /// Go on at `st.pc`.
    pub const NEXT: u64 = 0;
    /// The lane stopped: `Ctx::stop`.
    pub const STOP: u64 = 1;
    /// SVC retired; `st.pc` is after it.
    pub const SYSCALL: u64 = 2;
    /// The budget ends inside the block at `st.pc`: the interpreter runs the rest of it.
    pub const INTERP: u64 = 3;
    /// The interpreter runs the one instruction at `st.pc` (an access the translated code
    /// makes only in the common case), then the dispatcher goes on.
    pub const ONE: u64 = 4;
}

unsafe fn fail(ctx: *mut Ctx, f: Fault) {
    (*ctx).stop = Some(Stop::Fault(f));
    (*ctx).status = STOPPED;
}

/// A read the inline TLB lookup missed: 1, 2, 4 or 8 bytes, zero-extended.
pub extern "C" fn read(ctx: *mut Ctx, addr: u64, size: u64) -> u64 {
    // SAFETY: the dispatcher made `ctx` for this call, its pointers live and unaliased
    // while translated code runs.
    unsafe {
        let mem = &mut *(*ctx).mem;
        let r = match size {
            1 => mem.read_u8(addr).map(u64::from),
            2 => mem.read_u16(addr).map(u64::from),
            4 => mem.read_u32(addr).map(u64::from),
            _ => mem.read_u64(addr),
        };
        r.unwrap_or_else(|f| {
            fail(ctx, f);
            0
        })
    }
}

/// A 16-byte read, into `Ctx::buf`.
pub extern "C" fn read16(ctx: *mut Ctx, addr: u64) {
    // SAFETY: as in `read`.
    unsafe {
        let mem = &mut *(*ctx).mem;
        match mem.read_u128(addr) {
            Ok(v) => (*ctx).buf = [v as u64, (v >> 64) as u64],
            Err(f) => fail(ctx, f),
        }
    }
}

/// A write the inline TLB lookup missed: 1, 2, 4, 8 or 16 bytes (`hi` the upper 8).
pub extern "C" fn write(ctx: *mut Ctx, addr: u64, size: u64, lo: u64, hi: u64) -> u64 {
    // SAFETY: as in `read`.
    unsafe {
        let mem = &mut *(*ctx).mem;
        let r = match size {
            1 => mem.write_u8(addr, lo as u8),
            2 => mem.write_u16(addr, lo as u16),
            4 => mem.write_u32(addr, lo as u32),
            8 => mem.write_u64(addr, lo),
            _ => mem.write_u128(addr, lo as u128 | (hi as u128) << 64),
        };
        match r {
            Err(f) => {
                fail(ctx, f);
                STOPPED
            }
            Ok(()) if mem.has_code_write() => CODE_CHANGED,
            Ok(()) => OK,
        }
    }
}

/// An FP/AdvSIMD micro-op, run by the interpreter's FP code on the state (the translated
/// code has stored the general registers the op names, and the flags).
pub extern "C" fn fp(ctx: *mut Ctx, word: u64, imm: u64) -> u64 {
    // SAFETY: as in `read`.
    unsafe {
        let (st, mem) = (&mut *(*ctx).st, &mut *(*ctx).mem);
        match cpu::exec_fp_op(st, mem, &MicroOp::from_words(word, imm)) {
            Err(f) => {
                fail(ctx, f);
                STOPPED
            }
            Ok(()) if mem.has_code_write() => CODE_CHANGED,
            Ok(()) => OK,
        }
    }
}

/// One instruction on the interpreter, from `st.pc` (the translated code has stored every
/// register it keeps, the flags, the PC and the count).
pub extern "C" fn interp_one(ctx: *mut Ctx) -> u64 {
    // SAFETY: as in `read`.
    unsafe {
        let (st, mem, code) = (&mut *(*ctx).st, &mut *(*ctx).mem, &mut *(*ctx).code);
        match cpu::interpret(st, mem, code, 1) {
            Stop::Budget if mem.has_code_write() || code.epoch() != (*ctx).epoch => CODE_CHANGED,
            Stop::Budget => OK,
            stop => {
                (*ctx).stop = Some(stop);
                STOPPED
            }
        }
    }
}

/// NZCV (bits 31..28) from the last flag-setting op's kind and operands (see `flags`).
pub extern "C" fn flags(kind: u64, a: u64, b: u64, r: u64, packed: u64) -> u64 {
    crate::flags::pack(kind, a, b, r, packed)
}
