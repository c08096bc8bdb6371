use armada_core::batch::{BatchSpec, LaneSpec};
use armada_core::elf::Image;
use armada_core::linux::LinuxConfig;
use armada_core::snapshot::Point;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

fn main() {
    sizes();
    let prog = std::env::args().nth(1).unwrap();
    let n: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let image = Image::load(std::path::Path::new(&prog)).unwrap();
    let lanes = (0..n)
        .map(|i| LaneSpec {
            argv: vec![prog.as_bytes().to_vec()],
            env: vec![b"A=B".to_vec()].into(),
            stdin: format!("input {i:08}").into_bytes(),
            root: None,
        })
        .collect();
    let config = LinuxConfig {
        root: None,
        sysroot: None,
        strace: false,
        deterministic: true,
        seed: 0,
        exe_host_path: prog.clone().into(),
        exe_guest_path: prog.as_bytes().to_vec(),
        max_processes: None,
        net: Default::default(),
    };
    let mut spec = BatchSpec {
        image: Arc::new(image),
        config,
        lanes,
        lane_memory: None,
        max_instructions: None,
        snapshot: None,
        coverage: false,
        drop_output: false,
    };
    spec.take_snapshot(Point::Symbol("main".into())).unwrap();
    let r0 = rss();
    ALLOCS.store(0, std::sync::atomic::Ordering::Relaxed);
    BYTES.store(0, std::sync::atomic::Ordering::Relaxed);
    for h in &HIST {
        h.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    let t = Instant::now();
    let v: Vec<_> = (0..n)
        .into_par_iter()
        .map(|i| spec.spawn(i).unwrap())
        .collect();
    let spawn = t.elapsed().as_secs_f64();
    let r1 = rss();
    report(n);
    let t = Instant::now();
    v.into_par_iter().for_each(drop);
    let dropt = t.elapsed().as_secs_f64();
    eprintln!(
        "{n} lanes: spawn {spawn:.3} s ({:.1} us a lane-thread), {:.1} KB a lane, drop {dropt:.3} s",
        spawn * 1e6 * rayon::current_num_threads() as f64 / n as f64,
        (r1 - r0) as f64 / n as f64 / 1024.0
    );
}
#[allow(dead_code)]
fn sizes() {
    eprintln!(
        "Lane {} Program {} Process {} AddressSpace {} CpuState {}",
        std::mem::size_of::<armada_core::runner::Lane>(),
        std::mem::size_of::<armada_core::process::Program>(),
        std::mem::size_of::<armada_core::linux::Process>(),
        std::mem::size_of::<armada_core::memory::AddressSpace>(),
        std::mem::size_of::<armada_core::state::CpuState>()
    );
}
struct Counting;
static ALLOCS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static HIST: [std::sync::atomic::AtomicUsize; 20] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; 20];
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        BYTES.fetch_add(l.size(), std::sync::atomic::Ordering::Relaxed);
        HIST[(usize::BITS - l.size().leading_zeros()) as usize % 20]
            .fetch_add(l.size(), std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;
pub fn report(n: usize) {
    eprintln!(
        "allocs {} bytes {} per lane",
        ALLOCS.load(std::sync::atomic::Ordering::Relaxed) / n,
        BYTES.load(std::sync::atomic::Ordering::Relaxed) / n
    );
    for (i, h) in HIST.iter().enumerate() {
        let v = h.load(std::sync::atomic::Ordering::Relaxed);
        if v > 0 {
            eprintln!("  < {} B: {} B per lane", 1usize << i, v / n);
        }
    }
}
