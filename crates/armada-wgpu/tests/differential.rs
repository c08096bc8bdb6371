//! The wgpu engine against the CPU engine, lane for lane, on whatever adapter wgpu finds
//! (Mesa's lavapipe in CI, the GPU on a GPU machine). Without an adapter the tests skip with
//! a message, unless ARMADA_TEST_WGPU=require (scripts/test sets it after installing lavapipe),
//! which makes a missing adapter a failure.

use armada_gpu::check::{same_as_cpu_run, spec};
use armada_gpu::Engine;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One engine for all tests of this file (opening compiles the shader).
fn engine() -> Option<&'static Engine> {
    static ENGINE: OnceLock<Option<Engine>> = OnceLock::new();
    ENGINE
        .get_or_init(
            || match armada_wgpu::open(&armada_wgpu::Options::from_env()) {
                Ok(e) => {
                    eprintln!("wgpu engine on {}", e.describe());
                    Some(e)
                }
                Err(e) => {
                    if std::env::var("ARMADA_TEST_WGPU").as_deref() == Ok("require") {
                        panic!("ARMADA_TEST_WGPU=require, but: {e}");
                    }
                    eprintln!("skipped: {e}");
                    None
                }
            },
        )
        .as_ref()
}

/// Runs `s` on the shared engine, one batch at a time: a batch spreads its lanes over
/// lavapipe's threads, and batches side by side would share the one buffer that holds their
/// records and tables (the Go programs' lanes fill most of it).
fn run_gpu(
    engine: &Engine,
    s: &armada_core::batch::BatchSpec,
) -> Result<armada_core::batch::BatchOutcome, String> {
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    armada_gpu::run_batch(engine, s, &|_| {}).map_err(|e| format!("GPU engine: {e}"))
}

fn check(engine: &Engine, s: &armada_core::batch::BatchSpec, what: &str) {
    if let Err(e) = run_gpu(engine, s).and_then(|gpu| same_as_cpu_run(&gpu, s)) {
        panic!("{what}: {e}");
    }
}

#[test]
fn prebuilt_hello_matches_cpu() {
    let Some(engine) = engine() else { return };
    let hello = repo().join("tests/guest/prebuilt/hello");
    check(engine, &spec(&hello, 3, &[], |_| Vec::new()), "hello");
}

/// The longest program (in instructions, as the CPU engine counts them) the tests run:
/// lavapipe interprets the shader at about 0.1 M guest instructions per second, so CI runs the
/// share of the guest programs under 700 k; ARMADA_TEST_WGPU_MAX=0 runs them all (GPU machines).
fn max_instructions() -> u64 {
    match std::env::var("ARMADA_TEST_WGPU_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(0) => u64::MAX,
        Some(n) => n,
        None => 700_000,
    }
}

/// Whether `s`'s first lane ends within `max` instructions on the CPU engine.
fn short_enough(s: &armada_core::batch::BatchSpec, max: u64) -> bool {
    let mut probe = s.clone();
    probe.max_instructions = Some(max.saturating_add(1));
    let cpu = armada_core::batch::run_cpu(&probe, &|_| {}).unwrap();
    cpu.lanes[0].instructions <= max
}

/// Runs `progs` as one batch, lane i running program i (lavapipe spreads a batch's lanes over
/// its threads, where a batch of one lane keeps one thread busy), against the CPU engine; a
/// lane that differs is named by its program.
fn check_together(engine: &Engine, progs: &[(PathBuf, Vec<&str>, &str)], stdin: &[u8]) {
    let list: Vec<(&Path, &[&str])> = progs
        .iter()
        .map(|(p, a, _)| (p.as_path(), a.as_slice()))
        .collect();
    let s = armada_gpu::check::mixed_spec(&list, list.len(), |_| stdin.to_vec());
    let t = std::time::Instant::now();
    if let Err(e) = run_gpu(engine, &s).and_then(|gpu| same_as_cpu_run(&gpu, &s)) {
        // "lane K: ...": name the lane's program
        let lane = e
            .strip_prefix("lane ")
            .and_then(|r| r.split(':').next())
            .and_then(|k| k.parse::<usize>().ok());
        match lane.and_then(|k| progs.get(k)) {
            Some((_, _, name)) => panic!("{name}: {e}"),
            None => panic!("{e}"),
        }
    }
    eprintln!(
        "{} programs in one batch, each the same as on the CPU engine ({:.1} s)",
        progs.len(),
        t.elapsed().as_secs_f64()
    );
}

