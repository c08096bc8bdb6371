//! Generates the interpreter's cases for the micro-ops armada-semantics defines
//! (`cpu/defined.rs` includes them).

use armada_isa::ops;

/// Defined ops whose arms leave the loop's function for a cold one: UBFM and SBFM, which the
/// engine rewrites into shift pairs when it decodes a page (`cpu/fused.rs`), so the loop meets
/// them only where that rewrite is not made. Outlined, crc32 (which runs none of them) ran
/// 2.45 s on the interpreter against 2.88 s inline (docs/performance.md).
const OUTLINED: &[u16] = &[ops::UBFM_W, ops::UBFM_X, ops::SBFM_W, ops::SBFM_X];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(
        out.join("defined.rs"),
        armada_semantics::text::rust_match(OUTLINED),
    )
    .unwrap();
    std::fs::write(
        out.join("elements.rs"),
        armada_semantics::text::rust_elements(),
    )
    .unwrap();
}
