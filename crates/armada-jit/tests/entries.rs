//! A unit is entered at the head of one of its loops (its other entries: see
//! `Unit::entries`) rather than a second unit being made there, and runs from there as the
//! interpreter does, whole runs and runs cut off by every budget.
//!
//! Alone in its process: it counts the units the process made.

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use armada_jit::Jit;
use std::sync::Arc;

const CODE: u64 = 0x10000;

/// An outer loop (from E) round an inner one (from L), made a unit at E's second reach.
/// Its branch to X has not run then, so the unit leaves there; X goes back to L, which
/// the interpreter counts as an entry: its second reach enters the unit at L.
const PROGRAM: [u32; 11] = [
    0xd280_0041, // E: mov x1, #2
    0xf100_0421, // L: subs x1, x1, #1
    0x54ff_ffe1, //    b.ne L
    0xf100_105f, //    cmp x2, #4
    0x5400_0080, //    b.eq X
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ff41, //    b.ne E
    0xd420_0000, //    brk #0
    0xd100_0442, // X: sub x2, x2, #1
    0xd280_0061, //    mov x1, #3
    0x17ff_fff7, //    b L
];

fn run(tier: Option<Arc<dyn Tier>>, budget: u64) -> (CpuState, Stop) {
    let mut mem = AddressSpace::new();
    // code no lane can write: its units are shared, and so entered at their loops' heads
    mem.map(CODE, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = PROGRAM.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    st.x[2] = 10;
    let mut code = CodeCache::new();
    code.set_tier(tier);
    let stop = cpu::run(&mut st, &mut mem, &mut code, budget);
    (st, stop)
}

fn same(a: &(CpuState, Stop), b: &(CpuState, Stop), what: &str) {
    assert_eq!(a.1, b.1, "{what}: stop");
    assert_eq!(a.0.pc, b.0.pc, "{what}: pc");
    assert_eq!(a.0.retired, b.0.retired, "{what}: retired");
    assert_eq!(a.0.nzcv, b.0.nzcv, "{what}: nzcv");
    assert_eq!(a.0.x[..32], b.0.x[..32], "{what}: registers");
}

#[test]
fn a_loop_head_inside_a_unit_enters_that_unit() {
    std::env::set_var("ARMADA_JIT_VERIFY", "1");
    let jit = || -> Arc<dyn Tier> { Jit::with_options(2, true, false) };
    let whole = run(None, u64::MAX);
    assert_eq!(whole.1, Stop::Breakpoint(0));
    let t = run(Some(jit()), u64::MAX);
    same(&whole, &t, "whole run");
    // one unit, from E: L, reached from X, entered it
    assert_eq!(armada_jit::stats().0, 1, "units made");
    assert!(armada_jit::translated_instructions() > whole.0.retired / 2);
    for budget in 1..=whole.0.retired {
        same(
            &run(None, budget),
            &run(Some(jit()), budget),
            &format!("budget {budget}"),
        );
    }
}
