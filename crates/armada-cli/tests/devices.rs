//! `armada batch --devices`: one batch spread over several GPUs. CI has no GPU, so the CUDA
//! kernel's simulator stands in for several devices (`ARMADA_CUDA_SIM_DEVICES`), and fails
//! on cue where a test needs a device to fail (`ARMADA_CUDA_SIM_FAIL`). Every case compares
//! the JSON lines of the whole batch with the same batch on one device, and `--check`
//! compares them with the CPU engine too:
//! - lanes that end in different ways (exit, the instruction limit, a signal), with
//!   coverage, over 2 and 3 devices in either order;
//! - a snapshot shared by every device's lanes;
//! - a device that fails in the middle of its share (its lanes move to the others), every
//!   device failing at once (the batch fails with the device's error), and the last device
//!   failing after some lanes ended (the rest end unrun, status 125, with the reason);
//! - two and three batches side by side on one device (`ARMADA_GPU_SHARDS`);
//! - fewer lanes at once than the batch has, each slot taking the next lane as one ends
//!   (`ARMADA_GPU_SLOTS`): forking dash lanes, Python lanes from a snapshot, threads, and
//!   lanes that would not fit the device's memory at once;
//! - fewer lanes than devices; `--devices` naming a device the host lacks, a list that does
//!   not parse, and `--devices` on the CPU engine.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

struct Out {
    status: i32,
    jsonl: String,
    stderr: String,
}

