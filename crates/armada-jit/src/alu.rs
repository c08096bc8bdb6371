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

fn ones(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

impl Tx<'_> {
    /// Shift by type (LSL, LSR, ASR, ROR) and a constant amount, at the value's width.
    fn shift(&mut self, v: Value, ty: u8, amount: u8, bits: u32) -> Value {
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

    /// The second operand of a shifted-register op, at 32 or 64 bits.
    fn op2_sr(&mut self, u: &MicroOp, wide: bool) -> Value {
        if wide {
            let c = self.rd(u.c);
            self.shift(c, u.e, u.f, 64)
        } else {
            let c = self.rd32(u.c);
            self.shift(c, u.e, u.f, 32)
        }
    }

    fn op2_ext(&mut self, u: &MicroOp, wide: bool) -> Value {
        let c = self.rd(u.c);
        let e = self.extend(c, u.e, u.f);
        if wide {
            e
        } else {
            self.b.ins().ireduce(I32, e)
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
    fn add_flags(&mut self, rd: u8, a: Value, b: Value, sub: bool, wide: bool) {
        let r = if sub {
            self.b.ins().isub(a, b)
        } else {
            self.b.ins().iadd(a, b)
        };
        let kind = match (sub, wide) {
            (true, true) => SUB64,
            (true, false) => SUB32,
            (false, true) => ADD64,
            (false, false) => ADD32,
        };
        self.dst(rd, r, wide);
        self.set_flags(kind, a, b, r);
    }

    fn logic_flags(&mut self, rd: u8, r: Value, wide: bool) {
        self.dst(rd, r, wide);
        let z = self.iconst_w(0, wide);
        self.set_flags(if wide { LOGIC64 } else { LOGIC32 }, z, z, r);
    }

    /// `a + b + carry` with NZCV set, the interpreter's ADCS/SBCS (b already inverted):
    /// the flags recorded, not made (see `Known::Adc`).
    fn adc_flags(&mut self, rd: u8, a: Value, b: Value, carry: Value, wide: bool) {
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
        let (a, b, c) = (u.a, u.b, u.c);
        let wide_of = |op: u16, x_form: &[u16]| x_form.contains(&op);
        match op {
            NOP | PRFM | MSR_NZCV_IMM => {}
            MOV_IMM => {
                let v = self.b.ins().iconst(I64, u.imm as i64);
                self.wr(a, v);
            }
            MOVK_W | MOVK_X => {
                let s = self.rd(b);
                let kept = self.b.ins().band_imm_s(s, !(0xffffu64 << u.e) as i64);
                let v = self.b.ins().bor_imm_s(kept, (u.imm << u.e) as i64);
                if op == MOVK_W {
                    let v = self.b.ins().ireduce(I32, v);
                    self.wr32(a, v);
                } else {
                    self.wr(a, v);
                }
            }
            ADD_IMM_W | ADD_IMM_X => {
                let wide = op == ADD_IMM_X;
                let s = self.src(b, wide);
                let imm = if wide {
                    u.imm as i64
                } else {
                    u.imm as u32 as i32 as i64
                };
                let v = self.b.ins().iadd_imm_s(s, imm);
                self.dst(a, v, wide);
            }
            ADDS_IMM_W | ADDS_IMM_X => {
                let wide = op == ADDS_IMM_X;
                let s = self.src(b, wide);
                if u.e == 1 {
                    // SUBS: the immediate is inverted, and the carry in is 1
                    let k = self.iconst_w(!u.imm, wide);
                    self.add_flags(a, s, k, true, wide);
                } else {
                    let k = self.iconst_w(u.imm, wide);
                    self.add_flags(a, s, k, false, wide);
                }
            }
            AND_IMM_W | AND_IMM_X => {
                let s = self.rd(b);
                let v = self.b.ins().band_imm_s(s, u.imm as i64);
                self.wr(a, v);
            }
            ORR_IMM_W | EOR_IMM_W => {
                let s = self.rd32(b);
                let k = u.imm as u32 as i32 as i64;
                let v = if op == ORR_IMM_W {
                    self.b.ins().bor_imm_s(s, k)
                } else {
                    self.b.ins().bxor_imm_s(s, k)
                };
                self.wr32(a, v);
            }
            ORR_IMM_X => {
                let s = self.rd(b);
                let v = self.b.ins().bor_imm_s(s, u.imm as i64);
                self.wr(a, v);
            }
            EOR_IMM_X => {
                let s = self.rd(b);
                let v = self.b.ins().bxor_imm_s(s, u.imm as i64);
                self.wr(a, v);
            }
            ANDS_IMM_W | ANDS_IMM_X => {
                let wide = op == ANDS_IMM_X;
                let s = self.src(b, wide);
                let k = self.iconst_w(u.imm, wide);
                let r = self.b.ins().band(s, k);
                self.logic_flags(a, r, wide);
            }
            BFM_W | BFM_X => {
                let size = if op == BFM_X { 64 } else { 32 };
                let (r, s) = (u.e as u32, u.f as u32);
                let (dst_keep, src_shift_right, src_mask, src_shift_left) = if s >= r {
                    let w = s - r + 1;
                    (!ones(w), r, ones(w), 0)
                } else {
                    let w = s + 1;
                    let pos = size - r;
                    (!(ones(w) << pos), 0, ones(w), pos)
                };
                let dv = self.rd(c);
                let sv = self.rd(b);
                let kept = self.b.ins().band_imm_s(dv, dst_keep as i64);
                let sh = self.b.ins().ushr_imm_s(sv, src_shift_right as i64);
                let m = self.b.ins().band_imm_s(sh, src_mask as i64);
                let ins = self.b.ins().ishl_imm_s(m, src_shift_left as i64);
                let v = self.b.ins().bor(kept, ins);
                let v = self.b.ins().band_imm_s(v, ones(size) as i64);
                self.wr(a, v);
            }
            EXTR_W => {
                let hi = self.rd32(b);
                let lo = self.rd32(c);
                let hi = self.zext(hi);
                let lo = self.zext(lo);
                let hi = self.b.ins().ishl_imm_s(hi, 32);
                let v = self.b.ins().bor(hi, lo);
                let v = self.b.ins().ushr_imm_s(v, (u.e & 63) as i64);
                let v = self.b.ins().ireduce(I32, v);
                self.wr32(a, v);
            }
            EXTR_X => {
                let v = if u.e & 63 == 0 {
                    self.rd(c)
                } else {
                    let lo = self.rd(c);
                    let hi = self.rd(b);
                    let lo = self.b.ins().ushr_imm_s(lo, (u.e & 63) as i64);
                    let hi = self.b.ins().ishl_imm_s(hi, 64 - (u.e & 63) as i64);
                    self.b.ins().bor(lo, hi)
                };
                self.wr(a, v);
            }
            ADD_SR_W | ADD_SR_X | SUB_SR_W | SUB_SR_X => {
                let wide = wide_of(op, &[ADD_SR_X, SUB_SR_X]);
                let x = self.src(b, wide);
                let y = self.op2_sr(u, wide);
                let v = if matches!(op, ADD_SR_W | ADD_SR_X) {
                    self.b.ins().iadd(x, y)
                } else {
                    self.b.ins().isub(x, y)
                };
                self.dst(a, v, wide);
            }
            ADDS_SR_W | ADDS_SR_X | SUBS_SR_W | SUBS_SR_X => {
                let wide = wide_of(op, &[ADDS_SR_X, SUBS_SR_X]);
                let x = self.src(b, wide);
                let y = self.op2_sr(u, wide);
                self.add_flags(a, x, y, matches!(op, SUBS_SR_W | SUBS_SR_X), wide);
            }
            ADD_EXT_W | ADD_EXT_X | SUB_EXT_W | SUB_EXT_X => {
                let wide = wide_of(op, &[ADD_EXT_X, SUB_EXT_X]);
                let x = self.src(b, wide);
                let y = self.op2_ext(u, wide);
                let v = if matches!(op, ADD_EXT_W | ADD_EXT_X) {
                    self.b.ins().iadd(x, y)
                } else {
                    self.b.ins().isub(x, y)
                };
                self.dst(a, v, wide);
            }
            ADDS_EXT_W | ADDS_EXT_X | SUBS_EXT_W | SUBS_EXT_X => {
                let wide = wide_of(op, &[ADDS_EXT_X, SUBS_EXT_X]);
                let x = self.src(b, wide);
                let y = self.op2_ext(u, wide);
                self.add_flags(a, x, y, matches!(op, SUBS_EXT_W | SUBS_EXT_X), wide);
            }
            ADC_W | ADC_X | SBC_W | SBC_X | ADCS_W | ADCS_X | SBCS_W | SBCS_X => {
                let wide = wide_of(op, &[ADC_X, SBC_X, ADCS_X, SBCS_X]);
                let carry = self.carry();
                let x = self.src(b, wide);
                let y = self.src(c, wide);
                let y = if matches!(op, SBC_W | SBC_X | SBCS_W | SBCS_X) {
                    self.b.ins().bnot(y)
                } else {
                    y
                };
                if matches!(op, ADCS_W | ADCS_X | SBCS_W | SBCS_X) {
                    self.adc_flags(a, x, y, carry, wide);
                } else {
                    let cin = if wide {
                        carry
                    } else {
                        self.b.ins().ireduce(I32, carry)
                    };
                    let s = self.b.ins().iadd(x, y);
                    let v = self.b.ins().iadd(s, cin);
                    self.dst(a, v, wide);
                }
            }
            AND_SR_W | AND_SR_X | BIC_SR_W | BIC_SR_X | ORR_SR_W | ORR_SR_X | ORN_SR_W
            | ORN_SR_X | EOR_SR_W | EOR_SR_X | EON_SR_W | EON_SR_X | ANDS_SR_W | ANDS_SR_X
            | BICS_SR_W | BICS_SR_X => {
                let wide = wide_of(
                    op,
                    &[
                        AND_SR_X, BIC_SR_X, ORR_SR_X, ORN_SR_X, EOR_SR_X, EON_SR_X, ANDS_SR_X,
                        BICS_SR_X,
                    ],
                );
                let x = self.src(b, wide);
                let y = self.op2_sr(u, wide);
                let v = match op {
                    AND_SR_W | AND_SR_X | ANDS_SR_W | ANDS_SR_X => self.b.ins().band(x, y),
                    BIC_SR_W | BIC_SR_X | BICS_SR_W | BICS_SR_X => self.b.ins().band_not(x, y),
                    ORR_SR_W | ORR_SR_X => self.b.ins().bor(x, y),
                    ORN_SR_W | ORN_SR_X => self.b.ins().bor_not(x, y),
                    EOR_SR_W | EOR_SR_X => self.b.ins().bxor(x, y),
                    _ => self.b.ins().bxor_not(x, y),
                };
                if matches!(op, ANDS_SR_W | ANDS_SR_X | BICS_SR_W | BICS_SR_X) {
                    self.logic_flags(a, v, wide);
                } else {
                    self.dst(a, v, wide);
                }
            }
            MOV_REG => {
                let v = self.rd(b);
                self.wr(a, v);
            }
            MOV_REG_W => {
                let v = self.rd32(b);
                self.wr32(a, v);
            }
            CSEL_W | CSEL_X | CSINC_W | CSINC_X | CSINV_W | CSINV_X | CSNEG_W | CSNEG_X => {
                let holds = self.cond(u.e);
                let x = self.rd(b);
                let y = self.rd(c);
                let alt = match op {
                    CSEL_W | CSEL_X => y,
                    CSINC_W | CSINC_X => self.b.ins().iadd_imm_s(y, 1),
                    CSINV_W | CSINV_X => self.b.ins().bnot(y),
                    _ => self.b.ins().ineg(y),
                };
                let v = self.b.ins().select(holds, x, alt);
                if matches!(op, CSEL_W | CSINC_W | CSINV_W | CSNEG_W) {
                    let v = self.b.ins().ireduce(I32, v);
                    self.wr32(a, v);
                } else {
                    self.wr(a, v);
                }
            }
            CCMP_REG_W | CCMP_REG_X | CCMN_REG_W | CCMN_REG_X | CCMP_IMM_W | CCMP_IMM_X
            | CCMN_IMM_W | CCMN_IMM_X => {
                let holds = self.cond(u.e);
                let wide = matches!(op, CCMP_REG_X | CCMN_REG_X | CCMP_IMM_X | CCMN_IMM_X);
                let sub = matches!(op, CCMP_REG_W | CCMP_REG_X | CCMP_IMM_W | CCMP_IMM_X);
                let x = self.src(b, wide);
                let y = if matches!(op, CCMP_IMM_W | CCMP_IMM_X | CCMN_IMM_W | CCMN_IMM_X) {
                    self.iconst_w(u.imm, wide)
                } else {
                    self.src(c, wide)
                };
                let r = if sub {
                    self.b.ins().isub(x, y)
                } else {
                    self.b.ins().iadd(x, y)
                };
                let kind = match (sub, wide) {
                    (true, true) => SUB64,
                    (true, false) => SUB32,
                    (false, true) => ADD64,
                    (false, false) => ADD32,
                };
                self.set_chosen(holds, ((u.f as u64) & 15) << 28, kind, x, y, r);
            }
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
            _ => {
                if !self.defined(u) {
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
