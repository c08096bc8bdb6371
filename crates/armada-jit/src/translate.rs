//! Translation of one unit (see `unit`) into a Cranelift function of the `tail` convention,
//! `(ctx) -> exit code` (see `helpers::exit`).
//!
//! Between blocks the guest registers are in the state and the flags in the context: a
//! block loads a register at its first use and keeps it as an SSA value, stores the ones it
//! wrote when it ends (and before each load or store), and a way out in its middle stores
//! what the block wrote so far (so the state always holds the rest). Each block first
//! checks that it can run whole within the instruction budget (else the unit leaves for the
//! interpreter, which stops at the exact instruction), then counts its instructions once.
//! A way out in the middle of a block (a fault, a write to code) leaves the registers, PC
//! and count as they were before the instruction, as the interpreter does.

use crate::adapters::{Adapter, Adapters};
use crate::flags::Known;
use crate::helpers::{exit, CTX_BLK_RET, CTX_ENTRY, CTX_LIMIT, CTX_LOOKUP, CTX_RET, CTX_SITES};
use crate::unit::{BlockSpan, Term, Unit};
use armada_core::state::CpuState;
use armada_isa::{ops, MicroOp};
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{I32, I64},
    AbiParam, Block, InstBuilder, JumpTableData, MemFlagsData, SigRef, Signature, SourceLoc, Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::HashMap;
use std::mem::offset_of;

mod loops;

/// A block of more micro-ops than this forgets its registers' values at each access and
/// loads them from the state again (they are stored there before every access): kept
/// through a long block, more of them were live than the host has registers, and the
/// register allocator spilled them to the stack and loaded them from there.
const LONG_BLOCK: usize = 48;

pub const X_OFF: i32 = offset_of!(CpuState, x) as i32;
pub const V_OFF: i32 = offset_of!(CpuState, v) as i32;
pub const PC_OFF: i32 = offset_of!(CpuState, pc) as i32;
pub const NZCV_OFF: i32 = offset_of!(CpuState, nzcv) as i32;
pub const RETIRED_OFF: i32 = offset_of!(CpuState, retired) as i32;
pub const TPIDR_OFF: i32 = offset_of!(CpuState, tpidr) as i32;
pub const EXCL_OFF: i32 = offset_of!(CpuState, excl_addr) as i32;
pub const FPCR_OFF: i32 = offset_of!(CpuState, fpcr) as i32;
pub const FPSR_OFF: i32 = offset_of!(CpuState, fpsr) as i32;

/// A helper: its adapter's signature in this function, its address, and whether it
/// returns a value (see `adapters`).
#[derive(Clone, Copy)]
pub struct Helper {
    pub sig: SigRef,
    pub addr: i64,
    pub returns: bool,
    /// Called in the C convention (its value returned), not through an adapter.
    pub direct: bool,
}

pub struct Helpers {
    /// A unit's own signature, to jump to the next unit with.
    pub unit: SigRef,
    pub read: Helper,
    pub write: Helper,
    pub fp: Helper,
    pub interp: Helper,
}

