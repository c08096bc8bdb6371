//! Differential checks of a GPU engine against the CPU engine, shared by the engines' tests:
//! the same batch runs on both, and every lane must agree on exit, stdout, stderr and
//! instructions retired.

use crate::{run_batch, Engine};
use armada_core::batch::{
    run_cpu, substitute_lane, BatchOutcome, BatchProgram, BatchSpec, LaneSpec,
};
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
    mixed_spec(&[(prog, args)], lanes, stdin)
}

/// A batch of several programs: lane i runs `progs[i % progs.len()]` with its arguments
/// (`{lane}` replaced) and its own stdin, in deterministic mode.
pub fn mixed_spec(
    progs: &[(&Path, &[&str])],
    lanes: usize,
    stdin: impl Fn(usize) -> Vec<u8>,
) -> BatchSpec {
    let programs: Vec<BatchProgram> = progs
        .iter()
        .map(|(p, _)| BatchProgram {
            image: Arc::new(Image::load(p).expect("a loadable test program")),
            host_path: p.to_path_buf(),
            guest_path: p.as_os_str().as_encoded_bytes().to_vec(),
        })
        .collect();
    let lanes = (0..lanes)
        .map(|i| {
            let k = i % progs.len();
            LaneSpec {
                program: k,
                argv: std::iter::once(programs[k].guest_path.clone())
                    .chain(progs[k].1.iter().map(|a| substitute_lane(a.as_bytes(), i)))
                    .collect(),
                env: vec![b"A=1".to_vec()].into(),
                stdin: stdin(i),
                root: None,
            }
        })
        .collect();
    let mut s = BatchSpec::of(
        programs[0].clone(),
        LinuxConfig {
            sysroot: None,
            deterministic: true,
            ..Default::default()
        },
        lanes,
    );
    s.programs = programs;
    s
}

/// Runs `s` on the engine and on the CPU engine; Err describes the first lane that differs.
pub fn same_as_cpu(engine: &Engine, s: &BatchSpec) -> Result<(), String> {
    let gpu = run_batch(engine, s, &|_| {}).map_err(|e| format!("GPU engine: {e}"))?;
    same_as_cpu_run(&gpu, s)
}

/// Runs `s` on the CPU engine; Err describes the first lane where `gpu` (the GPU engine's
/// outcome of `s`) differs from it.
pub fn same_as_cpu_run(gpu: &BatchOutcome, s: &BatchSpec) -> Result<(), String> {
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

/// One lane's program in [`mixed_suite`]: where it is under the repository, its arguments
/// (`{lane}` replaced), and how its lane must end (checked on every engine, besides the
/// lane-for-lane comparison).
pub struct MixedLane {
    pub path: &'static str,
    pub args: &'static [&'static str],
    pub expect: Expect,
}

