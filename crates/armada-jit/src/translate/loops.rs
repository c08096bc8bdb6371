//! Small loops translated as host loops: a block that branches back to its own start (a
//! CRC's bit loop, a string scan), or a few blocks in a row that only the first is entered
//! at and that branch back to it (a search loop with an early exit).
//!
//! Elsewhere a block loads each register it reads from the state and stores what it wrote
//! before it ends, and stores the flags it set; a five-instruction loop paid three loads,
//! three stores and four flag words at every turn, more than its own work (crc32's
//! `crc_bitwise`: 25 host instructions a turn). Inside a loop the registers, the flags' four
//! words and the TLB view go from block to block and round the loop in Cranelift variables
//! instead:
//!
//! - The first block's Cranelift block becomes the loop's preheader, which everything that
//!   entered it still jumps to. It loads what the loop carries from the state (it is
//!   filled after the loop, once that is known) and jumps to the loop's head, where every
//!   turn starts.
//! - The budget is checked before the head rather than at it: in the preheader, and at
//!   each back edge, where the flags the loop set are known values to store on the way
//!   out. A check at the head stored the flags that came round, so they came round as
//!   four block parameters, and their moves cost more than the stores they saved.
//! - The registers the loop's ops name (`named`) are carried. What a block wrote is passed
//!   on unstored, and the block it goes to counts it as written, so every way out stores
//!   it as it stores what a block wrote. Edges inside the loop go forward, so a later
//!   block knows what all its edges pass; the head cannot, and counts as written what the
//!   loop may write (`written`). Anything else still written at a back edge is stored
//!   there, so `written` need not be exact for the state to be right: too many makes
//!   stores on ways out, too few at back edges. A register no op names (a helper may still
//!   change it in the state) is loaded as in any block.
//! - Loads and stores do not store what is written before them, as they do elsewhere
//!   (`Tx::flush_at_access`): their ways out store it.
//! - The flags are carried as the context's four words (`Known::Carried`): each block
//!   counts them as set, so ways out store them; the loop's exits store them once. Their
//!   values are taken from the variables only where they are stored or read, so a loop
//!   that sets the flags before any way out or read carries none of them round.
//!
//! Carrying registers across all the blocks of a unit made xz 20% slower (more values live
//! than host registers); a loop here is at most [`MAX_SLOTS`] slots naming at most
//! [`MAX_CARRIED`] registers.

use super::{Known, Tx, X_OFF};
use crate::helpers::{CTX_FK, CTX_TLB_ENTRIES, CTX_TLB_UNINDEXED};
use crate::unit::{Term, Unit};
use armada_isa::uop::{addr_mode, reg};
use armada_isa::{ops::*, MicroOp};
use cranelift_codegen::ir::{types::I64, Block, InstBuilder, Value};
use cranelift_frontend::Variable;
use std::collections::HashMap;

/// Slots a loop translated as a host loop may have.
const MAX_SLOTS: usize = 48;
/// Registers it may name.
const MAX_CARRIED: usize = 12;

/// The loop being translated (see the module's documentation).
pub(super) struct Looping {
    /// The preheader: the first block's own Cranelift block, filled after the loop.
    pre: Block,
    /// Where every turn starts.
    head: Block,
    /// The slots of the loop's first and last blocks.
    first: usize,
    pub(super) last: usize,
    /// Each carried register's variable.
    vars: [Option<Variable>; 32],
    /// Not read, written or forgotten yet in this block: a read takes the variable.
    fresh: [bool; 32],
    /// What each block counts as written on entry (see `written`).
    written: [bool; 32],
    /// The context's flag words: kind, a, b, r.
    flags: [Variable; 4],
    /// Whether anything took the flags from `flags` (else the preheader loads none).
    flags_used: bool,
    /// The TLB's entries pointer and index complement, when the loop has accesses.
    tlb: Option<(Variable, Variable)>,
    /// Not used or dropped (by a helper) yet in this block.
    tlb_fresh: bool,
    /// For each later block of the loop: the registers, and whether the flags, that an
    /// edge translated so far passes to it unstored (its edges all come before it).
    passed: HashMap<usize, ([bool; 32], bool)>,
}

