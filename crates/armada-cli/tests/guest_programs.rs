//! Differential tests: every guest program in tests/guest/src (built by tests/guest/build.sh)
//! must behave identically under `armada run` and under `qemu-aarch64`.
//! See tests/common/mod.rs for how cases are compared and for the environment knobs.

mod common;

use common::{Case, GuestProgram};
use std::ffi::OsString;
use std::path::PathBuf;

/// The cases for one guest binary. Variants (e.g. `atomics-lse`) get their base program's cases.
fn cases_for(p: &GuestProgram) -> Vec<Case> {
    let name = p.name.as_str();
    let case = |label: &str| {
        Case::new(
            if label.is_empty() {
                name.to_string()
            } else {
                format!("{name} {label}")
            },
            p.path.clone(),
        )
    };
    match p.base.as_str() {
        "exit3" => vec![case("").expect_status(3)],
        "ret42" => vec![case("").expect_status(42)],
        "fault_segv" => vec![case("").expect_status(128 + 11)],
        "fault_trap" => vec![case("").expect_status(128 + 5)],
        "fault_abort" => vec![case("").expect_status(128 + 6)],
        "signals" => vec![case("").expect_status(128 + 15)],
        "argv_env" => vec![
            case("(no args)").expect_status(0),
            // Exit status is strlen(argv[1]).
            case("(args+env)")
                .args([
                    "a b",
                    "",
                    "x\"y'z",
                    "--flag=1",
                    "ünïcödé",
                    "-",
                    "*",
                    "$HOME",
                    "trailing\\",
                ])
                .env("ARMADA_TEST_VAR", "hello world = 1")
                .env("ARMADA_TEST_EMPTY", "")
                .expect_status(3),
            case("(many args)")
                .args((0..300).map(|i| format!("arg{i}-{}", "x".repeat(i % 17))))
                .expect_status(5),
        ],
        "stdin_sum" => {
            let text = common::sample_text(5000, 7);
            let binary = common::pseudo_random_bytes(1 << 20, 99);
            vec![
                case("(empty stdin)").expect_status(0),
                case("(small text)")
                    .stdin(&b"abc\nde\n\nxyz"[..])
                    .expect_status(0),
                case("(text)").stdin(text.clone()).expect_status(0),
                case("(text, read(2))")
                    .arg("raw")
                    .stdin(text)
                    .expect_status(0),
                case("(1 MiB binary)")
                    .stdin(binary.clone())
                    .expect_status(0),
                case("(1 MiB binary, read(2))")
                    .arg("raw")
                    .stdin(binary)
                    .expect_status(0),
            ]
        }
        "crc32" => vec![
            case("").expect_status(0),
            case("3").arg("3").expect_status(0),
        ],
        "textscan" => vec![
            case("").expect_status(0),
            case("1 0").args(["1", "0"]).expect_status(0),
            case("0").arg("0").expect_status(2),
        ],
        "sort_bench" => vec![
            case("").expect_status(0),
            case("1").arg("1").expect_status(0),
            case("17").arg("17").expect_status(0),
            case("300000").arg("300000").expect_status(0),
        ],
        "matmul" => vec![
            case("").expect_status(0),
            case("1").arg("1").expect_status(0),
            case("37").arg("37").expect_status(0),
        ],
        "sieve" => vec![
            case("").expect_status(0),
            case("2").arg("2").expect_status(0),
            case("100").arg("100").expect_status(0),
        ],
        // the FP benchmarks (armada bench runs them larger)
        "nbody" => vec![
            case("").expect_status(0),
            case("10").arg("10").expect_status(0),
        ],
        "spectral_norm" => vec![
            case("").expect_status(0),
            case("7").arg("7").expect_status(0),
        ],
        "mandelbrot" => vec![
            case("").expect_status(0),
            case("13").arg("13").expect_status(0),
        ],
        "vector_fp" => vec![
            case("").expect_status(0),
            case("1").arg("1").expect_status(0),
        ],
        "sprintf_dbl" => vec![
            case("").expect_status(0),
            case("100").arg("100").expect_status(0),
        ],
        _ => vec![case("").expect_status(0)],
    }
}

fn guest_cases(programs: &[GuestProgram]) -> Vec<Case> {
    programs.iter().flat_map(cases_for).collect()
}

