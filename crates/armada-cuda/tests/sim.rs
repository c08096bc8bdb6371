//! The CUDA engine against the CPU engine, lane for lane. These run the kernel source
//! compiled for the host (the simulator, built when a C++ compiler is present), so they need
//! no GPU; on a GPU machine `ARMADA_TEST_CUDA=1` runs them on the device instead.

use armada_gpu::check::spec;
use armada_gpu::Engine;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options() -> Option<Engine> {
    let device = std::env::var_os("ARMADA_TEST_CUDA").is_some();
    if !device && !armada_cuda::HAS_SIM {
        eprintln!("skipped: no kernel simulator in this build and ARMADA_TEST_CUDA unset");
        return None;
    }
    Some(
        armada_cuda::open(&armada_cuda::Options {
            sim: !device,
            ..Default::default()
        })
        .unwrap(),
    )
}

/// The engine and the built guest program `name`, or None (said) when either is missing.
fn engine_and_guest(name: &str) -> Option<(Engine, PathBuf)> {
    let engine = options()?;
    let p = repo().join("target/guest").join(name);
    if !p.exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return None;
    }
    Some((engine, p))
}

/// The sysroot scripts/test builds and its dash, or None (said) when it lacks dash or
/// coreutils.
fn dash_sysroot() -> Option<(PathBuf, PathBuf)> {
    let sysroot = repo().join("target/sysroot");
    let dash = sysroot.join("bin/dash");
    if !dash.exists() || !sysroot.join("usr/bin/tr").exists() {
        eprintln!("skipped: no sysroot with dash and coreutils (scripts/test builds it)");
        return None;
    }
    Some((sysroot, dash))
}

fn same_as_cpu(s: &armada_core::batch::BatchSpec, engine: &Engine) {
    if let Err(e) = armada_gpu::check::same_as_cpu(engine, s) {
        panic!("{e}");
    }
}

