//! What the tests of one program run on two tiers share: the run's end (state, stop and
//! the data it wrote) and their comparison.

use armada_core::state::{CpuState, Stop};

/// A run's end: its state, its stop and the bytes of its data area.
pub type End = (CpuState, Stop, Vec<u8>);

/// Asserts that two runs ended alike: stop, PC, count, NZCV, general registers and data.
pub fn same(a: &End, b: &End, what: &str) {
    assert_eq!(a.1, b.1, "{what}: stop");
    assert_eq!(a.0.pc, b.0.pc, "{what}: pc");
    assert_eq!(a.0.retired, b.0.retired, "{what}: retired");
    assert_eq!(a.0.nzcv, b.0.nzcv, "{what}: nzcv");
    assert_eq!(a.0.x[..32], b.0.x[..32], "{what}: registers");
    assert!(a.2 == b.2, "{what}: memory");
}
