//! Guarded accesses: the host's MMU as the check of translated loads and stores, as in
//! qemu-user.
//!
//! In an address space with a guarded window (`memory::guards_possible`), translated code
//! reads and writes guest address `a` at `window + a` with no TLB lookup (access.rs). The
//! window shows a page only as the guest may use it (readable; writable only where a TLB
//! write tag would be allowed), and its reservation faults elsewhere. A host SIGSEGV there
//! comes here:
//!
//! - The page is one the guest may access as it did, only not shown yet (never used, or
//!   taken back by a TLB flush, or shown read-only before its first write):
//!   `AddressSpace::guard_fault` shows it, and the access is made again on return.
//! - The guest itself faults (no area, no permission), or writes decoded code: a scratch
//!   page is put there, so the access completes when made again, and `Ctx::fault` is set.
//!   Every guarded access tests `Ctx::fault` right after itself and, when it is set, takes
//!   its slow path, which takes the scratch page away (`helpers::unguard`) and makes the
//!   access through the interpreter's path: that reports the fault, or the write to code,
//!   with the state exact, as on a TLB miss.
//! - Except at an exact site (x86-64 hosts): an access where the state and the flags in
//!   the context are already the guest's as they were before the access (outside host
//!   loops, where nothing is left unstored when an access begins). There the access tests
//!   nothing after itself, and the handler leaves the unit in its stead
//!   ([`leave_at_site`]): it finds the access's slot in the unit's site table (by the
//!   faulting instruction's address), sets the PC and count, and returns into
//!   [`enter`]'s way out with `exit::ONE`, so the interpreter makes the access, as the
//!   slow path would have. The test of the fault word after every access (a load and a
//!   branch, and a barrier to Cranelift's moving of loads) cost bzip2 and xz -1 about a
//!   tenth of their time.
//!
//! Only faults inside the running unit's window are ours; any other goes to the handler
//! that was there before (Rust's stack overflow report, or the default action).

use crate::helpers::Ctx;
use armada_core::memory::{AddressSpace, WINDOW_RESERVED};
use std::cell::Cell;
use std::sync::{Once, OnceLock};

/// Whether units may have exact sites (see the module's documentation): the handler's way
/// out needs [`enter`]'s frame, written for x86-64 Linux.
pub(crate) const EXACT_SITES: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// A guarded unit's accesses, for the handler: filled when the unit's code is placed,
/// before any lane can run it. The unit stores the table's address in `Ctx::sites` when
/// it is entered (its address is in the code, so it is boxed before the unit is built).
#[derive(Default)]
pub struct SiteTable(OnceLock<Sites>);

// (read by the handler's way out, which other hosts do not have yet)
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
struct Sites {
    /// The unit's code: its address and size.
    code: usize,
    size: usize,
    /// Its page's first guest address (slot `i` is at `base + 4 * i`).
    base: u64,
    /// Code ranges (offsets from `code`) of guarded accesses' host accesses, by start,
    /// each with its site (see [`site_loc`]).
    ranges: Vec<(u32, u32, u32)>,
}

/// Marks a source location as a guarded access's, and as an exact site's.
const SITE: u32 = 1 << 31;
const EXACT: u32 = 1 << 30;

/// The source location translated code gives a guarded access's host accesses: whether it
/// is an exact site, the op's slot and its count from its block's start (`n`), which the
/// handler adds to `Ctx::blk_ret`.
pub(crate) fn site_loc(slot: usize, n: usize, exact: bool) -> u32 {
    debug_assert!(slot < 1 << 15 && n < 1 << 15);
    SITE | if exact { EXACT } else { 0 } | (n as u32) << 15 | slot as u32
}

/// What the handler finds at a faulting instruction (see [`SiteTable::at`]).
#[derive(Debug)]
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
enum Found {
    /// An exact site: its guest PC and count from its block's start.
    Exact(u64, u64),
    /// A guarded access that tests the fault word after itself, or an instruction outside
    /// the unit (whose table is not yet filled, or which the context's table is not of).
    Checked,
    /// An instruction of the unit that is no guarded access.
    Unknown,
}

impl SiteTable {
    /// Fills the table of the unit placed at `code` (`size` bytes) for the page at `base`,
    /// from the source locations of its compiled code.
    pub(crate) fn fill(&self, code: usize, size: usize, base: u64, locs: &[(u32, u32, u32)]) {
        let ranges = locs
            .iter()
            .copied()
            .filter(|&(_, _, l)| l != !0 && l & SITE != 0)
            .collect();
        let _ = self.0.set(Sites {
            code,
            size,
            base,
            ranges,
        });
    }