/// Every guest program tests/guest/build.sh built, one lane each (up to `max_instructions`),
/// all in one batch.
#[test]
fn guest_programs_match_cpu() {
    let Some(engine) = engine() else { return };
    let dir = repo().join("target/guest");
    let Ok(list) = std::fs::read_to_string(dir.join("programs.list")) else {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    };
    let max = max_instructions();
    let (mut ran, mut skipped) = (Vec::new(), Vec::new());
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let s = spec(&dir.join(name), 1, &[], |_| b"3 4 5\n".to_vec());
        if !short_enough(&s, max) {
            skipped.push(name);
            continue;
        }
        ran.push((dir.join(name), Vec::new(), name));
    }
    check_together(engine, &ran, b"3 4 5\n");
    let names: Vec<&str> = ran.iter().map(|r| r.2).collect();
    eprintln!("ran {} programs: {}", names.len(), names.join(" "));
    eprintln!(
        "longer than {max} instructions, not run here: {}",
        skipped.join(" ")
    );
    assert!(ran.len() >= 15, "only {} guest programs ran", ran.len());
}

/// Guest threads (pthreads, C++, Go): each lane's tasks switch at the CPU engine's points,
/// so the results are the CPU engine's. The programs of the threads suite up to
/// `max_instructions`, and one with a lane argument for its thread count.
#[test]
fn guest_threads_match_cpu() {
    let Some(engine) = engine() else { return };
    let dir = repo().join("target/guest-threads");
    let Ok(list) = std::fs::read_to_string(dir.join("programs.list")) else {
        eprintln!(
            "skipped: no thread programs (tests/guest/build-threads.sh target/guest-threads)"
        );
        return;
    };
    let max = max_instructions();
    let (mut ran, mut skipped) = (Vec::new(), Vec::new());
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let args: &[&str] = match name {
            "cancel" => &["sleep"],
            "thread_signals" => &["sigwait"],
            "thread_exit" => &["abort"],
            _ => &[],
        };
        let s = spec(&dir.join(name), 1, args, |_| Vec::new());
        if !short_enough(&s, max) {
            skipped.push(name);
            continue;
        }
        ran.push((dir.join(name), args.to_vec(), name));
    }
    // (the Go programs' lanes hold more records and tables than lavapipe's one buffer for
    // them holds beside the others: a batch of their own)
    let (go, c): (Vec<_>, Vec<_>) = ran.iter().cloned().partition(|r| r.2.starts_with("go_"));
    check_together(engine, &c, b"");
    check_together(engine, &go, b"");
    let names: Vec<&str> = ran.iter().map(|r| r.2).collect();
    eprintln!("ran {} thread programs: {}", names.len(), names.join(" "));
    eprintln!(
        "longer than {max} instructions, not run here: {}",
        skipped.join(" ")
    );
    assert!(ran.len() >= 6, "only {} thread programs ran", ran.len());
    let compute = repo().join("target/guest/threads_compute");
    if compute.exists() {
        // lane i starts i threads (lane 0: a usage error), a 4,096-byte CRC round each
        let s = spec(&compute, 3, &["{lane}", "1"], |_| Vec::new());
        check(engine, &s, "threads_compute {lane} 1");
    }
}

/// A dynamically linked program (ld.so, then libc mapped and run in the shader), each lane
/// with its own argument, against the CPU engine.
#[test]
fn dynamic_program_matches_cpu() {
    let Some(engine) = engine() else { return };
    let p = repo().join("target/guest-dynamic/argv_env");
    let cross = Path::new("/usr/aarch64-linux-gnu");
    if !p.exists() || !cross.join("lib/ld-linux-aarch64.so.1").exists() {
        eprintln!(
            "skipped: no dynamic guest programs or no cross libc (tests/guest/build-dynamic.sh)"
        );
        return;
    }
    let mut s = spec(&p, 2, &["{lane}"], |_| Vec::new());
    s.config.sysroot = Some(cross.to_path_buf());
    check(engine, &s, "argv_env");
}

