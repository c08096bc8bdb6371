//! The fuzz input as the guest sees it: the `@@` file, a read-only regular file that lives
//! in memory at one guest path (each lane its own bytes, so lanes never share a host file),
//! and stdin replaced by a restored snapshot's input.

use std::sync::Arc;

use super::fd::Kind;
use super::proc::Special;
use super::{cstr, Process};
use crate::memory::AddressSpace;
use crate::state::CpuState;

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
            Some(f) if matches!(f.kind, Kind::StdinBuf(_)) => {
                f.kind = Kind::StdinBuf(data.to_vec());
                f.pos = 0;
                true
            }
            _ => false,
        }
    }
}

impl Process {
    /// Whether the syscall about to run (registers `st`) is the program's first touch of
    /// its input: with an `@@` file, an open, stat or access of that path; otherwise a
    /// read, stat, seek or map of stdin (fd 0). A snapshot taken at `input` pauses there,
    /// before the syscall runs, so every restored lane runs it on its own input.
    pub(crate) fn touches_input(&self, st: &CpuState, mem: &mut AddressSpace) -> bool {
        use super::nr::*;
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
        match nr {
            READ | READV | PREAD64 | PREADV | PREADV2 | FSTAT | LSEEK | SPLICE
            | COPY_FILE_RANGE => a[0] as i32 == 0,
            SENDFILE => a[1] as i32 == 0,
            MMAP => a[4] as i32 == 0 && a[3] & MAP_ANONYMOUS == 0,
            NEWFSTATAT | STATX => a[0] as i32 == 0 && cstr(mem, a[1]).is_ok_and(|p| p.is_empty()),
            _ => false,
        }
    }
}
