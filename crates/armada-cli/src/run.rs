//! `armada run`.

use crate::Backend;
use anyhow::{bail, Context, Result};
use armada_core::elf::Image;
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::{Exit, Lane};
use clap::Args;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args)]
pub struct RunArgs {
    /// Engine to run on.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: Backend,
    /// Set a variable in the guest's environment (which starts as armada's own).
    #[arg(short = 'E', value_name = "VAR=VALUE")]
    pub set_env: Vec<String>,
    /// Remove a variable from the guest's environment.
    #[arg(short = 'U', value_name = "VAR")]
    pub unset_env: Vec<String>,
    /// Confine the guest's file access to DIR: every guest path resolves inside it.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Stop the program after N instructions (exit status 124).
    #[arg(long, value_name = "N")]
    pub max_instructions: Option<u64>,
    /// Print each syscall and its result on stderr.
    #[arg(long)]
    pub strace: bool,
    /// Print instructions retired, wall time and instructions per second on stderr.
    #[arg(long)]
    pub stats: bool,
    /// Give the guest a virtual clock and seeded random bytes, so that runs repeat exactly.
    #[arg(long)]
    pub deterministic: bool,
    /// Seed for --deterministic random bytes.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run host-architecture programs the guest execs natively on the host, as qemu-user
    /// with binfmt_misc does (a test suite that runs the host's `go`, `bash` or `true`).
    /// Such a program sees the host's whole file system and is not deterministic, so
    /// --root and --deterministic refuse it. Without it, such an exec fails with ENOEXEC.
    #[arg(long)]
    pub host_exec: bool,
    /// Wait for gdb at PORT (127.0.0.1), HOST:PORT or a Unix socket path before the first
    /// instruction, and run the program under it, as qemu-aarch64 -g: breakpoints,
    /// watchpoints, single steps, threads, registers and memory (`gdb-multiarch PROGRAM
    /// -ex 'target remote :PORT'`). CPU engine only.
    #[arg(short = 'g', long = "gdb", value_name = "PORT", env = "QEMU_GDB")]
    pub gdb: Option<String>,
    /// The command is as binfmt_misc passes it with the P flag: the program's file, its
    /// argv[0], then its arguments (`armada binfmt install` writes this).
    #[arg(long, hide = true)]
    pub binfmt: bool,
    #[command(flatten)]
    pub guest: GuestCommand,
}

/// `--net`: where sockets lead.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum NetArg {
    /// The run's own loopback network.
    Loopback,
    /// The host's network.
    Host,
}

impl NetArg {
    pub fn mode(self) -> armada_core::linux::net::host::NetMode {
        match self {
            NetArg::Loopback => armada_core::linux::net::host::NetMode::Loopback,
            NetArg::Host => armada_core::linux::net::host::NetMode::Host,
        }
    }
}

/// Where the program's files come from and what it may use: what `armada run`, `armada
/// batch` and `armada fuzz` share.
#[derive(Args)]
pub struct GuestOptions {
    /// Sysroot for dynamically linked programs (qemu-aarch64's -L): the guest's absolute
    /// paths name DIR/path when that exists, the host's path otherwise. Default: the
    /// QEMU_LD_PREFIX environment variable.
    #[arg(
        short = 'L',
        long = "sysroot",
        value_name = "DIR",
        env = "QEMU_LD_PREFIX"
    )]
    pub sysroot: Option<PathBuf>,
    /// Most processes the program may have at once, zombies included: past it fork fails
    /// with EAGAIN (so a fork bomb ends cleanly).
    #[arg(long, value_name = "N", default_value_t = armada_core::linux::proc::table::DEFAULT_MAX_PROCESSES)]
    pub max_processes: usize,
    /// The network the program's sockets reach: its own in-memory loopback network (TCP,
    /// UDP and Unix sockets between its processes and threads; nothing else is
    /// reachable), or the host's (IPv4/IPv6 sockets are the host's, as under qemu: this
    /// leaves the sandbox, and runs are no longer deterministic).
    #[arg(long, value_enum, value_name = "MODE", default_value = "loopback")]
    pub net: NetArg,
}

/// The guest options and the program with its arguments: what `armada run` and `armada
/// fuzz` take.
#[derive(Args)]
pub struct GuestCommand {
    #[command(flatten)]
    pub opts: GuestOptions,
    /// The AArch64 Linux program, then its arguments (everything after the program is
    /// the program's, options and `--` included, as with qemu-aarch64).
    #[arg(
        value_name = "PROGRAM [ARGS]",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

impl GuestCommand {
    /// The program (the first word of the command).
    pub fn program(&self) -> PathBuf {
        PathBuf::from(self.command.first().cloned().unwrap_or_default())
    }