    /// The guarded access whose host access is at host address `pc`.
    #[cfg_attr(
        not(all(target_arch = "x86_64", target_os = "linux")),
        allow(dead_code)
    )]
    fn at(&self, pc: usize) -> Found {
        let Some(s) = self.0.get() else {
            return Found::Checked;
        };
        let Some(off) = pc.checked_sub(s.code).filter(|&o| o < s.size) else {
            return Found::Checked;
        };
        let off = off as u32;
        let Some(i) = s.ranges.partition_point(|r| r.0 <= off).checked_sub(1) else {
            return Found::Unknown;
        };
        let (_, end, loc) = s.ranges[i];
        match (off < end, loc & EXACT != 0) {
            (false, _) => Found::Unknown,
            (true, false) => Found::Checked,
            (true, true) => Found::Exact(
                s.base + 4 * (loc & 0x7fff) as u64,
                ((loc >> 15) & 0x7fff) as u64,
            ),
        }
    }
}

/// A lane's quick blocks made for its guarded window, while they run (see
/// `quick::emit`, [`with_quick`]): a host fault at one of their guarded accesses shows the
/// page, or goes on at the access's slow path, which makes the access as the interpreter
/// does (the registers are as the access left them: it wrote nothing).
pub(crate) struct QuickRun {
    pub window: *const u8,
    pub mem: *mut AddressSpace,
    /// The lane's code memory: [start, end).
    pub code: (usize, usize),
    /// Each guarded access's host instruction, [start, end), and its slow path, by start.
    pub sites: *const [(usize, usize, usize)],
}

thread_local! {
    /// The context of the unit this thread runs (null outside units).
    static CURRENT: Cell<*mut Ctx> = const { Cell::new(std::ptr::null_mut()) };
    /// The quick blocks this thread runs on a guarded window (null otherwise).
    static QUICK: Cell<*const QuickRun> = const { Cell::new(std::ptr::null()) };
    /// Whether this thread has a signal stack of ours.
    static STACK: Cell<bool> = const { Cell::new(false) };
}

/// The handler before ours, for faults that are not ours.
static mut OLD: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
static INSTALL: Once = Once::new();

/// Bytes of the signal stack the handler runs on: it shows pages (the address space's
/// maps, a page buffer, a host `mmap`), more than the small stack Rust gives a thread for
/// its overflow report.
const STACK_BYTES: usize = 256 << 10;

/// Runs `f` (which enters a unit) with `ctx` as the thread's unit context, so that faults
/// in `ctx`'s window are handled; the handler is installed on first use.
pub(crate) fn with_ctx<R>(ctx: *mut Ctx, f: impl FnOnce() -> R) -> R {
    INSTALL.call_once(install);
    if !STACK.get() {
        STACK.set(true);
        alt_stack();
    }
    CURRENT.set(ctx);
    let r = f();
    CURRENT.set(std::ptr::null_mut());
    r
}

/// Guarded accesses of quick blocks that a host fault sent to their slow paths (the guest's
/// own faults, writes to decoded code), whole process.
pub(crate) static QUICK_SLOW_PATHS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// Runs `f` (which runs quick blocks) with `q` as the thread's quick blocks, so that faults
/// at their guarded accesses are handled; the handler is installed on first use. (Units
/// the blocks enter run inside, with their own context: a fault is the blocks' only where
/// it is at an instruction of their code.)
pub(crate) fn with_quick<R>(q: &QuickRun, f: impl FnOnce() -> R) -> R {
    // (the caller has checked the handler is ours this turn: `keep_handler`)
    INSTALL.call_once(install);
    if !STACK.get() {
        STACK.set(true);
        alt_stack();
    }
    let before = QUICK.replace(q);
    let r = f();
    QUICK.set(before);
    r
}

