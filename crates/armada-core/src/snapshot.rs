//! Snapshots: run a program once to a chosen point, freeze the whole lane there (every
//! task and process, memory, fds, Linux state), and start any number of lanes from it,
//! each with its own input. The point is an address, a symbol of the program (`main`,
//! `LLVMFuzzerTestOneInput`) or `input`: the program's first touch of its input (see
//! `Process::touches_input`), paused before that syscall runs.
//!
//! An address or symbol pauses through a `BRK` written over the instruction there for the
//! start run (the word is put back when it is hit, so nothing of it is left in the
//! snapshot). A restored lane shares the snapshot's pages copy-on-write, as a forked
//! process shares its parent's, and decoded code with every other restored lane.
//!
//! The input reaches a restored lane as stdin, as the `@@` file (a file in memory at one
//! guest path), or as a buffer: at a function's entry, x0 and x1 become a pointer to the
//! input in the lane's memory and its length, and the function's return ends the lane
//! with status 0 (libFuzzer's `LLVMFuzzerTestOneInput(data, size)`). The return address is
//! the page after the buffer, mapped readable but not executable: a return there is a fetch
//! fault that ends the lane, and code that reads the instructions at its return address
//! (libgcc's unwinder looks for a signal trampoline there when an exception leaves the
//! function) reads zeros, as it would read the caller's code under libFuzzer, rather than
//! fault.

use std::sync::Arc;

use crate::memory::{Perm, PAGE_SIZE};
use crate::runner::pause::{PauseAt, PAUSE_BRK_IMM};
use crate::runner::{Exit, Lane};

/// Where a start run pauses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Point {
    /// Before the instruction at this address runs.
    Address(u64),
    /// Before the first instruction of this symbol of the program (its symbol table).
    Symbol(String),
    /// Before the program's first syscall on its input.
    Input,
}

impl std::str::FromStr for Point {
    type Err = std::convert::Infallible;
    /// `input`, an address (`0x4005d0`), or a symbol name.
    fn from_str(s: &str) -> Result<Point, Self::Err> {
        if s == "input" {
            return Ok(Point::Input);
        }
        if let Some(h) = s.strip_prefix("0x") {
            if let Ok(a) = u64::from_str_radix(h, 16) {
                return Ok(Point::Address(a));
            }
        }
        Ok(Point::Symbol(s.to_string()))
    }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Address(a) => write!(f, "{a:#x}"),
            Point::Symbol(s) => f.write_str(s),
            Point::Input => f.write_str("input"),
        }
    }
}

/// How each restored lane gets its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputVia {
    /// Whatever stdin has left at the snapshot is the input (captured stdin only).
    Stdin,
    /// The `@@` file at this guest path (set on the lane before the start run with
    /// `Process::set_input_file`).
    File(Vec<u8>),
    /// A buffer of at most this many bytes; x0 = its address, x1 = the length, and a
    /// return from the function ends the lane. Needs a function's entry as the point.
    Buffer(usize),
}

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("the snapshot point `{point}` was not reached: the start run ended first ({how}, after {retired} instructions); check the point, or give the start more instructions if it was still starting")]
    NotReached {
        point: String,
        how: String,
        retired: u64,
    },
    #[error("no symbol `{0}` in the program's symbol table (a stripped program needs an address: --snapshot-at 0x...)")]
    NoSymbol(String),
    #[error("the snapshot point {0:#x} is not an instruction the program has mapped executable")]
    NotCode(u64),
    #[error("reading the program's symbols: {0}")]
    Symbols(String),
    #[error("{0}")]
    Input(String),
}

/// A lane frozen at a point, ready to start lanes from.
pub struct Snapshot {
    lane: Lane,
    via: InputVia,
    /// The buffer of [`InputVia::Buffer`]: its guest address.
    buffer: u64,
    point: Point,
}

