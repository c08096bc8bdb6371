//! `armada fuzz`: coverage-guided fuzzing of one program (crate `armada-fuzz`), with a
//! progress line on stderr and a summary at the end.

use crate::run::{guest_env, GuestCommand};
use crate::Backend;
use anyhow::{bail, Context, Result};
use armada_core::linux::LinuxConfig;
use armada_core::snapshot::{Point, SnapshotError};
use armada_fuzz::{
    corpus, input_route, snapshot_point, FuzzOptions, FuzzStats, InputKind, Target, TargetSpec,
};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How the input reaches the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputArg {
    /// As its stdin.
    Stdin,
    /// As the file `@@` stands for in its arguments.
    File,
    /// As `data, size` in x0/x1 of the function given by --snapshot-at (libFuzzer's
    /// LLVMFuzzerTestOneInput); its return ends the execution.
    Buffer,
}

#[derive(Args)]
pub struct FuzzArgs {
    /// Engine to run on: the CPU engine fuzzes with every host core; a GPU engine runs each
    /// round's inputs as one batch of lanes, with coverage kept on the device.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: Backend,
    /// Inputs run at once, one lane each (default: on the CPU engine 256, or 32 a host
    /// thread where that is more; 16384 on a GPU). A seed gives the same run for the same
    /// --lanes on every engine and machine.
    #[arg(long)]
    pub lanes: Option<usize>,
    /// Inputs to start from; new interesting inputs are added here (created if missing;
    /// an empty directory starts from one empty input). A second run resumes from it.
    /// (Or `-o`.)
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present_any = ["output", "cmin"],
        conflicts_with = "output"
    )]
    pub corpus: Option<PathBuf>,
    /// Where crashing inputs (`crash-sigN-pcADDR-stackHASH`, one per bug: the signal, the
    /// faulting PC and the functions on the stack) and hanging ones (`hang-HASH`) are
    /// saved. (Or `-o`.)
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present_any = ["output", "cmin"],
        conflicts_with = "output"
    )]
    pub crashes: Option<PathBuf>,
    /// AFL++'s output directory: the run's state in OUT/default (or OUT/NAME with -M or
    /// -S): queue/, crashes/, hangs/, fuzzer_stats, plot_data, as afl-fuzz writes them, so
    /// afl-whatsup, afl-plot and afl-cmin read it. A second run with the same OUT resumes.
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Seeds to start from, with -o (AFL's -i); the inputs to minimize, with --cmin.
    #[arg(short = 'i', long, value_name = "DIR")]
    pub seeds: Option<PathBuf>,
    /// Minimize a corpus instead of fuzzing (as afl-cmin): run every input of -i (or
    /// --corpus, or -o's queue) and copy to DIR a small set of them that reaches every edge
    /// and hit-count bucket the whole corpus reaches. Inputs that crash or hang are left out.
    #[arg(long, value_name = "DIR")]
    pub cmin: Option<PathBuf>,
    /// With -o: this is the main instance NAME of several sharing OUT (AFL's -M); each
    /// takes the others' new queue entries now and then.
    #[arg(
        short = 'M',
        value_name = "NAME",
        requires = "output",
        conflicts_with = "secondary"
    )]
    pub main: Option<String>,
    /// With -o: a secondary instance NAME sharing OUT (AFL's -S).
    #[arg(short = 'S', value_name = "NAME", requires = "output")]
    pub secondary: Option<String>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    pub max_time: Option<f64>,
    /// Stop after this many executions.
    #[arg(long, value_name = "N")]
    pub max_execs: Option<u64>,
    /// Stop at the first new crash or hang.
    #[arg(long)]
    pub stop_on_crash: bool,
    /// A dictionary of tokens (AFL/libFuzzer format: "value" or name="value" a line).
    #[arg(short = 'x', long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
    /// Run the program's start once, up to POINT, and start every execution from there:
    /// `input` (its first read of the input: the default), `main`, another symbol, an
    /// address (0x...), or `none` (every execution runs the whole program). When the
    /// default is not reached, executions run from the entry.
    #[arg(long, value_name = "POINT")]
    pub snapshot_at: Option<String>,
    /// How the input reaches the program (default: `file` when an argument is @@,
    /// `buffer` with --snapshot-at LLVMFuzzerTestOneInput, `stdin` otherwise).
    #[arg(long, value_enum)]
    pub input: Option<InputArg>,
    /// Longest input made, in bytes.
    #[arg(long, default_value_t = 4096)]
    pub max_len: usize,
    /// Instructions an execution may run before it counts as a hang.
    #[arg(long, value_name = "N", default_value_t = 50_000_000)]
    pub exec_limit: u64,
    /// Instructions the start may run to reach --snapshot-at.
    #[arg(long, value_name = "N", default_value_t = 10_000_000_000)]
    pub start_limit: u64,
    /// Private guest memory per execution (bytes; K, M, G suffixes).
    #[arg(long, value_name = "BYTES", value_parser = crate::batch::parse_bytes)]
    pub lane_memory: Option<u64>,
    /// Seed of the mutations and of the guest's random bytes.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the figures (execs, execs/s, corpus, edges, crashes, hangs) as JSON here,
    /// after every round.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// No progress line.
    #[arg(long)]
    pub no_progress: bool,
    /// Set a variable in the guest's environment (which starts as armada's own).
    #[arg(short = 'E', value_name = "VAR=VALUE")]
    pub set_env: Vec<String>,
    /// Remove a variable from the guest's environment.
    #[arg(short = 'U', value_name = "VAR")]
    pub unset_env: Vec<String>,
    /// Confine guest file access to DIR.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub guest: GuestCommand,
}