pub struct Tx<'a> {
    pub b: FunctionBuilder<'a>,
    pub unit: &'a Unit,
    pub page: &'a [MicroOp],
    pub h: Helpers,
    /// The context in the current block (see [`Self::ctx`]).
    ctx: Value,
    /// The value of each of x0..x30 and SP this block has read or written so far. A block
    /// starts with none: the state holds every register between blocks (see `block`).
    regs: [Option<Value>; 32],
    /// The instruction count at the start of the current block.
    ret: Variable,
    pub flags: Known,
    /// Whether this block set flags it has not stored to the context yet.
    pub flags_dirty: bool,
    /// The registers written since the current block began (or since they were last
    /// stored): the state holds every other register's value. Blocks store these at their
    /// end, so a way out in the middle of a block stores only what this block wrote.
    dirty: [bool; 32],
    blocks: HashMap<usize, Block>,
    /// The unit's one way back to the dispatcher (see [`Self::leave`]).
    exit: Block,
    /// The current block's first slot and count on entry, for ways out in its middle.
    blk_start: usize,
    blk_ret: Value,
    /// How many edges of the unit lead to each block (the entry's counts one more).
    preds: HashMap<usize, u32>,
    /// The blocks that check the budget, and for how many instructions (see
    /// `Unit::budget_checks`).
    checks: HashMap<usize, u64>,
    /// What a block whose only predecessor has been translated starts knowing: that
    /// block's context value and flags at its edge (see [`Self::hand_on`]).
    inherit: HashMap<usize, Inherited>,
    /// The TLB's entries pointer and the complement of its index bits as this block last
    /// loaded them from the context, while no helper since can have changed them (see
    /// `access::tlb_view`).
    pub tlb: Option<(Value, Value)>,
    /// Whether the current block is long enough that its accesses forget the registers'
    /// values (see `access`).
    pub long: bool,
    /// The loops translated as host loops: first block's slot -> last's (see `loops`).
    loops: HashMap<usize, usize>,
    /// The loop the current block is in.
    looping: Option<loops::Looping>,
    /// Accesses go to the window unchecked (see `guard`): the unit is for address spaces
    /// with guarded windows.
    pub guarded: bool,
    /// Where guarded: the window's base (see `Tx::window`), and whether this block has
    /// loaded it yet.
    pub(crate) win: Option<Variable>,
    pub(crate) win_here: bool,
    /// Whether accesses may be exact sites (see `guard`), and whether this block has
    /// stored its count at the start (`Ctx::blk_ret`) for them yet.
    sites: bool,
    blk_ret_stored: bool,
}

/// What a block knows at its end of the flags (stored by then), which its successor can go
/// on from when that block is its only way in. (Its registers' values too made register
/// pressure worse across blocks: xz ran 20% slower; they are loaded again.)
#[derive(Clone, Copy)]
struct Inherited {
    ctx: Value,
    flags: Known,
}

/// Memory flags for guest memory: never trapping (the TLB said the page is there), maybe
/// unaligned.
pub fn guest_mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

pub fn host_mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// How a unit's accesses are made (see `guard`).
pub struct Guarding<'a> {
    /// At `window + address`, unchecked, the host's MMU the check: the unit is for address
    /// spaces with guarded windows.
    pub guarded: bool,
    /// The unit's site table, where its accesses may be exact sites.
    pub sites: Option<&'a crate::guard::SiteTable>,
}

