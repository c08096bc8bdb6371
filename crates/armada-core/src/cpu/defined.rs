//! The micro-ops armada-semantics defines, as the interpreter runs them: arms of the loop's
//! `match`, generated at build time from the definitions (build.rs), so this engine, the
//! Cranelift tier, the CUDA kernel and the shader run one meaning.

include!(concat!(env!("OUT_DIR"), "/defined.rs"));
