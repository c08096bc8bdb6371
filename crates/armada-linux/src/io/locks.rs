//! Advisory file locks (fs/locks.c): POSIX record locks (fcntl F_SETLK/F_SETLKW/F_GETLK,
//! owned by a process), open-file-description locks (F_OFD_*, owned by the description)
//! and flock (owned by the description).
//!
//! The lane keeps its own lock table, beside its open file descriptions: every guest
//! process is a task of one host process, so the host's POSIX locks could not tell them
//! apart (a host process never conflicts with itself). The consequence, as with the rest of
//! a run's confinement: programs outside the run do not see the guest's locks, nor the
//! guest theirs.
//!
//! Linux's rules kept here: record locks and flock locks do not see each other; a process
//! holds at most one record lock per byte (a new lock replaces and splits its own, and
//! adjacent ones of a type merge); a process's record locks on a file go when it closes any
//! fd of that file or ends; OFD and flock locks go with the description's last fd. A
//! blocking F_SETLKW that would wait on a process that waits on this one is EDEADLK.

pub(crate) const F_RDLCK: i16 = 0;
pub(crate) const F_WRLCK: i16 = 1;
pub(crate) const F_UNLCK: i16 = 2;

pub(crate) const LOCK_SH: i32 = 1;
pub(crate) const LOCK_EX: i32 = 2;
pub(crate) const LOCK_NB: i32 = 4;
pub(crate) const LOCK_UN: i32 = 8;

/// Who holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Owner {
    /// A POSIX record lock's process.
    Process(i32),
    /// An OFD or flock lock's open file description.
    Description(usize),
}

/// A file as locks know it: the host's device and inode, or for a lane object (a pipe, a
/// socket) its description.
pub(crate) type FileKey = (u64, u64);

#[derive(Clone, Debug)]
pub(crate) struct Lock {
    pub(crate) file: FileKey,
    pub(crate) owner: Owner,
    /// flock's space, not the record locks'.
    pub(crate) flock: bool,
    pub(crate) write: bool,
    /// Bytes `start..=end` (`end` u64::MAX: to the end of file, whatever it becomes).
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl Lock {
    pub(crate) fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }
}

/// The lane's locks, and which process waits on which owner (for EDEADLK).
#[derive(Clone, Debug, Default)]
pub(crate) struct Locks {
    pub(crate) held: Vec<Lock>,
    pub(crate) waiting: std::collections::BTreeMap<i32, Owner>,
}

impl Locks {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The first lock of another owner that keeps `want`'s owner from taking it.
    pub(crate) fn conflict(&self, want: &Lock) -> Option<&Lock> {
        self.held.iter().find(|l| {
            l.file == want.file
                && l.flock == want.flock
                && l.owner != want.owner
                && (want.write || l.write)
                && l.overlaps(want.start, want.end)
        })
    }

    /// Sets (or with F_UNLCK clears) `owner`'s record lock on `start..=end`, splitting
    /// and merging its own locks as Linux does.
    pub(crate) fn set_range(
        &mut self,
        file: FileKey,
        owner: Owner,
        kind: i16,
        start: u64,
        end: u64,
    ) {
        let mut kept = Vec::with_capacity(self.held.len() + 2);
        let mut new = Lock {
            file,
            owner,
            flock: false,
            write: kind == F_WRLCK,
            start,
            end,
        };
        for l in self.held.drain(..) {
            let mine = l.file == file && l.owner == owner && !l.flock;
            if !mine {
                kept.push(l);
                continue;
            }
            let adjacent =
                (end != u64::MAX && l.start == end + 1) || (start != 0 && l.end == start - 1);
            if kind != F_UNLCK && l.write == new.write && (l.overlaps(start, end) || adjacent) {
                // the same type: one lock over both
                new.start = new.start.min(l.start);
                new.end = new.end.max(l.end);
                continue;
            }
            if !l.overlaps(start, end) {
                kept.push(l);
                continue;
            }
            // what of the old lock lies outside the new range stays
            if l.start < start {
                kept.push(Lock {
                    end: start - 1,
                    ..l.clone()
                });
            }
            if l.end > end {
                kept.push(Lock {
                    start: end + 1,
                    ..l
                });
            }
        }
        if kind != F_UNLCK {
            kept.push(new);
        }
        self.held = kept;
    }

