//! A defined op (or SIMD or FP element function) has no hand-written arm left in an engine: in the interpreter's and the
//! Cranelift tier's Rust a hand arm would win over the definition without a word (the CUDA
//! and WGSL compilers reject a second `case` themselves). The quick tier's x86-64 templates
//! are hand lowerings on purpose (docs/semantics.md).

use std::path::Path;

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
}

#[test]
fn no_engine_handles_a_defined_op_by_hand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = [
        "armada-core/src/cpu/mod.rs",
        "armada-core/src/cpu/fp.rs",
        "armada-jit/src/alu.rs",
        "armada-cuda/src/kernel/interp.cu",
        "armada-cuda/src/kernel/simd.cu",
        "armada-wgpu/src/shader/armada.wgsl",
        "armada-wgpu/src/shader/simd.wgsl",
        "armada-wgpu/src/shader/fp.wgsl",
    ];
    let names: Vec<&str> = armada_semantics::definitions()
        .iter()
        .map(|d| d.name())
        .chain(
            armada_semantics::element_definitions()
                .iter()
                .map(|d| d.name()),
        )
        .chain(armada_semantics::fp_definitions().iter().map(|d| d.name()))
        .collect();
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(root.join(f)).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            // a match arm's pattern (Rust) or a case (C, WGSL) naming the op
            let pattern: String = if code.contains("case ") {
                // each `case LABELS:` (C) or `case LABELS: {` (WGSL) on the line
                code.split("case ")
                    .skip(1)
                    .map(|c| c.split([':', '{']).next().unwrap())
                    .collect::<Vec<_>>()
                    .join(" ")
            } else if let Some(p) = code.split_once("=>") {
                p.0.to_string()
            } else if code.trim_start().starts_with('|') {
                code.to_string()
            } else {
                continue;
            };
            for w in words(&pattern) {
                let w = w.strip_prefix("OP_").unwrap_or(w);
                if names.contains(&w) {
                    found.push(format!("{f}:{}: {w}", i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "hand-written arms of defined ops: {found:#?}"
    );
}
