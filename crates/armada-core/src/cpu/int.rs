//! Integer helpers of the interpreter: flags, shifts, extends, bitfields, sized accesses.

use crate::memory::{AddressSpace, Fault};
use armada_isa::ops::atomic_op;

/// `a + b + carry` on 64 bits, and NZCV (bits 31..28).
#[inline(always)]
pub fn add_with_flags64(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let (r1, c1) = a.overflowing_add(b);
    let (r, c2) = r1.overflowing_add(carry);
    let c = (c1 | c2) as u64;
    let v = ((a ^ r) & (b ^ r)) >> 63;
    let n = r >> 63;
    let z = (r == 0) as u64;
    (r, n << 31 | z << 30 | c << 29 | v << 28)
}

/// `a + b + carry` on 32 bits, and NZCV.
#[inline(always)]
pub fn add_with_flags32(a: u32, b: u32, carry: u32) -> (u32, u64) {
    let (r1, c1) = a.overflowing_add(b);
    let (r, c2) = r1.overflowing_add(carry);
    let c = (c1 | c2) as u64;
    let v = (((a ^ r) & (b ^ r)) >> 31) as u64;
    let n = (r >> 31) as u64;
    let z = (r == 0) as u64;
    (r, n << 31 | z << 30 | c << 29 | v << 28)
}

#[inline(always)]
pub fn logic_flags64(r: u64) -> u64 {
    (r >> 63) << 31 | ((r == 0) as u64) << 30
}

#[inline(always)]
pub fn logic_flags32(r: u32) -> u64 {
    ((r >> 31) as u64) << 31 | ((r == 0) as u64) << 30
}

/// Shift by type (LSL, LSR, ASR, ROR) and amount.
#[inline(always)]
pub(super) fn shift64(v: u64, ty: u8, amount: u8) -> u64 {
    let n = amount as u32 & 63;
    match ty {
        0 => v << n,
        1 => v >> n,
        2 => ((v as i64) >> n) as u64,
        _ => v.rotate_right(n),
    }
}

#[inline(always)]
pub(super) fn shift32(v: u32, ty: u8, amount: u8) -> u32 {
    let n = amount as u32 & 31;
    match ty {
        0 => v << n,
        1 => v >> n,
        2 => ((v as i32) >> n) as u32,
        _ => v.rotate_right(n),
    }
}

/// Extend (UXTB, UXTH, UXTW, UXTX, SXTB, SXTH, SXTW, SXTX) then shift left.
#[inline(always)]
pub(super) fn extend(v: u64, option: u8, shift: u8) -> u64 {
    let e = match option & 7 {
        0 => v as u8 as u64,
        1 => v as u16 as u64,
        2 => v as u32 as u64,
        3 => v,
        4 => v as i8 as u64,
        5 => v as i16 as u64,
        6 => v as i32 as u64,
        _ => v,
    };
    e << (shift & 7)
}

#[inline(always)]
fn ones(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[inline(always)]
fn sext(v: u64, width: u32) -> u64 {
    if width >= 64 {
        v
    } else {
        (((v << (64 - width)) as i64) >> (64 - width)) as u64
    }
}

#[inline(always)]
pub(super) fn size_mask(log2: u8) -> u64 {
    ones(8 << log2)
}

#[inline(always)]
pub(super) fn load_sized(mem: &mut AddressSpace, addr: u64, log2: u8) -> Result<u64, Fault> {
    Ok(match log2 {
        0 => mem.read_u8(addr)? as u64,
        1 => mem.read_u16(addr)? as u64,
        2 => mem.read_u32(addr)? as u64,
        _ => mem.read_u64(addr)?,
    })
}

#[inline(always)]
pub(super) fn store_sized(
    mem: &mut AddressSpace,
    addr: u64,
    log2: u8,
    v: u64,
) -> Result<(), Fault> {
    match log2 {
        0 => mem.write_u8(addr, v as u8),
        1 => mem.write_u16(addr, v as u16),
        2 => mem.write_u32(addr, v as u32),
        _ => mem.write_u64(addr, v),
    }
}

/// The value an LSE read-modify-write stores, given the old memory value and the operand.
pub(super) fn atomic_apply(op: u8, log2: u8, old: u64, operand: u64) -> u64 {
    let bits = 8u32 << log2;
    let mask = ones(bits);
    let (o, v) = (old & mask, operand & mask);
    let (so, sv) = (sext(o, bits) as i64, sext(v, bits) as i64);
    let r = match op {
        atomic_op::ADD => o.wrapping_add(v),
        atomic_op::CLR => o & !v,
        atomic_op::EOR => o ^ v,
        atomic_op::SET => o | v,
        atomic_op::SMAX => so.max(sv) as u64,
        atomic_op::SMIN => so.min(sv) as u64,
        atomic_op::UMAX => o.max(v),
        atomic_op::UMIN => o.min(v),
        _ => v, // SWP
    };
    r & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        // cmp 0, 1 -> N, borrow (C=0)
        let (_, f) = add_with_flags64(0, !1, 1);
        assert_eq!(f >> 28, 0b1000);
        // cmp 5, 5 -> Z, C
        let (_, f) = add_with_flags64(5, !5, 1);
        assert_eq!(f >> 28, 0b0110);
        // 0x7fffffff + 1 (32-bit) -> N, V
        let (_, f) = add_with_flags32(0x7fff_ffff, 1, 0);
        assert_eq!(f >> 28, 0b1001);
    }
}