/// The loops of `unit` translated as host loops: the first block's slot -> the last's
/// (`ARMADA_JIT_LOOPS=0`: none, to compare).
///
/// A loop is a run of the unit's blocks whose last branches back to the first, where only
/// the first is entered from outside the run (or is an entry of the unit) and no branch
/// inside goes back to any other: every edge in it goes forward, back to the first block,
/// or out.
pub(super) fn loops(unit: &Unit, page: &[MicroOp]) -> HashMap<usize, usize> {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on = *ON.get_or_init(|| std::env::var_os("ARMADA_JIT_LOOPS").is_none_or(|v| v != "0"));
    let mut found = HashMap::new();
    if !on {
        return found;
    }
    let blocks = &unit.blocks;
    let entries = unit.entries();
    for (i, head) in blocks.iter().enumerate() {
        // the last block that branches back here
        let Some(j) = (i..blocks.len())
            .rev()
            .find(|&j| unit.successors(&blocks[j]).any(|s| s == head.start))
        else {
            continue;
        };
        let inside = |s: usize| s >= head.start && s < blocks[j].end;
        let slots: usize = blocks[i..=j].iter().map(|b| b.end - b.start).sum();
        let fits = slots <= MAX_SLOTS
            && named(blocks[i..=j].iter().flat_map(|b| &page[b.start..b.end])).len() <= MAX_CARRIED;
        let closed = blocks[i..=j].iter().all(|b| {
            unit.successors(b)
                .all(|s| s == head.start || !inside(s) || s > b.start)
        }) && blocks
            .iter()
            .filter(|b| !inside(b.start))
            .all(|b| unit.successors(b).all(|s| !inside(s) || s == head.start))
            && entries
                .iter()
                .chain([&unit.entry])
                .all(|&e| !inside(e) || e == head.start);
        if fits && closed {
            found.insert(head.start, blocks[j].start);
        }
    }
    found
}

/// Whether `op` loads or stores vector registers (its `a` and `d` are Vt and Vt2).
fn vector_access(op: u16) -> bool {
    (LDR_V8..=STR_V128).contains(&op) || (LDP_V32..=STP_V128).contains(&op)
}

/// Whether `op` is a branch or system op, whose unused fields are zero (x0): only MRS
/// writes `a`; the others name at most `b` (BR's, CBZ's, MSR's, DC ZVA's register).
fn control(op: u16) -> bool {
    op < MOV_IMM
}

/// The general registers `ops` name in any field of an integer op or an access (an FP op's
/// fields, and a vector access's Vt, are vector registers; an FP op that reads or writes a
/// general register has it loaded, or stored at the next edge, as any block does).
fn named<'a>(ops: impl Iterator<Item = &'a MicroOp>) -> Vec<u8> {
    const NONE: u8 = reg::ZR;
    let mut regs: Vec<u8> = ops
        .filter(|u| u.op < FP_BASE)
        .flat_map(|u| match u.op {
            MRS => [u.a, NONE, NONE, NONE],
            op if control(op) => [u.b, NONE, NONE, NONE],
            op if vector_access(op) => [u.b, u.c, NONE, NONE],
            _ => [u.a, u.b, u.c, u.d],
        })
        .filter(|&r| r < reg::ZR)
        .collect();
    regs.sort_unstable();
    regs.dedup();
    regs
}

