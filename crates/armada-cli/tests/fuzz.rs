//! Snapshots, fan-out and `armada fuzz`.
//!
//! - Fan-out: `armada batch --snapshot-at main|input` gives every lane the result a full
//!   run gives it (exit, stdout, stderr, instructions, syscalls), for a program whose start
//!   leaves a partly read host file, a pipe with bytes in it, a waiting thread and a forked
//!   child behind (tests/guest/fuzz/snapshot_state.c), on the CPU engine and on wgpu when
//!   `ARMADA_TEST_WGPU` is set (lavapipe in CI).
//! - Planted bugs (tests/guest/fuzz): a magic value compared byte by byte, a length field
//!   with a header, a nested format and a libFuzzer entry point must each be found within a
//!   fixed number of executions (the run is repeatable with `--seed`, whatever the number of
//!   host threads), through stdin, the `@@` file and the buffer; every saved crash must kill
//!   the program with the same signal under `armada run` and under qemu-aarch64.
//! - Hangs, resuming from a corpus, and bad input: a snapshot point never reached, a missing
//!   symbol, a crashes directory that cannot be made, a target that crashes on every input,
//!   an empty corpus directory, a target that never reads its input.
//!
//! Programs are built by tests/guest/build-processes.sh into target/guest-fuzz (or
//! `$ARMADA_GUEST_FUZZ_DIR`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

