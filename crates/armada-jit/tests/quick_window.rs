//! Quick blocks on a guarded window (`quick::emit`, `guard::QuickRun`): their general loads
//! and stores go to `window + address` with no TLB lookup, and a host fault there shows the
//! page or sends the access to its slow path. Each program below faults in the guest from
//! inside a hot block (a store walking off its page, a pair store across into an unmapped
//! page, a pair load past the window, Q and D register pairs across pages), and must stop
//! exactly as the interpreter does: stop, PC, count, registers, flags and every byte of
//! the data page.

mod common;

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use common::End;
use std::sync::Arc;

const CODE: u64 = 0x10000;
const DATA: u64 = 0x40000;

/// A store walks off the data page in a hot block (one turn in 512 past its end).
const STORE_OFF_PAGE: [u32; 8] = [
    0xd280_4b02, //    mov x2, #600
    0xaa1b_03e3, //    mov x3, x27
    0xf940_0064, // 1: ldr x4, [x3]
    0x8b02_0084, //    add x4, x4, x2
    0xf800_8464, //    str x4, [x3], #8
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ff81, //    b.ne 1b
    0xd420_0000, //    brk #0
];

/// Pairs at 8 + 16k: the one at 0xff8 crosses into the unmapped page, and must leave its
/// first half unwritten, as the interpreter's access does.
const PAIR_ACROSS: [u32; 8] = [
    0xd280_4b02, //    mov x2, #600
    0x9100_2363, //    add x3, x27, #8
    0xd280_00e5, //    mov x5, #7
    0x9100_0c44, // 2: add x4, x2, #3
    0xa881_1464, //    stp x4, x5, [x3], #16
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ffa1, //    b.ne 2b
    0xd420_0000, //    brk #0
];

/// A pair load from 2^40, past the window, on the hot loop's last turn.
const PAST_WINDOW: [u32; 9] = [
    0xd280_0282, //    mov x2, #20
    0xd2c0_2006, //    mov x6, #0x10000000000
    0xf100_045f, // 3: cmp x2, #1
    0x9a9b_00c3, //    csel x3, x6, x27, eq
    0xa940_1464, //    ldp x4, x5, [x3]
    0x8b04_00e7, //    add x7, x7, x4
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ff61, //    b.ne 3b
    0xd420_0000, //    brk #0
];

/// Q register pairs at 16 + 32k: the one at 0xff0 crosses into the unmapped page.
const Q_PAIR_ACROSS: [u32; 8] = [
    0xd280_4b02, //    mov x2, #600
    0x9100_4363, //    add x3, x27, #16
    0x4f00_e420, //    movi v0.16b, #1
    0x4f00_e441, //    movi v1.16b, #2
    0xac81_0460, // 4: stp q0, q1, [x3], #32
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ffc1, //    b.ne 4b
    0xd420_0000, //    brk #0
];

/// D register pairs at 8 + 16k, each read back as a Q register: the pair at 0xff8
/// crosses into the unmapped page.
const D_PAIR_ACROSS: [u32; 9] = [
    0xd280_4b02, //    mov x2, #600
    0x9100_2363, //    add x3, x27, #8
    0x4f00_e460, //    movi v0.16b, #3
    0x4f00_e481, //    movi v1.16b, #4
    0x6c81_0460, // 5: stp d0, d1, [x3], #16
    0x3cdf_0062, //    ldur q2, [x3, #-16]
    0xf100_0442, //    subs x2, x2, #1
    0x54ff_ffa1, //    b.ne 5b
    0xd420_0000, //    brk #0
];

/// `program` at [`CODE`], a data page at [`DATA`] (x27) with nothing mapped after it; with
/// `window`, the address space made its window first (as the translation tier's
/// dispatcher does), so the quick tier's blocks are made for it.
fn run(program: &[u32], tier: Option<Arc<dyn Tier>>, window: bool) -> End {
    let mut mem = AddressSpace::new();
    mem.map(CODE, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = program.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    mem.map(DATA, 0x1000, Perm::RW).unwrap();
    if window {
        mem.tlb_view();
    }
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    st.x[27] = DATA;
    let mut code = CodeCache::new();
    code.set_tier(tier);
    let stop = cpu::run(&mut st, &mut mem, &mut code, u64::MAX);
    let mut data = vec![0u8; 0x1000];
    mem.read_bytes(DATA, &mut data).unwrap();
    (st, stop, data)
}

/// [`common::same`], and the vector registers too.
fn same(a: &End, b: &End, what: &str) {
    common::same(a, b, what);
    assert_eq!(a.0.v, b.0.v, "{what}: vector registers");
}

#[test]
fn guest_faults_in_blocks_on_a_guarded_window_stop_as_the_interpreter() {
    let Some(quick) = armada_jit::quick::Quick::new() else {
        return; // (no code generator for this host)
    };
    if !armada_core::memory::guards_possible() {
        // (ARMADA_GUARDS=0 or ARMADA_WINDOWS=0 in the environment: nothing to test)
        eprintln!("guarded windows are off in this process");
        return;
    }
    // (a tier's `Arc`, as the CPU engine holds it)
    let quick: Arc<dyn Tier> = quick;
    for (name, program) in [
        ("a store off its page", &STORE_OFF_PAGE[..]),
        ("a pair across pages", &PAIR_ACROSS[..]),
        ("a pair past the window", &PAST_WINDOW[..]),
        ("a Q pair across pages", &Q_PAIR_ACROSS[..]),
        ("a D pair across pages", &D_PAIR_ACROSS[..]),
    ] {
        let interp = run(program, None, false);
        assert!(matches!(interp.1, Stop::Fault(_)), "{name}: {:?}", interp.1);
        let ran0 = armada_jit::quick::stats().3;
        let slow0 = armada_jit::quick::window_slow_paths();
        let windowed = run(program, Some(quick.clone()), true);
        same(&interp, &windowed, name);
        assert!(
            armada_jit::quick::stats().3 > ran0,
            "{name}: no quick block ran"
        );
        let slow = armada_jit::quick::window_slow_paths() - slow0;
        if !matches!(name, "a pair past the window" | "a Q pair across pages") {
            // (an address past the window, and a 32-byte store across a page, are sent to
            // the slow path before any access)
            assert!(slow >= 1, "{name}: no host fault went to a slow path");
        }
        // and without the window, the TLB's way, the same
        same(&interp, &run(program, Some(quick.clone()), false), name);
    }
}
