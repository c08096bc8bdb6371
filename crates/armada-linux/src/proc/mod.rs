//! Processes and their tasks: the lane's process table, clone and fork, execve (and
//! `--host-exec`), futexes,
//! credentials, and process and system information.

pub mod clone;
pub(crate) mod creds;
pub mod exec;
pub mod fork;
pub(crate) mod futex;
pub(crate) mod hostexec;
pub mod sys;
pub mod table;
pub mod task;
