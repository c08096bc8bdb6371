//! Shared machinery for armada's differential tests.
//!
//! qemu-aarch64 is the oracle: for every case, the guest program is run once under
//! `qemu-aarch64 PROG ARGS...` and once under `armada run PROG ARGS...`, with the same
//! arguments, stdin bytes, environment and working directory, and the two runs must agree
//! on stdout bytes, exit status (exit code, or 128+N when killed by signal N), stderr
//! (except for cases that die by a signal: armada prints its own fault line there) and
//! on the files left in the working directory.
//!
//! Environment knobs (all optional):
//! - `ARMADA_BIN`: the armada binary to test (default: the one cargo just built).
//! - `QEMU_AARCH64`: the oracle (default `qemu-aarch64` from PATH).
//! - `ARMADA_TEST_FILTER`: comma-separated substrings; only cases whose name contains one run.
//! - `ARMADA_TEST_SKIP`: comma-separated substrings; cases whose name contains one are skipped.
//! - `ARMADA_TEST_JOBS`: parallel cases (default: number of CPUs).
//! - `ARMADA_TEST_TIMEOUT`: seconds allowed per process run (default 120).
//! - `ARMADA_TEST_KEEP`: keep the per-case working directories.
//! - `ARMADA_TEST_CHECK_NOFORK`: also run each case under `qemu-aarch64 -strace` and fail
//!   cases that fork, clone or exec (armada runs single-process programs only).
//! - `CI` (or `ARMADA_TEST_STRICT`, set by scripts/test): when set, missing tools are a
//!   failure instead of a skip.
//! - `ARMADA_TEST_ORACLE_CACHE=DIR`: keep qemu's runs in DIR and compare later passes over
//!   the same cases against them (scripts/test sets it: `oracle_cache.rs`).
#![allow(dead_code)]

pub mod oracle_cache;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// Modification time given to every input file a case creates (2001-09-09 01:46:40 UTC), so
/// that programs which record or print mtimes (gzip, ls -l, diff -u) are deterministic.
pub const FIXED_MTIME_SECS: u64 = 1_000_000_000;

/// The workspace root (`crates/armada-cli/../..`).
pub fn workspace_root() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    p.canonicalize().unwrap_or(p)
}

/// The armada binary under test: `$ARMADA_BIN`, else the one cargo built for this package.
pub fn armada_bin() -> PathBuf {
    match std::env::var_os("ARMADA_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_armada")),
    }
}

/// The oracle: `$QEMU_AARCH64`, else `qemu-aarch64`.
pub fn qemu_bin() -> OsString {
    match std::env::var_os("QEMU_AARCH64") {
        Some(p) if !p.is_empty() => p,
        _ => OsString::from("qemu-aarch64"),
    }
}

/// True on CI (env `CI` set) or under scripts/test (which sets `ARMADA_TEST_STRICT` after
/// installing everything): then a missing tool fails the test instead of skipping it.
pub fn in_ci() -> bool {
    ["CI", "ARMADA_TEST_STRICT"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Looks a program up like the shell does (a name containing `/` is taken as a path).
pub fn find_program(name: &OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|c| is_executable(c))
}

/// Writes straight to the process's stderr, bypassing libtest's output capture, so that
/// skips are visible in a normal `cargo test` run.
pub fn loud(msg: &str) {
    let mut e = io::stderr().lock();
    let _ = writeln!(e, "{msg}");
    let _ = e.flush();
}

/// A test cannot run because something is missing. On CI (env `CI` set) that is a
/// failure; elsewhere the test prints a loud skip line and the caller returns.
pub fn unavailable(test: &str, reason: &str) {
    if in_ci() {
        panic!(
            "{test}: {reason}.\nCI (or ARMADA_TEST_STRICT) is set, so this is a failure, not a skip: run the \
             tests through scripts/test, which installs qemu-user, gcc-aarch64-linux-gnu and the busybox/bash debs."
        );
    }
    loud(&format!(
        "\n################################################################################\n\
         ### skipped: {test}: {reason}\n\
         ### (run scripts/test to install what is missing; with CI set this would fail)\n\
         ################################################################################"
    ));
}

/// Checks that every named tool can be found; reports through [`unavailable`] if not.
pub fn require_tools(test: &str, tools: &[OsString]) -> bool {
    let missing: Vec<String> = tools
        .iter()
        .filter(|t| find_program(t).is_none())
        .map(|t| t.to_string_lossy().into_owned())
        .collect();
    if missing.is_empty() {
        return true;
    }
    unavailable(test, &format!("not found on PATH: {}", missing.join(", ")));
    false
}

/// Checks that the armada binary exists (it always does unless ARMADA_BIN points elsewhere).
pub fn require_armada(test: &str) -> bool {
    let bin = armada_bin();
    if is_executable(&bin) || find_program(bin.as_os_str()).is_some() {
        return true;
    }
    panic!(
        "{test}: armada binary {} does not exist or is not executable (check ARMADA_BIN)",
        bin.display()
    );
}

/// Builds the C programs of `tests/guest/SRC` with tests/guest/build-processes.sh into
/// `$ENV_VAR`, or `target/OUT` when that is unset, once per test process per `built` cell;
/// None (after [`unavailable`]) when the cross compiler or qemu is missing. A failed build
/// is a failure: the compiler is there.
pub fn build_guest_c(
    test: &str,
    built: &'static OnceLock<Result<PathBuf, String>>,
    env_var: &str,
    out: &str,
    src: &str,
) -> Option<PathBuf> {
    if !require_tools(test, &["aarch64-linux-gnu-gcc".into(), qemu_bin()]) {
        return None;
    }
    require_armada(test);
    let r = built.get_or_init(|| {
        let root = workspace_root();
        let out_dir = match std::env::var_os(env_var) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => root.join("target").join(out),
        };
        let script = root.join("tests/guest/build-processes.sh");
        let o = Command::new("bash")
            .arg(&script)
            .arg(&out_dir)
            .arg(root.join("tests/guest").join(src))
            .current_dir(&root)
            .output()
            .map_err(|e| format!("could not run {}: {e}", script.display()))?;
        if !o.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}{}",
                script.display(),
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(out_dir)
    });
    match r {
        Ok(d) => Some(d.clone()),
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Builds the guest programs once per test process with `tests/guest/build.sh target/guest`
/// (run from the workspace root) and returns the output directory.
pub fn guest_programs_dir() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = workspace_root();
            let script = root.join("tests/guest/build.sh");
            let out = Command::new("bash")
                .arg(&script)
                .arg("target/guest")
                .current_dir(&root)
                .output()
                .map_err(|e| format!("could not run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} target/guest failed ({}):\n{}{}",
                    script.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(root.join("target/guest"))
        })
        .clone()
}

