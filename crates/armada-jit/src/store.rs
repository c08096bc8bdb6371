//! Translated code and the module it lives in, shared by every lane whose code cache shares
//! decoded pages (the lanes of a batch, the processes of a lane).
//!
//! A unit made from a page no lane can write is kept under (entry PC, the page's buffer):
//! as for decoded pages, lanes of one image share the image's page buffers, so an equal
//! buffer means equal code, and holding the buffer keeps its address from being reused.
//! A unit made from writable code is handed to the one lane that asked, which drops it when
//! its code cache says the code changed.

use crate::helpers::CTX_ENTRY;
use crate::translate::{host_mem, translate};
use crate::unit;
use armada_core::cpu::code::CodePage;
use armada_core::memory::PageBuf;
use cranelift_codegen::ir::{types::I64, AbiParam, InstBuilder};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Module, ModuleReloc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::time::Instant;

/// Translated code's entry: `ctx` in, an exit code (`helpers::exit`) out.
///
/// Units are functions of Cranelift's `tail` calling convention, so a unit can leave by
/// jumping straight into the next (`return_call_indirect`) without the stack growing; the
/// dispatcher enters them through [`enter`]. `repr(transparent)` over a non-null pointer:
/// translated code reads a lane's table of `(u64, Option<UnitFn>)` as two u64s, 0 for None.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct UnitFn(pub(crate) std::ptr::NonNull<u8>);

// SAFETY: a unit is immutable code, valid while its store lives (every holder holds it).
unsafe impl Send for UnitFn {}
unsafe impl Sync for UnitFn {}

/// The signature of a unit: nothing in (the context is in the pinned register), an exit
/// code out, `tail` calling convention.
pub fn unit_signature() -> cranelift_codegen::ir::Signature {
    let mut s = cranelift_codegen::ir::Signature::new(CallConv::Tail);
    s.returns.push(AbiParam::new(I64));
    s
}

type Trampoline = unsafe extern "C" fn(*mut crate::helpers::Ctx, *const u8) -> u64;

/// Runs `f` with `ctx` until a unit returns to the dispatcher; its exit code. The
/// trampoline is made at the first call (not when the tier is made: a program that never
/// gets hot code pays nothing); without one nothing runs and the interpreter takes over
/// (`exit::INTERP`).
///
/// # Safety
/// `f` is a unit of a live store, `ctx` a context the dispatcher made for it.
pub unsafe fn enter(ctx: *mut crate::helpers::Ctx, f: UnitFn) -> u64 {
    match trampoline() {
        Some(t) => crate::guard::enter(t, ctx, f.0.as_ptr()),
        None => {
            // nothing ran: the flags the dispatcher takes back are the state's
            (*ctx).flags = [crate::flags::PACKED, 0, 0, 0, (*ctx).state.nzcv];
            crate::helpers::exit::INTERP
        }
    }
}

/// Runs unit `f` on `ctx`'s state as the dispatcher does, from wherever the tier is (the
/// dispatcher, or a quick block that reached the unit's entry): NZCV into the context's
/// flags, the TLB synced, the guarded window's handler told of the context where `guarded`;
/// then the flags packed back into the state. Returns the exit code; a stop is left in
/// `ctx.stop`.
///
/// # Safety
/// As [`enter`]; `mem` and `code` are the lane's, and nothing else touches them or `ctx`
/// until this returns.
pub(crate) unsafe fn run(
    ctx: *mut crate::helpers::Ctx,
    mem: &mut armada_core::memory::AddressSpace,
    code: &mut armada_core::cpu::CodeCache,
    f: UnitFn,
    guarded: bool,
    epoch: u64,
) -> u64 {
    use crate::helpers;
    let c = &mut *ctx;
    // NZCV as it is, for the first unit (see `flags`)
    c.flags = [crate::flags::PACKED, 0, 0, 0, c.state.nzcv];
    c.status = 0;
    c.epoch = epoch;
    c.mem = mem;
    c.code = code;
    helpers::sync_tlb(ctx, mem);
    let rc = if guarded {
        // SAFETY: as above; the handler acts on `ctx` only while the unit runs.
        let rc = crate::guard::with_ctx(ctx, || enter(ctx, f));
        // (a way out that leaves to the interpreter may leave a scratch page)
        helpers::unguard(ctx, mem);
        rc
    } else {
        enter(ctx, f)
    };
    let [k, a, b, r, nz] = (*ctx).flags;
    (*ctx).state.nzcv = crate::flags::pack(k, a, b, r, nz);
    rc
}

