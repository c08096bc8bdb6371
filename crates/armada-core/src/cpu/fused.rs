//! CPU-engine-only fused micro-ops.
//!
//! A flag-setting compare followed by B.cond is the most common pair in compiled loops.
//! After decoding a page, the CPU engine rewrites the compare's slot to a fused operation
//! that also runs the B.cond in the next slot, saving one dispatch. The B.cond slot keeps its
//! own micro-op, so a branch straight to it still works and the one-micro-op-per-instruction
//! mapping is intact. These numbers live only in the CPU engine's private copy of decoded
//! code: the shared micro-op format the GPU engines read never contains them.

use armada_isa::ops;

/// First fused number: above every integer micro-op, below the FP/SIMD range.
const BASE: u16 = 0x3f0;
const _: () = assert!(ops::PRFM < BASE && BASE + 4 <= ops::FP_BASE);

pub const ADDS_IMM_W_BCOND: u16 = BASE;
pub const ADDS_IMM_X_BCOND: u16 = BASE + 1;
pub const SUBS_SR_W_BCOND: u16 = BASE + 2;
pub const SUBS_SR_X_BCOND: u16 = BASE + 3;

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
