//! Translation of the integer and system micro-ops (data processing, flags, moves), and
//! the way every other op goes: loads and stores (`access`), FP/SIMD through the
//! interpreter's FP code, and the rare rest through the interpreter, one instruction.

use crate::flags::{ADD32, ADD64, LOGIC32, LOGIC64, SUB32, SUB64};
use crate::helpers::{CODE_CHANGED, STOPPED};
use crate::translate::{host_mem, Tx, EXCL_OFF, NZCV_OFF, PC_OFF, RETIRED_OFF, TPIDR_OFF};
use armada_core::cpu::fused;
use armada_isa::uop::sysreg;
use armada_isa::{ops::*, MicroOp};
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{I16, I32, I64, I8},
    InstBuilder, Value,
};

/// For an op of the CPU engine's own (a fused compare + B.cond, a shift pair), the op this
/// tier translates it as; None for one it does not know.
pub fn base_of(op: u16) -> Option<u16> {
    Some(match op {
        fused::ADDS_IMM_W_BCOND => ADDS_IMM_W,
        fused::ADDS_IMM_X_BCOND => ADDS_IMM_X,
        fused::SUBS_SR_W_BCOND => SUBS_SR_W,
        fused::SUBS_SR_X_BCOND => SUBS_SR_X,
        fused::SHIFT_PAIR_U | fused::SHIFT_PAIR_S_X | fused::SHIFT_PAIR_S_W => op,
        _ => return None,
    })
}

/// The flags' record of an addition or a subtraction at 32 or 64 bits.
fn add_kind(sub: bool, wide: bool) -> u64 {
    match (sub, wide) {
        (true, true) => SUB64,
        (true, false) => SUB32,
        (false, true) => ADD64,
        (false, false) => ADD32,
    }
}