/// A C-convention function that calls a `tail`-convention unit: made once, in a module of
/// its own that lives as long as the process.
fn trampoline() -> Option<Trampoline> {
    static T: OnceLock<Option<usize>> = OnceLock::new();
    let p = (*T.get_or_init(|| {
        let t0 = Instant::now();
        let r = make_trampoline();
        if tracing() {
            eprintln!("armada-jit: trampoline made in {:?}", t0.elapsed());
        }
        r
    }))?;
    // SAFETY: made by `make_trampoline` with the signature `Trampoline` names, in the C
    // convention.
    Some(unsafe { std::mem::transmute::<usize, Trampoline>(p) })
}

/// A C-convention function `(ctx, unit) -> exit code` that calls the unit with the context
/// in the pinned register. That register is callee-saved in the C convention, but code made
/// with a pinned register never saves it: the trampoline keeps its caller's value and puts
/// it back.
fn make_trampoline() -> Option<usize> {
    let mut module = new_module()?;
    let cc = module.isa().default_call_conv();
    let mut ctx = module.make_context();
    ctx.func.signature.call_conv = cc;
    ctx.func.signature.params.push(AbiParam::new(I64));
    ctx.func.signature.params.push(AbiParam::new(I64));
    ctx.func.signature.returns.push(AbiParam::new(I64));
    let mut fctx = FunctionBuilderContext::new();
    {
        use cranelift_codegen::ir::InstBuilder;
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let blk = b.create_block();
        b.append_block_params_for_function_params(blk);
        b.switch_to_block(blk);
        let (c, f) = (b.block_params(blk)[0], b.block_params(blk)[1]);
        let sig = b.import_signature(unit_signature());
        let callers = b.ins().get_pinned_reg(I64);
        b.ins().set_pinned_reg(c);
        let call = b.ins().call_indirect(sig, f, &[]);
        let r = b.inst_results(call)[0];
        b.ins().set_pinned_reg(callers);
        b.ins().return_(&[r]);
        b.seal_all_blocks();
        b.finalize(module.isa().frontend_config());
    }
    let p = define_now(&mut module, &mut ctx)? as usize;
    // the trampoline lives as long as the process
    std::mem::forget(module);
    Some(p)
}

/// Compiles the function in `ctx` into `module` and makes it runnable: its address.
pub(crate) fn define_now(module: &mut JITModule, ctx: &mut Context) -> Option<*const u8> {
    let id = module
        .declare_anonymous_function(&ctx.func.signature)
        .ok()?;
    module.define_function(id, ctx).ok()?;
    module.finalize_definitions().ok()?;
    Some(module.get_finalized_function(id))
}

/// Past this much translated code a store translates nothing more (the interpreter runs
/// the rest): code that rewrites itself forever must not take all memory.
const MAX_CODE_BYTES: usize = 256 << 20;

/// A unit whose IR is larger than this is left to the interpreter: Cranelift's time grows
/// faster than the IR (the largest units real programs make, Go's P-521 arithmetic, are
/// about 40,000 instructions and take 0.1-0.3 s).
const MAX_IR_INSTS: usize = 1 << 17;

/// `ARMADA_JIT_TRACE`: what the tier does, on stderr.
pub fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("ARMADA_JIT_TRACE").is_some_and(|v| v != "0"))
}

/// `ARMADA_JIT_VERIFY`: Cranelift's verifier on every unit, and a unit it rejects ends the
/// process (the differential tests set it, so they cannot pass on the interpreter instead).
fn verifying() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("ARMADA_JIT_VERIFY").is_some())
}