/// The batch's figure `name` (empty when it has none).
fn stat(out: &armada_core::batch::BatchOutcome, name: &str) -> String {
    out.stats
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// How many stops of `kind` (`svc`, `miss-write`) the batch's `stops` figure counts.
fn stops_of(out: &armada_core::batch::BatchOutcome, kind: &str) -> u64 {
    stat(out, "stops")
        .split_whitespace()
        .find_map(|p| p.strip_prefix(kind)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn prebuilt_hello_matches_cpu() {
    let Some(opts) = options() else { return };
    let hello = repo().join("tests/guest/prebuilt/hello");
    same_as_cpu(&spec(&hello, 3, &[], |_| Vec::new()), &opts);
}

#[test]
fn guest_programs_match_cpu() {
    let Some(opts) = options() else { return };
    let dir = repo().join("target/guest");
    if !dir.join("hello").exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    }
    for (name, args) in [
        ("strings", vec![]),
        ("qsort_bsearch", vec![]),
        ("fp_edge", vec![]),
        ("vectorize", vec![]),
        ("signals", vec![]),
        ("fault_segv", vec![]),
        ("atomics", vec![]),
        ("crc32hw", vec![]),
    ] {
        let p = dir.join(name);
        if p.exists() {
            same_as_cpu(&spec(&p, 2, &args, |_| Vec::new()), &opts);
        }
    }
    let p = dir.join("stdin_sum");
    if p.exists() {
        same_as_cpu(
            &spec(&p, 8, &[], |i| {
                format!("{} {} {}\n", i, i * 3, 7).into_bytes()
            }),
            &opts,
        );
    }
}

#[test]
fn lane_arguments_and_memory_cap() {
    let Some((opts, p)) = engine_and_guest("malloc_test") else {
        return;
    };
    let mut s = spec(&p, 4, &[], |_| Vec::new());
    s.lane_memory = Some(1 << 18);
    same_as_cpu(&s, &opts);
    s.lane_memory = None;
    s.max_instructions = Some(1_000_000);
    same_as_cpu(&s, &opts);
}

#[test]
fn no_driver_is_a_clear_error() {
    // SAFETY: only tries to open the library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("skipped: this machine has a CUDA driver");
        return;
    }
    let e = armada_cuda::check_driver(&armada_cuda::Options::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("no CUDA driver found"), "{msg}");
    assert!(msg.contains("--backend cpu"), "{msg}");
    let e = armada_cuda::open(&armada_cuda::Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("--backend cpu"));
}

#[test]
fn lazy_pages_take_first_writes_in_the_kernel() {
    let Some((engine, p)) = engine_and_guest("lanecrc") else {
        return;
    };
    // lanes whose first writes (data, bss, stack, heap) the kernel takes from their reserves
    let s = spec(&p, 16, &["{lane}", "1"], |_| Vec::new());
    same_as_cpu(&s, &engine);
    let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    let stat = |name: &str| stat(&out, name);
    let claims: u64 = stat("lazy pages")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(claims >= 16 * 4, "lazy pages: {}", stat("lazy pages"));
    // without them those writes would each have stopped the lane
    assert!(
        !stat("stops").contains("miss-write"),
        "stops: {}",
        stat("stops")
    );
}

#[test]
fn second_level_translations_last_one_launch() {
    let Some((engine, p)) = engine_and_guest("remap") else {
        return;
    };
    // pages unmapped and mapped again between stops: a translation kept from an earlier
    // launch would read the old bytes. Two generations before the caches start again, so
    // every other launch a generation comes back, and only the clearing keeps it apart.
    // SAFETY: the variable is read when a batch is set up; any value keeps results the same,
    // so the other tests of this binary that may read it meanwhile are not affected.
    unsafe { std::env::set_var("ARMADA_GPU_TLB2_GENS", "2") };
    let s = spec(&p, 8, &["2{lane}"], |_| Vec::new());
    same_as_cpu(&s, &engine);
    unsafe { std::env::remove_var("ARMADA_GPU_TLB2_GENS") };
    let s = spec(&p, 8, &["2{lane}"], |_| Vec::new());
    same_as_cpu(&s, &engine);
}

#[test]
fn frame_pool_takes_copies_past_the_lanes_reserves() {
    // Lanes from a snapshot at their read of stdin, each writing 300 pages of the snapshot's
    // (copies on the first write) and then pages new to it: far more than a lane's reserve
    // of 16 frames. The kernel takes the rest from the batch's pool, which these 8 lanes
    // empty in their first launch (1,024 frames), so lanes also stop for refills and the pool
    // grows. Under a memory cap the pool gives a lane no more than the cap leaves it.
    let Some((engine, p)) = engine_and_guest("cowpages") else {
        return;
    };
    let input = |i: usize| format!("input {i}").into_bytes();
    let mut s = spec(&p, 8, &["300", "40"], input);
    s.take_snapshot(armada_core::snapshot::Point::Input)
        .unwrap();
    same_as_cpu(&s, &engine);
    let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    let lazy = stat(&out, "lazy pages");
    let taken: u64 = lazy
        .split("; ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(taken >= 8 * 250, "lazy pages: {lazy}");
    assert!(!lazy.contains("in 0 launches"), "lazy pages: {lazy}");
    // (with reserves alone: a refill stop for every 16 to 64 pages)
    assert!(
        stops_of(&out, "miss-write") < 8 * 8,
        "stops: {}",
        stat(&out, "stops")
    );
    // the 300 pages of the snapshot's fit in 1,300 KiB and the 40 new ones do not: each lane
    // ends where the CPU engine's does
    let mut capped = spec(&p, 8, &["300", "40"], input);
    capped.lane_memory = Some(1_300 << 10);
    capped
        .take_snapshot(armada_core::snapshot::Point::Input)
        .unwrap();
    same_as_cpu(&capped, &engine);
}

#[test]
fn run_to_first_stop_reports_every_lanes_stop() {
    // The run-to-first-stop mode (`Batch::execute`) over several lanes: each stopped lane's
    // stop is read from its own record, and servicing them all runs the batch to the same
    // end as the CPU engine.
    let Some(engine) = options() else { return };
    let hello = repo().join("tests/guest/prebuilt/hello");
    let s = spec(&hello, 8, &[], |_| Vec::new());
    let lanes: Vec<_> = (0..8).map(|i| s.spawn(i).unwrap()).collect();
    let mut b = engine.batch(lanes, None).unwrap();
    let mut rounds = 0;
    loop {
        let stops = b.execute(1 << 40).unwrap();
        if stops.is_empty() {
            break;
        }
        let svc: Vec<u32> = stops
            .iter()
            .filter(|(_, s)| *s != armada_gpu::LaneStop::Slice)
            .map(|&(l, _)| l as u32)
            .collect();
        // the lanes run in step: all of them stop on the same syscall
        assert_eq!(svc.len(), 8, "{stops:?}");
        assert!(stops.iter().all(|(_, s)| *s == stops[0].1), "{stops:?}");
        b.service(&svc).unwrap();
        rounds += 1;
        assert!(rounds < 1000, "the lanes never ended");
    }
    let cpu = armada_core::batch::run_lane_cpu(&s, 0, &|_| {}).unwrap();
    for r in b.results() {
        assert_eq!(r.stdout, cpu.stdout);
        assert_eq!(r.exit, cpu.exit);
    }
}

/// Guest threads on the GPU engine: a lane's tasks switch at the CPU engine's points (turn
/// ends, timers, blocking syscalls), so every lane's exit, stdout, stderr and instruction
/// count are the CPU engine's. Every program of the threads suite (pthreads, C++ threads,
/// Go's runtime: futexes, signals between threads, timers, deadlocks) that is short enough
/// here, 2 lanes each.
#[test]
fn guest_threads_match_cpu() {
    let Some(engine) = options() else { return };
    let dir = repo().join("target/guest-threads");
    let Ok(list) = std::fs::read_to_string(dir.join("programs.list")) else {
        eprintln!(
            "skipped: no thread programs (tests/guest/build-threads.sh target/guest-threads)"
        );
        return;
    };
    let mut ran = Vec::new();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        // (the simulator runs the kernel at a few M instructions a second, one host thread a
        // lane: the thousand threads and the HTTP server are left to gpu-check.sh)
        if ["create1000", "go_nethttp"].contains(&name) {
            continue;
        }
        let args: &[&str] = match name {
            "cancel" => &["sleep"],
            "thread_signals" => &["pthread_kill"],
            "thread_exit" => &["segv"],
            _ => &[],
        };
        let s = spec(&dir.join(name), 2, args, |_| Vec::new());
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("{name}: {e}");
        }
        ran.push(name);
    }
    eprintln!("same as the CPU engine: {}", ran.join(" "));
    assert!(ran.len() >= 20, "only {} thread programs ran", ran.len());
    // timers and thread endings, each way
    for (name, args) in [
        ("cancel", &["async"][..]),
        ("cancel", &["condvar"]),
        ("thread_signals", &["sigwait"]),
        ("thread_signals", &["pending"]),
        ("thread_exit", &["exit"]),
        ("thread_exit", &["main-exit"]),
        ("thread_exit", &["abort"]),
        ("sum64", &["10"]),
    ] {
        let s = spec(&dir.join(name), 2, args, |_| Vec::new());
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("{name} {args:?}: {e}");
        }
    }
}

