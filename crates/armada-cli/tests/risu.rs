//! risu-style random-instruction differential tests.
//!
//! For every instruction class, `tests/risu/gen.py` writes an AArch64 program
//! that runs many random test cases (random register/flag/vector inputs, a
//! short random block of instructions of that class, then a dump of all
//! architectural state).  The program is built with the cross gcc, run under
//! `qemu-aarch64` (the oracle) and under `armada run`, and the two stdout
//! byte streams are compared.  See `tests/risu/README.md`.
//!
//! Environment:
//! * `RISU_CLASSES`  comma/space separated list of classes to run (default: all)
//! * `RISU_SEED`     seed for every class (default: derived from the class name)
//! * `RISU_CASES`    cases per class (default: `DEFAULT_CASES`)
//! * `RISU_TIMEOUT`  seconds allowed per emulator run (default 120)
//! * `RISU_REPORT`   how many differing cases to describe in detail (default 3)
//! * `RISU_FPCR`     `zero`: keep FPCR at 0 (default `random` rounding mode/FZ/DN/AHP)
//! * `ARMADA_BIN`    armada binary to test (default: the one cargo built)
//! * `RISU_BACKEND`  engine for `armada run --backend` (default: the CPU engine)
//! * `RISU_QEMU`, `RISU_CC`, `RISU_PYTHON`: tool overrides
//! * `CI`            if set, missing tools are a failure instead of a skip

use std::collections::HashSet;
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Cases per class when `RISU_CASES` is not set (25 classes -> 12500 cases).
const DEFAULT_CASES: u32 = 500;

macro_rules! risu_classes {
    ($($class:ident),* $(,)?) => {
        const CLASSES: &[&str] = &[$(stringify!($class)),*];
        $(
            #[test]
            fn $class() {
                run_class(stringify!($class));
            }
        )*
    };
}

risu_classes!(
    add_sub_imm,
    add_sub_shifted,
    add_sub_extended,
    adc_sbc,
    logical_imm,
    logical_shifted,
    move_wide,
    pc_rel,
    bitfield,
    extr,
    cond_select,
    cond_compare,
    mul_div,
    data_proc_1,
    shift_reg,
    load_store,
    load_store_excl,
    atomics_lse,
    branch,
    fp_scalar,
    fp_convert,
    simd_int,
    simd_fp,
    simd_ldst,
    fp_estimate,
);

/// The generator's class list must match the tests above.
#[test]
fn classes_match_generator() {
    let tools = match Tools::find() {
        Some(t) => t,
        None => return,
    };
    let out = Command::new(&tools.python)
        .arg(gen_py())
        .arg("--list-classes")
        .output()
        .expect("running gen.py --list-classes");
    assert!(
        out.status.success(),
        "gen.py --list-classes failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let ours: Vec<String> = CLASSES.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed, ours,
        "tests/risu/gen.py --list-classes and the risu_classes! list in risu.rs differ"
    );
}

// ---------------------------------------------------------------- setup

fn repo_root() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    fs::canonicalize(&p).unwrap_or(p)
}

fn gen_py() -> PathBuf {
    repo_root().join("tests/risu/gen.py")
}

fn out_dir() -> PathBuf {
    let target = match env::var_os("CARGO_TARGET_DIR") {
        Some(t) => {
            let t = PathBuf::from(t);
            if t.is_absolute() {
                t
            } else {
                repo_root().join(t)
            }
        }
        None => repo_root().join("target"),
    };
    target.join("risu")
}

fn env_or(name: &str, default: &str) -> String {
    env::var(name)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_string())
}

struct Tools {
    python: String,
    cc: String,
    qemu: String,
}

impl Tools {
    /// Returns None (after printing "skipped") if a tool is missing and CI is
    /// not set; panics if CI is set.
    fn find() -> Option<Tools> {
        let t = Tools {
            python: env_or("RISU_PYTHON", "python3"),
            cc: env_or("RISU_CC", "aarch64-linux-gnu-gcc"),
            qemu: env_or("RISU_QEMU", "qemu-aarch64"),
        };
        let mut missing = Vec::new();
        for tool in [&t.python, &t.cc, &t.qemu] {
            let ok = Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                missing.push(tool.clone());
            }
        }
        if missing.is_empty() {
            return Some(t);
        }
        let msg = format!(
            "risu differential tests need {} (not found: {}); run scripts/test, which provides them",
            "python3, aarch64-linux-gnu-gcc and qemu-aarch64",
            missing.join(", ")
        );
        if env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        println!("skipped: {msg}");
        None
    }

    fn objdump(&self) -> String {
        match self.cc.strip_suffix("gcc") {
            Some(prefix) => format!("{prefix}objdump"),
            None => "aarch64-linux-gnu-objdump".to_string(),
        }
    }
}