/// `ARMADA_JIT_PERFMAP`: names each unit's (`kind` "unit") or quick block's ("quick") code
/// for `perf` in `/tmp/perf-PID.map` (as `<kind>_<entry PC>`), and with
/// `ARMADA_JIT_PERFMAP=dump` also writes its bytes to `/tmp/armada-<kind>-<entry PC>.bin`
/// (for `objdump -D -b binary -m i386:x86-64`).
pub(crate) fn perf_map(kind: &str, code: *const u8, size: usize, pc: u64) {
    static MODE: OnceLock<Option<String>> = OnceLock::new();
    let Some(mode) = MODE.get_or_init(|| std::env::var("ARMADA_JIT_PERFMAP").ok()) else {
        return;
    };
    use std::io::Write;
    let map = format!("/tmp/perf-{}.map", std::process::id());
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(map)
    {
        // (one write: lanes and compile threads append at once)
        let line = format!("{:x} {size:x} {kind}_{pc:x}\n", code as usize);
        let _ = f.write_all(line.as_bytes());
    }
    if mode == "dump" {
        // SAFETY: `size` bytes of finalized code start at `code`
        let bytes = unsafe { std::slice::from_raw_parts(code, size) };
        let _ = std::fs::write(format!("/tmp/armada-{kind}-{pc:x}.bin"), bytes);
    }
}

/// Units compiled and the time spent, over the whole process.
pub static UNITS: AtomicU64 = AtomicU64::new(0);
pub static COMPILE_NS: AtomicU64 = AtomicU64::new(0);
pub static GUEST_INSNS: AtomicU64 = AtomicU64::new(0);
pub static CODE_BYTES: AtomicU64 = AtomicU64::new(0);
pub static RAN_TRANSLATED: AtomicU64 = AtomicU64::new(0);

/// Where compiled code goes: the module it lives in, made on the first compile. Only
/// placing code in it takes its lock; compiling does not (see [`Store::compile`]).
struct Inner {
    module: Option<JITModule>,
    /// The module's target, for compiles outside the lock.
    isa: OwnedTargetIsa,
}

// SAFETY: the module is used only under the store's mutex, and nothing in it is tied to the
// thread that made it (its memory is plain mappings, freed in Drop).
unsafe impl Send for Inner {}

thread_local! {
    /// Cranelift's reusable contexts of the thread that compiles: a compile thread's, or a
    /// lane's that waits for its units or translates its writable code.
    static BUILD: std::cell::RefCell<(Context, FunctionBuilderContext)> =
        std::cell::RefCell::new((Context::new(), FunctionBuilderContext::new()));
}

/// A shared unit's entry: what is known of it; the page buffer the key's address stands
/// for; and how often lanes have asked for it while it waited, which orders the compile
/// queue.
struct Entry {
    state: State,
    _buffer: Arc<PageBuf>,
    heat: Arc<AtomicU32>,
}

#[derive(Clone, Copy)]
enum State {
    /// Waiting for a compile thread, or being compiled.
    Pending,
    /// Compiled (None: it runs on the interpreter).
    Done(Option<UnitFn>),
    /// Inside the unit `.0`, whose entry `.1` it is (see `Unit::entries`): a trampoline
    /// into it is made at the first ask.
    Inside(UnitFn, u32),
}

pub struct Store {
    /// Units for address spaces with guarded windows, whose accesses look at no TLB (see
    /// `guard`), or for the others.
    guarded: bool,
    /// Shared units by (entry PC, page buffer address). Read far more than written: every
    /// lane of a batch asks for each unit it reaches (its own table starts empty), so
    /// lookups share the lock (with a `Mutex`, 16 threads of short lanes spent most of a
    /// batch asleep on it). Even so, each read changes the lock's reader count, a cache
    /// line every core takes in turn: lanes keep what they were told (`LaneJit`'s entries)
    /// and ask again about a unit being made only after `finished` moved.
    map: RwLock<HashMap<(u64, usize), Entry>>,
    /// Compiles finished (a unit published, or left to the interpreter).
    finished: AtomicU64,
    /// Made on the first compile (a program that never gets hot never pays for it); an
    /// `Err` once making it failed.
    inner: Mutex<Result<Option<Inner>, ()>>,
    /// Bytes of host code in the module.
    code_bytes: AtomicUsize,
    /// The site tables of guarded units (see `guard`), which live as long as their code
    /// (boxed: the code holds each one's address).
    #[allow(clippy::vec_box)]
    sites: Mutex<Vec<Box<crate::guard::SiteTable>>>,
}