/// One guest binary named in `programs.list`: its file name and the source it came from
/// (variants such as `atomics-lse` share the cases of their base program `atomics`).
#[derive(Clone, Debug)]
pub struct GuestProgram {
    pub name: String,
    pub base: String,
    pub path: PathBuf,
}

pub fn list_guest_programs(dir: &Path) -> Result<Vec<GuestProgram>, String> {
    let list = dir.join("programs.list");
    let text =
        fs::read_to_string(&list).map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    let mut v = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), base) = (it.next(), it.next()) else {
            continue;
        };
        v.push(GuestProgram {
            name: name.to_string(),
            base: base.unwrap_or(name).to_string(),
            path: dir.join(name),
        });
    }
    Ok(v)
}

/// One differential test case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique, human-readable name (used for filtering and reports).
    pub name: String,
    /// The guest executable (passed to both qemu and armada as given).
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub stdin: Vec<u8>,
    /// Extra environment on top of [`base_env`].
    pub env: Vec<(OsString, OsString)>,
    /// Files created in the (fresh, empty) working directory before each run.
    pub files: Vec<(String, Vec<u8>)>,
    /// Status qemu must produce; a different qemu status means the test or the host is
    /// broken, and is reported as such.
    pub expect_status: Option<i32>,
    pub compare_stderr: bool,
    pub compare_files: bool,
    pub timeout: Duration,
    /// Options for qemu before the program (`qemu-aarch64 QEMU_ARGS... PROG ARGS...`),
    /// e.g. `-L SYSROOT`.
    pub qemu_args: Vec<OsString>,
    /// Options for armada before the program (`armada run ARMADA_ARGS... PROG ARGS...`).
    pub armada_args: Vec<OsString>,
}