/// A threaded lane beside single-threaded ones, an instruction limit that falls inside a
/// turn, and a thread program with lane arguments: every lane ends as on the CPU engine.
#[test]
fn threads_beside_other_lanes_and_limits() {
    let Some((engine, p)) = engine_and_guest("threads_compute") else {
        return;
    };
    let mut s = spec(&p, 4, &["{lane}", "1"], |_| Vec::new());
    same_as_cpu(&s, &engine);
    // 250,000 instructions: past two turns of 100,000, inside the third
    s.max_instructions = Some(250_000);
    same_as_cpu(&s, &engine);
    let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    assert!(out.lanes.iter().any(
        |l| l.exit == armada_core::runner::Exit::InstructionLimit && l.instructions == 250_000
    ));
}

/// Dynamically linked programs on the GPU engine: ld.so maps the libraries, their code is
/// decoded once for every lane that maps the same pages and runs in the kernel, and every
/// lane ends as on the CPU engine. Our programs against Debian's cross libc, and python3
/// from the sysroot scripts/test builds.
#[test]
fn dynamic_programs_match_cpu() {
    let Some(engine) = options() else { return };
    let dir = repo().join("target/guest-dynamic");
    let cross = Path::new("/usr/aarch64-linux-gnu");
    if !dir.join("argv_env").exists() || !cross.join("lib/ld-linux-aarch64.so.1").exists() {
        eprintln!(
            "skipped: no dynamic guest programs or no cross libc (tests/guest/build-dynamic.sh)"
        );
        return;
    }
    let with_root = |s: &mut armada_core::batch::BatchSpec, root: &Path| {
        s.config.sysroot = Some(root.to_path_buf());
    };
    for (name, args) in [
        ("argv_env", &["{lane}", "b"][..]),
        ("argv_env-nopie", &[]),
        ("cxx_features", &[]),
        ("libm_dlopen", &[]),
    ] {
        let mut s = spec(&dir.join(name), 3, args, |_| Vec::new());
        with_root(&mut s, cross);
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("{name}: {e}");
        }
    }
    // the libraries' code is decoded once, whatever the number of lanes
    let micro_ops = |lanes: usize| {
        let mut s = spec(&dir.join("cxx_features"), lanes, &[], |_| Vec::new());
        with_root(&mut s, cross);
        let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
        let stat = out.stats.iter().find(|(k, _)| k == "micro-ops").unwrap();
        let host: u64 = out.lanes.iter().map(|l| l.host_steps).sum();
        assert_eq!(host, 0, "libc's code ran on the host");
        stat.1.clone()
    };
    assert_eq!(micro_ops(1), micro_ops(4));
    let sysroot = repo().join("target/sysroot");
    let python = sysroot.join("usr/bin/python3");
    if python.exists() {
        let mut s = spec(
            &python,
            2,
            &["-c", "import json; print(json.dumps({'lane': 1 + 2}))"],
            |_| Vec::new(),
        );
        with_root(&mut s, &sysroot);
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("python3: {e}");
        }
    }
}

