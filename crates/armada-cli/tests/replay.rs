//! `armada replay`: a lane of a batch run again on the CPU engine gives the batch's line
//! (status, instructions, stdout, stderr), for batches on the CPU engine and on the CUDA
//! kernel's simulator (ARMADA_CUDA_SIM), with per-lane inputs, lanes that fault, and a
//! snapshot; under gdb too; and a record that does not fit (another program, a lane that
//! is not there, a missing record) gets a clear message. Inputs `armada fuzz` saved (AFL++'s
//! layout and `--crashes`' own) replay to the bucket the fuzzer filed them under.

mod common;

use common::armada_bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn fuzz_targets(test: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    common::build_guest_c(test, &BUILT, "ARMADA_GUEST_FUZZ_DIR", "guest-fuzz", "fuzz")
}

fn armada(dir: &Path, args: &[&str]) -> Output {
    Command::new(armada_bin())
        .args(args)
        .current_dir(dir)
        .env("ARMADA_CUDA_SIM", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `armada batch` of `program` over the 8 lanes' inputs in `dir`, with its results and
/// record in `dir` (a batch with lanes killed by a signal exits 1, so only the files count).
fn batch8(dir: &Path, program: &str) {
    let o = armada(
        dir,
        &[
            "batch",
            "--lanes",
            "8",
            "--stdin-dir",
            "in",
            "--out",
            "r.jsonl",
            "--no-progress",
            program,
        ],
    );
    assert!(dir.join("r.jsonl.batch.json").exists(), "{o:?}");
}

/// A work directory with 8 lanes' inputs for `magic`: lanes 2 and 5 crash (the magic
/// value), 3 is short, the others print "ok".
fn inputs(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("replay")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    for i in 0..8 {
        let data: &[u8] = match i {
            2 | 5 => b"ARM64FUZZ",
            3 => b"AR",
            _ => b"ARM64FUN!",
        };
        std::fs::write(dir.join("in").join(i.to_string()), data).unwrap();
    }
    dir
}

fn lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("r.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_lane_replays_to_its_line_on_the_cpu_engine_and_from_the_simulator() {
    let Some(targets) = fuzz_targets("replay") else {
        return;
    };
    let magic = targets.join("magic");
    let magic = magic.to_str().unwrap();
    for (name, extra) in [
        ("cpu", vec!["--backend", "cpu"]),
        ("cuda-sim", vec!["--backend", "cuda"]),
        (
            "snapshot",
            vec!["--backend", "cpu", "--snapshot-at", "input"],
        ),
    ] {
        let dir = inputs(name);
        let mut a = vec![
            "batch",
            "--lanes",
            "8",
            "--stdin-dir",
            "in",
            "--out",
            "r.jsonl",
        ];
        a.extend(extra.iter().copied());
        a.extend(["--no-progress", magic]);
        let o = armada(&dir, &a);
        let err = String::from_utf8_lossy(&o.stderr);
        if name == "cuda-sim" && !dir.join("r.jsonl").exists() && err.contains("CUDA") {
            common::loud(&format!(
                "### replay: no CUDA simulator in this build: {err}"
            ));
            continue;
        }
        // (a batch with lanes killed by a signal exits 1)
        assert!(o.status.code().is_some_and(|c| c <= 1), "{name}: {err}");
        assert!(dir.join("r.jsonl.batch.json").exists(), "{name}: {err}");
        let ls = lines(&dir);
        assert_eq!(ls[2]["signal"], 11, "{name}: lane 2 crashes: {}", ls[2]);
        for (lane, line) in ls.iter().enumerate() {
            // from another directory: the record says where the batch ran
            let o = armada(
                Path::new("/"),
                &[
                    "replay",
                    dir.join("r.jsonl").to_str().unwrap(),
                    "--lane",
                    &lane.to_string(),
                ],
            );
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "{name} lane {lane}: {err}");
            assert!(
                err.contains("the same as in the batch"),
                "{name} lane {lane}: {err}"
            );
            let want = line["stdout"].as_str().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                want,
                "{name} lane {lane}"
            );
        }
    }
}