/// The instance's name in an AFL++ output directory.
fn instance_name(args: &FuzzArgs) -> String {
    args.main
        .clone()
        .or_else(|| args.secondary.clone())
        .unwrap_or_else(|| "default".into())
}

/// Where the `@@` file is kept: the crashes directory, or the instance's directory (AFL's
/// `.cur_input`).
fn work_dir(args: &FuzzArgs) -> PathBuf {
    match (&args.output, &args.crashes) {
        (Some(o), _) => o.join(instance_name(args)),
        (None, Some(c)) => c.clone(),
        // (--cmin alone: beside the minimized corpus)
        (None, None) => args.cmin.clone().unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// The target `args` describe.
pub(crate) fn target_spec(args: &FuzzArgs) -> Result<TargetSpec> {
    let program = args.guest.program();
    let guest_path = program.as_os_str().as_bytes().to_vec();
    let words: Vec<Vec<u8>> = args
        .guest
        .args()
        .iter()
        .map(|a| a.as_bytes().to_vec())
        .collect();
    let point = args
        .snapshot_at
        .as_deref()
        .map_or(Some(Point::Input), snapshot_point);
    let kind = args.input.map(|k| match k {
        InputArg::Stdin => InputKind::Stdin,
        InputArg::File => InputKind::File,
        InputArg::Buffer => InputKind::Buffer,
    });
    let (words, via) = input_route(words, point.as_ref(), kind, &work_dir(args), args.max_len)?;
    let mut argv = vec![guest_path.clone()];
    argv.extend(words);
    let config = LinuxConfig {
        root: args.root.clone(),
        sysroot: args.guest.opts.sysroot.clone(),
        strace: false,
        deterministic: true,
        seed: args.seed,
        exe_host_path: std::fs::canonicalize(&program).unwrap_or(program.clone()),
        exe_guest_path: guest_path,
        max_processes: Some(args.guest.opts.max_processes),
        net: args.guest.opts.net.mode(),
        ignored_signals: 0,
        host_exec: false,
    };
    Ok(TargetSpec {
        program,
        argv,
        env: guest_env(&args.set_env, &args.unset_env)?,
        config,
        via,
        snapshot_at: point,
        exec_limit: args.exec_limit,
        start_limit: args.start_limit,
        lane_memory: args.lane_memory,
    })
}

/// The target of `spec`; where the point is the default (`default_point`) and the program
/// never reaches it, one that runs whole every time (said on stderr where `warn`).
pub(crate) fn make_target(spec: TargetSpec, default_point: bool, warn: bool) -> Result<Target> {
    match Target::new(spec.clone()) {
        Err(e)
            if default_point
                && e.chain().any(|c| {
                    matches!(
                        c.downcast_ref::<SnapshotError>(),
                        Some(SnapshotError::NotReached { .. })
                    )
                }) =>
        {
            if warn {
                eprintln!(
                    "armada fuzz: warning: no snapshot: {e:#}; every execution runs the whole program"
                );
            }
            Target::new(TargetSpec {
                snapshot_at: None,
                ..spec
            })
        }
        r => r,
    }
}

/// `armada fuzz --cmin OUT`: the inputs of -i (or --corpus, or -o's queue) minimized into
/// OUT (see `armada_fuzz::cmin`).
fn cmin(
    args: &FuzzArgs,
    target: Target,
    engine: Option<armada_gpu::Engine>,
    lanes: usize,
    out: &std::path::Path,
) -> Result<u8> {
    let from = match (&args.seeds, &args.corpus, &args.output) {
        (Some(d), _, _) | (None, Some(d), _) => d.clone(),
        (None, None, Some(o)) => o.join(instance_name(args)).join("queue"),
        (None, None, None) => bail!("--cmin needs inputs: -i DIR (or --corpus DIR, or -o OUT)"),
    };
    let inputs = corpus::read_dir_sorted(&from, args.max_len.max(1))
        .with_context(|| format!("cannot read the inputs to minimize in {}", from.display()))?;
    if inputs.is_empty() {
        bail!("{} holds no inputs to minimize", from.display());
    }
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        bail!(
            "{} is not empty: --cmin writes the minimized corpus into a new or empty directory",
            out.display()
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let exec = armada_fuzz::executor::Executor::new(target, engine);
    let m = armada_fuzz::cmin::minimize_corpus(&exec, &inputs, lanes)?;
    for &i in &m.kept {
        corpus::write_new(&out.join(&inputs[i].0), &inputs[i].1)?;
    }
    eprintln!(
        "armada fuzz --cmin: {} inputs of {} -> {} in {}: every one of the {} (edge, hit-count) tuples they reach; {} crashed or hung, {} were duplicates (left out)",
        inputs.len(),
        from.display(),
        m.kept.len(),
        out.display(),
        m.tuples,
        m.crashed,
        m.duplicates
    );
    Ok(0)
}

/// `h:mm:ss`.
fn clock(d: Duration) -> String {
    let t = d.as_secs();
    format!("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
}

/// The live status screen (stderr a terminal), as afl-fuzz's shows the figures people look
/// at first.
fn status_screen(s: &FuzzStats, title: &str) -> Vec<String> {
    let ago = |t: Option<Duration>| match t {
        Some(t) => format!("{} ago", clock(s.elapsed.saturating_sub(t))),
        None => "none yet".into(),
    };
    let cvg = 100.0 * s.edges as f64 / armada_core::coverage::MAP_SIZE as f64;
    vec![
        format!("\x1b[1m{title}\x1b[0m"),
        format!(
            "  run time {:>12}   last new find {:>16}   last crash {:>16}",
            clock(s.elapsed),
            ago(s.last_find),
            ago(s.last_crash)
        ),
        format!(
            "  execs    {:>12}   speed {:>16.0}/s     instructions/exec {:>10.0}",
            s.execs,
            s.execs_per_sec(),
            s.instructions as f64 / s.execs.max(1) as f64
        ),
        format!(
            "  corpus   {:>12}   favored {:>16}     pending {:>16}",
            s.corpus, s.favored, s.pending
        ),
        format!(
            "  edges    {:>12}   map {:>19.2}%     cycles {:>17}",
            s.edges, cvg, s.cycles
        ),
        format!(
            "  crashes  {:>12}   hangs {:>18}     depth {:>18}",
            s.crashes, s.hangs, s.max_depth
        ),
        "  stability     100.00% (every run of an input takes the same path)".into(),
    ]
}

fn line(s: &FuzzStats) -> String {
    format!(
        "{:>7.1}s  execs {} ({:.0}/s)  corpus {}  edges {}  crashes {}  hangs {}",
        s.elapsed.as_secs_f64(),
        s.execs,
        s.execs_per_sec(),
        s.corpus,
        s.edges,
        s.crashes,
        s.hangs
    )
}

pub fn fuzz(args: FuzzArgs) -> Result<u8> {
    // (on many cores a round of 256 is 16 executions a thread: the round's end, which
    // waits for the slowest thread, and the fuzzer's serial part between rounds then cost
    // more than a larger round does)
    let lanes = args.lanes.unwrap_or(if args.backend == Backend::Cpu {
        256.max(32 * rayon::current_num_threads())
    } else {
        16384
    });
    if lanes == 0 {
        bail!("--lanes must be at least 1");
    }
    crate::run::check_backend(args.backend)?;
    if args.backend != Backend::Cpu {
        // (the GPU lanes' host mirrors: heap pages, see `memory::heap_pages_only`)
        armada_core::memory::heap_pages_only();
    }
    let tokens = match &args.dict {
        Some(p) => corpus::read_dict(p)?,
        None => Vec::new(),
    };
    crate::run::refuse_option_as_program(&args.guest.program())?;
    if args.seeds.is_some() && args.output.is_none() && args.cmin.is_none() {
        bail!("-i (seeds) goes with -o (an AFL++ output directory) or --cmin; with --corpus, the corpus directory holds the seeds");
    }
    let spec = target_spec(&args)?;
    let engine = crate::run::gpu_engine(args.backend)?;
    let t = Instant::now();
    let target = make_target(spec.clone(), args.snapshot_at.is_none(), true)?;
    if let Some(out) = &args.cmin {
        return cmin(&args, target, engine, lanes, out);
    }
    let progress = !args.no_progress;
    if let (Some(s), true) = (target.snapshot(), progress) {
        eprintln!(
            "armada fuzz: snapshot at {} after {} instructions ({:.3} s); every execution starts there",
            s.point(),
            s.retired(),
            t.elapsed().as_secs_f64()
        );
    }
    let afl = args.output.as_ref().map(|out| {
        let mut command_line = vec![args.guest.program().to_string_lossy().into_owned()];
        command_line.extend(
            args.guest
                .args()
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        armada_fuzz::AflOptions {
            out: out.clone(),
            name: instance_name(&args),
            seeds: args.seeds.clone(),
            command_line,
        }
    });
    let dirs_shown = match &afl {
        Some(a) => a.out.join(&a.name).display().to_string(),
        None => args
            .corpus
            .clone()
            .unwrap_or_default()
            .display()
            .to_string(),
    };
    let opts = FuzzOptions {
        corpus_dir: args.corpus.clone().unwrap_or_default(),
        crashes_dir: args.crashes.clone().unwrap_or_default(),
        afl,
        exec_limit: args.exec_limit,
        lanes,
        max_time: args.max_time.map(Duration::from_secs_f64),
        max_execs: args.max_execs,
        stop_on_crash: args.stop_on_crash,
        seed: args.seed,
        max_len: args.max_len.max(1),
        tokens,
        pipeline: None,
    };
    let tty = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    let mut warned = 0;
    let mut shown = 0;
    let mut started = false;
    let (mut drawn, mut printed) = (0usize, false);
    let title = format!(
        "armada fuzz: {} on the {} engine{}",
        args.guest.program().display(),
        match args.backend {
            Backend::Cpu => "CPU",
            Backend::Cuda => "CUDA",
            Backend::Wgpu => "wgpu",
        },
        if args.backend == Backend::Cpu {
            format!(", {} host threads", rayon::current_num_threads())
        } else {
            String::new()
        }
    );
    // where `armada replay` finds how this run was made (its directories exist by the first
    // report)
    let record_dir = match &args.output {
        Some(o) => Some(o.join(instance_name(&args))),
        None => args.crashes.clone(),
    };
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut report = |s: &FuzzStats| {
        if !started {
            started = true;
            if let Some(d) = &record_dir {
                if let Err(e) = crate::record::write_fuzz_record(d, &argv, &spec) {
                    eprintln!(
                        "armada fuzz: warning: {e:#}: `armada replay` of its files will not work"
                    );
                }
            }
            eprintln!(
                "armada fuzz: {} inputs from {}, {} crashes and hangs saved there before",
                s.seeds, dirs_shown, s.known_crashes
            );
        }
        for w in &s.warnings[warned..] {
            eprintln!("armada fuzz: warning: {w}");
            printed = true;
        }
        warned = s.warnings.len();
        for (p, r) in s.saved[shown..].iter().zip(&s.reports[shown..]) {
            eprintln!("armada fuzz: saved {}: {r}", p.display());
            printed = true;
        }
        shown = s.saved.len();
        if let Some(path) = &args.stats_json {
            // a failed write is reported once at the end, not per round
            let _ = std::fs::write(path, s.to_json() + "\n");
        }
        if progress && last.elapsed() >= Duration::from_secs(if tty { 1 } else { 10 }) {
            last = Instant::now();
            if tty {
                // the status screen: redrawn in place (the lines printed since, saved
                // crashes and warnings, scroll above it)
                let screen = status_screen(s, &title);
                let mut err = std::io::stderr().lock();
                if drawn > 0 && !printed {
                    let _ = write!(err, "\x1b[{drawn}A");
                }
                for l in &screen {
                    let _ = writeln!(err, "\r\x1b[K{l}");
                }
                let _ = err.flush();
                drawn = screen.len();
                printed = false;
            } else {
                eprintln!("armada fuzz: {}", line(s));
            }
        }
        true
    };
    let stats = armada_fuzz::fuzz(target, &opts, engine, &mut report)?;
    if let Some(path) = &args.stats_json {
        std::fs::write(path, stats.to_json() + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!("armada fuzz: done: {}", line(&stats));
    Ok(if stats.crashes > 0 { 1 } else { 0 })
}