impl Snapshot {
    /// Runs `lane` (fresh, not started) until `point`, then freezes it. `max_instructions`
    /// bounds the start run.
    pub fn take(
        mut lane: Lane,
        point: Point,
        via: InputVia,
        max_instructions: Option<u64>,
    ) -> Result<Snapshot, SnapshotError> {
        let pause = match &point {
            Point::Input => PauseAt::Input,
            Point::Address(a) => breakpoint(&mut lane, *a)?,
            Point::Symbol(name) => {
                let a = symbol_address(&lane, name)?;
                breakpoint(&mut lane, a)?
            }
        };
        if matches!(via, InputVia::Buffer(_)) && point == Point::Input {
            return Err(SnapshotError::Input(
                "a buffer input needs a function's entry as the snapshot point (--snapshot-at LLVMFuzzerTestOneInput)".into(),
            ));
        }
        lane.pause = Some(pause);
        while lane.exit.is_none() && !lane.paused {
            lane.run_slice(max_instructions, u64::MAX);
        }
        lane.pause = None;
        if !lane.paused {
            let how = match lane.exit.as_ref() {
                Some(Exit::Code(c)) => format!("exit status {c}"),
                Some(Exit::Signal { signal, message }) => match message {
                    Some(m) => m.clone(),
                    None => format!("signal {signal}"),
                },
                Some(Exit::InstructionLimit) => "the instruction limit".into(),
                Some(Exit::Unsupported(m)) => m.clone(),
                None => "no end".into(),
            };
            return Err(SnapshotError::NotReached {
                point: point.to_string(),
                how,
                retired: lane.retired(),
            });
        }
        lane.paused = false;
        let mut buffer = 0;
        if let InputVia::Buffer(cap) = via {
            let len = (cap.max(1) as u64).next_multiple_of(PAGE_SIZE);
            let mem = &mut lane.program.mem;
            // the buffer, then the return trap's page
            let at = mem
                .find_free(
                    len + PAGE_SIZE,
                    0x1000_0000,
                    crate::linux::mm::mmap::MMAP_TOP,
                )
                .ok_or_else(|| SnapshotError::Input("no room for the input buffer".into()))?;
            mem.map(at, len, Perm::RW)
                .and_then(|_| mem.map(at + len, PAGE_SIZE, Perm::R))
                .map_err(|e| SnapshotError::Input(format!("mapping the input buffer: {e:?}")))?;
            buffer = at;
            lane.return_trap = Some(at + len);
        }
        lane.freeze();
        Ok(Snapshot {
            lane,
            via,
            buffer,
            point,
        })
    }

    /// Another snapshot of the same point (for another thread: a snapshot is not shared
    /// between threads). Pages and decoded code stay shared.
    pub fn duplicate(&self) -> Snapshot {
        Snapshot {
            lane: self.lane.copy_frozen(),
            via: self.via.clone(),
            buffer: self.buffer,
            point: self.point.clone(),
        }
    }

    /// [`Snapshot::duplicate`] for another host thread to restore lanes from: with page
    /// buffers of its own (see `AddressSpace::unshare_pages`) where the snapshot holds at
    /// most [`LOCAL_COPY_PAGES`] pages, so threads restoring at once do not count
    /// references on the same buffers. Results are the same either way.
    pub fn duplicate_local(&self) -> Snapshot {
        let mut d = self.duplicate();
        let pages: usize = d.lane.spaces().map(|m| m.page_count()).sum();
        if pages <= LOCAL_COPY_PAGES {
            d.lane.for_each_space(|m| {
                m.unshare_pages();
            });
        }
        d
    }

    /// A new lane that goes on from the snapshot with `input`.
    pub fn restore(&self, input: &[u8]) -> Lane {
        let mut l = self.lane.copy_frozen();
        // (restored lanes run many at once)
        l.without_windows();
        match &self.via {
            InputVia::Stdin => {
                l.program.process.set_stdin(input);
            }
            InputVia::File(path) => {
                let data: Arc<[u8]> = input.into();
                l.program.process.set_input_file(path.clone(), data.clone());
                l.for_parked_processes(|p| p.set_input_file(path.clone(), data.clone()));
            }
            InputVia::Buffer(cap) => {
                let n = input.len().min(*cap);
                let st = &mut l.program.state;
                // the buffer is mapped writable, so this cannot fail
                let _ = l.program.mem.poke_bytes(self.buffer, &input[..n]);
                st.x[0] = self.buffer;
                st.x[1] = n as u64;
                st.x[30] = l.return_trap.unwrap_or(0);
            }
        }
        l
    }