/// Processes on the GPU engine: every program of the processes suite (fork, vfork, exec,
/// wait, pipes, signals between processes, process groups, sessions) ends on every lane as
/// on the CPU engine. Each process runs on its own address space on the device.
#[test]
fn guest_processes_match_cpu() {
    let Some(engine) = options() else { return };
    let dir = repo().join("target/guest-processes");
    let Ok(list) = std::fs::read_to_string(dir.join("programs.list")) else {
        eprintln!("skipped: no process guest programs (tests/guest/build-processes.sh target/guest-processes)");
        return;
    };
    let roots = std::env::temp_dir().join(format!("armada-sim-processes-{}", std::process::id()));
    let mut ran = Vec::new();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        // (fork_big: 8 MiB forked 4 times, its pages shared with the children on the device)
        let args: &[&str] = if name == "fork_big" { &["8", "4"] } else { &[] };
        let mut s = spec(&dir.join(name), 2, args, |_| Vec::new());
        match name {
            // they write files (in /tmp, in the working directory): each lane its own root
            // (lanes sharing one would see each other's)
            "fd_offset" | "socketpair" => {
                for (i, l) in s.lanes.iter_mut().enumerate() {
                    let r = roots.join(format!("{name}-{i}"));
                    std::fs::create_dir_all(r.join("tmp")).unwrap();
                    l.root = Some(r);
                }
            }
            // forks until the cap: 40 processes, each with its own space on the device
            "forkcap" => s.config.max_processes = Some(40),
            _ => {}
        }
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("{name}: {e}");
        }
        ran.push(name);
    }
    let _ = std::fs::remove_dir_all(&roots);
    eprintln!("same as the CPU engine: {}", ran.join(" "));
    assert!(ran.len() >= 20, "only {} process programs ran", ran.len());
}

