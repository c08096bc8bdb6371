//! Runs one program on a GPU engine (CUDA, its simulator, or wgpu) and on the CPU engine side by side,
//! comparing registers after every launch; on the first difference it runs again with a slice
//! of one instruction to find the instruction. Usage: lockstep PROGRAM [ARGS...]
//! (ARMADA_CUDA_SIM=1 for the simulator).

use armada_core::cpu;
use armada_core::elf::Image;
use armada_core::linux::{LinuxConfig, Stdio};
use armada_core::process::Program;
use armada_core::runner::Lane;
use armada_core::state::{CpuState, Stop};
use std::sync::Arc;

fn spawn(image: &Arc<Image>, argv: &[Vec<u8>]) -> Lane {
    let cfg = LinuxConfig {
        sysroot: None,
        deterministic: true,
        exe_guest_path: argv[0].clone(),
        exe_host_path: std::path::PathBuf::from(String::from_utf8_lossy(&argv[0]).into_owned()),
        ..Default::default()
    };
    let stdio = Stdio::Captured { stdin: vec![] };
    Lane::new(Program::spawn(image.clone(), &cfg, argv.to_vec(), vec![], stdio).unwrap())
}

/// Advances the CPU lane to exactly `target` retired instructions (servicing stops).
fn cpu_to(l: &mut Lane, target: u64) {
    while l.exit.is_none() && l.retired() < target {
        let budget = target - l.retired();
        let s = cpu::run(
            &mut l.program.state,
            &mut l.program.mem,
            &mut l.code,
            budget,
        );
        if s != Stop::Budget {
            l.exit = l.service(s);
        }
    }
}

fn diff(a: &CpuState, b: &CpuState) -> Option<String> {
    let mut d = Vec::new();
    for i in 0..32 {
        if a.x[i] != b.x[i] {
            d.push(format!("x{i}: gpu {:#x} cpu {:#x}", a.x[i], b.x[i]));
        }
    }
    for i in 0..32 {
        if a.v[i] != b.v[i] {
            d.push(format!("v{i}: gpu {:#x} cpu {:#x}", a.v[i], b.v[i]));
        }
    }
    if a.pc != b.pc {
        d.push(format!("pc: gpu {:#x} cpu {:#x}", a.pc, b.pc));
    }
    if a.nzcv != b.nzcv {
        d.push(format!("nzcv: gpu {:#x} cpu {:#x}", a.nzcv, b.nzcv));
    }
    if a.retired != b.retired {
        d.push(format!("retired: gpu {} cpu {}", a.retired, b.retired));
    }
    (!d.is_empty()).then(|| d.join("\n"))
}

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
    let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let image = Arc::new(Image::load(&args[0]).unwrap());
    let engine = open_engine();
    let mut slice: u64 = std::env::var("LOCKSTEP_SLICE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    if std::env::var_os("LOCKSTEP_RUN").is_some() {
        let mut b = engine.batch(vec![spawn(&image, &argv)], None).unwrap();
        b.run(&|_| {}).unwrap();
        let r = b.results();
        println!(
            "ran: {:?} {} instructions, {:?}",
            r[0].exit,
            r[0].instructions,
            String::from_utf8_lossy(&r[0].stdout)
        );
        return;
    }
    'again: loop {
        let mut b = engine.batch(vec![spawn(&image, &argv)], None).unwrap();
        let mut c = spawn(&image, &argv);
        let mut last_good = 0u64;
        let mut last_pc = 0u64;
        loop {
            let stops = b.execute(slice).unwrap();
            if stops.is_empty() {
                println!("the lane finished; no difference found");
                return;
            }
            let svc: Vec<u32> = stops
                .iter()
                .filter(|s| s.1 != armada_gpu::LaneStop::Slice)
                .map(|s| s.0 as u32)
                .collect();
            if !svc.is_empty() {
                b.service(&svc).unwrap();
            }
            if b.active() == 0 {
                println!("the lane finished; no difference found");
                return;
            }
            let st = b.device_state(0).unwrap();
            cpu_to(&mut c, st.retired);
            if let Some(d) = diff(&st, &c.program.state) {
                println!(
                    "difference after {} instructions (last agreement at {last_good}), stop {:?}:\n{d}",
                    st.retired, stops[0].1
                );
                let mut w = [0u8; 4];
                if c.program.mem.fetch_bytes(last_pc, &mut w).is_ok() {
                    let word = u32::from_le_bytes(w);
                    let u = armada_isa::decode(word, last_pc);
                    println!(
                        "instruction at {last_pc:#x}: {word:#010x} {} {:?}",
                        armada_isa::ops::name(u.op),
                        u
                    );
                }
                if slice > 1 {
                    slice = 1;
                    println!("-- again with a slice of 1");
                    continue 'again;
                }
                return;
            }
            last_good = st.retired;
            last_pc = st.pc;
        }
    }
}
