//! What quick blocks call out to: the context they run with, and the slow paths (an
//! access the inline TLB lookup missed, an op the block leaves to the interpreter).
//!
//! Every helper is `extern "sysv64"`, takes the context first, and says how it went in
//! `QCtx::status` ([`OK`], [`STOPPED`] with the stop in `QCtx::stop`, or [`CODE_CHANGED`]).
//! The block has stored the PC and count of the instruction before the call, so a stop is
//! reported exactly where the interpreter reports it.

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Fault};
use armada_core::state::{CpuState, Stop};
use armada_isa::MicroOp;
use std::mem::offset_of;

/// What a quick block runs with. Blocks keep the state's address in `rbx` and this
/// context's in `r12` (see `emit`).
#[repr(C)]
pub struct QCtx {
    pub st: *mut CpuState,
    /// The TLB's entries and index mask (`AddressSpace::tlb_table`), copied again by every
    /// helper (a miss's fill may make or grow the table).
    pub tlb_entries: *const u8,
    pub tlb_mask: u64,
    /// The count the run must not pass.
    pub limit: u64,
    /// The lane's direct-mapped table of blocks: `TABLE` entries of (PC, code address).
    pub table: *const (u64, usize),
    pub status: u64,
    /// The upper half of a 16-byte read's slow path.
    pub hi: u64,
    pub mem: *mut AddressSpace,
    pub code: *mut CodeCache,
    /// The code cache's epoch the blocks were made for.
    pub epoch: u64,
    pub stop: Option<Stop>,
    /// Under the translation tier, how a block whose count ran out (or that was sent to
    /// its unit) enters the unit at its PC itself ([`unit`]); null on the quick tier alone.
    pub units: *mut UnitLink,
    /// The guarded window the lane's blocks were made for (`AddressSpace::guarded_window`),
    /// which the enter stub puts in `rbp`; null where they look the TLB up.
    pub window: *const u8,
    /// The first guest address past the window (`memory::WINDOW_BYTES`): accesses from
    /// there on take their slow paths, as `window + address` would be other host memory.
    pub window_end: u64,
}

/// What a quick block needs to enter a unit without the dispatcher (see [`unit`]): the
/// lane's unit context, whose state is the blocks' state.
pub struct UnitLink {
    pub ctx: *mut crate::helpers::Ctx,
    /// Whether the lane's units use the guarded window, and whether the SIGSEGV handler
    /// has been checked to be ours this turn (`guard::keep_handler`).
    pub guarded: bool,
    pub handler_kept: bool,
    /// The epoch of the lane's units.
    pub epoch: u64,
    /// Instructions run in units entered from blocks, for the dispatcher's count.
    pub ran: u64,
    /// Units entered from blocks (added to `quick::UNIT_ENTRIES` when the tier returns).
    pub entries: u64,
    /// What the units blocks entered ran an entry, by the unit's PC (the lane's [`Judged`]).
    pub judged: *mut Judged,
    /// The PC whose unit [`unit`] judged not worth entering from blocks, with `exit::SMALL`.
    pub small: u64,
}

/// Entries of a lane's [`Judged`].
const JUDGED: usize = 4096;
/// Entries from a block after which its unit is judged ...
const JUDGE_AFTER: u32 = 256;
/// ... and kept only where an entry ran this many instructions on average. Entering a unit
/// from a block and coming back (`store::run`'s flags, TLB and guard, the trampoline) costs
/// about what 40-50 instructions of quick code take, which is about what a unit saves over
/// them in 50: CPython's tests made units of 8 instructions on average, entered 15 M times.
const SMALL: u64 = 48;

/// [`SMALL`], or `ARMADA_JIT_SMALL` (0: every unit is kept).
fn small_entry() -> u64 {
    static N: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("ARMADA_JIT_SMALL")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SMALL)
    })
}

/// How many times blocks entered the unit at each PC (a block sent to its unit, or a PC
/// without a block), and the instructions those entries ran (direct-mapped by the PC; kept
/// with the lane's units).
pub struct Judged(Box<[(u64, u32, u64)]>);

impl Default for Judged {
    fn default() -> Self {
        Judged(vec![(u64::MAX, 0, 0); JUDGED].into_boxed_slice())
    }
}

