//! CPU-engine-only micro-ops: fused pairs and specialized forms.
//!
//! A flag-setting compare followed by B.cond is the most common pair in compiled loops.
//! After decoding a page, the CPU engine rewrites the compare's slot to a fused operation
//! that also runs the B.cond in the next slot, saving one dispatch. The B.cond slot keeps its
//! own micro-op, so a branch straight to it still works and the one-micro-op-per-instruction
//! mapping is intact. These numbers live only in the CPU engine's private copy of decoded
//! code: the shared micro-op format the GPU engines read never contains them.

use armada_isa::{ops, MicroOp};

/// First private number: above every integer micro-op, below the FP/SIMD range.
const BASE: u16 = 0x3f0;
const _: () = assert!(ops::PRFM < BASE && BASE + 7 <= ops::FP_BASE);

pub const ADDS_IMM_W_BCOND: u16 = BASE;
pub const ADDS_IMM_X_BCOND: u16 = BASE + 1;
pub const SUBS_SR_W_BCOND: u16 = BASE + 2;
pub const SUBS_SR_X_BCOND: u16 = BASE + 3;
/// `x[a] = (x[b] << e) >> f`, logical: UBFM (UBFX, UBFIZ, LSL, LSR, UXTB...) of W or X.
pub const SHIFT_PAIR_U: u16 = BASE + 4;
/// `x[a] = (x[b] << e) >> f`, arithmetic: SBFM of X (SBFX, SBFIZ, ASR, SXTB...).
pub const SHIFT_PAIR_S_X: u16 = BASE + 5;
/// The same for W, the result cut to 32 bits.
pub const SHIFT_PAIR_S_W: u16 = BASE + 6;

/// UBFM/SBFM as one left and one right shift of the 64-bit register, which is all a
/// bitfield extract or insert is once immr/imms are known. W forms read only the low 32
/// bits: the left shift (at least 32 there) pushes the upper half out.
pub fn bitfield(u: &MicroOp) -> Option<MicroOp> {
    let (r, s) = (u.e as u32, u.f as u32);
    let wide = matches!(u.op, ops::UBFM_X | ops::SBFM_X);
    let op = match u.op {
        ops::UBFM_X | ops::UBFM_W => SHIFT_PAIR_U,
        ops::SBFM_X => SHIFT_PAIR_S_X,
        ops::SBFM_W => SHIFT_PAIR_S_W,
        _ => return None,
    };
    let left = 63 - s;
    let right = if s >= r {
        63 - s + r
    } else if wide {
        r - s - 1
    } else {
        31 - s + r
    };
    Some(MicroOp {
        op,
        e: left as u8,
        f: right as u8,
        ..*u
    })
}

/// The fused form of `op` when it is followed by B.cond, if there is one.
pub fn with_branch(op: u16) -> Option<u16> {
    Some(match op {
        ops::ADDS_IMM_W => ADDS_IMM_W_BCOND,
        ops::ADDS_IMM_X => ADDS_IMM_X_BCOND,
        ops::SUBS_SR_W => SUBS_SR_W_BCOND,
        ops::SUBS_SR_X => SUBS_SR_X_BCOND,
        _ => return None,
    })
}
