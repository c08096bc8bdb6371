//! Guest memory as Linux manages it: the layout (image, heap, mmap area, stack), brk, mmap
//! and its relatives, and the pages of privately mapped files.

pub(crate) mod filepages;
pub mod mmap;