/// Processes on wgpu: the programs of the processes suite that fit lavapipe's speed (fork,
/// vfork, exec, wait, signals between processes), each process on its own address space,
/// a fork's pages shared with its parent's copy on write.
#[test]
fn guest_processes_match_cpu() {
    let Some(engine) = engine() else { return };
    let dir = repo().join("target/guest-processes");
    let Ok(list) = std::fs::read_to_string(dir.join("programs.list")) else {
        eprintln!("skipped: no process guest programs (tests/guest/build-processes.sh target/guest-processes)");
        return;
    };
    let max = max_instructions();
    let (mut ran, mut skipped, mut together) = (Vec::new(), Vec::new(), Vec::new());
    // One program per feature (the whole suite runs on the CUDA simulator): a lavapipe
    // batch costs about a second to set up, whatever its length.
    let features = [
        "fork_big",     // copy-on-write fork of written memory
        "forkcap",      // fork failing at --max-processes
        "vfork_exec",   // vfork, the child on its parent's memory, exec
        "script_exec",  // exec of a #! script
        "exec_errors",  // exec failures
        "wait_status",  // wait statuses: exit, signals
        "waitid",       // waitid
        "sigchld",      // SIGCHLD and its handler
        "sigpipe",      // a pipe with no reader
        "kill_pgrp",    // process groups and kill(0)
        "socketpair",   // AF_UNIX pairs and SCM_RIGHTS across fork
        "fork_threads", // fork of a threaded process
        "zombies",      // zombies and reaping
    ];
    for name in list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| features.contains(n))
    {
        // (fork_big: 1 MiB forked twice; one lane a program, so files they write are not
        // shared between lanes)
        let args: &[&str] = if name == "fork_big" { &["1", "2"] } else { &[] };
        let mut s = spec(&dir.join(name), 1, args, |_| Vec::new());
        if name == "forkcap" {
            s.config.max_processes = Some(8);
        }
        if !short_enough(&s, max) {
            skipped.push(name);
            continue;
        }
        if name == "forkcap" {
            // (its cap is the batch's: a batch of its own)
            check(engine, &s, name);
            ran.push((dir.join(name), Vec::new(), name));
        } else {
            together.push((dir.join(name), args.to_vec(), name));
        }
    }
    check_together(engine, &together, b"");
    ran.extend(together);
    let ran: Vec<&str> = ran.iter().map(|r| r.2).collect();
    eprintln!("ran {} process programs: {}", ran.len(), ran.join(" "));
    eprintln!("not run here: {}", skipped.join(" "));
    assert_eq!(
        ran.len(),
        features.len(),
        "process programs missing or too long"
    );
}

/// One batch of several programs on lavapipe: static, dynamic, threaded and forking lanes
/// beside lanes that fail alone (past --max-processes, deadlocked, a library missing from
/// the sysroot, over --lane-memory), each lane as on the CPU engine.
#[test]
fn a_batch_of_several_programs_matches_cpu() {
    let Some(engine) = engine() else { return };
    // (dash's script is too long for lavapipe: the simulator runs it)
    let Some((s, lanes)) = armada_gpu::check::mixed_suite(&repo(), true, 1) else {
        eprintln!("skipped: guest programs or the sysroot missing (scripts/test builds them)");
        return;
    };
    let out = run_gpu(engine, &s).unwrap();
    if let Err(e) = armada_gpu::check::mixed_ends_as_expected(&out, &lanes) {
        panic!("{e}");
    }
    if let Err(e) = armada_gpu::check::same_as_cpu_run(&out, &s) {
        panic!("mixed batch: {e}");
    }
}

