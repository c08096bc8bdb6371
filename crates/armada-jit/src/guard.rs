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
//!
//! Only faults inside the running unit's window are ours; any other goes to the handler
//! that was there before (Rust's stack overflow report, or the default action).

use crate::helpers::Ctx;
use armada_core::memory::WINDOW_RESERVED;
use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// The context of the unit this thread runs (null outside units).
    static CURRENT: Cell<*mut Ctx> = const { Cell::new(std::ptr::null_mut()) };
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
