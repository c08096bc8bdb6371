//! AdvSIMD integer ops inline as host SIMD on Cranelift's vector types: the compares and
//! MAX/MIN, the pairwise and across-lanes ops (ADDP, UMAXP, ADDV, UMAXV, ...), the high
//! halves of sums (ADDHN, SUBHN and their rounding forms) and MUL, MLA and MLS. glibc's
//! string functions reduce their match masks with UMAXP or ADDP once every 16 bytes, and
//! vectorized loops compare, select and accumulate with the rest.
//!
//! Shapes are the interpreter's (`cpu::fp::exec_fp`): `e` the lane size, `f` 4 for 128
//! bits and 3 for 64 (the upper half of the result zero). A 64-bit operand is loaded as its
//! low half in both halves (`vec_operand`), so an element-wise op needs no mask. Lanes of
//! 64 bits are left to the FP helper but for the adds: the host has no 64-bit lane
//! max/min, nor unsigned compare, without AVX-512.

use crate::translate::{host_mem, Tx};
use crate::vecfp::lanes_le;
use armada_isa::ops::*;
use armada_isa::MicroOp;
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{I16X8, I32X4, I64, I64X2, I8X16},
    ConstantData, InstBuilder, Type, Value,
};

/// The host vector type of lanes of 2^e bytes.
const LANES: [Type; 4] = [I8X16, I16X8, I32X4, I64X2];