/// Shell scripts on the GPU engine: Debian's dash (dynamically linked, from the sysroot
/// scripts/test builds) running a pipeline, command substitution and a loop, with a lane
/// argument, forks and execs coreutils on every lane as on the CPU engine; and python3's
/// subprocess.
#[test]
fn scripts_and_subprocesses_match_cpu() {
    let Some(engine) = options() else { return };
    let Some((sysroot, dash)) = dash_sysroot() else {
        return;
    };
    let script = "x=$(echo lane-$1 | tr a-z A-Z); echo \"$x\"; \
                  printf 'c\\na\\nb\\n' | sort | head -2; \
                  for i in 1 2 3; do echo $i; done | wc -l; exit $1";
    let mut s = spec(&dash, 3, &["-c", script, "sh", "{lane}"], |_| Vec::new());
    s.config.sysroot = Some(sysroot.clone());
    if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
        panic!("dash: {e}");
    }
    let python = sysroot.join("usr/bin/python3");
    if python.exists() {
        let code =
            "import subprocess; print(subprocess.run(['echo', 'hi'], capture_output=True).stdout)";
        let mut s = spec(&python, 2, &["-c", code], |_| Vec::new());
        s.config.sysroot = Some(sysroot);
        if let Err(e) = armada_gpu::check::same_as_cpu(&engine, &s) {
            panic!("python3 subprocess: {e}");
        }
    }
}

/// Two lanes of `dash ARGS` with the sysroot, checked against the CPU engine; the batch's
/// outcome on the engine.
fn dash_batch(
    engine: &Engine,
    sysroot: &Path,
    dash: &Path,
    args: &[&str],
) -> armada_core::batch::BatchOutcome {
    let mut s = spec(dash, 2, args, |_| Vec::new());
    s.config.sysroot = Some(sysroot.to_path_buf());
    same_as_cpu(&s, engine);
    armada_gpu::run_batch(engine, &s, &|_| {}).unwrap()
}

/// A signal handler returns through armada's trampoline on the GPU: its page is one held
/// buffer for every process, decoded once, not a page of each lane's own that the host had
/// to run (dash's SIGCHLD after each of its forks).
#[test]
fn signal_handlers_return_on_the_gpu() {
    let Some(engine) = options() else { return };
    let Some((sysroot, dash)) = dash_sysroot() else {
        return;
    };
    let script = "s=0; for i in 1 2 3; do x=$(echo $i); s=$((s + x * $1)); done; echo $s";
    let out = dash_batch(&engine, &sysroot, &dash, &["-c", script, "sh", "{lane}"]);
    assert!(stops_of(&out, "svc") > 0, "stops: {}", stat(&out, "stops"));
    assert_eq!(
        stops_of(&out, "host-step"),
        0,
        "stops: {}",
        stat(&out, "stops")
    );
}

/// A forked child's page the clone wrote (its tid in its thread block, CLONE_CHILD_SETTID)
/// goes up before the child first runs: more forks cost no more write misses.
#[test]
fn forked_children_get_the_pages_the_clone_wrote() {
    let Some(engine) = options() else { return };
    let Some((sysroot, dash)) = dash_sysroot() else {
        return;
    };
    let misses = |script: &str| {
        let out = dash_batch(&engine, &sysroot, &dash, &["-c", script]);
        (stops_of(&out, "miss-write"), stat(&out, "stops"))
    };
    let one = misses("x=$(echo 1); echo $x");
    let five = misses("for i in 1 2 3 4 5; do x=$(echo $i); done; echo $x");
    assert_eq!(one.0, five.0, "one fork: {}; five: {}", one.1, five.1);
}

