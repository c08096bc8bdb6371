//! Differential tests for guest programs with threads: C pthreads, C++ `std::thread` and Go
//! (tests/guest/threads, tests/guest/go), built by `tests/guest/build-threads.sh` into
//! `target/guest-threads` (or `$ARMADA_GUEST_THREADS_DIR`). Every program prints only what it
//! computed after its threads were joined (totals, sorted or per-slot results), so its stdout
//! and exit status are the same whatever the interleaving, and `armada run` must match
//! `qemu-aarch64` exactly; see tests/common/mod.rs for how runs are compared and for the
//! environment knobs (ARMADA_TEST_FILTER, ARMADA_TEST_KEEP, ...).
//!
//! The same cases run once more under `armada run --deterministic` (virtual clock, one CPU),
//! again compared with qemu: the output must not depend on armada's mode.
//!
//! The deadlock programs are not compared with qemu (which hangs on them, as Linux would):
//! armada alone must report the deadlock on stderr and end with status 137.
//!
//! When the programs have not been built the tests skip loudly, or fail under CI /
//! ARMADA_TEST_STRICT (scripts/test builds them first).

mod common;

use common::{Case, GuestProgram, RunOutput, Snapshot};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Which test runs a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// C pthreads programs (tests/guest/threads/*.c).
    C,
    /// C++ programs (tests/guest/threads/*.cpp).
    Cxx,
    /// Go programs (tests/guest/go/*).
    Go,
    /// How a threaded process ends: exit from a thread, signals, an unrecovered Go panic.
    Endings,
    /// 1000 threads created and joined one at a time.
    Thousand,
}

/// The deadlock programs: armada only, see [`deadlocks_are_reported`].
const DEADLOCK_PROGRAMS: &[&str] = &["deadlock_mutex", "deadlock_condvar"];

/// Every differential case, by group. `dir` holds the built programs.
fn case_table(dir: &Path) -> Vec<(Group, Case)> {
    let mut v = Vec::new();
    let mut add = |group: Group, program: &str, args: &[&str], status: i32| {
        let name = if args.is_empty() {
            program.to_string()
        } else {
            format!("{program} {}", args.join(" "))
        };
        let case = Case::new(name, dir.join(program))
            .args(args.iter().copied())
            .expect_status(status);
        v.push((group, case));
    };
    use Group::*;
    for p in [
        "mutex",
        "condvar",
        "barrier",
        "rwlock",
        "semaphore",
        "tls_threads",
        "sum64",
        "atomics_mt",
        "atomics_mt-llsc",
        "atomics_mt-lse",
        "join",
        "once",
        "keys",
        "detached",
        "epoll_threads",
    ] {
        add(C, p, &[], 0);
    }
    // Fewer numbers than threads: most slices are empty.
    add(C, "sum64", &["10"], 0);
    for mode in ["condvar", "sleep", "disabled", "async"] {
        add(C, "cancel", &[mode], 0);
    }
    for mode in ["pthread_kill", "sigwait", "pending"] {
        add(C, "thread_signals", &[mode], 0);
    }
    for p in ["cxx_thread", "cxx_async", "cxx_mutex_cv", "cxx_atomic"] {
        add(Cxx, p, &[], 0);
    }
    for p in [
        "go_hello",
        "go_waitgroup",
        "go_channels",
        "go_mutex",
        "go_timers",
        "go_gc",
        "go_panics",
        "go_preempt",
        // net/http server and clients in one program (loopback TCP, IPv6, a Unix socket)
        "go_nethttp",
    ] {
        add(Go, p, &[], 0);
    }
    add(Endings, "thread_exit", &["exit"], 3);
    add(Endings, "thread_exit", &["main-exit"], 0);
    add(Endings, "thread_exit", &["segv"], 128 + 11);
    add(Endings, "thread_exit", &["abort"], 128 + 6);
    add(Thousand, "create1000", &[], 0);
    // Go's report of an unrecovered panic names goroutine numbers, which differ between runs:
    // the status (2) and stdout must match, stderr need not.
    v.push((
        Endings,
        Case::new("go_panics crash", dir.join("go_panics"))
            .arg("crash")
            .expect_status(2)
            .ignore_stderr(),
    ));
    v
}

