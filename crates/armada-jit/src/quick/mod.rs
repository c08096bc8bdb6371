//! The quick tier (issue 48): blocks of micro-ops translated to x86-64 code op by op, in
//! microseconds, the way qemu's TCG translates (docs/jit.md, "The quick tier").
//!
//! Cranelift makes fast code but takes 50-200 us a guest instruction to make it, so a
//! program that runs a lot of code a few thousand times each (a test suite, Python) spends
//! its time on the interpreter waiting for compiles. A quick block is a guest basic block
//! (up to a branch, an SVC, the end of its page or [`emit::MAX_OPS`] ops) as straight host
//! code: guest registers stay in the `CpuState`, loads and stores look the TLB up inline,
//! NZCV is made from the host's flags, and ops without a template run on the interpreter
//! through a call. Blocks end in a jump to the next block through the lane's direct-mapped
//! table, so a loop of blocks runs without the dispatcher.
//!
//! Every stop, register, flag, memory byte and instruction count is the interpreter's: a
//! block runs only when the whole of it fits in the budget (else the interpreter runs the
//! rest), each access stores the PC and count before its slow path, and a store that hits
//! decoded code leaves the block after it.

mod slow;

#[cfg(target_arch = "x86_64")]
mod emit;

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::AddressSpace;
use armada_core::state::{CpuState, Stop};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Blocks made, guest instructions in them, and the nanoseconds it took (whole process).
static BLOCKS: AtomicU64 = AtomicU64::new(0);
static INSNS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static MAKE_NS: AtomicU64 = AtomicU64::new(0);
/// Instructions retired in quick blocks (the rest ran on the interpreter).
static RAN: AtomicU64 = AtomicU64::new(0);
/// Bytes of host code made for blocks, all lanes together.
pub fn code_bytes() -> u64 {
    BYTES.load(Ordering::Relaxed)
}

/// Times a lane's blocks were all dropped (code changed, or its code memory full).
pub(crate) static FLUSHES: AtomicU64 = AtomicU64::new(0);

/// The quick tier's statistics: blocks made, guest instructions in them, seconds spent
/// making them, instructions run in blocks, and the times a lane's blocks were all
/// dropped.
pub fn stats() -> (u64, u64, f64, u64, u64) {
    (
        BLOCKS.load(Ordering::Relaxed),
        INSNS.load(Ordering::Relaxed),
        MAKE_NS.load(Ordering::Relaxed) as f64 * 1e-9,
        RAN.load(Ordering::Relaxed),
        FLUSHES.load(Ordering::Relaxed),
    )
}

/// `ARMADA_QUICK_TRACE=1`: blocks count how often each op ran on the interpreter through
/// a call ([`fallbacks`]), to find the ops worth a template.
pub(crate) fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::env_flag("ARMADA_QUICK_TRACE"))
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
pub(crate) static FALLBACKS: [AtomicU64; 0x800] = [ZERO; 0x800];

/// Under `ARMADA_QUICK_TRACE`, the ops blocks left to the interpreter and how often each
/// ran, most first.
pub fn fallbacks() -> Vec<(&'static str, u64)> {
    let mut v: Vec<_> = FALLBACKS
        .iter()
        .enumerate()
        .map(|(op, n)| (armada_isa::ops::name(op as u16), n.load(Ordering::Relaxed)))
        .filter(|e| e.1 > 0)
        .collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v
}

/// Times an entry is reached before its block is made: code that runs once (most of a
/// program's start) stays on the interpreter.
pub const HOT: u32 = 2;

/// The quick tier: one for the process; each lane keeps its own blocks.
pub struct Quick {
    hot: u32,
    /// `ARMADA_QUICK_CHECK`: every block runs alone (no chaining) and is compared with the
    /// interpreter run from the same state (`check_unit`).
    check: bool,
}

impl Quick {
    /// The tier, or None where this host has no code generator for it (x86-64 only).
    pub fn new() -> Option<Arc<Quick>> {
        Self::with_options(
            crate::env_count("ARMADA_QUICK_HOT", HOT),
            crate::env_flag("ARMADA_QUICK_CHECK"),
        )
    }

    /// The tier with its knobs given rather than read from the environment: `hot` reaches
    /// before a block is made, `check` each block against the interpreter. None where
    /// this host has no code generator for it.
    pub fn with_options(hot: u32, check: bool) -> Option<Arc<Quick>> {
        cfg!(target_arch = "x86_64").then(|| {
            Arc::new(Quick {
                hot: hot.max(1),
                check,
            })
        })
    }
}

/// A table where no block is found: under `ARMADA_QUICK_CHECK` every block returns.
#[cfg(target_arch = "x86_64")]
static NO_BLOCKS: [(u64, usize); emit::TABLE] = [(u64::MAX, 0); emit::TABLE];

