//! Joins the shader's files, in the order `src/shader/ORDER` lists them, into one WGSL source
//! (the generated header is prepended at run time, from armada-gpu's layout), with the cases
//! of the micro-ops armada-semantics defines where armada.wgsl says `// @generated defined` (and
//! the fused pairs' compares at `// @generated fused`, the SIMD element functions at
//! `// @generated elements`, `/* @generated element ops */`, `// @generated element
//! unary`, `/* @generated pair ops */`, `/* @generated across ops */`, `/* @generated across
//! long ops */`, `// @generated long elements`, `/* @generated long ops */`, `// @generated
//! narrow elements` and `/* @generated narrow ops */` in simd.wgsl); and fp.wgsl, the FP piece
//! (lib.rs), with the FP element functions at `// @generated fp elements` and `// @generated
//! fp after`.

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
    use armada_semantics::text;
    // (marker, the file that has it, what replaces it)
    let generated = [
        // the ops armada-semantics defines, into the loop's switch
        ("// @generated defined\n", "armada.wgsl", text::wgsl_cases()),
        ("// @generated fused\n", "armada.wgsl", text::wgsl_fused()),
        // the SIMD element functions, into int_elem and the case that loops over them
        (
            "        // @generated elements\n",
            "simd.wgsl",
            text::wgsl_elements(),
        ),
        (
            "/* @generated element ops */ ",
            "simd.wgsl",
            text::wgsl_element_selectors(),
        ),
        (
            "// @generated element unary\n",
            "simd.wgsl",
            text::wgsl_element_unary(),
        ),
        // the pairwise ones, into the case that loops over pairs (their cases are int_elem's)
        (
            "/* @generated pair ops */ ",
            "simd.wgsl",
            text::wgsl_pair_selectors(),
        ),
        // the across-lanes reductions, into the case that folds (their cases are int_elem's)
        (
            "/* @generated across ops */ ",
            "simd.wgsl",
            text::wgsl_across_selectors(),
        ),
        (
            "/* @generated across long ops */ ",
            "simd.wgsl",
            text::wgsl_across_long_selectors(),
        ),
        // the long element functions, into long_elem and the case that loops over them
        (
            "        // @generated long elements\n",
            "simd.wgsl",
            text::wgsl_long_elements(),
        ),
        (
            "/* @generated long ops */ ",
            "simd.wgsl",
            text::wgsl_long_selectors(),
        ),
        // the narrowing ones, into narrow_elem and the case that loops over them
        (
            "        // @generated narrow elements\n",
            "simd.wgsl",
            text::wgsl_narrow_elements(),
        ),
        (
            "/* @generated narrow ops */ ",
            "simd.wgsl",
            text::wgsl_narrow_selectors(),
        ),
    ];
    for (marker, file, with) in generated {
        splice(&mut src, file, marker, &with);
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("shader.wgsl"), src).unwrap();
    // fp.wgsl, the piece only some pipelines have (lib.rs), with the FP element functions
    // at `// @generated fp elements` and `// @generated fp after`
    let p = dir.join("fp.wgsl");
    println!("cargo:rerun-if-changed={}", p.display());
    let mut fp = std::fs::read_to_string(&p).expect("src/shader/fp.wgsl");
    for (marker, with) in [
        (
            "        // @generated fp elements\n",
            armada_semantics::text_fp::wgsl_fp_elements(),
        ),
        (
            "// @generated fp after\n",
            armada_semantics::text_fp::wgsl_fp_after(),
        ),
    ] {
        splice(&mut fp, "fp.wgsl", marker, &with);
    }
    std::fs::write(out.join("fp.wgsl"), fp).unwrap();
}

/// `marker` in `text` (from `file`) replaced by `with`; a marker the file lacks is an error.
fn splice(text: &mut String, file: &str, marker: &str, with: &str) {
    assert!(text.contains(marker), "{file} has no `{marker}`");
    *text = text.replace(marker, with);
}
