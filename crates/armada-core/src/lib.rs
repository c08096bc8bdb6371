//! armada-core: guest memory, the CPU engine, the ELF loader and the Linux syscall layer.

pub mod cpu;
pub mod memory;
pub mod state;