    /// The instructions the start run retired (what each restored lane skips).
    pub fn retired(&self) -> u64 {
        self.lane.retired()
    }

    /// The guest PC where restored lanes go on.
    pub fn pc(&self) -> u64 {
        self.lane.program.state.pc
    }

    pub fn point(&self) -> &Point {
        &self.point
    }

    pub fn via(&self) -> &InputVia {
        &self.via
    }
}

/// Pages a snapshot may hold for each thread's copy to get buffers of its own (16 MiB): a
/// fuzz target's or a small program's; larger ones (an interpreter's heap) share theirs.
pub const LOCAL_COPY_PAGES: usize = 4096;

/// A snapshot that lanes on many threads restore from at once: a copy per thread of
/// rayon's pool (a restore reads the snapshot's tables, and a snapshot is not shared
/// between threads), so restores run side by side. Pages stay shared by all: a GPU
/// engine's lanes share a page's frame where they share its buffer (not
/// [`Snapshot::duplicate_local`]).
pub struct SharedSnapshot {
    copies: Vec<std::sync::Mutex<Snapshot>>,
}

impl SharedSnapshot {
    pub fn new(s: Snapshot) -> SharedSnapshot {
        let n = rayon::current_num_threads().max(1);
        let mut copies: Vec<_> = (1..n)
            .map(|_| std::sync::Mutex::new(s.duplicate()))
            .collect();
        copies.insert(0, std::sync::Mutex::new(s));
        SharedSnapshot { copies }
    }

    /// [`Snapshot::restore`], from this thread's copy.
    pub fn restore(&self, input: &[u8]) -> Lane {
        let k = rayon::current_thread_index().unwrap_or(0) % self.copies.len();
        let s = self.copies[k].lock().unwrap_or_else(|p| p.into_inner());
        s.restore(input)
    }

    /// [`Snapshot::pc`].
    pub fn pc(&self) -> u64 {
        self.copies[0]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pc()
    }

    /// [`Snapshot::retired`].
    pub fn retired(&self) -> u64 {
        self.copies[0]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retired()
    }
}

/// Writes the pause BRK over the instruction at `addr`.
fn breakpoint(lane: &mut Lane, addr: u64) -> Result<PauseAt, SnapshotError> {
    let mem = &mut lane.program.mem;
    let exec = mem
        .area_at(addr)
        .is_some_and(|(_, _, p)| p.contains(Perm::X));
    if addr & 3 != 0 || !exec {
        return Err(SnapshotError::NotCode(addr));
    }
    let word = mem
        .read_u32(addr)
        .map_err(|_| SnapshotError::NotCode(addr))?;
    let brk = 0xd420_0000 | (PAUSE_BRK_IMM << 5);
    mem.poke_bytes(addr, &brk.to_le_bytes())
        .map_err(|_| SnapshotError::NotCode(addr))?;
    lane.code.invalidate_page(addr / PAGE_SIZE);
    Ok(PauseAt::Breakpoint { addr, word })
}

/// The address of `name` in the program's symbol table (or its dynamic symbols), with
/// the load bias of a position-independent program.
pub fn symbol_address(lane: &Lane, name: &str) -> Result<u64, SnapshotError> {
    use object::{Object, ObjectSymbol};
    let p = &lane.program;
    let path = &p.process.config().exe_host_path;
    let bytes = std::fs::read(path)
        .map_err(|e| SnapshotError::Symbols(format!("{}: {e}", path.display())))?;
    let file = object::File::parse(&*bytes)
        .map_err(|e| SnapshotError::Symbols(format!("{}: {e}", path.display())))?;
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(name) && s.address() != 0 && s.is_definition());
    match found {
        Some(s) => Ok(s.address().wrapping_add(p.image.load_bias)),
        None => Err(SnapshotError::NoSymbol(name.to_string())),
    }
}
