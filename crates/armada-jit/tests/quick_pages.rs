//! A lane's quick blocks when a code page it made them from goes and comes back
//! (`LaneQuick::revalidate` and `settle`): a page mapped again with other code gets new
//! blocks, never the old ones, and a page mapped again from the same buffer (a recycled
//! lane's library, mapped again at its address from the same file's pages) keeps its
//! blocks, while the blocks of the pages that did not change stay throughout.

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use std::sync::Arc;

const CALLER: u64 = 0x10000;
const CALLEE: u64 = 0x20000;
const TURNS: u64 = 1000;

/// At [`CALLER`]: 1,000 calls of the function at [`CALLEE`] (another area), then `brk`.
const LOOP: [u32; 5] = [
    0xd280_7d02, //    mov x2, #1000
    0x9400_3fff, // 1: bl CALLEE
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ffc1, //    b.ne 1b
    0xd420_0000, //    brk #0
];

/// The function at [`CALLEE`]: `add x0, x0, #k; ret`.
fn callee(k: u32) -> [u32; 2] {
    [0x9100_0000 | (k << 10), 0xd65f_03c0]
}

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Maps the callee's area again, holding `k`'s function in a new buffer.
fn new_callee(mem: &mut AddressSpace, k: u32) {
    mem.unmap(CALLEE, 0x1000).unwrap();
    mem.map(CALLEE, 0x1000, Perm::RX).unwrap();
    mem.poke_bytes(CALLEE, &words(&callee(k))).unwrap();
}

/// Runs from `pc` with x0 = 0: the stop and x0.
fn run(mem: &mut AddressSpace, code: &mut CodeCache, pc: u64) -> (Stop, u64, u64) {
    let mut st = CpuState {
        pc,
        ..Default::default()
    };
    let stop = cpu::run(&mut st, mem, code, u64::MAX);
    (stop, st.x[0], st.retired)
}

#[test]
fn blocks_of_a_page_that_went_are_dropped_or_taken_back_by_its_buffer() {
    let Some(quick) = armada_jit::quick::Quick::new() else {
        return; // (no code generator for this host)
    };
    let quick: Arc<dyn Tier> = quick;
    let mut mem = AddressSpace::new();
    mem.map(CALLER, 0x1000, Perm::RX).unwrap();
    mem.poke_bytes(CALLER, &words(&LOOP)).unwrap();
    mem.map(CALLEE, 0x1000, Perm::RX).unwrap();
    mem.poke_bytes(CALLEE, &words(&callee(3))).unwrap();
    let mut code = CodeCache::new();
    code.set_tier(Some(quick));
    let brk = Stop::Breakpoint(0);

    let (stop, x0, _) = run(&mut mem, &mut code, CALLER);
    assert_eq!((stop, x0), (brk, 3 * TURNS));
    let made = armada_jit::quick::stats().0;
    assert!(made >= 2, "the calls ran in blocks: {made} made");

    // other code in the callee's page, in a new buffer: new blocks there, the caller's kept
    new_callee(&mut mem, 5);
    let dropped = armada_jit::quick::pages_dropped();
    let (stop, x0, _) = run(&mut mem, &mut code, CALLER);
    assert_eq!((stop, x0), (brk, 5 * TURNS), "the old callee's blocks ran");
    assert_eq!(armada_jit::quick::pages_dropped(), dropped + 1);
    assert_eq!(armada_jit::quick::stats().4, 0, "every block was dropped");

    // the callee's page goes (a run that does not reach it sets its blocks aside), then
    // comes back in the same buffer: its blocks are taken back, none is made
    let buf = mem.page_data(CALLEE >> 12).unwrap().clone();
    mem.unmap(CALLEE, 0x1000).unwrap();
    let (stop, ..) = run(&mut mem, &mut code, CALLER + 16);
    assert_eq!(stop, brk);
    mem.map(CALLEE, 0x1000, Perm::RX).unwrap();
    mem.share_page(CALLEE >> 12, buf);
    let (made, dropped) = (
        armada_jit::quick::stats().0,
        armada_jit::quick::pages_dropped(),
    );
    let (stop, x0, retired) = run(&mut mem, &mut code, CALLER);
    assert_eq!((stop, x0), (brk, 5 * TURNS));
    assert_eq!(armada_jit::quick::stats().0, made, "blocks were made again");
    assert_eq!(armada_jit::quick::pages_dropped(), dropped);

    // and the interpreter agrees on the last run, count included
    let mut plain = CodeCache::new();
    plain.set_tier(None);
    assert_eq!(run(&mut mem, &mut plain, CALLER), (brk, 5 * TURNS, retired));
}
