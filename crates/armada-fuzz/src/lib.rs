//! Coverage-guided fuzzing of AArch64 Linux programs on armada's engines (`armada fuzz`).
//!
//! - [`target`]: the program and one execution of it (a lane from the snapshot, or from
//!   the entry), with edge coverage (`armada_core::coverage`) and the crash's key.
//! - [`mutate`]: LibAFL's mutators (havoc, splice, dictionary).
//! - [`corpus`]: the corpus and crashes directories, dictionaries.
//! - [`afl`]: AFL++'s output directory (`-o`), its stats, plot data and instances.
//! - [`output`]: which of the two a run writes.
//! - [`plot`]: `plot.html`, the run's figures as a picture.
//! - [`executor`]: a round of inputs on the CPU engine or a GPU engine.
//! - [`fuzzer`]: the loop, one batch of inputs per round.
//! - [`cmin`]: corpus minimization (`--cmin`).

pub mod afl;
pub mod cmin;
pub mod corpus;
pub mod executor;
pub mod fuzzer;
pub mod mutate;
pub mod output;
pub mod plot;
pub mod target;

pub use fuzzer::{fuzz, FuzzOptions, FuzzStats};
pub use output::AflOptions;
pub use target::{input_route, snapshot_point, InputKind, Outcome, Target, TargetSpec, Via};
