//! `armada bench`: the CPU engine's speed next to qemu-aarch64's, measured in the same run on
//! the same programs, with outputs compared so a wrong answer never counts as fast.

use anyhow::{bail, Context, Result};
use armada_core::elf::Image;
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::Lane;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Benchmark cases, each a program and its arguments in one string
    /// (e.g. "target/guest/crc32 20"). Default: the compute-bound guest programs built by
    /// tests/guest/build.sh into target/guest.
    pub cases: Vec<String>,
    /// Timed runs of each case per engine; the best is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The qemu-aarch64 to compare with.
    #[arg(long, default_value = "qemu-aarch64")]
    pub qemu: String,
    /// Skip qemu-aarch64 (report armada alone).
    #[arg(long)]
    pub no_qemu: bool,
    /// Also print the results as a Markdown table.
    #[arg(long)]
    pub markdown: bool,
}

const DEFAULT_CASES: &[&str] = &[
    "target/guest/crc32 30",
    "target/guest/sort_bench 1000000",
    "target/guest/matmul 200",
    "target/guest/sieve",
    // text: <ctype.h> table lookups and strstr over 4 MiB, five times
    "target/guest/textscan 4096 5",
    // floating point: scalar doubles with square roots and divisions, conversions from
    // integers, and loops gcc -O3 vectorized (FMLA, FDIV, vector shifts)
    "target/guest/nbody 500000",
    "target/guest/spectral_norm 800",
    "target/guest/mandelbrot 800",
    "target/guest/vector_fp 3000",
    // the same work on one thread and on four: a threaded program's instruction rate
    "target/guest/threads_compute 1 240",
    "target/guest/threads_compute 4 60",
    // fork of a process with 100 MiB written: copy-on-write copies nothing
    "target/guest-processes/fork_big 100 20",
];

/// The spawn case: busybox sh runs `busybox true` 1,000 times (each a fork and an execve;
/// under qemu-aarch64 each is a new host process, which needs binfmt_misc to know arm64
/// ELF), when the busybox that scripts/test downloads is there.
fn spawn_case() -> Option<String> {
    let dir = Path::new("target/guest-deps/extracted");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin/busybox"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    let bb = found.pop()?;
    let bb = bb.to_str()?;
    Some(format!("{bb} sh tests/guest/bench/spawn.sh {bb} 1000"))
}

struct Row {
    case: String,
    instructions: u64,
    armada_s: f64,
    qemu_s: Option<f64>,
}

fn run_armada(path: &Path, args: &[String]) -> Result<(u64, f64, Vec<u8>, i32)> {
    let image = Arc::new(Image::load(path)?);
    let mut argv = vec![path.as_os_str().as_encoded_bytes().to_vec()];
    argv.extend(args.iter().map(|a| a.as_bytes().to_vec()));
    let cfg = LinuxConfig {
        sysroot: None,
        root: None,
        strace: std::env::var_os("ARMADA_BENCH_STRACE").is_some(),
        deterministic: true,
        seed: 0,
        exe_host_path: path.to_path_buf(),
        exe_guest_path: argv[0].clone(),
        max_processes: None,
        net: Default::default(),
        ignored_signals: 0,
        host_exec: false,
    };
    let program = Program::spawn(
        image,
        &cfg,
        argv,
        Vec::new(),
        Stdio::Captured { stdin: Vec::new() },
    )?;
    let mut lane = Lane::new(program);
    let t = Instant::now();
    let status = lane.run(None).status();
    let secs = t.elapsed().as_secs_f64();
    let (out, err) = lane.program.process.take_output();
    if status != 0 {
        bail!(
            "the program failed under armada (status {status}): {}",
            String::from_utf8_lossy(&err).trim()
        );
    }
    Ok((lane.retired(), secs, out, status))
}

fn run_qemu(qemu: &str, path: &Path, args: &[String]) -> Result<(f64, Vec<u8>, i32)> {
    let t = Instant::now();
    let out = Command::new(qemu)
        .arg(path)
        .args(args)
        .env_clear()
        .output()
        .with_context(|| format!("cannot start {qemu} (install qemu-user, or pass --no-qemu)"))?;
    let secs = t.elapsed().as_secs_f64();
    Ok((secs, out.stdout, out.status.code().unwrap_or(128)))
}

pub fn bench(args: BenchArgs) -> Result<u8> {
    let cases: Vec<String> = if args.cases.is_empty() {
        DEFAULT_CASES
            .iter()
            .filter(|c| Path::new(c.split_whitespace().next().unwrap()).exists())
            .map(|c| c.to_string())
            .chain(spawn_case())
            .collect()
    } else {
        args.cases.clone()
    };
    if cases.is_empty() {
        bail!(
            "no benchmark programs: build them with tests/guest/build.sh (needs \
             aarch64-linux-gnu-gcc), or name cases like \"path/to/prog arg\""
        );
    }
    let mut rows = Vec::new();
    for case in &cases {
        let mut words = case.split_whitespace();
        let path = PathBuf::from(words.next().context("empty case")?);
        let pargs: Vec<String> = words.map(String::from).collect();
        let mut best = f64::INFINITY;
        let mut result = None;
        for _ in 0..args.runs.max(1) {
            let (n, s, out, status) = run_armada(&path, &pargs)
                .with_context(|| format!("armada could not run {}", path.display()))?;
            best = best.min(s);
            result = Some((n, out, status));
        }
        let (instructions, out, status) = result.unwrap();
        let mut qemu_s = None;
        if !args.no_qemu {
            let mut qbest = f64::INFINITY;
            for _ in 0..args.runs.max(1) {
                let (s, qout, qstatus) = run_qemu(&args.qemu, &path, &pargs)?;
                if qout != out || qstatus != status {
                    bail!(
                        "{case}: armada and qemu disagree (exit {status} vs {qstatus}, stdout \
                         {} vs {} bytes): not timing a wrong answer",
                        out.len(),
                        qout.len()
                    );
                }
                qbest = qbest.min(s);
            }
            qemu_s = Some(qbest);
        }
        let row = Row {
            case: case.clone(),
            instructions,
            armada_s: best,
            qemu_s,
        };
        print_row(&row);
        rows.push(row);
    }
    if args.markdown {
        println!();
        println!("| case | guest instructions | armada cpu (s) | armada M instr/s | qemu-aarch64 (s) | armada / qemu wall time |");
        println!("|---|---|---|---|---|---|");
        for r in &rows {
            let (q, ratio) = match r.qemu_s {
                Some(q) => (format!("{q:.3}"), format!("{:.2}x", r.armada_s / q)),
                None => ("-".into(), "-".into()),
            };
            println!(
                "| `{}` | {} | {:.3} | {:.0} | {} | {} |",
                r.case,
                r.instructions,
                r.armada_s,
                r.instructions as f64 / r.armada_s / 1e6,
                q,
                ratio
            );
        }
    }
    Ok(0)
}

fn print_row(r: &Row) {
    let mips = r.instructions as f64 / r.armada_s / 1e6;
    match r.qemu_s {
        Some(q) => println!(
            "{:<32} {:>13} instr  armada {:>7.3} s ({:>6.0} M/s)  qemu {:>7.3} s  armada/qemu {:>5.2}x",
            r.case,
            r.instructions,
            r.armada_s,
            mips,
            q,
            r.armada_s / q
        ),
        None => println!(
            "{:<32} {:>13} instr  armada {:>7.3} s ({:>6.0} M/s)",
            r.case, r.instructions, r.armada_s, mips
        ),
    }
}
