//! Scalar FP inline: FADD, FSUB, FMUL, FDIV, FNMUL and the fused multiply-adds on singles
//! and doubles, the interpreter's host fast path as host code; FCMP and FCMPE; FCSEL.
//!
//! The interpreter computes the arithmetic on the host's IEEE arithmetic when FPCR asks for
//! round to nearest without flush-to-zero, and takes the host's result when it is finite
//! and not tiny (`cpu::fp::host_result_range`): then the only exception possible is
//! Inexact. Translated code does the same, and works Inexact out itself for FADD, FSUB
//! (Knuth's TwoSum: the sum's rounding error, exactly) and FMUL (the product's error, by a
//! fused multiply-add) on results far enough from the ends of the range that those errors
//! are exact; for the other ops it takes the fast path only when FPSR's Inexact flag is
//! already set, so FPSR stays as it is. Programs that count in doubles (gawk, whose numbers
//! are all doubles; JavaScript-like runtimes) make exact results, which never set Inexact,
//! so the flag-already-set rule alone sent all their arithmetic to the helper.
//!
//! Anything else (another FPCR, a NaN, an infinity, a tiny or huge result) calls the
//! interpreter's FP code with the operands untouched, which works the result and the flags
//! out exactly. These ops cannot fault or write code, so that call needs no way out.
//!
//! What the other FP modules (`fpconv`, `vecfp`) share lives here too: the test of FPCR
//! (`host_mode`), of Inexact already set (`ixc_set`), the split into the host's answer or
//! the helper (`fast_or_helper`), and the exact rounding error (`rounding_error`).

use crate::translate::{host_mem, Tx, FPCR_OFF, FPSR_OFF, NZCV_OFF, X_OFF};
use armada_core::cpu::fp::{host_result_range, FPSR_IXC, HOST_FPCR_MASK};
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types::{F32, F64, I32, I64},
    BlockArg, InstBuilder, MemFlagsData, Value,
};

/// For element size `e`, the result magnitudes (as bit patterns) `[lo, hi)` within which
/// the rounding error of a sum or product is itself a float, computed exactly: products
/// at least 2^(emin + p + 1) (the error of a product of smaller magnitude can be below the
/// subnormals' resolution), any sum, and both below 2^(emax - 1), far from overflow in the
/// error's own arithmetic.
pub(crate) fn exact_error_range(e: u8, sum: bool) -> (u64, u64) {
    let (bias, mant, p) = if e == 2 {
        (127u64, 23, 24)
    } else {
        (1023, 52, 53)
    };
    let lo = if sum {
        0
    } else {
        (bias - (bias - 1) + p + 1) << mant
    };
    let hi = (2 * bias - 1) << mant;
    (lo, hi)
}

