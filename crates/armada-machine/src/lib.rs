//! armada-machine: one guest machine's state, which every engine and the Linux layer share:
//! its address space ([`memory`]) and its registers ([`state`]).

pub mod memory;
pub mod state;
