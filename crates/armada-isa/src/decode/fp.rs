//! Placeholder: filled in by the FP/SIMD work.
use super::Encoding;

pub(super) const TABLE: &[Encoding] = &[];
