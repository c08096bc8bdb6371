//! Blocks that branch back to their own start (a CRC's bit loop, a string scan), translated
//! as host loops.
//!
//! Elsewhere a block loads each register it reads from the state and stores what it wrote
//! before it ends, and stores the flags it set; a five-instruction loop paid three loads,
//! three stores and four flag words at every turn, more than its own work (crc32's
//! `crc_bitwise`: 25 host instructions a turn). Here the registers, the flags' four words
//! and the TLB view go round the loop in Cranelift variables instead:
//!
//! - The block's Cranelift block becomes the loop's preheader, which everything that
//!   entered the block still jumps to. It loads what the loop carries from the state (it
//!   is filled after the body, once that is known) and jumps to the loop's head, where
//!   every turn starts.
//! - The budget is checked before the head rather than at it: in the preheader, and at
//!   the back edge, where the flags the body set are known values to store on the way
//!   out. A check at the head stored the flags that came round, so they came round as
//!   four block parameters, and their moves cost more than the stores they saved.
//! - A register is carried from its first read or write in the body. At the back edge
//!   the registers the body may have left written unstored (`written`, found from the
//!   micro-ops before the body is translated) are passed on unstored, and the head counts
//!   them as written, so every way out stores them as it stores what the block wrote.
//!   Anything else still written then is stored at the back edge, so `written` need not be
//!   exact for the state to be right: too many makes stores at accesses, too few at the
//!   back edge.
//! - The flags are carried as the context's four words (`Known::Carried`): the head counts
//!   them as set, so ways out store them; the loop's exit stores them once. Their values
//!   are taken from the variables only where they are stored or read, so a body that
//!   sets the flags before any way out or read carries none of them round.

use super::{Known, Tx, X_OFF};
use crate::helpers::{CTX_FK, CTX_TLB_ENTRIES, CTX_TLB_UNINDEXED};
use crate::unit::{BlockSpan, Term};
use armada_isa::uop::{addr_mode, reg};
use armada_isa::{ops::*, MicroOp};
use cranelift_codegen::ir::{types::I64, Block, InstBuilder, Value};
use cranelift_frontend::Variable;

/// The loop being translated (see the module's documentation).
pub(super) struct Looping {
    /// The preheader: the block's own Cranelift block, filled after the body.
    pre: Block,
    /// Where every turn starts.
    head: Block,
    /// Each register's variable, once the body has read or written it.
    vars: [Option<Variable>; 32],
    /// Not read, written or forgotten yet this turn: a read takes the variable.
    fresh: [bool; 32],
    /// What the head counts as written (see `written`).
    written: [bool; 32],
    /// The context's flag words: kind, a, b, r.
    flags: [Variable; 4],
    /// Whether anything took the flags from `flags` (else the preheader loads none).
    flags_used: bool,
    /// The TLB's entries pointer and index complement, once an access of the turn used
    /// them before any helper.
    tlb: Option<(Variable, Variable)>,
    tlb_fresh: bool,
}

/// Whether `span` is a loop of itself that is translated as a host loop
/// (`ARMADA_JIT_LOOPS=0` translates it as any other block, to compare the two).
pub(super) fn is_self_loop(span: &BlockSpan, start_pc: u64, long: bool) -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on = *ON.get_or_init(|| std::env::var_os("ARMADA_JIT_LOOPS").is_none_or(|v| v != "0"));
    on && !long && matches!(span.term, Term::Cond(t) | Term::Jump(t) if t == start_pc)
}

