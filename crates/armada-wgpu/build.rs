//! Joins the shader's files, in the order `src/shader/ORDER` lists them, into one WGSL source
//! (the generated header is prepended at run time, from armada-gpu's layout), with the cases
//! of the micro-ops armada-semantics defines where armada.wgsl says `// @generated defined` (and
//! the fused pairs' compares at `// @generated fused`, the SIMD element functions at
//! `// @generated elements` and `/* @generated element ops */` in simd.wgsl).

fn main() {
    let dir = std::path::Path::new("src/shader");
    println!("cargo:rerun-if-changed=src/shader");
    let order = std::fs::read_to_string(dir.join("ORDER")).expect("src/shader/ORDER");
    let mut src = String::new();
    for name in order
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let p = dir.join(name);
        println!("cargo:rerun-if-changed={}", p.display());
        src.push_str(&format!("// ----- {name}\n"));
        src.push_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        );
        src.push('\n');
    }
    // the ops armada-semantics defines, into the loop's switch
    let marker = "// @generated defined\n";
    assert!(src.contains(marker), "armada.wgsl has no `{marker}`");
    let src = src.replace(marker, &armada_semantics::text::wgsl_cases());
    let marker = "// @generated fused\n";
    assert!(src.contains(marker), "armada.wgsl has no `{marker}`");
    let src = src.replace(marker, &armada_semantics::text::wgsl_fused());
    // the SIMD element functions, into simd.wgsl's int_elem and the case that loops over them
    let marker = "        // @generated elements\n";
    assert!(src.contains(marker), "simd.wgsl has no `{marker}`");
    let src = src.replace(marker, &armada_semantics::text::wgsl_elements());
    let marker = "/* @generated element ops */ ";
    assert!(src.contains(marker), "simd.wgsl has no `{marker}`");
    let src = src.replace(marker, &armada_semantics::text::wgsl_element_selectors());
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("shader.wgsl");
    std::fs::write(out, src).unwrap();
}
