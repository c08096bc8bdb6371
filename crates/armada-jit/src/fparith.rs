//! Scalar FP arithmetic inline: FADD, FSUB, FMUL, FDIV, FNMUL and the fused multiply-adds
//! on singles and doubles, the interpreter's host fast path as host code.
//!
//! The interpreter computes these on the host's IEEE arithmetic when FPCR asks for round
//! to nearest without flush-to-zero, and takes the host's result when it is finite and
//! not tiny (`cpu::fp::host_result_range`): then the only exception possible is Inexact.
//! Translated code does the same when FPSR's Inexact flag is already set, so FPSR stays as
//! it is. Anything else (another FPCR, Inexact not yet set, a NaN, an infinity, a tiny
//! result) calls the interpreter's FP code with the operands untouched, which works the
//! result and the flags out exactly. These ops cannot fault or write code, so that call
//! needs no way out.

use crate::translate::{host_mem, Tx, FPCR_OFF, FPSR_OFF};
use armada_core::cpu::fp::{host_result_range, FPSR_IXC, HOST_FPCR_MASK};
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{F32, F64, I32, I64},
    InstBuilder, MemFlagsData,
};

impl Tx<'_> {
    /// Translates `u` if it is one of this module's ops; false leaves it to the caller.
    pub(crate) fn fp_arith(&mut self, u: &MicroOp) -> bool {
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
        // FPCR on the host path and Inexact already set: (fpcr & mask) | (!fpsr & IXC) == 0
        let fpcr = self.load_state(FPCR_OFF);
        let fpsr = self.load_state(FPSR_OFF);
        let mode = self.b.ins().band_imm_s(fpcr, HOST_FPCR_MASK as i64);
        let nf = self.b.ins().bnot(fpsr);
        let no_ixc = self.b.ins().band_imm_s(nf, FPSR_IXC as i64);
        let pre = self.b.ins().bor(mode, no_ixc);
        let pre_ok = self.b.ins().icmp_imm_u(IntCC::Equal, pre, 0);
        // the result's magnitude in [lo, hi): lo <= |r| < hi as (|r| - lo) < (hi - lo)
        let (lo, hi) = host_result_range(u.e, matches!(u.op, F_ADD | F_SUB));
        let bits = self.b.ins().bitcast(ity, MemFlagsData::new(), r);
        let sign_off = if ity == I64 {
            i64::MAX
        } else {
            i32::MAX as i64
        };
        let mag = self.b.ins().band_imm_s(bits, sign_off);
        let off = self.b.ins().iadd_imm_s(mag, (lo as i64).wrapping_neg());
        let in_range = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, off, (hi - lo) as i64);
        let ok = self.b.ins().band(pre_ok, in_range);

        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        self.b.set_cold_block(slow);
        self.b.ins().brif(ok, fast, &[], slow, &[]);

        // Vd = the result, the rest of the register zero
        self.b.switch_to_block(fast);
        let low = if ity == I64 {
            bits
        } else {
            self.b.ins().uextend(I64, bits)
        };
        self.set_v(u.a, low, None);
        self.b.ins().jump(done, &[]);

        self.b.switch_to_block(slow);
        self.call_fp(u);
        self.b.ins().jump(done, &[]);

        self.b.switch_to_block(done);
        true
    }
}
