//! Fused compare-and-branch micro-ops: a flag-setting compare followed by B.cond, run as one
//! dispatch. The decoder never produces them; an engine rewrites the compare's slot after
//! decoding (the CPU engine in its private copy of the code, the CUDA engine's host in the code
//! it uploads), and the B.cond keeps its own slot, so a branch straight to it still works.
//! The numbers sit above every integer micro-op and below the FP/SIMD range; engines may add
//! private forms of their own from `FUSED_END` on.

use crate::ops;

pub const ADDS_IMM_W_BCOND: u16 = 0x3f0;
pub const ADDS_IMM_X_BCOND: u16 = 0x3f1;
pub const SUBS_SR_W_BCOND: u16 = 0x3f2;
pub const SUBS_SR_X_BCOND: u16 = 0x3f3;
/// The first number after the fused pairs.
pub const FUSED_END: u16 = 0x3f4;
const _: () = assert!(ops::PRFM < ADDS_IMM_W_BCOND && FUSED_END <= ops::FP_BASE);

/// The fused form of `op` when a B.cond follows it, if there is one.
pub fn with_branch(op: u16) -> Option<u16> {
    Some(match op {
        ops::ADDS_IMM_W => ADDS_IMM_W_BCOND,
        ops::ADDS_IMM_X => ADDS_IMM_X_BCOND,
        ops::SUBS_SR_W => SUBS_SR_W_BCOND,
        ops::SUBS_SR_X => SUBS_SR_X_BCOND,
        _ => return None,
    })
}