/// A fault at an instruction of the running quick blocks, in their window: the page shown
/// (the access is made again), or the thread sent on to the access's slow path. False where
/// the fault is not theirs.
///
/// # Safety
/// `q` is the running blocks' [`QuickRun`], `uc` the handler's `ucontext_t`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe fn quick_fault(q: *const QuickRun, a: u64, uc: *mut libc::c_void) -> bool {
    let uc = &mut *(uc as *mut libc::ucontext_t);
    let rip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
    let q = &*q;
    let base = q.window as u64;
    if rip < q.code.0 || rip >= q.code.1 || a < base || a - base >= WINDOW_RESERVED {
        return false;
    }
    // SAFETY: the blocks run on this address space and are stopped in this handler, on
    // this thread: nothing else uses it until they go on.
    let mem = &mut *q.mem;
    let write = Some(uc.uc_mcontext.gregs[libc::REG_ERR as usize] & 2 != 0);
    if mem.guard_fault(a - base, write) {
        return true;
    }
    let sites = &*q.sites;
    let i = sites.partition_point(|s| s.0 <= rip);
    match i.checked_sub(1).map(|i| sites[i]) {
        Some((_, end, slow)) if rip < end => {
            uc.uc_mcontext.gregs[libc::REG_RIP as usize] = slow as i64;
            QUICK_SLOW_PATHS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
        _ => {
            // every access of the blocks to their window is a site: one not found would
            // have no way on
            let msg = b"armada-jit: a guest fault at a quick block's instruction that is no guarded access's; stopping\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::abort();
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
unsafe fn quick_fault(_q: *const QuickRun, _a: u64, _uc: *mut libc::c_void) -> bool {
    false
}

/// Puts the handler back if another took its place since (what it replaced is then the
/// handler faults that are not ours go to). Libraries loaded into the same process install
/// their own: in Python, Ray's (Abseil's failure handler, which prints a stack and ends
/// the process) replaced ours, and the next guarded access to a page not shown yet ended
/// the test run. Called once each time the tier runs a lane with a guarded window (a
/// system call's time or so apart): a query of the handler is one cheap system call.
pub(crate) fn keep_handler() {
    INSTALL.call_once(install);
    // SAFETY: reads the current handler, into a local.
    let ours = unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut cur) != 0
            || cur.sa_sigaction == on_segv as *const () as usize
    };
    if !ours {
        install();
    }
}

fn install() {
    // SAFETY: a handler for SIGSEGV that only acts on faults in windows of units it knows,
    // and hands every other fault to the handler it replaced.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_segv as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGSEGV, &sa, (&raw mut OLD).cast());
    }
}

/// Gives this thread a signal stack of [`STACK_BYTES`] (kept for the thread's life: the
/// threads that run units are few), unless it has a larger one.
fn alt_stack() {
    // SAFETY: queries, then sets, this thread's signal stack to memory leaked for it.
    unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut old) == 0
            && old.ss_flags & libc::SS_DISABLE == 0
            && old.ss_size >= STACK_BYTES
        {
            return;
        }
        let mem = Box::leak(vec![0u8; STACK_BYTES].into_boxed_slice());
        let st = libc::stack_t {
            ss_sp: mem.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: STACK_BYTES,
        };
        libc::sigaltstack(&st, std::ptr::null_mut());
    }
}

/// Whether the fault was a write, where the host says so (x86-64: the page fault's error
/// code); None where it does not (then a fault on a page shown readable is a write).
///
/// # Safety
/// `uc` is the `ucontext_t` the kernel passed to the handler.
unsafe fn was_write(uc: *mut libc::c_void) -> Option<bool> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let uc = uc as *const libc::ucontext_t;
        Some((*uc).uc_mcontext.gregs[libc::REG_ERR as usize] & 2 != 0)
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = uc;
        None
    }
}

unsafe extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let q = QUICK.get();
    if !q.is_null() && quick_fault(q, (*info).si_addr() as u64, uc) {
        return;
    }
    let ctx = CURRENT.get();
    if !ctx.is_null() && !(*ctx).window.is_null() && !(*ctx).mem.is_null() {
        let a = (*info).si_addr() as u64;
        let base = (*ctx).window as u64;
        if a >= base && a - base < WINDOW_RESERVED {
            let addr = a - base;
            // SAFETY: the unit runs on `ctx` and is stopped in this handler, on this
            // thread: nothing else uses its address space until it goes on.
            let mem = &mut *(*ctx).mem;
            if (*ctx).fault == 0 && mem.guard_fault(addr, was_write(uc)) {
                return;
            }
            if (*ctx).fault == 0 && leave_at_site(ctx, uc) {
                return;
            }
            // (an access that crosses pages may need a scratch page on each)
            let free = if (*ctx).fault == 0 {
                Some(&raw mut (*ctx).fault)
            } else {
                ((*ctx).fault2 == 0).then_some(&raw mut (*ctx).fault2)
            };
            if let Some(f) = free {
                if mem.guard_scratch(addr, true) {
                    *f = (addr & !0xfff) + 1;
                    return;
                }
            }
            // no scratch page: not recoverable
        }
    }
    // not ours: the handler before ours decides (on return the access faults again)
    libc::sigaction(sig, (&raw const OLD).cast(), std::ptr::null_mut());
}