    /// The words after the program.
    pub fn args(&self) -> &[OsString] {
        self.command.get(1..).unwrap_or(&[])
    }
}

/// The guest environment: the host's, with -U removals and -E additions applied, in the
/// order qemu-aarch64 gives it.
pub fn guest_env(set: &[String], unset: &[String]) -> Result<Vec<Vec<u8>>> {
    let mut env: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        // what armada set for itself is not the guest's (see quiet_vulkan_layers)
        .filter(|(k, _)| !armada_wgpu::set_by_armada(k))
        .collect();
    for name in unset {
        env.retain(|(k, _)| k != name.as_bytes());
    }
    for kv in set {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("-E takes VAR=VALUE, got {kv:?}");
        };
        env.retain(|(key, _)| key != k.as_bytes());
        env.push((k.as_bytes().to_vec(), v.as_bytes().to_vec()));
    }
    // qemu-user hands the guest its environment in reverse order (it builds a list by
    // prepending); qemu is the reference, so do the same.
    env.reverse();
    Ok(env
        .into_iter()
        .map(|(mut k, v)| {
            k.push(b'=');
            k.extend_from_slice(&v);
            k
        })
        .collect())
}

/// A misspelled or unknown armada option before the program is taken for the program (the
/// program's own options may start with `-`): say so instead of "cannot read --foo".
pub fn refuse_option_as_program(program: &std::path::Path) -> Result<()> {
    let s = program.to_string_lossy();
    if s.starts_with('-') && !program.exists() {
        bail!("unknown option {s} (armada's options go before the program; see --help)");
    }
    Ok(())
}

/// A cheap check that the engine can start here, before any work (the wgpu engine has none
/// cheaper than opening it, which `gpu_engine` does).
pub fn check_backend(backend: Backend) -> Result<()> {
    match backend {
        Backend::Cpu | Backend::Wgpu => Ok(()),
        Backend::Cuda => Ok(armada_cuda::check_driver(&armada_cuda::Options::from_env())?),
    }
}

/// The GPU engine `backend` names, opened (device found, kernel compiled); None for the CPU.
pub fn gpu_engine(backend: Backend) -> Result<Option<armada_gpu::Engine>> {
    Ok(match backend {
        Backend::Cpu => None,
        Backend::Cuda => Some(armada_cuda::open(&armada_cuda::Options::from_env())?),
        Backend::Wgpu => Some(armada_wgpu::open(&armada_wgpu::Options::from_env())?),
    })
}

/// The engines of the devices `devices` names (`armada batch --devices`): empty for the CPU
/// engine, one for the default choice.
pub fn gpu_engines(
    backend: Backend,
    devices: &armada_gpu::Devices,
) -> Result<Vec<armada_gpu::Engine>> {
    Ok(match backend {
        Backend::Cpu => Vec::new(),
        Backend::Cuda => armada_cuda::open_devices(&armada_cuda::Options::from_env(), devices)?,
        Backend::Wgpu => armada_wgpu::open_devices(&armada_wgpu::Options::from_env(), devices)?,
    })
}