/// What the store's map has for an entry (see `Store::seen`).
enum Seen {
    Unit(Option<UnitFn>),
    Inside(UnitFn, u32),
    /// Being compiled; ask again later.
    Pending,
    /// Being compiled, and the caller waits: compile it now.
    Compile,
    Nothing,
}

/// What [`Store::unit`] found.
pub enum Found {
    /// The unit (None: this entry runs on the interpreter).
    Ready(Option<UnitFn>),
    /// Being compiled on a compile thread: interpret meanwhile.
    Pending,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Ok(Ok(Some(inner))) = self.inner.get_mut() {
            if let Some(m) = inner.module.take() {
                // SAFETY: every lane that held a pointer into this module held the store,
                // and the store is being dropped: no pointer is left.
                unsafe { m.free_memory() };
            }
        }
    }
}

/// The host's target with the settings translated code needs.
fn new_isa() -> Option<OwnedTargetIsa> {
    let mut flags = settings::builder();
    let opt = std::env::var("ARMADA_JIT_OPT").unwrap_or_else(|_| "speed".into());
    flags.set("opt_level", &opt).ok()?;
    if let Ok(ra) = std::env::var("ARMADA_JIT_RA") {
        flags.set("regalloc_algorithm", &ra).ok()?;
    }
    // the IR is checked in debug builds and under ARMADA_JIT_VERIFY (the differential
    // tests set it), not on every compile
    let verify = cfg!(debug_assertions) || verifying();
    flags
        .set("enable_verifier", if verify { "true" } else { "false" })
        .ok()?;
    // the long-range relocations and non-PIC code `JITBuilder::new` asks for
    flags.set("use_colocated_libcalls", "false").ok()?;
    flags.set("is_pic", "false").ok()?;
    // Cranelift's tail calls (a unit jumping to the next) need frame pointers
    flags.set("preserve_frame_pointers", "true").ok()?;
    // the context's register (see `helpers::Ctx`)
    flags.set("enable_pinned_reg", "true").ok()?;
    cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()
}

pub(crate) fn new_module() -> Option<JITModule> {
    Some(module_for(new_isa()?))
}

fn module_for(isa: OwnedTargetIsa) -> JITModule {
    #[allow(unused_mut)]
    let mut b = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    // units' code costs no system call (see `codemem`)
    #[cfg(target_arch = "x86_64")]
    b.memory_provider(Box::new(crate::codemem::CodeMemory::new()));
    JITModule::new(b)
}

/// A unit for a compile thread to make, and how often lanes asked for it while it waited.
struct Job {
    store: Weak<Store>,
    page: CodePage,
    pc: u64,
    only_ran: bool,
    heat: Arc<AtomicU32>,
}

/// The compile threads' work: hottest first. A program's start makes many units that are
/// warm for a moment (each entry reached a few dozen times) and few that it then spends its
/// time in; in arrival order the hot ones waited behind the warm ones, which ran on the
/// interpreter meanwhile. A lane that finds its unit still waiting adds to its heat (see
/// `LaneJit::miss`), so the pick is by how often code is being reached now.
struct Queue {
    jobs: Mutex<Vec<Job>>,
    more: Condvar,
}

