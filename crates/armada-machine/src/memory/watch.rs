//! A debugger's watchpoints on an address space (`armada run -g`).
//!
//! The engine sees every access, so a watchpoint is exact and costs nothing where nothing
//! is watched: a watched page never gets a TLB entry, so every access to it goes the slow
//! way, and the slow way checks the watched ranges. An access that touches one, while the
//! watchpoints are armed, is refused as a fault and recorded as a hit: the instruction
//! does not happen (the PC stays at it, nothing retires), which is what gdb expects of an
//! AArch64 target (its watchpoints stop before the access; gdb steps over it itself with
//! the watchpoints removed). They are armed only while guest instructions run: a syscall's
//! own reads and writes of guest memory never stop the program, as on Linux.

use super::{Access, AddressSpace, Fault, PAGE_SHIFT};
use rustc_hash::FxHashSet as HashSet;

/// Which accesses a watchpoint stops at (gdb's `watch`, `rwatch`, `awatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WatchKind {
    Write,
    Read,
    Access,
}

impl WatchKind {
    fn catches(self, write: bool) -> bool {
        match self {
            WatchKind::Write => write,
            WatchKind::Read => !write,
            WatchKind::Access => true,
        }
    }
}

/// A watched range of guest memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Watch {
    pub addr: u64,
    pub len: u64,
    pub kind: WatchKind,
}

/// An access that a watchpoint stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchHit {
    /// The watchpoint it hit.
    pub watch: Watch,
    /// Whether the access was a write (else a read).
    pub write: bool,
    /// The first byte of the access.
    pub addr: u64,
}

#[derive(Default)]
pub(super) struct Watches {
    list: Vec<Watch>,
    /// The pages the watched ranges touch: never in the TLB.
    pages: HashSet<u64>,
    armed: bool,
    hit: Option<WatchHit>,
}

impl Watches {
    pub(super) fn hides(&self, vpn: u64) -> bool {
        self.pages.contains(&vpn)
    }

    /// The fault for an access of `len` bytes at `addr`, if it touches a watched range
    /// that catches it.
    fn check(&mut self, addr: u64, len: u64, write: bool) -> Result<(), Fault> {
        if !self.armed || len == 0 {
            return Ok(());
        }
        let end = addr.saturating_add(len);
        let hit = self
            .list
            .iter()
            .find(|w| w.kind.catches(write) && addr < w.addr.saturating_add(w.len) && w.addr < end);
        match hit {
            None => Ok(()),
            Some(&watch) => {
                self.hit = Some(WatchHit { watch, write, addr });
                Err(Fault {
                    addr: addr.max(watch.addr),
                    access: if write { Access::Write } else { Access::Read },
                    mapped: true,
                })
            }
        }
    }
}

impl AddressSpace {
    /// Sets the watched ranges (replacing any): see the module's comment. An empty list
    /// turns watching off.
    pub fn set_watches(&mut self, list: &[Watch]) {
        let armed = self.watch.as_ref().is_some_and(|w| w.armed);
        if list.is_empty() {
            self.watch = None;
            return;
        }
        let mut w = Watches {
            list: list.to_vec(),
            armed,
            ..Default::default()
        };
        for x in list {
            let last = x.addr.saturating_add(x.len.max(1) - 1);
            for vpn in (x.addr >> PAGE_SHIFT)..=(last >> PAGE_SHIFT) {
                w.pages.insert(vpn);
            }
        }
        self.watch = Some(Box::new(w));
        // the pages leave the TLB (and a window, where there is one)
        self.flush_tlb();
    }

    /// Arms or disarms the watched ranges: armed while guest instructions run, not while
    /// the Linux layer reads or writes guest memory for a syscall.
    pub fn arm_watches(&mut self, on: bool) {
        if let Some(w) = self.watch.as_mut() {
            w.armed = on;
        }
    }

    /// The watched ranges.
    pub fn watches(&self) -> &[Watch] {
        self.watch.as_ref().map_or(&[], |w| &w.list)
    }

    /// The access the last watch fault stopped, taken.
    pub fn take_watch_hit(&mut self) -> Option<WatchHit> {
        self.watch.as_mut().and_then(|w| w.hit.take())
    }

    /// Whether page `vpn` is watched (kept out of the TLB).
    #[inline]
    pub(super) fn watched_page(&self, vpn: u64) -> bool {
        self.watch.as_ref().is_some_and(|w| w.hides(vpn))
    }

    /// Checks an access the slow path is about to make against the watched ranges.
    #[inline]
    pub(super) fn check_watch(&mut self, addr: u64, len: u64, write: bool) -> Result<(), Fault> {
        match self.watch.as_mut() {
            None => Ok(()),
            Some(w) => w.check(addr, len, write),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Perm;

    #[test]
    fn armed_watches_stop_the_accesses_they_catch_and_only_those() {
        let mut m = AddressSpace::new();
        m.map(0x10000, 0x2000, Perm::RW).unwrap();
        m.write_u64(0x10008, 1).unwrap(); // in the TLB now
        m.set_watches(&[Watch {
            addr: 0x10008,
            len: 8,
            kind: WatchKind::Write,
        }]);
        // disarmed (a syscall's accesses): nothing stops
        m.write_u64(0x10008, 2).unwrap();
        m.arm_watches(true);
        let f = m.write_u64(0x1000c, 3).unwrap_err();
        assert_eq!((f.addr, f.access), (0x1000c, Access::Write));
        let hit = m.take_watch_hit().unwrap();
        assert!(hit.write && hit.addr == 0x1000c && hit.watch.addr == 0x10008);
        // the write did not happen; a read is not caught by a write watch
        assert_eq!(m.read_u64(0x10008).unwrap(), 2);
        // the rest of the page, and the next page, are not watched
        m.write_u64(0x10010, 4).unwrap();
        m.write_u64(0x11000, 5).unwrap();
        assert!(m.take_watch_hit().is_none());
        // a read watch and an access watch catch reads; a straddling access is caught
        m.set_watches(&[
            Watch {
                addr: 0x10100,
                len: 1,
                kind: WatchKind::Read,
            },
            Watch {
                addr: 0x10200,
                len: 4,
                kind: WatchKind::Access,
            },
        ]);
        assert!(m.read_u64(0x100fc).is_err());
        assert!(!m.take_watch_hit().unwrap().write);
        assert!(m.write_u8(0x10100, 1).is_ok());
        assert!(m.write_u16(0x10203, 1).is_err());
        assert!(m.take_watch_hit().unwrap().write);
        // none: the TLB takes the page again
        m.set_watches(&[]);
        m.write_u16(0x10203, 1).unwrap();
        assert_eq!(m.watches(), &[]);
    }
}
