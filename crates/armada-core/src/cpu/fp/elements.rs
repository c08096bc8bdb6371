//! The SIMD element functions armada-semantics defines, as the interpreter runs them: arms of
//! `exec_fp`'s `match`, generated at build time from the definitions (build.rs), so this
//! engine, the CUDA kernel and the shader run one meaning.

include!(concat!(env!("OUT_DIR"), "/elements.rs"));
