//! The quick tier under the translation tier: a loop runs as quick blocks until a block has
//! run its count out, then leaves for its unit in the middle of the loop, and from there
//! runs translated; every stop, register, flag and count stays the interpreter's, for the
//! whole run and for runs cut off by every budget (the cut landing before, at and after the
//! tier-up). The blocks enter the unit themselves, without the dispatcher. And a run that
//! resumes mid-block after each short budget makes no unit there.
//!
//! Alone in its process, its tests one at a time ([`ONE_AT_A_TIME`]): they count the units
//! the process made and the instructions each tier ran.

mod common;

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use armada_jit::{Jit, TierUp};
use common::{same, End};
use std::sync::Arc;

/// Held by each test: the counts are the process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const CODE: u64 = 0x10000;
const DATA: u64 = 0x40000;

/// A loop over a buffer (a load, a store, flags, a counted branch back) inside an outer
/// loop that calls a leaf function, then a breakpoint.
const PROGRAM: [u32; 14] = [
    0xd280_0142, //    mov x2, #10
    0xd280_0c81, // O: mov x1, #100
    0xaa1b_03e3, //    mov x3, x27
    0xf940_0064, // L: ldr x4, [x3]
    0x8b01_0084, //    add x4, x4, x1
    0xf800_8464, //    str x4, [x3], #8
    0xf100_0421, //    subs x1, x1, #1
    0x54ff_ff81, //    b.ne L
    0x9400_0004, //    bl F
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_fee1, //    b.ne O
    0xd420_0000, //    brk #0
    0x9100_0400, // F: add x0, x0, #1
    0xd65f_03c0, //    ret
];

/// The program loaded, at its start: its state and memory.
fn load() -> (CpuState, AddressSpace) {
    load_program(&PROGRAM)
}

/// `program` loaded at [`CODE`], at its start, x27 the data page's address.
fn load_program(program: &[u32]) -> (CpuState, AddressSpace) {
    let mut mem = AddressSpace::new();
    mem.map(CODE, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = program.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    mem.map(DATA, 0x1000, Perm::RW).unwrap();
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    st.x[27] = DATA;
    (st, mem)
}

fn data(mem: &mut AddressSpace) -> Vec<u8> {
    let mut data = vec![0u8; 0x1000];
    mem.read_bytes(DATA, &mut data).unwrap();
    data
}

fn run(tier: Option<Arc<dyn Tier>>, budget: u64) -> End {
    run_program(&PROGRAM, tier, budget)
}

fn run_program(program: &[u32], tier: Option<Arc<dyn Tier>>, budget: u64) -> End {
    let (mut st, mut mem) = load_program(program);
    let mut code = CodeCache::new();
    code.set_tier(tier);
    let stop = cpu::run(&mut st, &mut mem, &mut code, budget);
    let data = data(&mut mem);
    (st, stop, data)
}

/// Quick blocks at the 2nd reach, units asked for by a closed loop's 5th run and any other
/// block's 7th (made before the lane goes on).
fn tiered() -> Option<Arc<dyn Tier>> {
    let t = TierUp {
        loops: 5,
        blocks: 7,
    };
    cfg!(target_arch = "x86_64").then(|| Jit::tiered(24, true, false, Some(t)) as Arc<dyn Tier>)
}

#[test]
fn a_hot_quick_block_leaves_for_its_unit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("ARMADA_JIT_VERIFY", "1");
    let Some(tier) = tiered() else {
        return;
    };
    let whole = run(None, u64::MAX);
    assert_eq!(whole.1, Stop::Breakpoint(0));
    let quick0 = armada_jit::quick::stats().3;
    let translated0 = armada_jit::translated_instructions();
    let entries0 = armada_jit::quick::unit_entries();
    let t = run(Some(tier), u64::MAX);
    same(&whole, &t, "whole run");
    let quick = armada_jit::quick::stats().3 - quick0;
    let translated = armada_jit::translated_instructions() - translated0;
    // the outer loop's blocks enter the inner loop's unit themselves (each turn of the
    // outer loop but the first few)
    let entries = armada_jit::quick::unit_entries() - entries0;
    assert!(entries >= 5, "quick blocks entered units {entries} times");
    // the loop's first turns ran as quick blocks, the rest in its unit
    assert!(quick > 0, "no instruction ran in a quick block");
    assert!(
        translated > whole.0.retired / 2,
        "{translated} of {} instructions ran translated",
        whole.0.retired
    );
    assert!(quick + translated <= whole.0.retired);
    // every budget through the first tier-up, then every 37th (each run makes its units
    // again: a fresh code cache shares nothing)
    let budgets = (1..=200).chain((201..=whole.0.retired).step_by(37));
    for budget in budgets {
        same(
            &run(None, budget),
            &run(tiered(), budget),
            &format!("budget {budget}"),
        );
    }
}