/// Where the programs are: `$ARMADA_GUEST_THREADS_DIR`, else `target/guest-threads`.
fn threads_dir() -> PathBuf {
    match std::env::var_os("ARMADA_GUEST_THREADS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => common::workspace_root().join("target/guest-threads"),
    }
}

/// The newest modification time of the files under `dir` (recursively).
fn newest_mtime(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let Ok(md) = e.metadata() else { continue };
        let t = if md.is_dir() {
            newest_mtime(&e.path())
        } else {
            md.modified().ok()
        };
        newest = newest.max(t);
    }
    newest
}

/// The built programs, or `None` (after a loud skip, or a panic under CI) when they are not
/// all there. Warns when a source is newer than the build.
fn built_programs(test: &str) -> Option<(PathBuf, Vec<GuestProgram>)> {
    let dir = threads_dir();
    let build = format!("tests/guest/build-threads.sh {}", dir.display());
    let programs = match common::list_guest_programs(&dir) {
        Ok(p) => p,
        Err(e) => {
            common::unavailable(
                test,
                &format!("the thread guest programs are not built ({e}); build them with {build}"),
            );
            return None;
        }
    };
    let missing: Vec<&str> = programs
        .iter()
        .filter(|p| !p.path.is_file())
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        common::unavailable(
            test,
            &format!(
                "{} lists programs that are missing ({}); rebuild them with {build}",
                dir.join("programs.list").display(),
                missing.join(", ")
            ),
        );
        return None;
    }
    let built = std::fs::metadata(dir.join("programs.list"))
        .and_then(|m| m.modified())
        .ok();
    let root = common::workspace_root();
    let sources = ["tests/guest/threads", "tests/guest/go"]
        .iter()
        .filter_map(|d| newest_mtime(&root.join(d)))
        .max();
    if let (Some(built), Some(sources)) = (built, sources) {
        if sources > built {
            common::loud(&format!(
                "### {test}: note: sources in tests/guest/threads or tests/guest/go are newer than \
                 {}: these tests run the old binaries until you run {build}",
                dir.display()
            ));
        }
    }
    Some((dir, programs))
}

/// Runs one group's cases against qemu.
fn run_group(test: &str, suite: &str, group: Group) {
    if !common::require_tools(test, &[common::qemu_bin()]) {
        return;
    }
    common::require_armada(test);
    let Some((dir, _)) = built_programs(test) else {
        return;
    };
    let cases: Vec<Case> = case_table(&dir)
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(_, c)| c)
        .collect();
    assert!(!cases.is_empty(), "{test}: no cases in group {group:?}");
    common::run_suite(suite, cases);
}

#[test]
fn pthread_programs_match_qemu() {
    run_group("pthread_programs_match_qemu", "threads-c", Group::C);
}

#[test]
fn cxx_thread_programs_match_qemu() {
    run_group("cxx_thread_programs_match_qemu", "threads-cxx", Group::Cxx);
}

#[test]
fn go_programs_match_qemu() {
    run_group("go_programs_match_qemu", "threads-go", Group::Go);
}

/// exit(3) from a second thread, main's pthread_exit, SIGSEGV and abort() in a second thread,
/// and an unrecovered panic in a goroutine.
#[test]
fn threaded_process_endings_match_qemu() {
    run_group(
        "threaded_process_endings_match_qemu",
        "threads-endings",
        Group::Endings,
    );
}

/// 1000 threads, each created and joined before the next: every exited thread must be freed
/// (armada allows 4096 at once), and the count printed is the same as under qemu.
#[test]
fn thousand_threads_one_at_a_time_match_qemu() {
    run_group(
        "thousand_threads_one_at_a_time_match_qemu",
        "threads-1000",
        Group::Thousand,
    );
}