impl Queue {
    fn push(&self, job: Job) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.push(job);
            self.more.notify_one();
        }
    }

    /// The hottest job, waiting for one when there is none. (A linear pick: a compile takes
    /// milliseconds, a scan of thousands of jobs microseconds.)
    fn pop(&self) -> Option<Job> {
        let mut jobs = self.jobs.lock().ok()?;
        loop {
            let hottest = jobs
                .iter()
                .enumerate()
                .max_by_key(|(_, j)| j.heat.load(Ordering::Relaxed))
                .map(|(i, _)| i);
            if let Some(i) = hottest {
                return Some(jobs.swap_remove(i));
            }
            jobs = self.more.wait(jobs).ok()?;
        }
    }
}

/// The compile threads' queue: None where no thread could be started (then lanes compile
/// for themselves).
fn queue() -> Option<&'static Queue> {
    static QUEUE: OnceLock<Option<Arc<Queue>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let q = Arc::new(Queue {
                jobs: Mutex::new(Vec::new()),
                more: Condvar::new(),
            });
            // a core or two beside the lanes: compiles are shared by every lane, so a
            // batch on all cores needs few of them
            let n = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .saturating_sub(1)
                .clamp(1, 3);
            let mut started = 0;
            for i in 0..n {
                let q = q.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("armada-jit-{i}"))
                    .spawn(move || {
                        while let Some(job) = q.pop() {
                            if let Some(store) = job.store.upgrade() {
                                store.compile_shared(&job.page, job.pc, job.only_ran);
                            }
                        }
                    });
                started += spawned.is_ok() as usize;
            }
            (started > 0).then_some(q)
        })
        .as_deref()
}

impl Store {
    pub fn new(guarded: bool) -> Store {
        Store {
            guarded,
            map: RwLock::new(HashMap::new()),
            finished: AtomicU64::new(0),
            inner: Mutex::new(Ok(None)),
            code_bytes: AtomicUsize::new(0),
            sites: Mutex::new(Vec::new()),
        }
    }

    /// A shared unit's key: its entry and its page's buffer (None: writable code).
    fn key(page: &CodePage, pc: u64) -> Option<(u64, usize)> {
        page.buffer.as_ref().map(|b| Self::key_of(pc, b))
    }

    fn key_of(pc: u64, buffer: &Arc<PageBuf>) -> (u64, usize) {
        (pc, Arc::as_ptr(buffer) as *const u8 as usize)
    }

