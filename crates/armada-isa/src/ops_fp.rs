//! FP and AdvSIMD micro-op numbers (range starting at `ops::FP_BASE`).

crate::ops::define_ops!(FpOps, 0x400, [FP_PLACEHOLDER,]);
