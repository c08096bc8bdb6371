//! The CPU engine's fused pairs and specialized micro-ops.
//!
//! A flag-setting compare followed by B.cond is the most common pair in compiled loops.
//! After decoding a page, the CPU engine rewrites the compare's slot to a fused operation
//! that also runs the B.cond in the next slot, saving one dispatch. The B.cond slot keeps its
//! own micro-op, so a branch straight to it still works and the one-micro-op-per-instruction
//! mapping is intact. The pairs' numbers are shared with the CUDA engine
//! (`armada_isa::fused`); the specialized forms below are this engine's alone, in its private
//! copy of decoded code.

pub use armada_isa::fused::{
    with_branch, ADDS_IMM_W_BCOND, ADDS_IMM_X_BCOND, SUBS_SR_W_BCOND, SUBS_SR_X_BCOND,
};
use armada_isa::{fused::FUSED_END, ops, MicroOp};

/// First private number: after the shared fused pairs, below the FP/SIMD range.
const BASE: u16 = FUSED_END;
const _: () = assert!(BASE + 3 <= ops::FP_BASE);

/// `x[a] = (x[b] << e) >> f`, logical: UBFM (UBFX, UBFIZ, LSL, LSR, UXTB...) of W or X.
pub const SHIFT_PAIR_U: u16 = BASE;
/// `x[a] = (x[b] << e) >> f`, arithmetic: SBFM of X (SBFX, SBFIZ, ASR, SXTB...).
pub const SHIFT_PAIR_S_X: u16 = BASE + 1;
/// The same for W, the result cut to 32 bits.
pub const SHIFT_PAIR_S_W: u16 = BASE + 2;

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