fn programs_dir(test: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    common::build_guest_c(test, &BUILT, "ARMADA_GUEST_FUZZ_DIR", "guest-fuzz", "fuzz")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = common::workspace_root()
        .join("target/test-fuzz")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Out {
    status: i32,
    stderr: String,
}

fn armada(args: &[&std::ffi::OsStr], stdin: &[u8], timeout: Duration) -> Out {
    let mut cmd = Command::new(common::armada_bin());
    cmd.args(args);
    let o = common::run_process(cmd, stdin, timeout).expect("armada runs");
    assert!(!o.timed_out, "armada {args:?} timed out after {timeout:?}");
    Out {
        status: o.status,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

/// `armada batch` JSON lines without the private-memory figure (restored lanes share the
/// snapshot's pages, so they own fewer).
fn batch_lines(dir: &Path, program: &Path, extra: &[&str], args: &[&str], backend: &str) -> String {
    let out = dir.join(format!("out-{backend}-{}.jsonl", extra.join("-")));
    let stdin_dir = dir.join("stdin");
    let mut a: Vec<&std::ffi::OsStr> = vec![
        os("batch"),
        os("--backend"),
        os(backend),
        os("--lanes"),
        os("8"),
        os("--stdin-dir"),
        stdin_dir.as_os_str(),
        os("--no-progress"),
        os("--out"),
        out.as_os_str(),
    ];
    a.extend(extra.iter().map(os));
    a.push(program.as_os_str());
    a.extend(args.iter().map(os));
    let r = armada(&a, b"", Duration::from_secs(600));
    // 1: some lane did not exit 0 (magic's crashing lane)
    assert!(
        r.status <= 1,
        "armada batch {extra:?} failed:\n{}",
        r.stderr
    );
    let text = std::fs::read_to_string(&out).unwrap();
    text.lines()
        .map(|l| {
            let (a, rest) = l.split_once("\"private_bytes\":").expect("private_bytes");
            let rest = rest.split_once(',').map_or("", |x| x.1);
            format!("{a}{rest}\n")
        })
        .collect()
}

#[test]
fn snapshot_fan_out_matches_full_runs() {
    let Some(dir) = programs_dir("snapshot_fan_out_matches_full_runs") else {
        return;
    };
    let work = scratch("fanout");
    std::fs::create_dir_all(work.join("stdin")).unwrap();
    for i in 0..8 {
        let input = if i == 3 {
            "ARM64FUZ".to_string()
        } else {
            format!("lane input {i}")
        };
        std::fs::write(work.join("stdin").join(i.to_string()), input).unwrap();
    }
    let file = work.join("hostfile");
    std::fs::write(&file, "abcdefghij-the-rest\n").unwrap();
    let file = file.to_str().unwrap().to_string();
    let mut backends = vec!["cpu"];
    if std::env::var_os("ARMADA_TEST_WGPU").is_some() {
        backends.push("wgpu");
    }
    let programs: [(&str, Vec<&str>); 2] = [("snapshot_state", vec![&file]), ("magic", vec![])];
    for (program, args) in &programs {
        for backend in &backends {
            if *backend != "cpu" && *program == "snapshot_state" {
                continue; // threads and processes run on the CPU engine only
            }
            let p = dir.join(program);
            let full = batch_lines(&work, &p, &[], args, backend);
            assert!(full.contains("\"status\":0"), "{full}");
            for point in ["main", "input"] {
                let snap = batch_lines(&work, &p, &["--snapshot-at", point], args, backend);
                assert_eq!(
                    full, snap,
                    "{program} on {backend}: lanes started from a snapshot at {point} differ from full runs"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A saved crash kills the program with the signal its name says, under armada and qemu.
fn check_reproduces(program: &Path, crash: &Path, via_file: bool) {
    let name = crash.file_name().unwrap().to_string_lossy().into_owned();
    let sig: i32 = name
        .strip_prefix("crash-sig")
        .and_then(|r| r.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("crash file name {name}"));
    let input = std::fs::read(crash).unwrap();
    let run = |cmd: Command| {
        let o = common::run_process(
            cmd,
            if via_file { b"" } else { &input },
            Duration::from_secs(120),
        )
        .unwrap();
        o.status
    };
    let mut a = Command::new(common::armada_bin());
    a.arg("run").arg(program);
    let mut q = Command::new(common::qemu_bin());
    q.arg(program);
    if via_file {
        a.arg(crash);
        q.arg(crash);
    }
    assert_eq!(run(a), 128 + sig, "{name} under armada run");
    assert_eq!(run(q), 128 + sig, "{name} under qemu-aarch64");
}

#[test]
fn planted_bugs_are_found() {
    let Some(dir) = programs_dir("planted_bugs_are_found") else {
        return;
    };
    let work = scratch("planted");
    // (target, how the input goes in, executions allowed: 2 to 40 times what seed 0 needs,
    // which with CmpLog is 150,529, 920,321, 146,945 and 1,281)
    let cases: [(&str, &[&str], bool, u64); 4] = [
        ("magic", &["--snapshot-at", "input"], false, 600_000),
        (
            "length",
            &["--snapshot-at", "main", "--", "@@"],
            true,
            2_000_000,
        ),
        ("nested", &["--snapshot-at", "input"], false, 600_000),
        (
            "fuzz_one",
            &["--snapshot-at", "LLVMFuzzerTestOneInput"],
            false,
            50_000,
        ),
    ];
    for (name, extra, via_file, budget) in cases {
        let program = dir.join(name);
        // `--` ends armada's options: the program comes first, its arguments after
        let (opts, args): (Vec<&str>, Vec<&str>) = match extra.iter().position(|&a| a == "--") {
            Some(k) => (extra[..k].to_vec(), extra[k + 1..].to_vec()),
            None => (extra.to_vec(), vec![]),
        };
        let mut prog_and_args: Vec<String> = vec![program.to_string_lossy().into_owned()];
        prog_and_args.extend(args.iter().map(|s| s.to_string()));
        let corpus = work.join(format!("{name}-corpus"));
        let crashes = work.join(format!("{name}-crashes"));
        let budget_s = budget.to_string();
        let mut a: Vec<String> = [
            "fuzz",
            "--corpus",
            corpus.to_str().unwrap(),
            "--crashes",
            crashes.to_str().unwrap(),
            "--seed",
            "0",
            "--max-execs",
            &budget_s,
            "--stop-on-crash",
            "--no-progress",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(opts.iter().map(|s| s.to_string()));
        a.extend(prog_and_args);
        let av: Vec<&std::ffi::OsStr> = a.iter().map(os).collect();
        let r = armada(&av, b"", Duration::from_secs(1200));
        assert_eq!(
            r.status, 1,
            "{name}: armada fuzz found no crash within {budget} executions:\n{}",
            r.stderr
        );
        let found: Vec<PathBuf> = std::fs::read_dir(&crashes)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("crash-")
            })
            .collect();
        assert_eq!(found.len(), 1, "{name}: {found:?}\n{}", r.stderr);
        if name == "magic" {
            // crashes are cut down to what still crashes the same way
            assert_eq!(std::fs::read(&found[0]).unwrap(), b"ARM64FUZ");
        }
        eprintln!("{name}: {}", r.stderr.lines().last().unwrap_or_default());
        check_reproduces(&program, &found[0], via_file);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// One crash file a bug (tests/guest/fuzz/recurse.c: an overflow and an abort reachable at
/// any depth of a recursive-descent parser, and a hang): seeds that reach each bug at
/// several depths give one file each, and a fuzz run from nothing finds all three within a
/// fixed budget and files each once. Before the stack was folded (stop 69), the seeds'
/// overflow alone gave a file a depth.
#[test]
fn each_bug_is_one_bucket() {
    let Some(dir) = programs_dir("each_bug_is_one_bucket") else {
        return;
    };
    let program = dir.join("recurse");
    let work = scratch("buckets");
    let seeds = work.join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let nest = |depth: usize, inner: &[u8]| {
        let mut v = vec![b'['; depth];
        v.extend_from_slice(inner);
        v.extend(std::iter::repeat_n(b']', depth));
        v
    };
    let mut long = vec![b'"', 40];
    long.extend(std::iter::repeat_n(b'A', 40));
    let mut short_then_long = b"\"\x02ok".to_vec();
    short_then_long.extend_from_slice(&long);
    let inputs: Vec<Vec<u8>> = vec![
        nest(0, &long),
        nest(1, &long),
        nest(3, &short_then_long),
        nest(7, &long),
        nest(0, b"#666"),
        nest(5, b"#1#666"),
        nest(0, b"@spin"),
        nest(4, b"@ab@spin"),
        // (a corpus whose every input crashes or hangs is refused: nothing to fuzz from)
        nest(2, b"#7@word"),
    ];
    for (i, d) in inputs.iter().enumerate() {
        std::fs::write(seeds.join(format!("seed{i}")), d).unwrap();
    }
    let run = |corpus: &Path, crashes: &Path, execs: &str| {
        let a = [
            os("fuzz"),
            os("--corpus"),
            corpus.as_os_str(),
            os("--crashes"),
            crashes.as_os_str(),
            os("--seed"),
            os("1"),
            os("--max-execs"),
            os(execs),
            os("--no-progress"),
            program.as_os_str(),
        ];
        let r = armada(&a, b"", Duration::from_secs(600));
        assert_eq!(r.status, 1, "armada fuzz found no crash:\n{}", r.stderr);
        r
    };
    let crashes = work.join("seed-crashes");
    let r = run(&seeds, &crashes, &inputs.len().to_string());
    let found = common::files_named(&crashes, "crash-");
    assert_eq!(found.len(), 2, "{found:?}\n{}", r.stderr);
    assert_eq!(
        common::files_named(&crashes, "hang-").len(),
        1,
        "{}",
        r.stderr
    );
    // each crash says what it was in one line, by symbol
    assert!(
        r.stderr.contains("SIGSEGV at pc") && r.stderr.contains("(string+"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("SIGABRT at pc"), "{}", r.stderr);
    for f in &found {
        check_reproduces(&program, f, false);
    }
    let corpus = work.join("corpus");
    let crashes = work.join("crashes");
    let r = run(&corpus, &crashes, "400000");
    let found = common::files_named(&crashes, "crash-");
    assert_eq!(found.len(), 2, "{found:?}\n{}", r.stderr);
    assert_eq!(
        common::files_named(&crashes, "hang-").len(),
        1,
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// An AFL++ tool: in `ARMADA_AFL_TOOLS` (scripts/test unpacks Debian's afl++ package
/// there) or on PATH.
fn afl_tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("ARMADA_AFL_TOOLS")
        .map(|d| PathBuf::from(d).join(name))
        .filter(|p| p.exists())
        .or_else(|| common::find_program(name.as_ref()))
}

/// A `key : value` of a fuzzer_stats file.
fn stat(stats: &str, key: &str) -> u64 {
    stats
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().trim_end_matches('%').parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {key} in fuzzer_stats:\n{stats}"))
}

/// `-o OUT`: AFL++'s output directory, read by AFL++'s own tools (afl-whatsup, afl-plot
/// with gnuplot), resumed by a second run (the corpus and the counts go on, no crash is
/// filed twice), and shared by two instances (-M, -S) that take each other's finds.
#[test]
fn afl_output_directory_works_with_afl_tools() {
    let Some(dir) = programs_dir("afl_output_directory_works_with_afl_tools") else {
        return;
    };
    let tools = ["afl-whatsup", "afl-plot"].map(afl_tool);
    if tools.iter().any(|t| t.is_none())
        || !common::require_tools("afl_output", &["gnuplot".into()])
    {
        common::unavailable(
            "afl_output_directory_works_with_afl_tools",
            "afl-whatsup, afl-plot (Debian's afl++; ARMADA_AFL_TOOLS) or gnuplot not found",
        );
        return;
    }
    let program = dir.join("recurse");
    let work = scratch("afl");
    let seeds = work.join("in");
    std::fs::create_dir_all(&seeds).unwrap();
    std::fs::write(seeds.join("first seed"), b"[#12@ab]").unwrap();
    let out = work.join("out");
    let fuzz = |extra: &[&str]| {
        let mut a = vec![os("fuzz"), os("-o"), out.as_os_str(), os("--seed"), os("1")];
        a.extend(extra.iter().map(os));
        a.push(program.as_os_str());
        armada(&a, b"", Duration::from_secs(600))
    };
    // long enough for plot_data's lines every 5 s (afl-plot wants at least two)
    let r = fuzz(&[
        "-i",
        seeds.to_str().unwrap(),
        "--max-time",
        "6",
        "--no-progress",
    ]);
    assert_eq!(r.status, 1, "{}", r.stderr);
    let inst = out.join("default");
    let queue = common::files_named(&inst.join("queue"), "id:");
    assert!(
        queue[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("id:000000,time:")
            && queue[0].to_string_lossy().ends_with("orig:first_seed"),
        "{:?}",
        queue[0]
    );
    assert!(queue
        .iter()
        .any(|q| q.to_string_lossy().contains(",src:000000,")));
    let crashes = common::files_named(&inst.join("crashes"), "id:");
    assert_eq!(crashes.len(), 2, "{crashes:?}");
    assert!(crashes
        .iter()
        .any(|c| c.to_string_lossy().contains(",sig:11,")));
    assert_eq!(common::files_named(&inst.join("hangs"), "id:").len(), 1);
    let readme = std::fs::read_to_string(inst.join("crashes/README.txt")).unwrap();
    assert!(
        readme.contains("SIGSEGV at pc") && readme.contains("(string+"),
        "{readme}"
    );
    let stats = std::fs::read_to_string(inst.join("fuzzer_stats")).unwrap();
    let execs = stat(&stats, "execs_done");
    assert_eq!(stat(&stats, "saved_crashes"), 2);
    assert_eq!(stat(&stats, "corpus_count"), queue.len() as u64);
    assert_eq!(
        std::fs::read_to_string(inst.join("cmdline")).unwrap(),
        format!("{}\n", program.display())
    );
    // the picture: three charts from plot_data's lines
    let page = std::fs::read_to_string(inst.join("plot.html")).unwrap();
    assert_eq!(page.matches("<svg").count(), 3, "{page}");
    assert!(page.contains("<polyline"), "{page}");
    // afl-whatsup (-d: the instance has ended) adds up the instances' stats
    let mut w = Command::new("sh");
    w.arg(tools[0].as_ref().unwrap())
        .arg("-d")
        .arg(&out)
        .env("TERM", "dumb");
    let o = common::run_process(w, b"", Duration::from_secs(60)).unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status, 0, "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("Crashes saved : 2"), "{text}");
    assert!(text.contains("Total execs"), "{text}");
    // afl-plot draws plot_data with gnuplot
    let plots = work.join("plots");
    let mut p = Command::new("sh");
    p.arg(tools[1].as_ref().unwrap()).arg(&inst).arg(&plots);
    let o = common::run_process(p, b"", Duration::from_secs(120)).unwrap();
    assert_eq!(o.status, 0, "{}", String::from_utf8_lossy(&o.stderr));
    for png in [
        "edges.png",
        "exec_speed.png",
        "high_freq.png",
        "low_freq.png",
    ] {
        let b = std::fs::read(plots.join(png)).unwrap_or_default();
        assert!(
            b.starts_with(b"\x89PNG") && b.len() > 1000,
            "{png}: {} bytes",
            b.len()
        );
    }
    // resuming: the queue is the corpus, the counts go on, the known crashes stay known
    let r = fuzz(&["--max-execs", "3000", "--no-progress"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{} inputs from", queue.len())),
        "{}",
        r.stderr
    );
    let stats = std::fs::read_to_string(inst.join("fuzzer_stats")).unwrap();
    assert!(stat(&stats, "execs_done") >= execs + 3000, "{stats}");
    assert_eq!(common::files_named(&inst.join("crashes"), "id:").len(), 2);
    assert!(common::files_named(&inst.join("queue"), "id:").len() >= queue.len());
    // a secondary instance takes the main one's queue (and marks where it got to)
    let r = fuzz(&["-S", "second", "--max-execs", "500", "--no-progress"]);
    assert!(r.status <= 1, "{}", r.stderr);
    let second = out.join("second");
    let synced = common::files_named(&second.join("queue"), "id:")
        .iter()
        .filter(|q| q.to_string_lossy().contains(",sync:default"))
        .count();
    assert!(synced > 10, "{synced} entries taken from the main instance");
    let mark: usize = std::fs::read_to_string(second.join(".synced/default"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(mark >= queue.len(), "{mark}");
    // bad names and places get clear messages
    let r = fuzz(&["-S", "../x", "--max-execs", "1"]);
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stderr.contains("fuzzer name"), "{}", r.stderr);
    let file = work.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let a = [
        os("fuzz"),
        os("-o"),
        file.as_os_str(),
        os("--max-execs"),
        os("1"),
        program.as_os_str(),
    ];
    let r = armada(&a, b"", Duration::from_secs(60));
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot create the output directory"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// `--cmin`: a corpus minimized to inputs that reach every (edge, hit-count) tuple the
/// whole corpus reaches; crashing inputs and duplicates are left out, and minimizing the
/// result again keeps it as it is.
#[test]
fn cmin_keeps_every_tuple() {
    let Some(dir) = programs_dir("cmin_keeps_every_tuple") else {
        return;
    };
    let program = dir.join("recurse");
    let work = scratch("cmin");
    let inputs = work.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let files: [(&str, &[u8]); 8] = [
        ("a", b"#1"),
        ("b", b"#1"),   // a duplicate of a
        ("c", b"#12"),  // the digit loop twice: another hit-count bucket
        ("h", b"#2"),   // the path of a, and no shorter: left out
        ("d", b"[#1]"), // a list too
        ("e", b"@ab"),
        ("f", b"[[#1]@ab]"),
        ("g", b"#666"), // aborts
    ];
    for (n, d) in files {
        std::fs::write(inputs.join(n), d).unwrap();
    }
    let cmin = |from: &Path, to: &Path| {
        let a = [
            os("fuzz"),
            os("--cmin"),
            to.as_os_str(),
            os("-i"),
            from.as_os_str(),
            program.as_os_str(),
        ];
        let r = armada(&a, b"", Duration::from_secs(120));
        assert_eq!(r.status, 0, "{}", r.stderr);
        let tuples: usize = r
            .stderr
            .split("every one of the ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{}", r.stderr));
        assert!(
            r.stderr.contains("1 crashed or hung") || from != inputs,
            "{}",
            r.stderr
        );
        (tuples, common::files_named(to, ""), r.stderr)
    };
    let out = work.join("min");
    let (tuples, kept, err) = cmin(&inputs, &out);
    assert!(err.contains("1 were duplicates"), "{err}");
    let names: Vec<String> = kept
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.contains(&"b".to_string()) && !names.contains(&"g".to_string()),
        "{names:?}"
    );
    assert!(names.len() < 6, "{names:?}");
    let (again, kept2, _) = cmin(&out, &work.join("min2"));
    assert_eq!(again, tuples, "the minimized corpus reaches fewer tuples");
    assert_eq!(kept2.len(), kept.len());
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn hangs_are_saved_and_runs_resume() {
    let Some(dir) = programs_dir("hangs_are_saved_and_runs_resume") else {
        return;
    };
    let work = scratch("hang");
    // a hang: "LOOP" spins forever; 200,000 instructions per execution is the limit
    let corpus = work.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(corpus.join("seed"), "LOOX").unwrap();
    let crashes = work.join("crashes");
    let program = dir.join("hang");
    let run = |execs: &str| {
        armada(
            &[
                os("fuzz"),
                os("--corpus"),
                corpus.as_os_str(),
                os("--crashes"),
                crashes.as_os_str(),
                os("--exec-limit"),
                os("200000"),
                os("--max-execs"),
                os(execs),
                os("--stop-on-crash"),
                os("--snapshot-at"),
                os("input"),
                os("--no-progress"),
                program.as_os_str(),
            ],
            b"",
            Duration::from_secs(600),
        )
    };
    let r = run("300000");
    assert!(r.stderr.contains("hangs 1"), "{}", r.stderr);
    let hangs: Vec<_> = std::fs::read_dir(&crashes)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hang-"))
        .collect();
    assert_eq!(hangs.len(), 1, "{hangs:?}");
    assert!(std::fs::read(crashes.join(&hangs[0]))
        .unwrap()
        .starts_with(b"LOOP"));
    // a second run resumes: the corpus it wrote is read back, the known hang is not news
    let entries = std::fs::read_dir(&corpus).unwrap().count();
    assert!(entries >= 2, "the first run added no corpus entries");
    let r = run("2000");
    assert!(
        r.stderr.contains(&format!("corpus {entries}")) || r.stderr.contains("corpus"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hangs 0"),
        "the known hang counted again:\n{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn bad_input_gets_clear_errors() {
    let Some(dir) = programs_dir("bad_input_gets_clear_errors") else {
        return;
    };
    let work = scratch("bad");
    let fuzz = |name: &str, extra: &[&str], program: &str| {
        let corpus = work.join(format!("{name}-corpus"));
        let crashes = work.join(format!("{name}-crashes"));
        let mut a: Vec<String> = vec![
            "fuzz".into(),
            "--corpus".into(),
            corpus.to_string_lossy().into_owned(),
            "--crashes".into(),
            crashes.to_string_lossy().into_owned(),
            "--max-execs".into(),
            "3000".into(),
            "--no-progress".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push(dir.join(program).to_string_lossy().into_owned());
        let av: Vec<&std::ffi::OsStr> = a.iter().map(os).collect();
        armada(&av, b"", Duration::from_secs(300))
    };
    // a snapshot point that is never reached
    let r = fuzz(
        "noread",
        &["--snapshot-at", "input", "--start-limit", "50000000"],
        "noread",
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("was not reached") && r.stderr.contains("exit status 0"),
        "{}",
        r.stderr
    );
    // a symbol the program does not have
    let r = fuzz("nosym", &["--snapshot-at", "no_such_function"], "magic");
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("no symbol `no_such_function`"),
        "{}",
        r.stderr
    );
    // a crashes directory that cannot be made (its parent is a file)
    std::fs::write(work.join("plainfile"), "x").unwrap();
    let corpus = work.join("c");
    let blocked = work.join("plainfile/crashes");
    let r = armada(
        &[
            os("fuzz"),
            os("--corpus"),
            corpus.as_os_str(),
            os("--crashes"),
            blocked.as_os_str(),
            os("--max-execs"),
            os("10"),
            dir.join("magic").as_os_str(),
        ],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot create the crashes directory"),
        "{}",
        r.stderr
    );
    // a target that crashes on every input: the crash is saved, and the run says why it stops
    let r = fuzz("always", &[], "always_crash");
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("every input of the corpus crashes"),
        "{}",
        r.stderr
    );
    assert!(std::fs::read_dir(work.join("always-crashes"))
        .unwrap()
        .any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("crash-sig11")));
    // an empty corpus directory starts from one empty input, and says so
    let r = fuzz("empty", &["--snapshot-at", "input"], "magic");
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("is empty: starting from one empty input"),
        "{}",
        r.stderr
    );
    // an armada option after the program's place, and @@ with stdin input
    let r = fuzz("opt", &["--no-such-option", "5"], "magic");
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(
        r.stderr.contains("unknown option --no-such-option"),
        "{}",
        r.stderr
    );
    let r = armada(
        &[
            os("fuzz"),
            os("--corpus"),
            work.join("c2").as_os_str(),
            os("--crashes"),
            work.join("x2").as_os_str(),
            os("--input"),
            os("stdin"),
            dir.join("magic").as_os_str(),
            os("@@"),
        ],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(r.status, 125, "{}", r.stderr);
    assert!(r.stderr.contains("literal @@"), "{}", r.stderr);
    // a target that never reads its input: the default snapshot point is not reached, so
    // every execution runs whole, with a warning; and every input runs the same path
    let r = fuzz("same", &[], "noread");
    assert!(r.stderr.contains("no snapshot"), "{}", r.stderr);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("does the target read its input"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The engines beside the CPU engine that a test can run here: the CUDA kernel's simulator
/// when this build has it (ARMADA_CUDA_SIM), and wgpu when `ARMADA_TEST_WGPU` is set
/// (lavapipe in CI). Every run of these tests sets ARMADA_CUDA_SIM, so the guests'
/// environment (armada's own) is the same on every engine.
fn gpu_backends(probe: &Path) -> Vec<&'static str> {
    let mut v = Vec::new();
    let o = sim_armada(
        &[os("run"), os("--backend"), os("cuda"), probe.as_os_str()],
        b"",
    );
    if o.stderr.contains("no kernel simulator") {
        assert!(
            !common::in_ci(),
            "the CI build has no CUDA kernel simulator"
        );
        common::loud("skipping the CUDA simulator: this build has none");
    } else {
        v.push("cuda");
    }
    if std::env::var_os("ARMADA_TEST_WGPU").is_some() {
        v.push("wgpu");
    }
    v
}

/// `armada ARGS` with ARMADA_CUDA_SIM=1 (`--backend cuda` runs the kernel simulator).
fn sim_armada(args: &[&std::ffi::OsStr], stdin: &[u8]) -> Out {
    let mut cmd = Command::new(common::armada_bin());
    cmd.args(args).env("ARMADA_CUDA_SIM", "1");
    let o = common::run_process(cmd, stdin, Duration::from_secs(900)).expect("armada runs");
    assert!(!o.timed_out, "armada {args:?} timed out");
    Out {
        status: o.status,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Coverage maps (`armada batch --coverage`) are the same bytes on every engine: lanes of
/// the planted-bug targets from the entry and from a snapshot, and a floating-point guest
/// whose instructions wgpu leaves to the host (their edges count in the lane's host map).
#[test]
fn coverage_maps_match_across_engines() {
    let Some(dir) = programs_dir("coverage_maps_match_across_engines") else {
        return;
    };
    let work = scratch("covmaps");
    let stdin = work.join("stdin");
    std::fs::create_dir_all(&stdin).unwrap();
    let inputs: [&[u8]; 6] = [
        b"",
        b"ARM6",
        b"ARM64FUZ",
        b"\x00\x10\x00\x00hello length field",
        b"{[(<>)]}{[(",
        b"lane 5: some ordinary text\n",
    ];
    for (i, d) in inputs.iter().enumerate() {
        std::fs::write(stdin.join(i.to_string()), d).unwrap();
    }
    let backends = gpu_backends(&dir.join("noread"));
    let maps = |program: &Path, backend: &str, extra: &[&str]| -> Vec<Vec<u8>> {
        let out = work.join(format!("cov-{backend}-{}", extra.join("-")));
        let _ = std::fs::remove_dir_all(&out);
        let mut a: Vec<&std::ffi::OsStr> = vec![
            os("batch"),
            os("--backend"),
            os(backend),
            os("--lanes"),
            os("6"),
            os("--stdin-dir"),
            stdin.as_os_str(),
            os("--no-progress"),
            os("--coverage"),
            out.as_os_str(),
        ];
        a.extend(extra.iter().map(os));
        a.push(program.as_os_str());
        let r = sim_armada(&a, b"");
        assert!(r.status <= 1, "armada batch on {backend}:\n{}", r.stderr);
        (0..inputs.len())
            .map(|i| std::fs::read(out.join(format!("{i}.cov"))).unwrap())
            .collect()
    };
    let mut programs: Vec<(PathBuf, &[&str])> = ["magic", "length", "nested"]
        .iter()
        .flat_map(|p| [&[][..], &["--snapshot-at", "input"][..]].map(|extra| (dir.join(p), extra)))
        .collect();
    match common::guest_programs_dir() {
        Ok(g) => programs.push((g.join("fp_edge"), &[])),
        Err(e) => assert!(!common::in_ci(), "no guest programs: {e}"),
    }
    for (p, extra) in &programs {
        let program = p.file_name().unwrap().to_string_lossy();
        let extra = *extra;
        {
            let cpu = maps(p, "cpu", extra);
            for m in &cpu {
                assert_eq!(m.len(), 65536);
                assert!(
                    m.iter().filter(|&&c| c != 0).count() > 20,
                    "{program}: too few edges"
                );
            }
            // different inputs take different paths (fp_edge reads no input)
            if program != "fp_edge" {
                assert_ne!(cpu[0], cpu[2], "{program}: every input ran the same path");
            }
            for b in &backends {
                let other = maps(p, b, extra);
                for (i, (x, y)) in cpu.iter().zip(&other).enumerate() {
                    let differ = x.iter().zip(y).filter(|(a, b)| a != b).count();
                    assert_eq!(
                        differ, 0,
                        "{program} {extra:?} lane {i}: {differ} slots of the {b} map differ from the CPU engine's"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `armada fuzz` on a GPU engine makes the same run as on the CPU engine with the same
/// seed: the same executions, corpus, edges, instructions and crash (the device's coverage
/// news and the maps it hands over decide exactly what the CPU engine's maps decide, and
/// the syscalls the kernel answers itself answer as the host does: tests/guest/fuzz/devio.c).
/// On the CUDA kernel the lanes are persistent (taken back to the snapshot on the device
/// each round), which must not change a thing, with lanes the host never touches (magic,
/// nested), lanes it services on some inputs (devio, and hang's instruction limit), and
/// the `@@` file (length), which runs a new batch each round; and without persistence.
#[test]
fn gpu_fuzzing_matches_cpu() {
    let Some(dir) = programs_dir("gpu_fuzzing_matches_cpu") else {
        return;
    };
    let work = scratch("gpufuzz");
    let backends = gpu_backends(&dir.join("noread"));
    // devio: the syscalls a GPU kernel answers itself and those around it it must not,
    // from seeds that take each path
    let seeds: [&[u8]; 4] = [b"WFRDC", b"xFRDC", b"W", b"abcD"];
    // grow: lanes that map hundreds of pages (the page table grows under persistent lanes),
    // and runs that must each start from the snapshot's memory
    // (and "S\xff\x00": a run of over 512 edges)
    let grow_seeds: [&[u8]; 5] = [
        b"G\x07xxxxxxxx",
        b"G\x01",
        b"abc",
        b"G\x03!",
        b"S\xff\x00\x80",
    ];
    // forker: every run forks and waits (a lane of two processes, set up again on the host
    // for the next round); "FOK" crashes
    let fork_seeds: [&[u8]; 2] = [b"FOX", b"FOK"];
    let stats = |program: &str, backend: &str, execs: &str, persist: &str, pipe: &str| -> String {
        let grow = program == "grow";
        let case = FuzzCase {
            name: program,
            program: dir.join(program),
            options: Vec::new(),
            // (only length reads the @@ file; the others ignore the argument)
            args: if program == "length" {
                vec!["@@"]
            } else {
                vec![]
            },
            seeds: match program {
                "devio" => &seeds,
                "grow" => &grow_seeds,
                "forker" => &fork_seeds,
                _ => &[],
            },
            lanes: "128",
            // grow: the smallest page table, and no lane finished on the host, so the table
            // grows under persistent lanes
            env: vec![
                ("ARMADA_GPU_PT_SLOTS", if grow { "4096" } else { "" }),
                ("ARMADA_GPU_FINISH_ON_HOST", if grow { "0" } else { "1" }),
            ],
        };
        let (status, stderr, stats) = fuzz_stats(&work, &case, backend, execs, persist, pipe);
        // (grow's seed "G\x03!" and forker's "FOK" crash: exit status 1, a crash found)
        let want = if grow || program == "forker" { 1 } else { 0 };
        assert_eq!(status, want, "armada fuzz on {backend}:\n{stderr}");
        if backend == "cuda" && grow && persist == "1" {
            // the table grew while lanes were persistent (the undo lists were dropped)
            assert!(
                stderr
                    .lines()
                    .any(|l| l.contains("grows)") && !l.contains("(0 grows)")),
                "grow: the page table never grew:\n{stderr}"
            );
        }
        if backend == "cuda" && program != "length" {
            // the rounds after the first took the lanes back on the device, or did not
            let restarted = stderr.contains(": restart ");
            assert_eq!(
                restarted,
                persist == "1",
                "{program}, persistence {persist}:\n{stderr}"
            );
        }
        stats
    };
    for program in [
        "magic", "devio", "grow", "nested", "hang", "length", "forker",
    ] {
        for b in &backends {
            // a round of 128 lanes takes lavapipe about 3 s on 2 cores: three rounds there
            let execs = match (*b, program) {
                ("wgpu", _) => "384",
                // (each run forks: a few rounds show it)
                (_, "forker") => "2048",
                _ => "20000",
            };
            if *b == "wgpu" && !["magic", "devio"].contains(&program) {
                continue;
            }
            // rounds pipelined (the GPU engines' way) and one at a time (the CPU engine's)
            let pipes: &[&str] = if *b == "cuda" && program == "magic" {
                &["1", "0"]
            } else {
                &["1"]
            };
            for pipe in pipes {
                let cpu = stats(program, "cpu", execs, "1", pipe);
                assert!(cpu.contains("\"corpus\":"), "{cpu}");
                let modes: &[&str] = if *b == "cuda" { &["1", "0"] } else { &["1"] };
                for persist in modes {
                    assert_eq!(
                        cpu,
                        stats(program, b, execs, persist, pipe),
                        "armada fuzz of {program} on {b} (persistent lanes {persist}, pipelined {pipe}) differs from the CPU engine"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// One target of the GPU-against-CPU fuzzing tests.
struct FuzzCase<'a> {
    /// Names the run's folders.
    name: &'a str,
    program: PathBuf,
    /// armada's options before the program (`-L SYSROOT`).
    options: Vec<std::ffi::OsString>,
    /// The program's arguments.
    args: Vec<&'a str>,
    /// The corpus it starts from (none: one empty input).
    seeds: &'a [&'a [u8]],
    lanes: &'a str,
    env: Vec<(&'a str, &'a str)>,
}

/// `armada fuzz` of `case` on `backend` (ARMADA_CUDA_SIM=1: the CUDA kernel's simulator)
/// for `execs` executions with `--seed 3`, lanes persistent or not (`persist`) and rounds
/// pipelined or not (`pipe`): its exit status, its stderr, and its figures from
/// `--stats-json` but time and rate (the paths of saved crashes made relative to the run).
/// Every run sets the same environment variables, which reach the guest (its start's
/// instructions depend on them).
fn fuzz_stats(
    work: &Path,
    case: &FuzzCase,
    backend: &str,
    execs: &str,
    persist: &str,
    pipe: &str,
) -> (i32, String, String) {
    // one folder a run, its name as long for every backend: the `@@` file lives in the
    // crashes folder, and its path's length shows in the instructions the start takes
    let b = ["cpu", "cuda", "wgpu"]
        .iter()
        .position(|x| *x == backend)
        .unwrap();
    let run = work.join(format!("{}-{execs}-run{b}{persist}{pipe}", case.name));
    let (json, corpus) = (run.join("stats.json"), run.join("corpus"));
    if !case.seeds.is_empty() {
        std::fs::create_dir_all(&corpus).unwrap();
        for (i, s) in case.seeds.iter().enumerate() {
            std::fs::write(corpus.join(format!("seed{i}")), s).unwrap();
        }
    }
    let mut cmd = Command::new(common::armada_bin());
    cmd.env("ARMADA_CUDA_SIM", "1")
        .env("ARMADA_FUZZ_PERSISTENT", persist)
        .env("ARMADA_FUZZ_PIPELINE", pipe)
        .env("ARMADA_FUZZ_PROFILE", "1")
        .envs(case.env.iter().copied());
    let crashes = run.join("crashes");
    cmd.args([
        os("fuzz"),
        os("--backend"),
        os(backend),
        os("--lanes"),
        os(case.lanes),
        os("--seed"),
        os("3"),
        os("--max-execs"),
        os(execs),
        os("--corpus"),
        corpus.as_os_str(),
        os("--crashes"),
        crashes.as_os_str(),
        os("--stats-json"),
        json.as_os_str(),
        os("--no-progress"),
    ])
    .args(&case.options)
    .arg(&case.program)
    .args(&case.args);
    let r = common::run_process(cmd, b"", Duration::from_secs(900)).expect("armada runs");
    assert!(
        !r.timed_out,
        "armada fuzz of {} on {backend} timed out",
        case.name
    );
    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; armada fuzz on {backend}:\n{stderr}",
            json.display()
        )
    });
    let stats = text
        .split(',')
        .filter(|f| !f.contains("elapsed_s") && !f.contains("execs_per_sec"))
        .map(|f| f.replace(&run.to_string_lossy().into_owned(), "RUN"))
        .collect::<Vec<_>>()
        .join(",");
    (r.status, stderr, stats)
}

/// `armada fuzz --backend cuda|wgpu` of dynamically linked and threaded targets gives the
/// CPU engine's figures (executions, corpus, edges, crashes and their files' names,
/// instructions): tests/guest/dynamic/fuzz_zlib.c inflates its input with Debian's arm64
/// zlib (libz.so.1 from the sysroot of scripts/sysroot.sh), fuzz_threads.c splits its
/// input between two threads (clone, futex, a mutex, joins in every execution). Each starts
/// from a snapshot at its first read of stdin, after ld.so has mapped and relocated its
/// libraries; on the CUDA kernel with lanes persistent and not. Seeds that crash make the
/// crash files' names (signal, pc, stack hash) part of what must match.
#[test]
fn gpu_fuzzing_of_dynamic_and_threaded_targets_matches_cpu() {
    const TEST: &str = "gpu_fuzzing_of_dynamic_and_threaded_targets_matches_cpu";
    let Some(dir) = programs_dir(TEST) else {
        return;
    };
    let root = common::workspace_root();
    let sysroot = std::env::var_os("ARMADA_TEST_SYSROOT")
        .filter(|s| !s.is_empty())
        .map_or(root.join("target/sysroot"), PathBuf::from);
    if !sysroot.join("usr/lib/aarch64-linux-gnu/libz.so.1").exists() {
        common::unavailable(
            TEST,
            &format!(
                "{} has no libz.so.1 (scripts/sysroot.sh builds it)",
                sysroot.display()
            ),
        );
        return;
    }
    let dynamic = root.join("target/guest-dynamic");
    let o = Command::new("bash")
        .arg(root.join("tests/guest/build-dynamic.sh"))
        .arg(&dynamic)
        .env("ARMADA_TEST_SYSROOT", &sysroot)
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "tests/guest/build-dynamic.sh failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let work = scratch("gpufuzzdyn");
    let backends = gpu_backends(&dir.join("noread"));
    // zlib streams: "BUGx" stored (one byte from the bug), a Huffman-coded text, and "BUG!"
    // stored (the crash itself, its Adler-32 still that of "BUGx")
    let zlib_seeds: [&[u8]; 3] = [
        b"\x78\x01\x01\x04\x00\xfb\xff\x42\x55\x47\x78\x03\x11\x01\x57",
        b"\x78\xda\xcb\x48\xcd\xc9\xc9\x57\xc8\x40\x22\x13\x8b\x72\x13\x53\x12\x15\xd2\x4a\xab\xaa\x00\xa3\x0d\x0a\xf2",
        b"\x78\x01\x01\x04\x00\xfb\xff\x42\x55\x47\x21\x03\x11\x01\x57",
    ];
    let thread_seeds: [&[u8]; 3] = [b"abcdefgh", b"12345678TH", b"abcdTHRD"];
    let lib = sysroot.as_os_str().to_owned();
    for (name, seeds) in [("fuzz_zlib", &zlib_seeds), ("fuzz_threads", &thread_seeds)] {
        for b in &backends {
            // lavapipe runs ~0.1 M instructions/s: two rounds of 16 lanes there (the
            // seeds, one of which crashes, then mutations)
            let (execs, lanes) = if *b == "wgpu" {
                ("32", "16")
            } else {
                ("3000", "128")
            };
            let case = FuzzCase {
                name,
                program: dynamic.join(name),
                options: vec!["-L".into(), lib.clone()],
                args: vec![],
                seeds,
                lanes,
                env: vec![],
            };
            let (status, stderr, cpu) = fuzz_stats(&work, &case, "cpu", execs, "1", "1");
            assert_eq!(status, 1, "{name} on cpu: a seed crashes:\n{stderr}");
            assert!(cpu.contains("crash-sig11-pc"), "{name}: {cpu}");
            let modes: &[&str] = if *b == "cuda" { &["1", "0"] } else { &["1"] };
            for persist in modes {
                let (status, stderr, gpu) = fuzz_stats(&work, &case, b, execs, persist, "1");
                assert_eq!(status, 1, "{name} on {b}:\n{stderr}");
                if *b == "cuda" && *persist == "1" {
                    // every execution makes a syscall the host answers (brk and getrandom at
                    // malloc's first call; clone): after a restart that set most lanes up
                    // again, the rounds make new batches
                    let gave_up = stderr
                        .split(": restart ")
                        .nth(1)
                        .is_some_and(|after| after.contains("restarts off"));
                    assert!(gave_up, "{name}: persistent lanes kept:\n{stderr}");
                }
                assert_eq!(
                    cpu, gpu,
                    "armada fuzz of {name} on {b} (persistent lanes {persist}) differs from the CPU engine"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `armada batch` gives every lane the CPU engine's result (exit, instructions, syscalls,
/// and the output where it is kept) where the CUDA kernel answers stdin reads, fstat, exit
/// and writes itself, and where it must leave them to the host (tests/guest/fuzz/devio.c:
/// short reads, EFAULT buffers, fd 1 made stderr's copy, fd 0 closed), from the entry and
/// from a snapshot, with the output dropped (`--drop-output`) and kept. Kept output goes
/// through an output list the kernel fills: tests/guest/fuzz/output.c writes 0 bytes to
/// 12 KiB at a time to both streams, with lists of 1, 64 and the default words, so writes
/// that do not fit go to the host between the kernel's, and each stream's bytes must still
/// come out in order.
#[test]
fn device_io_batches_match_cpu() {
    let Some(dir) = programs_dir("device_io_batches_match_cpu") else {
        return;
    };
    let work = scratch("devio");
    let stdin = work.join("stdin");
    std::fs::create_dir_all(&stdin).unwrap();
    let inputs: [&[u8]; 10] = [
        b"WFRDC", b"xFRDC", b"W", b"abcD", b"", b"abc", b"xxxDC", b"WFRDC!", b"xFR", b"WW",
    ];
    for (i, d) in inputs.iter().enumerate() {
        std::fs::write(stdin.join(i.to_string()), d).unwrap();
    }
    let backends = gpu_backends(&dir.join("noread"));
    let run = |program: &str, backend: &str, extra: &[&str], list: &str, lanes: &str| -> String {
        let out = work.join(format!("{backend}.jsonl"));
        let mut a: Vec<&std::ffi::OsStr> = vec![
            os("batch"),
            os("--backend"),
            os(backend),
            os("--lanes"),
            os(lanes),
            os("--stdin-dir"),
            stdin.as_os_str(),
            os("--no-progress"),
            os("--out"),
            out.as_os_str(),
        ];
        a.extend(extra.iter().map(os));
        let program = dir.join(program);
        a.push(program.as_os_str());
        let mut cmd = Command::new(common::armada_bin());
        cmd.args(&a)
            .env("ARMADA_CUDA_SIM", "1")
            .env("ARMADA_GPU_OUT_WORDS", list);
        let r = common::run_process(cmd, b"", Duration::from_secs(900)).expect("armada runs");
        assert!(
            !r.timed_out && r.status <= 1,
            "armada batch {extra:?} on {backend}:\n{}",
            String::from_utf8_lossy(&r.stderr)
        );
        std::fs::read_to_string(&out).unwrap()
    };
    for drop in [true, false] {
        for from in [&[][..], &["--snapshot-at", "input"][..]] {
            let mut extra = from.to_vec();
            if drop {
                extra.push("--drop-output");
            }
            let cpu = run("devio", "cpu", &extra, "", "10");
            assert!(cpu.contains("\"signal\":11"), "{cpu}");
            assert_eq!(
                cpu.contains("\"stdout\":\"W"),
                !drop,
                "output dropped: {drop}: {cpu}"
            );
            for b in &backends {
                // wgpu answers no syscall on the device: its lanes' I/O is the host's,
                // dropped or kept as the CPU engine's (one run of the two is enough there,
                // and each run on lavapipe compiles the kernel again, 7-10 s)
                if *b == "wgpu" && drop {
                    continue;
                }
                assert_eq!(
                    cpu,
                    run("devio", b, &extra, "", "10"),
                    "devio {extra:?} on {b} differs from the CPU engine"
                );
            }
        }
    }
    for from in [&[][..], &["--snapshot-at", "main"][..]] {
        for list in ["1", "64", ""] {
            // (the guest sees armada's environment, ARMADA_GPU_OUT_WORDS too: the CPU
            // engine's run gets the same, or the start's instruction counts differ)
            let cpu = run("output", "cpu", from, list, "10");
            assert!(cpu.contains("[4:") && cpu.contains("stderr line"), "{cpu}");
            for b in &backends {
                // (the output list is the CUDA kernel's: wgpu runs the default once, from
                // the entry, and three lanes: every write is the host's there, and ten
                // lanes took lavapipe 45 s on 2 cores; devio's runs above take wgpu from a
                // snapshot)
                if *b == "wgpu" && (!list.is_empty() || !from.is_empty()) {
                    continue;
                }
                let (cpu, lanes) = if *b == "wgpu" {
                    (run("output", "cpu", from, list, "3"), "3")
                } else {
                    (cpu.clone(), "10")
                };
                assert_eq!(
                    cpu,
                    run("output", b, from, list, lanes),
                    "output {from:?} on {b} with an output list of {list:?} words differs from the CPU engine"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// Rounds of thousands of inputs are mutated by several streams in parallel, and pipelined
/// (one made while the last one runs): the run is
/// still the seed's alone, the same with one host thread or two, and the same on the CUDA
/// kernel's simulator with persistent lanes (whose first round has news in most lanes, of
/// which only one map a path comes down).
#[test]
fn large_rounds_repeat_with_the_seed() {
    let Some(dir) = programs_dir("large_rounds_repeat_with_the_seed") else {
        return;
    };
    let work = scratch("largerounds");
    let backends = gpu_backends(&dir.join("noread"));
    let run = |backend: &str, threads: &str| -> String {
        let d = work.join(format!("{backend}-{threads}"));
        let json = d.join("stats.json");
        let mut cmd = Command::new(common::armada_bin());
        // (rounds pipelined on every engine: the GPU engines' way)
        cmd.env("ARMADA_CUDA_SIM", "1")
            .env("ARMADA_FUZZ_PIPELINE", "1")
            .env("RAYON_NUM_THREADS", threads)
            .args([
                os("fuzz"),
                os("--backend"),
                os(backend),
                os("--lanes"),
                os("4096"),
                os("--seed"),
                os("5"),
                os("--max-execs"),
                os("12000"),
                os("--corpus"),
                d.join("corpus").as_os_str(),
                os("--crashes"),
                d.join("crashes").as_os_str(),
                os("--stats-json"),
                json.as_os_str(),
                os("--no-progress"),
                dir.join("nested").as_os_str(),
            ]);
        let r = common::run_process(cmd, b"", Duration::from_secs(900)).expect("armada runs");
        assert!(!r.timed_out, "armada fuzz on {backend} timed out");
        assert_eq!(
            r.status,
            0,
            "armada fuzz on {backend}:\n{}",
            String::from_utf8_lossy(&r.stderr)
        );
        let text = std::fs::read_to_string(&json).unwrap();
        text.split(',')
            .filter(|f| !f.contains("elapsed_s") && !f.contains("execs_per_sec"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let one = run("cpu", "1");
    assert!(one.contains("\"execs\":12289"), "{one}");
    assert_eq!(one, run("cpu", "2"), "one host thread and two differ");
    if backends.contains(&"cuda") {
        assert_eq!(one, run("cuda", "2"), "the CUDA simulator differs");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `armada run` of a program a signal kills dies by that signal, without a core dump, as
/// qemu-aarch64 does (a parent sees "killed by SIGSEGV", not exit status 139).
#[test]
fn run_dies_by_the_guests_signal() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let Some(dir) = programs_dir("run_dies_by_the_guests_signal") else {
        return;
    };
    let program = dir.join("fuzz_one");
    let killed_by = |mut cmd: Command| {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        child.stdin.take().unwrap().write_all(b"BUG!").unwrap();
        let st = child.wait().unwrap();
        (st.signal(), st.core_dumped())
    };
    let mut a = Command::new(common::armada_bin());
    a.arg("run").arg(&program);
    assert_eq!(killed_by(a), (Some(11), false), "armada run");
    let mut q = Command::new(common::qemu_bin());
    q.arg(&program);
    assert_eq!(killed_by(q).0, Some(11), "qemu-aarch64");
}
