//! A block longer than `translate::LONG_BLOCK` micro-ops forgets its registers' values at
//! each access and loads them from the state again. Its loop here interleaves loads and
//! stores of three sizes with arithmetic on registers that live across them, and walks
//! over a page boundary, so an access in the middle of the block misses the TLB and its
//! helper fills it (the block's kept TLB view is loaded again after it). The tier must
//! match the interpreter: registers, flags, count and memory, on the whole run and on runs
//! cut off by budgets throughout it.
//!
//! Alone in its process: it counts the units the process made.

mod common;

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use armada_jit::Jit;
use common::{same, End};
use std::sync::Arc;

const CODE: u64 = 0x10000;
const DATA: u64 = 0x20000;
const DATA_LEN: u64 = 0x2000;

/// `mov x1, #0x20f00; mov x6, #40; mov x4, #1; mov x5, #3`, then a loop of 67
/// instructions: eight times `ldr x3, [x1, #o]; add x4, x4, x3; str x4, [x1, #o+32];
/// eor x5, x5, x4, lsl #3; ldrb w7, [x1, #o+3]; add x5, x5, x7; strh w5, [x1, #o+40];
/// add x4, x4, x5`, then `add x1, x1, #64; subs x6, x6, #1; b.ne`; then `brk #0`.
/// (Assembled with binutils' aarch64 `as`.)
const PROGRAM: [u32; 73] = [
    0xd2a00041, 0x913c0021, 0xd2800506, 0xd2800024, 0xd2800065, 0xf9400023, 0x8b030084, 0xf9001024,
    0xca040ca5, 0x39400c27, 0x8b0700a5, 0x79005025, 0x8b050084, 0xf9400423, 0x8b030084, 0xf9001424,
    0xca040ca5, 0x39402c27, 0x8b0700a5, 0x79006025, 0x8b050084, 0xf9400823, 0x8b030084, 0xf9001824,
    0xca040ca5, 0x39404c27, 0x8b0700a5, 0x79007025, 0x8b050084, 0xf9400c23, 0x8b030084, 0xf9001c24,
    0xca040ca5, 0x39406c27, 0x8b0700a5, 0x79008025, 0x8b050084, 0xf9400023, 0x8b030084, 0xf9001024,
    0xca040ca5, 0x39400c27, 0x8b0700a5, 0x79005025, 0x8b050084, 0xf9400423, 0x8b030084, 0xf9001424,
    0xca040ca5, 0x39402c27, 0x8b0700a5, 0x79006025, 0x8b050084, 0xf9400823, 0x8b030084, 0xf9001824,
    0xca040ca5, 0x39404c27, 0x8b0700a5, 0x79007025, 0x8b050084, 0xf9400c23, 0x8b030084, 0xf9001c24,
    0xca040ca5, 0x39406c27, 0x8b0700a5, 0x79008025, 0x8b050084, 0x91010021, 0xf10004c6, 0x54fff7c1,
    0xd4200000,
];

fn run(tier: Option<Arc<dyn Tier>>, budget: u64) -> End {
    let mut mem = AddressSpace::new();
    mem.map(CODE, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = PROGRAM.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    mem.map(DATA, DATA_LEN, Perm::RW).unwrap();
    // something other than zeros for the loads to find
    let seed: Vec<u8> = (0..DATA_LEN as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    mem.poke_bytes(DATA, &seed).unwrap();
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    let mut code = CodeCache::new();
    code.set_tier(tier);
    let stop = cpu::run(&mut st, &mut mem, &mut code, budget);
    let mut data = vec![0u8; DATA_LEN as usize];
    mem.read_bytes(DATA, &mut data).unwrap();
    (st, stop, data)
}

#[test]
fn a_long_block_reloads_its_registers_after_each_access() {
    std::env::set_var("ARMADA_JIT_VERIFY", "1");
    let jit = || -> Arc<dyn Tier> { Jit::with_options(2, true, false) };
    let whole = run(None, u64::MAX);
    assert_eq!(whole.1, Stop::Breakpoint(0));
    assert_eq!(whole.0.retired, 4 + 40 * 67 + 1);
    let t = run(Some(jit()), u64::MAX);
    same(&whole, &t, "whole run");
    // the loop is one unit, and ran translated from its second pass
    assert_eq!(armada_jit::stats().0, 1, "units made");
    assert!(armada_jit::translated_instructions() > whole.0.retired / 2);
    for budget in (1..whole.0.retired).step_by(13) {
        same(
            &run(None, budget),
            &run(Some(jit()), budget),
            &format!("budget {budget}"),
        );
    }
}