    /// A process closed an fd of `file`: its record locks on it go.
    pub(crate) fn process_closed(&mut self, pid: i32, file: FileKey) {
        self.held
            .retain(|l| !(l.file == file && l.owner == Owner::Process(pid)));
    }

    /// A process ended: its record locks go, and it waits for nothing.
    pub(crate) fn process_ended(&mut self, pid: i32) {
        self.held.retain(|l| l.owner != Owner::Process(pid));
        self.waiting.remove(&pid);
    }

    /// An open file description went: its OFD and flock locks go.
    pub(crate) fn description_dropped(&mut self, idx: usize) {
        self.held.retain(|l| l.owner != Owner::Description(idx));
    }

    /// Whether `pid` waiting on `on` would close a cycle of processes waiting on each
    /// other's record locks.
    pub(crate) fn would_deadlock(&self, pid: i32, on: Owner) -> bool {
        let mut at = on;
        for _ in 0..=self.waiting.len() {
            match at {
                Owner::Process(p) if p == pid => return true,
                Owner::Process(p) => match self.waiting.get(&p) {
                    Some(&next) => at = next,
                    None => return false,
                },
                Owner::Description(_) => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileKey = (1, 2);
    const A: Owner = Owner::Process(10);
    const B: Owner = Owner::Process(11);

    fn probe(owner: Owner, flock: bool, write: bool, start: u64, end: u64) -> Lock {
        Lock {
            file: F,
            owner,
            flock,
            write,
            start,
            end,
        }
    }

    fn ranges(l: &Locks, o: Owner) -> Vec<(bool, u64, u64)> {
        let mut v: Vec<_> = l
            .held
            .iter()
            .filter(|x| x.owner == o)
            .map(|x| (x.write, x.start, x.end))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn own_locks_split_and_merge() {
        let mut l = Locks::default();
        l.set_range(F, A, F_WRLCK, 0, 99);
        l.set_range(F, A, F_RDLCK, 10, 19);
        assert_eq!(
            ranges(&l, A),
            vec![(false, 10, 19), (true, 0, 9), (true, 20, 99)]
        );
        l.set_range(F, A, F_WRLCK, 10, 19);
        assert_eq!(ranges(&l, A), vec![(true, 0, 99)]);
        l.set_range(F, A, F_UNLCK, 50, u64::MAX);
        assert_eq!(ranges(&l, A), vec![(true, 0, 49)]);
        // adjacent locks of one type become one
        l.set_range(F, A, F_WRLCK, 50, 59);
        assert_eq!(ranges(&l, A), vec![(true, 0, 59)]);
    }

    #[test]
    fn conflicts_are_between_owners_and_spaces() {
        let mut l = Locks::default();
        l.set_range(F, A, F_RDLCK, 0, 9);
        assert!(l.conflict(&probe(B, false, false, 0, 9)).is_none());
        assert!(l.conflict(&probe(B, false, true, 5, 5)).is_some());
        assert!(l.conflict(&probe(A, false, true, 5, 5)).is_none());
        // flock's space is another
        assert!(l.conflict(&probe(B, true, true, 0, u64::MAX)).is_none());
        l.process_closed(10, F);
        assert!(l.is_empty());
    }

    #[test]
    fn a_cycle_of_waiters_is_a_deadlock() {
        let mut l = Locks::default();
        l.waiting.insert(11, A);
        assert!(l.would_deadlock(10, B));
        assert!(!l.would_deadlock(12, B));
    }
}