/// Builds the unit's function into `b`'s function, whose signature is `() -> i64`.
pub fn translate(
    mut b: FunctionBuilder<'_>,
    unit: &Unit,
    page: &[MicroOp],
    adapters: &Adapters,
    cc: CallConv,
    frontend: TargetFrontendConfig,
    guarding: Guarding,
) {
    let Guarding { guarded, sites } = guarding;
    let unit_sig = b.import_signature(crate::store::unit_signature());
    // The FP helper and the interpreter's one instruction run on hot paths (FP ops not
    // translated inline, in loops): an adapter's saving of every vector register cost
    // more there than the clobbers of a plain call.
    let mut direct = |params: usize, f: *const ()| {
        let mut s = Signature::new(cc);
        s.params.extend((0..params).map(|_| AbiParam::new(I64)));
        s.returns.push(AbiParam::new(I64));
        Helper {
            sig: b.import_signature(s),
            addr: f as i64,
            returns: true,
            direct: true,
        }
    };
    let fp = direct(3, crate::helpers::fp as *const ());
    let interp = direct(1, crate::helpers::interp_one as *const ());
    let mut helper = |a: Adapter| Helper {
        sig: b.import_signature(crate::adapters::signature(a.params)),
        addr: a.addr,
        returns: a.returns,
        direct: false,
    };

    let h = Helpers {
        unit: unit_sig,
        read: helper(adapters.read),
        write: helper(adapters.write),
        fp,
        interp,
    };
    let entry = b.create_block();
    b.switch_to_block(entry);
    let ctx = b.ins().get_pinned_reg(I64);
    let var = |b: &mut FunctionBuilder, init: Value| {
        let v = b.declare_var(I64);
        b.def_var(v, init);
        v
    };
    let r0 = b.ins().load(I64, host_mem(), ctx, RETIRED_OFF);
    let ret = var(&mut b, r0);
    // (a definition every use is dominated by: see `Tx::window`)
    let win = guarded.then(|| {
        let w = crate::access::load_window(&mut b, ctx);
        var(&mut b, w)
    });
    // (for the handler: see `guard`)
    if let Some(t) = sites {
        let p = b.ins().iconst(I64, t as *const _ as i64);
        b.ins().store(host_mem(), p, ctx, CTX_SITES);
    }
    let blocks: HashMap<usize, Block> = unit
        .blocks
        .iter()
        .map(|s| (s.start, b.create_block()))
        .collect();
    enter(&mut b, ctx, &blocks, unit);
    let exit = b.create_block();
    for _ in 0..3 {
        b.append_block_param(exit, I64);
    }
    b.set_cold_block(exit);
    let mut tx = Tx {
        b,
        unit,
        page,
        h,
        ctx,
        regs: [None; 32],
        ret,
        flags: Known::Unknown,
        flags_dirty: false,
        dirty: [false; 32],
        blocks,
        exit,
        blk_start: 0,
        blk_ret: r0,
        preds: predecessors(unit),
        checks: unit.budget_checks(),
        inherit: HashMap::new(),
        tlb: None,
        long: false,
        loops: loops::loops(unit, page),
        looping: None,
        guarded,
        win,
        win_here: false,
        sites: sites.is_some(),
        blk_ret_stored: false,
    };
    for span in &unit.blocks {
        tx.block(span);
    }
    tx.exit_block();
    tx.b.seal_all_blocks();
    tx.b.finalize(frontend);
}

/// Goes from the function's first block to the block of the entry the unit is entered
/// at: its own, unless a trampoline set the context's entry to `k`, the unit's `k`th other
/// entry (see `Unit::entries`; each checks the budget itself). The entry is put back to
/// 0, so the test costs the unit's own entry a load and a branch.
fn enter(b: &mut FunctionBuilder, ctx: Value, blocks: &HashMap<usize, Block>, unit: &Unit) {
    let own = blocks[&unit.entry];
    let others = unit.entries();
    if others.is_empty() {
        b.ins().jump(own, &[]);
        return;
    }
    let k = b.ins().load(I64, host_mem(), ctx, CTX_ENTRY);
    let other = b.create_block();
    b.ins().brif(k, other, &[], own, &[]);
    b.switch_to_block(other);
    let zero = b.ins().iconst(I64, 0);
    b.ins().store(host_mem(), zero, ctx, CTX_ENTRY);
    let k = b.ins().ireduce(I32, k);
    // (a call of a block each: the SSA builder appends the count's value to each)
    let table: Vec<_> = std::iter::once(own)
        .chain(others.iter().map(|s| blocks[s]))
        .map(|blk| b.func.dfg.block_call(blk, &[]))
        .collect();
    let default = b.func.dfg.block_call(own, &[]);
    let jt = b.create_jump_table(JumpTableData::new(default, &table));
    b.ins().br_table(k, jt);
}

/// How many edges of `unit` lead to each of its blocks, the entries counting one more.
fn predecessors(unit: &Unit) -> HashMap<usize, u32> {
    let mut preds = HashMap::new();
    for e in unit.entries().into_iter().chain([unit.entry]) {
        *preds.entry(e).or_insert(0) += 1;
    }
    for span in &unit.blocks {
        for slot in unit.successors(span) {
            *preds.entry(slot).or_insert(0) += 1;
        }
    }
    preds
}

