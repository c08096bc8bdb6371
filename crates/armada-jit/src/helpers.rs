//! What translated code calls out to: the context it runs with, and the helpers for the
//! slow paths (a TLB miss, an FP/SIMD op, an op only the interpreter runs).
//!
//! Every helper is `extern "C"` and takes the context first. A helper that fails leaves
//! the stop in `Ctx::stop` and says so in `Ctx::status` (or its return value), and the
//! translated code leaves the unit with the state as it was before the instruction.

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Fault};
use armada_core::state::{CpuState, Stop};
use armada_isa::MicroOp;
use std::mem::offset_of;

/// What a unit runs with: the lane's registers themselves, then what translated code reads
/// beside them. Translated code finds it in the pinned register (see `translate`), and
/// reads the fields at the `CTX_*` offsets: the registers, the TLB and the budget are each
/// one load from that register, where a pointer to the state and one to the TLB's view,
/// kept in registers the whole unit, were spilled and reloaded around every access.
#[repr(C)]
pub struct Ctx {
    /// The lane's registers while the tier runs it (copied in and back by the dispatcher).
    pub state: CpuState,
    /// The TLB's entries (`AddressSpace::tlb_view`), and the complement of the address
    /// bits that index it, `!(mask << 12)`: an entry's offset is those bits of the address
    /// shifted right by 12 - 5, with BMI1 an `andn` and a shift. Copied here when a unit is
    /// entered and after every helper that can fill the TLB (a fill may grow it).
    pub tlb_entries: *const u8,
    pub tlb_unindexed: u64,
    /// The address space's window (`TlbView::window`), null if it has none: a read that
    /// hits the TLB loads from here plus its address, not through the entry's pointer.
    pub window: *const u8,
    /// The instruction count the run must not pass.
    pub limit: u64,
    /// The lane's direct-mapped table of units (`LOOKUP` entries of PC and unit, 0 for
    /// none), where a unit looks for the next one to jump to.
    pub lookup: *const (u64, Option<crate::store::UnitFn>),
    /// A missed read's bytes (see `read`), which the unit loads from.
    pub buf: [u64; 2],
    /// Set by a helper that stopped: 1.
    pub status: u64,
    /// The flags as a unit leaves them: kind, operands and NZCV (see `flags`).
    pub flags: [u64; 5],
    /// A helper's return value, left by its adapter (see `adapters`).
    pub ret: u64,
    /// The entry a unit is entered at: 0 for its own, else set by the trampoline of one of
    /// its other entries (see `store`), and put back to 0 by the unit.
    pub entry: u64,
    pub mem: *mut AddressSpace,
    pub code: *mut CodeCache,
    /// A guarded access faulted in the guest (see `guard`): its page's address + 1, where a
    /// scratch page stands until the access's slow path; `fault2` a second such page of
    /// an access that crosses pages.
    pub fault: u64,
    pub fault2: u64,
    /// The code cache's epoch when the unit was entered.
    pub epoch: u64,
    pub stop: Option<Stop>,
    /// The site table of the guarded unit running, which stores it when entered, and the
    /// count at the start of its block, which a block stores before its first exact site
    /// (see `guard`).
    pub sites: *const crate::guard::SiteTable,
    pub blk_ret: u64,
    /// The stack pointer of `guard::enter`'s frame while a unit runs (else 0).
    pub jmp_sp: u64,
}

pub const CTX_TLB_ENTRIES: i32 = offset_of!(Ctx, tlb_entries) as i32;
pub const CTX_TLB_UNINDEXED: i32 = offset_of!(Ctx, tlb_unindexed) as i32;
pub const CTX_WINDOW: i32 = offset_of!(Ctx, window) as i32;
pub const CTX_LIMIT: i32 = offset_of!(Ctx, limit) as i32;
pub const CTX_LOOKUP: i32 = offset_of!(Ctx, lookup) as i32;
pub const CTX_STATUS: i32 = offset_of!(Ctx, status) as i32;
pub const CTX_FK: i32 = offset_of!(Ctx, flags) as i32;
pub const CTX_RET: i32 = offset_of!(Ctx, ret) as i32;
pub const CTX_ENTRY: i32 = offset_of!(Ctx, entry) as i32;
pub const CTX_FAULT: i32 = offset_of!(Ctx, fault) as i32;
pub const CTX_SITES: i32 = offset_of!(Ctx, sites) as i32;
pub const CTX_BLK_RET: i32 = offset_of!(Ctx, blk_ret) as i32;
const _: () = {
    // translated code addresses the registers from the context's start
    assert!(offset_of!(Ctx, state) == 0);
    assert!(std::mem::size_of::<(u64, Option<crate::store::UnitFn>)>() == 16);
};