impl Case {
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> Case {
        Case {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            stdin: Vec::new(),
            env: Vec::new(),
            files: Vec::new(),
            expect_status: None,
            compare_stderr: true,
            compare_files: true,
            timeout: default_timeout(),
            qemu_args: Vec::new(),
            armada_args: Vec::new(),
        }
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Case {
        self.args.push(a.into());
        self
    }
    pub fn args<I, S>(mut self, args: I) -> Case
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Case {
        self.stdin = bytes.into();
        self
    }
    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Case {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn file(mut self, name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Case {
        self.files.push((name.into(), bytes.into()));
        self
    }
    pub fn files(mut self, files: &[(String, Vec<u8>)]) -> Case {
        self.files.extend(files.iter().cloned());
        self
    }
    /// Expected (normalized) status. A status above 128 means death by a signal, for
    /// which stderr is not compared.
    pub fn expect_status(mut self, status: i32) -> Case {
        self.expect_status = Some(status);
        if status > 128 {
            self.compare_stderr = false;
        }
        self
    }
    pub fn ignore_stderr(mut self) -> Case {
        self.compare_stderr = false;
        self
    }
    pub fn timeout(mut self, d: Duration) -> Case {
        self.timeout = d;
        self
    }
    /// An option for qemu only, placed before the program.
    pub fn qemu_arg(mut self, a: impl Into<OsString>) -> Case {
        self.qemu_args.push(a.into());
        self
    }
    /// An option for `armada run` only, placed before the program.
    pub fn armada_arg(mut self, a: impl Into<OsString>) -> Case {
        self.armada_args.push(a.into());
        self
    }
    /// `-L DIR` for both qemu and armada: the sysroot of a dynamically linked program.
    pub fn sysroot(self, dir: impl Into<OsString>) -> Case {
        let dir = dir.into();
        self.qemu_arg("-L")
            .qemu_arg(dir.clone())
            .armada_arg("-L")
            .armada_arg(dir)
    }
}

pub fn default_timeout() -> Duration {
    let secs = std::env::var("ARMADA_TEST_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(120);
    Duration::from_secs(secs.max(1))
}

/// The environment both runs get (the parent's environment is cleared first).
/// The variables that choose how armada runs code (`ARMADA_TIER`, `ARMADA_JIT_*`), as this
/// test process was given them: scripts/test runs the suites once more on each tier. The
/// commands here start from an empty environment, so armada commands get these explicitly,
/// and [`tier_args`] takes them out of the guest's environment (qemu's guests never see
/// them).
pub fn tier_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            k == "ARMADA_TIER" || k.starts_with("ARMADA_JIT_")
        })
        .collect()
}

/// `armada run` options that keep [`tier_env`]'s variables from the guest.
pub fn tier_args() -> Vec<OsString> {
    tier_env()
        .into_iter()
        .flat_map(|(k, _)| [OsString::from("-U"), k])
        .collect()
}

pub fn base_env(workdir: &Path) -> Vec<(OsString, OsString)> {
    let mut v: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("LANG".into(), "C".into()),
        ("LC_ALL".into(), "C".into()),
        ("TZ".into(), "UTC".into()),
        ("TERM".into(), "dumb".into()),
        ("USER".into(), "armada".into()),
        ("LOGNAME".into(), "armada".into()),
    ];
    v.push(("HOME".into(), workdir.as_os_str().to_owned()));
    v.push(("PWD".into(), workdir.as_os_str().to_owned()));
    v
}

/// Result of one process run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Exit code, or 128 + signal number if killed by a signal.
    pub status: i32,
    pub status_text: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
    pub timed_out: bool,
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        31 => "SIGSYS",
        _ => "signal",
    }
}

/// Exit code, or 128 + signal number; plus a description.
pub fn normalize_status(st: ExitStatus) -> (i32, String) {
    use std::os::unix::process::ExitStatusExt;
    if let Some(c) = st.code() {
        (c, format!("exit {c}"))
    } else if let Some(sig) = st.signal() {
        let core = if st.core_dumped() {
            ", core dumped"
        } else {
            ""
        };
        (
            128 + sig,
            format!(
                "{} (killed by signal {sig} {}{core})",
                128 + sig,
                signal_name(sig)
            ),
        )
    } else {
        (-1, format!("{st:?}"))
    }
}

pub fn describe_status(s: i32) -> String {
    if s > 128 && s < 128 + 65 {
        format!("{s} (= 128 + {} {})", s - 128, signal_name(s - 128))
    } else {
        format!("{s}")
    }
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// Kills the child's whole process group (it is started as a group leader), so that a
/// wrapper script or a forking guest under qemu cannot keep the output pipes open.
fn kill_group(child: &mut std::process::Child) {
    let pid = child.id() as i32;
    unsafe {
        kill(-pid, 9);
    }
    let _ = child.kill();
}

#[cfg(target_os = "linux")]
fn disable_core_dumps(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    extern "C" {
        fn setrlimit(resource: i32, rlim: *const [u64; 2]) -> i32;
    }
    const RLIMIT_CORE: i32 = 4;
    // Without this, qemu-user writes qemu_PROG_DATE_PID.core files into the working
    // directory for guests that die by SIGSEGV/SIGTRAP/SIGABRT (when the core limit allows).
    unsafe {
        cmd.pre_exec(|| {
            let zero = [0u64, 0u64];
            setrlimit(RLIMIT_CORE, &zero);
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn disable_core_dumps(_cmd: &mut Command) {}

/// Runs `cmd` with the given stdin bytes, capturing stdout/stderr, killing it after `timeout`.
pub fn run_process(mut cmd: Command, stdin: &[u8], timeout: Duration) -> io::Result<RunOutput> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.process_group(0);
    disable_core_dumps(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut child_in = child.stdin.take().expect("piped stdin");
    let mut child_out = child.stdout.take().expect("piped stdout");
    let mut child_err = child.stderr.take().expect("piped stderr");
    let input = stdin.to_vec();
    let writer = thread::spawn(move || {
        // EPIPE when the program does not read all of its input is fine.
        let _ = child_in.write_all(&input);
    });
    let out_reader = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = child_out.read_to_end(&mut v);
        v
    });
    let err_reader = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = child_err.read_to_end(&mut v);
        v
    });
    let mut timed_out = false;
    let mut nap = Duration::from_millis(1);
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            kill_group(&mut child);
            break child.wait()?;
        }
        thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let _ = writer.join();
    let (code, mut text) = normalize_status(status);
    if timed_out {
        text = format!(
            "TIMED OUT after {:.1}s (then {text})",
            timeout.as_secs_f64()
        );
    }
    Ok(RunOutput {
        status: code,
        status_text: text,
        stdout,
        stderr,
        elapsed,
        timed_out,
    })
}