impl<'a> Tx<'a> {
    /// The context (`helpers::Ctx`, whose first field is the state), which translated code
    /// keeps in the pinned register. Read once at the start of each block: one value for
    /// the block lets Cranelift see that two accesses are to the same field (a load after
    /// a store of it is then the stored value), and it never lives across blocks, where
    /// the register allocator would spill it.
    pub fn ctx(&mut self) -> Value {
        self.ctx
    }

    // ----- registers -------------------------------------------------------------------

    /// General register `r` (the zero register reads 0): loaded from the state at the
    /// block's first use.
    pub fn rd(&mut self, r: u8) -> Value {
        let Some(slot) = self.regs.get(r as usize).copied() else {
            return self.b.ins().iconst(I64, 0);
        };
        if let Some(v) = slot {
            return v;
        }
        if let Some(v) = self.loop_read(r as usize) {
            self.regs[r as usize] = Some(v);
            return v;
        }
        let c = self.ctx();
        let v = self.b.ins().load(I64, host_mem(), c, X_OFF + 8 * r as i32);
        self.regs[r as usize] = Some(v);
        v
    }

    pub fn rd32(&mut self, r: u8) -> Value {
        let v = self.rd(r);
        self.b.ins().ireduce(I32, v)
    }

    /// Writes general register `r` (the sink and the zero register drop it).
    pub fn wr(&mut self, r: u8, v: Value) {
        if (r as usize) < self.regs.len() {
            self.regs[r as usize] = Some(v);
            self.dirty[r as usize] = true;
            self.loop_touch(r as usize);
        }
    }

    /// Stores general register `r` if it was written since it was last stored (for a
    /// helper that reads it from the state).
    pub fn flush_reg(&mut self, r: u8) {
        if let (Some(true), Some(Some(v))) = (
            self.dirty.get(r as usize).copied(),
            self.regs.get(r as usize).copied(),
        ) {
            self.store_state(v, X_OFF + 8 * r as i32);
            self.dirty[r as usize] = false;
        }
    }

    /// Stores the registers written since they were last stored.
    pub fn flush_dirty(&mut self) {
        for r in 0..32u8 {
            if std::mem::take(&mut self.dirty[r as usize]) {
                let v = self.regs[r as usize].expect("a dirty register has a value");
                let c = self.ctx();
                self.b.ins().store(host_mem(), v, c, X_OFF + 8 * r as i32);
            }
        }
    }

    /// Before a load or store: stores the registers written so far, except in a host loop
    /// (`loops`). A loop's registers are carried round it in host registers, and storing
    /// them at each access stored them at every turn (textscan's character loop: nine
    /// stores a turn before its table lookup); there the access's ways out store them, as
    /// any way out stores what is written. A loop is at most `loops::MAX_SLOTS` slots, so
    /// the stores its ways out repeat are few.
    pub fn flush_at_access(&mut self) {
        if self.looping.is_none() {
            self.flush_dirty();
        }
    }

    /// Whether the guarded access of the op at `slot`, about to be made, is an exact site
    /// (see `guard`): outside host loops, with every register and the flags stored. If so,
    /// the block's count at its start is stored for the handler (once a block). In a unit
    /// with a site table the instructions made until [`Self::site_end`] carry the site's
    /// source location, which the handler finds the site by (an access that is not exact
    /// too, so that the handler knows every guarded access).
    pub(crate) fn site_start(&mut self, slot: usize) -> bool {
        if !self.sites {
            return false;
        }
        let exact = self.looping.is_none() && !self.flags_dirty && !self.dirty.contains(&true);
        if exact && !self.blk_ret_stored {
            let c = self.ctx();
            self.b.ins().store(host_mem(), self.blk_ret, c, CTX_BLK_RET);
            self.blk_ret_stored = true;
        }
        let loc = crate::guard::site_loc(slot, slot - self.blk_start, exact);
        self.b.set_srcloc(SourceLoc::new(loc));
        exact
    }

