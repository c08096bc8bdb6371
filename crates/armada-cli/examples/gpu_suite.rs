//! Runs many different programs as ONE batch on a GPU engine (a lane per program, or
//! several), and each lane again on the CPU engine (all host cores), and compares exit status,
//! stdout, stderr and instructions retired lane by lane.
//!
//! Usage: cuda_suite MANIFEST [MAX_INSTRUCTIONS]
//! MANIFEST: one program per line, "PROGRAM ARGS..."; `{lane}` in ARGS is the lane's number;
//! "x N PROGRAM ARGS..." runs N lanes of it. Every lane reads "3 4 5\n" on stdin.

use armada_core::batch::{run_lane_cpu, BatchProgram, BatchSpec, LaneResult, LaneSpec};
use armada_core::linux::LinuxConfig;
use rayon::prelude::*;
use std::time::Instant;

/// The GPU engine named by ARMADA_BACKEND (`cuda`, the default, or `wgpu`).
fn open_engine() -> armada_gpu::Engine {
    let r = match std::env::var("ARMADA_BACKEND").as_deref() {
        Ok("wgpu") => armada_wgpu::open(&armada_wgpu::Options::from_env()),
        _ => armada_cuda::open(&armada_cuda::Options::from_env()),
    };
    r.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(125)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let manifest = std::fs::read_to_string(&args[0]).expect("cannot read the manifest");
    let max: Option<u64> = args.get(1).and_then(|v| v.parse().ok());
    let mut specs: Vec<(String, BatchSpec)> = Vec::new();
    for line in manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let mut copies = 1usize;
        if words[0] == "x" {
            copies = words[1].parse().expect("x N");
            words.drain(..2);
        }
        let prog = words[0];
        let program = match BatchProgram::load(std::path::Path::new(prog)) {
            Ok(p) => p,
            Err(e) => {
                println!("SKIP {prog}: {e}");
                continue;
            }
        };
        let lanes = (0..copies)
            .map(|i| {
                let mut argv = vec![prog.as_bytes().to_vec()];
                argv.extend(
                    words[1..]
                        .iter()
                        .map(|w| armada_core::batch::substitute_lane(w.as_bytes(), i)),
                );
                LaneSpec {
                    program: 0,
                    argv,
                    env: vec![b"LANG=C".to_vec()].into(),
                    stdin: b"3 4 5\n".to_vec(),
                    root: None,
                }
            })
            .collect();
        let config = LinuxConfig {
            sysroot: None,
            deterministic: true,
            ..Default::default()
        };
        let mut spec = BatchSpec::of(program, config, lanes);
        spec.max_instructions = max;
        specs.push((line.to_string(), spec));
    }
    let engine = open_engine();
    println!("device: {}", engine.describe());

    // The GPU run, then the CPU run (all lanes in parallel): one after the other, since some
    // programs write files and two copies at once would see each other's.
    let cpu_specs: Vec<(usize, usize)> = specs
        .iter()
        .enumerate()
        .flat_map(|(k, (_, s))| (0..s.lanes.len()).map(move |i| (k, i)))
        .collect();
    let specs_ref = &specs;
    let (gpu, cpu) = (
        {
            let lanes: Vec<_> = cpu_specs
                .iter()
                .map(|&(k, i)| specs_ref[k].1.spawn(i).unwrap())
                .collect();
            let t = Instant::now();
            let mut b = engine.batch(lanes, max).unwrap();
            b.run(&|_| {}).unwrap();
            let secs = t.elapsed().as_secs_f64();
            (b.results(), b.stats_list(), secs)
        },
        {
            let t = Instant::now();
            let r: Vec<LaneResult> = cpu_specs
                .par_iter()
                .map(|&(k, i)| run_lane_cpu(&specs_ref[k].1, i, &|_| {}).unwrap())
                .collect();
            (r, t.elapsed().as_secs_f64())
        },
    );
    let (gres, stats, gsecs) = gpu;
    let (cres, csecs) = cpu;
    let mut pass = 0;
    let mut fail = 0;
    let mut host_steps = 0;
    for (j, &(k, i)) in cpu_specs.iter().enumerate() {
        let (g, c) = (&gres[j], &cres[j]);
        host_steps += g.host_steps;
        let same = g.exit == c.exit
            && g.stdout == c.stdout
            && g.stderr == c.stderr
            && g.instructions == c.instructions;
        if same {
            pass += 1;
        } else {
            fail += 1;
            println!(
                "FAIL {} lane {i}: exit {:?} vs cpu {:?}, instructions {} vs {}, stdout {} vs {} bytes{}, stderr {} vs {} bytes",
                specs[k].0,
                g.exit,
                c.exit,
                g.instructions,
                c.instructions,
                g.stdout.len(),
                c.stdout.len(),
                if g.stdout == c.stdout { " (same)" } else { " (differ)" },
                g.stderr.len(),
                c.stderr.len()
            );
        }
    }
    let instr: u64 = gres.iter().map(|r| r.instructions).sum();
    println!(
        "suite: {pass} lanes identical to the CPU engine, {fail} differ ({} programs, {instr} instructions, {host_steps} host steps); gpu {gsecs:.2} s, cpu {csecs:.2} s",
        specs.len()
    );
    for (k, v) in stats {
        println!("  {k}: {v}");
    }
    std::process::exit(if fail == 0 { 0 } else { 1 });
}