/// At an exact site (see the module's documentation), leaves the unit: the PC and count to
/// the state, and the thread goes on in [`enter`]'s way out with `exit::ONE`. False where
/// the faulting instruction is no exact site's (the access then tests the fault word).
///
/// # Safety
/// `ctx` is the running unit's context, `uc` the handler's `ucontext_t`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe fn leave_at_site(ctx: *mut Ctx, uc: *mut libc::c_void) -> bool {
    let table = (*ctx).sites;
    if table.is_null() || (*ctx).jmp_sp == 0 {
        return false;
    }
    let uc = &mut *(uc as *mut libc::ucontext_t);
    let g = &mut uc.uc_mcontext.gregs;
    let (pc, n) = match (*table).at(g[libc::REG_RIP as usize] as usize) {
        Found::Exact(pc, n) => (pc, n),
        Found::Checked => return false,
        Found::Unknown => {
            // Every guarded access of a unit with a table is in it: an exact site not
            // found would go on past its fault with a scratch page's bytes.
            let msg = b"armada-jit: a guest fault at a host instruction that is no guarded access's; stopping\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::abort();
        }
    };
    (*ctx).state.pc = pc;
    (*ctx).state.retired = (*ctx).blk_ret + n;
    g[libc::REG_RSP as usize] = (*ctx).jmp_sp as i64;
    g[libc::REG_RAX as usize] = crate::helpers::exit::ONE as i64;
    g[libc::REG_RIP as usize] = std::ptr::addr_of!(armada_jit_way_out) as i64;
    true
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
unsafe fn leave_at_site(_ctx: *mut Ctx, _uc: *mut libc::c_void) -> bool {
    false
}

/// Runs the C-convention trampoline `t` (`(ctx, unit) -> exit code`, see `store`) in a frame
/// the handler can return to: the callee-saved registers are pushed and the stack pointer
/// kept in `Ctx::jmp_sp`, and `armada_jit_way_out` (the return from `t`) pops them. The
/// handler leaves a unit by setting the stack pointer to `jmp_sp` and the instruction
/// pointer there, abandoning the frames of the units and of `t` (which own nothing).
///
/// # Safety
/// As for calling `t(ctx, unit)`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(crate) unsafe fn enter(
    t: unsafe extern "C" fn(*mut Ctx, *const u8) -> u64,
    ctx: *mut Ctx,
    unit: *const u8,
) -> u64 {
    let r = armada_jit_enter(ctx.cast(), t as *const u8, unit);
    (*ctx).jmp_sp = 0;
    r
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub(crate) unsafe fn enter(
    t: unsafe extern "C" fn(*mut Ctx, *const u8) -> u64,
    ctx: *mut Ctx,
    unit: *const u8,
) -> u64 {
    t(ctx, unit)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" {
    fn armada_jit_enter(ctx: *mut u8, t: *const u8, unit: *const u8) -> u64;
    static armada_jit_way_out: u8;
}

// armada_jit_enter(ctx = rdi, t = rsi, unit = rdx): six registers pushed and eight bytes
// more keep the stack 16-byte aligned at the call.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(
    ".pushsection .text.armada_jit_enter,\"ax\",@progbits",
    ".globl armada_jit_enter",
    ".hidden armada_jit_enter",
    ".type armada_jit_enter,@function",
    ".p2align 4",
    "armada_jit_enter:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "push rbx",
    ".cfi_offset rbx, -24",
    "push r12",
    ".cfi_offset r12, -32",
    "push r13",
    ".cfi_offset r13, -40",
    "push r14",
    ".cfi_offset r14, -48",
    "push r15",
    ".cfi_offset r15, -56",
    "sub rsp, 8",
    "mov [rdi + {jmp}], rsp",
    "mov rax, rsi",
    "mov rsi, rdx",
    "call rax",
    ".globl armada_jit_way_out",
    ".hidden armada_jit_way_out",
    "armada_jit_way_out:",
    "add rsp, 8",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size armada_jit_enter, . - armada_jit_enter",
    ".popsection",
    jmp = const std::mem::offset_of!(Ctx, jmp_sp),
);