impl Tx<'_> {
    /// Translates `u` if it is one of this module's ops; false leaves it to the caller.
    pub(crate) fn fp_arith(&mut self, u: &MicroOp) -> bool {
        match u.op {
            F_CMP => return self.fcmp(u),
            F_CSEL => return self.fcsel(u),
            _ => {}
        }
        let (fty, ity) = match (u.e, u.f) {
            (2, 2) => (F32, I32),
            (3, 3) => (F64, I64),
            _ => return false,
        };
        if u.imm & BY_ELEM != 0
            || !matches!(
                u.op,
                F_ADD | F_SUB | F_MUL | F_DIV | F_NMUL | F_MADD | F_MSUB | F_NMADD | F_NMSUB
            )
        {
            return false;
        }
        let reg = Self::v_off;
        let c = self.ctx();
        let n = self.b.ins().load(fty, host_mem(), c, reg(u.b));
        let m = self.b.ins().load(fty, host_mem(), c, reg(u.c));
        let ins = self.b.ins();
        let r = match u.op {
            F_ADD => ins.fadd(n, m),
            F_SUB => ins.fsub(n, m),
            F_MUL => ins.fmul(n, m),
            F_DIV => ins.fdiv(n, m),
            F_NMUL => {
                let p = ins.fmul(n, m);
                self.b.ins().fneg(p)
            }
            _ => {
                // the addend is Vd (field d); MSUB and NMADD negate the first factor, NMADD
                // and NMSUB the addend (negation is exact)
                let a = self.b.ins().load(fty, host_mem(), c, reg(u.d));
                let n = if matches!(u.op, F_MSUB | F_NMADD) {
                    self.b.ins().fneg(n)
                } else {
                    n
                };
                let a = if matches!(u.op, F_NMADD | F_NMSUB) {
                    self.b.ins().fneg(a)
                } else {
                    a
                };
                self.b.ins().fma(n, m, a)
            }
        };
        // Inexact worked out here (`exact_error_range`), or already set
        let err = self.rounding_error(u.op, n, m, r);
        let mode_ok = self.host_mode();
        let bits = self.b.ins().bitcast(ity, MemFlagsData::new(), r);
        let sign_off = if ity == I64 {
            i64::MAX
        } else {
            i32::MAX as i64
        };
        let mag = self.b.ins().band_imm_s(bits, sign_off);
        let sum = matches!(u.op, F_ADD | F_SUB);
        let (ok, inexact) = if let Some(err) = err {
            let (lo, hi) = exact_error_range(u.e, sum);
            let in_range = self.magnitude_in(mag, lo, hi);
            let zero = self.b.ins().f64const(0.0);
            let zero = if fty == F32 {
                self.b.ins().fdemote(F32, zero)
            } else {
                zero
            };
            let inexact = self.b.ins().fcmp(FloatCC::NotEqual, err, zero);
            (self.b.ins().band(mode_ok, in_range), Some(inexact))
        } else {
            // FPCR on the host path and Inexact already set
            let (lo, hi) = host_result_range(u.e, sum);
            let in_range = self.magnitude_in(mag, lo, hi);
            let ixc_set = self.ixc_set();
            let pre = self.b.ins().band(mode_ok, ixc_set);
            (self.b.ins().band(pre, in_range), None)
        };
        // Vd = the result, the rest of the register zero
        self.fast_or_helper(u, ok, inexact, None, |tx| {
            let low = if ity == I64 {
                bits
            } else {
                tx.b.ins().uextend(I64, bits)
            };
            tx.set_v(u.a, low, None);
        });
        true
    }

    /// FPCR asks for round to nearest without flush-to-zero (the host's own mode).
    pub(crate) fn host_mode(&mut self) -> Value {
        let fpcr = self.load_state(FPCR_OFF);
        let mode = self.b.ins().band_imm_s(fpcr, HOST_FPCR_MASK as i64);
        self.b.ins().icmp_imm_u(IntCC::Equal, mode, 0)
    }

    /// The fast path where `ok` (the host's value is the interpreter's), else the FP
    /// helper. The fast path runs `set`, which writes vector registers to the state, and
    /// raises FPSR.IXC where `inexact`. `general`: the op writes general register `r`,
    /// whose value on the fast path is `v` (computed on the main path, so it dominates
    /// what follows); after the helper it is loaded from the state.
    pub(crate) fn fast_or_helper(
        &mut self,
        u: &MicroOp,
        ok: Value,
        inexact: Option<Value>,
        general: Option<(u8, Value)>,
        set: impl FnOnce(&mut Self),
    ) {
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        let out = general.map(|_| self.b.append_block_param(done, I64));
        self.b.set_cold_block(slow);
        self.b.ins().brif(ok, fast, &[], slow, &[]);

        self.b.switch_to_block(fast);
        set(self);
        if let Some(t) = inexact {
            let fpsr = self.load_state(FPSR_OFF);
            let ixc = self.b.ins().uextend(I64, t);
            let ixc = self
                .b
                .ins()
                .ishl_imm_s(ixc, FPSR_IXC.trailing_zeros() as i64);
            let after = self.b.ins().bor(fpsr, ixc);
            self.store_state(after, FPSR_OFF);
        }
        let args: Vec<BlockArg> = general.iter().map(|&(_, v)| v.into()).collect();
        self.b.ins().jump(done, &args);

        self.b.switch_to_block(slow);
        self.call_fp(u);
        let args: Vec<BlockArg> = general
            .iter()
            .map(|&(r, _)| {
                if (r as usize) < 32 {
                    self.load_state(X_OFF + 8 * r as i32).into()
                } else {
                    // the zero register: nothing written
                    self.b.ins().iconst(I64, 0).into()
                }
            })
            .collect();
        self.b.ins().jump(done, &args);

        self.b.switch_to_block(done);
        if let (Some((r, _)), Some(v)) = (general, out) {
            self.wr(r, v);
        }
    }

    /// Whether FPSR's cumulative Inexact flag is set already (then a result that can raise
    /// nothing else leaves FPSR as it is).
    pub(crate) fn ixc_set(&mut self) -> Value {
        let fpsr = self.load_state(FPSR_OFF);
        let ixc = self.b.ins().band_imm_s(fpsr, FPSR_IXC as i64);
        self.b.ins().icmp_imm_u(IntCC::NotEqual, ixc, 0)
    }

    /// The exact rounding error of `r`, the result of FADD or FSUB (Knuth's TwoSum) or
    /// FMUL (a fused multiply-add) of `n` and `m`, scalars or vectors; None for other ops.
    /// Exact only where the result is within `exact_error_range`.
    pub(crate) fn rounding_error(
        &mut self,
        op: u16,
        n: Value,
        m: Value,
        r: Value,
    ) -> Option<Value> {
        match op {
            F_ADD | F_SUB => {
                // TwoSum of n and m (negated for FSUB, exactly)
                let m = if op == F_SUB { self.b.ins().fneg(m) } else { m };
                let bv = self.b.ins().fsub(r, n);
                let av = self.b.ins().fsub(r, bv);
                let da = self.b.ins().fsub(n, av);
                let db = self.b.ins().fsub(m, bv);
                Some(self.b.ins().fadd(da, db))
            }
            F_MUL => {
                let p = self.b.ins().fneg(r);
                Some(self.b.ins().fma(n, m, p))
            }
            _ => None,
        }
    }

    /// Whether the magnitude bits `mag` are in `[lo, hi)`: (mag - lo) < (hi - lo) unsigned.
    fn magnitude_in(&mut self, mag: Value, lo: u64, hi: u64) -> Value {
        let off = self.b.ins().iadd_imm_s(mag, (lo as i64).wrapping_neg());
        self.b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, off, (hi - lo) as i64)
    }

    /// FCMP and FCMPE of singles and doubles: NZCV from one host compare when neither
    /// operand is a NaN and FPCR does not flush (then no exception is possible); else the
    /// helper, which works out Invalid Operation too.
    fn fcmp(&mut self, u: &MicroOp) -> bool {
        let fty = match u.e {
            2 => F32,
            3 => F64,
            _ => return false,
        };
        let c = self.ctx();
        let x = self.b.ins().load(fty, host_mem(), c, Self::v_off(u.b));
        let y = if u.d & fcmp::ZERO != 0 {
            let z = self.b.ins().f64const(0.0);
            if fty == F32 {
                self.b.ins().fdemote(F32, z)
            } else {
                z
            }
        } else {
            self.b.ins().load(fty, host_mem(), c, Self::v_off(u.c))
        };
        let mode_ok = self.host_mode();
        let ordered = self.b.ins().fcmp(FloatCC::Ordered, x, y);
        let ok = self.b.ins().band(mode_ok, ordered);
        // equal 0110, less 1000, greater 0010
        let eq = self.b.ins().fcmp(FloatCC::Equal, x, y);
        let lt = self.b.ins().fcmp(FloatCC::LessThan, x, y);
        let v_eq = self.b.ins().iconst(I64, 0b0110 << 28);
        let v_lt = self.b.ins().iconst(I64, 0b1000 << 28);
        let v_gt = self.b.ins().iconst(I64, 0b0010 << 28);
        let ne = self.b.ins().select(lt, v_lt, v_gt);
        let nz = self.b.ins().select(eq, v_eq, ne);

        let slow = self.b.create_block();
        let done = self.b.create_block();
        let out = self.b.append_block_param(done, I64);
        self.b.set_cold_block(slow);
        self.b.ins().brif(ok, done, &[nz.into()], slow, &[]);

        self.b.switch_to_block(slow);
        self.call_fp(u);
        let v = self.load_state(NZCV_OFF);
        self.b.ins().jump(done, &[v.into()]);

        self.b.switch_to_block(done);
        self.set_packed(out);
        true
    }

    /// FCSEL: the low element of Vn or Vm by the condition, the rest of Vd zero.
    fn fcsel(&mut self, u: &MicroOp) -> bool {
        if !(1..=3).contains(&u.e) {
            return false;
        }
        let t = self.cond(u.d);
        let x = self.element(u.b, u.e, 0);
        let y = self.element(u.c, u.e, 0);
        let r = self.b.ins().select(t, x, y);
        self.set_v(u.a, r, None);
        true
    }
}
