//! A SIGSEGV handler that another library installs after the tier's own (Python's Ray did)
//! is put behind the tier's again before guarded code runs: the guarded window's first
//! touches of pages are host faults, and the other handler (here one that ends the
//! process with status 86) must never see them.
//!
//! Alone in its process: it replaces the process's SIGSEGV handler.

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::{AddressSpace, Perm};
use armada_core::state::{CpuState, Stop};
use armada_jit::Jit;
use std::sync::Arc;

const CODE: u64 = 0x10000;
const DATA: u64 = 0x100_0000;
const PAGES: u64 = 64;

/// mov x2, #0; 1: ldr x1, [x27, x2]; add x0, x0, x1; add x2, x2, #1, lsl #12;
/// subs x28, x28, #1; b.ne 1b; brk #0 (a word read from each of PAGES pages)
const PROGRAM: [u32; 7] = [
    0xd280_0002,
    0xf862_6b61,
    0x8b01_0000,
    0x9140_0442,
    0xf100_079c,
    0x54ff_ff81,
    0xd420_0000,
];

/// Runs the program on the tier in a new address space with a guarded window: x0 at its end.
fn run(tier: &Arc<dyn Tier>) -> (Stop, u64, bool) {
    armada_core::memory::set_windows(true);
    let mut mem = AddressSpace::new();
    mem.set_guards(true);
    mem.map(CODE, 0x1000, Perm::RX).unwrap();
    let bytes: Vec<u8> = PROGRAM.iter().flat_map(|w| w.to_le_bytes()).collect();
    mem.poke_bytes(CODE, &bytes).unwrap();
    mem.map(DATA, PAGES << 12, Perm::RW).unwrap();
    for p in 0..PAGES {
        mem.write_u64(DATA + (p << 12), p + 1).unwrap();
    }
    let mut st = CpuState {
        pc: CODE,
        ..Default::default()
    };
    st.x[27] = DATA;
    st.x[28] = PAGES;
    let mut code = CodeCache::new();
    code.set_tier(Some(tier.clone()));
    let stop = cpu::run(&mut st, &mut mem, &mut code, u64::MAX);
    (stop, st.x[0], mem.guarded())
}

extern "C" fn foreign(_: libc::c_int) {
    // SAFETY: ends the process at once, as a crash reporter would.
    unsafe { libc::_exit(86) }
}

#[test]
fn a_handler_installed_after_the_tiers_is_put_behind_it() {
    let tier: Arc<dyn Tier> = Jit::with_options(1, true, false);
    let want = (1..=PAGES).sum::<u64>();
    let (stop, x0, guarded) = run(&tier);
    assert_eq!((stop, x0), (Stop::Breakpoint(0), want));
    if !guarded {
        // (no guarded windows on this host: nothing to try)
        return;
    }
    // SAFETY: installs a plain handler for SIGSEGV, as another library would.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = foreign as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
    let (stop, x0, _) = run(&tier);
    assert_eq!((stop, x0), (Stop::Breakpoint(0), want));
}