    /// The end of a guarded access's host accesses (see [`Self::site_start`]).
    pub(crate) fn site_end(&mut self) {
        self.b.set_srcloc(SourceLoc::default());
    }

    /// Writes the 32-bit `v`, zero-extended.
    pub fn wr32(&mut self, r: u8, v: Value) {
        let x = self.b.ins().uextend(I64, v);
        self.wr(r, x);
    }

    /// `v` (i32) zero-extended.
    pub fn zext(&mut self, v: Value) -> Value {
        self.b.ins().uextend(I64, v)
    }

    /// `v` as i64 whatever its width.
    pub fn zext_any(&mut self, v: Value) -> Value {
        if self.b.func.dfg.value_type(v) == I64 {
            v
        } else {
            self.b.ins().uextend(I64, v)
        }
    }

    /// Forgets the registers in `which` (all when None), which a helper may have changed
    /// in the state (after `flush_dirty`): they are loaded again at their next use.
    pub fn load_regs(&mut self, which: Option<&[u8]>) {
        for r in 0..32u8 {
            if which.is_some_and(|w| !w.contains(&r)) {
                continue;
            }
            debug_assert!(!self.dirty[r as usize]);
            self.regs[r as usize] = None;
            self.loop_touch(r as usize);
        }
    }

    pub fn load_state(&mut self, off: i32) -> Value {
        let c = self.ctx();
        self.b.ins().load(I64, host_mem(), c, off)
    }

    pub fn store_state(&mut self, v: Value, off: i32) {
        let c = self.ctx();
        self.b.ins().store(host_mem(), v, c, off);
    }

    /// Calls helper `h` (the context first in `args`); its value, if it returns one.
    pub fn call(&mut self, h: Helper, args: &[Value]) -> Vec<Value> {
        // a helper may fill the TLB, which may grow it
        self.tlb = None;
        self.loop_forget_tlb();
        let f = self.b.ins().iconst(I64, h.addr);
        let call = self.b.ins().call_indirect(h.sig, f, args);
        if h.direct {
            self.b.inst_results(call).to_vec()
        } else if h.returns {
            let c = self.ctx();
            vec![self.b.ins().load(I64, host_mem(), c, CTX_RET)]
        } else {
            Vec::new()
        }
    }

    // ----- positions and ways out ------------------------------------------------------

    pub fn pc(&self, slot: usize) -> u64 {
        self.unit.pc(slot)
    }

    /// The instruction count before slot `slot` of the current block.
    pub fn retired_at(&mut self, slot: usize) -> Value {
        let n = (slot - self.blk_start) as i64;
        if n == 0 {
            self.blk_ret
        } else {
            self.b.ins().iadd_imm_s(self.blk_ret, n)
        }
    }

    /// Leaves the unit from the current point (which then ends: switch to another block):
    /// stores the registers the block has written, the flags, the PC and the count, and
    /// returns `code`.
    ///
    /// Every such way out jumps to the unit's one exit block, which stores the rest: each
    /// way out storing it all made most of a unit's IR (a load or store has two ways out,
    /// a block one), and so most of Cranelift's time.
    pub fn leave(&mut self, pc: Value, retired: Value, code: u64) {
        let dirty = (self.dirty, self.flags_dirty);
        self.flush_dirty();
        self.flush_flags();
        (self.dirty, self.flags_dirty) = dirty;
        let code = self.b.ins().iconst(I64, code as i64);
        self.b
            .ins()
            .jump(self.exit, &[pc.into(), retired.into(), code.into()]);
    }

