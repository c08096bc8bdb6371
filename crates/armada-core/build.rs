//! Generates the interpreter's cases for the micro-ops armada-semantics defines
//! (`cpu/defined.rs` includes them).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("defined.rs"), armada_semantics::text::rust_match()).unwrap();
}
