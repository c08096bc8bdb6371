//! AdvSIMD moves and integer lane ops inline: what compiled C moves between register files
//! and what glibc's vector string code does most (MOVI, DUP, UMOV/SMOV, INS, ADD/SUB,
//! CMEQ, the bitwise ops, NOT), and FABS/FNEG, as 64-bit host arithmetic on the halves of
//! the vector registers in the state.
//!
//! Lanes narrower than 64 bits are worked on inside a 64-bit word, SWAR style: each op
//! keeps carries out of its lane. These ops raise no FP exception and read neither FPCR nor
//! FPSR, so the result is all they make. Each is the interpreter's (`cpu::fp::exec_fp`) for
//! the fields the decoder gives it: the element size `e`, the operated size `f` (3: the
//! low 64 bits, the rest zero; 4: all 128), the element index in `imm` (and `d`). Shapes
//! outside these (and the by-element forms) go to the FP helper as before.

use crate::translate::{host_mem, Tx};
use crate::vecfp::lanes_le;
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{I16, I16X8, I32, I32X4, I64, I64X2, I8, I8X16},
    InstBuilder, Value,
};

/// `x` in each lane of 2^e bytes of a 64-bit word.
fn rep(x: u64, e: u8) -> u64 {
    match e {
        0 => x.wrapping_mul(0x0101_0101_0101_0101),
        1 => x.wrapping_mul(0x0001_0001_0001_0001),
        2 => x.wrapping_mul(0x0000_0001_0000_0001),
        _ => x,
    }
}

/// The largest value of a lane of 2^e bytes.
fn lane_max(e: u8) -> u64 {
    if e >= 3 {
        u64::MAX
    } else {
        (1u64 << (8u32 << e)) - 1
    }
}

/// The lane's top bit in each lane.
fn high_bits(e: u8) -> u64 {
    rep(1u64 << ((8u32 << e) - 1), e)
}