/// Every program the build script makes has a case here (or is a deadlock program), and
/// every case names a program the build script makes.
/// Programs build-threads.sh builds that another suite runs.
const OTHER_SUITES: &[&str] = &["go_exec"];

#[test]
fn every_thread_program_has_a_case() {
    const TEST: &str = "every_thread_program_has_a_case";
    let Some((dir, programs)) = built_programs(TEST) else {
        return;
    };
    let built: BTreeSet<String> = programs.iter().map(|p| p.name.clone()).collect();
    let mut covered: BTreeSet<String> = case_table(&dir)
        .iter()
        .map(|(_, c)| {
            c.program
                .file_name()
                .expect("a program path has a file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    covered.extend(DEADLOCK_PROGRAMS.iter().map(|s| s.to_string()));
    // run by tests/processes.rs (it needs busybox and binfmt_misc for qemu's children)
    covered.extend(OTHER_SUITES.iter().map(|s| s.to_string()));
    let without_case: Vec<&String> = built.difference(&covered).collect();
    let not_built: Vec<&String> = covered.difference(&built).collect();
    assert!(
        without_case.is_empty() && not_built.is_empty(),
        "{TEST}: programs built without a case in threads.rs: {without_case:?}; cases whose \
         program tests/guest/build-threads.sh does not build: {not_built:?}"
    );
}

/// Runs `PREFIX... PROGRAM ARGS...` for `case` in a fresh `work` directory, as the common
/// harness does (same environment, stdin and timeout); returns the run and what it left.
fn run_in(work: &Path, prefix: &[OsString], case: &Case) -> Result<(RunOutput, Snapshot), String> {
    common::prepare_workdir(work, &case.files)
        .map_err(|e| format!("cannot prepare {}: {e}", work.display()))?;
    let mut cmd = Command::new(&prefix[0]);
    cmd.args(&prefix[1..])
        .arg(&case.program)
        .args(&case.args)
        .current_dir(work)
        .env_clear()
        .envs(common::base_env(work))
        .envs(case.env.iter().cloned());
    if Path::new(&prefix[0]) == common::armada_bin() {
        cmd.envs(common::tier_env());
    }
    let out = common::run_process(cmd, &case.stdin, case.timeout)
        .map_err(|e| format!("cannot start {}: {e}", prefix[0].to_string_lossy()))?;
    Ok((out, common::snapshot_dir(work)))
}

/// Every qemu-compared case once more, under `armada run --deterministic`: the virtual clock
/// must still move while a thread spins (a sleeping thread wakes, Go's sysmon preempts), and
/// the output must be qemu's.
#[test]
fn deterministic_mode_matches_qemu() {
    const TEST: &str = "deterministic_mode_matches_qemu";
    if !common::require_tools(TEST, &[common::qemu_bin()]) {
        return;
    }
    common::require_armada(TEST);
    let Some((dir, _)) = built_programs(TEST) else {
        return;
    };
    let cases = common::filter_cases(case_table(&dir).into_iter().map(|(_, c)| c).collect());
    if cases.is_empty() {
        return;
    }
    let qemu = [common::qemu_bin()];
    let mut armada = vec![common::armada_bin().into_os_string(), "run".into()];
    armada.extend(common::tier_args());
    armada.push("--deterministic".into());
    let base = std::env::temp_dir().join(format!("armada-threads-det-{}", std::process::id()));
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(cases.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let work = base.join(i.to_string());
                let problems = match (run_in(&work, &qemu, case), run_in(&work, &armada, case)) {
                    (Ok((q, qf)), Ok((a, af))) => common::compare_runs(case, &q, &a, &qf, &af),
                    (Err(e), _) | (_, Err(e)) => vec![e],
                };
                let _ = std::fs::remove_dir_all(&work);
                if problems.is_empty() {
                    eprintln!("ok      --deterministic {}", case.name);
                } else {
                    eprintln!("FAILED  --deterministic {}", case.name);
                    failures.lock().unwrap().push(format!(
                        "armada run --deterministic {}:\n  - {}",
                        case.name,
                        problems.join("\n  - ")
                    ));
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&base);
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{TEST}: {} of {} cases differ from qemu-aarch64 under --deterministic:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A guest whose threads all wait on each other forever: armada must notice, print a report
/// starting with "armada: deadlock" on stderr, and end with status 137 (as SIGKILL would),
/// both on the host clock and with --deterministic. stdout flushed before the deadlock is kept.
#[test]
fn deadlocks_are_reported() {
    const TEST: &str = "deadlocks_are_reported";
    common::require_armada(TEST);
    let Some((dir, _)) = built_programs(TEST) else {
        return;
    };
    let base = std::env::temp_dir().join(format!("armada-threads-deadlock-{}", std::process::id()));
    let mut failures = Vec::new();
    for program in DEADLOCK_PROGRAMS {
        for options in [&[][..], &["--deterministic"][..]] {
            let label = ["armada", "run"]
                .iter()
                .chain(options)
                .chain([program])
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            let work = base.join(format!("{program}{}", options.len()));
            let mut prefix = vec![common::armada_bin().into_os_string(), "run".into()];
            prefix.extend(common::tier_args());
            prefix.extend(options.iter().map(OsString::from));
            // Generous: a report is expected within a second; a hang is what this catches.
            let case = Case::new(label.clone(), dir.join(program)).timeout(Duration::from_secs(60));
            let (out, _) = run_in(&work, &prefix, &case).unwrap_or_else(|e| panic!("{TEST}: {e}"));
            let stderr = String::from_utf8_lossy(&out.stderr);
            let want_stdout = format!("{program}: starting\n");
            let mut problems = Vec::new();
            if out.timed_out {
                problems.push(format!(
                    "did not end: {} (a deadlock must be detected, not waited out)",
                    out.status_text
                ));
            } else if out.status != 137 {
                problems.push(format!("status {} (want 137, as SIGKILL)", out.status_text));
            }
            if !stderr.starts_with("armada: deadlock") {
                problems.push("stderr does not start with \"armada: deadlock\"".to_string());
            }
            if out.stdout != want_stdout.as_bytes() {
                problems.push(format!(
                    "stdout {:?} (want {want_stdout:?})",
                    common::show_bytes(&out.stdout, 200)
                ));
            }
            if problems.is_empty() {
                eprintln!(
                    "ok      {label}: status 137, {}",
                    stderr.lines().next().unwrap_or("")
                );
            } else {
                failures.push(format!(
                    "{label}:\n  - {}\n  stderr:\n{}",
                    problems.join("\n  - "),
                    stderr
                        .lines()
                        .take(12)
                        .map(|l| format!("    | {l}\n"))
                        .collect::<String>()
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    assert!(
        failures.is_empty(),
        "{TEST}: {} of {} runs wrong:\n{}",
        failures.len(),
        DEADLOCK_PROGRAMS.len() * 2,
        failures.join("\n")
    );
}

/// The case table itself (no tools needed): unique names, an expected status for every case,
/// no empty group.
#[test]
fn case_table_is_consistent() {
    let dir = Path::new("/nonexistent");
    let table = case_table(dir);
    let mut names = BTreeSet::new();
    for (_, c) in &table {
        assert!(names.insert(c.name.clone()), "duplicate case {}", c.name);
        assert!(
            c.expect_status.is_some(),
            "{} has no expected status",
            c.name
        );
    }
    for group in [
        Group::C,
        Group::Cxx,
        Group::Go,
        Group::Endings,
        Group::Thousand,
    ] {
        assert!(table.iter().any(|(g, _)| *g == group), "{group:?} is empty");
    }
}
