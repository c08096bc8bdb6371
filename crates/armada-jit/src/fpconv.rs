//! Scalar FP conversions and square root inline: SCVTF and UCVTF (integer to float),
//! FCVTZS, FCVTNS, FCVTMS, FCVTPS and their unsigned forms (float to integer), FCVT
//! between single and double, FSQRT, and the rounds to an integral value (FRINT*, scalar
//! and vector: C's rint, floor, ceil, trunc and round). Compiled C converts at every `(double)i` and
//! `(int)x`; without these, loops such as a Mandelbrot set's or a matrix's index
//! arithmetic called the FP helper at each.
//!
//! Each takes the host's answer where the interpreter's would be that answer and raise at
//! most Inexact, which it then works out; anything else (a NaN, an out-of-range value, a
//! tiny result, another FPCR, fixed-point forms) calls the interpreter's FP code with the
//! operands untouched.

use crate::translate::{host_mem, Tx};
use crate::vecfp::lanes_le;
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types::{F32, F32X4, F64, F64X2, I32, I64},
    InstBuilder, MemFlagsData, Type, Value,
};

/// The smallest single and double magnitudes the host path takes (`cpu::fp`'s `SAFE_MIN`:
/// 2^-125 and 2^-960): a result this large is not tiny, and the error of a square root
/// of an operand this large is worked out exactly.
const SAFE_MIN_S: f32 = f32::from_bits(2 << 23);
const SAFE_MIN_D: f64 = f64::from_bits(63 << 52);