impl Judged {
    /// Counts an entry at `pc` that ran `n` instructions: whether the block there is now
    /// judged not worth its unit.
    fn small(&mut self, pc: u64, n: u64) -> bool {
        let e = &mut self.0[((pc >> 2) as usize) & (JUDGED - 1)];
        if e.0 != pc {
            *e = (pc, 0, 0);
        }
        e.1 += 1;
        e.2 += n;
        if e.1 < JUDGE_AFTER {
            return false;
        }
        let small = e.2 < JUDGE_AFTER as u64 * small_entry();
        *e = (pc, 0, 0);
        small
    }
}

/// What [`unit`] returns to go on in quick blocks at the state's PC.
pub const GO_ON: u64 = u64::MAX;

pub const Q_ST: i32 = offset_of!(QCtx, st) as i32;
pub const Q_TLB_ENTRIES: i32 = offset_of!(QCtx, tlb_entries) as i32;
pub const Q_TLB_MASK: i32 = offset_of!(QCtx, tlb_mask) as i32;
pub const Q_LIMIT: i32 = offset_of!(QCtx, limit) as i32;
pub const Q_TABLE: i32 = offset_of!(QCtx, table) as i32;
pub const Q_STATUS: i32 = offset_of!(QCtx, status) as i32;
pub const Q_HI: i32 = offset_of!(QCtx, hi) as i32;
pub const Q_WINDOW: i32 = offset_of!(QCtx, window) as i32;
pub const Q_WINDOW_END: i32 = offset_of!(QCtx, window_end) as i32;

// The helpers' statuses (OK, STOPPED with the stop in `QCtx::stop`, CODE_CHANGED: leave
// after the instruction) and the ways back to the dispatcher (the enter stub's return
// value: NEXT, STOP, SYSCALL, INTERP; `exits` is indexed by them) are the translation
// tier's, so both dispatchers read them alike.
pub use crate::helpers::{exit, CODE_CHANGED, OK, STOPPED};

/// # Safety
/// `ctx` is live and its pointers are the running lane's.
unsafe fn parts<'a>(ctx: *mut QCtx) -> (&'a mut QCtx, &'a mut AddressSpace) {
    let c = &mut *ctx;
    let mem = &mut *c.mem;
    (c, mem)
}

fn refresh(c: &mut QCtx, mem: &AddressSpace) {
    let (e, m) = mem.tlb_table();
    c.tlb_entries = e;
    c.tlb_mask = m;
}

fn fail(c: &mut QCtx, f: Fault) {
    c.stop = Some(Stop::Fault(f));
    c.status = STOPPED;
}

/// Reads `size` (1, 2, 4 or 8) bytes at `addr`, zero-extended.
pub unsafe extern "sysv64" fn read(ctx: *mut QCtx, addr: u64, size: u64) -> u64 {
    let (c, mem) = parts(ctx);
    let r = match size {
        1 => mem.read_u8(addr).map(u64::from),
        2 => mem.read_u16(addr).map(u64::from),
        4 => mem.read_u32(addr).map(u64::from),
        _ => mem.read_u64(addr),
    };
    refresh(c, mem);
    match r {
        Ok(v) => {
            c.status = OK;
            v
        }
        Err(f) => {
            fail(c, f);
            0
        }
    }
}

/// Reads 16 bytes at `addr` as one access: the low half returned, the high in `QCtx::hi`.
pub unsafe extern "sysv64" fn read16(ctx: *mut QCtx, addr: u64) -> u64 {
    let (c, mem) = parts(ctx);
    let r = mem.read_u128(addr);
    refresh(c, mem);
    match r {
        Ok(v) => {
            c.status = OK;
            c.hi = (v >> 64) as u64;
            v as u64
        }
        Err(f) => {
            fail(c, f);
            0
        }
    }
}

fn wrote(c: &mut QCtx, mem: &AddressSpace, r: Result<(), Fault>) {
    refresh(c, mem);
    match r {
        Ok(()) => {
            c.status = if mem.has_code_write() {
                CODE_CHANGED
            } else {
                OK
            }
        }
        Err(f) => fail(c, f),
    }
}