    /// [`Self::leave`] with register `r` written `v` first (`wb`: a store's base register
    /// written back, on its way out after writing into code). In a host loop the register
    /// may be written and not stored yet, and its old value must not go out after the new.
    pub fn leave_with(&mut self, wb: Option<(u8, Value)>, pc: Value, retired: Value, code: u64) {
        let kept = wb.map(|(r, _)| (r, self.regs[r as usize], self.dirty[r as usize]));
        if let Some((r, v)) = wb {
            (self.regs[r as usize], self.dirty[r as usize]) = (Some(v), true);
        }
        self.leave(pc, retired, code);
        if let Some((r, v, d)) = kept {
            (self.regs[r as usize], self.dirty[r as usize]) = (v, d);
        }
    }

    /// The exit block: the flags, PC and count to the context and state, and the exit code
    /// back to the dispatcher.
    fn exit_block(&mut self) {
        self.b.switch_to_block(self.exit);
        self.ctx = self.b.ins().get_pinned_reg(I64);
        let [pc, retired, code] = *self.b.block_params(self.exit) else {
            unreachable!("the exit block has three parameters")
        };
        self.store_state(pc, PC_OFF);
        self.store_state(retired, RETIRED_OFF);
        self.b.ins().return_(&[code]);
    }

    /// Leaves the unit for `pc` (the count then `retired`) at the end of a block: straight
    /// into the unit the lane's table has for `pc` (a tail call: its checks of the budget
    /// are the same), else back to the dispatcher. Every way out that can follow a change
    /// of code or of the epoch (a store into code, a helper, a syscall) goes through
    /// [`Self::leave`] instead, so the table is never stale here.
    pub fn leave_to(&mut self, pc: Value, retired: Value) {
        let dirty = (self.dirty, self.flags_dirty);
        self.flush_dirty();
        // the next unit takes the flags from the context, as they are kept
        self.flush_flags();
        let c = self.ctx();
        let table = self.b.ins().load(I64, host_mem(), c, CTX_LOOKUP);
        let idx = self.b.ins().ushr_imm_s(pc, 2);
        let idx = self.b.ins().band_imm_s(idx, crate::LOOKUP as i64 - 1);
        let off = self.b.ins().ishl_imm_s(idx, 4);
        let e = self.b.ins().iadd(table, off);
        let epc = self.b.ins().load(I64, host_mem(), e, 0);
        let f = self.b.ins().load(I64, host_mem(), e, 8);
        let same = self.b.ins().icmp(IntCC::Equal, epc, pc);
        let some = self.b.ins().icmp_imm_u(IntCC::NotEqual, f, 0);
        let go = self.b.ins().band(same, some);
        let chain = self.b.create_block();
        let back = self.b.create_block();
        self.b.ins().brif(go, chain, &[], back, &[]);
        self.b.switch_to_block(chain);
        self.store_state(pc, PC_OFF);
        self.store_state(retired, RETIRED_OFF);
        self.b.ins().return_call_indirect(self.h.unit, f, &[]);
        // a miss: the dispatcher's way out (nothing is dirty)
        self.b.switch_to_block(back);
        self.leave(pc, retired, exit::NEXT);
        (self.dirty, self.flags_dirty) = dirty;
    }

    /// Leaves the unit at slot `slot` of the current block, before it, if `failed` (i8 or
    /// i64) is set: a helper stopped the lane. Returns with the builder after the test, in
    /// a block that is cold if the current one is (a slow path's rest stays out of the
    /// hot code's way).
    pub fn leave_if(&mut self, failed: Value, slot: usize, code: u64, after: bool) {
        let on = self.b.create_block();
        let here = self.b.current_block().expect("a block is being built");
        if self.b.func.layout.is_cold(here) {
            self.b.set_cold_block(on);
        }
        let out = self.b.create_block();
        self.b.set_cold_block(out);
        self.b.ins().brif(failed, out, &[], on, &[]);
        self.b.switch_to_block(out);
        let saved = (self.flags, self.dirty, self.flags_dirty);
        let at = slot + after as usize;
        let pc = self.pc(at) as i64;
        let pcv = self.b.ins().iconst(I64, pc);
        let r = self.retired_at(at);
        self.leave(pcv, r, code);
        (self.flags, self.dirty, self.flags_dirty) = saved;
        self.b.switch_to_block(on);
    }