fn class_selected(class: &str) -> bool {
    match env::var("RISU_CLASSES") {
        Ok(list) if !list.trim().is_empty() => list
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|c| c == class),
        _ => true,
    }
}

/// Default seed: FNV-1a of the class name, so each class gets its own stream.
fn default_seed(class: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in class.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h % 1_000_000
}

fn armada_bin() -> PathBuf {
    match env::var_os("ARMADA_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_armada")),
    }
}

// ---------------------------------------------------------------- running

struct RunOut {
    status: Option<ExitStatus>,
    timed_out: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl RunOut {
    fn ok(&self) -> bool {
        !self.timed_out && self.status.map(|s| s.success()).unwrap_or(false)
    }

    fn describe(&self) -> String {
        if self.timed_out {
            return "timed out (killed)".to_string();
        }
        match self.status {
            None => "could not be waited for".to_string(),
            Some(s) => {
                use std::os::unix::process::ExitStatusExt;
                match (s.code(), s.signal()) {
                    (Some(c), _) => format!("exit status {c}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    _ => format!("{s}"),
                }
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let s = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = s.lines().collect();
        let start = lines.len().saturating_sub(20);
        lines[start..].join("\n")
    }
}

fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<RunOut, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd))?;
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let t_err = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        thread::sleep(Duration::from_millis(5));
    };
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(RunOut {
        status,
        timed_out,
        stdout,
        stderr,
    })
}

fn check_cmd(what: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("risu: cannot run {what} ({cmd:?}): {e}"));
    if !out.status.success() {
        panic!(
            "risu: {what} failed ({cmd:?}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------- records

struct Layout {
    record: usize,
    fp: bool,
    /// FPSR at offset 784 (the FP classes; side files from before it have no `fpsr=`).
    fpsr: bool,
    mem: usize,
}

impl Layout {
    fn case_len(&self) -> usize {
        self.record + self.mem
    }

    fn parse(side: &str) -> Layout {
        let first = side.lines().next().unwrap_or("");
        let find = |k: &str| -> Option<usize> {
            first
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.parse().ok())
        };
        let get = |k: &str| -> usize {
            find(k).unwrap_or_else(|| panic!("risu: bad side file header {first:?} (no {k}=)"))
        };
        Layout {
            record: get("record"),
            fp: get("fp") != 0,
            fpsr: find("fpsr").unwrap_or(0) != 0,
            mem: get("mem"),
        }
    }

    /// (name, offset, length) of every field of one case's record.
    fn fields(&self) -> Vec<(String, usize, usize)> {
        let mut f = vec![("header".to_string(), 0, 8)];
        for i in 0..31 {
            f.push((format!("x{i}"), 8 + 8 * i, 8));
        }
        f.push(("nzcv".to_string(), 256, 8));
        if self.fp {
            f.push(("fpcr".to_string(), 264, 8));
            for i in 0..32 {
                f.push((format!("v{i}"), 272 + 16 * i, 16));
            }
        }
        if self.fpsr {
            f.push(("fpsr".to_string(), 784, 8));
        }
        for i in 0..self.mem / 8 {
            f.push((format!("mem[x28+{:#05x}]", 8 * i), self.record + 8 * i, 8));
        }
        f
    }
}

fn fmt_val(name: &str, b: &[u8]) -> String {
    if b.len() == 16 {
        let lo = u64::from_le_bytes(b[0..8].try_into().unwrap());
        let hi = u64::from_le_bytes(b[8..16].try_into().unwrap());
        return format!("{hi:016x}_{lo:016x}");
    }
    let v = u64::from_le_bytes(b[0..8].try_into().unwrap());
    if name == "nzcv" {
        let fl: String = ["N", "Z", "C", "V"]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if v >> (31 - i) & 1 == 1 {
                    c.to_string()
                } else {
                    c.to_lowercase()
                }
            })
            .collect();
        return format!("{v:#010x} ({fl})");
    }
    if name == "fpsr" {
        let names = [
            (27, "QC"),
            (7, "IDC"),
            (4, "IXC"),
            (3, "UFC"),
            (2, "OFC"),
            (1, "DZC"),
            (0, "IOC"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(b, _)| v >> b & 1 == 1)
            .map(|(_, n)| *n)
            .collect();
        return format!("{v:#010x} ({})", set.join(" "));
    }
    format!("{v:#018x}")
}