/// Library pages go up once a batch: every lane's entries for libc's (and an exec'd
/// program's) pages point at one frame each, so 8 lanes of a dash script that execs
/// coreutils upload far fewer pages than 8 times what one lane does.
#[test]
fn library_pages_go_up_once_a_batch() {
    let Some(engine) = options() else { return };
    let Some((sysroot, dash)) = dash_sysroot() else {
        return;
    };
    let script = "echo $(echo lane-$1 | tr a-z A-Z); printf 'b\\na\\n' | sort";
    let run = |lanes: usize| {
        let mut s = spec(&dash, lanes, &["-c", script, "sh", "{lane}"], |_| {
            Vec::new()
        });
        s.config.sysroot = Some(sysroot.clone());
        let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
        if let Err(e) = armada_gpu::check::same_as_cpu_run(&out, &s) {
            panic!("dash x{lanes}: {e}");
        }
        let up: u64 = stat(&out, "pages up")
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap();
        eprintln!(
            "{lanes} lanes: pages up {up}; shared frames {}",
            stat(&out, "shared frames")
        );
        up
    };
    let (one, eight) = (run(1), run(8));
    assert!(
        eight < 4 * one,
        "8 lanes uploaded {eight} pages, one lane {one}: library pages went up for each lane"
    );
}

#[test]
fn python_lanes_from_a_snapshot_at_input_match_full_runs() {
    // CPython started once: the snapshot at `input` is its first read of stdin (its stat,
    // seek and terminal checks of fd 0 before that answer the same whatever the input is,
    // so its site imports are in the snapshot), and each lane runs its own script from
    // there. Every lane must end as a run of its own from the start does, instructions
    // included; and the lanes' writes to the snapshot's pages (its heap) are copied in the
    // kernel (copy-on-write image pages), not missed one by one.
    let Some(engine) = options() else { return };
    let sysroot = repo().join("target/sysroot");
    let python = sysroot.join("usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: no sysroot with python3 (scripts/test builds it)");
        return;
    }
    let lanes = 6;
    // (the clocks: the kernel answers clock_gettime from the virtual clock, slept time
    // included; clock 10 does not exist)
    let script = |i: usize| {
        format!(
            "import sys, time\nx = [i * i for i in range({})]\nprint('lane', {i}, sum(x))\n\
             t0 = time.monotonic_ns(); time.sleep({i} / 1000); t1 = time.monotonic_ns()\n\
             print(time.time_ns(), t0, t1, time.process_time_ns(), time.clock_gettime_ns(time.CLOCK_TAI))\n\
             try:\n    time.clock_gettime(10)\nexcept OSError as e:\n    print(e.errno)\n\
             sys.exit({i})\n",
            10 * i + 5
        )
        .into_bytes()
    };
    let mut s = spec(&python, lanes, &[], script);
    s.config.sysroot = Some(sysroot);
    // (lanes from a snapshot share lane 0's random seed, so each full run is a lane 0)
    let full: Vec<_> = (0..lanes)
        .map(|i| {
            let mut one = spec(&python, 1, &[], |_| script(i));
            one.config.sysroot = s.config.sysroot.clone();
            let mut r = armada_core::batch::run_cpu(&one, &|_| {})
                .unwrap()
                .lanes
                .remove(0);
            r.lane = i;
            r
        })
        .collect();
    s.take_snapshot(armada_core::snapshot::Point::Input)
        .unwrap();
    let at = s.snapshot.as_ref().unwrap().retired();
    let cpu = armada_core::batch::run_cpu(&s, &|_| {}).unwrap();
    let gpu = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    for ((f, c), g) in full.iter().zip(&cpu.lanes).zip(&gpu.lanes) {
        let key = |r: &armada_core::batch::LaneResult| {
            (
                r.exit.clone(),
                r.stdout.clone(),
                r.stderr.clone(),
                r.instructions,
            )
        };
        assert_eq!(
            key(c),
            key(f),
            "lane {} on the CPU engine from the snapshot",
            f.lane
        );
        assert_eq!(
            key(g),
            key(f),
            "lane {} on the GPU engine from the snapshot",
            f.lane
        );
        let after = f.instructions - at;
        assert!(
            after < at / 2,
            "lane {}: {after} instructions after the snapshot, {at} before: it is too early",
            f.lane
        );
    }
    let stops = stat(&gpu, "stops");
    // and the pages of its allocator's arenas have lazy entries (a whole 1 MiB arena each):
    // 4 misses in these 6 lanes, 28 when an area of more than 64 pages got entries only
    // around the pages it missed
    assert!(
        stops_of(&gpu, "miss-write") < 2 * lanes as u64,
        "stops: {stops}"
    );
    // each lane reads the clocks a dozen times, and its script from stdin into a page of the
    // snapshot's (copied in the kernel): the kernel answers those; 4 syscalls a lane are the
    // host's (24 here; 30 when the first read stopped)
    assert!(stops_of(&gpu, "svc") < 5 * lanes as u64, "stops: {stops}");
}

