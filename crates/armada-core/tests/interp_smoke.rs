//! Runs small hand-assembled code on the CPU engine directly, without the ELF loader.

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};

fn run_words(words: &[u32], budget: u64) -> (CpuState, Stop) {
    let mut mem = AddressSpace::new();
    mem.map(0x10000, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(0x10000, &bytes).unwrap();
    let mut st = CpuState {
        pc: 0x10000,
        ..Default::default()
    };
    let mut code = CodeCache::new();
    let stop = cpu::run(&mut st, &mut mem, &mut code, budget);
    (st, stop)
}

#[test]
fn mul_eor_loop_runs_to_svc() {
    // mov x0,#0; mov x1,#0x40000000 (then lowered); mov x2,#0x1234;
    // 1: mul x3,x1,x2; eor x2,x2,x3,lsr #7; add x0,x0,x3; add x2,x2,#1; subs x1,x1,#1; b.ne 1b; svc #0
    let mut words = vec![
        0xd2800000, 0xd2800001, 0xd2824682, 0x9b027c23, 0xca431c42, 0x8b030000, 0x91000442,
        0xf1000421, 0x54ffff61, 0xd4000001,
    ];
    // mov x1, #1000
    words[1] = 0xd2800000 | (1000 << 5) | 1;
    let (st, stop) = run_words(&words, u64::MAX);
    assert_eq!(stop, Stop::Syscall);
    // Reference computed the same way on the host.
    let (mut x0, mut x1, mut x2) = (0u64, 1000u64, 0x1234u64);
    while x1 != 0 {
        let x3 = x1.wrapping_mul(x2);
        x2 ^= x3 >> 7;
        x0 = x0.wrapping_add(x3);
        x2 = x2.wrapping_add(1);
        x1 -= 1;
    }
    assert_eq!(st.x[0], x0);
    assert_eq!(st.x[2], x2);
    assert_eq!(st.retired, 3 + 6 * 1000 + 1);
}

#[test]
fn budget_stops_exactly() {
    let words = [0xd2800000u32, 0x91000400, 0x17ffffff]; // mov x0,#0; 1: add x0,x0,#1; b 1b
    let (st, stop) = run_words(&words, 101);
    assert_eq!(stop, Stop::Budget);
    assert_eq!(st.retired, 101);
    assert_eq!(st.x[0], 50);
}

#[test]
fn undefined_word_stops_with_the_word() {
    let (st, stop) = run_words(&[0xd503201f, 0x00000000], 10);
    assert_eq!(stop, Stop::Undefined(0));
    assert_eq!(st.pc, 0x10004);
}

#[test]
fn wild_load_faults_with_the_address() {
    // mov x1, #0xdead0000 ; ldr x0, [x1]
    let (st, stop) = run_words(&[0xd2bbd5a1, 0xf9400020], 10);
    match stop {
        Stop::Fault(f) => assert_eq!(f.addr, 0xdead_0000),
        other => panic!("expected a fault, got {other:?}"),
    }
    assert_eq!(st.pc, 0x10004);
}

#[test]
#[ignore = "speed probe: cargo test --release -- --ignored --nocapture"]
fn speed_probe() {
    let mut words = vec![
        0xd2800000, 0xd2a80001, 0xd2824682, 0x9b027c23, 0xca431c42, 0x8b030000, 0x91000442,
        0xf1000421, 0x54ffff61, 0xd4000001,
    ];
    words[1] = 0xd2a80001; // mov x1, #0x4000_0000 >> ... (0x40000000)
    let t = std::time::Instant::now();
    let (st, _) = run_words(&words, 300_000_000);
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{} instructions in {s:.3}s = {:.0} M/s",
        st.retired,
        st.retired as f64 / s / 1e6
    );
}

/// The same as the `decode_run` fuzz target, on pseudo-random words, so every test run
/// exercises it: random code must never panic the host.
#[test]
fn random_code_never_panics() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        let mut mem = AddressSpace::new();
        mem.map(0x10000, 0x10000, Perm::RWX).unwrap();
        let mut bytes = Vec::with_capacity(4096);
        for _ in 0..1024 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes.extend_from_slice(&(seed as u32).to_le_bytes());
        }
        mem.poke_bytes(0x10000, &bytes).unwrap();
        let mut st = CpuState {
            pc: 0x10000,
            ..Default::default()
        };
        for (i, r) in st.x.iter_mut().take(31).enumerate() {
            *r = 0x10000 + (i as u64) * 0x100;
        }
        st.x[31] = 0x1f000;
        let mut code = CodeCache::new();
        for _ in 0..16 {
            let _ = cpu::run(&mut st, &mut mem, &mut code, 500);
            st.pc = st.pc.wrapping_add(4) & 0x1fffc;
        }
    }
}

/// A compare and B.cond fused into one dispatch still retire as two instructions, and a
/// budget that ends between them stops after the compare.
#[test]
fn fused_compare_branch_counts_both_instructions() {
    // mov x0,#0; 1: add x0,x0,#1; cmp x0,#10; b.ne 1b; svc #0
    let words = [
        0xd2800000u32,
        0x91000400,
        0xf100281f,
        0x54ffffc1,
        0xd4000001,
    ];
    let (st, stop) = run_words(&words, u64::MAX);
    assert_eq!(stop, Stop::Syscall);
    assert_eq!(st.x[0], 10);
    assert_eq!(st.retired, 1 + 3 * 10 + 1);
    // The program's instruction trace: pc of every instruction in execution order.
    let mut trace = vec![0x10000u64];
    for _ in 0..10 {
        trace.extend([0x10004, 0x10008, 0x1000c]);
    }
    trace.push(0x10010);
    for budget in 1..trace.len() as u64 {
        let (st, stop) = run_words(&words, budget);
        assert_eq!(stop, Stop::Budget, "budget {budget}");
        assert_eq!(st.retired, budget);
        assert_eq!(st.pc, trace[budget as usize], "budget {budget}");
        let adds = trace[..budget as usize]
            .iter()
            .filter(|&&p| p == 0x10004)
            .count();
        assert_eq!(st.x[0], adds as u64, "budget {budget}");
    }
}
