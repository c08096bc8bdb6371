//! Compiles the kernel with NVRTC for an architecture (default sm_90) without a GPU and
//! prints the compiler's log (set ARMADA_CUDA_PTXAS_VERBOSE=1 for registers and spills).
//! Usage: nvrtc_check [sm_XX]. With ARMADA_BLOCKS_FILE=F (translated blocks a batch wrote
//! with ARMADA_CUDA_BLOCKS_DUMP=F), the many-lane build with those blocks.

fn main() {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        eprintln!("no libnvrtc found");
        std::process::exit(2);
    }
    let (src, defines) = match std::env::var_os("ARMADA_BLOCKS_FILE") {
        Some(f) => {
            let cases = std::fs::read_to_string(&f).expect("ARMADA_BLOCKS_FILE");
            (
                armada_cuda::kernel_source_with_blocks(&cases),
                vec!["-DARMADA_MIN_BLOCKS=4", "-DARMADA_MINPC", "-DARMADA_BLOCKS"],
            )
        }
        None => (armada_cuda::kernel_source(), vec![]),
    };
    // more options to try (NVRTC_EXTRA="-Xptxas -O1", say)
    let extra = std::env::var("NVRTC_EXTRA").unwrap_or_default();
    let mut defines = defines;
    defines.extend(extra.split_whitespace());
    let t = std::time::Instant::now();
    let compiled = armada_cuda::nvrtc::compile(&src, &arch, &defines);
    eprintln!("compiled in {:.2} s", t.elapsed().as_secs_f64());
    match compiled {
        Ok((cubin, log)) => {
            println!("ok: {} bytes of cubin for {arch}", cubin.len());
            println!("{log}");
        }
        Err(e) => {
            println!("{e}");
            std::process::exit(1);
        }
    }
}