/// What a directory holds after a run: relative path -> content description.
pub type Snapshot = BTreeMap<String, String>;

fn fnv64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in data {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    h
}

fn is_qemu_core(name: &str) -> bool {
    name.starts_with("qemu_") && name.ends_with(".core")
}

pub fn snapshot_dir(dir: &Path) -> Snapshot {
    fn walk(base: &Path, rel: &str, out: &mut Snapshot) {
        let Ok(rd) = fs::read_dir(base.join(rel)) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && is_qemu_core(&name) {
                continue;
            }
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(md) = fs::symlink_metadata(e.path()) else {
                continue;
            };
            if md.file_type().is_symlink() {
                let t = fs::read_link(e.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                out.insert(path, format!("symlink -> {t}"));
            } else if md.is_dir() {
                out.insert(path.clone(), "directory".to_string());
                walk(base, &path, out);
            } else if md.is_file() {
                let data = fs::read(e.path()).unwrap_or_default();
                out.insert(
                    path,
                    format!("file, {} bytes, fnv64 {:016x}", data.len(), fnv64(&data)),
                );
            } else {
                out.insert(path, "special file".to_string());
            }
        }
    }
    let mut s = Snapshot::new();
    walk(dir, "", &mut s);
    s
}

/// Creates `dir` afresh (removing what was there) with the case's input files.
pub fn prepare_workdir(dir: &Path, files: &[(String, Vec<u8>)]) -> io::Result<()> {
    if dir.exists() {
        make_writable(dir);
        fs::remove_dir_all(dir)?;
    }
    fs::create_dir_all(dir)?;
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(FIXED_MTIME_SECS);
    for (name, data) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, data)?;
        fs::File::options()
            .write(true)
            .open(&p)?
            .set_modified(mtime)?;
    }
    // the directories the files made, deepest first (a `stat` of one must not depend on
    // the second it was set up in)
    let mut dirs: Vec<PathBuf> = files
        .iter()
        .flat_map(|(name, _)| {
            dir.join(name)
                .ancestors()
                .skip(1)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .filter(|d| d.starts_with(dir) && d != dir)
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs {
        fs::File::open(&d)?.set_modified(mtime)?;
    }
    Ok(())
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if let Ok(md) = fs::symlink_metadata(e.path()) {
                if md.is_dir() {
                    let _ = fs::set_permissions(e.path(), fs::Permissions::from_mode(0o755));
                    make_writable(&e.path());
                }
            }
        }
    }
}