/// Copies the TLB's entries, mask and window from `mem` into the context (after an access
/// that may have filled the TLB, and so grown it or given the window up).
///
/// # Safety
/// `ctx` is live; `mem` is the address space it runs with.
pub unsafe fn sync_tlb(ctx: *mut Ctx, mem: &mut AddressSpace) {
    let view = &*mem.tlb_view();
    (*ctx).tlb_entries = view.entries;
    (*ctx).tlb_unindexed = !(view.mask << 12);
    if mem.window_retired() {
        // The guarded window was given up under the running unit, which keeps the window it
        // was entered with (it may hold the base in a register), whose every access now
        // takes its slow path: it leaves at its next check of the budget, and the
        // dispatcher, seeing the limit changed, goes on without the window.
        (*ctx).limit = 0;
        return;
    }
    (*ctx).window = view.window;
}

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
    /// A quick block's run count ran out (`quick`): the dispatcher asks for the unit at
    /// `st.pc`, where the block starts, nothing of it run.
    pub const HOT: u64 = 5;
    /// A quick block sent to its unit has been judged not worth it (`quick::slow::unit`):
    /// the dispatcher gives the block back its own code, then goes on at `st.pc`.
    pub const SMALL: u64 = 6;
}

/// Takes away the scratch pages a guarded access that faulted left (see `guard`), before
/// the access is made through the interpreter's path.
///
/// # Safety
/// `ctx` is live; `mem` is the address space it runs with.
pub(crate) unsafe fn unguard(ctx: *mut Ctx, mem: &mut AddressSpace) {
    for f in [&raw mut (*ctx).fault, &raw mut (*ctx).fault2] {
        if *f != 0 {
            mem.guard_scratch(*f - 1, false);
            *f = 0;
        }
    }
}

unsafe fn fail(ctx: *mut Ctx, f: Fault) {
    (*ctx).stop = Some(Stop::Fault(f));
    (*ctx).status = STOPPED;
}

/// A read the inline TLB lookup missed, of 1, 2, 4, 8 or 16 bytes: made as the
/// interpreter makes it (which fills the TLB for the next one), into `Ctx::buf`. Returns
/// what the read's address needs added to be the buffer's, so the unit then loads from
/// there as it loads from a page on a hit: one path after the lookup, not two merged.
pub extern "C" fn read(ctx: *mut Ctx, addr: u64, size: u64) -> u64 {
    // SAFETY: the dispatcher made `ctx` for this call, its pointers live and unaliased
    // while translated code runs.
    unsafe {
        let mem = &mut *(*ctx).mem;
        unguard(ctx, mem);
        let r = match size {
            1 => mem.read_u8(addr).map(u128::from),
            2 => mem.read_u16(addr).map(u128::from),
            4 => mem.read_u32(addr).map(u128::from),
            8 => mem.read_u64(addr).map(u128::from),
            _ => mem.read_u128(addr),
        };
        sync_tlb(ctx, mem);
        match r {
            Ok(v) => {
                // little-endian hosts only (the tier's): the buffer's first bytes are the
                // value's low ones, as in guest memory
                (*ctx).buf = [v as u64, (v >> 64) as u64];
                (std::ptr::addr_of!((*ctx).buf) as u64).wrapping_sub(addr)
            }
            Err(f) => {
                fail(ctx, f);
                0
            }
        }
    }
}

/// A write the inline TLB lookup missed: 1, 2, 4, 8 or 16 bytes (`hi` the upper 8).
pub extern "C" fn write(ctx: *mut Ctx, addr: u64, size: u64, lo: u64, hi: u64) -> u64 {
    // SAFETY: as in `read`.
    unsafe {
        let mem = &mut *(*ctx).mem;
        unguard(ctx, mem);
        let r = match size {
            1 => mem.write_u8(addr, lo as u8),
            2 => mem.write_u16(addr, lo as u16),
            4 => mem.write_u32(addr, lo as u32),
            8 => mem.write_u64(addr, lo),
            _ => mem.write_u128(addr, lo as u128 | (hi as u128) << 64),
        };
        sync_tlb(ctx, mem);
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
        let (st, mem) = (&mut (*ctx).state, &mut *(*ctx).mem);
        let r = cpu::exec_fp_op(st, mem, &MicroOp::from_words(word, imm));
        sync_tlb(ctx, mem);
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

/// One instruction on the interpreter, from `st.pc` (the translated code has stored every
/// register it keeps, the flags, the PC and the count).
pub extern "C" fn interp_one(ctx: *mut Ctx) -> u64 {
    // SAFETY: as in `read`.
    unsafe {
        let (st, mem, code) = (&mut (*ctx).state, &mut *(*ctx).mem, &mut *(*ctx).code);
        let r = cpu::interpret(st, mem, code, 1);
        sync_tlb(ctx, mem);
        match r {
            Stop::Budget if mem.has_code_write() || code.epoch() != (*ctx).epoch => CODE_CHANGED,
            Stop::Budget => OK,
            stop => {
                (*ctx).stop = Some(stop);
                STOPPED
            }
        }
    }
}
