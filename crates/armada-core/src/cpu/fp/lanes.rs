//! Element access on 128-bit vector registers, and the integer element operations.

/// Mask of an element of 2^e bytes (e <= 3).
#[inline(always)]
pub(super) fn mask(e: u8) -> u64 {
    if e >= 3 {
        u64::MAX
    } else {
        (1u64 << (8u32 << e)) - 1
    }
}

/// Bits in an element.
#[inline(always)]
pub(super) fn bits(e: u8) -> u32 {
    8u32 << e
}

/// Element `i` of size 2^e bytes.
#[inline(always)]
pub(super) fn get(v: u128, e: u8, i: usize) -> u64 {
    ((v >> (i as u32 * bits(e))) as u64) & mask(e)
}

/// Sets element `i` of size 2^e bytes.
#[inline(always)]
pub(super) fn set(v: &mut u128, e: u8, i: usize, x: u64) {
    let sh = i as u32 * bits(e);
    let m = (mask(e) as u128) << sh;
    *v = (*v & !m) | (((x & mask(e)) as u128) << sh);
}

/// Mask of the low 2^f bytes of a register.
#[inline(always)]
pub(super) fn datamask(f: u8) -> u128 {
    if f >= 4 {
        u128::MAX
    } else {
        (1u128 << (8u32 << f)) - 1
    }
}

/// Sign-extends an element.
#[inline(always)]
pub(super) fn sx(x: u64, e: u8) -> i64 {
    let sh = 64 - bits(e);
    ((x << sh) as i64) >> sh
}

/// An element as a signed or unsigned wide integer.
#[inline(always)]
pub(super) fn int(x: u64, e: u8, unsigned: bool) -> i128 {
    if unsigned {
        (x & mask(e)) as i128
    } else {
        sx(x, e) as i128
    }
}

/// Element `x` in every lane of a register.
pub(super) fn broadcast(x: u64, e: u8) -> u128 {
    let mut r = 0u128;
    for i in 0..(16usize >> e) {
        set(&mut r, e, i, x);
    }
    r
}

/// Carry-less product of two 64-bit values.
pub(super) fn clmul(a: u64, b: u64) -> u128 {
    let mut r = 0u128;
    for i in 0..64 {
        if (b >> i) & 1 != 0 {
            r ^= (a as u128) << i;
        }
    }
    r
}

/// Bytes of a register and back.
#[inline]
pub(super) fn bytes(v: u128) -> [u8; 16] {
    v.to_le_bytes()
}

#[inline]
pub(super) fn from_bytes(b: [u8; 16]) -> u128 {
    u128::from_le_bytes(b)
}