/// Renders bytes for a report line: lossy UTF-8, control characters escaped, truncated.
pub fn show_bytes(b: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        match c {
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Describes where two outputs first differ: 1-based line number, byte offset, and both
/// versions of that line. `None` if they are equal.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<String> {
    if a == b {
        return None;
    }
    let i = a
        .iter()
        .zip(b.iter())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let line_no = a[..i].iter().filter(|&&c| c == b'\n').count() + 1;
    let start = a[..i]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let line_of = |s: &[u8]| -> String {
        if start >= s.len() {
            return "<end of output>".to_string();
        }
        let end = s[start..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(s.len(), |p| start + p);
        let nl = if end < s.len() {
            ""
        } else {
            " <no newline at end>"
        };
        format!("{:?}{nl}", show_bytes(&s[start..end], 300))
    };
    let lines = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count();
    Some(format!(
        "first difference at line {line_no} (byte {i}):\n      qemu  : {}\n      armada: {}\n    (qemu: {} bytes, {} lines; armada: {} bytes, {} lines)",
        line_of(a),
        line_of(b),
        a.len(),
        lines(a),
        b.len(),
        lines(b)
    ))
}

fn tail_text(b: &[u8], max_lines: usize) -> String {
    let s = String::from_utf8_lossy(b);
    let lines: Vec<&str> = s.lines().collect();
    let from = lines.len().saturating_sub(max_lines);
    let mut out = String::new();
    if from > 0 {
        let _ = writeln!(out, "      … ({from} earlier lines)");
    }
    for l in &lines[from..] {
        let _ = writeln!(out, "      | {}", show_bytes(l.as_bytes(), 300));
    }
    out
}

fn shell_quote(s: &OsStr) -> String {
    let t = s.to_string_lossy();
    if !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        t.into_owned()
    } else {
        format!("'{}'", t.replace('\'', "'\\''"))
    }
}

pub fn command_line(prefix: &[&OsStr], case: &Case) -> String {
    let mut parts: Vec<String> = prefix.iter().map(|p| shell_quote(p)).collect();
    parts.push(shell_quote(case.program.as_os_str()));
    parts.extend(case.args.iter().map(|a| shell_quote(a)));
    let full = parts.join(" ");
    if full.chars().count() <= 400 {
        return full;
    }
    let short: String = full.chars().take(400).collect();
    format!("{short}… ({} arguments in all)", case.args.len())
}

/// Compares the two runs of a case. Returns the list of problems (empty = pass).
pub fn compare_runs(
    case: &Case,
    q: &RunOutput,
    a: &RunOutput,
    qfiles: &Snapshot,
    afiles: &Snapshot,
) -> Vec<String> {
    let mut problems = Vec::new();
    if q.timed_out {
        problems.push(format!("the oracle (qemu) timed out: {}", q.status_text));
    }
    if let Some(want) = case.expect_status {
        if q.status != want && !q.timed_out {
            problems.push(format!(
                "the oracle (qemu) exited with {} but the test expects {}: the test or the host setup is broken\n{}",
                q.status_text,
                describe_status(want),
                tail_text(&q.stderr, 10)
            ));
        }
    }
    if a.timed_out {
        problems.push(format!("armada timed out: {}", a.status_text));
    }
    if q.status != a.status {
        problems.push(format!(
            "exit status differs: qemu {} vs armada {}",
            q.status_text, a.status_text
        ));
    }
    if let Some(d) = first_difference(&q.stdout, &a.stdout) {
        problems.push(format!("stdout differs: {d}"));
    }
    if case.compare_stderr {
        if let Some(d) = first_difference(&q.stderr, &a.stderr) {
            problems.push(format!("stderr differs: {d}"));
        }
    }
    if case.compare_files && qfiles != afiles {
        let mut s = String::from("working directory contents differ after the run:");
        let keys: std::collections::BTreeSet<&String> =
            qfiles.keys().chain(afiles.keys()).collect();
        for k in keys {
            let (x, y) = (qfiles.get(k), afiles.get(k));
            if x != y {
                let _ = write!(
                    s,
                    "\n      {k}: qemu {} / armada {}",
                    x.map_or("<absent>", |v| v.as_str()),
                    y.map_or("<absent>", |v| v.as_str())
                );
            }
        }
        problems.push(s);
    }
    problems
}

pub enum CaseResult {
    /// `kept`: qemu's side was a run kept from an earlier pass (oracle_cache.rs).
    Pass {
        qemu: Duration,
        armada: Duration,
        kept: bool,
    },
    Fail(String),
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.chars().take(60).collect()
}

fn make_command(prefix: &[&OsStr], case: &Case, dir: &Path) -> Command {
    let mut cmd = Command::new(prefix[0]);
    cmd.args(&prefix[1..]);
    cmd.arg(&case.program)
        .args(&case.args)
        .current_dir(dir)
        .env_clear();
    for (k, v) in base_env(dir).into_iter().chain(case.env.iter().cloned()) {
        cmd.env(k, v);
    }
    if Path::new(prefix[0]) == armada_bin() {
        cmd.envs(tier_env());
    }
    cmd
}

/// Syscalls that mean a program is not single-process (seen in `qemu-aarch64 -strace` output).
/// Whether a clone/clone3 strace line makes a thread, not a process: qemu names the flags
/// (`CLONE_THREAD`), armada prints them in hex (bit 0x10000); a clone3 that failed made
/// nothing (qemu 7.2 answers ENOSYS and glibc falls back to clone).
fn is_thread_clone(name: &str, line: &str) -> bool {
    const CLONE_THREAD: u64 = 0x1_0000;
    if line.contains("CLONE_THREAD") {
        return true;
    }
    if name == "clone3" {
        return line.contains("= -1") || line.contains("errno=");
    }
    let first = line
        .split_once('(')
        .map(|(_, rest)| rest.split([',', ')']).next().unwrap_or(""))
        .unwrap_or("");
    u64::from_str_radix(first.trim().trim_start_matches("0x"), 16)
        .is_ok_and(|f| name == "clone" && f & CLONE_THREAD != 0)
}

pub fn forky_syscalls(strace: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(strace);
    let mut found = Vec::new();
    for line in text.lines() {
        // Lines look like "12345 clone(...) = 0"; keep the syscall name.
        let name = line
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.split('(').next())
            .unwrap_or("");
        if [
            "clone", "clone3", "fork", "vfork", "execve", "execveat", "wait4", "waitid",
        ]
        .contains(&name)
            && !is_thread_clone(name, line)
            && !found.iter().any(|f: &String| f == name)
        {
            found.push(name.to_string());
        }
    }
    found
}