impl Tx<'_> {
    /// Translates `u` if it is one of this module's ops in a shape it takes; false leaves
    /// it to the caller.
    pub(crate) fn vec_int(&mut self, u: &MicroOp) -> bool {
        let (e, f, d) = (u.e, u.f, u.d);
        // element-wise over a whole 64- or 128-bit register (the scalar D forms are f 3)
        let whole = matches!(f, 3 | 4) && u.imm & BY_ELEM == 0;
        match u.op {
            V_CMGT | V_CMGE | V_CMHI | V_CMHS | V_CMTST | V_MAX | V_MIN if whole && e <= 2 => {
                self.element_wise(u)
            }
            V_CMP0 if whole && e <= 2 && d <= cmp0::LT => self.element_wise(u),
            V_ADDP | V_MAXP | V_MINP if matches!(f, 3 | 4) && (e <= 2 || u.op == V_ADDP) => {
                self.pairwise(u)
            }
            V_ADDV | V_MAXV | V_MINV
                if matches!(f, 3 | 4) && e < f && (e <= 2 || u.op == V_ADDV) =>
            {
                self.across(u)
            }
            V_ADDHN | V_SUBHN if e <= 2 && f <= 1 => self.add_high_narrow(u),
            V_MUL | V_MLA | V_MLS if matches!(f, 3 | 4) && matches!(e, 1 | 2) => self.mul_lanes(u),
            _ => return false,
        }
        true
    }

    /// A 16-byte shuffle mask as an immediate of this function.
    fn shuffle_mask(&mut self, bytes: [u8; 16]) -> cranelift_codegen::ir::Immediate {
        self.b
            .func
            .dfg
            .immediates
            .push(ConstantData::from(&bytes[..]))
    }

    /// `x` (any 128-bit type) as lanes of type `ty`.
    fn as_lanes(&mut self, ty: Type, x: Value) -> Value {
        if self.b.func.dfg.value_type(x) == ty {
            x
        } else {
            self.b.ins().bitcast(ty, lanes_le(), x)
        }
    }

    /// The compares (to all ones or zero in each lane) and MAX/MIN.
    fn element_wise(&mut self, u: &MicroOp) {
        let ty = LANES[u.e as usize];
        let n = self.vec_operand(u.b, ty, u.f);
        let r = if u.op == V_CMP0 {
            let zero = self.b.ins().iconst(ty.lane_type(), 0);
            let zero = self.b.ins().splat(ty, zero);
            let cc = match u.d {
                cmp0::EQ => IntCC::Equal,
                cmp0::GE => IntCC::SignedGreaterThanOrEqual,
                cmp0::GT => IntCC::SignedGreaterThan,
                cmp0::LE => IntCC::SignedLessThanOrEqual,
                _ => IntCC::SignedLessThan,
            };
            self.b.ins().icmp(cc, n, zero)
        } else {
            let m = self.vec_operand(u.c, ty, u.f);
            let unsigned = u.d & 1 != 0;
            let ins = self.b.ins();
            match u.op {
                V_CMGT => ins.icmp(IntCC::SignedGreaterThan, n, m),
                V_CMGE => ins.icmp(IntCC::SignedGreaterThanOrEqual, n, m),
                V_CMHI => ins.icmp(IntCC::UnsignedGreaterThan, n, m),
                V_CMHS => ins.icmp(IntCC::UnsignedGreaterThanOrEqual, n, m),
                V_CMTST => {
                    let t = ins.band(n, m);
                    let zero = self.b.ins().iconst(ty.lane_type(), 0);
                    let zero = self.b.ins().splat(ty, zero);
                    self.b.ins().icmp(IntCC::NotEqual, t, zero)
                }
                V_MAX if unsigned => ins.umax(n, m),
                V_MAX => ins.smax(n, m),
                V_MIN if unsigned => ins.umin(n, m),
                _ => ins.smin(n, m),
            }
        };
        self.set_lanes(u.a, r, u.f);
    }

    /// One step of a pairwise op or an across-lanes reduction, `u`'s (ADDP, SMAXP ...; ADDV,
    /// SMAXV ...): their meaning is armada-semantics' ADD, MAX and MIN element functions, field
    /// d's bit 0 unsigned; these are the host's vector instructions for them.
    fn reduce_step(&mut self, u: &MicroOp, x: Value, y: Value) -> Value {
        let ins = self.b.ins();
        match (u.op, u.d & 1) {
            (V_ADDP | V_ADDV, _) => ins.iadd(x, y),
            (V_MAXP | V_MAXV, 0) => ins.smax(x, y),
            (V_MAXP | V_MAXV, _) => ins.umax(x, y),
            (V_MINP | V_MINV, 0) => ins.smin(x, y),
            _ => ins.umin(x, y),
        }
    }
    /// ADDP, SMAXP, SMINP, UMAXP and UMINP (vector): lane j of the result is `op` of
    /// lanes 2j and 2j+1 of the concatenation of Vn (low) and Vm (high), of the whole
    /// registers (`f` 4) or of their low halves (`f` 3). Two byte shuffles gather the
    /// even and the odd lanes.
    fn pairwise(&mut self, u: &MicroOp) {
        let ty = LANES[u.e as usize];
        let c = self.ctx();
        let n = self.b.ins().load(I8X16, host_mem(), c, Self::v_off(u.b));
        let m = self.b.ins().load(I8X16, host_mem(), c, Self::v_off(u.c));
        let eb = 1usize << u.e;
        let half = (1usize << u.f) / 2;
        // byte k of the concatenation, as a shuffle index (Vn's bytes 0..15, Vm's 16..31):
        // Vm's part starts at byte `2 * half` of the concatenation
        let at = |k: usize| if k < 2 * half { k } else { 16 + k - 2 * half };
        let mut even = [0u8; 16];
        let mut odd = [0u8; 16];
        for (i, (ev, od)) in even.iter_mut().zip(odd.iter_mut()).enumerate() {
            let (j, b) = (i / eb, i % eb);
            // the upper half of a 64-bit result is zeroed after: any lane will do there
            let j = if 2 * j * eb >= 4 * half { 0 } else { j };
            *ev = at(2 * j * eb + b) as u8;
            *od = at((2 * j + 1) * eb + b) as u8;
        }
        let (ev, od) = (self.shuffle_mask(even), self.shuffle_mask(odd));
        let x = self.b.ins().shuffle(n, m, ev);
        let y = self.b.ins().shuffle(n, m, od);
        let x = self.as_lanes(ty, x);
        let y = self.as_lanes(ty, y);
        let r = self.reduce_step(u, x, y);
        self.set_lanes(u.a, r, u.f);
    }

    /// ADDV, SMAXV, SMINV, UMAXV and UMINV, and ADDP (scalar): `op` over the lanes of the
    /// low 2^f bytes of Vn, into lane 0 of Vd (the rest zero). Each step folds the upper
    /// half of the lanes left onto the lower half, so 16 lanes take four.
    fn across(&mut self, u: &MicroOp) {
        let ty = LANES[u.e as usize];
        let c = self.ctx();
        let mut x = self.b.ins().load(ty, host_mem(), c, Self::v_off(u.b));
        let mut width = (1usize << u.f) / 2;
        while width >= 1 << u.e {
            let mut down = [0u8; 16];
            for (i, b) in down.iter_mut().enumerate() {
                *b = ((i + width) & 15) as u8;
            }
            let mask = self.shuffle_mask(down);
            let bytes = self.as_lanes(I8X16, x);
            let y = self.b.ins().shuffle(bytes, bytes, mask);
            let y = self.as_lanes(ty, y);
            x = self.reduce_step(u, x, y);
            width /= 2;
        }
        let lane = self.b.ins().extractlane(x, 0);
        let lane = if ty == I64X2 {
            lane
        } else {
            self.b.ins().uextend(I64, lane)
        };
        self.set_v(u.a, lane, None);
    }

    /// ADDHN, SUBHN, RADDHN and RSUBHN (and their upper-half forms): the high half of
    /// each sum or difference of Vn's and Vm's lanes (twice the result's size), into the
    /// lower half of Vd (the upper half zero) or its upper half (the lower kept).
    fn add_high_narrow(&mut self, u: &MicroOp) {
        let wide = LANES[u.e as usize + 1];
        let c = self.ctx();
        let n = self.b.ins().load(wide, host_mem(), c, Self::v_off(u.b));
        let m = self.b.ins().load(wide, host_mem(), c, Self::v_off(u.c));
        let s = if u.op == V_ADDHN {
            self.b.ins().iadd(n, m)
        } else {
            self.b.ins().isub(n, m)
        };
        let bits = 8i64 << u.e;
        let s = if u.d & 1 != 0 {
            let r = self.b.ins().iconst(wide.lane_type(), 1 << (bits - 1));
            let r = self.b.ins().splat(wide, r);
            self.b.ins().iadd(s, r)
        } else {
            s
        };
        // the high half of each lane: its upper bytes, gathered into the low 8
        let hb = 1usize << u.e;
        let mut high = [0u8; 16];
        for (k, b) in high.iter_mut().enumerate() {
            let (i, j) = ((k % 8) / hb, k % hb);
            *b = (2 * i * hb + hb + j) as u8;
        }
        let mask = self.shuffle_mask(high);
        let bytes = self.as_lanes(I8X16, s);
        let h = self.b.ins().shuffle(bytes, bytes, mask);
        let halves = self.as_lanes(I64X2, h);
        let r = self.b.ins().extractlane(halves, 0);
        self.set_narrowed(u.a, r, u.f);
    }

    /// Sets the lower half of vector register `a` to `r` and its upper half to zero (`part`
    /// 0), or its upper half to `r` keeping the lower (1): where the narrowing ops put
    /// their 64 bits.
    pub(crate) fn set_narrowed(&mut self, a: u8, r: Value, part: u8) {
        let off = Self::v_off(a);
        if part == 0 {
            self.store_state(r, off);
            let zero = self.b.ins().iconst(I64, 0);
            self.store_state(zero, off + 8);
        } else {
            self.store_state(r, off + 8);
        }
    }

    /// MUL, MLA and MLS (vector, and by element) on 16- and 32-bit lanes: the low half of
    /// each product, added to or taken from Vd's lane for MLA and MLS.
    fn mul_lanes(&mut self, u: &MicroOp) {
        let ty = LANES[u.e as usize];
        let n = self.vec_operand(u.b, ty, u.f);
        let m = self.second_operand(u, ty);
        let p = self.b.ins().imul(n, m);
        let r = if u.op == V_MUL {
            p
        } else {
            let acc = self.vec_operand(u.a, ty, u.f);
            if u.op == V_MLA {
                self.b.ins().iadd(acc, p)
            } else {
                self.b.ins().isub(acc, p)
            }
        };
        self.set_lanes(u.a, r, u.f);
    }
}