#[test]
fn lanes_beyond_the_devices_memory_leave_it_and_come_back() {
    // 16 lanes each writing 8 MiB on a simulated device of one chunk of frames (64 MiB and
    // their shadows): the lanes the device refuses frames leave it, their state on the host,
    // and come back as others end (`Batch::park`; with ARMADA_GPU_PARK=0 the batch fails and
    // runs again in fewer slots, which the devices test runs); each lane's result the CPU
    // engine's. One lane alone that does not fit is still a clear error.
    if !armada_cuda::HAS_SIM {
        eprintln!("skipped: no kernel simulator in this build");
        return;
    }
    let p = repo().join("target/guest/pagetouch");
    if !p.exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    }
    let engine = armada_cuda::open(&armada_cuda::Options {
        sim: true,
        sim_frame_mib: Some(128),
        ..Default::default()
    })
    .unwrap();
    let s = spec(&p, 16, &["8", "1"], |_| Vec::new());
    same_as_cpu(&s, &engine);
    let out = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    // (one batch, never failed: lanes left the device and came back)
    assert!(
        stat(&out, "lanes off the device").contains("times a lane left the device")
            && !stat(&out, "batches").contains("ran out of memory"),
        "{:?}",
        out.stats
    );
    let big = spec(&p, 1, &["200", "1"], |_| Vec::new());
    match armada_gpu::run_batch(&engine, &big, &|_| {}) {
        Err(e) => assert!(e.to_string().contains("out of memory"), "{e}"),
        Ok(r) => panic!("a lane of 200 MiB ran in 128 MiB: {:?}", r.lanes[0].exit),
    }
}

