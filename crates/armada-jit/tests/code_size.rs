//! Host code grows in proportion to the guest code translated. Go's P-521 field arithmetic
//! (long blocks of ADCS chains and stores to the stack) once made 2.7 MB of host code, in
//! 3.9 s, for one 512-instruction unit: each way out of each store computed again every
//! register written since the block began. Its own test binary: the code size counter is
//! the process's.

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use armada_jit::Jit;

const CODE: u64 = 0x10000;
const DATA: u64 = 0x40000;

/// `pairs` of `adcs xD, x9, x10; str xD, [x27, #8 * k]` (D cycling over x11..x18), then a
/// loop back `iters` times and BRK: one block that sets and reads the carry all along.
fn carry_chain(pairs: u32) -> Vec<u32> {
    let mut w = Vec::new();
    for k in 0..pairs {
        let d = 11 + k % 8;
        w.push(0xba0a_0120 | d); // adcs xD, x9, x10
        w.push(0xf900_0360 | (k % 512) << 10 | d); // str xD, [x27, #8k]
    }
    w.push(0xf100_079c); // subs x28, x28, #1
    let back = -(w.len() as i32) & 0x7ffff;
    w.push(0x5400_0001 | (back as u32) << 5); // b.ne
    w.push(0xd420_0000); // brk #0
    w
}

fn run(words: &[u32], jit: bool) -> (CpuState, Stop, Vec<u8>) {
    let mut mem = AddressSpace::new();
    mem.map(CODE, 0x2000, Perm::RX).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    mem.map(DATA, 0x1000, Perm::RW).unwrap();
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    st.x[9] = u64::MAX - 3;
    st.x[10] = 2;
    st.x[27] = DATA;
    st.x[28] = 5;
    st.nzcv = 1 << 29;
    let mut code = CodeCache::new();
    if jit {
        code.set_tier(Some(Jit::with_options(1, true, false)));
    }
    let stop = cpu::run(&mut st, &mut mem, &mut code, u64::MAX);
    let mut data = vec![0u8; 0x1000];
    mem.read_bytes(DATA, &mut data).unwrap();
    (st, stop, data)
}

#[test]
fn long_blocks_of_carries_and_stores_stay_small() {
    let words = carry_chain(250);
    let (ist, istop, idata) = run(&words, false);
    let (tst, tstop, tdata) = run(&words, true);
    assert_eq!(istop, tstop);
    assert_eq!(ist.x, tst.x);
    assert_eq!(ist.nzcv, tst.nzcv);
    assert_eq!(ist.retired, tst.retired);
    assert!(idata == tdata, "memory differs");
    let (units, insns, _) = armada_jit::stats();
    let bytes = armada_jit::code_bytes();
    assert!(
        units >= 1 && insns >= 500,
        "{units} units of {insns} instructions"
    );
    // about 200 bytes an instruction now; 4-5 KB when it grew with the block's length
    assert!(
        bytes < 1000 * insns,
        "{bytes} bytes of host code for {insns} guest instructions"
    );
}