/// One lane run in turns of `slice` instructions (as the scheduler runs a thread among
/// others): each turn resumes where the last ended, anywhere in a block.
fn run_sliced(slice: u64) -> End {
    let (mut st, mut mem) = load();
    let mut code = CodeCache::new();
    code.set_tier(tiered());
    let stop = loop {
        match cpu::run(&mut st, &mut mem, &mut code, slice) {
            Stop::Budget => continue,
            stop => break stop,
        }
    };
    let data = data(&mut mem);
    (st, stop, data)
}

#[test]
fn a_run_resumed_mid_block_makes_no_unit_there() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if tiered().is_none() {
        return;
    }
    let whole = run(None, u64::MAX);
    for slice in [7, 13, 50] {
        let units = armada_jit::stats().0;
        let t = run_sliced(slice);
        same(&whole, &t, &format!("turns of {slice}"));
        // units at the blocks' heads (the outer loop's, the inner loop's, the call's and
        // the return's), not at the PCs the turns ended on
        let made = armada_jit::stats().0 - units;
        assert!(made <= 6, "{made} units made in turns of {slice}");
    }
}

/// A loop of 2,000 calls whose return lands on a closed loop's head that never asks for its
/// unit (its count is far off): the blocks after it enter their units, which run 4 to 6
/// instructions and come back to that head's block each time.
const SMALL_UNITS: [u32; 10] = [
    0xd280_fa02, //    mov x2, #2000
    0x9400_0006, // O: bl F
    0xf100_0421, // R: subs x1, x1, #1
    0x54ff_ffe1, //    b.ne R
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ff81, //    b.ne O
    0xd420_0000, //    brk #0
    0xd280_0021, // F: mov x1, #1
    0x9100_0400, //    add x0, x0, #1
    0xd65f_03c0, //    ret
];

#[test]
fn units_that_run_a_few_instructions_an_entry_are_given_back_to_blocks() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("ARMADA_JIT_VERIFY", "1");
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let tier = || {
        let t = TierUp {
            loops: 1_000_000,
            blocks: 7,
        };
        Some(Jit::tiered(24, true, false, Some(t)) as Arc<dyn Tier>)
    };
    let whole = run_program(&SMALL_UNITS, None, u64::MAX);
    assert_eq!(whole.1, Stop::Breakpoint(0));
    let small0 = armada_jit::rounds().small;
    let entries0 = armada_jit::quick::unit_entries();
    let t = run_program(&SMALL_UNITS, tier(), u64::MAX);
    same(&whole, &t, "whole run");
    let small = armada_jit::rounds().small - small0;
    let entries = armada_jit::quick::unit_entries() - entries0;
    // each block's unit judged after 256 entries of 4-6 instructions, then the blocks run
    // on their own (each of the 2,000 turns entered a unit before)
    assert!(
        small >= 1,
        "no block gave its unit back ({entries} entries)"
    );
    assert!(entries < 1500, "blocks entered units {entries} times");
    for budget in (1..=whole.0.retired).step_by(331) {
        same(
            &run_program(&SMALL_UNITS, None, budget),
            &run_program(&SMALL_UNITS, tier(), budget),
            &format!("budget {budget}"),
        );
    }
}
