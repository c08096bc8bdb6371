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

pub(crate) mod slow;

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

/// Units that quick blocks entered themselves (`slow::unit`), without the dispatcher.
pub(crate) static UNIT_ENTRIES: AtomicU64 = AtomicU64::new(0);
/// Units that quick blocks entered themselves, whole process.
pub fn unit_entries() -> u64 {
    UNIT_ENTRIES.load(Ordering::Relaxed)
}

/// Quick blocks' accesses through a guarded window that a host fault sent to their slow
/// paths (`guard::QuickRun`), whole process.
pub fn window_slow_paths() -> u64 {
    crate::guard::QUICK_SLOW_PATHS.load(Ordering::Relaxed)
}

/// Times a lane's blocks were all dropped (its code memory full, or its window changed).
pub(crate) static FLUSHES: AtomicU64 = AtomicU64::new(0);
/// Pages whose blocks were dropped alone, the page changed (`LaneQuick::settle`).
pub(crate) static PAGES_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Pages whose blocks a lane dropped because the page changed, whole process.
pub fn pages_dropped() -> u64 {
    PAGES_DROPPED.load(Ordering::Relaxed)
}

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

/// How `LaneQuick::run` runs blocks.
pub(crate) enum Mode {
    /// Chained to each other; and where the link is not null (under the translation tier),
    /// entering units themselves (`slow::unit`).
    Chained(*mut slow::UnitLink),
    /// One block alone, then checked against the interpreter (`ARMADA_QUICK_CHECK`,
    /// `ARMADA_JIT_CHECK`).
    Checked,
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

/// A lane's blocks where this host has no code generator for them: none are ever made.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) mod lane {
    pub(crate) use super::Mode;
    use armada_core::cpu::CodeCache;
    use armada_core::memory::AddressSpace;
    use armada_core::state::{CpuState, Stop};

    /// (Uninhabited: `new` never makes one.)
    pub enum LaneQuick {}

