//! armada-core: the CPU engine (the interpreter, the ELF loader, a process's image, the lane
//! runner, batches and snapshots). The guest machine's state and the Linux layer are crates of
//! their own, re-exported here under their old paths.

pub use armada_linux as linux;
pub use armada_machine::{memory, state};

pub mod batch;
pub mod coverage;
pub mod cpu;
pub mod elf;
pub mod process;
pub mod runner;
pub mod snapshot;
