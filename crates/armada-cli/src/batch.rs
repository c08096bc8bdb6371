//! `armada batch`: many lanes of one program (or of several, `--commands`), on any engine,
//! with per-lane arguments and input, captured output and a summary.

use crate::run::{guest_env, GuestOptions};
use crate::Backend;
use anyhow::{bail, Context, Result};
use armada_core::batch::{
    self, BatchOutcome, BatchProgram, BatchSpec, LaneResult, LaneSpec, Progress,
};
use armada_core::linux::LinuxConfig;
use armada_core::runner::Exit;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BatchArgs {
    /// Engine to run on.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: Backend,
    /// GPUs to spread the lanes over (CUDA and wgpu): `all`, or device numbers such as
    /// `0,2`. Each device runs a contiguous share of the lanes with its own host threads;
    /// the results are the same, in lane order, as on one device. Default: the first GPU.
    #[arg(long, value_name = "all|N,N,...")]
    pub devices: Option<armada_gpu::Devices>,
    /// Number of lanes (independent runs of the program). Default: 1, or one a line of
    /// `--commands` (with more lanes than lines, lane i runs line i mod lines).
    #[arg(long)]
    pub lanes: Option<usize>,
    /// Lanes' commands, one a line: a program and its arguments, quoted as in a shell
    /// (`{lane}` replaced with the lane number; empty lines and lines starting with `#`
    /// skipped), instead of one PROGRAM for every lane. Programs may differ from line to
    /// line: each is loaded once, and its lanes share its pages.
    #[arg(long, value_name = "FILE", conflicts_with = "command")]
    pub commands: Option<PathBuf>,
    /// Lane i reads the file DIR/i as its stdin (default: empty stdin).
    #[arg(long, value_name = "DIR")]
    pub stdin_dir: Option<PathBuf>,
    /// Write one JSON line per lane (exit, stop reason, instructions, stdout, stderr) here,
    /// and beside it FILE.batch.json, what `armada replay FILE --lane N` needs to run a lane
    /// again.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write lane i's stdout and stderr to DIR/i.stdout and DIR/i.stderr; the JSON lines
    /// then name the files instead of holding the bytes.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Confine guest file access to DIR; `{lane}` in DIR is replaced by the lane number, so
    /// `--root 'work/{lane}'` gives every lane its own directory (created if missing).
    #[arg(long, value_name = "DIR")]
    pub root: Option<String>,
    /// Private guest memory per lane (bytes; K, M, G suffixes): beyond it brk/mmap fail with
    /// ENOMEM and writes fault, for that lane alone.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub lane_memory: Option<u64>,
    /// Stop each lane after N instructions (status 124).
    #[arg(long, value_name = "N")]
    pub max_instructions: Option<u64>,
    /// Set a variable in the guest's environment (which starts as armada's own).
    #[arg(short = 'E', value_name = "VAR=VALUE")]
    pub set_env: Vec<String>,
    /// Remove a variable from the guest's environment.
    #[arg(short = 'U', value_name = "VAR")]
    pub unset_env: Vec<String>,
    /// Start the guest with an empty environment (before -E).
    #[arg(long)]
    pub clear_env: bool,
    /// Run the program's start once, up to POINT, and start every lane from that snapshot
    /// with its own stdin (`--stdin-dir`): `main`, another symbol, an address (0x...), or
    /// `input` (the first read of stdin). Lanes then share lane 0's arguments and seed.
    #[arg(long, value_name = "POINT")]
    pub snapshot_at: Option<armada_core::snapshot::Point>,
    /// Record each lane's edge coverage and write lane i's map to DIR/i.cov: 65,536 one-byte
    /// hit counters (AFL's map; edges hashed as docs/fuzzing.md says), the same on every
    /// engine. `--check` then compares the maps too.
    #[arg(long, value_name = "DIR")]
    pub coverage: Option<PathBuf>,
    /// Drop the lanes' stdout and stderr (the results carry none). On the CUDA engine the
    /// kernel then answers reads of stdin, fstat of fds 0-2 and those writes itself, so
    /// short runs stop for the host far less often.
    #[arg(long)]
    pub drop_output: bool,
    /// Seed of the lanes' random bytes (lane i uses SEED + i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Print lane 0's stdout and stderr after the run (handy for a quick look).
    #[arg(long)]
    pub show_first: bool,
    /// Run the batch again on the CPU engine and compare every lane (exit, stdout, stderr,
    /// instructions retired); exit non-zero on any difference.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub guest: GuestOptions,
    /// The AArch64 Linux program, then its arguments (everything after the program is the
    /// program's, options and `--` included, as with qemu-aarch64; `{lane}` in them is
    /// replaced with the lane number). Or `--commands`.
    #[arg(
        value_name = "PROGRAM [ARGS]",
        required_unless_present = "commands",
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

/// The commands lanes run, before `{lane}`: the one on the command line, or `--commands`'
/// lines split into words.
pub fn lane_commands(args: &BatchArgs) -> Result<Vec<Vec<OsString>>> {
    let Some(path) = &args.commands else {
        return Ok(vec![args.command.clone()]);
    };
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let words = shlex::bytes::split(line).with_context(|| {
            format!(
                "{}:{}: unbalanced quotes or a trailing backslash",
                path.display(),
                n + 1
            )
        })?;
        out.push(words.into_iter().map(OsString::from_vec).collect());
    }
    if out.is_empty() {
        bail!(
            "{} has no commands: give one a line (a program and its arguments)",
            path.display()
        );
    }
    Ok(out)
}