    impl LaneQuick {
        pub fn new(_epoch: u64, _tier_up: Option<crate::TierUp>) -> Option<LaneQuick> {
            None
        }
        pub fn epoch(&self) -> u64 {
            match *self {}
        }
        pub fn revalidate(&mut self, _epoch: u64, _mem: &AddressSpace) {
            match *self {}
        }
        pub fn block_at(
            &mut self,
            _pc: u64,
            _mem: &mut AddressSpace,
            _code: &mut CodeCache,
            _hot: u32,
            _resumed: bool,
        ) -> Option<usize> {
            match *self {}
        }
        pub fn run(
            &mut self,
            _block: usize,
            _st: &mut CpuState,
            _mem: &mut AddressSpace,
            _code: &mut CodeCache,
            _limit: u64,
            _mode: Mode,
        ) -> (u64, Option<Stop>) {
            match *self {}
        }
        pub fn redirect(&mut self, _pc: u64) {
            match *self {}
        }
        pub fn recount(&mut self, _pc: u64, _count: u32) {
            match *self {}
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod lane {
    use super::emit::{self, Stubs, TABLE};
    use super::slow::QCtx;
    pub(crate) use super::Mode;
    use armada_core::cpu::CodeCache;
    use armada_core::memory::{AddressSpace, Perm};
    use armada_core::state::{CpuState, Stop};
    use std::sync::atomic::Ordering;

    /// A lane's executable memory: the stubs, then blocks one after another until it is
    /// full, when every block goes and it starts again; after the code, the blocks' run
    /// counts (within 2 GiB of the code, which reaches them relative to its own address,
    /// and on pages of their own: data written on code's pages makes the host throw its
    /// decoded instructions away).
    struct CodeMem {
        base: *mut u8,
        size: usize,
        used: usize,
        counts_used: usize,
    }

    /// Bytes of code a lane's blocks may take before they are all made again.
    const CODE_BYTES: usize = 64 << 20;
    /// Bytes of run counts (4 a block) after the code.
    const COUNT_BYTES: usize = 1 << 20;
    /// Room a block needs at most (64 ops of at most ~200 bytes).
    const BLOCK_ROOM: usize = 32 << 10;

    impl CodeMem {
        fn new() -> Option<CodeMem> {
            let size = CODE_BYTES + COUNT_BYTES;
            let p = crate::codemem::map_rwx(size).ok()?;
            // SAFETY: the tail of the mapping just made; the counts are data only.
            unsafe {
                libc::mprotect(
                    p.add(CODE_BYTES) as *mut libc::c_void,
                    COUNT_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            Some(CodeMem {
                base: p,
                size: CODE_BYTES,
                used: 0,
                counts_used: 0,
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

        /// Whether there is room for another run count.
        fn count_room(&self) -> bool {
            self.counts_used + 4 <= COUNT_BYTES
        }

        /// A fresh run count, set to `n`; None when there is no room for one.
        fn counter(&mut self, n: u32) -> Option<usize> {
            if !self.count_room() {
                return None;
            }
            let at = self.base as usize + CODE_BYTES + self.counts_used;
            self.counts_used += 4;
            // SAFETY: inside the counts' part of the mapping, 4-byte aligned.
            unsafe { (at as *mut u32).write(n) };
            Some(at)
        }

        /// Writes `bytes` over code at `at` (a block's first instruction).
        fn patch(&mut self, at: usize, bytes: &[u8]) {
            debug_assert!(at >= self.base as usize && at + bytes.len() <= self.next());
            // SAFETY: inside code placed by `put`; no block runs while the dispatcher
            // patches (the lane's blocks run on this thread only).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
        }
    }

    impl Drop for CodeMem {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`; no block runs once its lane is dropped.
            unsafe { libc::munmap(self.base as *mut libc::c_void, CODE_BYTES + COUNT_BYTES) };
        }
    }

    #[derive(Default)]
    struct Entry {
        reaches: u32,
        /// None: not made yet; Some(0): left to the interpreter.
        block: Option<usize>,
        /// A counted block's count and its way out for a count run out (see
        /// [`LaneQuick::redirect`]).
        counter: usize,
        hot: usize,
    }

    /// A page that has blocks: the page buffer they were made from (held, so that no
    /// other buffer takes its address), whether they are set aside (see
    /// [`LaneQuick::revalidate`]), and their PCs (what dropping the page's blocks resets).
    struct BlockPage {
        buf: std::sync::Arc<armada_core::memory::PageBuf>,
        aside: bool,
        pcs: Vec<u64>,
    }

    /// Whether `mem` still has page `vpn` executable, not writable, in buffer `buf`.
    fn page_holds(
        mem: &AddressSpace,
        vpn: u64,
        buf: &std::sync::Arc<armada_core::memory::PageBuf>,
    ) -> bool {
        mem.area_at(vpn << 12)
            .is_some_and(|(_, _, perm)| perm.contains(Perm::X) && !perm.contains(Perm::W))
            && mem
                .page_data(vpn)
                .is_some_and(|b| std::sync::Arc::ptr_eq(b, buf))
    }

    pub struct LaneQuick {
        epoch: u64,
        /// The pages with blocks, by page number: a page's blocks stay while it is still
        /// there in the same buffer, executable and not writable, whatever else moved the
        /// code cache's epoch (a library mapped by `dlopen` moves it, and made Python's
        /// lanes make their blocks again 20 times; a lane given a recycled code cache
        /// starts before its libraries are mapped again).
        pages: rustc_hash::FxHashMap<u64, BlockPage>,
        code: CodeMem,
        stubs_end: usize,
        stubs: Stubs,
        table: Box<[(u64, usize)]>,
        entries: rustc_hash::FxHashMap<u64, Entry>,
        /// Under the translation tier, the runs a block makes before it asks for its unit.
        tier_up: Option<crate::TierUp>,
        /// Whether the lane's last run (of the quick tier alone) ran its budget out: the
        /// next starts wherever that quantum ended (see `block_at`).
        pub(crate) budget_ended: bool,
        /// Whether the blocks were made for the address space's guarded window (their
        /// general loads and stores go through it, see `emit`): made so where it has one
        /// when they are made, and all made again when that changes.
        guarded: bool,
        /// Those blocks' guarded accesses (host instruction start and end, slow path), by
        /// start, for the SIGSEGV handler (`guard::QuickRun`).
        sites: Vec<(usize, usize, usize)>,
    }

    // SAFETY: the code memory is the lane's own and only used by the thread running it.
    unsafe impl Send for LaneQuick {}

    /// Whether the block at `pc`, whose page's ops from `pc` on are `ops`, is the head of
    /// a closed loop: a branch further on in its page goes back to it, and nothing from
    /// here to that branch calls, branches to a register, makes a syscall or needs the
    /// interpreter. Under the translation tier those ask for their units soon
    /// (`TierUp::loops`), since such a loop turns without ever leaving the blocks; every
    /// other block only after many more runs (`TierUp::blocks`): a count as low in every
    /// block made a unit at each hot block, a dozen instructions up to the next call or
    /// indirect branch (Python's regression tests made 13,000, more than a compile thread
    /// keeps up with, and each entered and left at every turn).
    fn closed_loop(ops: &[armada_isa::MicroOp], pc: u64) -> bool {
        use crate::unit::{term, Term};
        let Some(back) = ops
            .iter()
            .rposition(|u| matches!(term(u), Term::Jump(t) | Term::Cond(t) if t == pc))
        else {
            return false;
        };
        ops[..=back]
            .iter()
            .all(|u| matches!(term(u), Term::None | Term::Jump(_) | Term::Cond(_)))
    }

    /// The guarded window blocks use for `mem` (null: none, they look the TLB up):
    /// `ARMADA_QUICK_WINDOW=0` keeps them on the TLB (to measure).
    fn window_of(mem: &AddressSpace) -> *const u8 {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on =
            *ON.get_or_init(|| std::env::var_os("ARMADA_QUICK_WINDOW").is_none_or(|v| v != "0"));
        if on {
            mem.guarded_window().unwrap_or(std::ptr::null())
        } else {
            std::ptr::null()
        }
    }

    impl LaneQuick {
        /// A lane's blocks; with `tier_up`, each block counts its runs and leaves with
        /// `exit::HOT` after that many.
        pub fn new(epoch: u64, tier_up: Option<crate::TierUp>) -> Option<LaneQuick> {
            let mut code = CodeMem::new()?;
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
                tier_up,
                budget_ended: false,
                guarded: false,
                sites: Vec::new(),
            })
        }

        /// Makes every block again where the address space got or lost its guarded window
        /// since they were made (see `guarded`).
        fn follow_window(&mut self, mem: &AddressSpace) {
            let guarded = !window_of(mem).is_null();
            if guarded != self.guarded {
                let epoch = self.epoch;
                self.flush(epoch);
                self.guarded = guarded;
            }
        }

        /// The code cache's epoch the blocks are from.
        pub fn epoch(&self) -> u64 {
            self.epoch
        }

        /// The code cache's epoch moved: the blocks of each page that is no longer as they
        /// were made from (`page_holds`) are set aside, the others stay. Setting a page's
        /// blocks aside clears their table slots: every way into them from elsewhere goes
        /// through the table (a block chains directly only to blocks of its own page, see
        /// emit's `chain_const`), so the dispatcher sees the next reach of one and
        /// `settle`s the page then: its blocks are taken back where the page is there again
        /// as it was (a recycled lane's libraries, mapped again at their addresses from the
        /// same file's pages), else dropped.
        pub fn revalidate(&mut self, epoch: u64, mem: &AddressSpace) {
            let mut set_aside = false;
            for (&vpn, p) in self.pages.iter_mut() {
                if !p.aside && !page_holds(mem, vpn, &p.buf) {
                    p.aside = true;
                    set_aside = true;
                }
            }
            if set_aside {
                let pages = &self.pages;
                for slot in self.table.iter_mut() {
                    if slot.0 != u64::MAX && pages.get(&(slot.0 >> 12)).is_none_or(|p| p.aside) {
                        *slot = (u64::MAX, 0);
                    }
                }
                // PCs left to the interpreter are tried again, as when every block went
                // (their code may have become a block's: mapped executable since)
                for e in self.entries.values_mut() {
                    if e.block == Some(0) {
                        e.block = None;
                    }
                }
            }
            self.epoch = epoch;
        }

        /// Takes back the blocks of `pc`'s page if they were set aside and the page is as
        /// they were made from, or drops them if it is not (see [`Self::revalidate`]).
        fn settle(&mut self, pc: u64, mem: &AddressSpace) {
            let vpn = pc >> 12;
            let Some(p) = self.pages.get_mut(&vpn).filter(|p| p.aside) else {
                return;
            };
            if page_holds(mem, vpn, &p.buf) {
                p.aside = false;
                return;
            }
            self.drop_page(vpn);
        }

        /// Drops the blocks of page `vpn` (their code stays until the next `flush`, reached
        /// by nothing: no table slot, and no other page's block chains to them).
        fn drop_page(&mut self, vpn: u64) {
            let Some(p) = self.pages.remove(&vpn) else {
                return;
            };
            for pc in p.pcs {
                if let Some(e) = self.entries.get_mut(&pc) {
                    e.block = None;
                }
            }
            super::PAGES_DROPPED.fetch_add(1, Ordering::Relaxed);
        }

        /// The code changed: every block is made again (reach counts stay).
        fn flush(&mut self, epoch: u64) {
            super::FLUSHES.fetch_add(1, Ordering::Relaxed);
            self.table.fill((u64::MAX, 0));
            for e in self.entries.values_mut() {
                e.block = None;
            }
            self.code.used = self.stubs_end;
            self.code.counts_used = 0;
            self.pages.clear();
            self.sites.clear();
            self.epoch = epoch;
        }

        /// The block at `pc`, made once it has been reached `hot` times. A reach where
        /// the lane `resumed` (anywhere in a block, where a quantum ended) is not counted.
        pub fn block_at(
            &mut self,
            pc: u64,
            mem: &mut AddressSpace,
            code: &mut CodeCache,
            hot: u32,
            resumed: bool,
        ) -> Option<usize> {
            self.follow_window(mem);
            let slot = ((pc >> 2) as usize) & (TABLE - 1);
            if self.table[slot].0 == pc {
                return Some(self.table[slot].1);
            }
            self.settle(pc, mem);
            if resumed {
                return self
                    .entries
                    .get(&pc)
                    .and_then(|e| e.block)
                    .filter(|&b| b != 0);
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
            if self.tier_up.is_some() {
                code.mark_ran(pc);
            }
            if code.epoch() != self.epoch {
                // (decoding the page moved the epoch: everything is made again)
                return None;
            }
            let (at, counter, hot) = made.unwrap_or((0, 0, 0));
            if let Some(e) = self.entries.get_mut(&pc) {
                e.block = Some(at);
                e.counter = counter;
                e.hot = hot;
            }
            if at != 0 {
                self.table[slot] = (pc, at);
            }
            (at != 0).then_some(at)
        }

        /// Makes the block at `pc`: its address, and its run count's and way out's when
        /// it counts.
        fn make(
            &mut self,
            pc: u64,
            mem: &mut AddressSpace,
            code: &mut CodeCache,
        ) -> Option<(usize, usize, usize)> {
            let t0 = std::time::Instant::now();
            let page = code.page_ops(pc, mem).ok()?;
            // code on writable pages stays on the interpreter (the blocks are not told of
            // writes to it)
            let buf = page.buffer.clone()?;
            let first = ((pc - page.base) / 4) as usize;
            let ops = page.ops.get(first..)?;
            let counted = self.tier_up.and_then(|t| {
                if closed_loop(ops, pc) {
                    Some(t.loops)
                } else {
                    (t.blocks != u32::MAX).then_some(t.blocks)
                }
            });
            if self.code.room() < BLOCK_ROOM || (counted.is_some() && !self.code.count_room()) {
                let epoch = self.epoch;
                self.flush(epoch);
            }
            let counter = counted.and_then(|n| self.code.counter(n));
            let made = emit::block(self.code.next(), pc, ops, self.stubs, counter, self.guarded)?;
            if made.code.len() > self.code.room() {
                // (never: a block of the most ops is far below BLOCK_ROOM)
                return None;
            }
            let at = self.code.put(&made.code);
            self.sites.extend(
                made.sites
                    .iter()
                    .map(|&(s, e, slow)| (at + s as usize, at + e as usize, at + slow as usize)),
            );
            let vpn = pc >> 12;
            if self
                .pages
                .get(&vpn)
                .is_some_and(|p| !std::sync::Arc::ptr_eq(&p.buf, &buf))
            {
                // (never where the code cache's epoch tracks the page: `settle` ran first)
                self.drop_page(vpn);
            }
            self.pages
                .entry(vpn)
                .or_insert_with(|| BlockPage {
                    buf,
                    aside: false,
                    pcs: Vec::new(),
                })
                .pcs
                .push(pc);
            crate::store::perf_map("quick", at as *const u8, made.code.len(), pc);
            super::BLOCKS.fetch_add(1, Ordering::Relaxed);
            super::INSNS.fetch_add(made.insns as u64, Ordering::Relaxed);
            super::BYTES.fetch_add(made.code.len() as u64, Ordering::Relaxed);
            super::MAKE_NS.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            Some((at, counter.unwrap_or(0), made.hot.map_or(0, |h| at + h)))
        }

        /// The unit at `pc` is ready: the block there leaves for it at once from now on,
        /// however it is reached (chained jumps go straight to the block).
        pub fn redirect(&mut self, pc: u64) {
            if let Some(e) = self.entries.get(&pc) {
                if let Some(at) = e.block.filter(|&b| b != 0 && e.hot != 0) {
                    self.code.patch(at, &emit::jmp_insn(at, e.hot));
                }
            }
        }

        /// The block at `pc` counts `count` runs more before it asks again (its
        /// redirection, if any, taken back).
        pub fn recount(&mut self, pc: u64, count: u32) {
            if let Some(e) = self.entries.get(&pc) {
                if let Some(at) = e.block.filter(|&b| b != 0 && e.hot != 0) {
                    // SAFETY: the block's count, in the counts' part of the code memory.
                    unsafe { (e.counter as *mut u32).write(count) };
                    self.code.patch(at, &emit::count_insn(at, e.counter));
                }
            }
        }

        /// Runs the lane from `block` (the block at `st.pc`) until a block leaves to the
        /// dispatcher: the exit code and the stop, if any. With `check`, only that block
        /// runs, and it is compared with the interpreter run from the same state.
        pub fn run(
            &mut self,
            block: usize,
            st: &mut CpuState,
            mem: &mut AddressSpace,
            code: &mut CodeCache,
            limit: u64,
            mode: Mode,
        ) -> (u64, Option<Stop>) {
            let (check, units) = match mode {
                Mode::Chained(units) => (false, units),
                Mode::Checked => (true, std::ptr::null_mut()),
            };
            let before = check.then(|| {
                let copy = mem.clone();
                mem.flush_tlb();
                (st.clone(), copy)
            });
            // (blocks made for a guarded window run only while the address space has one;
            // the dispatcher then makes them again, see `block_at`)
            let window = window_of(mem);
            if self.guarded == window.is_null() {
                self.follow_window(mem);
                return (super::slow::exit::NEXT, None);
            }
            let (entries, mask) = mem.tlb_table();
            let epoch = self.epoch;
            let mem_ptr: *mut AddressSpace = mem;
            let mut ctx = QCtx {
                st,
                tlb_entries: entries,
                tlb_mask: mask,
                limit,
                table: if check {
                    super::NO_BLOCKS.as_ptr()
                } else {
                    self.table.as_ptr()
                },
                status: 0,
                hi: 0,
                mem,
                code,
                epoch,
                stop: None,
                units,
                window,
                window_end: armada_core::memory::WINDOW_BYTES,
            };
            let start = st.retired;
            // (what units entered from the blocks ran is the translation tier's count)
            // SAFETY: `units` is null or the dispatcher's link, live for this call.
            let in_units = || unsafe { units.as_ref().map_or(0, |l| l.ran) };
            let start_units = in_units();
            // SAFETY: the enter stub and `block` are this lane's code, made for this code
            // cache at this epoch; the context's pointers are the lane's state, memory,
            // code and table, which nothing else touches until the blocks return.
            let rc = unsafe {
                let enter: unsafe extern "sysv64" fn(*mut QCtx, usize) -> u64 =
                    std::mem::transmute(self.stubs.enter);
                if window.is_null() {
                    enter(&mut ctx, block)
                } else {
                    // the handler checked to be ours once a turn of the tier, as for units
                    // (a library loaded since may have replaced it)
                    match units.as_mut() {
                        Some(link) if link.handler_kept => {}
                        Some(link) => {
                            crate::guard::keep_handler();
                            link.handler_kept = true;
                        }
                        None => crate::guard::keep_handler(),
                    }
                    let q = crate::guard::QuickRun {
                        window,
                        mem: mem_ptr,
                        code: (self.code.base as usize, self.code.next()),
                        sites: self.sites.as_slice(),
                    };
                    crate::guard::with_quick(&q, || enter(&mut ctx, block))
                }
            };
            let stop = ctx.stop.take();
            super::RAN.fetch_add(
                st.retired - start - (in_units() - start_units),
                Ordering::Relaxed,
            );
            if let Some((st0, mem0)) = before {
                crate::check_unit(st0, mem0, st, rc, stop);
            }
            (rc, stop)
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
        use slow::exit;
        let mut lane = match code
            .take_tier_state()
            .map(|s| s.downcast::<lane::LaneQuick>())
        {
            Some(Ok(l)) => l,
            _ => match lane::LaneQuick::new(code.epoch(), None) {
                Some(l) => Box::new(l),
                // no executable memory to be had: the interpreter
                None => return cpu::interpret(st, mem, code, budget),
            },
        };
        let limit = st.retired.saturating_add(budget);
        // (the lane resumes where its last turn ended: see `LaneQuick::block_at`)
        let mut first = lane.budget_ended;
        let stop = loop {
            if st.retired >= limit {
                break Stop::Budget;
            }
            code.sync(mem);
            if code.epoch() != lane.epoch() {
                lane.revalidate(code.epoch(), mem);
            }
            let resumed = std::mem::take(&mut first);
            let Some(block) = lane.block_at(st.pc, mem, code, self.hot, resumed) else {
                match cpu::interpret_step(st, mem, code, limit - st.retired) {
                    Stop::Budget => continue,
                    stop => break stop,
                }
            };
            let mode = if self.check {
                lane::Mode::Checked
            } else {
                lane::Mode::Chained(std::ptr::null_mut())
            };
            match lane.run(block, st, mem, code, limit, mode) {
                (exit::NEXT, _) => {}
                (exit::SYSCALL, _) => break Stop::Syscall,
                (exit::INTERP, _) => match cpu::interpret(st, mem, code, limit - st.retired) {
                    Stop::Budget => {}
                    stop => break stop,
                },
                (_, stop) => break stop.unwrap_or(Stop::Undefined(0)),
            }
        };
        lane.budget_ended = stop == Stop::Budget;
        code.put_tier_state(lane);
        stop
    }
}
