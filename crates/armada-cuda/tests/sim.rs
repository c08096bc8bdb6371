//! The CUDA engine against the CPU engine, lane for lane. These run the kernel source
//! compiled for the host (the simulator, built when a C++ compiler is present), so they need
//! no GPU; on a GPU machine `ARMADA_TEST_CUDA=1` runs them on the device instead.

use armada_core::batch::{run_cpu, BatchSpec, LaneSpec};
use armada_core::elf::Image;
use armada_core::linux::LinuxConfig;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options() -> Option<armada_cuda::Options> {
    let device = std::env::var_os("ARMADA_TEST_CUDA").is_some();
    if !device && !armada_cuda::device::HAS_SIM {
        eprintln!("skipped: no kernel simulator in this build and ARMADA_TEST_CUDA unset");
        return None;
    }
    Some(armada_cuda::Options {
        sim: !device,
        ..Default::default()
    })
}

fn spec(prog: &Path, lanes: usize, args: &[&str], stdin: impl Fn(usize) -> Vec<u8>) -> BatchSpec {
    let image = Arc::new(Image::load(prog).unwrap());
    let path = prog.as_os_str().as_encoded_bytes().to_vec();
    BatchSpec {
        image,
        config: LinuxConfig {
            deterministic: true,
            exe_host_path: prog.to_path_buf(),
            exe_guest_path: path.clone(),
            ..Default::default()
        },
        lanes: (0..lanes)
            .map(|i| LaneSpec {
                argv: std::iter::once(path.clone())
                    .chain(
                        args.iter()
                            .map(|a| armada_core::batch::substitute_lane(a.as_bytes(), i)),
                    )
                    .collect(),
                env: vec![b"A=1".to_vec()],
                stdin: stdin(i),
                root: None,
            })
            .collect(),
        lane_memory: None,
        max_instructions: None,
    }
}

fn same_as_cpu(s: &BatchSpec, opts: &armada_cuda::Options) {
    let gpu = armada_cuda::run_batch(s, opts, &|_| {}).unwrap();
    let cpu = run_cpu(s, &|_| {}).unwrap();
    assert_eq!(gpu.lanes.len(), cpu.lanes.len());
    for (g, c) in gpu.lanes.iter().zip(cpu.lanes.iter()) {
        assert_eq!(g.exit, c.exit, "lane {}", g.lane);
        assert_eq!(g.stdout, c.stdout, "lane {}", g.lane);
        assert_eq!(g.stderr, c.stderr, "lane {}", g.lane);
        assert_eq!(g.instructions, c.instructions, "lane {}", g.lane);
    }
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
    let Some(opts) = options() else { return };
    let p = repo().join("target/guest/malloc_test");
    if !p.exists() {
        eprintln!("skipped: no guest programs");
        return;
    }
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
    let e = armada_cuda::Engine::open(&armada_cuda::Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("--backend cpu"));
}
