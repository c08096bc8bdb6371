//! Clocks, sleeping and random bytes; interval and POSIX timers.

pub mod clock;
pub mod timers;