    /// Compiles finished so far: while this has not moved, a unit the store said was being
    /// made still is.
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::Acquire)
    }

    /// What is known of the shared unit entered at `pc` of the page whose buffer is `buffer`
    /// (see `CodeCache::page_buffer`): None when nothing is yet, so the caller goes on to
    /// [`Self::unit`] with the page's micro-ops (a copy of the page it spares otherwise).
    pub fn known(&self, pc: u64, buffer: &Arc<PageBuf>) -> Option<Found> {
        let key = Self::key_of(pc, buffer);
        let state = {
            let map = self.map.read().ok()?;
            let e = map.get(&key)?;
            if let State::Pending = e.state {
                e.heat.fetch_add(1, Ordering::Relaxed);
            }
            e.state
        };
        Some(match state {
            State::Done(f) => Found::Ready(f),
            State::Inside(body, k) => Found::Ready(self.entered(key, body, k)),
            State::Pending => Found::Pending,
        })
    }

    /// The unit entered at `pc` of `page`: only of the blocks that ran if `only_ran` (see
    /// `unit::scan`). A unit of code no lane can write is made once for all lanes: on a
    /// compile thread unless `wait`, else now. One of writable code is made now for this
    /// lane alone.
    pub fn unit(self: &Arc<Self>, page: CodePage, pc: u64, wait: bool, only_ran: bool) -> Found {
        let Some(key) = Self::key(&page, pc) else {
            // (nothing enters a lane's own unit but at its entry)
            return Found::Ready(self.compile(&page, pc, only_ran).map(|(f, _)| f));
        };
        // what is known already, under the shared lock
        let known = match self.map.read() {
            Ok(map) => Self::seen(&map, &key, wait),
            Err(_) => return Found::Ready(None),
        };
        match known {
            Seen::Unit(f) => return Found::Ready(f),
            Seen::Inside(body, k) => return Found::Ready(self.entered(key, body, k)),
            Seen::Pending => return Found::Pending,
            Seen::Nothing | Seen::Compile => {}
        }
        {
            let Ok(mut map) = self.map.write() else {
                return Found::Ready(None);
            };
            // (again: another thread may have come between the two locks)
            match Self::seen(&map, &key, wait) {
                Seen::Unit(f) => return Found::Ready(f),
                Seen::Inside(body, k) => {
                    drop(map);
                    return Found::Ready(self.entered(key, body, k));
                }
                Seen::Pending => return Found::Pending,
                Seen::Compile => {}
                Seen::Nothing => {
                    let heat = Arc::new(AtomicU32::new(0));
                    map.insert(
                        key,
                        Entry {
                            state: State::Pending,
                            _buffer: page.buffer.clone().expect("a key has a buffer"),
                            heat: heat.clone(),
                        },
                    );
                    if !wait {
                        if let Some(q) = queue() {
                            q.push(Job {
                                store: Arc::downgrade(self),
                                page,
                                pc,
                                only_ran,
                                heat,
                            });
                            return Found::Pending;
                        }
                    }
                }
            }
        }
        Found::Ready(self.compile_shared(&page, pc, only_ran))
    }

    /// What `map` has at `key`, for [`Self::unit`]; a waiting compile's heat is counted
    /// (unless the caller will `wait` for it).
    fn seen(map: &HashMap<(u64, usize), Entry>, key: &(u64, usize), wait: bool) -> Seen {
        match map.get(key) {
            None => Seen::Nothing,
            Some(e) => match e.state {
                State::Done(f) => Seen::Unit(f),
                State::Inside(body, k) => Seen::Inside(body, k),
                State::Pending if !wait => {
                    e.heat.fetch_add(1, Ordering::Relaxed);
                    Seen::Pending
                }
                State::Pending => Seen::Compile,
            },
        }
    }

    /// Compiles a shared unit and publishes it (unless another thread did first, or a
    /// unit compiled since has this entry too), and its other entries where nothing is
    /// known of them yet or they wait for a compile.
    fn compile_shared(&self, page: &CodePage, pc: u64, only_ran: bool) -> Option<UnitFn> {
        let key = Self::key(page, pc)?;
        let state = self.map.read().ok()?.get(&key).map(|e| e.state);
        match state {
            Some(State::Done(f)) => return f,
            Some(State::Inside(body, k)) => return self.entered(key, body, k),
            _ => {}
        }
        let compiled = self.compile(page, pc, only_ran);
        let f = compiled.as_ref().map(|(f, _)| *f);
        if let Ok(mut map) = self.map.write() {
            if let Some(e) = map.get_mut(&key) {
                e.state = State::Done(f);
            }
            self.finished.fetch_add(1, Ordering::Release);
            if let (Some((body, others)), Some(buffer)) = (&compiled, &page.buffer) {
                for (i, &slot) in others.iter().enumerate() {
                    let key = Self::key_of(page.base + 4 * slot as u64, buffer);
                    let inside = State::Inside(*body, i as u32 + 1);
                    match map.get_mut(&key) {
                        None => {
                            map.insert(
                                key,
                                Entry {
                                    state: inside,
                                    _buffer: buffer.clone(),
                                    heat: Arc::new(AtomicU32::new(0)),
                                },
                            );
                        }
                        // its job makes the trampoline when it comes up
                        Some(
                            e @ Entry {
                                state: State::Pending,
                                ..
                            },
                        ) => e.state = inside,
                        Some(_) => {}
                    }
                }
            }
        }
        f
    }

    /// The entry at `key`, the `k`th other entry of the unit `body`: a trampoline that
    /// enters `body` there, made now and published (unless another thread did first).
    fn entered(&self, key: (u64, usize), body: UnitFn, k: u32) -> Option<UnitFn> {
        // (another lane may have made it meanwhile)
        if let Some(Entry {
            state: State::Done(f),
            ..
        }) = self.map.read().ok()?.get(&key)
        {
            return *f;
        }
        let t = self.trampoline(body, k, key.0);
        let mut map = self.map.write().ok()?;
        let e = map.get_mut(&key)?;
        match e.state {
            State::Done(f) => f,
            _ => {
                e.state = State::Done(t);
                t
            }
        }
    }

    /// The target, making the module on the first call.
    fn isa(&self) -> Option<OwnedTargetIsa> {
        let mut g = self.inner.lock().ok()?;
        if let Ok(None) = *g {
            *g = new_isa()
                .map(|isa| {
                    Some(Inner {
                        module: Some(module_for(isa.clone())),
                        isa,
                    })
                })
                .ok_or(());
        }
        Some(g.as_ref().ok()?.as_ref()?.isa.clone())
    }

    /// Translates and compiles the unit entered at `pc` of `page`. Threads compile at once:
    /// only placing the code in the module is under the store's lock (with one lock over
    /// the whole compile, the GPU machine's host had three compile threads and one core
    /// compiling).
    ///
    /// Returns the unit and the slots of its other entries (see `Unit::entries`), the
    /// `k`th entered with the context's entry set to `k + 1`.
    fn compile(&self, page: &CodePage, pc: u64, only_ran: bool) -> Option<(UnitFn, Vec<usize>)> {
        if self.code_bytes.load(Ordering::Relaxed) > MAX_CODE_BYTES {
            return None;
        }
        let slot = ((pc - page.base) / 4) as usize;
        // only the blocks that ran (with `hot` 1 nothing has but the entry)
        let follow = |s: usize| !only_ran || page.ran_at(s);
        let unit = unit::scan(&page.ops, page.base, slot, follow)?;
        let isa = self.isa()?;
        BUILD.with(|b| {
            let (ctx, fctx) = &mut *b.try_borrow_mut().ok()?;
            let f = self.compile_in(ctx, fctx, &*isa, &unit, page, pc);
            ctx.clear();
            Some((f?, unit.entries()))
        })
    }

    /// A trampoline into the unit `body` at its `k`th other entry (for the entry at `pc`):
    /// it sets the context's entry and jumps there.
    fn trampoline(&self, body: UnitFn, k: u32, pc: u64) -> Option<UnitFn> {
        let isa = self.isa()?;
        BUILD.with(|build| {
            let (ctx, fctx) = &mut *build.try_borrow_mut().ok()?;
            ctx.func.signature = unit_signature();
            let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
            let blk = b.create_block();
            b.switch_to_block(blk);
            b.seal_block(blk);
            let c = b.ins().get_pinned_reg(I64);
            let k = b.ins().iconst(I64, k as i64);
            b.ins().store(host_mem(), k, c, CTX_ENTRY);
            let sig = b.import_signature(unit_signature());
            let f = b.ins().iconst(I64, body.0.as_ptr() as i64);
            b.ins().return_call_indirect(sig, f, &[]);
            b.finalize(isa.frontend_config());
            let placed = match ctx.compile(&*isa, &mut Default::default()) {
                Ok(_) => self.place(ctx, pc),
                Err(_) => None,
            };
            ctx.clear();
            placed.map(|(f, _)| f)
        })
    }

    /// Puts the code `ctx` compiled (for the entry at `pc`) into the module: the code and
    /// its size.
    fn place(&self, ctx: &Context, pc: u64) -> Option<(UnitFn, usize)> {
        let code = ctx.compiled_code()?;
        let bytes = code.code_buffer();
        let size = bytes.len();
        let ptr = {
            let mut g = self.inner.lock().ok()?;
            let module = g.as_mut().ok()?.as_mut()?.module.as_mut()?;
            let id = module
                .declare_anonymous_function(&ctx.func.signature)
                .ok()?;
            let relocs: Vec<ModuleReloc> = code
                .buffer
                .relocs()
                .iter()
                .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
                .collect();
            module
                .define_function_bytes(id, code.buffer.alignment as u64, bytes, &relocs)
                .ok()?;
            module.finalize_definitions().ok()?;
            module.get_finalized_function(id)
        };
        perf_map("unit", ptr, size, pc);
        self.code_bytes.fetch_add(size, Ordering::Relaxed);
        CODE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        Some((std::ptr::NonNull::new(ptr as *mut u8).map(UnitFn)?, size))
    }

    fn compile_in(
        &self,
        ctx: &mut Context,
        fctx: &mut FunctionBuilderContext,
        isa: &dyn TargetIsa,
        unit: &unit::Unit,
        page: &CodePage,
        pc: u64,
    ) -> Option<UnitFn> {
        let adapters = crate::adapters::adapters()?;
        let t = Instant::now();
        // (the caller clears `ctx` after each compile)
        ctx.func.signature = unit_signature();
        // (boxed first: the unit stores its address in the context when entered)
        let sites = (self.guarded && crate::guard::EXACT_SITES)
            .then(|| Box::new(crate::guard::SiteTable::default()));
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let b = FunctionBuilder::new(&mut ctx.func, fctx);
            translate(
                b,
                unit,
                &page.ops,
                adapters,
                isa.default_call_conv(),
                isa.frontend_config(),
                crate::translate::Guarding {
                    guarded: self.guarded,
                    sites: sites.as_deref(),
                },
            );
        }));
        built.ok()?;
        let t_ir = t.elapsed();
        let ir_insts = ctx.func.dfg.num_insts();
        let debug = std::env::var_os("ARMADA_JIT_DEBUG");
        if ir_insts > MAX_IR_INSTS {
            if debug.is_some() {
                eprintln!("armada-jit: unit at {pc:#x} not translated: {ir_insts} IR instructions");
            }
            return None;
        }
        if debug.is_some_and(|v| v == "ir") {
            eprintln!("armada-jit: unit at {pc:#x}:\n{}", ctx.func.display());
        }
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ctx.compile(isa, &mut Default::default())
                .map(|_| ())
                .map_err(|e| format!("{:?}", e.inner))
        }));
        if !matches!(compiled, Ok(Ok(()))) {
            let verify = verifying();
            if verify || std::env::var_os("ARMADA_JIT_DEBUG").is_some() {
                let why = match compiled {
                    Ok(Err(e)) => e,
                    _ => "panic".into(),
                };
                eprintln!("armada-jit: unit at {pc:#x} not translated: {why}");
            }
            if verify {
                // the tests that verify must not pass on the interpreter instead
                std::process::abort();
            }
            return None;
        }
        let t_cg = t.elapsed();
        let (f, size) = self.place(ctx, pc)?;
        if let Some(table) = sites {
            let locs: Vec<(u32, u32, u32)> = ctx
                .compiled_code()
                .map(|c| c.buffer.get_srclocs_sorted())
                .unwrap_or_default()
                .iter()
                .map(|l| (l.start, l.end, l.loc.bits()))
                .collect();
            table.fill(f.0.as_ptr() as usize, size, page.base, &locs);
            // (kept whatever happened to the lock: the code holds its address)
            let mut kept = self.sites.lock().unwrap_or_else(|e| e.into_inner());
            kept.push(table);
        }
        if tracing() {
            eprintln!(
                "armada-jit: unit {pc:#x}: {ir_insts} IR instructions in {:?}, codegen {:?}, placed {:?}, {size} bytes",
                t_ir,
                t_cg - t_ir,
                t.elapsed() - t_cg
            );
            // Cranelift's time by pass, for this unit (its timings accumulate per thread)
            eprintln!(
                "armada-jit: passes\n{}",
                cranelift_codegen::timing::take_current()
            );
        }
        UNITS.fetch_add(1, Ordering::Relaxed);
        COMPILE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let insns: usize = unit.blocks.iter().map(|b| b.end - b.start).sum();
        GUEST_INSNS.fetch_add(insns as u64, Ordering::Relaxed);
        Some(f)
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new(false)
    }
}
