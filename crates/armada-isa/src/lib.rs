//! armada-isa: the AArch64 encoding table, the decoder, and the micro-op format that every
//! armada engine (CPU, CUDA, wgpu) executes.

pub mod decode;
pub mod fused;
pub mod ops;
mod ops_fp;
pub mod uop;

pub use decode::{decode, decode_named};
pub use uop::MicroOp;
