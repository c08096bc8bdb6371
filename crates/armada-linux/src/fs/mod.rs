//! Files and file systems: guest paths and the file syscalls that go to the host (open,
//! directories, links, modes), stat, extended attributes, the lock calls, the paths armada
//! answers itself (/proc, /sys), inotify, and the fuzz input file.

pub mod files;
pub(crate) mod flock;
pub(crate) mod input;
pub(crate) mod notify;
pub mod path;
pub(crate) mod procfs;
pub mod stat;
pub(crate) mod sysfiles;
pub(crate) mod xattr;