/// The side file's section for one case: (input lines, block lines).
fn case_text(side: &str, case: usize) -> (Vec<String>, Vec<String>) {
    let head = format!("case {case}");
    let (mut ins, mut blk) = (Vec::new(), Vec::new());
    let mut on = false;
    for l in side.lines() {
        if l == head {
            on = true;
        } else if on && l == "end" {
            break;
        } else if on {
            match l.trim_start().strip_prefix("in:") {
                Some(rest) => ins.push(rest.trim().to_string()),
                None => blk.push(l.to_string()),
            }
        }
    }
    (ins, blk)
}

/// Registers (as x<n> / v<n>) that the block's text names.
fn named_regs(block: &[String]) -> HashSet<String> {
    let mut set = HashSet::new();
    for l in block {
        for tok in l.split(|c: char| !c.is_ascii_alphanumeric()) {
            if tok.len() < 2 || !tok.is_char_boundary(1) {
                continue;
            }
            let (p, n) = tok.split_at(1);
            if let Ok(n) = n.parse::<u32>() {
                match p {
                    "x" | "w" if n <= 30 => {
                        set.insert(format!("x{n}"));
                    }
                    "v" | "b" | "h" | "s" | "d" | "q" if n <= 31 => {
                        set.insert(format!("v{n}"));
                    }
                    _ => {}
                }
            }
        }
    }
    set
}

fn disassembly(tools: &Tools, elf: &Path, case: usize) -> String {
    let sym = format!("risu_blk_{case}");
    let out = Command::new(tools.objdump())
        .arg("-d")
        .arg(format!("--disassemble={sym}"))
        .arg(elf)
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let s = String::from_utf8_lossy(&o.stdout);
            let mut lines = s.lines().skip_while(|l| !l.contains(&format!("<{sym}>:")));
            lines.next();
            lines
                .filter(|l| !l.trim().is_empty())
                .map(|l| format!("    {l}\n"))
                .collect()
        }
        _ => "    (objdump not available)\n".to_string(),
    }
}

// ---------------------------------------------------------------- the test

fn run_class(class: &str) {
    let backend = env::var("RISU_BACKEND").ok();
    run_class_on(class, backend.as_deref(), DEFAULT_CASES, &[]);
}

/// The integer and load/store classes the wgpu engine runs in its shader whatever its FP
/// policy, at WGPU_CASES cases each.
const WGPU_CLASSES: &[&str] = &[
    "add_sub_shifted",
    "adc_sbc",
    "logical_imm",
    "bitfield",
    "cond_compare",
    "mul_div",
    "data_proc_1",
    "load_store",
    "atomics_lse",
    "branch",
    "simd_int",
    "simd_ldst",
];
/// Cases per class on wgpu when `RISU_CASES` is not set: lavapipe (CI) is slow.
const WGPU_CASES: u32 = 100;
/// The FP classes, on wgpu with FP in the shader (ARMADA_WGPU_FP=1: fp.wgsl, which a GPU
/// takes on once lanes stop at FP ops and lavapipe otherwise leaves to the host), at
/// WGPU_FP_CASES each under random FPCR: every rounding mode, FZ, DN and AHP.
const WGPU_FP_CLASSES: &[&str] = &["fp_scalar", "simd_fp", "fp_convert", "fp_estimate"];
const WGPU_FP_CASES: u32 = 50;

