//! armada-core: guest memory, the CPU engine, the ELF loader and the Linux syscall layer.

pub mod batch;
pub mod cpu;
pub mod elf;
pub mod linux;
pub mod memory;
pub mod process;
pub mod runner;
pub mod state;