#[cfg(target_arch = "x86_64")]
mod lane {
    use super::emit::{self, Stubs, TABLE};
    use armada_core::cpu::CodeCache;
    use armada_core::memory::{AddressSpace, Perm};
    use std::sync::atomic::Ordering;

    /// A lane's executable memory: the stubs, then blocks one after another until it is
    /// full, when every block goes and it starts again.
    struct CodeMem {
        base: *mut u8,
        size: usize,
        used: usize,
    }

    impl CodeMem {
        fn new(size: usize) -> Option<CodeMem> {
            // SAFETY: a fresh private anonymous mapping, nothing else refers to it.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            (p != libc::MAP_FAILED).then_some(CodeMem {
                base: p as *mut u8,
                size,
                used: 0,
            })
        }

        fn next(&self) -> usize {
            self.base as usize + self.used
        }

        fn room(&self) -> usize {
            self.size - self.used
        }

        /// Copies `code`, assembled for [`Self::next`], there.
        fn put(&mut self, code: &[u8]) -> usize {
            let at = self.next();
            // SAFETY: `room` was checked by the caller; no block runs while one is placed.
            unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), at as *mut u8, code.len()) };
            self.used = (self.used + code.len() + 15) & !15;
            at
        }
    }

    impl Drop for CodeMem {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`; no block runs once its lane is dropped.
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
        }
    }

    /// Bytes of code a lane's blocks may take before they are all made again.
    const CODE_BYTES: usize = 64 << 20;
    /// Room a block needs at most (64 ops of at most ~200 bytes).
    const BLOCK_ROOM: usize = 32 << 10;

    #[derive(Default)]
    struct Entry {
        reaches: u32,
        /// None: not made yet; Some(0): left to the interpreter.
        block: Option<usize>,
    }

    pub(super) struct LaneQuick {
        pub epoch: u64,
        /// The page buffer each page with blocks was made from (by page number): the
        /// blocks stay while every one of them is still there, executable and not
        /// writable, whatever else moved the code cache's epoch (a library mapped by
        /// `dlopen` moves it, and made Python's lanes make their blocks again 20 times).
        pages: rustc_hash::FxHashMap<u64, usize>,
        code: CodeMem,
        stubs_end: usize,
        pub stubs: Stubs,
        pub table: Box<[(u64, usize)]>,
        entries: rustc_hash::FxHashMap<u64, Entry>,
    }

    // SAFETY: the code memory is the lane's own and only used by the thread running it.
    unsafe impl Send for LaneQuick {}

    impl LaneQuick {
        pub fn new(epoch: u64) -> Option<LaneQuick> {
            let mut code = CodeMem::new(CODE_BYTES)?;
            let (bytes, stubs) = emit::stubs(code.next());
            code.put(&bytes);
            Some(LaneQuick {
                epoch,
                stubs_end: code.used,
                code,
                stubs,
                table: vec![(u64::MAX, 0); TABLE].into_boxed_slice(),
                entries: Default::default(),
                pages: Default::default(),
            })
        }

        /// The code cache's epoch moved: keeps the blocks if the pages they were made from
        /// are all as they were, else drops every block.
        pub fn revalidate(&mut self, epoch: u64, mem: &AddressSpace) {
            let same = self.pages.iter().all(|(&vpn, &buf)| {
                mem.area_at(vpn << 12)
                    .is_some_and(|(_, _, perm)| perm.contains(Perm::X) && !perm.contains(Perm::W))
                    && mem
                        .page_data(vpn)
                        .is_some_and(|b| std::sync::Arc::as_ptr(b) as usize == buf)
            });
            if same {
                self.epoch = epoch;
            } else {
                self.flush(epoch);
            }
        }

        /// The code changed: every block is made again (reach counts stay).
        pub fn flush(&mut self, epoch: u64) {
            super::FLUSHES.fetch_add(1, Ordering::Relaxed);
            self.table.fill((u64::MAX, 0));
            for e in self.entries.values_mut() {
                e.block = None;
            }
            self.code.used = self.stubs_end;
            self.pages.clear();
            self.epoch = epoch;
        }

        /// The block at `pc`, made once it has been reached often enough.
        pub fn block_at(
            &mut self,
            pc: u64,
            mem: &mut AddressSpace,
            code: &mut CodeCache,
            hot: u32,
        ) -> Option<usize> {
            let slot = ((pc >> 2) as usize) & (TABLE - 1);
            if self.table[slot].0 == pc {
                return Some(self.table[slot].1);
            }
            let e = self.entries.entry(pc).or_default();
            if let Some(b) = e.block {
                if b != 0 {
                    self.table[slot] = (pc, b);
                }
                return (b != 0).then_some(b);
            }
            e.reaches += 1;
            if e.reaches < hot || pc & 3 != 0 {
                return None;
            }
            let made = self.make(pc, mem, code);
            if code.epoch() != self.epoch {
                // (decoding the page moved the epoch: everything is made again)
                return None;
            }
            if let Some(e) = self.entries.get_mut(&pc) {
                e.block = Some(made.unwrap_or(0));
            }
            if let Some(b) = made {
                self.table[slot] = (pc, b);
            }
            made
        }

        fn make(&mut self, pc: u64, mem: &mut AddressSpace, code: &mut CodeCache) -> Option<usize> {
            let t0 = std::time::Instant::now();
            let page = code.page_ops(pc, mem).ok()?;
            // code on writable pages stays on the interpreter (the blocks are not told of
            // writes to it)
            let buf = std::sync::Arc::as_ptr(page.buffer.as_ref()?) as usize;
            let first = ((pc - page.base) / 4) as usize;
            let ops = page.ops.get(first..)?;
            if self.code.room() < BLOCK_ROOM {
                let epoch = self.epoch;
                self.flush(epoch);
            }
            let (bytes, n) = emit::block(self.code.next(), pc, ops, self.stubs)?;
            if bytes.len() > self.code.room() {
                // (never: a block of the most ops is far below BLOCK_ROOM)
                return None;
            }
            let at = self.code.put(&bytes);
            self.pages.insert(pc >> 12, buf);
            crate::store::perf_map("quick", at as *const u8, bytes.len(), pc);
            super::BLOCKS.fetch_add(1, Ordering::Relaxed);
            super::INSNS.fetch_add(n as u64, Ordering::Relaxed);
            super::BYTES.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            super::MAKE_NS.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            Some(at)
        }
    }
}

impl Tier for Quick {
    fn name(&self) -> &'static str {
        "quick"
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn run(
        &self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        budget: u64,
    ) -> Stop {
        cpu::interpret(st, mem, code, budget)
    }

    #[cfg(target_arch = "x86_64")]
    fn run(
        &self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        budget: u64,
    ) -> Stop {
        use slow::{exit, QCtx};
        let mut lane = match code
            .take_tier_state()
            .map(|s| s.downcast::<lane::LaneQuick>())
        {
            Some(Ok(l)) => l,
            _ => match lane::LaneQuick::new(code.epoch()) {
                Some(l) => Box::new(l),
                // no executable memory to be had: the interpreter
                None => return cpu::interpret(st, mem, code, budget),
            },
        };
        let limit = st.retired.saturating_add(budget);
        let mut ran = 0u64;
        let stop = loop {
            if st.retired >= limit {
                break Stop::Budget;
            }
            code.sync(mem);
            if code.epoch() != lane.epoch {
                lane.revalidate(code.epoch(), mem);
            }
            let Some(block) = lane.block_at(st.pc, mem, code, self.hot) else {
                match cpu::interpret_step(st, mem, code, limit - st.retired) {
                    Stop::Budget => continue,
                    stop => break stop,
                }
            };
            let before = self.check.then(|| {
                let copy = mem.clone();
                mem.flush_tlb();
                (st.clone(), copy)
            });
            let (entries, mask) = mem.tlb_table();
            let epoch = lane.epoch;
            let mut ctx = QCtx {
                st,
                tlb_entries: entries,
                tlb_mask: mask,
                limit,
                table: if self.check {
                    NO_BLOCKS.as_ptr()
                } else {
                    lane.table.as_ptr()
                },
                status: 0,
                hi: 0,
                mem,
                code,
                epoch,
                stop: None,
            };
            let start = st.retired;
            // SAFETY: the enter stub and `block` are this lane's code, made for this code
            // cache at this epoch; the context's pointers are the lane's state, memory,
            // code and table, which nothing else touches until the blocks return.
            let rc = unsafe {
                let enter: unsafe extern "sysv64" fn(*mut QCtx, usize) -> u64 =
                    std::mem::transmute(lane.stubs.enter);
                enter(&mut ctx, block)
            };
            let unit_stop = ctx.stop.take();
            ran += st.retired - start;
            if let Some((st0, mem0)) = before {
                crate::check_unit(st0, mem0, st, rc, unit_stop);
            }
            match rc {
                exit::NEXT => {}
                exit::SYSCALL => break Stop::Syscall,
                exit::INTERP => match cpu::interpret(st, mem, code, limit - st.retired) {
                    Stop::Budget => {}
                    stop => break stop,
                },
                _ => break unit_stop.unwrap_or(Stop::Undefined(0)),
            }
        };
        RAN.fetch_add(ran, Ordering::Relaxed);
        code.put_tier_state(lane);
        stop
    }
}
