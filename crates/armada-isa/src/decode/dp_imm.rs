use super::Encoding;

pub(super) const TABLE: &[Encoding] = &[];