impl Tx<'_> {
    /// Translates `u` if it is one of this module's ops in a shape it takes; false leaves
    /// it to the caller.
    pub(crate) fn fp_conv(&mut self, u: &MicroOp) -> bool {
        match u.op {
            INT_TO_F if matches!(u.e, 2 | 3) && u.imm == 0 => self.int_to_f(u),
            F_TO_INT if matches!(u.e, 2 | 3) && u.imm == 0 && u.d & 7 <= rmode::Z => {
                self.f_to_int(u)
            }
            F_SQRT if matches!(u.e, 2 | 3) && u.f == u.e => self.fsqrt(u),
            F_CVT if matches!((u.d, u.e), (2, 3) | (3, 2)) => self.fcvt(u),
            F_RINT => return self.round_int(u),
            _ => return false,
        }
        true
    }

    /// Vd's low element as a float of `fty`.
    fn load_float(&mut self, r: u8, fty: Type) -> Value {
        let c = self.ctx();
        self.b.ins().load(fty, host_mem(), c, Self::v_off(r))
    }

    /// Vd = the float `x` (its bits zero-extended), the rest of the register zero.
    fn set_float(&mut self, r: u8, x: Value) {
        let ty = self.b.func.dfg.value_type(x);
        let bits = if ty == F32 {
            let b = self.b.ins().bitcast(I32, MemFlagsData::new(), x);
            self.b.ins().uextend(I64, b)
        } else {
            self.b.ins().bitcast(I64, MemFlagsData::new(), x)
        };
        self.set_v(r, bits, None);
    }

    fn float_const(&mut self, fty: Type, x: f64) -> Value {
        if fty == F32 {
            self.b.ins().f32const(x as f32)
        } else {
            self.b.ins().f64const(x)
        }
    }

    /// SCVTF, UCVTF (scalar, from a general register, no fraction bits): exact when the
    /// integer fits the significand, whatever FPCR says (no rounding, never tiny); the
    /// rest (rounded conversions) go to the helper.
    fn int_to_f(&mut self, u: &MicroOp) {
        let (fty, p) = if u.e == 2 { (F32, 24) } else { (F64, 53) };
        let unsigned = u.d & 1 != 0;
        let raw = self.rd(u.b);
        let x = match (u.f, unsigned) {
            (0, true) => self.b.ins().band_imm_s(raw, 0xffff_ffff),
            (0, false) => {
                let w = self.b.ins().ireduce(I32, raw);
                self.b.ins().sextend(I64, w)
            }
            _ => raw,
        };
        // unsigned: x < 2^p; signed: -2^p <= x < 2^p
        let ok = if unsigned {
            self.b
                .ins()
                .icmp_imm_u(IntCC::UnsignedLessThan, x, 1i64 << p)
        } else {
            let off = self.b.ins().iadd_imm_s(x, 1i64 << p);
            self.b
                .ins()
                .icmp_imm_u(IntCC::UnsignedLessThan, off, 1i64 << (p + 1))
        };
        // the helper reads Rn from the state
        self.flush_reg(u.b);
        let a = u.a;
        self.fast_or_helper(u, ok, None, None, |tx| {
            // x fits p bits with its sign: as signed it converts the same for UCVTF
            let r = tx.b.ins().fcvt_from_sint(fty, x);
            tx.set_float(a, r);
        });
    }

    /// FCVTZS, FCVTNS, FCVTMS, FCVTPS and the unsigned forms (scalar, to a general
    /// register, no fraction bits): the value rounded by the instruction's mode, when it
    /// is in the integer's range (a NaN is not) and FPCR does not flush the operand;
    /// Inexact where rounding changed it.
    fn f_to_int(&mut self, u: &MicroOp) {
        let fty = if u.e == 2 { F32 } else { F64 };
        let (mode, unsigned) = (u.d & 7, u.d & 8 != 0);
        let ity = if u.f == 1 { I64 } else { I32 };
        let bits = ity.bits() as i32;
        let x = self.load_float(u.b, fty);
        let ins = self.b.ins();
        let r = match mode {
            rmode::N => ins.nearest(x),
            rmode::P => ins.ceil(x),
            rmode::M => ins.floor(x),
            _ => ins.trunc(x),
        };
        let (lo, hi) = if unsigned {
            (0.0, 2f64.powi(bits))
        } else {
            (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1))
        };
        let lo = self.float_const(fty, lo);
        let hi = self.float_const(fty, hi);
        let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, r, lo);
        let lt = self.b.ins().fcmp(FloatCC::LessThan, r, hi);
        let in_range = self.b.ins().band(ge, lt);
        let mode_ok = self.host_mode();
        let ok = self.b.ins().band(in_range, mode_ok);
        let inexact = self.b.ins().fcmp(FloatCC::NotEqual, r, x);
        let ins = self.b.ins();
        let v = if unsigned {
            ins.fcvt_to_uint_sat(ity, r)
        } else {
            ins.fcvt_to_sint_sat(ity, r)
        };
        // a 32-bit result is zero-extended into Xd
        let v = if ity == I32 {
            self.b.ins().uextend(I64, v)
        } else {
            v
        };
        self.fast_or_helper(u, ok, Some(inexact), Some((u.a, v)), |_| {});
    }

    /// FSQRT of a single or double at least `SAFE_MIN_S` / `SAFE_MIN_D` and finite (so
    /// positive, and its root neither tiny nor huge); Inexact where the root squared is
    /// not the operand (exactly: in double for a single, by a fused multiply-add for a
    /// double).
    fn fsqrt(&mut self, u: &MicroOp) {
        let fty = if u.e == 2 { F32 } else { F64 };
        let x = self.load_float(u.b, fty);
        let min = if fty == F32 {
            SAFE_MIN_S as f64
        } else {
            SAFE_MIN_D
        };
        let lo = self.float_const(fty, min);
        let inf = self.float_const(fty, f64::INFINITY);
        let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, lo);
        let lt = self.b.ins().fcmp(FloatCC::LessThan, x, inf);
        let in_range = self.b.ins().band(ge, lt);
        let mode_ok = self.host_mode();
        let ok = self.b.ins().band(in_range, mode_ok);
        let r = self.b.ins().sqrt(x);
        let inexact = if fty == F32 {
            let rd = self.b.ins().fpromote(F64, r);
            let xd = self.b.ins().fpromote(F64, x);
            let sq = self.b.ins().fmul(rd, rd);
            self.b.ins().fcmp(FloatCC::NotEqual, sq, xd)
        } else {
            let nr = self.b.ins().fneg(r);
            let res = self.b.ins().fma(nr, r, x);
            let zero = self.b.ins().f64const(0.0);
            self.b.ins().fcmp(FloatCC::NotEqual, res, zero)
        };
        let a = u.a;
        self.fast_or_helper(u, ok, Some(inexact), None, |tx| tx.set_float(a, r));
    }

    /// FRINTN, FRINTP, FRINTM, FRINTZ, FRINTA, FRINTI and FRINTX, scalar and on 2S, 4S
    /// and 2D, when FPCR is the host's (so FRINTI and FRINTX round to nearest) and no
    /// operand is a NaN: the host's rounding, which raises nothing (FRINTX: Inexact where
    /// the value changed). FRINTA (ties away from zero) is the truncation, one further
    /// from zero where the fraction cut off, exact as `x - trunc(x)`, is at least a half.
    fn round_int(&mut self, u: &MicroOp) -> bool {
        let (ty, vector) = match (u.e, u.f) {
            (2, 2) => (F32, false),
            (3, 3) => (F64, false),
            (2, 3 | 4) => (F32X4, true),
            (3, 4) => (F64X2, true),
            _ => return false,
        };
        if u.d > rmode::FPCR_EXACT {
            return false;
        }
        let x = if vector {
            self.vec_operand(u.b, ty, u.f)
        } else {
            self.load_float(u.b, ty)
        };
        let splat = |tx: &mut Self, v: f64| {
            let k = tx.float_const(ty.lane_type(), v);
            if vector {
                tx.b.ins().splat(ty, k)
            } else {
                k
            }
        };
        let r = match u.d {
            rmode::P => self.b.ins().ceil(x),
            rmode::M => self.b.ins().floor(x),
            rmode::Z => self.b.ins().trunc(x),
            rmode::A => {
                let t = self.b.ins().trunc(x);
                let cut = self.b.ins().fsub(x, t);
                let cut = self.b.ins().fabs(cut);
                let half = splat(self, 0.5);
                let away = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, cut, half);
                let one = splat(self, 1.0);
                // one with x's sign (x86-64 has no vector copysign: by the sign bit)
                let step = if vector {
                    let neg_zero = splat(self, -0.0);
                    let sign = self.b.ins().band(x, neg_zero);
                    self.b.ins().bor(one, sign)
                } else {
                    self.b.ins().fcopysign(one, x)
                };
                let further = self.b.ins().fadd(t, step);
                if vector {
                    let mask = self.b.ins().bitcast(ty, lanes_le(), away);
                    self.b.ins().bitselect(mask, further, t)
                } else {
                    self.b.ins().select(away, further, t)
                }
            }
            // N, and FPCR's mode (I, X), which host_mode makes to nearest
            _ => self.b.ins().nearest(x),
        };
        let ordered = self.b.ins().fcmp(FloatCC::Ordered, x, x);
        let changed =
            (u.d == rmode::FPCR_EXACT).then(|| self.b.ins().fcmp(FloatCC::NotEqual, r, x));
        let (ordered, inexact) = if vector {
            let all = self.b.ins().vall_true(ordered);
            (all, changed.map(|c| self.b.ins().vany_true(c)))
        } else {
            (ordered, changed)
        };
        let mode_ok = self.host_mode();
        let ok = self.b.ins().band(ordered, mode_ok);
        let a = u.a;
        self.fast_or_helper(u, ok, inexact, None, |tx| {
            if vector {
                tx.set_lanes(a, r, u.f)
            } else {
                tx.set_float(a, r)
            }
        });
        true
    }

    /// FCVT from single to double (exact for all but NaNs) and from double to single
    /// (when the result is normal and finite, or a zero from a zero; Inexact where it
    /// changed the value).
    fn fcvt(&mut self, u: &MicroOp) {
        let mode_ok = self.host_mode();
        let a = u.a;
        if u.e == 3 {
            let x = self.load_float(u.b, F32);
            let ordered = self.b.ins().fcmp(FloatCC::Ordered, x, x);
            let ok = self.b.ins().band(ordered, mode_ok);
            self.fast_or_helper(u, ok, None, None, |tx| {
                let r = tx.b.ins().fpromote(F64, x);
                tx.set_float(a, r);
            });
            return;
        }
        let x = self.load_float(u.b, F64);
        let r = self.b.ins().fdemote(F32, x);
        let mag = self.b.ins().fabs(r);
        let lo = self.b.ins().f32const(SAFE_MIN_S);
        let inf = self.b.ins().f32const(f32::INFINITY);
        let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, mag, lo);
        let lt = self.b.ins().fcmp(FloatCC::LessThan, mag, inf);
        let normal = self.b.ins().band(ge, lt);
        let zero = self.b.ins().f64const(0.0);
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, x, zero);
        let fine = self.b.ins().bor(normal, is_zero);
        let ok = self.b.ins().band(fine, mode_ok);
        let back = self.b.ins().fpromote(F64, r);
        let inexact = self.b.ins().fcmp(FloatCC::NotEqual, back, x);
        self.fast_or_helper(u, ok, Some(inexact), None, |tx| tx.set_float(a, r));
    }
}