    /// Goes to `target` at the end of the current block, whose count is `retired` then:
    /// into the unit's block there, or out of the unit.
    fn goto(&mut self, target: u64, retired: Value) {
        self.flush_dirty();
        self.flush_flags();
        if let Some(&blk) = self.unit.block_at(target).and_then(|s| self.blocks.get(&s)) {
            self.hand_on(target);
            self.b.ins().jump(blk, &[]);
        } else {
            let pc = self.b.ins().iconst(I64, target as i64);
            self.leave_to(pc, retired);
        }
    }

    // ----- blocks ----------------------------------------------------------------------

    fn block(&mut self, span: &BlockSpan) {
        let blk = self.blocks[&span.start];
        let inherited = self.inherit.remove(&span.start);
        self.tlb = None;
        self.long = span.end - span.start > LONG_BLOCK;
        let body_end = match span.term {
            Term::None | Term::Stop => span.end,
            _ => span.end - 1,
        };
        if let Some(&last) = self.loops.get(&span.start) {
            self.loop_start(span.start, last, blk);
        } else if self.looping.is_some() {
            self.loop_block(blk, span.start);
        } else {
            self.b.switch_to_block(blk);
            match inherited {
                Some(known) => {
                    self.ctx = known.ctx;
                    self.flags = known.flags;
                }
                None => {
                    self.ctx = self.b.ins().get_pinned_reg(I64);
                    self.flags = Known::Unknown;
                }
            }
            self.regs = [None; 32];
            self.flags_dirty = false;
            self.dirty = [false; 32];
        }
        self.win_here = false;
        self.blk_ret_stored = false;
        let r0 = self.b.use_var(self.ret);
        self.blk_start = span.start;
        self.blk_ret = r0;
        let n = span.retires() as i64;
        // (a loop checks before its head: in its preheader and at its back edges)
        if !self.at_loop_head(span.start) {
            self.budget_check(span.start, r0);
        }

        for slot in span.start..body_end {
            let u = self.page[slot];
            self.op(slot, &u);
        }
        let done = self.b.ins().iadd_imm_s(r0, n);
        self.b.def_var(self.ret, done);
        let next = self.pc(span.end);
        let last = span.end.saturating_sub(1);
        let u = self.page[last];
        let ended = self.looping.is_some() && self.loop_term(span.term, &u, next, done);
        if !ended {
            self.term(span.term, &u, next, done);
        }
        if self.looping.as_ref().is_some_and(|l| l.last == span.start) {
            self.loop_finish();
        }
    }

    /// The end of the current block (its count then `done`; `next` the PC after it): the
    /// branch `u` of kind `term`, or the way on to `next`.
    fn term(&mut self, term: Term, u: &MicroOp, next: u64, done: Value) {
        match term {
            Term::None | Term::Stop => self.goto(next, done),
            Term::Jump(t) => self.goto(t, done),
            Term::Cond(t) => {
                let c = self.branch_cond(u);
                self.flush_dirty();
                self.flush_flags();
                let (taken, t_out) = self.edge(t);
                let (fall, f_out) = self.edge(next);
                for target in [t, next] {
                    self.hand_on(target);
                }
                self.b.ins().brif(c, taken, &[], fall, &[]);
                for (blk, target) in [(taken, t_out), (fall, f_out)] {
                    if let Some(target) = target {
                        self.b.switch_to_block(blk);
                        let pc = self.b.ins().iconst(I64, target as i64);
                        self.leave_to(pc, done);
                    }
                }
            }
            Term::Call(t) => {
                let link = self.b.ins().iconst(I64, next as i64);
                self.wr(30, link);
                let pc = self.b.ins().iconst(I64, t as i64);
                self.leave_to(pc, done);
            }
            Term::Indirect => {
                let t = self.rd(u.b);
                if u.op == ops::BLR {
                    let link = self.b.ins().iconst(I64, next as i64);
                    self.wr(30, link);
                }
                self.leave_to(t, done);
            }
            Term::Syscall => {
                let pc = self.b.ins().iconst(I64, next as i64);
                self.leave(pc, done, exit::SYSCALL);
            }
        }
    }