/// Writes the low `size` (1, 2, 4 or 8) bytes of `val` at `addr`.
pub unsafe extern "sysv64" fn write(ctx: *mut QCtx, addr: u64, val: u64, size: u64) {
    let (c, mem) = parts(ctx);
    let r = match size {
        1 => mem.write_u8(addr, val as u8),
        2 => mem.write_u16(addr, val as u16),
        4 => mem.write_u32(addr, val as u32),
        _ => mem.write_u64(addr, val),
    };
    wrote(c, mem, r);
}

/// Writes 16 bytes (`lo`, then `hi` above it) at `addr` as one access.
pub unsafe extern "sysv64" fn write16(ctx: *mut QCtx, addr: u64, lo: u64, hi: u64) {
    let (c, mem) = parts(ctx);
    let r = mem.write_u128(addr, lo as u128 | (hi as u128) << 64);
    wrote(c, mem, r);
}

/// Runs the FP or AdvSIMD micro-op of `word` and `imm` (`MicroOp::fields_word`) on the
/// interpreter's FP code, as the interpreter would at this point (a structure load or store
/// has had its PC and count stored by the block).
pub unsafe extern "sysv64" fn fp(ctx: *mut QCtx, word: u64, imm: u64) {
    let (c, mem) = parts(ctx);
    let r = cpu::exec_fp_op(&mut *c.st, mem, &MicroOp::from_words(word, imm));
    wrote(c, mem, r);
}

/// A block's run count ran out, or the block was sent to its unit (or, with `probe`, the
/// blocks have none at the PC): enters the unit at `st.pc` (stored with the count by the
/// block) as the dispatcher would, and where it
/// leaves to a PC to go on at, returns [`GO_ON`] (the stub then looks for that PC's block).
/// Where the dispatcher has to act first, returns the way back to it: `exit::HOT` where
/// there is no unit yet (it asks for one; `exit::NEXT` for a probe), `exit::NEXT` where the window, the guarding or
/// the epoch changed under the blocks, and the unit's own exit where it stopped, made a
/// system call or left ops to the interpreter.
pub unsafe extern "sysv64" fn unit(ctx: *mut QCtx, probe: u64) -> u64 {
    let c = &mut *ctx;
    // (asked for by a block, a missing unit is made; probed for, the dispatcher goes on)
    let none = if probe != 0 { exit::NEXT } else { exit::HOT };
    let Some(link) = c.units.as_mut() else {
        return none;
    };
    let (mem, code) = (&mut *c.mem, &mut *c.code);
    let jc = &mut *link.ctx;
    let pc = jc.state.pc;
    let Some(f) = crate::unit_in(jc.lookup, pc) else {
        return none;
    };
    if code.epoch() != link.epoch || mem.window_retired() || mem.guarded() != link.guarded {
        return exit::NEXT;
    }
    if link.guarded && !link.handler_kept {
        crate::guard::keep_handler();
        link.handler_kept = true;
    }
    link.entries += 1;
    let start = jc.state.retired;
    let rc = crate::store::run(link.ctx, mem, code, f, link.guarded, link.epoch);
    let n = jc.state.retired - start;
    link.ran += n;
    refresh(c, mem);
    if jc.limit != c.limit {
        // told to leave (see `helpers::sync_tlb`): the dispatcher drops the window
        jc.limit = c.limit;
        if matches!(rc, exit::NEXT | exit::INTERP) {
            return exit::NEXT;
        }
    }
    match rc {
        // (judged by what the entries at the PC run; see `SMALL`)
        exit::NEXT if !link.judged.is_null() && (*link.judged).small(pc, n) => {
            link.small = pc;
            exit::SMALL
        }
        exit::NEXT => GO_ON,
        exit::STOP => {
            c.stop = jc.stop.take();
            exit::STOP
        }
        rc => rc,
    }
}

/// Runs the one instruction at `st.pc` on the interpreter (an op the block does not make
/// inline). The block stored the PC and count first.
pub unsafe extern "sysv64" fn one(ctx: *mut QCtx) {
    let c = &mut *ctx;
    let (st, mem, code) = (&mut *c.st, &mut *c.mem, &mut *c.code);
    let stop = cpu::interpret(st, mem, code, 1);
    refresh(c, mem);
    c.status = match stop {
        Stop::Budget if code.epoch() != c.epoch || mem.has_code_write() => CODE_CHANGED,
        Stop::Budget => OK,
        s => {
            c.stop = Some(s);
            STOPPED
        }
    };
}
