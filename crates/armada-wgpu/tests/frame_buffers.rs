//! Lanes' pages spread over several frame buffers (spaces): with buffers of 2 MiB, 256 frames
//! each (frames and shadows), 32 lanes of about 13 pages need two or more, and every lane
//! must still match the CPU engine; past the frame buffers the shader binds, lanes leave the
//! device and come back as others end (`Batch::park`), a lane that alone does not fit fails
//! with a message that says so, and the device runs the next batch. On lavapipe in CI, like
//! differential.rs (ARMADA_TEST_WGPU=require makes a missing adapter a failure).

use armada_gpu::check::{same_as_cpu, spec};
use armada_gpu::Engine;
use armada_wgpu::WgpuDevice;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An engine whose frame buffers are 2 MiB (small, so that few lanes fill them: a lane takes
/// lavapipe about 0.3 s), with at most `frames` frame buffers.
fn small_engine(frames: u32) -> Option<(Engine, Arc<WgpuDevice>)> {
    let opts = armada_wgpu::Options {
        binding: Some(2 << 20),
        frame_bindings: Some(frames),
        ..armada_wgpu::Options::from_env()
    };
    match WgpuDevice::open(&opts) {
        Ok(d) => {
            eprintln!("wgpu engine on {}", d.describe_long());
            let d = Arc::new(d);
            let engine = Engine::new(d.clone(), armada_gpu::Options::default());
            Some((engine, d))
        }
        Err(e) => {
            if std::env::var("ARMADA_TEST_WGPU").as_deref() == Ok("require") {
                panic!("ARMADA_TEST_WGPU=require, but: {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

#[test]
fn lanes_over_several_frame_buffers_match_cpu() {
    let prog = repo().join("target/guest/stdin_sum");
    if !prog.exists() {
        eprintln!("skipped: no guest programs (tests/guest/build.sh target/guest)");
        return;
    }
    let Some((engine, dev)) = small_engine(3) else {
        return;
    };
    let stdin = |i: usize| format!("{} {} {}\n", i, i * 7, 1000 - i).into_bytes();
    let s = spec(&prog, 32, &[], stdin);
    if let Err(e) = same_as_cpu(&engine, &s) {
        panic!("32 lanes over several frame buffers: {e}");
    }
    let (made, most) = dev.frame_buffers();
    eprintln!("{made} frame buffers made, {most} in use at once");
    assert!(
        most >= 2,
        "the batch fit in {most} frame buffer: the test needs more lanes"
    );

    // past the three frame buffers: the lanes the device refuses frames leave it, their
    // state kept on the host, and come back as others end (the batch does not fail and run
    // again; ARMADA_GPU_PARK=0 would, which the devices test runs on the CUDA simulator),
    // each lane still the CPU engine's
    let s = spec(&prog, 64, &[], stdin);
    let gpu = armada_gpu::run_batch(&engine, &s, &|_| {}).unwrap();
    let cpu = armada_core::batch::run_cpu(&s, &|_| {}).unwrap();
    for (g, c) in gpu.lanes.iter().zip(&cpu.lanes) {
        assert_eq!(
            (&g.exit, &g.stdout, g.instructions),
            (&c.exit, &c.stdout, c.instructions),
            "lane {} of a batch run in waves",
            g.lane
        );
    }
    let stat = |name: &str| gpu.stats.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    assert!(
        stat("lanes off the device").is_some_and(|v| v.contains("times a lane left the device")),
        "{:?}",
        gpu.stats
    );
    // one lane alone that does not fit fails, saying why
    let big = repo().join("target/guest/pagetouch");
    let s = spec(&big, 1, &["4", "1"], |_| Vec::new());
    let e = match armada_gpu::run_batch(&engine, &s, &|_| {}) {
        Ok(_) => panic!("a lane of 4 MiB fit in three 2 MiB frame buffers with their shadows"),
        Err(e) => e.to_string(),
    };
    eprintln!("{e}");
    assert!(e.contains("all 3 frame buffers"), "{e}");
    // and the device is whole after it: the failed batch's frames went back
    let s = spec(&prog, 32, &[], stdin);
    if let Err(e) = same_as_cpu(&engine, &s) {
        panic!("32 lanes after a batch that ran out of frame buffers: {e}");
    }
}
