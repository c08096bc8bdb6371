//! The `armada` command.

mod batch;
mod bench;
mod binfmt;
mod fuzz;
mod record;
mod replay;
mod run;

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

// Batches allocate and free millions of small buffers (guest pages, records) from every core at
// once; glibc's per-thread arenas grow and shrink with mprotect/munmap under the process-wide
// memory-map lock, which serializes the cores. mimalloc keeps per-thread free lists instead.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "armada",
    version,
    about = "Run AArch64 Linux programs on the CPU or the GPU",
    long_about = "armada runs AArch64 (ARM64) Linux programs (static or, with -L, dynamically \
                  linked; single- or multi-threaded) with the same output and exit status as on \
                  a real ARM64 machine. The CPU engine runs everywhere; the GPU engines run many \
                  copies of a program at once (threads and processes included)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How the CPU engine runs code: `jit` translates hot code to host code (the default on
    /// x86-64 and aarch64 hosts), `interp` interprets every instruction. Both give the same
    /// results, instruction counts included.
    #[arg(long, global = true, env = "ARMADA_TIER", value_parser = armada_jit::TierChoice::parse)]
    tier: Option<armada_jit::TierChoice>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The CPU interpreter (the reference engine; runs everywhere).
    Cpu,
    /// NVIDIA GPUs through CUDA.
    Cuda,
    /// Any GPU through wgpu (Vulkan, Metal, DX12).
    Wgpu,
}

#[derive(Subcommand)]
enum Command {
    /// Run one program: stdin, stdout and stderr pass through, and armada exits with the
    /// program's status.
    Run(run::RunArgs),
    /// Measure the CPU engine against qemu-aarch64 on compute-bound programs.
    Bench(bench::BenchArgs),
    /// Run many copies ("lanes") of one program at once, each with its own arguments
    /// (`{lane}` in ARGS is the lane number) and input, or lanes of several programs
    /// (`--commands FILE`); output is captured per lane.
    Batch(batch::BatchArgs),
    /// Coverage-guided fuzzing: mutate inputs, keep those that reach new code, save those
    /// that crash or hang the program. Exits 1 when it found a new crash.
    Fuzz(fuzz::FuzzArgs),
    /// Register armada with the kernel's binfmt_misc as the handler of AArch64 ELF
    /// programs (as qemu-user-binfmt does for qemu), so that `./prog` runs through armada;
    /// or remove it, or show what handles them.
    Binfmt(binfmt::BinfmtArgs),
    /// Run one lane of a batch again on the CPU engine (`armada batch --out FILE` recorded
    /// how), optionally under gdb (-g), and compare it with the batch's result.
    Replay(replay::ReplayArgs),
}

/// mimalloc's option number for its purge delay (`mi_option_purge_delay` in mimalloc.h; the
/// crate does not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // The fds beyond stdio that armada was started with go to the guest of `armada run`, as
    // qemu-user's guest has them; read before armada opens any of its own.
    let inherited = armada_core::linux::io::fd::inherited_host_fds();
    // Never give freed memory back to the system. mimalloc purged it after a delay, and the
    // next allocation there faulted in a fresh transparent huge page that the kernel zeroed,
    // 2 MiB at a time: 3-5% of python3's run went to clearing pages for the translation
    // tier's short-lived copies of decoded pages. A run's peak memory is the same either way.
    // SAFETY: set before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // (before any thread: it sets an environment variable the guest does not inherit)
    armada_wgpu::quiet_vulkan_layers();
    // started by the kernel for an AArch64 program (`armada binfmt install --container`)
    let cli = match binfmt::binfmt_argv(&std::env::args_os().collect::<Vec<_>>()) {
        Some(argv) => Cli::parse_from(argv),
        None => Cli::parse(),
    };
    let tier = cli
        .tier
        .unwrap_or_else(armada_jit::TierChoice::default_here);
    if let Err(e) = armada_jit::install(tier) {
        eprintln!("armada: {e}");
        return ExitCode::from(125);
    }
    if matches!(cli.command, Command::Binfmt(_) | Command::Bench(_)) {
        // Their only output is armada's own: `armada binfmt status | head -1` ends quietly,
        // as other tools do, where Rust's ignored SIGPIPE made the print panic. (The
        // commands that run guests keep it ignored: a guest's write to a closed pipe is the
        // guest's EPIPE and SIGPIPE, not armada's end.)
        // SAFETY: restores the default disposition; no handler is installed.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let result = match cli.command {
        Command::Run(args) => run::run(args, inherited),
        Command::Bench(args) => bench::bench(args),
        Command::Batch(args) => batch::batch(args),
        Command::Fuzz(args) => fuzz::fuzz(args),
        Command::Binfmt(args) => binfmt::binfmt(args),
        Command::Replay(args) => replay::replay(args),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("armada: {e:#}");
            ExitCode::from(125)
        }
    }
}
