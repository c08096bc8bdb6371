//! Compiles the kernel with NVRTC for an architecture (default sm_90) without a GPU and
//! prints the compiler's log (set ARMADA_CUDA_PTXAS_VERBOSE=1 for registers and spills).
//! Usage: nvrtc_check [sm_XX]

fn main() {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        eprintln!("no libnvrtc found");
        std::process::exit(2);
    }
    match armada_cuda::nvrtc::compile(&armada_cuda::kernel_source(), &arch, &[]) {
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