    /// Checks that all that can run from the start of the block at `slot` (whose count on
    /// entry is `r0`) before the next check fits in the budget, if that block checks: else
    /// the unit leaves for the interpreter, which runs from there to the budget's end.
    fn budget_check(&mut self, slot: usize, r0: Value) {
        let Some(&most) = self.checks.get(&slot) else {
            return;
        };
        let end = self.b.ins().iadd_imm_s(r0, most as i64);
        let c = self.ctx();
        let limit = self.b.ins().load(I64, host_mem(), c, CTX_LIMIT);
        let over = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, limit);
        let out = self.b.create_block();
        let body = self.b.create_block();
        self.b.set_cold_block(out);
        self.b.ins().brif(over, out, &[], body, &[]);
        self.b.switch_to_block(out);
        let at = self.pc(slot) as i64;
        let pc = self.b.ins().iconst(I64, at);
        self.leave(pc, r0, exit::INTERP);
        self.b.switch_to_block(body);
    }

    /// At an edge to `target` (the registers and flags stored): if the unit's block there
    /// has no other way in, it goes on from this block's flags. It is then dominated by
    /// this block, so this block's values are there, and a condition on the flags of a
    /// compare stays one host compare (a switch's `cmp; b.eq; b.hi` packed NZCV from the
    /// context in its second block).
    fn hand_on(&mut self, target: u64) {
        let Some(slot) = self.unit.block_at(target) else {
            return;
        };
        if self.preds.get(&slot) == Some(&1) {
            debug_assert!(!self.dirty.contains(&true) && !self.flags_dirty);
            self.inherit.insert(
                slot,
                Inherited {
                    ctx: self.ctx,
                    flags: self.flags,
                },
            );
        }
    }

    /// A block to branch to for `target`: the unit's block there, or a new block that is
    /// to leave the unit for `target` (returned too, to be filled after the branch).
    fn edge(&mut self, target: u64) -> (Block, Option<u64>) {
        match self.unit.block_at(target).and_then(|s| self.blocks.get(&s)) {
            Some(&blk) => (blk, None),
            None => (self.b.create_block(), Some(target)),
        }
    }

    /// Whether the conditional branch `u` is taken.
    fn branch_cond(&mut self, u: &MicroOp) -> Value {
        match u.op {
            ops::B_COND => self.cond(u.e),
            ops::CBZ_W | ops::CBNZ_W => {
                let v = self.rd32(u.b);
                let cc = if u.op == ops::CBZ_W {
                    IntCC::Equal
                } else {
                    IntCC::NotEqual
                };
                self.b.ins().icmp_imm_u(cc, v, 0)
            }
            ops::CBZ_X | ops::CBNZ_X => {
                let v = self.rd(u.b);
                let cc = if u.op == ops::CBZ_X {
                    IntCC::Equal
                } else {
                    IntCC::NotEqual
                };
                self.b.ins().icmp_imm_u(cc, v, 0)
            }
            _ => {
                // TBZ / TBNZ
                let v = self.rd(u.b);
                let bit = self.b.ins().ushr_imm_s(v, (u.e & 63) as i64);
                let bit = self.b.ins().band_imm_s(bit, 1);
                let cc = if u.op == ops::TBZ {
                    IntCC::Equal
                } else {
                    IntCC::NotEqual
                };
                self.b.ins().icmp_imm_u(cc, bit, 0)
            }
        }
    }
}