/// How a lane of [`mixed_suite`] ends.
pub enum Expect {
    /// Exit status 0.
    Ok,
    /// This exit status, and this text in its stdout, stderr or the engine's message.
    Fails(i32, &'static str),
}

/// The programs of a batch that mixes static, dynamic (Debian's from the sysroot), threaded
/// and forking programs with lanes that must fail alone: past `--max-processes`, in a
/// deadlock, with a library the sysroot lacks, over `--lane-memory`. `small` leaves out
/// those too long for lavapipe.
pub fn mixed_lanes(small: bool) -> Vec<MixedLane> {
    let mut v = vec![
        // static, its own stdin
        MixedLane {
            path: "target/guest/stdin_sum",
            args: &[],
            expect: Expect::Ok,
        },
        // dynamic (Debian's libc from the sysroot), a lane argument; it exits with argc and
        // checks that AT_EXECFN is its own path (each lane's program's, not the batch's first)
        MixedLane {
            path: "target/guest-dynamic/argv_env",
            args: &["{lane}"],
            expect: Expect::Fails(2, "AT_EXECFN ends like argv[0]: yes"),
        },
        // threads (join: 1.9 M instructions, too long for lavapipe; barrier: 0.1 M)
        MixedLane {
            path: if small {
                "target/guest-threads/barrier"
            } else {
                "target/guest-threads/join"
            },
            args: &[],
            expect: Expect::Ok,
        },
        // forks until fork fails at the batch's --max-processes (8)
        MixedLane {
            path: "target/guest-processes/forkcap",
            args: &[],
            expect: Expect::Fails(0, "fork failed with EAGAIN after 7 children"),
        },
        // every thread blocked: the CPU engine's deadlock status and message
        MixedLane {
            path: "target/guest-threads/deadlock_mutex",
            args: &[],
            expect: Expect::Fails(137, "deadlock"),
        },
        // libstdc++ is not in the sysroot: ld.so's error
        MixedLane {
            path: "target/guest-dynamic/cxx_features",
            args: &[],
            expect: Expect::Fails(127, "libstdc++.so.6"),
        },
        // 32 MiB against the batch's --lane-memory of 24 MiB: malloc fails
        MixedLane {
            path: "target/guest/pagetouch",
            args: &["32", "1"],
            expect: Expect::Fails(1, "malloc failed"),
        },
    ];
    if !small {
        // Debian's dash: a pipeline, $(...), coreutils exec'd, a lane argument
        v.push(MixedLane {
            path: "target/sysroot/bin/dash",
            args: &[
                "-c",
                "x=$(echo lane-$1 | tr a-z A-Z); echo \"$x\"; printf 'b\\na\\n' | sort",
                "sh",
                "{lane}",
            ],
            expect: Expect::Ok,
        });
    }
    v
}

/// The batch of [`mixed_lanes`] under `repo`, `per_program` lanes of each (lane i runs
/// program i mod programs), with the sysroot scripts/test builds, stdin "lane i\n" and the
/// limits the failing lanes hit; None when a program or the sysroot is missing.
pub fn mixed_suite(
    repo: &Path,
    small: bool,
    per_program: usize,
) -> Option<(BatchSpec, Vec<MixedLane>)> {
    let lanes = mixed_lanes(small);
    let sysroot = repo.join("target/sysroot");
    if !sysroot.join("lib/ld-linux-aarch64.so.1").exists() {
        return None;
    }
    let mut paths = Vec::new();
    for l in &lanes {
        let p = repo.join(l.path);
        if !p.exists() {
            return None;
        }
        paths.push(p);
    }
    let progs: Vec<(&Path, &[&str])> = paths
        .iter()
        .zip(&lanes)
        .map(|(p, l)| (p.as_path(), l.args))
        .collect();
    let mut s = mixed_spec(&progs, progs.len() * per_program, |i| {
        format!("lane {i}\n").into_bytes()
    });
    s.config.sysroot = Some(sysroot);
    s.config.max_processes = Some(8);
    s.lane_memory = Some(24 << 20);
    Some((s, lanes))
}

/// Err names the first lane of a [`mixed_suite`] batch that did not end as its program's
/// [`Expect`] says.
pub fn mixed_ends_as_expected(out: &BatchOutcome, lanes: &[MixedLane]) -> Result<(), String> {
    for r in &out.lanes {
        let l = &lanes[r.lane % lanes.len()];
        let (status, text) = match l.expect {
            Expect::Ok => (0, ""),
            Expect::Fails(s, t) => (s, t),
        };
        let message = match &r.exit {
            armada_core::runner::Exit::Signal {
                message: Some(m), ..
            } => m.as_bytes(),
            _ => &[],
        };
        let both = [r.stdout.as_slice(), r.stderr.as_slice(), message].concat();
        let found = text.is_empty() || both.windows(text.len()).any(|w| w == text.as_bytes());
        if r.exit.status() != status || !found {
            return Err(format!(
                "lane {} ({}): status {} (want {status}), output {:?} (want {text:?} in it)",
                r.lane,
                l.path,
                r.exit.status(),
                String::from_utf8_lossy(&both)
            ));
        }
    }
    Ok(())
}
