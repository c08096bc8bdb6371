//! The fuzz input as the guest sees it: the `@@` file, a read-only regular file that lives
//! in memory at one guest path (each lane its own bytes, so lanes never share a host file),
//! and stdin replaced by a restored snapshot's input.

use std::sync::Arc;

use crate::fs::procfs::Special;
use crate::io::fd::o::{O_ACCMODE, O_PATH, O_RDONLY, O_WRONLY};
use crate::io::fd::Kind;
use crate::{cstr, Process};
use armada_machine::memory::AddressSpace;
use armada_machine::state::CpuState;

/// The `@@` file: its guest path and its bytes.
#[derive(Clone, Debug)]
pub(crate) struct InputFile {
    pub(crate) path: Vec<u8>,
    pub(crate) data: Arc<[u8]>,
}

impl Process {
    /// Serves `data` as the regular file at guest path `path` (absolute): open, stat and
    /// access of that path see it, whatever the host has there. Replaces an earlier one.
    pub fn set_input_file(&mut self, path: Vec<u8>, data: Arc<[u8]>) {
        self.input = Some(InputFile { path, data });
    }

    /// The `@@` file's bytes, where it is `path` (None: not the input file).
    pub(crate) fn input_file_at(&self, path: &[u8]) -> Option<Arc<[u8]>> {
        self.input
            .as_ref()
            .filter(|f| f.path == path)
            .map(|f| f.data.clone())
    }