/// What decides qemu's run of `case` in `dir` (see oracle_cache.rs): the oracle's command
/// line, the program's path and bytes, the arguments, the environment `make_command` gives,
/// stdin, the input files and the directory.
fn oracle_key(case: &Case, qprefix: &[&OsStr], dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let program = fs::read(&case.program).unwrap_or_default();
    let mut parts: Vec<&[u8]> = qprefix.iter().map(|a| a.as_bytes()).collect();
    parts.push(b"program");
    parts.push(case.program.as_os_str().as_bytes());
    parts.push(&program);
    parts.push(b"args");
    parts.extend(case.args.iter().map(|a| a.as_bytes()));
    parts.push(b"env");
    let env: Vec<(OsString, OsString)> = base_env(dir)
        .into_iter()
        .chain(case.env.iter().cloned())
        .collect();
    for (k, v) in &env {
        parts.push(k.as_bytes());
        parts.push(v.as_bytes());
    }
    parts.push(b"stdin");
    parts.push(&case.stdin);
    parts.push(b"files");
    for (name, data) in &case.files {
        parts.push(name.as_bytes());
        parts.push(data);
    }
    parts.push(b"dir");
    parts.push(dir.as_os_str().as_bytes());
    oracle_cache::key(&parts)
}

/// Runs one case under both qemu and armada in `dir` and compares.
pub fn run_case(case: &Case, dir: &Path) -> CaseResult {
    // Two cases of one program (with and without --deterministic, or --net host) must not
    // run at the same time: under qemu (and armada's --net host) the program's sockets are
    // the host's, so both would bind the same abstract socket names and ports, and one
    // would fail with EADDRINUSE.
    static BY_PROGRAM: [Mutex<()>; 16] = [const { Mutex::new(()) }; 16];
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&case.program, &mut h);
    let _one_at_a_time = BY_PROGRAM[(std::hash::Hasher::finish(&h) % 16) as usize]
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let qemu = qemu_bin();
    let armada = armada_bin();
    let mut qprefix: Vec<&OsStr> = vec![qemu.as_os_str()];
    qprefix.extend(case.qemu_args.iter().map(|a| a.as_os_str()));
    let tier = tier_args();
    let mut aprefix: Vec<&OsStr> = vec![armada.as_os_str(), OsStr::new("run")];
    aprefix.extend(tier.iter().map(|a| a.as_os_str()));
    aprefix.extend(case.armada_args.iter().map(|a| a.as_os_str()));

    let run = |prefix: &[&OsStr]| -> Result<(RunOutput, Snapshot), String> {
        prepare_workdir(dir, &case.files)
            .map_err(|e| format!("cannot prepare {}: {e}", dir.display()))?;
        let out = run_process(make_command(prefix, case, dir), &case.stdin, case.timeout)
            .map_err(|e| format!("cannot start `{}`: {e}", command_line(prefix, case)))?;
        Ok((out, snapshot_dir(dir)))
    };
    let report =
        |problems: Vec<String>, q: Option<&RunOutput>, a: Option<&RunOutput>| -> CaseResult {
            let mut s = String::new();
            let _ = writeln!(s, "=== MISMATCH: {} ===", case.name);
            let _ = writeln!(s, "  oracle : {}", command_line(&qprefix, case));
            let _ = writeln!(s, "  armada : {}", command_line(&aprefix, case));
            if !case.stdin.is_empty() {
                let _ = writeln!(
                    s,
                    "  stdin  : {} bytes, starting {:?}",
                    case.stdin.len(),
                    show_bytes(&case.stdin, 60)
                );
            }
            if !case.env.is_empty() {
                let env: Vec<String> = case
                    .env
                    .iter()
                    .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                    .collect();
                let _ = writeln!(s, "  env    : {}", env.join(" "));
            }
            if let (Some(q), Some(a)) = (q, a) {
                let _ = writeln!(
                    s,
                    "  status : qemu {} | armada {}",
                    q.status_text, a.status_text
                );
            }
            for p in problems {
                let _ = writeln!(s, "  - {p}");
            }
            if let Some(a) = a {
                if !a.stderr.is_empty() {
                    let _ = writeln!(s, "  armada stderr (tail):\n{}", tail_text(&a.stderr, 15));
                }
            }
            CaseResult::Fail(s)
        };

    // qemu-user now and then deadlocks in a fork from a process with several threads (a CI
    // run's oracle hung for all of its 120 s on Go's os/exec, which takes it 0.2 s in every
    // other run): an oracle that timed out runs once more, so that only a case that hangs
    // twice is reported as the oracle's timeout.
    // qemu's side of a case is the same in every pass over the suites (oracle_cache.rs)
    let cache = oracle_cache::dir().map(|d| (oracle_key(case, &qprefix, dir), d));
    let kept = cache
        .as_ref()
        .and_then(|(key, d)| oracle_cache::load(d, key));
    let was_kept = kept.is_some();
    let mut oracle = match kept {
        Some(r) => Ok(r),
        None => run(&qprefix),
    };
    if matches!(&oracle, Ok((q, _)) if q.timed_out) {
        eprintln!(
            "note: {}: qemu-aarch64 timed out; running it once more",
            case.name
        );
        oracle = run(&qprefix);
    }
    let (q, qfiles) = match oracle {
        Ok(r) => r,
        Err(e) => return report(vec![e], None, None),
    };
    if let (Some((key, d)), false) = (&cache, was_kept) {
        if let Err(e) = oracle_cache::store(d, key, &q, &qfiles) {
            eprintln!(
                "note: {}: cannot keep qemu's run in {}: {e}",
                case.name,
                d.display()
            );
        }
    }
    let (a, afiles) = match run(&aprefix) {
        Ok(r) => r,
        Err(e) => return report(vec![e], Some(&q), None),
    };
    let mut problems = compare_runs(case, &q, &a, &qfiles, &afiles);
    if env_flag("ARMADA_TEST_CHECK_NOFORK") {
        let mut sprefix: Vec<&OsStr> = vec![qemu.as_os_str(), OsStr::new("-strace")];
        sprefix.extend(case.qemu_args.iter().map(|a| a.as_os_str()));
        match run(&sprefix) {
            Ok((s, _)) => {
                let f = forky_syscalls(&s.stderr);
                if !f.is_empty() {
                    problems.push(format!(
                        "the program is not single-process under qemu -strace (uses {}); armada cannot run it",
                        f.join(", ")
                    ));
                }
            }
            Err(e) => problems.push(e),
        }
    }
    if !env_flag("ARMADA_TEST_KEEP") {
        make_writable(dir);
        let _ = fs::remove_dir_all(dir);
    }
    if problems.is_empty() {
        CaseResult::Pass {
            qemu: q.elapsed,
            armada: a.elapsed,
            kept: was_kept,
        }
    } else {
        report(problems, Some(&q), Some(&a))
    }
}

