//! armada-core: guest memory, the CPU engine, the ELF loader and the Linux syscall layer.

pub mod batch;
pub mod coverage;
pub mod cpu;
pub mod elf;
pub mod linux;
pub mod memory;
pub mod process;
pub mod runner;
pub mod snapshot;
pub mod state;