impl Tx<'_> {
    /// Translates `u` if it is one of this module's ops in a shape it takes; false leaves
    /// it to the caller.
    pub(crate) fn simd(&mut self, u: &MicroOp) -> bool {
        let (e, f) = (u.e, u.f);
        // the full-register forms operate on 64 or 128 bits, in lanes that fit
        let vector = matches!(f, 3 | 4) && e <= 3;
        match u.op {
            V_MOVI if f <= 4 => {
                let imm = u.imm;
                let (lo, hi) = if f >= 4 {
                    (imm, imm)
                } else {
                    (imm & lane_max(f), 0)
                };
                let lo = self.b.ins().iconst(I64, lo as i64);
                let hi = self.b.ins().iconst(I64, hi as i64);
                self.set_v(u.a, lo, Some(hi));
            }
            V_DUP_ELEM | V_DUP_GEN if e <= 3 && f <= 4 && f >= e => {
                let x = if u.op == V_DUP_ELEM {
                    self.element(u.b, e, u.imm)
                } else {
                    let x = self.rd(u.b);
                    self.b.ins().band_imm_s(x, lane_max(e) as i64)
                };
                let all = self.b.ins().imul_imm_s(x, rep(1, e) as i64);
                let lo = self.mask_to(all, f);
                let hi = if f >= 4 { Some(all) } else { None };
                self.set_v(u.a, lo, hi);
            }
            V_UMOV if e <= 3 => {
                let x = self.element(u.b, e, u.imm);
                self.wr(u.a, x);
            }
            V_SMOV if e <= 2 => {
                let x = self.element(u.b, e, u.imm);
                let ty = [I8, I16, I32][e as usize];
                let n = self.b.ins().ireduce(ty, x);
                let v = if f == 1 {
                    self.b.ins().sextend(I64, n)
                } else {
                    let w = self.b.ins().sextend(I32, n);
                    self.b.ins().uextend(I64, w)
                };
                self.wr(u.a, v);
            }
            V_INS_GEN if e <= 3 => {
                let x = self.rd(u.b);
                self.set_element(u.a, e, u.imm, x);
            }
            V_INS_ELEM if e <= 3 => {
                let x = self.element(u.b, e, u.d as u64);
                self.set_element(u.a, e, u.imm, x);
            }
            V_ADD | V_SUB | V_CMEQ if vector && u.imm & BY_ELEM == 0 => {
                let op = u.op;
                self.lanes(u, true, |tx, x, y| match op {
                    V_ADD => tx.add_lanes(x, y, e),
                    V_SUB => tx.sub_lanes(x, y, e),
                    _ => {
                        let t = tx.b.ins().bxor(x, y);
                        tx.zero_lanes(t, e)
                    }
                });
            }
            V_CMP0 if vector && u.d == cmp0::EQ => {
                self.lanes(u, false, |tx, x, _| tx.zero_lanes(x, e));
            }
            V_AND | V_BIC | V_ORR | V_ORN | V_EOR | V_BSL | V_BIT | V_BIF | V_NOT
                if matches!(f, 3 | 4) =>
            {
                let op = u.op;
                let a = u.a;
                let halves = if f == 4 { 2 } else { 1 };
                let mut out = [None, None];
                for (h, o) in out.iter_mut().enumerate().take(halves) {
                    let off = Self::v_off(a) + 8 * h as i32;
                    let n = self.load_v(u.b, h);
                    let r = if op == V_NOT {
                        self.b.ins().bnot(n)
                    } else {
                        let m = self.load_v(u.c, h);
                        let ins = self.b.ins();
                        match op {
                            V_AND => ins.band(n, m),
                            V_BIC => ins.band_not(n, m),
                            V_ORR => ins.bor(n, m),
                            V_ORN => ins.bor_not(n, m),
                            V_EOR => ins.bxor(n, m),
                            _ => {
                                let old = self.load_state(off);
                                // select bits: BSL by Vd, BIT by Vm (n where set), BIF by Vm
                                // (n where clear)
                                let (sel, t, f) = match op {
                                    V_BSL => (old, n, m),
                                    V_BIT => (m, n, old),
                                    _ => (m, old, n),
                                };
                                self.b.ins().bitselect(sel, t, f)
                            }
                        }
                    };
                    *o = Some(r);
                }
                let lo = out[0].expect("the low half");
                self.set_v(a, lo, out[1]);
            }
            F_ABS | F_NEG if matches!(e, 2 | 3) && f >= e && f <= 4 => {
                let sign = rep(1u64 << ((8u32 << e) - 1), e) as i64;
                let op = u.op;
                self.lanes(u, false, |tx, x, _| {
                    if op == F_ABS {
                        tx.b.ins().band_imm_s(x, !sign)
                    } else {
                        tx.b.ins().bxor_imm_s(x, sign)
                    }
                });
            }
            V_SHL | V_SHR if matches!(f, 3 | 4) && e <= 3 && (u.op == V_SHL || u.d & 2 == 0) => {
                self.shift_imm(u)
            }
            V_SHLL if e <= 2 && f <= 1 => self.shift_long(u),
            V_SHRN | V_XTN if e <= 1 && f <= 1 && u.d == 0 => self.narrow(u),
            _ => return false,
        }
        true
    }

    /// SSHLL, USHLL and SHLL (SXTL, UXTL): the lower (`f` 0) or upper (1) half's lanes
    /// widened to twice their size, then shifted left.
    fn shift_long(&mut self, u: &MicroOp) {
        let ty = [I8X16, I16X8, I32X4][u.e as usize];
        let c = self.ctx();
        let x = self.b.ins().load(ty, host_mem(), c, Self::v_off(u.b));
        let ins = self.b.ins();
        let w = match (u.d & 1 != 0, u.f) {
            (false, 0) => ins.swiden_low(x),
            (false, _) => ins.swiden_high(x),
            (true, 0) => ins.uwiden_low(x),
            (true, _) => ins.uwiden_high(x),
        };
        let r = if u.imm != 0 {
            let amount = self.b.ins().iconst(I32, u.imm as i64);
            self.b.ins().ishl(w, amount)
        } else {
            w
        };
        self.b.ins().store(host_mem(), r, c, Self::v_off(u.a));
    }

    /// XTN and SHRN (and their upper-half forms XTN2 and SHRN2): each lane of Vn (16 or 32
    /// bits) shifted right and truncated to half its size, into the lower half of Vd (the
    /// upper half zero) or the upper half (the lower half kept). glibc's memchr, strlen
    /// and friends make their match masks with SHRN once every 16 bytes.
    fn narrow(&mut self, u: &MicroOp) {
        let wide = [I16X8, I32X4][u.e as usize];
        let c = self.ctx();
        let x = self.b.ins().load(wide, host_mem(), c, Self::v_off(u.b));
        let x = if u.op == V_SHRN && u.imm != 0 {
            let amount = self.b.ins().iconst(I32, u.imm as i64);
            self.b.ins().ushr(x, amount)
        } else {
            x
        };
        // truncation is a saturating narrow of the lanes' low halves, which fit
        let low = self.b.ins().iconst(wide.lane_type(), lane_max(u.e) as i64);
        let low = self.b.ins().splat(wide, low);
        let t = self.b.ins().band(x, low);
        let n = self.b.ins().unarrow(t, t);
        let halves = self.b.ins().bitcast(I64X2, lanes_le(), n);
        let r = self.b.ins().extractlane(halves, 0);
        self.set_narrowed(u.a, r, u.f);
    }

    /// SHL, SSHR, USHR, SSRA and USRA by an immediate (vector and scalar; not the rounding
    /// forms), as host SIMD shifts on the lanes of the whole register (the upper half of
    /// a 64-bit result then zero). A right shift by the lane's width (USHR: zero; SSHR: the
    /// sign) is spelled out, since host shifts take their amount modulo the width.
    fn shift_imm(&mut self, u: &MicroOp) {
        let ty = [I8X16, I16X8, I32X4, I64X2][u.e as usize];
        let width = 8u64 << u.e;
        let c = self.ctx();
        let x = self.b.ins().load(ty, host_mem(), c, Self::v_off(u.b));
        let sh = u.imm.min(width - 1);
        let amount = self.b.ins().iconst(I32, sh as i64);
        let r = if u.op == V_SHL {
            self.b.ins().ishl(x, amount)
        } else if u.d & 1 == 0 {
            self.b.ins().sshr(x, amount)
        } else if u.imm >= width {
            self.b.ins().bxor(x, x)
        } else {
            self.b.ins().ushr(x, amount)
        };
        let off = Self::v_off(u.a);
        let r = if u.op == V_SHR && u.d & 4 != 0 {
            let old = self.b.ins().load(ty, host_mem(), c, off);
            self.b.ins().iadd(old, r)
        } else {
            r
        };
        self.set_lanes(u.a, r, u.f);
    }

    /// Half `h` (0: bits 63..0, 1: 127..64) of vector register `r`.
    fn load_v(&mut self, r: u8, h: usize) -> Value {
        self.load_state(Self::v_off(r) + 8 * h as i32)
    }

    /// Vd = op(Vn half, Vm half) (Vm when `two`, else Vn again) on each operated half
    /// (`u.f` 3: the low one, the rest of Vd zero; 2 or less: the low 2^f bytes of it; 4:
    /// both).
    fn lanes(
        &mut self,
        u: &MicroOp,
        two: bool,
        mut op: impl FnMut(&mut Self, Value, Value) -> Value,
    ) {
        let halves = if u.f >= 4 { 2 } else { 1 };
        let mut out = [None, None];
        for (h, o) in out.iter_mut().enumerate().take(halves) {
            let x = self.load_v(u.b, h);
            let y = if two { self.load_v(u.c, h) } else { x };
            *o = Some(op(self, x, y));
        }
        let lo = out[0].expect("the low half");
        let lo = self.mask_to(lo, u.f);
        self.set_v(u.a, lo, out[1]);
    }

    /// `v` with only its low 2^f bytes (f >= 3: all 8).
    fn mask_to(&mut self, v: Value, f: u8) -> Value {
        if f >= 3 {
            v
        } else {
            self.b.ins().band_imm_s(v, lane_max(f) as i64)
        }
    }

    /// Where element `i` of 2^e bytes of vector register `r` is in the state (the index
    /// wraps within the register, as the interpreter's shift does for the decoder's
    /// in-range indices).
    fn element_off(r: u8, e: u8, i: u64) -> i32 {
        Self::v_off(r) + ((i << e) & 15) as i32
    }

    /// Element `i` of 2^e bytes of vector register `r`, zero-extended to i64.
    pub(crate) fn element(&mut self, r: u8, e: u8, i: u64) -> Value {
        let off = Self::element_off(r, e, i);
        let c = self.ctx();
        let m = host_mem();
        let ins = self.b.ins();
        match e {
            0 => ins.uload8(I64, m, c, off),
            1 => ins.uload16(I64, m, c, off),
            2 => ins.uload32(m, c, off),
            _ => ins.load(I64, m, c, off),
        }
    }

    /// Sets element `i` of 2^e bytes of vector register `r` to the low bits of `x` (the
    /// rest of the register as it was).
    pub(crate) fn set_element(&mut self, r: u8, e: u8, i: u64, x: Value) {
        let off = Self::element_off(r, e, i);
        let c = self.ctx();
        let m = host_mem();
        let ins = self.b.ins();
        match e {
            0 => ins.istore8(m, x, c, off),
            1 => ins.istore16(m, x, c, off),
            2 => ins.istore32(m, x, c, off),
            _ => ins.store(m, x, c, off),
        };
    }

    /// x + y in each lane of 2^e bytes: the sum of the low bits of each lane, with the top
    /// bit added in by xor (so no carry crosses into the next lane).
    fn add_lanes(&mut self, x: Value, y: Value, e: u8) -> Value {
        if e >= 3 {
            return self.b.ins().iadd(x, y);
        }
        let h = high_bits(e) as i64;
        let ins = self.b.ins();
        let xl = ins.band_imm_s(x, !h);
        let yl = self.b.ins().band_imm_s(y, !h);
        let s = self.b.ins().iadd(xl, yl);
        let t = self.b.ins().bxor(x, y);
        let t = self.b.ins().band_imm_s(t, h);
        self.b.ins().bxor(s, t)
    }

    /// x - y in each lane of 2^e bytes: each lane's top bit set in x first, so no borrow
    /// crosses into the next lane, and the top bit worked out by xor.
    fn sub_lanes(&mut self, x: Value, y: Value, e: u8) -> Value {
        if e >= 3 {
            return self.b.ins().isub(x, y);
        }
        let h = high_bits(e) as i64;
        let xh = self.b.ins().bor_imm_s(x, h);
        let yl = self.b.ins().band_imm_s(y, !h);
        let d = self.b.ins().isub(xh, yl);
        // top bit of x - y is x ^ y ^ borrow-in, and the subtraction above made
        // (1 ^ borrow-in) there: flip by !(x ^ y)
        let t = self.b.ins().bxor(x, y);
        let t = self.b.ins().bnot(t);
        let t = self.b.ins().band_imm_s(t, h);
        self.b.ins().bxor(d, t)
    }

    /// All ones in each lane of 2^e bytes of `t` that is zero, zeros elsewhere.
    fn zero_lanes(&mut self, t: Value, e: u8) -> Value {
        if e >= 3 {
            let z = self.b.ins().icmp_imm_u(IntCC::Equal, t, 0);
            let z = self.b.ins().uextend(I64, z);
            return self.b.ins().ineg(z);
        }
        let h = high_bits(e) as i64;
        // a lane's top bit: set when its low bits are not all zero (their sum with the
        // low bits' maximum carries into it, and stays in the lane), or its own top bit is
        let low = self.b.ins().band_imm_s(t, !h);
        let s = self.b.ins().iadd_imm_s(low, !h);
        let nz = self.b.ins().bor(s, t);
        let z = self.b.ins().band_imm_s(nz, h);
        let z = self.b.ins().bxor_imm_s(z, h);
        // a 1 at the bottom of each zero lane, times the lane's all-ones value
        let one = self.b.ins().ushr_imm_s(z, ((8u32 << e) - 1) as i64);
        self.b.ins().imul_imm_s(one, lane_max(e) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_constants() {
        assert_eq!(rep(0xab, 0), 0xabab_abab_abab_abab);
        assert_eq!(rep(0x1234, 1), 0x1234_1234_1234_1234);
        assert_eq!(high_bits(0), 0x8080_8080_8080_8080);
        assert_eq!(high_bits(2), 0x8000_0000_8000_0000);
        assert_eq!(lane_max(1), 0xffff);
        assert_eq!(lane_max(3), u64::MAX);
    }
}