/// The registers `ops` may write: the destination of each integer op but the stores and
/// the branch and system ops other than MRS, the second of a loaded pair, the status of an
/// exclusive store or compare and swap, and a base written back.
fn written<'a>(ops: impl Iterator<Item = &'a MicroOp>) -> [bool; 32] {
    let mut w = [false; 32];
    let mut mark = |r: u8| {
        if r < reg::ZR {
            w[r as usize] = true;
        }
    };
    for u in ops {
        let store = matches!(u.op, STR_B | STR_H | STR_W | STR_X | STP_W | STP_X);
        let no_a = store || vector_access(u.op) || (control(u.op) && u.op != MRS);
        if u.op < FP_BASE && !no_a {
            mark(u.a);
        }
        if matches!(u.op, LDP_W | LDPSW | LDP_X) {
            mark(u.d);
        }
        if matches!(u.op, STXR | STXP | CAS | CASP) {
            mark(u.c);
        }
        let access = (LDR_B..=STP_V128).contains(&u.op);
        if access && matches!(u.f, addr_mode::PRE | addr_mode::POST) {
            mark(u.b);
        }
    }
    w
}

impl Tx<'_> {
    /// Starts the loop of blocks from slot `first` to the block at slot `last`, `pre` the
    /// first block's Cranelift block: builds from its head.
    pub(super) fn loop_start(&mut self, first: usize, last: usize, pre: Block) {
        let head = self.b.create_block();
        let end = self
            .unit
            .blocks
            .iter()
            .find(|b| b.start == last)
            .map(|b| b.end);
        let ops = &self.page[first..end.expect("the loop's last block is the unit's")];
        let written = written(ops.iter());
        let mut vars = [None; 32];
        for r in named(ops.iter()) {
            vars[r as usize] = Some(self.b.declare_var(I64));
        }
        // (a unit for guarded windows looks at no TLB)
        let access = !self.guarded && ops.iter().any(|u| (LDR_B..=STP_V128).contains(&u.op));
        let tlb = access.then(|| (self.b.declare_var(I64), self.b.declare_var(I64)));
        let flags = [(); 4].map(|_| self.b.declare_var(I64));
        self.looping = Some(Looping {
            pre,
            head,
            first,
            last,
            vars,
            fresh: [false; 32],
            written,
            flags,
            flags_used: false,
            tlb,
            tlb_fresh: true,
            passed: HashMap::new(),
        });
        self.loop_block(head, first);
    }

    /// Starts the block of the loop at `slot` (`blk`: the head, or the block's own): the
    /// registers written before it and the flags as they come in the loop's variables.
    pub(super) fn loop_block(&mut self, blk: Block, slot: usize) {
        self.b.switch_to_block(blk);
        self.ctx = self.b.ins().get_pinned_reg(I64);
        let l = self.looping.as_mut().expect("in a loop");
        let (written, flags_dirty) = if slot == l.first {
            (l.written, true)
        } else {
            l.passed.remove(&slot).unwrap_or(([false; 32], false))
        };
        l.tlb_fresh = true;
        self.regs = [None; 32];
        self.dirty = [false; 32];
        for (r, var) in l.vars.iter().enumerate() {
            l.fresh[r] = var.is_some();
            if let (Some(var), true) = (*var, written[r]) {
                l.fresh[r] = false;
                self.regs[r] = Some(self.b.use_var(var));
                self.dirty[r] = true;
            }
        }
        self.flags = Known::Carried;
        self.flags_dirty = flags_dirty;
    }

    /// Whether the current block is the loop's head (which checks the budget before it).
    pub(super) fn at_loop_head(&self, slot: usize) -> bool {
        self.looping.as_ref().is_some_and(|l| l.first == slot)
    }

    /// Register `r`'s value as it came into this block of the loop, at its first read.
    pub(super) fn loop_read(&mut self, r: usize) -> Option<Value> {
        let l = self.looping.as_mut()?;
        if !std::mem::take(&mut l.fresh[r]) {
            return None;
        }
        Some(self.b.use_var(l.vars[r]?))
    }

    /// Marks `r` as no longer to be taken from the loop's variable in this block: written,
    /// or forgotten (a helper may have changed it in the state).
    pub(super) fn loop_touch(&mut self, r: usize) {
        if let Some(l) = self.looping.as_mut() {
            l.fresh[r] = false;
        }
    }

    /// After a helper: the TLB view is loaded again, not taken from the loop.
    pub(super) fn loop_forget_tlb(&mut self) {
        if let Some(l) = self.looping.as_mut() {
            l.tlb_fresh = false;
        }
    }

    /// The flags going round the loop: the context's four words.
    pub(crate) fn loop_flags(&mut self) -> [Value; 4] {
        let l = self.looping.as_mut().expect("carried flags are a loop's");
        l.flags_used = true;
        let vars = l.flags;
        vars.map(|v| self.b.use_var(v))
    }

    /// The TLB view as it came into this block of the loop, at its first access before
    /// any helper.
    pub(crate) fn loop_tlb(&mut self) -> Option<(Value, Value)> {
        let l = self.looping.as_mut()?;
        if !std::mem::take(&mut l.tlb_fresh) {
            return None;
        }
        let (e, m) = l.tlb?;
        Some((self.b.use_var(e), self.b.use_var(m)))
    }

    /// The end of a block of the loop, whose count is then `done`, that goes on to `next`
    /// when it does not branch: false (nothing done) for a call, an indirect branch or a
    /// syscall, which leave the unit as from any block.
    pub(super) fn loop_term(&mut self, term: Term, u: &MicroOp, next: u64, done: Value) -> bool {
        let target = match term {
            Term::Cond(t) => t,
            Term::Jump(t) => return self.loop_edge(t, done),
            Term::None | Term::Stop => return self.loop_edge(next, done),
            Term::Call(_) | Term::Indirect | Term::Syscall => return false,
        };
        let c = self.branch_cond(u);
        let taken = self.b.create_block();
        let fall = self.b.create_block();
        // a way out beside a way back: out of the way, so that a turn runs straight to
        // its jump back
        let head = self.pc(self.looping.as_ref().expect("in a loop").first);
        for (blk, t, other) in [(taken, target, next), (fall, next, target)] {
            if other == head && !self.in_loop(t) {
                self.b.set_cold_block(blk);
            }
        }
        self.b.ins().brif(c, taken, &[], fall, &[]);
        for (blk, t) in [(taken, target), (fall, next)] {
            self.b.switch_to_block(blk);
            let kept = (
                self.regs,
                self.dirty,
                self.flags,
                self.flags_dirty,
                self.tlb,
            );
            self.loop_edge(t, done);
            (
                self.regs,
                self.dirty,
                self.flags,
                self.flags_dirty,
                self.tlb,
            ) = kept;
        }
        true
    }

    /// Whether `pc` starts a block of the loop.
    fn in_loop(&self, pc: u64) -> bool {
        let l = self.looping.as_ref().expect("in a loop");
        self.unit
            .block_at(pc)
            .is_some_and(|s| s >= l.first && s <= l.last)
    }

    /// Goes from the current block of the loop (its count `done`) to `target`: round to
    /// the head (checking the budget first), on to a later block of the loop, both with
    /// the values as they are, or out, storing them.
    fn loop_edge(&mut self, target: u64, done: Value) -> bool {
        let l = self.looping.as_ref().expect("in a loop");
        let (first, head) = (l.first, l.head);
        let back = target == self.pc(first);
        let into = if back {
            self.budget_check(first, done);
            Some(head)
        } else if self.in_loop(target) {
            let slot = self.unit.block_at(target).expect("a block of the loop");
            Some(self.blocks[&slot])
        } else {
            None
        };
        let Some(into) = into else {
            if let Known::Carried = self.flags {
                // stored here, then the context's for whatever follows
                self.flush_flags();
                self.flags = Known::Unknown;
            }
            self.goto(target, done);
            return true;
        };
        self.pass_on(if back {
            None
        } else {
            self.unit.block_at(target)
        });
        self.b.ins().jump(into, &[]);
        true
    }

    /// Defines every carried value for the block of the loop the current one jumps to:
    /// the later one at slot `to`, or the head (None).
    fn pass_on(&mut self, to: Option<usize>) {
        let l = self.looping.as_ref().expect("in a loop");
        let (vars, flags, tlb) = (l.vars, l.flags, l.tlb);
        // what the block it goes to does not count as written is stored here
        let kept = match to {
            None => l.written,
            Some(_) => vars.map(|v| v.is_some()),
        };
        for (r, k) in kept.into_iter().enumerate() {
            if !k {
                self.flush_reg(r as u8);
            }
        }
        if let Some(slot) = to {
            let (dirty, flags_dirty) = (self.dirty, self.flags_dirty);
            let l = self.looping.as_mut().expect("in a loop");
            let p = l.passed.entry(slot).or_insert(([false; 32], false));
            for (d, now) in p.0.iter_mut().zip(dirty) {
                *d |= now;
            }
            p.1 |= flags_dirty;
        }
        for (r, var) in vars.iter().enumerate() {
            let Some(var) = *var else { continue };
            let fresh = self.looping.as_ref().is_some_and(|l| l.fresh[r]);
            let v = match self.regs[r] {
                Some(v) => v,
                // as it came in: nothing to define
                None if fresh => continue,
                None => self.load_state(X_OFF + 8 * r as i32),
            };
            self.b.def_var(var, v);
        }
        if let Known::Adc { .. } = self.flags {
            // (carried as NZCV, below)
            self.packed();
        }
        let words = match self.flags {
            // (as they came in)
            Known::Carried => None,
            Known::Lazy {
                kind, wide, chosen, ..
            } => {
                // (a CCMP's given NZCV goes to the context's last word, which the loop
                // does not carry)
                let k = self.lazy_kind(kind, chosen);
                Some([k, wide[0], wide[1], wide[2]])
            }
            Known::Packed(_) => {
                // NZCV goes to the context's last word and stays there; the kind says so
                self.flags_dirty = true;
                self.flush_flags();
                let zero = self.b.ins().iconst(I64, 0);
                Some([zero; 4])
            }
            Known::Unknown => Some([0, 1, 2, 3].map(|i| self.load_state(CTX_FK + 8 * i))),
            Known::Adc { .. } => unreachable!("made NZCV above"),
        };
        for (var, v) in flags.into_iter().zip(words.into_iter().flatten()) {
            self.b.def_var(var, v);
        }
        if let Some((e, m)) = tlb {
            let fresh = self.looping.as_ref().is_some_and(|l| l.tlb_fresh);
            if !fresh {
                let (ve, vm) = self.tlb_view();
                self.b.def_var(e, ve);
                self.b.def_var(m, vm);
            }
        }
    }

    /// Fills the loop's preheader (everything it carries, from the state and context,
    /// after the head's check of the budget) and ends the loop.
    pub(super) fn loop_finish(&mut self) {
        let l = self.looping.take().expect("in a loop");
        self.b.switch_to_block(l.pre);
        self.ctx = self.b.ins().get_pinned_reg(I64);
        self.win_here = false;
        // nothing is dirty here: a way out stores nothing
        (self.dirty, self.flags, self.flags_dirty) = ([false; 32], Known::Unknown, false);
        let r0 = self.b.use_var(self.ret);
        self.budget_check(l.first, r0);
        for (r, var) in l.vars.iter().enumerate() {
            if let Some(var) = *var {
                let v = self.load_state(X_OFF + 8 * r as i32);
                self.b.def_var(var, v);
            }
        }
        for (i, var) in l.flags.into_iter().enumerate().filter(|_| l.flags_used) {
            let v = self.load_state(CTX_FK + 8 * i as i32);
            self.b.def_var(var, v);
        }
        if let Some((e, m)) = l.tlb {
            let ve = self.load_state(CTX_TLB_ENTRIES);
            let vm = self.load_state(CTX_TLB_UNINDEXED);
            self.b.def_var(e, ve);
            self.b.def_var(m, vm);
        }
        self.b.ins().jump(l.head, &[]);
    }
}