impl Tx<'_> {
    /// Shift by type (LSL, LSR, ASR, ROR) and a constant amount, at the value's width.
    pub(crate) fn shift(&mut self, v: Value, ty: u8, amount: u8, bits: u32) -> Value {
        let n = (amount as u32 & (bits - 1)) as i64;
        if n == 0 {
            return v;
        }
        match ty {
            0 => self.b.ins().ishl_imm_s(v, n),
            1 => self.b.ins().ushr_imm_s(v, n),
            2 => self.b.ins().sshr_imm_s(v, n),
            _ => self.b.ins().rotr_imm_s(v, n),
        }
    }

    /// Extend (UXTB .. SXTX) of a 64-bit value, then shift left.
    pub(crate) fn extend(&mut self, v: Value, option: u8, shift: u8) -> Value {
        let narrow = |tx: &mut Self, ty, signed: bool| {
            let n = tx.b.ins().ireduce(ty, v);
            if signed {
                tx.b.ins().sextend(I64, n)
            } else {
                tx.b.ins().uextend(I64, n)
            }
        };
        let e = match option & 7 {
            0 => narrow(self, I8, false),
            1 => narrow(self, I16, false),
            2 => narrow(self, I32, false),
            4 => narrow(self, I8, true),
            5 => narrow(self, I16, true),
            6 => narrow(self, I32, true),
            _ => v,
        };
        let s = (shift & 7) as i64;
        if s == 0 {
            e
        } else {
            self.b.ins().ishl_imm_s(e, s)
        }
    }

    pub(crate) fn src(&mut self, r: u8, wide: bool) -> Value {
        if wide {
            self.rd(r)
        } else {
            self.rd32(r)
        }
    }

    pub(crate) fn dst(&mut self, r: u8, v: Value, wide: bool) {
        if wide {
            self.wr(r, v)
        } else {
            self.wr32(r, v)
        }
    }

    fn iconst_w(&mut self, v: u64, wide: bool) -> Value {
        if wide {
            self.b.ins().iconst(I64, v as i64)
        } else {
            self.b.ins().iconst(I32, v as u32 as i64)
        }
    }

    /// `a + b` (or `a - b`), setting the flags lazily.
    pub(crate) fn add_flags(&mut self, rd: u8, a: Value, b: Value, sub: bool, wide: bool) {
        let r = if sub {
            self.b.ins().isub(a, b)
        } else {
            self.b.ins().iadd(a, b)
        };
        let kind = add_kind(sub, wide);
        self.dst(rd, r, wide);
        self.set_flags(kind, a, b, r);
    }

    pub(crate) fn logic_flags(&mut self, rd: u8, r: Value, wide: bool) {
        self.dst(rd, r, wide);
        let z = self.iconst_w(0, wide);
        self.set_flags(if wide { LOGIC64 } else { LOGIC32 }, z, z, r);
    }

    /// NZCV = the flags of `a + b` (or `a - b`) where `holds`, else `otherwise` (CCMP,
    /// CCMN): the flags chosen lazily.
    pub(crate) fn cond_flags(
        &mut self,
        holds: Value,
        otherwise: u64,
        a: Value,
        b: Value,
        sub: bool,
        wide: bool,
    ) {
        let r = if sub {
            self.b.ins().isub(a, b)
        } else {
            self.b.ins().iadd(a, b)
        };
        let kind = add_kind(sub, wide);
        self.set_chosen(holds, otherwise, kind, a, b, r);
    }

    /// `a + b + carry` with NZCV set, the interpreter's ADCS/SBCS (b already inverted):
    /// the flags recorded, not made (see `Known::Adc`).
    pub(crate) fn adc_flags(&mut self, rd: u8, a: Value, b: Value, carry: Value, wide: bool) {
        let cin = if wide {
            carry
        } else {
            self.b.ins().ireduce(I32, carry)
        };
        let s = self.b.ins().iadd(a, b);
        let r = self.b.ins().iadd(s, cin);
        self.dst(rd, r, wide);
        self.set_adc(a, b, r, carry);
    }

    /// Translates the op at `slot` (not a branch).
    pub fn op(&mut self, slot: usize, u: &MicroOp) {
        let op = base_of(u.op).unwrap_or(u.op);
        let (a, b) = (u.a, u.b);
        match op {
            NOP | PRFM | MSR_NZCV_IMM => {}
            fused::SHIFT_PAIR_U | fused::SHIFT_PAIR_S_X | fused::SHIFT_PAIR_S_W => {
                let x = self.rd(b);
                let l = self.b.ins().ishl_imm_s(x, (u.e & 63) as i64);
                let v = if op == fused::SHIFT_PAIR_U {
                    self.b.ins().ushr_imm_s(l, (u.f & 63) as i64)
                } else {
                    self.b.ins().sshr_imm_s(l, (u.f & 63) as i64)
                };
                if op == fused::SHIFT_PAIR_S_W {
                    let v = self.b.ins().ireduce(I32, v);
                    self.wr32(a, v);
                } else {
                    self.wr(a, v);
                }
            }
            CLREX => {
                let m = self.b.ins().iconst(I64, -1);
                self.store_state(m, EXCL_OFF);
            }
            MRS if u.imm == sysreg::TPIDR_EL0 => {
                let v = self.load_state(TPIDR_OFF);
                self.wr(a, v);
            }
            MRS if u.imm == sysreg::NZCV => {
                let v = self.packed();
                self.wr(a, v);
            }
            MSR if u.imm == sysreg::TPIDR_EL0 => {
                let v = self.rd(b);
                self.store_state(v, TPIDR_OFF);
            }
            MSR if u.imm == sysreg::NZCV => {
                let v = self.rd(b);
                let v = self.b.ins().band_imm_s(v, 0xf000_0000);
                self.set_packed(v);
            }
            LDR_B | LDR_H | LDR_W | LDR_X | LDRSB_W | LDRSB_X | LDRSH_W | LDRSH_X | LDRSW
            | STR_B | STR_H | STR_W | STR_X | LDR_V8 | LDR_V16 | LDR_V32 | LDR_V64 | LDR_V128
            | STR_V8 | STR_V16 | STR_V32 | STR_V64 | STR_V128 | LDP_W | LDPSW | LDP_X | STP_W
            | STP_X | LDP_V32 | LDP_V64 | LDP_V128 | STP_V32 | STP_V64 | STP_V128 => {
                self.access(slot, u, op)
            }
            DC_ZVA => self.zero_block(slot, u),
            ATOMIC_RMW | CAS => self.atomic(slot, u),
            op if op >= FP_BASE => self.fp(slot, u),
            // the ops armada-semantics defines (defined.rs), else the interpreter's code
            _ => {
                if !self.defined(op, u) {
                    self.interpret_one(slot)
                }
            }
        }
    }

    /// An FP/SIMD op, through the interpreter's FP code: the general registers it names and
    /// the flags go to the state first and come back after.
    fn fp(&mut self, slot: usize, u: &MicroOp) {
        if self.fp_arith(u)
            || self.fp_conv(u)
            || self.vec_fp(u)
            || self.simd(u)
            || self.vec_int(u)
            || self.elem_defined(u)
            || self.load_multiple(slot, u)
        {
            return;
        }
        if crate::store::tracing() {
            eprintln!(
                "armada-jit: {:#x}: {} through the FP helper",
                self.pc(slot),
                armada_isa::ops::name(u.op)
            );
        }
        let named = [u.a, u.b, u.c];
        // most FP ops touch only vector registers: the rest hand over what they use
        let (general, flags) = armada_core::cpu::fp::touches_general(u.op);
        if flags {
            let nz = self.packed();
            self.store_state(nz, NZCV_OFF);
        }
        if general {
            self.flush_dirty();
        }
        let status = self.call_fp(u);
        if general {
            self.load_regs(Some(&named));
        }
        if flags {
            let nz = self.load_state(NZCV_OFF);
            self.set_packed(nz);
        }
        self.after_helper(slot, status);
    }

    /// Under `ARMADA_QUICK_TRACE`, counts a run of `op` by the interpreter's code, with the
    /// quick blocks' (`--stats` lists them).
    fn count_fallback(&mut self, op: u16) {
        if !crate::quick::tracing() {
            return;
        }
        let n = &crate::quick::FALLBACKS[op as usize & 0x7ff] as *const _ as i64;
        let at = self.b.ins().iconst(I64, n);
        let v = self.b.ins().load(I64, host_mem(), at, 0);
        let v = self.b.ins().iadd_imm_s(v, 1);
        self.b.ins().store(host_mem(), v, at, 0);
    }

    /// Calls the interpreter's FP code for `u`; its status.
    pub(crate) fn call_fp(&mut self, u: &MicroOp) -> Value {
        self.count_fallback(u.op);
        let w = self.b.ins().iconst(I64, u.fields_word() as i64);
        let imm = self.b.ins().iconst(I64, u.imm as i64);
        let ctx = self.ctx();
        self.call(self.h.fp, &[ctx, w, imm])[0]
    }

    /// Any other op: the interpreter runs this one instruction on the stored state.
    fn interpret_one(&mut self, slot: usize) {
        if crate::store::tracing() {
            let op = self.page[slot].op;
            eprintln!(
                "armada-jit: {:#x}: {} left to the interpreter",
                self.pc(slot),
                armada_isa::ops::name(op)
            );
        }
        self.count_fallback(self.page[slot].op);
        let nz = self.packed();
        self.store_state(nz, NZCV_OFF);
        self.flush_dirty();
        let pcv = self.pc(slot) as i64;
        let pc = self.b.ins().iconst(I64, pcv);
        self.store_state(pc, PC_OFF);
        let r = self.retired_at(slot);
        self.store_state(r, RETIRED_OFF);
        let ctx = self.ctx();
        let status = self.call(self.h.interp, &[ctx])[0];
        self.load_regs(None);
        let nz = self.load_state(NZCV_OFF);
        self.set_packed(nz);
        self.after_helper(slot, status);
    }

    /// After a helper: leave before the instruction if it stopped, after it if it changed
    /// code.
    pub fn after_helper(&mut self, slot: usize, status: Value) {
        let stopped = self
            .b
            .ins()
            .icmp_imm_u(IntCC::Equal, status, STOPPED as i64);
        self.leave_if(stopped, slot, crate::helpers::exit::STOP, false);
        let changed = self
            .b
            .ins()
            .icmp_imm_u(IntCC::Equal, status, CODE_CHANGED as i64);
        self.leave_if(changed, slot, crate::helpers::exit::NEXT, true);
    }
}