/// "64M", "1G", "4096", "2k" -> bytes.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mul) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {s:?} (use e.g. 4096, 64K, 16M, 1G)"))?;
    n.checked_mul(mul)
        .ok_or_else(|| format!("size too large: {s}"))
}

/// The batch `args` describe, with every lane's program, argv, stdin and root.
pub fn build_spec(args: &BatchArgs) -> Result<BatchSpec> {
    let commands = lane_commands(args)?;
    let n_lanes = args.lanes.unwrap_or(if args.commands.is_some() {
        commands.len()
    } else {
        1
    });
    if n_lanes == 0 {
        bail!("--lanes must be at least 1");
    }
    // each program once, in the order the commands first name it
    let mut programs: Vec<BatchProgram> = Vec::new();
    let mut index: std::collections::HashMap<&OsString, usize> = Default::default();
    let mut program_of: Vec<usize> = Vec::with_capacity(commands.len());
    for c in &commands {
        let k = match index.get(&c[0]) {
            Some(&k) => k,
            None => {
                let path = Path::new(&c[0]);
                crate::run::refuse_option_as_program(path)?;
                programs.push(
                    BatchProgram::load(path)
                        .with_context(|| format!("cannot run {}", path.display()))?,
                );
                index.insert(&c[0], programs.len() - 1);
                programs.len() - 1
            }
        };
        program_of.push(k);
    }
    let env: Arc<[Vec<u8>]> = if args.clear_env {
        let all: Vec<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        guest_env(&args.set_env, &all)?.into()
    } else {
        guest_env(&args.set_env, &args.unset_env)?.into()
    };
    let per_lane_root = args.root.as_deref().is_some_and(|r| r.contains("{lane}"));
    // in parallel: tens of thousands of stdin files are read in a fraction of the time
    use rayon::prelude::*;
    let lanes = (0..n_lanes)
        .into_par_iter()
        .map(|i| -> Result<LaneSpec> {
            let line = i % commands.len();
            let argv = commands[line]
                .iter()
                .enumerate()
                .map(|(w, a)| match w {
                    0 => a.as_bytes().to_vec(),
                    _ => batch::substitute_lane(a.as_bytes(), i),
                })
                .collect();
            let stdin = match &args.stdin_dir {
                Some(d) => {
                    let p = d.join(i.to_string());
                    std::fs::read(&p).with_context(|| {
                        format!("lane {i}: cannot read stdin from {}", p.display())
                    })?
                }
                None => Vec::new(),
            };
            let root = if per_lane_root {
                let r = PathBuf::from(
                    String::from_utf8_lossy(&batch::substitute_lane(
                        args.root.as_deref().unwrap_or_default().as_bytes(),
                        i,
                    ))
                    .into_owned(),
                );
                std::fs::create_dir_all(&r)
                    .with_context(|| format!("lane {i}: cannot create {}", r.display()))?;
                Some(r)
            } else {
                None
            };
            Ok(LaneSpec {
                program: program_of[line],
                argv,
                env: env.clone(),
                stdin,
                root,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let config = LinuxConfig {
        root: if per_lane_root {
            None
        } else {
            args.root.as_ref().map(PathBuf::from)
        },
        sysroot: args.guest.sysroot.clone(),
        strace: false,
        deterministic: true,
        seed: args.seed,
        // (each lane's executable is its program's: BatchSpec::lane_config)
        exe_host_path: PathBuf::new(),
        exe_guest_path: Vec::new(),
        max_processes: Some(args.guest.max_processes),
        net: args.guest.net.mode(),
        ignored_signals: 0,
        host_exec: false,
    };
    Ok(BatchSpec {
        programs,
        config,
        lanes,
        lane_memory: args.lane_memory,
        max_instructions: args.max_instructions,
        snapshot: None,
        coverage: args.coverage.is_some(),
        drop_output: args.drop_output,
        decoded: armada_core::cpu::DecodedPages::new(),
    })
}

/// A progress bar on stderr that appears only for batches that take more than a moment.
struct Bar {
    bar: ProgressBar,
    start: Instant,
    last: Mutex<Instant>,
}

impl Bar {
    fn new(lanes: usize, enabled: bool) -> Bar {
        let bar = ProgressBar::with_draw_target(
            Some(lanes as u64),
            if enabled {
                ProgressDrawTarget::stderr_with_hz(4)
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} lanes done, {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Bar {
            bar,
            start: Instant::now(),
            last: Mutex::new(Instant::now()),
        }
    }

    fn update(&self, p: Progress) {
        let now = Instant::now();
        if now.duration_since(self.start) < Duration::from_millis(700) {
            return;
        }
        let mut last = match self.last.lock() {
            Ok(l) => l,
            Err(_) => return,
        };
        if now.duration_since(*last) < Duration::from_millis(100) && p.lanes_done < p.lanes {
            return;
        }
        *last = now;
        let secs = now.duration_since(self.start).as_secs_f64();
        self.bar.set_position(p.lanes_done as u64);
        self.bar.set_message(format!(
            "{} instructions ({}/s)",
            si(p.instructions as f64),
            si(p.instructions as f64 / secs.max(1e-9))
        ));
    }
}

/// 1234567 -> "1.23 M".
pub fn si(x: f64) -> String {
    let units = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, u) in units {
        if x.abs() >= scale {
            return format!("{:.2} {u}", x / scale);
        }
    }
    format!("{x:.0} ")
}

pub fn batch(args: BatchArgs) -> Result<u8> {
    crate::run::check_backend(args.backend)?;
    if args.backend != Backend::Cpu {
        // (the host's mirrors of GPU lanes never get windows: their pages come from the
        // heap, see `memory::heap_pages_only`)
        armada_core::memory::heap_pages_only();
    }
    if args.devices.is_some() && args.backend == Backend::Cpu {
        bail!(
            "--devices chooses GPUs, and this batch runs on the CPU engine: add --backend cuda (or wgpu), or leave --devices out (the CPU engine uses every core already)"
        );
    }
    // The device opens (driver, context, kernel) while the inputs are read, the snapshot
    // taken and the lanes made: a quarter of a second of a short batch's wall time.
    let backend = args.backend;
    let devices = args.devices.clone().unwrap_or_default();
    let opening = std::thread::spawn(move || {
        let t = Instant::now();
        let engines = crate::run::gpu_engines(backend, &devices);
        (engines, t.elapsed().as_secs_f64())
    });
    let t_spec = Instant::now();
    let age_at_spec = process_age();
    let mut spec = build_spec(&args)?;
    let t_snapshot = Instant::now();
    if let Some(point) = &args.snapshot_at {
        let t = Instant::now();
        spec.take_snapshot(point.clone()).with_context(|| {
            format!("--snapshot-at {point} (the start may run --max-instructions instructions)")
        })?;
        if !args.no_progress {
            let retired = spec.snapshot.as_ref().map_or(0, |s| s.retired());
            eprintln!(
                "armada batch: snapshot at {point} after {retired} instructions ({:.3} s); every lane starts there",
                t.elapsed().as_secs_f64()
            );
        }
    }
    let bar = Bar::new(spec.lanes.len(), !args.no_progress);
    let start = Instant::now();
    // (a GPU batch's lanes are made while the device opens: they do not need it)
    let spawned = match args.backend {
        Backend::Cpu => None,
        _ => Some(armada_gpu::spawn_lanes(&spec)?),
    };
    let spawned_at = Instant::now();
    let (engines, open_s) = opening
        .join()
        .map_err(|_| anyhow::anyhow!("opening the device failed (a panic in the driver?)"))?;
    let engines = engines?;
    let open_wait = spawned_at.elapsed().as_secs_f64();
    let outcome = match spawned {
        Some(lanes) => armada_gpu::run_spawned_on(&engines, &spec, lanes, &|p| bar.update(p))?,
        None => batch::run_cpu(&spec, &|p| bar.update(p))?,
    };
    let wall = start.elapsed().as_secs_f64();
    bar.bar.finish_and_clear();

    // The CPU engine's run for --check comes before the results are written: lanes that
    // list or read their working directory would otherwise see armada's own output files.
    let checked = if args.check {
        let t = Instant::now();
        let reference = batch::run_cpu(&spec, &|_| {})?;
        Some((
            compare(&outcome.lanes, &reference.lanes),
            t.elapsed().as_secs_f64(),
        ))
    } else {
        None
    };
    let t_results = Instant::now();
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if let Some(dir) = &args.coverage {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for r in &outcome.lanes {
            if let Some(map) = &r.coverage {
                let path = dir.join(format!("{}.cov", r.lane));
                std::fs::write(&path, map.as_slice())
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
    }
    if let Some(path) = &args.out {
        write_jsonl(path, &outcome.lanes, args.output_dir.as_deref())?;
        // how to run any of these lanes again (`armada replay`)
        let argv: Vec<OsString> = std::env::args_os().collect();
        crate::record::write_record(path, &argv, &spec)?;
    } else if let Some(dir) = &args.output_dir {
        for r in &outcome.lanes {
            write_lane_files(dir, r)?;
        }
    }
    if args.show_first {
        if let Some(r) = outcome.lanes.first() {
            std::io::stdout().write_all(&r.stdout)?;
            std::io::stderr().write_all(&r.stderr)?;
        }
    }
    print_summary(args.backend, &outcome, wall);
    if !outcome.stats.is_empty() {
        // where a GPU batch's time went besides the run (the engine's own figures above)
        eprintln!(
            "armada batch: phases s: process start {:.2}, inputs {:.3}, snapshot {:.3}, device open {open_s:.3} (waited for {open_wait:.3}), run {:.3}, results {:.3}",
            age_at_spec,
            (t_snapshot - t_spec).as_secs_f64(),
            (start - t_snapshot).as_secs_f64(),
            wall - open_wait,
            t_results.elapsed().as_secs_f64()
        );
    }
    if outcome
        .lanes
        .iter()
        .any(|r| matches!(r.exit, Exit::Unsupported(_)))
    {
        // the engine cannot run this program (threads on a GPU engine): as `armada run`
        return Ok(125);
    }
    let all_zero = outcome.lanes.iter().all(|r| r.exit == Exit::Code(0));
    if let Some((differ, secs)) = checked {
        eprintln!(
            "armada batch: check: {} of {} lanes identical to the CPU engine (exit, stdout, \
             stderr, instructions{}); the CPU engine took {secs:.3} s",
            outcome.lanes.len() - differ,
            outcome.lanes.len(),
            if spec.coverage { ", coverage" } else { "" },
        );
        if differ > 0 {
            return Ok(2);
        }
    }
    Ok(if all_zero { 0 } else { 1 })
}

/// The one-line summary (and the engine's figures) on stderr.
pub fn print_summary(backend: Backend, outcome: &BatchOutcome, wall: f64) {
    let lanes = &outcome.lanes;
    let instructions: u64 = lanes.iter().map(|r| r.instructions).sum();
    let zero = lanes.iter().filter(|r| r.exit == Exit::Code(0)).count();
    let other_exit = lanes
        .iter()
        .filter(|r| matches!(r.exit, Exit::Code(c) if c != 0))
        .count();
    let signals = lanes
        .iter()
        .filter(|r| matches!(r.exit, Exit::Signal { .. }))
        .count();
    let limit = lanes
        .iter()
        .filter(|r| r.exit == Exit::InstructionLimit)
        .count();
    let unsupported: Vec<&String> = lanes
        .iter()
        .filter_map(|r| match &r.exit {
            Exit::Unsupported(m) => Some(m),
            _ => None,
        })
        .collect();
    let host_steps: u64 = lanes.iter().map(|r| r.host_steps).sum();
    let backend = format!("{backend:?}").to_lowercase();
    let unsupported_text = match unsupported.first() {
        Some(m) => format!(", {} not run to the end ({m})", unsupported.len()),
        None => String::new(),
    };
    eprintln!(
        "armada batch: {} lanes on {backend}: {zero} exited 0, {other_exit} exited non-zero, \
         {signals} killed by a signal, {limit} hit the instruction limit{unsupported_text}; {} \
         instructions in {wall:.3} s = {}instructions/s{}",
        lanes.len(),
        instructions,
        si(instructions as f64 / wall.max(1e-9)),
        if host_steps > 0 {
            format!(" ({host_steps} host steps)")
        } else {
            String::new()
        }
    );
    let line = |stats: &[(String, String)]| {
        stats
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // one device's figures; over several devices, or shards of one, how many
    if !outcome.stats.is_empty() {
        eprintln!("armada batch: {}", line(&outcome.stats));
    }
    // a batch over several devices or shards: each one's share, rate and figures
    for d in &outcome.devices {
        let failed = match &d.failed {
            Some(why) => {
                format!("; it failed ({why}): its unfinished lanes went to the devices left")
            }
            None => String::new(),
        };
        eprintln!(
            "armada batch: device {} ({}): {} lanes ({:.1}%), {} instructions in {:.3} s = {}instructions/s{failed}",
            d.ordinal,
            d.name,
            d.lanes,
            100.0 * d.lanes as f64 / lanes.len().max(1) as f64,
            d.instructions,
            d.seconds,
            si(d.instructions as f64 / d.seconds.max(1e-9)),
        );
        for s in &d.stats {
            eprintln!("armada batch: device {}: {}", d.ordinal, line(s));
        }
    }
}

/// Seconds since this process started (to 10 ms: the kernel's clock ticks), 0 where unknown.
fn process_age() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // the fields after the command's closing parenthesis; starttime is the 22nd field
    let Some(start) = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|v| v.parse::<f64>().ok())
    else {
        return 0.0;
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write; sysconf takes no pointer.
    let (rc, hz) = unsafe {
        (
            libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts),
            libc::sysconf(libc::_SC_CLK_TCK),
        )
    };
    if rc != 0 || hz <= 0 {
        return 0.0;
    }
    (ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9 - start / hz as f64).max(0.0)
}

/// Lanes that differ between two runs of one batch (each described on stderr, up to 10).
pub fn compare(a: &[LaneResult], b: &[LaneResult]) -> usize {
    let mut differ = 0;
    for (x, y) in a.iter().zip(b.iter()) {
        let same = x.exit == y.exit
            && x.stdout == y.stdout
            && x.stderr == y.stderr
            && x.instructions == y.instructions
            && x.coverage == y.coverage;
        if !same {
            differ += 1;
            if differ <= 10 {
                eprintln!(
                    "armada batch: lane {} differs: exit {:?} vs {:?}, instructions {} vs {}, \
                     stdout {} vs {} bytes ({}), stderr {} vs {} bytes{}",
                    x.lane,
                    x.exit,
                    y.exit,
                    x.instructions,
                    y.instructions,
                    x.stdout.len(),
                    y.stdout.len(),
                    if x.stdout == y.stdout {
                        "same"
                    } else {
                        "different"
                    },
                    x.stderr.len(),
                    y.stderr.len(),
                    if x.coverage == y.coverage {
                        ""
                    } else {
                        ", coverage maps differ"
                    }
                );
            }
        }
    }
    differ + a.len().abs_diff(b.len())
}

fn write_lane_files(dir: &Path, r: &LaneResult) -> Result<(PathBuf, PathBuf)> {
    let o = dir.join(format!("{}.stdout", r.lane));
    let e = dir.join(format!("{}.stderr", r.lane));
    std::fs::write(&o, &r.stdout).with_context(|| format!("cannot write {}", o.display()))?;
    std::fs::write(&e, &r.stderr).with_context(|| format!("cannot write {}", e.display()))?;
    Ok((o, e))
}

/// One JSON object per lane.
pub fn write_jsonl(path: &Path, lanes: &[LaneResult], files: Option<&Path>) -> Result<()> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    for r in lanes {
        let (code, signal, message) = match &r.exit {
            Exit::Code(c) => (Some(*c), None, None),
            Exit::Signal { signal, message } => (None, Some(*signal), message.clone()),
            Exit::InstructionLimit => (None, None, None),
            Exit::Unsupported(m) => (None, None, Some(m.clone())),
        };
        let opt = |v: Option<i32>| v.map_or("null".to_string(), |c| c.to_string());
        write!(
            w,
            "{{\"lane\":{},\"status\":{},\"exit_code\":{},\"signal\":{},\"stop\":\"{}\",\
             \"instructions\":{},\"syscalls\":{},\"private_bytes\":{}",
            r.lane,
            r.exit.status(),
            opt(code),
            opt(signal),
            r.stop_reason(),
            r.instructions,
            r.syscalls,
            r.private_bytes
        )?;
        if r.host_steps > 0 {
            write!(w, ",\"host_steps\":{}", r.host_steps)?;
        }
        if let Some(m) = message {
            write!(w, ",\"message\":{}", json_str(m.as_bytes()))?;
        }
        match files {
            Some(dir) => {
                let (o, e) = write_lane_files(dir, r)?;
                write!(
                    w,
                    ",\"stdout_file\":{},\"stderr_file\":{}",
                    json_str(o.as_os_str().as_bytes()),
                    json_str(e.as_os_str().as_bytes())
                )?;
            }
            None => write!(
                w,
                ",\"stdout\":{},\"stderr\":{}",
                json_str(&r.stdout),
                json_str(&r.stderr)
            )?,
        }
        writeln!(w, "}}")?;
    }
    w.flush()?;
    Ok(())
}

/// A JSON string of `b`: UTF-8 as is, other bytes as U+FFFD (the files option keeps bytes).
pub fn json_str(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("64K").unwrap(), 65536);
        assert_eq!(parse_bytes("16M").unwrap(), 16 << 20);
        assert_eq!(parse_bytes("1GiB").unwrap(), 1 << 30);
        assert!(parse_bytes("x").is_err());
    }

    /// `armada batch`'s arguments as clap parses them.
    fn parse(words: &[&str]) -> Result<BatchArgs, clap::Error> {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            batch: BatchArgs,
        }
        Cmd::try_parse_from(std::iter::once("batch").chain(words.iter().copied())).map(|c| c.batch)
    }

    #[test]
    fn commands_files() {
        let dir = std::env::temp_dir().join(format!("armada-commands-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("lanes.txt");
        let f = file.to_str().unwrap();
        std::fs::write(
            &file,
            "# a comment\n\n  prog a 'b c' \"d {lane}\"\n./other --x=1 'it''s'\n",
        )
        .unwrap();
        let words = |c: &Vec<OsString>| -> Vec<String> {
            c.iter().map(|w| w.to_string_lossy().into_owned()).collect()
        };
        let got = lane_commands(&parse(&["--commands", f]).unwrap()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(words(&got[0]), ["prog", "a", "b c", "d {lane}"]);
        assert_eq!(words(&got[1]), ["./other", "--x=1", "its"]);
        // one PROGRAM on the command line: its words
        let one = lane_commands(&parse(&["prog", "--lanes", "x"]).unwrap()).unwrap();
        assert_eq!(words(&one[0]), ["prog", "--lanes", "x"]);
        // neither, or both
        assert!(parse(&[]).is_err());
        assert!(parse(&["--commands", f, "prog"]).is_err());
        // a line with an open quote names its line; a file of comments says what to give
        std::fs::write(&file, "ok\nprog 'open\n").unwrap();
        let e = lane_commands(&parse(&["--commands", f]).unwrap()).unwrap_err();
        assert!(
            format!("{e:#}").contains("lanes.txt:2: unbalanced quotes"),
            "{e:#}"
        );
        std::fs::write(&file, "# nothing\n\n").unwrap();
        let e = lane_commands(&parse(&["--commands", f]).unwrap()).unwrap_err();
        assert!(format!("{e:#}").contains("has no commands"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_str(b"a\"b\n\x01"), "\"a\\\"b\\n\\u0001\"");
    }
}