#[test]
fn guest_programs_match_qemu() {
    const TEST: &str = "guest_programs_match_qemu";
    let tools: Vec<OsString> = vec![common::qemu_bin(), "aarch64-linux-gnu-gcc".into()];
    let tools: Vec<OsString> = match std::env::var_os("ARMADA_GUEST_CC") {
        Some(cc) if !cc.is_empty() => vec![tools[0].clone(), cc],
        _ => tools,
    };
    if !common::require_tools(TEST, &tools) {
        return;
    }
    common::require_armada(TEST);
    let dir = common::guest_programs_dir()
        .unwrap_or_else(|e| panic!("building the guest programs failed:\n{e}"));
    let programs = common::list_guest_programs(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        programs.len() >= 24,
        "expected at least 24 guest programs in {}, found {}",
        dir.display(),
        programs.len()
    );
    common::run_suite("guest-programs", guest_cases(&programs));
}

/// The committed prebuilt binary used by the README quick start (needs only qemu).
#[test]
fn prebuilt_hello_matches_qemu() {
    const TEST: &str = "prebuilt_hello_matches_qemu";
    if !common::require_tools(TEST, &[common::qemu_bin()]) {
        return;
    }
    common::require_armada(TEST);
    let hello: PathBuf = common::workspace_root().join("tests/guest/prebuilt/hello");
    assert!(hello.is_file(), "{} is missing", hello.display());
    common::run_suite(
        "prebuilt-hello",
        vec![Case::new("prebuilt/hello", hello).expect_status(0)],
    );
}

/// The harness's own comparison logic, on synthetic outputs (no tools needed).
#[test]
fn harness_reports_differences() {
    use common::{compare_runs, first_difference, RunOutput, Snapshot};
    use std::time::Duration;
    assert_eq!(first_difference(b"a\nb\n", b"a\nb\n"), None);
    let d = first_difference(b"one\ntwo\nthree\n", b"one\ntwX\nthree\n").unwrap();
    assert!(d.contains("line 2"), "{d}");
    assert!(d.contains("\"two\"") && d.contains("\"twX\""), "{d}");
    let d = first_difference(b"one\n", b"one\nextra\n").unwrap();
    assert!(
        d.contains("line 2") && d.contains("<end of output>") && d.contains("\"extra\""),
        "{d}"
    );
    let d = first_difference(b"abc", b"abc\n").unwrap();
    assert!(d.contains("line 1"), "{d}");

    let out = |status: i32, stdout: &[u8], stderr: &[u8]| RunOutput {
        status,
        status_text: format!("exit {status}"),
        stdout: stdout.to_vec(),
        stderr: stderr.to_vec(),
        elapsed: Duration::ZERO,
        timed_out: false,
    };
    let case = Case::new("synthetic", "/nonexistent").expect_status(0);
    let none = Snapshot::new();
    assert!(compare_runs(
        &case,
        &out(0, b"x\n", b""),
        &out(0, b"x\n", b""),
        &none,
        &none
    )
    .is_empty());
    let p = compare_runs(
        &case,
        &out(0, b"x\n", b""),
        &out(1, b"y\n", b"warn\n"),
        &none,
        &none,
    );
    assert_eq!(p.len(), 3, "{p:#?}");
    // Oracle sanity: qemu not giving the expected status is reported too.
    let p = compare_runs(&case, &out(2, b"", b""), &out(2, b"", b""), &none, &none);
    assert_eq!(p.len(), 1, "{p:#?}");
    // Fault cases ignore stderr.
    let fault = Case::new("fault", "/nonexistent").expect_status(139);
    assert!(compare_runs(
        &fault,
        &out(139, b"", b"qemu: uncaught"),
        &out(139, b"", b"armada: SIGSEGV"),
        &none,
        &none
    )
    .is_empty());
    let mut files = Snapshot::new();
    files.insert("left_behind.tmp".into(), "file, 1 bytes".into());
    assert_eq!(
        compare_runs(&case, &out(0, b"", b""), &out(0, b"", b""), &none, &files).len(),
        1
    );
    // qemu -strace lines of a forking guest are recognised.
    let strace = b"1859 clone(CLONE_CHILD_CLEARTID|0x11,child_stack=0x0) = 1905\n1859 wait4(-1,0,1,0) = 1905\n1859 write(1,0x1,3) = 3\n";
    assert_eq!(
        common::forky_syscalls(strace),
        vec!["clone".to_string(), "wait4".to_string()]
    );
    assert!(common::forky_syscalls(b"1 openat(AT_FDCWD,\"x\",O_RDONLY) = 3\n").is_empty());
}