/// `armada run`; `inherited`: the host fds above 2 the guest gets (see `inherited_host_fds`).
pub fn run(args: RunArgs, inherited: Vec<i32>) -> Result<u8> {
    refuse_option_as_program(&args.guest.program())?;
    if args.host_exec && args.root.is_some() {
        bail!("--host-exec cannot be used with --root: a host program would see the host's whole file system, not the root");
    }
    if args.host_exec && args.deterministic {
        bail!("--host-exec cannot be used with --deterministic: host programs run on the host's clock and scheduler, so runs would not repeat");
    }
    if args.host_exec && !matches!(args.backend, Backend::Cpu) {
        bail!("--host-exec runs on the CPU engine only (--backend cpu)");
    }
    let gdb = args
        .gdb
        .as_deref()
        .map(armada_gdb::Listen::parse)
        .transpose()?;
    if gdb.is_some() && !matches!(args.backend, Backend::Cpu) {
        bail!("-g debugs programs on the CPU engine only (--backend cpu); a GPU lane can be replayed there");
    }
    check_backend(args.backend)?;
    let image = Image::load(args.guest.program())
        .with_context(|| format!("cannot run {}", args.guest.program().display()))?;
    let guest_path = args.guest.program().as_os_str().as_bytes().to_vec();
    let mut words = args.guest.args().iter().map(|a| a.as_bytes().to_vec());
    // binfmt_misc (flag P): the program's own argv[0] comes after its file
    let argv0 = match args.binfmt {
        true => words.next().unwrap_or_else(|| guest_path.clone()),
        false => guest_path.clone(),
    };
    let mut argv = vec![argv0];
    argv.extend(words);
    let env = guest_env(&args.set_env, &args.unset_env)?;
    let cfg = LinuxConfig {
        root: args.root.clone(),
        sysroot: args.guest.opts.sysroot.clone(),
        strace: args.strace,
        deterministic: args.deterministic,
        seed: args.seed,
        exe_host_path: std::fs::canonicalize(args.guest.program()).unwrap_or(args.guest.program()),
        exe_guest_path: guest_path,
        max_processes: Some(args.guest.opts.max_processes),
        net: args.guest.opts.net.mode(),
        ignored_signals: host_ignored_signals(),
        host_exec: args.host_exec,
    };
    let stdio = Stdio::Inherit { extra: inherited };
    let program = Program::spawn(Arc::new(image), &cfg, argv, env, stdio)
        .with_context(|| format!("cannot start {}", args.guest.program().display()))?;
    let mut lane = Lane::new(program);
    let start = Instant::now();
    let mut host_steps = None;
    let exit = if let Some(engine) = gpu_engine(args.backend)? {
        // A GPU engine: a batch of one lane, its stdio the host's.
        let (mut lanes, _) =
            armada_gpu::run_lanes(&engine, vec![lane], args.max_instructions, &|_| {})?;
        let (l, steps) = lanes.pop().context("the GPU engine returned no lane")?;
        lane = l;
        host_steps = Some(steps);
        lane.exit.clone().unwrap_or(Exit::InstructionLimit)
    } else if let Some(at) = &gdb {
        lane = armada_gdb::serve(
            lane,
            args.max_instructions,
            at,
            &args.guest.program().display().to_string(),
        )?;
        lane.exit.clone().unwrap_or(Exit::InstructionLimit)
    } else {
        lane.run(args.max_instructions).clone()
    };
    let elapsed = start.elapsed().as_secs_f64();
    match &exit {
        Exit::Signal {
            message: Some(m), ..
        } => eprintln!("armada: {m}"),
        Exit::Unsupported(m) => eprintln!("armada: {m}"),
        Exit::InstructionLimit => eprintln!(
            "armada: stopped after {} instructions (--max-instructions) at pc {:#x}",
            lane.retired(),
            lane.program.state.pc
        ),
        _ => {}
    }
    if args.stats {
        let n = lane.retired();
        eprintln!(
            "armada: {n} instructions in {elapsed:.3} s ({:.1} M instructions/s), {} KiB private guest memory",
            n as f64 / elapsed.max(1e-9) / 1e6,
            lane.program.mem.private_bytes() / 1024
        );
        if let Some(h) = host_steps {
            eprintln!("armada: {h} of them run by the host for the CUDA engine");
        }
        let tier = armada_core::cpu::default_tier();
        if tier.as_ref().is_some_and(|t| t.name() == "quick") {
            let (blocks, insns, secs, ran, flushes) = armada_jit::quick::stats();
            eprintln!(
                "armada: quick tier: {blocks} blocks of {insns} instructions made in {:.1} ms ({} KiB of code), all dropped {flushes} times, a changed page's {} times; {:.1}% of the instructions run were in blocks",
                secs * 1e3,
                armada_jit::quick::code_bytes() / 1024,
                armada_jit::quick::pages_dropped(),
                ran as f64 * 100.0 / n.max(1) as f64
            );
        } else if tier.is_some() {
            let (units, insns, secs) = armada_jit::stats();
            eprintln!(
                "armada: translation tier: {units} units of {insns} instructions compiled in {:.1} ms (on compile threads); {:.1}% of the instructions run were translated",
                secs * 1e3,
                armada_jit::translated_instructions() as f64 * 100.0 / n.max(1) as f64
            );
            let r = armada_jit::rounds();
            eprintln!(
                "armada: dispatcher: {} rounds, {} interpreter steps, units by exit {:?}, quick chains by exit {:?}; {} units entered from quick blocks, {} blocks gave their units back",
                r.rounds,
                r.interp,
                r.units,
                r.quick,
                armada_jit::quick::unit_entries(),
                r.small
            );
        }
        if tier.is_some() {
            for (op, count) in armada_jit::quick::fallbacks().iter().take(20) {
                eprintln!("armada: {count:>12} x {op} run by the interpreter from translated code");
            }
        }
    }
    if let Exit::Signal { signal, .. } = exit {
        die_by_signal(signal);
    }
    Ok(exit.status() as u8)
}

/// Ends armada the way the guest ended, by its signal, as qemu-aarch64 does (no core dump
/// of armada's own): a parent sees "killed by SIGSEGV", not exit status 139. Returns where
/// the signal does not end armada (one whose default action is not to terminate).
fn die_by_signal(signal: i32) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if !(1..=31).contains(&signal) || signal == libc::SIGKILL || signal == libc::SIGSTOP {
        if signal == libc::SIGKILL {
            // SAFETY: plain syscalls on the calling process.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
        return;
    }
    // SAFETY: plain syscalls on the calling process; nothing runs after the signal but the
    // fallback return.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}

/// The signals this process was started with ignored (bit `sig - 1`), which the guest
/// starts with ignored too, as a program its parent executes would (`nohup armada run`).
/// Signals 1-64 are numbered alike on x86-64 and arm64 Linux (the real-time ones too, so an
/// ignored 32 shows in the guest's SigIgn as under qemu). SIGPIPE is left out: Rust's
/// runtime ignores it before `main`, so the parent's disposition cannot be told.
fn host_ignored_signals() -> u64 {
    (1..=64)
        .filter(|&sig| sig != libc::SIGKILL && sig != libc::SIGSTOP && sig != libc::SIGPIPE)
        .filter(|&sig| {
            // SAFETY: only reads the disposition, into a local.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            }
        })
        .fold(0, |m, sig| m | 1 << (sig - 1))
}
