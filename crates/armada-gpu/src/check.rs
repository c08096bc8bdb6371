//! Differential checks of a GPU engine against the CPU engine, shared by the engines' tests:
//! the same batch runs on both, and every lane must agree on exit, stdout, stderr and
//! instructions retired.

use crate::{run_batch, Engine};
use armada_core::batch::{run_cpu, substitute_lane, BatchSpec, LaneSpec};
use armada_core::elf::Image;
use armada_core::linux::LinuxConfig;
use std::path::Path;
use std::sync::Arc;

/// A batch of `lanes` lanes of `prog` with `args` (`{lane}` replaced) and per-lane stdin, in
/// deterministic mode (so both engines see the same clock and random bytes).
pub fn spec(
    prog: &Path,
    lanes: usize,
    args: &[&str],
    stdin: impl Fn(usize) -> Vec<u8>,
) -> BatchSpec {
    let image = Arc::new(Image::load(prog).expect("a loadable test program"));
    let path = prog.as_os_str().as_encoded_bytes().to_vec();
    BatchSpec {
        image,
        config: LinuxConfig {
            sysroot: None,
            deterministic: true,
            exe_host_path: prog.to_path_buf(),
            exe_guest_path: path.clone(),
            ..Default::default()
        },
        lanes: (0..lanes)
            .map(|i| LaneSpec {
                argv: std::iter::once(path.clone())
                    .chain(args.iter().map(|a| substitute_lane(a.as_bytes(), i)))
                    .collect(),
                env: vec![b"A=1".to_vec()].into(),
                stdin: stdin(i),
                root: None,
            })
            .collect(),
        lane_memory: None,
        max_instructions: None,
        snapshot: None,
        coverage: false,
        drop_output: false,
        decoded: armada_core::cpu::DecodedPages::new(),
    }
}

/// Runs `s` on the engine and on the CPU engine; Err describes the first lane that differs.
pub fn same_as_cpu(engine: &Engine, s: &BatchSpec) -> Result<(), String> {
    let gpu = run_batch(engine, s, &|_| {}).map_err(|e| format!("GPU engine: {e}"))?;
    let cpu = run_cpu(s, &|_| {}).map_err(|e| format!("CPU engine: {e}"))?;
    if gpu.lanes.len() != cpu.lanes.len() {
        return Err(format!(
            "{} lanes against {}",
            gpu.lanes.len(),
            cpu.lanes.len()
        ));
    }
    for (g, c) in gpu.lanes.iter().zip(cpu.lanes.iter()) {
        let what = if g.exit != c.exit {
            format!("exit {:?} against {:?}", g.exit, c.exit)
        } else if g.stdout != c.stdout {
            format!(
                "stdout {:?} against {:?}",
                String::from_utf8_lossy(&g.stdout),
                String::from_utf8_lossy(&c.stdout)
            )
        } else if g.stderr != c.stderr {
            format!(
                "stderr {:?} against {:?}",
                String::from_utf8_lossy(&g.stderr),
                String::from_utf8_lossy(&c.stderr)
            )
        } else if g.instructions != c.instructions {
            format!("{} instructions against {}", g.instructions, c.instructions)
        } else {
            continue;
        };
        return Err(format!("lane {}: {what}", g.lane));
    }
    Ok(())
}
