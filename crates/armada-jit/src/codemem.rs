//! Where units' host code lives: large chunks mapped read, write and execute once, handed
//! out by a bump pointer, as qemu's TCG keeps its code buffer.
//!
//! Why not Cranelift's own providers: they map or protect memory for every finalized unit
//! (an mmap, an munmap and an mprotect each, `SystemMemoryProvider`). Each of those changes
//! the process's page tables, so the kernel takes its address-space lock for writing and
//! flushes every core's TLB running the process: with 16 host threads running a batch's
//! short lanes, whose page faults take that lock too, 10,000 `hello` lanes spent 14 s of
//! system time and 229,000 voluntary context switches on it, and ran slower on 16 cores
//! than on 2 (docs/performance.md, issue 53). Here a unit's code costs no system call.
//!
//! x86-64 only: its instruction cache is coherent with data writes, and an address is
//! never reused, so no core can hold a stale copy of the code it is about to run. Other
//! hosts keep Cranelift's provider, which does their cache maintenance.

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider};
use cranelift_module::ModuleResult;

/// Bytes a chunk reserves (pages are touched, and so backed, only as code is written).
const CHUNK: usize = 64 << 20;

pub struct CodeMemory {
    /// Every chunk mapped: (start, length).
    chunks: Vec<(*mut u8, usize)>,
    next: usize,
    end: usize,
}

// SAFETY: the chunks are owned by this provider alone, which the module keeps behind its
// lock; the raw pointers are addresses, not shared references.
unsafe impl Send for CodeMemory {}

impl CodeMemory {
    pub fn new() -> CodeMemory {
        CodeMemory {
            chunks: Vec::new(),
            next: 0,
            end: 0,
        }
    }
}

/// `len` bytes of fresh private memory mapped read, write and execute, backed only as
/// they are touched (units' chunks here, and each lane's quick blocks).
pub(crate) fn map_rwx(len: usize) -> std::io::Result<*mut u8> {
    // SAFETY: a new anonymous private mapping, checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

impl JITMemoryProvider for CodeMemory {
    fn allocate(
        &mut self,
        size: usize,
        align: u64,
        _kind: JITMemoryKind,
    ) -> std::io::Result<*mut u8> {
        let align = (align as usize).max(16);
        let mut at = self.next.next_multiple_of(align);
        if self.chunks.is_empty() || at + size > self.end {
            let len = CHUNK.max(size.next_multiple_of(4096) + 4096);
            let p = map_rwx(len)?;
            self.chunks.push((p, len));
            self.next = p as usize;
            self.end = self.next + len;
            at = self.next.next_multiple_of(align);
        }
        self.next = at + size;
        Ok(at as *mut u8)
    }

    unsafe fn free_memory(&mut self) {
        for (p, len) in self.chunks.drain(..) {
            // SAFETY: a mapping made by `map`, unmapped once; the module that freed it has
            // no function left to call.
            unsafe {
                libc::munmap(p as *mut libc::c_void, len);
            }
        }
        self.next = 0;
        self.end = 0;
    }

    fn finalize(&mut self, _branch_protection: BranchProtection) -> ModuleResult<()> {
        // already executable; x86-64 needs no cache maintenance (see above)
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_apart_and_grow_past_a_chunk() {
        let mut m = CodeMemory::new();
        let a = m.allocate(100, 16, JITMemoryKind::Executable).unwrap() as usize;
        let b = m.allocate(10, 64, JITMemoryKind::Executable).unwrap() as usize;
        assert!(a.is_multiple_of(16) && b.is_multiple_of(64) && b >= a + 100);
        // a request larger than a chunk gets a mapping of its own
        let c = m.allocate(CHUNK + 1, 16, JITMemoryKind::ReadOnly).unwrap();
        // SAFETY: the allocation holds CHUNK + 1 bytes.
        unsafe { c.add(CHUNK).write(7) };
        assert_eq!(m.chunks.len(), 2);
        unsafe { m.free_memory() };
        assert!(m.chunks.is_empty());
    }
}