    /// Makes `data` everything stdin has left: the description behind fd 0 reads it from its
    /// start. Only for captured stdin (a buffer); false when fd 0 is anything else (the
    /// host's stdin, a pipe, closed).
    pub fn set_stdin(&mut self, data: &[u8]) -> bool {
        let Ok(e) = self.files.entry(0) else {
            return false;
        };
        match self.files.files.get_mut(e.file).and_then(|f| f.as_mut()) {
            Some(f) => match &mut f.kind {
                // (the buffer is reused: a fuzzer sets tens of thousands of these a round)
                Kind::StdinBuf(buf) => {
                    buf.clear();
                    buf.extend_from_slice(data);
                    f.pos = 0;
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

impl Process {
    /// Whether the syscall about to run (registers `st`) is the program's first touch of
    /// its input: with an `@@` file, an open, stat or access of that path; otherwise a
    /// syscall on stdin (fd 0) whose result depends on its bytes. A snapshot taken at
    /// `input` pauses there, before the syscall runs, so every restored lane runs it on its
    /// own input.
    ///
    /// When fd 0 is the captured stdin (a batch's, a snapshot's), its stat, seek (ESPIPE)
    /// and terminal ioctls answer the same whatever the bytes are, so they are not the
    /// touch: CPython looks at fd 0 that way long before it reads its script, and a
    /// snapshot taken there would leave its site imports to every lane. What stdin is
    /// otherwise (a host file) is not known to be the same for every lane, so any read,
    /// stat, seek or map of it is.
    pub fn touches_input(&self, st: &CpuState, mem: &mut AddressSpace) -> bool {
        use crate::nr::*;
        let nr = st.x[8];
        let a = &st.x;
        if self.input.is_some() {
            let (dirfd, path) = match nr {
                OPENAT | OPENAT2 | NEWFSTATAT | STATX | FACCESSAT | FACCESSAT2 => (a[0], a[1]),
                _ => return false,
            };
            let Ok(p) = cstr(mem, path) else {
                return false;
            };
            return matches!(self.special(dirfd as i32, &p), Some(Special::Input));
        }
        const MAP_ANONYMOUS: u64 = 0x20;
        const FIONREAD: u64 = 0x541b;
        let captured = self.stdin_bytes().is_some();
        match nr {
            READ | READV | PREAD64 | PREADV | PREADV2 | SPLICE | TEE | COPY_FILE_RANGE => {
                a[0] as i32 == 0
            }
            SENDFILE => a[1] as i32 == 0,
            MMAP => a[4] as i32 == 0 && a[3] & MAP_ANONYMOUS == 0,
            // (how many bytes are left to read)
            IOCTL => a[0] as i32 == 0 && a[1] as u32 as u64 == FIONREAD,
            FSTAT | LSEEK => a[0] as i32 == 0 && !captured,
            NEWFSTATAT | STATX => {
                a[0] as i32 == 0 && !captured && cstr(mem, a[1]).is_ok_and(|p| p.is_empty())
            }
            _ => false,
        }
    }
}

/// What a GPU kernel may answer for a lane by itself, without stopping for the host: the
/// syscalls one execution of a fuzz target repeats (armada-gpu's `engine/devio.rs`). Each is
/// answered only where the answer cannot differ from the host's: reads of fd 0 while it is
/// the captured stdin, writes to fd 1 and 2 while they are the captured stdout and stderr
/// (the bytes kept, `device_output`, or dropped and counted), and fstat of those descriptors (whose stat does not
/// depend on the data).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceIo {
    /// fd 0 reads the captured stdin: its bytes are `Process::stdin_bytes`, read from `pos`.
    pub read_stdin: bool,
    pub stdin_pos: u64,
    /// Writes to fd 1 (index 0) and fd 2 (index 1) may be dropped, up to this many bytes
    /// (what is left of the capture's cap); None: not the captured stream.
    pub out_room: [Option<u64>; 2],
    /// The stat of fds 0, 1 and 2 (arm64 `struct stat`), where it is the captured stream's.
    pub stat: [Option<[u8; 128]>; 3],
    /// exit and exit_group end the lane with the status (x0 & 0xff) and nothing else to do:
    /// the process is the lane's first (its end is the lane's), and has no other thread
    /// (an exit would end only the calling one).
    pub exit: bool,
    /// clock_gettime reads the virtual clocks (`time::det_clock`): deterministic mode, with
    /// this many nanoseconds slept so far.
    pub slept_ns: Option<u64>,
}

impl Process {
    /// What a kernel may answer for this process now (nothing while --strace shows every
    /// syscall).
    pub fn device_io(&self) -> DeviceIo {
        let mut io = DeviceIo::default();
        if self.cfg.strace {
            return io;
        }
        io.exit = self.pid == self.first_pid() && self.others.is_empty();
        io.slept_ns = self.clock.slept();
        for fd in 0..3 {
            let Ok(f) = self.files.file(fd) else {
                continue;
            };
            let usable = f.flags & O_PATH == 0;
            match (&f.kind, fd) {
                (Kind::StdinBuf(_), 0) if usable => {
                    io.read_stdin = f.flags & O_ACCMODE != O_WRONLY;
                    io.stdin_pos = f.pos;
                }
                (Kind::Out(err), 1 | 2) if usable && *err == (fd == 2) => {
                    if f.flags & O_ACCMODE != O_RDONLY {
                        let k = (fd - 1) as usize;
                        let kept = if *err {
                            self.files.err.len()
                        } else {
                            self.files.out.len()
                        } as u64;
                        let cap = crate::io::fd::OUTPUT_CAP as u64;
                        io.out_room[k] = Some(cap.saturating_sub(kept + self.files.dropped[k]));
                    }
                }
                _ => continue,
            }
            io.stat[fd as usize] = self.stat_fd(fd).ok().map(|s| s.to_arm64());
        }
        io
    }

    /// The captured stdin's bytes (fd 0's, when it is the captured stdin).
    pub fn stdin_bytes(&self) -> Option<&[u8]> {
        match &self.files.file(0).ok()?.kind {
            Kind::StdinBuf(d) => Some(d),
            _ => None,
        }
    }

    /// Appends bytes a kernel wrote for the process to the captured stdout (`stream` 0) or
    /// stderr (1): writes it answered, kept (`device_io`'s room bounds them by the cap).
    pub fn device_output(&mut self, stream: usize, bytes: &[u8]) {
        let buf = if stream == 0 {
            &mut self.files.out
        } else {
            &mut self.files.err
        };
        buf.extend_from_slice(bytes);
    }

    /// Takes what a kernel answered since the last call: fd 0's position, the bytes it
    /// dropped from stdout and stderr, and how many syscalls it answered.
    pub fn device_io_done(&mut self, stdin_pos: u64, dropped: [u64; 2], syscalls: u64) {
        if let Ok(f) = self.files.file_mut(0) {
            if matches!(f.kind, Kind::StdinBuf(_)) {
                f.pos = stdin_pos;
            }
        }
        self.files.dropped[0] += dropped[0];
        self.files.dropped[1] += dropped[1];
        self.procs.syscalls += syscalls;
    }
}