/// A share of the classes on the wgpu engine, against qemu: the integer classes as one
/// `armada batch --commands` of a lane a class, the FP classes as another (each lavapipe
/// process pays its own start, about 7 s on 2 cores, and a batch spreads its lanes over
/// lavapipe's threads). Runs when ARMADA_TEST_WGPU is set (scripts/test sets it once
/// lavapipe is installed).
#[test]
fn wgpu_share() {
    if env::var_os("ARMADA_TEST_WGPU").is_none() {
        println!("skipped: ARMADA_TEST_WGPU unset (scripts/test sets it)");
        return;
    }
    // (classes, cases, environment)
    type Group<'a> = (&'a [&'a str], u32, &'a [(&'a str, &'a str)]);
    let groups: [Group; 2] = [
        (WGPU_CLASSES, WGPU_CASES, &[]),
        (WGPU_FP_CLASSES, WGPU_FP_CASES, &[("ARMADA_WGPU_FP", "1")]),
    ];
    for (k, (classes, cases, env)) in groups.iter().enumerate() {
        let prepared: Vec<Prepared> = classes
            .iter()
            .filter_map(|c| prepare(c, *cases, env))
            .collect();
        if prepared.is_empty() {
            continue;
        }
        let dir = out_dir().join(format!("wgpu-batch-{k}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let commands: String = prepared
            .iter()
            .map(|p| format!("'{}'\n", p.elf.display()))
            .collect();
        let list = dir.join("commands");
        fs::write(&list, commands).unwrap();
        let mut a = Command::new(armada_bin());
        a.args(["batch", "--backend", "wgpu", "--no-progress", "--commands"])
            .arg(&list)
            .arg("--output-dir")
            .arg(dir.join("lanes"))
            .arg("--out")
            .arg(dir.join("lanes.jsonl"))
            .envs(env.iter().copied());
        let t0 = Instant::now();
        // (the lanes run side by side: the batch took 15 s on 2 cores where the runs one at a
        // time were allowed RISU_TIMEOUT each)
        let batch =
            run_with_timeout(a, prepared[0].timeout * 3).unwrap_or_else(|e| panic!("risu: {e}"));
        let took = t0.elapsed();
        let lines = fs::read_to_string(dir.join("lanes.jsonl")).unwrap_or_default();
        let lines: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line of armada batch --out"))
            .collect();
        assert_eq!(
            lines.len(),
            prepared.len(),
            "risu: armada batch on wgpu ({}) wrote {} lanes' lines for {} classes:\n{}",
            batch.describe(),
            lines.len(),
            prepared.len(),
            batch.stderr_tail()
        );
        for (i, (p, line)) in prepared.iter().zip(&lines).enumerate() {
            // the lane as a run of its own: its exit status, stdout and stderr
            let status = line["status"].as_i64().expect("a lane's status") as i32;
            use std::os::unix::process::ExitStatusExt;
            let read = |ext: &str| fs::read(dir.join("lanes").join(format!("{i}.{ext}")));
            let lane = RunOut {
                status: Some(ExitStatus::from_raw((status & 0xff) << 8)),
                timed_out: batch.timed_out,
                stdout: read("stdout").unwrap_or_default(),
                stderr: read("stderr").unwrap_or_default(),
            };
            judge(p, &lane, took, &format!("lane {i} of a wgpu batch"));
        }
    }
}

/// A class's program, built and run under qemu-aarch64 (the oracle): what an armada run of
/// it is judged against.
struct Prepared {
    class: String,
    tools: Tools,
    seed: u64,
    cases: u32,
    fpcr_arg: &'static str,
    asm: PathBuf,
    side_path: PathBuf,
    elf: PathBuf,
    side: String,
    layout: Layout,
    oracle: RunOut,
    timeout: Duration,
    report_max: usize,
}

/// Runs `class` on `backend` against qemu-aarch64, with `env` set for both (a guest sees its
/// environment: the two must be the same).
fn run_class_on(class: &str, backend: Option<&str>, default_cases: u32, env: &[(&str, &str)]) {
    let Some(p) = prepare(class, default_cases, env) else {
        return;
    };
    let mut a = Command::new(armada_bin());
    a.arg("run").envs(env.iter().copied());
    if let Some(b) = backend {
        a.args(["--backend", b]);
    }
    a.arg(&p.elf);
    let t0 = Instant::now();
    let arm = run_with_timeout(a, p.timeout).unwrap_or_else(|e| panic!("risu: {e}"));
    judge(&p, &arm, t0.elapsed(), "armada run");
}

/// Generates and builds `class`'s program and runs it under qemu-aarch64 with `env`; None
/// (after saying why) where the class is not selected or the tools are missing outside CI.
fn prepare(class: &str, default_cases: u32, env: &[(&str, &str)]) -> Option<Prepared> {
    if !class_selected(class) {
        println!("skipped: {class} not in RISU_CLASSES");
        return None;
    }
    let tools = Tools::find()?;
    let seed: u64 = match env::var("RISU_SEED") {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .expect("RISU_SEED must be an unsigned integer"),
        _ => default_seed(class),
    };
    let cases: u32 = match env::var("RISU_CASES") {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .expect("RISU_CASES must be a positive integer"),
        _ => default_cases,
    };
    assert!(cases > 0, "RISU_CASES must be > 0");
    let timeout = Duration::from_secs(
        env_or("RISU_TIMEOUT", "120")
            .parse()
            .expect("RISU_TIMEOUT: seconds"),
    );
    let report_max: usize = env_or("RISU_REPORT", "3")
        .parse()
        .expect("RISU_REPORT: a number");

    let dir = out_dir();
    fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("risu: cannot create {}: {e}", dir.display()));
    let fpcr_zero = match env::var("RISU_FPCR") {
        Ok(v) if v == "zero" || v == "0" => true,
        Ok(v) if v.is_empty() || v == "random" => false,
        Err(_) => false,
        Ok(v) => panic!("RISU_FPCR must be `random` or `zero`, not {v:?}"),
    };
    let fpcr_arg = if fpcr_zero { "zero" } else { "random" };
    let stem = format!(
        "{class}-s{seed}-n{cases}{}",
        if fpcr_zero { "-fpcr0" } else { "" }
    );
    let asm = dir.join(format!("{stem}.S"));
    let side_path = dir.join(format!("{stem}.cases"));
    let elf = dir.join(&stem);

    // generate + build
    check_cmd(
        "gen.py",
        Command::new(&tools.python)
            .arg(gen_py())
            .args([
                "--class",
                class,
                "--seed",
                &seed.to_string(),
                "--cases",
                &cases.to_string(),
                "--out",
            ])
            .arg(&asm)
            .args(["--fpcr", fpcr_arg])
            .arg("--cases-out")
            .arg(&side_path),
    );
    check_cmd(
        "cross gcc",
        Command::new(&tools.cc)
            .args(["-nostdlib", "-static", "-o"])
            .arg(&elf)
            .arg(&asm),
    );
    let side = fs::read_to_string(&side_path).expect("reading side file");
    let layout = Layout::parse(&side);
    let expect_len = layout.case_len() * cases as usize;

    // oracle
    let mut q = Command::new(&tools.qemu);
    q.arg(&elf).envs(env.iter().copied());
    let oracle = run_with_timeout(q, timeout).unwrap_or_else(|e| panic!("risu: {e}"));
    if !oracle.ok() || oracle.stdout.len() != expect_len {
        panic!(
            "risu: oracle problem: {} {} on {}: {}, {} of {} bytes of output\n{}",
            tools.qemu,
            class,
            elf.display(),
            oracle.describe(),
            oracle.stdout.len(),
            expect_len,
            oracle.stderr_tail()
        );
    }

    Some(Prepared {
        class: class.to_string(),
        tools,
        seed,
        cases,
        fpcr_arg,
        asm,
        side_path,
        elf,
        side,
        layout,
        oracle,
        timeout,
        report_max,
    })
}

/// Passes where `arm` (armada's run of `p`'s program, `what` it was) exited 0 with the
/// oracle's output; otherwise panics with the cases that differ, their inputs and code.
fn judge(p: &Prepared, arm: &RunOut, took: Duration, what: &str) {
    let Prepared {
        class,
        tools,
        seed,
        cases,
        fpcr_arg,
        asm,
        side_path,
        elf,
        side,
        layout,
        oracle,
        report_max,
        ..
    } = p;
    let (seed, cases, report_max) = (*seed, *cases, *report_max);
    if arm.ok() && arm.stdout == oracle.stdout {
        println!(
            "risu {class}: {cases} cases, seed {seed}: ok ({what}, {:.2}s)",
            took.as_secs_f64()
        );
        return;
    }

    // ------------------------------------------------------------ report
    let clen = layout.case_len();
    let want = &oracle.stdout;
    let got = &arm.stdout;
    let complete = got.len() / clen;
    let differing: Vec<usize> = (0..complete.min(cases as usize))
        .filter(|&c| want[c * clen..(c + 1) * clen] != got[c * clen..(c + 1) * clen])
        .collect();
    let truncated = got.len() != want.len();
    let mut r = String::new();
    let _ = writeln!(
        r,
        "\nrisu MISMATCH: class={class} seed={seed} cases={cases} (qemu-aarch64 vs {}, {what})",
        armada_bin().display()
    );
    let _ = writeln!(
        r,
        "  armada: {}, {} of {} bytes of output",
        arm.describe(),
        got.len(),
        want.len()
    );
    if !differing.is_empty() {
        let list: Vec<String> = differing.iter().take(30).map(|c| c.to_string()).collect();
        let _ = writeln!(
            r,
            "  {} of {} complete case(s) differ: {}{}",
            differing.len(),
            complete.min(cases as usize),
            list.join(" "),
            if differing.len() > 30 { " ..." } else { "" }
        );
    }
    let mut detail: Vec<usize> = differing.iter().copied().take(report_max.max(1)).collect();
    if truncated && complete < cases as usize && detail.len() < report_max.max(1) {
        // the case during which armada stopped (or produced extra output)
        let _ = writeln!(
            r,
            "  armada's output stops inside case {complete} ({} bytes of that case's {clen})",
            got.len() - complete * clen
        );
        detail.push(complete);
    } else if truncated && complete >= cases as usize {
        let _ = writeln!(
            r,
            "  armada wrote {} extra bytes after the last case",
            got.len() - want.len()
        );
    }
    if !truncated && differing.is_empty() {
        let _ = writeln!(
            r,
            "  (output identical, but armada did not exit with status 0)"
        );
    }
    let _ = writeln!(
        r,
        "  program: {} (source {}, cases {})",
        elf.display(),
        asm.display(),
        side_path.display()
    );
    for &c in &detail {
        let _ = writeln!(r, "\n--- case {c} ---");
        let w = &want[c * clen..(c + 1) * clen];
        let g_end = ((c + 1) * clen).min(got.len());
        let g = if c * clen < got.len() {
            &got[c * clen..g_end]
        } else {
            &[][..]
        };
        let mut n = 0;
        let (ins, blk) = case_text(side, c);
        let mut show = named_regs(&blk);
        for (name, off, len) in layout.fields() {
            let wv = &w[off..off + len];
            if off + len > g.len() {
                if n < 60 {
                    let _ = writeln!(
                        r,
                        "  {name:<14} qemu={}  armada=(missing)",
                        fmt_val(&name, wv)
                    );
                }
                n += 1;
                break;
            }
            let gv = &g[off..off + len];
            if wv != gv {
                show.insert(name.clone());
                if n < 60 {
                    let _ = writeln!(
                        r,
                        "  {name:<14} qemu={}  armada={}",
                        fmt_val(&name, wv),
                        fmt_val(&name, gv)
                    );
                }
                n += 1;
            }
        }
        if n > 60 {
            let _ = writeln!(r, "  ... {} more differing fields", n - 60);
        }
        let _ = writeln!(
            r,
            "  inputs (registers the block names or that differ; all in the side file):"
        );
        for l in &ins {
            let kept: Vec<&str> = l
                .split_whitespace()
                .filter(|kv| match kv.split_once('=') {
                    Some((k, _)) => show.contains(k) || matches!(k, "nzcv" | "fpcr" | "scratch"),
                    None => true,
                })
                .collect();
            if kept.iter().any(|kv| kv.contains('=')) {
                let _ = writeln!(r, "    {}", kept.join(" "));
            }
        }
        let _ = writeln!(r, "  block:");
        for l in &blk {
            let _ = writeln!(r, "  {l}");
        }
        let _ = writeln!(r, "  disassembly:");
        r.push_str(&disassembly(tools, elf, c));
        let _ = writeln!(
            r,
            "  reproduce: python3 tests/risu/gen.py --class {class} --seed {seed} --cases {cases} --case {c} --fpcr {fpcr_arg} \
             --out /tmp/risu-case.S && aarch64-linux-gnu-gcc -nostdlib -static -o /tmp/risu-case /tmp/risu-case.S \
             && armada run /tmp/risu-case | od -A d -t x8  (compare: qemu-aarch64 /tmp/risu-case | od -A d -t x8)"
        );
    }
    if !arm.stderr.is_empty() {
        let _ = writeln!(r, "\narmada stderr (tail):\n{}", arm.stderr_tail());
    }
    panic!("{r}");
}
