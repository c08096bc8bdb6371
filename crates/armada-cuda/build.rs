//! Builds the kernel simulator: the CUDA kernel source compiled as C++ for the host, so the
//! tests check the kernel against the CPU engine on machines without a GPU. Without a C++
//! compiler the crate builds without it (`armada_sim` unset) and those tests skip. It also
//! writes the kernel's cases for the micro-ops armada-semantics defines (`defined.cu` for the
//! loop's switch, `defined_cold.cu` for the out-of-line rest: hot_ops.rs chooses), the
//! compares of the fused pairs, `fused.cu`, the SIMD element functions, `elements.cu`, and
//! the FP element functions, `fp_elements.cu`),
//! which lib.rs includes for NVRTC.

#[path = "src/hot_ops.rs"]
mod hot_ops;
#[allow(dead_code)]
#[path = "../armada-gpu/src/layout.rs"]
mod layout;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(armada_sim)");
    println!("cargo:rerun-if-changed=src/kernel");
    println!("cargo:rerun-if-changed=../armada-gpu/src/layout.rs");
    println!("cargo:rerun-if-env-changed=ARMADA_NO_SIM");
    // kernel variants for the simulator too, e.g. ARMADA_SIM_DEFINES="ARMADA_COLD"
    println!("cargo:rerun-if-env-changed=ARMADA_SIM_DEFINES");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let (hot, cold) = defined_cases();
    std::fs::write(out.join("defined.cu"), &hot).unwrap();
    std::fs::write(out.join("defined_cold.cu"), &cold).unwrap();
    std::fs::write(out.join("fused.cu"), armada_semantics::text::cuda_fused()).unwrap();
    std::fs::write(
        out.join("elements.cu"),
        armada_semantics::text::cuda_elements(),
    )
    .unwrap();
    std::fs::write(
        out.join("fp_elements.cu"),
        armada_semantics::text_fp::cuda_fp_elements(),
    )
    .unwrap();
    if std::env::var_os("ARMADA_NO_SIM").is_some() {
        return;
    }
    let src = out.join("armada_sim.cpp");
    let kernel = std::fs::read_to_string("src/kernel/armada.cu").unwrap();
    // the parts armada.cu names where they go (lib.rs's KERNEL_PARTS)
    let parts: Vec<(String, String)> = kernel
        .lines()
        .filter_map(|l| l.strip_prefix("// @include "))
        .map(|p| {
            let text = std::fs::read_to_string(format!("src/kernel/{p}")).unwrap();
            (p.to_string(), text)
        })
        .collect();
    // the SIMD element functions, into simd.cu's int_elem (after it in the list)
    let at = parts.iter().position(|(n, _)| n == "simd.cu").unwrap() + 1;
    let mut parts = parts;
    parts.insert(
        at,
        (
            "elements.cu".to_string(),
            armada_semantics::text::cuda_elements(),
        ),
    );
    // and the FP element functions, into its f_elem
    parts.insert(
        at + 1,
        (
            "fp_elements.cu".to_string(),
            armada_semantics::text_fp::cuda_fp_elements(),
        ),
    );
    // the ops armada-semantics defines, into interp.cu's switch and cold.cu's (after them
    // in the list)
    parts.push(("defined.cu".to_string(), hot));
    parts.push(("defined_cold.cu".to_string(), cold));
    parts.push(("fused.cu".to_string(), armada_semantics::text::cuda_fused()));
    // (a batch's translated blocks: none in this build, `sim.rs` compiles those it is given)
    parts.push(("blocks.cu".to_string(), String::new()));
    let parts: Vec<(&str, &str)> = parts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let defines: String = std::env::var("ARMADA_SIM_DEFINES")
        .unwrap_or_default()
        .split_whitespace()
        .map(|d| format!("#define {d} 1\n"))
        .collect();
    let text = format!(
        "#define ARMADA_SIM 1\n{defines}{}",
        layout::cuda_source(&kernel, &parts)
    );
    std::fs::write(&src, text).unwrap();
    let mut b = cc::Build::new();
    b.cpp(true)
        .file(&src)
        .opt_level(2)
        .warnings(false)
        .flag_if_supported("-fno-strict-aliasing")
        .flag_if_supported("-fwrapv")
        .flag_if_supported("-std=c++17");
    match b.try_compile("armada_sim") {
        Ok(()) => println!("cargo:rustc-cfg=armada_sim"),
        Err(e) => println!(
            "cargo:warning=armada-cuda: no kernel simulator (C++ compiler failed: {e}); the \
             tests that need it will skip"
        ),
    }
}

/// The defined ops' cases: those the loop runs inline, and the rest.
fn defined_cases() -> (String, String) {
    use armada_semantics::text::cuda_cases;
    (
        cuda_cases(hot_ops::inline),
        cuda_cases(|n| !hot_ops::inline(n)),
    )
}
