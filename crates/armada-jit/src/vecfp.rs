//! Vector FP arithmetic inline: FADD, FSUB, FMUL, FDIV, FMLA and FMLS on 2S, 4S and 2D
//! (by element too), the loops compilers vectorize, as host SIMD.
//!
//! The rule is the scalar one (`fparith`), lane by lane: FPCR asks for round to nearest
//! without flush-to-zero, and every lane's result is finite and not tiny
//! (`cpu::fp::host_result_range`), so Inexact is the only exception possible. FADD, FSUB
//! and FMUL work Inexact out (each lane's rounding error, exactly, on results within
//! `exact_error_range`); FDIV and the fused ops need it already set. If any lane misses,
//! the whole instruction goes to the interpreter's FP code with the operands untouched.
//!
//! A 64-bit vector (2S) is worked as four lanes whose upper two repeat the lower two, so
//! the checks need no mask; its result's upper half is zero, as the interpreter leaves it.

use crate::fparith::exact_error_range;
use crate::translate::{host_mem, Tx};
use armada_core::cpu::fp::host_result_range;
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types::{F32, F32X4, F64, F64X2, I32X4, I64, I64X2},
    Endianness, InstBuilder, MemFlagsData, Type, Value,
};

/// Flags of a bitcast between vector types of different lanes (Cranelift asks for the
/// byte order there).
pub(crate) fn lanes_le() -> MemFlagsData {
    let mut f = MemFlagsData::new();
    f.set_endianness(Endianness::Little);
    f
}

impl Tx<'_> {
    /// Translates `u` if it is a vector FP op in a shape this module takes; false leaves
    /// it to the caller.
    pub(crate) fn vec_fp(&mut self, u: &MicroOp) -> bool {
        let (vty, sty) = match (u.e, u.f) {
            (2, 3 | 4) => (F32X4, F32),
            (3, 4) => (F64X2, F64),
            _ => return false,
        };
        if u.op == INT_TO_F_V && u.imm == 0 {
            self.int_to_f_lanes(u, vty);
            return true;
        }
        if !matches!(u.op, F_ADD | F_SUB | F_MUL | F_DIV | F_MADD | F_MSUB) {
            return false;
        }
        let n = self.vec_operand(u.b, vty, u.f);
        let m = self.second_operand(u, vty);
        let ins = self.b.ins();
        let r = match u.op {
            F_ADD => ins.fadd(n, m),
            F_SUB => ins.fsub(n, m),
            F_MUL => ins.fmul(n, m),
            F_DIV => ins.fdiv(n, m),
            _ => {
                // Vd + Vn*Vm, fused (FMLS: -Vn, exactly)
                let acc = self.vec_operand(u.d, vty, u.f);
                let n = if u.op == F_MSUB {
                    self.b.ins().fneg(n)
                } else {
                    n
                };
                self.b.ins().fma(n, m, acc)
            }
        };
        // each lane's rounding error (FADD, FSUB, FMUL)
        let err = self.rounding_error(u.op, n, m, r);
        let sum = matches!(u.op, F_ADD | F_SUB);
        let (lo, hi) = if err.is_some() {
            exact_error_range(u.e, sum)
        } else {
            host_result_range(u.e, sum)
        };
        // every lane's magnitude in [lo, hi) (NaNs compare false)
        let mag = self.b.ins().fabs(r);
        let lo_v = self.splat_float(vty, sty, lo);
        let hi_v = self.splat_float(vty, sty, hi);
        let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, mag, lo_v);
        let lt = self.b.ins().fcmp(FloatCC::LessThan, mag, hi_v);
        let in_lanes = self.b.ins().band(ge, lt);
        let in_range = self.b.ins().vall_true(in_lanes);

        let mode_ok = self.host_mode();
        let pre = self.b.ins().band(mode_ok, in_range);
        let (ok, inexact) = if let Some(err) = err {
            let zero = self.splat_float(vty, sty, 0);
            let lanes = self.b.ins().fcmp(FloatCC::NotEqual, err, zero);
            (pre, Some(self.b.ins().vany_true(lanes)))
        } else {
            let ixc_set = self.ixc_set();
            (self.b.ins().band(pre, ixc_set), None)
        };
        self.fast_or_helper(u, ok, inexact, None, |tx| tx.set_lanes(u.a, r, u.f));
        true
    }

    /// SCVTF and UCVTF (vector, no fraction bits) when every lane's integer fits the
    /// significand: exact, whatever FPCR says; else the helper.
    fn int_to_f_lanes(&mut self, u: &MicroOp, vty: Type) {
        let (ity, p) = if vty == F32X4 {
            (I32X4, 24)
        } else {
            (I64X2, 53)
        };
        let unsigned = u.d & 1 != 0;
        let x = self.vec_operand(u.b, ity, u.f);
        let lane = |tx: &mut Self, v: i64| {
            let k = tx.b.ins().iconst(ity.lane_type(), v);
            tx.b.ins().splat(ity, k)
        };
        // unsigned: x < 2^p; signed: x + 2^p < 2^(p+1), unsigned
        let t = if unsigned {
            x
        } else {
            let bias = lane(self, 1 << p);
            self.b.ins().iadd(x, bias)
        };
        let bound = lane(self, 1i64 << (p + if unsigned { 0 } else { 1 }));
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThan, t, bound);
        let ok = self.b.ins().vall_true(fits);
        self.fast_or_helper(u, ok, None, None, |tx| {
            // the lanes fit p bits with their sign: as signed they convert the same for UCVTF
            let r = tx.b.ins().fcvt_from_sint(vty, x);
            tx.set_lanes(u.a, r, u.f);
        });
    }

    /// Vd = the lanes `r`: all 128 bits (`f` 4), or their low 64 bits and the rest zero.
    pub(crate) fn set_lanes(&mut self, a: u8, r: Value, f: u8) {
        let c = self.ctx();
        let off = Self::v_off(a);
        self.b.ins().store(host_mem(), r, c, off);
        if f == 3 {
            let zero = self.b.ins().iconst(I64, 0);
            self.store_state(zero, off + 8);
        }
    }

    /// Vector register `r` as lanes of `vty`: all 128 bits (`f` 4), or its low 64 bits
    /// in both halves (`f` 3).
    pub(crate) fn vec_operand(&mut self, r: u8, vty: Type, f: u8) -> Value {
        let c = self.ctx();
        let off = Self::v_off(r);
        if f >= 4 {
            self.b.ins().load(vty, host_mem(), c, off)
        } else {
            let lo = self.b.ins().load(I64, host_mem(), c, off);
            let both = self.b.ins().splat(I64X2, lo);
            self.b.ins().bitcast(vty, lanes_le(), both)
        }
    }

    /// The second operand of element-wise op `u` as lanes of `vty`: Vm (as
    /// [`Self::vec_operand`]), or for the by-element forms one element of Vm in every lane.
    pub(crate) fn second_operand(&mut self, u: &MicroOp, vty: Type) -> Value {
        if u.imm & BY_ELEM != 0 {
            let all = self.vec_operand(u.c, vty, 4);
            let x = self.b.ins().extractlane(all, (u.imm & 15) as u8);
            self.b.ins().splat(vty, x)
        } else {
            self.vec_operand(u.c, vty, u.f)
        }
    }

    /// The float of bit pattern `bits` in every lane.
    fn splat_float(&mut self, vty: Type, sty: Type, bits: u64) -> Value {
        let x = if sty == F32 {
            self.b.ins().f32const(f32::from_bits(bits as u32))
        } else {
            self.b.ins().f64const(f64::from_bits(bits))
        };
        self.b.ins().splat(vty, x)
    }
}