fn env_list(name: &str) -> Vec<String> {
    std::env::var(name)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Applies ARMADA_TEST_FILTER / ARMADA_TEST_SKIP.
pub fn filter_cases(cases: Vec<Case>) -> Vec<Case> {
    let only = env_list("ARMADA_TEST_FILTER");
    let skip = env_list("ARMADA_TEST_SKIP");
    cases
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|f| c.name.contains(f.as_str())))
        .filter(|c| !skip.iter().any(|f| c.name.contains(f.as_str())))
        .collect()
}

/// Runs all cases (in parallel) and panics with a report if any differ.
pub fn run_suite(suite: &str, cases: Vec<Case>) {
    let total_defined = cases.len();
    let cases = filter_cases(cases);
    let mut seen = std::collections::HashSet::new();
    for c in &cases {
        assert!(
            seen.insert(c.name.clone()),
            "duplicate case name {}",
            c.name
        );
    }
    if cases.is_empty() {
        loud(&format!("{suite}: no cases selected (of {total_defined}; check ARMADA_TEST_FILTER/ARMADA_TEST_SKIP)"));
        return;
    }
    let jobs = std::env::var("ARMADA_TEST_JOBS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or_else(|| thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, cases.len());
    // (with the oracle's runs kept, every pass runs a case in the same directory: its path
    // is part of what qemu saw)
    let base = match oracle_cache::dir() {
        Some(d) => oracle_cache::work_dir(&d).join(sanitize(suite)),
        None => {
            std::env::temp_dir().join(format!("armada-{}-{}", sanitize(suite), std::process::id()))
        }
    };

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseResult>>> =
        Mutex::new((0..cases.len()).map(|_| None).collect());
    let started = Instant::now();
    eprintln!(
        "{suite}: running {} cases ({} defined) with {jobs} threads",
        cases.len(),
        total_defined
    );
    thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= cases.len() {
                    break;
                }
                let case = &cases[i];
                let dir = base.join(format!("{i:03}-{}", sanitize(&case.name)));
                let r = run_case(case, &dir);
                match &r {
                    CaseResult::Pass {
                        qemu, armada, kept, ..
                    } => eprintln!(
                        "ok      {:<44} qemu {:>7.3}s{} armada {:>7.3}s",
                        case.name,
                        qemu.as_secs_f64(),
                        if *kept { " (kept)" } else { "" },
                        armada.as_secs_f64()
                    ),
                    CaseResult::Fail(_) => eprintln!("FAILED  {}", case.name),
                }
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    if !env_flag("ARMADA_TEST_KEEP") {
        let _ = fs::remove_dir(&base);
    }
    let results = results.into_inner().unwrap();
    let mut failures = Vec::new();
    let (mut tq, mut ta, mut kept) = (Duration::ZERO, Duration::ZERO, 0);
    for r in results.into_iter().flatten() {
        match r {
            CaseResult::Pass {
                qemu,
                armada,
                kept: k,
            } => {
                // (a kept run took no time in this pass)
                if !k {
                    tq += qemu;
                }
                kept += k as usize;
                ta += armada;
            }
            CaseResult::Fail(s) => failures.push(s),
        }
    }
    eprintln!(
        "{suite}: {} passed, {} failed, wall {:.1}s (qemu total {:.1}s, armada total {:.1}s{})",
        cases.len() - failures.len(),
        failures.len(),
        started.elapsed().as_secs_f64(),
        tq.as_secs_f64(),
        ta.as_secs_f64(),
        if kept > 0 {
            format!("; {kept} cases against qemu's runs kept from an earlier pass")
        } else {
            String::new()
        }
    );
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("\n{f}");
        }
        let names: Vec<String> = failures
            .iter()
            .map(|f| {
                f.lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("=== MISMATCH: ")
                    .trim_end_matches(" ===")
                    .to_string()
            })
            .collect();
        panic!(
            "{suite}: {} of {} cases differ from qemu-aarch64:\n  {}\n(full reports above; rerun a subset with ARMADA_TEST_FILTER=name, keep work dirs with ARMADA_TEST_KEEP=1)",
            failures.len(),
            cases.len(),
            names.join("\n  ")
        );
    }
}