/// The registers the body `ops` may write: the destination of each integer op but the
/// stores, the second of a loaded pair, the status of an exclusive store or compare and
/// swap, and a base written back.
fn written(ops: &[MicroOp]) -> [bool; 32] {
    let mut w = [false; 32];
    let mut mark = |r: u8| {
        if r < reg::ZR {
            w[r as usize] = true;
        }
    };
    for u in ops {
        let store = matches!(u.op, STR_B | STR_H | STR_W | STR_X | STP_W | STP_X);
        if u.op < FP_BASE && !store && u.op != MSR {
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
    /// Starts the self-loop `span` (whose Cranelift block is `pre`): builds from its head,
    /// with the written registers and the flags taken from the loop's variables.
    pub(super) fn loop_start(&mut self, span: &BlockSpan, pre: Block, body_end: usize) {
        let head = self.b.create_block();
        self.b.switch_to_block(head);
        self.ctx = self.b.ins().get_pinned_reg(I64);
        let flags = [(); 4].map(|_| self.b.declare_var(I64));
        let written = written(&self.page[span.start..body_end]);
        let mut l = Looping {
            pre,
            head,
            vars: [None; 32],
            fresh: [true; 32],
            written,
            flags,
            flags_used: false,
            tlb: None,
            tlb_fresh: true,
        };
        self.regs = [None; 32];
        self.dirty = [false; 32];
        for r in (0..32).filter(|&r| written[r]) {
            let var = self.b.declare_var(I64);
            l.vars[r] = Some(var);
            l.fresh[r] = false;
            self.regs[r] = Some(self.b.use_var(var));
            self.dirty[r] = true;
        }
        self.flags = Known::Carried;
        self.flags_dirty = true;
        self.looping = Some(l);
    }

    /// Register `r`'s value going round the loop, at its first read of a turn.
    pub(super) fn loop_read(&mut self, r: usize) -> Option<Value> {
        let l = self.looping.as_mut()?;
        if !std::mem::take(&mut l.fresh[r]) {
            return None;
        }
        let var = match l.vars[r] {
            Some(v) => v,
            None => {
                let v = self.b.declare_var(I64);
                l.vars[r] = Some(v);
                v
            }
        };
        Some(self.b.use_var(var))
    }

    /// Marks `r` as no longer to be taken from the loop's variable this turn: written, or
    /// forgotten (a helper may have changed it in the state).
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

    /// The TLB view going round the loop, at the turn's first access before any helper.
    pub(crate) fn loop_tlb(&mut self) -> Option<(Value, Value)> {
        let l = self.looping.as_mut()?;
        if !std::mem::take(&mut l.tlb_fresh) {
            return None;
        }
        let (e, m) = match l.tlb {
            Some(v) => v,
            None => {
                let v = (self.b.declare_var(I64), self.b.declare_var(I64));
                l.tlb = Some(v);
                v
            }
        };
        Some((self.b.use_var(e), self.b.use_var(m)))
    }

    /// The end of a turn: the condition `c` (taken to `target`, else to `next`), one of
    /// which is the loop's start `start` (at slot `slot`). The back edge goes round with
    /// the values as they are; the exit stores them and goes on as any block's end.
    pub(super) fn loop_end(
        &mut self,
        c: Option<Value>,
        target: u64,
        next: u64,
        (start, slot): (u64, usize),
    ) {
        let done = self.b.use_var(self.ret);
        let Some(c) = c else {
            self.back_edge(slot, done);
            return;
        };
        let back = self.b.create_block();
        let out = self.b.create_block();
        // the exit out of the way, so that a turn runs straight to its one jump back
        self.b.set_cold_block(out);
        let (taken, fall, exit) = if target == start {
            (back, out, next)
        } else {
            (out, back, target)
        };
        self.b.ins().brif(c, taken, &[], fall, &[]);
        self.b.switch_to_block(back);
        let kept = (
            self.regs,
            self.dirty,
            self.flags,
            self.flags_dirty,
            self.tlb,
        );
        self.back_edge(slot, done);
        (
            self.regs,
            self.dirty,
            self.flags,
            self.flags_dirty,
            self.tlb,
        ) = kept;
        self.b.switch_to_block(out);
        if let Known::Carried = self.flags {
            // stored here, then the context's for whatever follows
            self.flush_flags();
            self.flags = Known::Unknown;
        }
        self.goto(exit, done);
    }

    /// Goes round from the end of the turn (the count then `done`): checks the budget for
    /// the next turn, defines every carried value for it and jumps to the head.
    fn back_edge(&mut self, slot: usize, done: Value) {
        self.budget_check(slot, done);
        let l = self.looping.as_ref().expect("in a loop");
        let (written, vars, flags, tlb, head) = (l.written, l.vars, l.flags, l.tlb, l.head);
        for (r, w) in written.into_iter().enumerate() {
            if !w {
                self.flush_reg(r as u8);
            }
        }
        for (r, var) in vars.iter().enumerate() {
            let Some(var) = *var else { continue };
            let v = match self.regs[r] {
                Some(v) => v,
                None => self.load_state(X_OFF + 8 * r as i32),
            };
            self.b.def_var(var, v);
        }
        let words = match self.flags {
            // (not defined again: the head's own values, or the preheader's, go round)
            Known::Carried => None,
            Known::Lazy { kind, wide, .. } => {
                let k = self.b.ins().iconst(I64, kind as i64);
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
        };
        for (var, v) in flags.into_iter().zip(words.into_iter().flatten()) {
            self.b.def_var(var, v);
        }
        if let Some((e, m)) = tlb {
            let (ve, vm) = self.tlb_view();
            self.b.def_var(e, ve);
            self.b.def_var(m, vm);
        }
        self.b.ins().jump(head, &[]);
    }

    /// Fills the loop's preheader (everything it carries, from the state and context) and
    /// ends the loop.
    pub(super) fn loop_finish(&mut self, slot: usize) {
        let l = self.looping.take().expect("in a loop");
        self.b.switch_to_block(l.pre);
        self.ctx = self.b.ins().get_pinned_reg(I64);
        // nothing is dirty here: a way out stores nothing
        (self.dirty, self.flags, self.flags_dirty) = ([false; 32], Known::Unknown, false);
        let r0 = self.b.use_var(self.ret);
        self.budget_check(slot, r0);
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