/// Lanes with different arguments and inputs, a per-lane memory cap, an instruction limit.
#[test]
fn lanes_differ_and_limits_hold() {
    let Some(engine) = engine() else { return };
    let dir = repo().join("target/guest");
    if !dir.join("stdin_sum").exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    }
    let stdin = |i: usize| format!("{} {} {}\n", i, i * 3, 7).into_bytes();
    // small counts: lavapipe runs about 0.1 M guest instructions per second
    let stdin_sum = spec(&dir.join("stdin_sum"), 8, &[], stdin);
    check(engine, &stdin_sum, "stdin_sum");
    let crc = spec(&dir.join("lanecrc"), 4, &["{lane}", "1"], |_| Vec::new());
    check(engine, &crc, "lanecrc");
    let mut s = spec(&dir.join("malloc_test"), 2, &[], |_| Vec::new());
    s.max_instructions = Some(100_000);
    check(engine, &s, "malloc_test limited");
    // the cap: malloc_test reaches 160 KiB after about 1 M instructions, minutes on lavapipe,
    // so only where all programs run (ARMADA_TEST_WGPU_MAX=0: GPU machines)
    if max_instructions() == u64::MAX {
        s.max_instructions = None;
        s.lane_memory = Some(160 << 10);
        check(engine, &s, "malloc_test capped");
    }
}

/// FP arithmetic in the shader (fp.wgsl, the CPU engine's exact soft-float), which a GPU turns
/// on once lanes stop for the host at FP ops and a CPU adapter never by default (the host is
/// faster there): fp_edge (NaNs, infinities, subnormals, signed zeros, rounding modes and
/// flush-to-zero, conversions) gives the CPU engine's results, instruction counts included,
/// on an engine that has it from the first launch, with no instruction left to the host, on
/// one that turns it on at the first FP stop, after which no lane stops at one again, and on
/// one whose count of stops the program never reaches (FP stays on the host).
#[test]
fn fp_on_the_device_matches_cpu() {
    if engine().is_none() {
        return;
    }
    let prog = repo().join("target/guest/fp_edge");
    if !prog.exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    }
    const LANES: usize = 2;
    for policy in [
        armada_wgpu::FpPolicy::Always,
        armada_wgpu::FpPolicy::OnFpStops(1),
        armada_wgpu::FpPolicy::OnFpStops(1 << 40),
    ] {
        let opts = armada_wgpu::Options {
            fp: Some(policy),
            ..armada_wgpu::Options::from_env()
        };
        let engine = armada_wgpu::open(&opts).unwrap();
        let s = spec(&prog, LANES, &[], |_| Vec::new());
        let gpu = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
        if let Err(e) = armada_gpu::check::same_as_cpu_run(&gpu, &s) {
            panic!("fp_edge with FP on the device ({policy:?}): {e}");
        }
        // "host-step ops": NAME=COUNT for each op a lane stopped at for the host
        let stat = |name: &str| {
            gpu.stats
                .iter()
                .find(|(k, _)| k == name)
                .map_or(String::new(), |(_, v)| v.clone())
        };
        let ops = stat("host-step ops");
        let steps: Vec<(&str, u64)> = ops
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(op, n)| (op, n.parse().unwrap()))
            .collect();
        match policy {
            armada_wgpu::FpPolicy::Always => {
                assert!(steps.is_empty(), "{policy:?}: host steps at {ops}")
            }
            // fewer FP stops than the policy's count: FP stays on the host
            armada_wgpu::FpPolicy::OnFpStops(n) if n > 1 => {
                let fp: u64 = steps.iter().map(|s| s.1).sum();
                assert!(fp > LANES as u64, "{policy:?}: host steps at {ops}");
            }
            _ => {
                let n: u64 = steps.iter().map(|s| s.1).sum();
                assert!(
                    n >= 1 && n <= LANES as u64,
                    "{policy:?}: {n} host steps ({ops}): the lanes went on stopping at FP ops"
                );
                assert!(
                    steps
                        .iter()
                        .all(|(op, _)| op.starts_with("F_") || op.starts_with("INT_TO_F")),
                    "{policy:?}: host steps at {ops}"
                );
            }
        }
    }
}