/// One batch of several programs: static, dynamic, threaded and forking lanes beside lanes
/// that fail alone (past --max-processes, deadlocked, a library missing from the sysroot,
/// over --lane-memory). Every lane ends as on the CPU engine and as it does in a batch of
/// its program alone, and the failing lanes end as they should.
#[test]
fn a_batch_of_several_programs_matches_cpu_lane_for_lane() {
    let Some(engine) = options() else { return };
    let Some((s, lanes)) = armada_gpu::check::mixed_suite(&repo(), false, 2) else {
        eprintln!("skipped: guest programs or the sysroot missing (scripts/test builds them)");
        return;
    };
    let gpu = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    if let Err(e) = armada_gpu::check::mixed_ends_as_expected(&gpu, &lanes) {
        panic!("{e}");
    }
    if let Err(e) = armada_gpu::check::same_as_cpu_run(&gpu, &s) {
        panic!("{e}");
    }
    // the mixed batch's lane i = lane i of a batch of its program alone
    for (k, l) in lanes.iter().enumerate() {
        let mixed = [k, k + lanes.len()];
        let mut alone = s.clone();
        alone.programs = vec![s.programs[k].clone()];
        alone.lanes = mixed
            .iter()
            .map(|&m| armada_core::batch::LaneSpec {
                program: 0,
                ..s.lanes[m].clone()
            })
            .collect();
        let cpu = armada_core::batch::run_cpu(&alone, &|_| {}).unwrap();
        for (r, &m) in cpu.lanes.iter().zip(&mixed) {
            let m = &gpu.lanes[m];
            assert_eq!(
                (&r.exit, &r.stdout, &r.stderr),
                (&m.exit, &m.stdout, &m.stderr),
                "{}: alone and in the mixed batch",
                l.path
            );
        }
    }
}

/// `tests/guest/gpu/reserve_take.c` built static for arm64 (None, said, without the cross
/// compiler).
fn reserve_take() -> Option<PathBuf> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reserve_take");
    let o = std::process::Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&out)
        .arg(repo().join("tests/guest/gpu/reserve_take.c"))
        .output();
    match o {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => panic!("{}", String::from_utf8_lossy(&o.stderr)),
        Err(_) => {
            eprintln!("skipped: no aarch64-linux-gnu-gcc");
            None
        }
    }
}

/// A page new to a lane takes a frame of the lane's reserve on the servicing thread; where
/// its memory cap keeps the reserve from growing back, only the reserve's count changes,
/// and it must still reach the device (without it the kernel took the host's frame for a
/// lazy page: "claimed page ... out of step"). Caps around the program's need, each lane
/// against the CPU engine.
#[test]
fn reserve_frames_the_host_takes_leave_the_kernels_count() {
    let Some(engine) = options() else {
        return;
    };
    let Some(p) = reserve_take() else {
        return;
    };
    let input = |l: usize| (0..8 * 160).map(|k| ((l * 13 + k) % 251) as u8).collect();
    let mut s = spec(&p, 8, &[], input);
    for kib in (1300..=1420).step_by(8) {
        s.lane_memory = Some(kib << 10);
        same_as_cpu(&s, &engine);
    }
}

/// Translated blocks (blocks.rs): a batch that builds them early (after 64 samples of where
/// slices ended, slices of 997 instructions) ends every lane as the CPU engine does, in a
/// batch of static, dynamically linked, threaded and forking programs; and the blocks were
/// built (the simulator compiles them with the host's C++ compiler).
#[test]
fn translated_blocks_match_the_cpu_engine() {
    let device = std::env::var_os("ARMADA_TEST_CUDA").is_some();
    if !device && !armada_cuda::HAS_SIM {
        eprintln!("skipped: no kernel simulator in this build and ARMADA_TEST_CUDA unset");
        return;
    }
    let engine = armada_cuda::open(&armada_cuda::Options {
        sim: !device,
        slice: Some(997),
        block_samples: Some(64),
        block_wait: true,
        ..Default::default()
    })
    .unwrap();
    let Some((s, lanes)) = armada_gpu::check::mixed_suite(&repo(), false, 2) else {
        eprintln!("skipped: guest programs or the sysroot missing (scripts/test builds them)");
        return;
    };
    let gpu = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    let built = stat(&gpu, "translated blocks");
    let count: usize = built
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(count > 0, "no blocks were built: {built}");
    if let Err(e) = armada_gpu::check::mixed_ends_as_expected(&gpu, &lanes) {
        panic!("{e}");
    }
    if let Err(e) = armada_gpu::check::same_as_cpu_run(&gpu, &s) {
        panic!("{e}");
    }
}