/// `armada replay ARGS -g` in `dir`, with gdb-multiarch continuing it twice from the start
/// and printing the stack between: gdb's output, replay's status and its stderr after gdb.
fn replay_under_gdb(dir: &Path, args: &[&str], program: &Path) -> (String, Option<i32>, String) {
    let mut child = Command::new(armada_bin())
        .arg("replay")
        .args(args)
        .args(["-g", "127.0.0.1:0"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufReader, Read};
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let addr = common::gdb_address(&mut err, &mut String::new()).expect("replay ended before gdb");
    let g = Command::new("gdb-multiarch")
        .args(["-batch", "-nx", "-ex", "set confirm off", "-ex"])
        .arg(format!("target remote {addr}"))
        .arg(program)
        .args(["-ex", "continue", "-ex", "bt", "-ex", "continue"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&g.stdout).into_owned() + &String::from_utf8_lossy(&g.stderr);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    (out, status.code(), rest)
}

#[test]
fn a_replayed_lane_runs_under_gdb() {
    let Some(targets) = fuzz_targets("replay gdb") else {
        return;
    };
    if common::find_program(std::ffi::OsStr::new("gdb-multiarch")).is_none() {
        common::unavailable("replay gdb", "gdb-multiarch is not installed");
        return;
    }
    let magic = targets.join("magic");
    let dir = inputs("gdb");
    batch8(&dir, magic.to_str().unwrap());
    let (out, status, rest) = replay_under_gdb(&dir, &["r.jsonl", "--lane", "5"], &magic);
    assert!(out.contains("Program received signal SIGSEGV"), "{out}");
    assert!(out.contains("in main ("), "{out}");
    assert_eq!(status, Some(0), "{rest}");
    assert!(rest.contains("lane 5: status 139"), "{rest}");
    assert!(rest.contains("the same as in the batch"), "{rest}");
}

#[test]
fn records_that_do_not_fit_get_clear_messages() {
    let Some(targets) = fuzz_targets("replay errors") else {
        return;
    };
    let dir = inputs("errors");
    let prog = dir.join("prog");
    std::fs::copy(targets.join("magic"), &prog).unwrap();
    batch8(&dir, "./prog");
    let replay = |lane: &str| {
        let o = armada(&dir, &["replay", "r.jsonl", "--lane", lane]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = replay("8");
    assert_eq!(code, Some(125));
    assert!(err.contains("no line for lane 8"), "{err}");
    // another program under the same name
    std::fs::copy(targets.join("length"), &prog).unwrap();
    let (code, err) = replay("0");
    assert_eq!(code, Some(125));
    assert!(err.contains("is not the file the batch ran"), "{err}");
    // the results without their record
    std::fs::remove_file(dir.join("r.jsonl.batch.json")).unwrap();
    let (code, err) = replay("0");
    assert_eq!(code, Some(125));
    assert!(err.contains("r.jsonl.batch.json"), "{err}");
}

#[test]
fn inputs_a_fuzzing_run_saved_replay_to_their_bucket() {
    let Some(targets) = fuzz_targets("replay fuzz") else {
        return;
    };
    let magic = targets.join("magic");
    let magic = magic.to_str().unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("replay")
        .join("fuzz");
    let _ = std::fs::remove_dir_all(&dir);
    for seeds in ["seeds", "c"] {
        std::fs::create_dir_all(dir.join(seeds)).unwrap();
        // a seed that crashes (the magic value) and one that does not
        std::fs::write(dir.join(seeds).join("crash"), b"ARM64FUZZ").unwrap();
        std::fs::write(dir.join(seeds).join("ok"), b"ARM64FUN!").unwrap();
    }
    let replay = |file: &Path| {
        // from another directory: the record says where the run was
        let o = armada(Path::new("/"), &["replay", file.to_str().unwrap()]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // `armada fuzz OPTS` of magic in `dir`, 300 executions: its status and stderr
    let fuzz = |opts: &[&str]| {
        let mut a = vec!["fuzz"];
        a.extend(opts);
        a.extend(["--max-execs", "300", "--no-progress", magic]);
        let o = armada(&dir, &a);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // the saved crash `file` replays to its bucket
    let same_bucket = |file: &Path| {
        let (code, err) = replay(file);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains("the one the fuzzer filed it under"), "{err}");
        err
    };
    // AFL++'s layout
    let (code, err) = fuzz(&["-o", "out", "-i", "seeds"]);
    assert_eq!(code, Some(1), "a crash was found: {err}");
    let inst = dir.join("out").join("default");
    assert!(inst.join("armada_fuzz.json").exists(), "{err}");
    let crashes = common::files_named(&inst.join("crashes"), "id:");
    assert_eq!(crashes.len(), 1, "{err}");
    let err = same_bucket(&crashes[0]);
    assert!(err.contains("signal 11 at pc"), "{err}");
    let queue = common::files_named(&inst.join("queue"), "id:");
    assert!(!queue.is_empty());
    let (code, err) = replay(&queue[0]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("exit status"), "{err}");
    // a crash the CUDA kernel's simulator found replays on the CPU engine to the same bucket
    let (code, gpu_err) = fuzz(&[
        "--backend",
        "cuda",
        "--lanes",
        "64",
        "-o",
        "gpu",
        "-i",
        "seeds",
    ]);
    if code != Some(1) && gpu_err.contains("CUDA") {
        common::loud(&format!(
            "### replay fuzz: no CUDA simulator in this build: {gpu_err}"
        ));
    } else {
        assert_eq!(code, Some(1), "{gpu_err}");
        let found = common::files_named(&dir.join("gpu").join("default").join("crashes"), "id:");
        assert_eq!(found.len(), 1, "{gpu_err}");
        same_bucket(&found[0]);
    }
    // `--crashes`' own names
    let (code, err) = fuzz(&["--corpus", "c", "--crashes", "x"]);
    assert_eq!(code, Some(1), "{err}");
    let found = common::files_named(&dir.join("x"), "crash-");
    assert_eq!(found.len(), 1);
    same_bucket(&found[0]);
    // the same input under a name that says another bucket
    let other = dir.join("x").join("crash-sig11-pc0-stack00000000");
    std::fs::copy(&found[0], &other).unwrap();
    let (code, err) = replay(&other);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the fuzzer filed it under bucket sig11-pc0-stack00000000"),
        "{err}"
    );
    // a file no run saved
    let (code, err) = replay(&dir.join("seeds").join("crash"));
    assert_eq!(code, Some(125), "{err}");
    assert!(err.contains("armada_fuzz.json"), "{err}");
    // under gdb: the crash stops it where the fuzzer saw it
    if common::find_program(std::ffi::OsStr::new("gdb-multiarch")).is_none() {
        common::unavailable("replay fuzz gdb", "gdb-multiarch is not installed");
        return;
    }
    let crash = crashes[0].to_str().unwrap();
    let (out, status, rest) = replay_under_gdb(Path::new("/"), &[crash], Path::new(magic));
    assert!(out.contains("Program received signal SIGSEGV"), "{out}");
    assert_eq!(status, Some(0), "{rest}");
    assert!(rest.contains("the one the fuzzer filed it under"), "{rest}");
}