/// The structure loads inline: LD1 of one to four whole registers. They make the
/// interpreter's accesses (`cpu::fp::ldst`): one register's bytes after another, from the
/// base up, so reading each register's 8 or 16 bytes at once faults at the same first
/// address; every register is written after the last read.
impl Tx<'_> {
    pub(crate) fn load_multiple(&mut self, slot: usize, u: &MicroOp) -> bool {
        let (selem, rpt) = (u.d & 7, (u.d >> 3) & 7);
        if u.op != V_LD_MULTI || selem != 1 || !(1..=4).contains(&rpt) || !matches!(u.f, 3 | 4) {
            return false;
        }
        // as `access` does
        self.flush_at_access();
        if self.long {
            self.load_regs(None);
        }
        let base = self.rd(u.b);
        let size = 1i64 << u.f;
        let mut vals = Vec::with_capacity(rpt as usize);
        for r in 0..rpt as i64 {
            let addr = self.b.ins().iadd_imm_s(base, r * size);
            vals.push(self.read(slot, addr, size));
        }
        if u.d & LDST_WB != 0 {
            let off = self.rd(u.c);
            let off = self.b.ins().iadd_imm_s(off, u.imm as i64);
            let next = self.b.ins().iadd(base, off);
            self.wr(u.b, next);
        }
        for (k, (lo, hi)) in vals.into_iter().enumerate() {
            self.set_v((u.a + k as u8) % 32, lo, hi);
        }
        true
    }
}