/// Deterministic pseudo-random bytes (xorshift64*), for generated inputs.
pub fn pseudo_random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545F4914F6CDD1D);
        for b in r.to_le_bytes() {
            if v.len() < n {
                v.push(b);
            }
        }
    }
    v
}

/// Deterministic multi-line text: `lines` lines of words and numbers.
pub fn sample_text(lines: usize, seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
        "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
    ];
    let r = pseudo_random_bytes(lines * 8, seed);
    let mut s = String::new();
    for i in 0..lines {
        let w1 = WORDS[r[i * 8] as usize % WORDS.len()];
        let w2 = WORDS[r[i * 8 + 1] as usize % WORDS.len()];
        let n = u16::from_le_bytes([r[i * 8 + 2], r[i * 8 + 3]]) % 1000;
        let _ = writeln!(s, "{w1} {n} {w2} line{i}");
    }
    s.into_bytes()
}

// ----- Debian arm64 packages the tests run (busybox-static, bash-static) ---------------

/// Where scripts/test puts the arm64 .debs: target/guest-deps.
pub fn deps_dir() -> PathBuf {
    workspace_root().join("target/guest-deps")
}

/// The newest `PACKAGE_*_arm64.deb` in `dir`.
pub fn find_deb(dir: &Path, package: &str) -> Option<PathBuf> {
    let prefix = format!("{package}_");
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with("_arm64.deb"))
        })
        .collect();
    v.sort();
    v.pop()
}

/// Extracts a .deb once into target/guest-deps/extracted/<deb name>/ and returns that dir.
pub fn extract(deb: &Path) -> Result<PathBuf, String> {
    let stem = deb.file_stem().unwrap().to_string_lossy().into_owned();
    let root = deps_dir().join("extracted");
    let dest = root.join(&stem);
    if dest.join(".complete").exists() {
        return Ok(dest);
    }
    let tmp = root.join(format!(".{stem}.tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(&tmp)
        .output()
        .map_err(|e| format!("cannot run dpkg-deb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "dpkg-deb -x {} failed: {}",
            deb.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    fs::write(tmp.join(".complete"), b"").map_err(|e| e.to_string())?;
    let _ = fs::remove_dir_all(&dest);
    fs::rename(&tmp, &dest)
        .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), dest.display()))?;
    Ok(dest)
}

/// The Debian arm64 sysroot built by scripts/sysroot.sh (`ARMADA_TEST_SYSROOT` overrides
/// where), if it is there with every path in `required`.
pub fn debian_sysroot(required: &[&str]) -> Result<PathBuf, String> {
    let dir = match std::env::var_os("ARMADA_TEST_SYSROOT") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => workspace_root().join("target/sysroot"),
    };
    if !dir.join(".armada-sysroot").is_file() {
        return Err(format!(
            "the Debian arm64 sysroot {} has not been built (run scripts/sysroot.sh; it downloads about 14 MB of .debs once)",
            dir.display()
        ));
    }
    for p in required {
        if !dir.join(p).exists() {
            return Err(format!(
                "{} lacks {p}: rebuild it with scripts/sysroot.sh",
                dir.display()
            ));
        }
    }
    Ok(dir.canonicalize().unwrap_or(dir))
}

/// Reads `armada run -g`'s (or `armada replay -g`'s) stderr up to its announcement and
/// returns the address it waits for gdb on; every line read goes into `head`. None when
/// armada's stderr ended first.
pub fn gdb_address(err: &mut impl io::BufRead, head: &mut String) -> Option<String> {
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        head.push_str(&line);
        if let Some(rest) = line.strip_prefix("armada: waiting for gdb on ") {
            return Some(rest.split(':').take(2).collect::<Vec<_>>().join(":"));
        }
    }
}

/// The files of `dir` whose names start with `prefix` (a fuzzing run's `crash-`, `hang-`,
/// `id:`), in name order.
pub fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}