/// `armada batch ARGS` on the simulator with `devices` simulated devices and `env`, its
/// JSON lines written to a scratch file. The guest's environment leaves the simulator's
/// variables out, so every run's lanes see the same environment.
fn batch(devices: usize, env: &[(&str, &str)], args: &[&str]) -> Out {
    let dir = scratch();
    let out = dir.join(format!("{}.jsonl", unique()));
    let mut cmd = Command::new(common::armada_bin());
    cmd.arg("batch")
        .args(["--backend", "cuda", "--no-progress"])
        .args(["-U", "ARMADA_CUDA_SIM", "-U", "ARMADA_CUDA_SIM_DEVICES"])
        .args(["-U", "ARMADA_CUDA_SIM_FAIL", "-U", "ARMADA_CUDA_SLICE"])
        .args(["-U", "ARMADA_GPU_SHARDS", "-U", "ARMADA_GPU_SLOTS"])
        .args(["-U", "ARMADA_CUDA_SIM_FRAME_MIB", "-U", "ARMADA_GPU_PARK"])
        .arg("--out")
        .arg(&out)
        .args(args)
        .env("ARMADA_CUDA_SIM", "1")
        .env("ARMADA_CUDA_SIM_DEVICES", devices.to_string())
        .env_remove("ARMADA_CUDA_SIM_FAIL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = common::run_process(cmd, b"", Duration::from_secs(600)).expect("armada runs");
    assert!(!o.timed_out, "armada batch {args:?} timed out");
    let jsonl = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    Out {
        status: o.status,
        jsonl,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn scratch() -> PathBuf {
    let d = common::workspace_root()
        .join("target/test-devices")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn unique() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The guest programs and whether this build has the simulator (else the test says why and
/// passes only outside CI).
fn setup(test: &str) -> Option<PathBuf> {
    if !armada_cuda::HAS_SIM {
        assert!(
            !common::in_ci(),
            "the CI build has no CUDA kernel simulator"
        );
        common::unavailable(test, "this build has no CUDA kernel simulator");
        return None;
    }
    match common::guest_programs_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(!common::in_ci(), "{e}");
            common::unavailable(test, &e);
            None
        }
    }
}

fn prog(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// The `"status":N` of each JSON line.
fn statuses(jsonl: &str) -> Vec<i64> {
    jsonl
        .lines()
        .map(|l| {
            let at = l.find("\"status\":").expect("a status") + 9;
            let end = l[at..].find(',').unwrap() + at;
            l[at..end].parse().unwrap()
        })
        .collect()
}

#[test]
fn lanes_over_devices_match_one_device() {
    let Some(g) = setup("lanes_over_devices_match_one_device") else {
        return;
    };
    let crc = prog(&g, "lanecrc");
    let cov = scratch().join("cov");
    let cov = cov.to_string_lossy();
    // lane i runs i rounds: the later lanes hit the limit, the others exit
    let args = [
        "--lanes",
        "40",
        "--max-instructions",
        "700000",
        "--coverage",
        &cov,
        &crc,
        "{lane}",
        "{lane}",
    ];
    let one = batch(1, &[], &args);
    assert_eq!(one.status, 1, "{}", one.stderr);
    let st = statuses(&one.jsonl);
    assert_eq!(st.len(), 40);
    assert!(st.contains(&0) && st.contains(&124), "{st:?}");
    for (devices, choice, shares) in [
        (2, "all", ["device 0 (", "20 lanes (50.0%)"]),
        (3, "2,0", ["device 2 (", "20 lanes (50.0%)"]),
        (3, "all", ["device 1 (", "13 lanes (32.5%)"]),
    ] {
        let mut a = vec!["--devices", choice, "--check"];
        a.extend_from_slice(&args);
        let many = batch(devices, &[], &a);
        assert_eq!(many.status, 1, "--devices {choice}: {}", many.stderr);
        assert_eq!(many.jsonl, one.jsonl, "--devices {choice} of {devices}");
        assert!(
            many.stderr
                .contains("40 of 40 lanes identical to the CPU engine"),
            "{}",
            many.stderr
        );
        for s in shares {
            assert!(
                many.stderr.contains(s),
                "--devices {choice}: no {s:?} in\n{}",
                many.stderr
            );
        }
    }
    // every lane killed by a signal, over two devices
    let segv = prog(&g, "fault_segv");
    let one = batch(1, &[], &["--lanes", "5", &segv]);
    let two = batch(2, &[], &["--lanes", "5", "--devices", "all", &segv]);
    assert_eq!(statuses(&two.jsonl), vec![139; 5], "{}", two.stderr);
    assert_eq!(two.jsonl, one.jsonl);
}

#[test]
fn snapshot_and_fewer_lanes_than_devices() {
    let Some(g) = setup("snapshot_and_fewer_lanes_than_devices") else {
        return;
    };
    let crc = prog(&g, "lanecrc");
    let args = ["--lanes", "6", "--snapshot-at", "main", &crc, "9", "2"];
    let one = batch(1, &[], &args);
    let mut a = vec!["--devices", "all", "--check"];
    a.extend_from_slice(&args);
    let many = batch(4, &[], &a);
    assert_eq!(many.status, 0, "{}", many.stderr);
    assert_eq!(many.jsonl, one.jsonl);
    // one lane, three devices: the others get nothing and say so
    let one = batch(1, &[], &["--lanes", "1", &crc, "{lane}", "2"]);
    let many = batch(
        3,
        &[],
        &["--lanes", "1", "--devices", "all", &crc, "{lane}", "2"],
    );
    assert_eq!(many.status, 0, "{}", many.stderr);
    assert_eq!(many.jsonl, one.jsonl);
    assert!(many.stderr.contains("device 2 ("), "{}", many.stderr);
    assert!(many.stderr.contains("0 lanes (0.0%)"), "{}", many.stderr);
}

#[test]
fn a_failing_device_hands_its_lanes_over() {
    let Some(g) = setup("a_failing_device_hands_its_lanes_over") else {
        return;
    };
    let crc = prog(&g, "lanecrc");
    // launches end by count, so a device's launches are the same in every run
    let slice = [("ARMADA_CUDA_SLICE", "20000")];
    let args = ["--lanes", "30", "--devices", "all", &crc, "{lane}", "3"];
    let one = batch(
        1,
        &slice,
        &args[..2]
            .iter()
            .chain(&args[4..])
            .copied()
            .collect::<Vec<_>>(),
    );
    assert_eq!(one.status, 0, "{}", one.stderr);
    // device 1 fails at its third launch: its lanes run again on devices 0 and 2
    let failing = batch(3, &[slice[0], ("ARMADA_CUDA_SIM_FAIL", "1@2")], &args);
    assert_eq!(failing.status, 0, "{}", failing.stderr);
    assert_eq!(failing.jsonl, one.jsonl);
    assert!(
        failing
            .stderr
            .contains("simulated failure of device 1 at launch 3"),
        "{}",
        failing.stderr
    );
    assert!(failing.stderr.contains("30 exited 0"), "{}", failing.stderr);
    // every device fails at once: nothing ran, so the batch fails with the error
    let all = batch(2, &[slice[0], ("ARMADA_CUDA_SIM_FAIL", "0,1")], &args);
    assert_eq!(all.status, 125, "{}", all.stderr);
    assert!(
        all.stderr.contains("simulated failure of device"),
        "{}",
        all.stderr
    );
    assert!(all.jsonl.is_empty());

    // device 1 fails at once and device 0 after its own share: device 1's lanes end unrun
    let own = batch(1, &slice, &["--lanes", "1", &crc, "{lane}", "3"]);
    let launches: u64 = own
        .stderr
        .split("launches: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no launch count in\n{}", own.stderr));
    let fail = format!("1@0,0@{launches}");
    let lost = batch(
        2,
        &[slice[0], ("ARMADA_CUDA_SIM_FAIL", &fail)],
        &["--lanes", "2", "--devices", "all", &crc, "{lane}", "3"],
    );
    assert_eq!(lost.status, 125, "{}", lost.stderr);
    assert_eq!(statuses(&lost.jsonl), vec![0, 125], "{}", lost.jsonl);
    assert_eq!(lost.jsonl.lines().next(), one.jsonl.lines().next());
    assert!(
        lost.jsonl
            .contains("not run: every device had failed by its turn"),
        "{}",
        lost.jsonl
    );
}

#[test]
fn bad_device_choices_are_refused() {
    let Some(g) = setup("bad_device_choices_are_refused") else {
        return;
    };
    let crc = prog(&g, "lanecrc");
    let o = batch(1, &[], &["--devices", "7", "--lanes", "2", &crc]);
    assert_ne!(o.status, 0);
    assert!(
        o.stderr
            .contains("--devices 7: there is no CUDA device 7; this host has 1 device (0)"),
        "{}",
        o.stderr
    );
    let o = batch(2, &[], &["--devices", "0,0", "--lanes", "2", &crc]);
    assert_eq!(o.status, 2, "{}", o.stderr);
    assert!(o.stderr.contains("device 0 is named twice"), "{}", o.stderr);
    let mut cmd = Command::new(common::armada_bin());
    cmd.args(["batch", "--devices", "all", "--lanes", "2", &crc]);
    let o = common::run_process(cmd, b"", Duration::from_secs(60)).unwrap();
    assert_ne!(o.status, 0);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--devices chooses GPUs"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Big batches on one CUDA device run as two batches side by side by default
/// (`armada_gpu::shards_on_one_device`); the simulator has one queue, so it shards only when
/// `ARMADA_GPU_SHARDS` asks. The lanes' results are those of one batch, and the summary names
/// each shard.
#[test]
fn shards_on_one_device_match_one_batch() {
    let Some(g) = setup("shards_on_one_device_match_one_batch") else {
        return;
    };
    let crc = prog(&g, "lanecrc");
    let args = [
        "--lanes",
        "24",
        "--max-instructions",
        "500000",
        &crc,
        "{lane}",
        "{lane}",
    ];
    let one = batch(1, &[], &args);
    assert_eq!(one.status, 1, "{}", one.stderr);
    assert!(!one.stderr.contains("shard"), "{}", one.stderr);
    let mut a = vec!["--check"];
    a.extend_from_slice(&args);
    let three = batch(1, &[("ARMADA_GPU_SHARDS", "3")], &a);
    assert_eq!(three.status, 1, "{}", three.stderr);
    assert_eq!(three.jsonl, one.jsonl);
    for s in [
        "24 of 24 lanes identical to the CPU engine",
        "shards: 3 on one device",
        "shard 3 of 3): 8 lanes (33.3%)",
    ] {
        assert!(three.stderr.contains(s), "no {s:?} in\n{}", three.stderr);
    }
    // a threaded program too
    let threads = prog(&g, "threads_compute");
    let one = batch(1, &[], &["--lanes", "4", &threads]);
    let two = batch(
        1,
        &[("ARMADA_GPU_SHARDS", "2")],
        &["--lanes", "4", &threads],
    );
    assert_eq!(two.status, one.status, "{}", two.stderr);
    assert_eq!(two.jsonl, one.jsonl);
    // Batches side by side on one device each hold at most their share of its memory (so
    // the first to find a size that fits does not take most of it); a batch whose one
    // lane needs more runs again with what the device has. Two shards of one lane each on
    // 256 MiB of frames: lane 1 writes 150 MiB, more than its shard's half.
    let touch = prog(&g, "pagetouch");
    let two = batch(
        1,
        &[
            ("ARMADA_GPU_SHARDS", "2"),
            ("ARMADA_CUDA_SIM_FRAME_MIB", "512"),
        ],
        &["--check", "--lanes", "2", &touch, "{lane}50", "1"],
    );
    assert_eq!(two.status, 0, "{}", two.stderr);
    for s in [
        "2 of 2 lanes identical to the CPU engine",
        "share of the device's memory (230 MiB, 1/2",
        "running the 1 lanes left again with what the device has",
    ] {
        assert!(two.stderr.contains(s), "no {s:?} in\n{}", two.stderr);
    }
}

/// A batch holding fewer lanes at once than it has (`ARMADA_GPU_SLOTS`, `Batch::feed`): as a
/// lane ends, the next one is set up in its slot while the others run on. Every lane's
/// result is the one it has in a batch of all the lanes at once (and the CPU engine's):
/// forking dash lanes, threaded lanes, Python lanes from a snapshot each with its own stdin.
/// Lanes too large for all to fit the device's memory at once run in the slots that fit:
/// no slot is given a lane while the running lanes might then outgrow the memory, and a
/// batch in slots that runs out all the same keeps the results of the lanes that ended.
#[test]
fn lanes_fed_into_slots_match_one_batch() {
    let Some(g) = setup("lanes_fed_into_slots_match_one_batch") else {
        return;
    };
    let slots = |n: &'static str| [("ARMADA_GPU_SLOTS", n)];
    let compare = |args: &[&str], n: &'static str, lanes: usize| {
        let one = batch(1, &[], args);
        let mut a = vec!["--check"];
        a.extend_from_slice(args);
        let fed = batch(1, &slots(n), &a);
        assert_eq!(fed.status, one.status, "{}", fed.stderr);
        assert_eq!(fed.jsonl, one.jsonl, "{}", fed.stderr);
        for s in [
            format!("{lanes} of {lanes} lanes identical to the CPU engine"),
            format!("slots: {n} lanes at once of {lanes}"),
        ] {
            assert!(fed.stderr.contains(&s), "no {s:?} in\n{}", fed.stderr);
        }
    };
    compare(
        &[
            "--lanes",
            "9",
            "--max-instructions",
            "400000",
            &prog(&g, "lanecrc"),
            "{lane}",
            "{lane}",
        ],
        "2",
        9,
    );
    compare(&["--lanes", "5", &prog(&g, "threads_compute")], "2", 5);
    match common::debian_sysroot(&["bin/dash", "usr/bin/python3"]) {
        Ok(root) => {
            let root = root.to_string_lossy().into_owned();
            let dash = format!("{root}/bin/dash");
            let script = "x=$(echo $1); echo $((x * 3)) | cat; exit $(($1 % 4))";
            compare(
                &[
                    "--lanes", "7", "-L", &root, &dash, "-c", script, "sh", "{lane}",
                ],
                "3",
                7,
            );
            let dir = scratch().join(format!("py-{}", unique()));
            std::fs::create_dir_all(&dir).unwrap();
            for i in 0..6 {
                let text = format!(
                    "print(sum(range({})))\nraise SystemExit({})\n",
                    40 * i + 1,
                    i % 3
                );
                std::fs::write(dir.join(i.to_string()), text).unwrap();
            }
            let dir_s = dir.to_string_lossy().into_owned();
            let py = format!("{root}/usr/bin/python3");
            let py_args = |lanes: &'static str| -> Vec<String> {
                let snap = ["--lanes", lanes, "--snapshot-at", "input", "--stdin-dir"];
                let mut a: Vec<String> = snap.iter().map(|s| s.to_string()).collect();
                a.extend([dir_s.clone(), "-L".into(), root.clone(), py.clone()]);
                a
            };
            let six = py_args("6");
            let args: Vec<&str> = six.iter().map(String::as_str).collect();
            compare(&args, "2", 6);
            // The frame pool gives back what the lanes no longer take: 64 lanes from the
            // snapshot take hundreds of frames each in their first launch, and few after.
            for i in 6..64 {
                std::fs::write(dir.join(i.to_string()), format!("print({i})\n")).unwrap();
            }
            let many = py_args("64");
            let args: Vec<&str> = many.iter().map(String::as_str).collect();
            let pool = batch(1, &[], &args);
            let sizes: Vec<u64> = pool
                .stderr
                .split("was filled to ")
                .nth(1)
                .map(|r| {
                    r.split(|c: char| !c.is_ascii_digit())
                        .filter_map(|n| n.parse().ok())
                        .take(2)
                        .collect()
                })
                .unwrap_or_default();
            assert!(
                sizes.len() == 2 && sizes[1] < sizes[0],
                "the pool kept its largest size ({sizes:?}):\n{}",
                pool.stderr
            );
            // Five small scripts in the 5 slots, then five that each write 30 MiB, admitted
            // as the small ones end (their mean is small) and too many at once for 128 MiB
            // of frames (their loop first, so that all five are in before any grows,
            // whichever rounds the small ones end in). A lane the device then refuses a
            // frame leaves it, its state kept on the host, and comes back as others end; with
            // that off (ARMADA_GPU_PARK=0), the batch fails, keeps the results of the lanes
            // that had ended and runs only the others again.
            for i in 0..10 {
                let text = if i >= 5 {
                    format!(
                        "for i in range(200000):\n    pass\nx = b'a' * (30 << 20)\nprint({i}, len(x))\n"
                    )
                } else {
                    format!("print({i})\n")
                };
                std::fs::write(dir.join(i.to_string()), text).unwrap();
            }
            let ten = py_args("10");
            let args: Vec<&str> = ten.iter().map(String::as_str).collect();
            let roomy = batch(1, &[], &args);
            let mut a = vec!["--check"];
            a.extend_from_slice(&args);
            let tight = |park| {
                [
                    ("ARMADA_GPU_SLOTS", "5"),
                    ("ARMADA_CUDA_SIM_FRAME_MIB", "256"),
                    ("ARMADA_GPU_PARK", park),
                ]
            };
            let parked = batch(1, &tight("1"), &a);
            assert_eq!((parked.status, roomy.status), (0, 0), "{}", parked.stderr);
            assert_eq!(parked.jsonl, roomy.jsonl, "{}", parked.stderr);
            assert!(
                parked
                    .stderr
                    .contains("10 of 10 lanes identical to the CPU engine")
                    && !parked.stderr.contains("ran out of memory"),
                "{}",
                parked.stderr
            );
            let left = parked
                .stderr
                .split("lanes off the device: ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok());
            assert!(left.is_some_and(|n| n >= 1), "{}", parked.stderr);
            let fed = batch(1, &tight("0"), &a);
            assert_eq!(fed.status, 0, "{}", fed.stderr);
            assert_eq!(fed.jsonl, roomy.jsonl, "{}", fed.stderr);
            for s in [
                "10 of 10 lanes identical to the CPU engine",
                "ran out of memory with 5 lanes at once",
                "running the 5 lanes left",
                "lanes off the device: none",
            ] {
                assert!(fed.stderr.contains(s), "no {s:?} in\n{}", fed.stderr);
            }
            let kept = fed
                .stderr
                .split(" lanes' results kept")
                .next()
                .and_then(|h| h.rsplit('(').next())
                .and_then(|n| n.parse::<usize>().ok());
            assert!(kept.is_some_and(|k| k >= 1), "{}", fed.stderr);
            let _ = std::fs::remove_dir_all(&dir);
        }
        Err(e) => {
            assert!(!common::in_ci(), "{e}");
            eprintln!("dash and python3 lanes skipped: {e}");
        }
    }
    // 16 lanes of 8 MiB each on a device with 64 MiB of frames, in 7 slots: as many as fit
    // with the frame pool counted at the size it is filled to (counted at its largest, the
    // admission used to keep some of them empty), and the device never runs out of memory
    let touch = prog(&g, "pagetouch");
    let args = ["--check", "--lanes", "16", &touch, "8", "1"];
    let small = [
        ("ARMADA_GPU_SLOTS", "7"),
        ("ARMADA_CUDA_SIM_FRAME_MIB", "128"),
    ];
    let fed = batch(1, &small, &args);
    assert_eq!(fed.status, 0, "{}", fed.stderr);
    assert!(!fed.stderr.contains("ran out of memory"), "{}", fed.stderr);
    assert!(
        fed.stderr
            .contains("16 of 16 lanes identical to the CPU engine"),
        "{}",
        fed.stderr
    );
    assert!(
        fed.stderr.contains("slots: 7 lanes at once of 16"),
        "{}",
        fed.stderr
    );
}
