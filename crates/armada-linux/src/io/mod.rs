//! Descriptors and the bytes through them: the fd table and its kinds of open file, the
//! lane's advisory lock table (the calls are in `fs::flock`), reading and writing (pipes
//! included), readiness (poll, select, epoll), eventfd and timerfd, and splice, tee,
//! sendfile and copy_file_range; ioctls on the host's terminals.

pub(crate) mod events;
pub mod fd;
pub(crate) mod locks;
pub(crate) mod poll;
pub(crate) mod rw;
pub(crate) mod splice;
pub(crate) mod tty;
