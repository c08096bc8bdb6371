//! Fuzz the decoder and the CPU engine: any sequence of instruction words is decoded and run
//! for a bounded number of steps in a small address space. Whatever the words do (wild
//! loads, undefined encodings, self-modifying stores), the host must not panic.
//!
//!     cargo +nightly fuzz run decode_run
#![no_main]

use armada_core::cpu::{self, CodeCache};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::CpuState;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut mem = AddressSpace::new();
    mem.map(0x10000, 0x10000, Perm::RWX).unwrap();
    let code = &data[..data.len().min(0x8000)];
    mem.poke_bytes(0x10000, code).unwrap();
    let mut st = CpuState {
        pc: 0x10000,
        ..Default::default()
    };
    for (i, r) in st.x.iter_mut().take(31).enumerate() {
        *r = 0x10000 + (i as u64) * 0x100;
    }
    st.x[31] = 0x1f000;
    let mut cache = CodeCache::new();
    // Several runs, as the host would resume after each stop.
    for _ in 0..8 {
        let _ = cpu::run(&mut st, &mut mem, &mut cache, 2000);
        st.pc = st.pc.wrapping_add(4) & 0x1fffc;
    }
});
