//! armada's translation tier: the CPU engine's hot code compiled to host code with
//! Cranelift.
//!
//! The dispatcher ([`Jit`], an `armada_core::cpu::Tier`) runs a lane from unit to unit.
//! Code runs on the interpreter until its entry has been reached [`HOT`] times (counted
//! where the interpreter takes a branch backwards or calls, and where a unit leaves to);
//! then the unit entered there is translated (`unit`, `translate`) once for every lane that
//! shares the decoded pages (`store`), and each lane keeps a small PC -> code table of its
//! own in front of the store. Every stop, register, flag, memory byte and instruction count
//! is the interpreter's: `ARMADA_JIT_CHECK=1` runs each unit on both and compares.

mod access;
mod adapters;
mod alu;
#[cfg(target_arch = "x86_64")]
mod codemem;
mod defined;
mod flags;
mod fparith;
mod fpconv;
mod guard;
mod helpers;
pub mod quick;
mod simd;
mod store;
mod translate;
mod unit;
mod vecfp;
mod vecint;

use armada_core::cpu::{self, CodeCache, Tier};
use armada_core::memory::AddressSpace;
use armada_core::state::{CpuState, Stop};
use helpers::{exit, Ctx};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use store::{Store, UnitFn};

/// Times an entry is reached before its unit is translated: code that runs a few times
/// (most of a short program) is not worth a compile.
pub const HOT: u32 = 24;

/// Entries of a lane's direct-mapped PC -> unit cache: 256 KiB a lane (kept with its
/// decoded code when a batch's thread takes the next lane). Units chain through it, and a
/// miss goes round the dispatcher: with 2,048 entries, PCs 8 KiB apart took each other's
/// place, and CPython's tests went back to the dispatcher twice as often (docs/performance.md,
/// issue 48, step 5).
pub(crate) const LOOKUP: usize = 16384;
/// Slots a flush of a lane's table puts back one by one (see `LaneJit::filled`); past that,
/// the whole table.
const FILLED_MAX: usize = LOOKUP / 16;

/// A table where nothing is found: under `ARMADA_JIT_CHECK` every unit returns to the
/// dispatcher, which checks it.
static NO_UNITS: [(u64, Option<UnitFn>); LOOKUP] = [(u64::MAX, None); LOOKUP];

/// The translation tier. One serves the whole process; what it translates lives with the
/// decoded pages it was made from.
pub struct Jit {
    check: bool,
    /// Reaches before translation: [`HOT`], or `ARMADA_JIT_HOT` (1 translates all code that
    /// runs, which the tests use to put cold code through the translator too).
    hot: u32,
    /// `ARMADA_JIT_SYNC`: a lane waits for the units it needs, rather than interpreting
    /// while a compile thread makes them (so a run's every hot unit runs translated, for
    /// the tests).
    wait: bool,
    /// The quick tier under this one (x86-64 hosts; by default where the host has
    /// [`FEW_CORES`] or fewer, `ARMADA_JIT_QUICK=1|0` to choose): code without a unit that
    /// is reached [`quick::HOT`] times runs as quick blocks rather than on the interpreter,
    /// and blocks ask for their units by their own run counts ([`TierUp`]). None: the
    /// interpreter runs code until its unit is made, the dispatcher counting reaches.
    tier_up: Option<TierUp>,
}

/// When quick blocks under the translation tier ask for their units: after `loops` runs of
/// a closed loop's head (which turns without coming back to the dispatcher), and after
/// `blocks` runs of any other block (`u32::MAX`: never).
#[derive(Clone, Copy, Debug)]
pub struct TierUp {
    pub loops: u32,
    pub blocks: u32,
}

/// Runs of a closed loop's head in quick blocks before the unit there is asked for: a
/// compile takes about 2 ms, and quick code is within 2-3x of Cranelift's, so a unit pays
/// only where the loop runs on for a while (`ARMADA_JIT_TIERUP`).
pub const TIER_UP: u32 = 2000;

/// Runs of any other quick block before its unit is asked for (`ARMADA_JIT_WARM`): the
/// hot paths of interpreters (CPython's, perl's, gawk's), which are no closed loops, run
/// their blocks millions of times; a test suite's code runs most blocks far fewer times,
/// and units made there are small and entered from quick blocks at every turn
/// (docs/jit.md, "The quick tier under Cranelift").
pub const WARM: u32 = 10_000;

/// Hosts with at most this many cores run quick blocks under the translation tier by
/// default: with one or two compile threads (`store::queue`), Cranelift's 2 ms a unit
/// leaves a program of much code on the interpreter for most of its run; with three the
/// units come soon enough that Cranelift over the interpreter is faster (docs/performance.md,
/// issue 48: 1.20x qemu's time against 1.29x on 2 cores, 1.29x against 1.07x on 16).
pub const FEW_CORES: usize = 3;

/// Runs more before a block whose unit is being compiled asks again.
const TIER_UP_AGAIN: u32 = 256;

/// Whether quick blocks run under the translation tier: never where the host has no quick
/// tier (it is x86-64 code), else `ARMADA_JIT_QUICK` where it is set, else on hosts of
/// [`FEW_CORES`] or fewer.
fn quick_by_default() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    match std::env::var_os("ARMADA_JIT_QUICK") {
        Some(v) => v != "0",
        None => std::thread::available_parallelism().map_or(true, |n| n.get() <= FEW_CORES),
    }
}

impl Jit {
    /// The tier, or None where Cranelift cannot make code for this host.
    pub fn new() -> Option<Arc<Jit>> {
        if cranelift_native::builder().is_err() {
            return None;
        }
        // (see docs/jit.md, "The quick tier under Cranelift")
        Some(Arc::new(Jit {
            check: env_flag("ARMADA_JIT_CHECK"),
            hot: env_count("ARMADA_JIT_HOT", HOT),
            wait: env_flag("ARMADA_JIT_SYNC"),
            tier_up: quick_by_default().then(|| TierUp {
                loops: env_count("ARMADA_JIT_TIERUP", TIER_UP),
                blocks: env_count("ARMADA_JIT_WARM", WARM),
            }),
        }))
    }
}

/// A count from the environment variable `var` (at least 1), else `default`.
pub(crate) fn env_count(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(default)
        .max(1)
}

/// Whether the environment variable `var` is set to anything but 0.
pub(crate) fn env_flag(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v != "0")
}

impl Jit {
    /// The tier with its knobs given rather than read from the environment: `hot` reaches
    /// before a unit is translated, `wait` for units rather than interpret while they are
    /// made, `check` each unit against the interpreter (see the crate's documentation).
    /// No quick tier runs under it.
    pub fn with_options(hot: u32, wait: bool, check: bool) -> Arc<Jit> {
        Self::tiered(hot, wait, check, None)
    }

    /// As [`Self::with_options`], with the quick tier under it where `tier_up` is given:
    /// the runs quick blocks make before their units are asked for.
    pub fn tiered(hot: u32, wait: bool, check: bool, tier_up: Option<TierUp>) -> Arc<Jit> {
        Arc::new(Jit {
            check,
            hot: hot.max(1),
            wait,
            tier_up: tier_up.map(|t| TierUp {
                loops: t.loops.max(1),
                blocks: t.blocks.max(1),
            }),
        })
    }
}

/// Statistics of the whole process: units translated, guest instructions in them, and the
/// seconds their compiles took.
pub fn stats() -> (u64, u64, f64) {
    (
        store::UNITS.load(Ordering::Relaxed),
        store::GUEST_INSNS.load(Ordering::Relaxed),
        store::COMPILE_NS.load(Ordering::Relaxed) as f64 * 1e-9,
    )
}

/// Instructions the lanes of the process have run in translated code so far (the rest ran
/// on the interpreter).
pub fn translated_instructions() -> u64 {
    store::RAN_TRANSLATED.load(Ordering::Relaxed)
}

/// Bytes of host code made so far, all units of the process together.
pub fn code_bytes() -> u64 {
    store::CODE_BYTES.load(Ordering::Relaxed)
}

/// Which tier a run asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierChoice {
    Interp,
    Jit,
    /// The quick tier alone (see [`quick`]): every block that runs twice translated in
    /// microseconds, no Cranelift.
    Quick,
}

impl TierChoice {
    /// From a name (`interp`, `jit`), as `--tier` and `ARMADA_TIER` give it.
    pub fn parse(s: &str) -> Result<TierChoice, String> {
        match s {
            "interp" | "interpreter" => Ok(TierChoice::Interp),
            "jit" => Ok(TierChoice::Jit),
            "quick" => Ok(TierChoice::Quick),
            other => Err(format!(
                "unknown tier '{other}': use 'interp' (the interpreter), 'jit' (translation) or 'quick' (quick blocks only)"
            )),
        }
    }

    /// The default on this host: translation where Cranelift makes code for it.
    pub fn default_here() -> TierChoice {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            TierChoice::Jit
        } else {
            TierChoice::Interp
        }
    }
}

/// Makes `choice` the tier of every code cache made from now on. Returns an error when
/// translation was asked for and this host cannot do it.
pub fn install(choice: TierChoice) -> Result<(), String> {
    match choice {
        TierChoice::Interp => {
            cpu::set_default_tier(None);
            Ok(())
        }
        TierChoice::Jit => match Jit::new() {
            Some(j) => {
                cpu::set_default_tier(Some(j));
                Ok(())
            }
            None => {
                Err("the translation tier cannot make code for this host; use --tier interp".into())
            }
        },
        TierChoice::Quick => match quick::Quick::new() {
            Some(q) => {
                cpu::set_default_tier(Some(q));
                Ok(())
            }
            None => Err("the quick tier makes x86-64 code only; use --tier jit or interp".into()),
        },
    }
}

/// A lane's own state: every entry it has reached, how often, and its unit once known; and
/// a direct-mapped cache of the units, which a lane looks in at every way out of a unit.
struct LaneJit {
    /// The program's stores of units (see [`Stores`]), and the one for this lane's address
    /// space now.
    stores: Arc<Stores>,
    store: Arc<Store>,
    /// Whether the lane runs units for guarded windows (`store` is `stores.guarded`).
    guarded: bool,
    /// The code cache's epoch the units are from.
    epoch: u64,
    lookup: Box<[(u64, Option<UnitFn>)]>,
    /// The slots of `lookup` written since its last flush, while they are few
    /// (`FILLED_MAX`; None past that): a flush puts back only those. The table is 256 KiB,
    /// and each lane of a CPU batch flushes it once (its code cache is a recycled one,
    /// whose epoch moved): a whole fill per lane was 13% of a batch of `hello` lanes, and
    /// memory bandwidth that 16 threads share.
    filled: Option<Vec<u32>>,
    /// Every entry reached. A direct-mapped table of reaches alone lost entries to each
    /// other: two PCs of one slot reached in turn reset each other's count and stayed
    /// interpreted for good (most of the time of Debian's sha256sum went there).
    entries: rustc_hash::FxHashMap<u64, Entry>,
    /// The lane's quick blocks, the first tier (see `Jit::tier_up`), and whether there
    /// was no memory to make them in.
    quick: Option<Box<quick::lane::LaneQuick>>,
    no_quick: bool,
    /// What the units entered from the lane's blocks ran (see `quick::slow::unit`), made
    /// with the blocks.
    judged: Option<Box<quick::slow::Judged>>,
    /// Whether the lane's last run ran its budget out: the next starts wherever that
    /// quantum ended, anywhere in a block (see `LaneJit::unit_at`). A run after a syscall,
    /// or a lane's first, starts where its code goes on, and is counted.
    budget_ended: bool,
}

#[derive(Default)]
struct Entry {
    reaches: u32,
    /// None: not asked for yet (or asked and pending); Some(None): left to the interpreter.
    unit: Option<Option<UnitFn>>,
    /// What the store gave for this entry before the code cache's epoch last moved, and the
    /// address of the page buffer it was given for: while the page holds that buffer, it
    /// is the store's answer still (its units never change), so the lane takes it back
    /// without asking. Each lane of a CPU batch starts with its code cache's epoch moved
    /// (see `CodeCache::recycle`), and asking again for every unit through the store's
    /// shared lock was 60% of a batch of `hello` lanes on 16 cores, all of it the lock's
    /// reader count going from core to core.
    kept: Option<(usize, Option<UnitFn>)>,
    /// The store's count of finished compiles (`Store::finished`) when it last said this
    /// entry's unit was still being made, plus one (0: it has not said so): the lane asks
    /// again only once some compile has finished since.
    waiting: u64,
}

/// The units of a program's code, shared by its lanes: made for address spaces with guarded
/// windows (see `guard`), whose accesses look at no TLB, and for the others.
struct Stores {
    plain: Arc<Store>,
    guarded: Arc<Store>,
}

impl Stores {
    fn new() -> Stores {
        Stores {
            plain: Arc::new(Store::new(false)),
            guarded: Arc::new(Store::new(true)),
        }
    }
}

fn slot(pc: u64) -> usize {
    ((pc >> 2) as usize) & (LOOKUP - 1)
}

/// `ARMADA_JIT_DCOUNT=1`: under quick blocks the dispatcher counts the reaches it sees too
/// (where quick chains come back to it), as without them. Off by default: units asked for
/// at those PCs (calls' and returns' targets) were small and slower than the blocks.
fn dispatcher_counts() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| env_flag("ARMADA_JIT_DCOUNT"))
}

/// The unit at `pc` in a lane's table of units (`Ctx::lookup`), if it has one there.
///
/// # Safety
/// `table` is a lane's table of [`LOOKUP`] entries.
pub(crate) unsafe fn unit_in(table: *const (u64, Option<UnitFn>), pc: u64) -> Option<UnitFn> {
    let (at, f) = *table.add(slot(pc));
    if at == pc {
        f
    } else {
        None
    }
}

impl LaneJit {
    fn new(code: &CodeCache) -> LaneJit {
        let stores = match code.shared() {
            Some(dp) => dp
                .tier_store(|| Arc::new(Stores::new()))
                .downcast::<Stores>()
                .unwrap_or_else(|_| Arc::new(Stores::new())),
            None => Arc::new(Stores::new()),
        };
        LaneJit {
            store: stores.plain.clone(),
            stores,
            guarded: false,
            epoch: code.epoch(),
            lookup: vec![(u64::MAX, None); LOOKUP].into_boxed_slice(),
            filled: Some(Vec::new()),
            entries: Default::default(),
            quick: None,
            no_quick: false,
            judged: None,
            budget_ended: false,
        }
    }

    /// The code changed: units are looked up again (the counts stay).
    fn flush(&mut self, epoch: u64) {
        match self.filled.as_mut() {
            Some(slots) => {
                for &i in slots.iter() {
                    self.lookup[i as usize] = (u64::MAX, None);
                }
                slots.clear();
            }
            None => {
                self.lookup.fill((u64::MAX, None));
                self.filled = Some(Vec::new());
            }
        }
        for e in self.entries.values_mut() {
            e.unit = None;
        }
        self.epoch = epoch;
    }

    /// Puts `pc`'s unit (or None: left to the interpreter) in its slot of the table.
    fn set_slot(&mut self, i: usize, pc: u64, f: Option<UnitFn>) {
        self.lookup[i] = (pc, f);
        if let Some(slots) = self.filled.as_mut() {
            if slots.len() < FILLED_MAX {
                slots.push(i as u32);
            } else {
                self.filled = None;
            }
        }
    }

    /// Runs units for guarded windows (`g`) or not from now on: looked up again.
    fn set_guarded(&mut self, g: bool) {
        self.guarded = g;
        self.store = if g {
            self.stores.guarded.clone()
        } else {
            self.stores.plain.clone()
        };
        let epoch = self.epoch;
        self.flush(epoch);
        // (what the other store gave is not this one's)
        for e in self.entries.values_mut() {
            e.kept = None;
            e.waiting = 0;
        }
    }

    /// The unit at `pc`, if there is one to run: looked up, or translated once hot.
    /// Where the lane `resumed` (the run's first PC, where its last turn ended, anywhere in
    /// a block) the reach is not counted: a quantum's end lands at every PC of a hot loop
    /// in turn, and counting them made a unit at each (Go's math/big made one at each of
    /// 40 PCs of one loop).
    #[inline]
    fn unit_at(
        &mut self,
        pc: u64,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        hot: u32,
        wait: bool,
        resumed: bool,
    ) -> Option<UnitFn> {
        let i = slot(pc);
        if self.lookup[i].0 == pc {
            return self.lookup[i].1;
        }
        if resumed {
            // (not counted, but a unit known is put in the table, where units and quick
            // blocks chain through it: otherwise every way there went round the dispatcher)
            let known = self.entries.get(&pc).and_then(|e| e.unit);
            if let Some(f) = known {
                self.set_slot(i, pc, f);
            }
            return known.flatten();
        }
        self.miss(i, pc, mem, code, hot, wait)
    }

    #[inline(never)]
    fn miss(
        &mut self,
        i: usize,
        pc: u64,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        hot: u32,
        wait: bool,
    ) -> Option<UnitFn> {
        let e = self.entries.entry(pc).or_default();
        if let Some(f) = e.unit {
            self.set_slot(i, pc, f);
            return f;
        }
        e.reaches += 1;
        if e.reaches < hot {
            return None;
        }
        // (nothing finished since the store said it was being made: no need to ask)
        let finished = self.store.finished();
        if e.waiting == finished + 1 {
            e.reaches = hot.saturating_sub(8);
            return None;
        }
        match self.ask(pc, mem, code, hot, wait) {
            store::Found::Ready(f) => f,
            store::Found::Pending => {
                // look again in a few reaches
                if let Some(e) = self.entries.get_mut(&pc) {
                    e.reaches = hot.saturating_sub(8);
                    e.waiting = finished + 1;
                }
                None
            }
        }
    }

    /// Asks the store for the unit at `pc` (made now where `wait`, else on a compile
    /// thread), and notes it once it is there.
    fn ask(
        &mut self,
        pc: u64,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        hot: u32,
        wait: bool,
    ) -> store::Found {
        let i = slot(pc);
        // what the store knows by the page's key first: page_ops copies the page
        let buffer = code.page_buffer(pc, mem);
        let at = buffer.map(|b| Arc::as_ptr(b) as usize);
        let kept = self
            .entries
            .get(&pc)
            .and_then(|e| e.kept)
            .filter(|&(b, _)| Some(b) == at);
        let known = match (kept, buffer) {
            (Some((_, f)), _) => Some(store::Found::Ready(f)),
            (None, Some(buf)) if !wait => self.store.known(pc, buf),
            _ => None,
        };
        let found = match known {
            Some(k) => k,
            None => match code.page_ops(pc, mem) {
                Err(_) => store::Found::Ready(None),
                // (with every entry translated at its first reach, nothing past the entry
                // has run yet: the whole unit is taken)
                Ok(page) => self.store.unit(page, pc, wait, hot > 1),
            },
        };
        let f = match found {
            store::Found::Ready(f) => f,
            store::Found::Pending => return store::Found::Pending,
        };
        if store::tracing() {
            let (n, insns, secs) = stats();
            eprintln!(
                "armada-jit: {n} units, {insns} instructions, {:.3} ms",
                secs * 1e3
            );
            eprintln!(
                "armada-jit: hot {pc:#x}: {}",
                if f.is_some() {
                    "translated"
                } else {
                    "left to the interpreter"
                }
            );
        }
        // (decoding may have moved the epoch: the tables are flushed before they are used)
        if code.epoch() == self.epoch {
            self.set_slot(i, pc, f);
            let e = self.entries.entry(pc).or_default();
            e.unit = Some(f);
            // (a unit of writable code is the lane's alone: asked for again after a flush)
            e.kept = at.map(|b| (b, f));
            e.waiting = 0;
        }
        store::Found::Ready(f)
    }
}

impl Tier for Jit {
    fn name(&self) -> &'static str {
        "jit"
    }

    fn run(
        &self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        budget: u64,
    ) -> Stop {
        let mut lane = match code.take_tier_state().map(|s| s.downcast::<LaneJit>()) {
            Some(Ok(l)) => l,
            _ => Box::new(LaneJit::new(code)),
        };
        let limit = st.retired.saturating_add(budget);
        // the registers live in the context while the tier runs (see `helpers::Ctx`)
        let mut ctx = Ctx {
            state: st.clone(),
            tlb_entries: std::ptr::null(),
            tlb_unindexed: !0,
            window: std::ptr::null(),
            limit,
            lookup: if self.check {
                NO_UNITS.as_ptr()
            } else {
                lane.lookup.as_ptr()
            },
            buf: [0; 2],
            status: 0,
            flags: [0; 5],
            ret: 0,
            entry: 0,
            mem: std::ptr::null_mut(),
            code: std::ptr::null_mut(),
            fault: 0,
            fault2: 0,
            epoch: 0,
            stop: None,
            sites: std::ptr::null(),
            blk_ret: 0,
            jmp_sp: 0,
        };
        let mut ran = 0u64;
        let stop = self.dispatch(&mut lane, &mut ctx, mem, code, &mut ran);
        lane.budget_ended = stop == Stop::Budget;
        store::RAN_TRANSLATED.fetch_add(ran, Ordering::Relaxed);
        st.clone_from(&ctx.state);
        code.put_tier_state(lane);
        stop
    }
}

impl Jit {
    /// The lane's quick blocks (made at the first call) with their epoch the code cache's;
    /// None without a quick tier.
    fn first_tier<'a>(
        &self,
        lane: &'a mut LaneJit,
        code: &CodeCache,
    ) -> Option<&'a mut quick::lane::LaneQuick> {
        let tier_up = self.tier_up?;
        if lane.quick.is_none() && !lane.no_quick {
            // (where no executable memory is to be had, code runs on the interpreter)
            lane.quick = quick::lane::LaneQuick::new(code.epoch(), Some(tier_up)).map(Box::new);
            lane.no_quick = lane.quick.is_none();
            lane.judged = lane.quick.as_ref().map(|_| Box::default());
        }
        lane.quick.as_deref_mut()
    }

    /// The quick block at `pc` has run its count out: asks for the unit there, and once
    /// it is ready the block leaves for it at once from now on.
    fn hot_block(&self, lane: &mut LaneJit, pc: u64, mem: &mut AddressSpace, code: &mut CodeCache) {
        // (a block already sent to its unit leaves here each time it is reached: the
        // dispatcher finds the unit)
        if lane
            .entries
            .get(&pc)
            .is_some_and(|e| matches!(e.unit, Some(Some(_))))
        {
            return;
        }
        let found = lane.ask(pc, mem, code, self.hot, self.wait);
        let Some(q) = lane.quick.as_deref_mut() else {
            return;
        };
        match found {
            store::Found::Ready(Some(_)) => q.redirect(pc),
            // (the block runs for good: it asks again after 4 G runs)
            store::Found::Ready(None) => q.recount(pc, u32::MAX),
            store::Found::Pending => q.recount(pc, TIER_UP_AGAIN),
        }
    }

    /// The dispatcher's loop, until the lane stops: each round runs the unit at the PC,
    /// else its quick blocks, else one step of the interpreter (the rounds counted for
    /// `--stats`, see [`Rounds`]).
    fn dispatch(
        &self,
        lane: &mut LaneJit,
        ctx: &mut Ctx,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        ran: &mut u64,
    ) -> Stop {
        // (added to the process's totals when it goes, on every way out)
        let mut r = Rounds::default();
        let limit = ctx.limit;
        // what quick blocks need to enter units themselves (see `quick::slow::unit`)
        let mut link = quick::slow::UnitLink {
            ctx,
            guarded: lane.guarded,
            handler_kept: false,
            epoch: lane.epoch,
            ran: 0,
            entries: 0,
            judged: std::ptr::null_mut(),
            small: 0,
        };
        // (the lane resumes where its last turn ended: see `LaneJit::unit_at`)
        let mut first = lane.budget_ended;
        loop {
            let st = &mut ctx.state;
            if st.retired >= limit {
                return Stop::Budget;
            }
            code.sync(mem);
            if code.epoch() != lane.epoch {
                lane.flush(code.epoch());
            }
            if let Some(q) = lane.quick.as_deref_mut() {
                if code.epoch() != q.epoch() {
                    q.revalidate(code.epoch(), mem);
                }
            }
            // (no unit runs now: a guarded window given up can go)
            mem.drop_retired_window();
            // (makes the window, where the address space gets one)
            mem.tlb_view();
            if mem.guarded() != lane.guarded {
                lane.set_guarded(mem.guarded());
            }
            let resumed = std::mem::take(&mut first);
            r.rounds += 1;
            // Under quick blocks the blocks count their own runs and ask for their units
            // (`TierUp`), and the dispatcher only looks units up (`ARMADA_JIT_DCOUNT=1`: it
            // counts what it sees too); without them (none made: no executable memory) it
            // counts the reaches it sees.
            let only_look =
                resumed || (self.tier_up.is_some() && !lane.no_quick && !dispatcher_counts());
            let unit = lane.unit_at(st.pc, mem, code, self.hot, self.wait, only_look);
            let Some(f) = unit.map(Ok).or_else(|| {
                let q = self.first_tier(lane, code)?;
                q.block_at(st.pc, mem, code, quick::HOT, resumed).map(Err)
            }) else {
                r.interp += 1;
                match cpu::interpret_step(st, mem, code, limit - st.retired) {
                    Stop::Budget => continue,
                    stop => return stop,
                }
            };
            let f = match f {
                Ok(f) => f,
                Err(block) => {
                    link.judged = lane
                        .judged
                        .as_deref_mut()
                        .map_or(std::ptr::null_mut(), |j| j as *mut _);
                    let Some(q) = lane.quick.as_deref_mut() else {
                        continue;
                    };
                    link.guarded = lane.guarded;
                    link.epoch = lane.epoch;
                    // (checked runs run each block alone, and units from the dispatcher)
                    let mode = if self.check {
                        quick::lane::Mode::Checked
                    } else {
                        quick::lane::Mode::Chained(&mut link)
                    };
                    let out = q.run(block, st, mem, code, limit, mode);
                    r.quick[(out.0 as usize).min(7)] += 1;
                    *ran += std::mem::take(&mut link.ran);
                    r.entered += std::mem::take(&mut link.entries);
                    match out {
                        (exit::NEXT, _) => continue,
                        (exit::SYSCALL, _) => return Stop::Syscall,
                        (exit::SMALL, _) => {
                            // (blocks run their own code there from now on, made now where
                            // there was none; units still go to the unit)
                            if let Some(q) = lane.quick.as_deref_mut() {
                                let pc = link.small;
                                q.block_at(pc, mem, code, 1, false);
                                q.recount(pc, u32::MAX);
                            }
                            r.small += 1;
                            continue;
                        }
                        (exit::HOT, _) => {
                            // (at the start of the block whose count ran out)
                            let pc = st.pc;
                            self.hot_block(lane, pc, mem, code);
                            continue;
                        }
                        (exit::INTERP, _) => {
                            match cpu::interpret(st, mem, code, limit - st.retired) {
                                Stop::Budget => continue,
                                stop => return stop,
                            }
                        }
                        // (a unit a block entered left its op to the interpreter)
                        (exit::ONE, _) => match cpu::interpret(st, mem, code, 1) {
                            Stop::Budget => continue,
                            stop => return stop,
                        },
                        (_, stop) => return stop.unwrap_or(Stop::Undefined(0)),
                    }
                }
            };
            // (translating may have read code pages, and given the guarded window up)
            if code.epoch() != lane.epoch || mem.window_retired() {
                continue;
            }
            let before = self.check.then(|| {
                let copy = mem.clone();
                mem.flush_tlb();
                (st.clone(), copy)
            });
            let start = st.retired;
            if lane.guarded && !link.handler_kept {
                guard::keep_handler();
                link.handler_kept = true;
            }
            // SAFETY: `f` was made by the store `lane` holds, for this code cache's code at
            // this epoch; `ctx`'s pointers are the lane's memory, code and unit table,
            // which nothing else touches until the unit returns.
            let rc = unsafe { store::run(ctx, mem, code, f, lane.guarded, lane.epoch) };
            r.units[(rc as usize).min(7)] += 1;
            let unit_stop = ctx.stop.take();
            let st = &mut ctx.state;
            *ran += st.retired - start;
            if let Some((st0, mem0)) = before {
                check_unit(st0, mem0, st, rc, unit_stop);
            }
            if ctx.limit != limit {
                // told to leave (see `helpers::sync_tlb`): at a block's start, the state
                // exact, with the budget not spent
                ctx.limit = limit;
                if rc == exit::INTERP {
                    continue;
                }
            }
            match rc {
                exit::NEXT => {}
                exit::SYSCALL => return Stop::Syscall,
                exit::INTERP | exit::ONE => {
                    let n = if rc == exit::ONE {
                        1
                    } else {
                        limit - st.retired
                    };
                    match cpu::interpret(st, mem, code, n) {
                        Stop::Budget => {}
                        stop => return stop,
                    }
                }
                _ => return unit_stop.unwrap_or(Stop::Undefined(0)),
            }
        }
    }
}

/// A dispatcher's rounds, counted on its lane's thread and added to the process's totals
/// when the tier returns (`--stats`: where translated lanes go back to the dispatcher).
#[derive(Default)]
struct Rounds {
    rounds: u64,
    /// Rounds that stepped the interpreter (no unit, no block).
    interp: u64,
    /// Units the dispatcher ran, by the way they left.
    units: [u64; 8],
    /// Quick chains the dispatcher ran, by the way they left.
    quick: [u64; 8],
    /// Units the quick blocks entered themselves.
    entered: u64,
    /// Blocks given their own code back (their units ran too little an entry).
    small: u64,
}

#[allow(clippy::declare_interior_mutable_const)]
const Z: AtomicU64 = AtomicU64::new(0);
static ROUNDS: [AtomicU64; 19] = [Z; 19];

impl Drop for Rounds {
    fn drop(&mut self) {
        let all = [self.rounds, self.interp]
            .into_iter()
            .chain(self.units)
            .chain(self.quick)
            .chain([self.small]);
        for (t, v) in ROUNDS.iter().zip(all) {
            if v != 0 {
                t.fetch_add(v, Ordering::Relaxed);
            }
        }
        if self.entered != 0 {
            quick::UNIT_ENTRIES.fetch_add(self.entered, Ordering::Relaxed);
        }
    }
}

/// The dispatchers' rounds, whole process (`--stats`).
pub struct RoundCounts {
    pub rounds: u64,
    /// Rounds that stepped the interpreter.
    pub interp: u64,
    /// Units the dispatchers ran, by exit code.
    pub units: [u64; 8],
    /// Quick chains the dispatchers ran, by exit code.
    pub quick: [u64; 8],
    /// Quick blocks given their own code back (their units ran too little an entry).
    pub small: u64,
}

/// The dispatchers' rounds, whole process.
pub fn rounds() -> RoundCounts {
    let v: Vec<u64> = ROUNDS.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let eight = |at: usize| std::array::from_fn(|i| v[at + i]);
    RoundCounts {
        rounds: v[0],
        interp: v[1],
        units: eight(2),
        quick: eight(10),
        small: v[18],
    }
}

/// `ARMADA_JIT_CHECK`: runs the interpreter from the state a unit started with, as far as
/// the unit went, and ends the process with both states if they differ.
pub(crate) fn check_unit(
    mut st0: CpuState,
    mut mem0: AddressSpace,
    st: &CpuState,
    rc: u64,
    unit_stop: Option<Stop>,
) {
    let start = st0.pc;
    let mut code0 = CodeCache::new();
    code0.set_tier(None);
    let n = st.retired - st0.retired;
    let mut stop = Stop::Budget;
    if n > 0 {
        stop = cpu::interpret(&mut st0, &mut mem0, &mut code0, n);
    }
    if rc == exit::STOP && stop == Stop::Budget {
        stop = cpu::interpret(&mut st0, &mut mem0, &mut code0, 1);
    }
    let want_stop = match rc {
        exit::STOP => unit_stop,
        exit::SYSCALL => Some(Stop::Syscall),
        _ => None,
    };
    let same = st0.x[..32] == st.x[..32]
        && st0.pc == st.pc
        && st0.nzcv == st.nzcv
        && st0.retired == st.retired
        && st0.v == st.v
        && (want_stop.is_none() || want_stop == Some(stop));
    if !same {
        eprintln!("armada-jit check: the unit at {start:#x} differs from the interpreter");
        eprintln!(
            "  unit:        pc {:#x} retired {} nzcv {:#x} exit {rc} {unit_stop:?}",
            st.pc, st.retired, st.nzcv
        );
        eprintln!(
            "  interpreter: pc {:#x} retired {} nzcv {:#x} stop {stop:?}",
            st0.pc, st0.retired, st0.nzcv
        );
        for r in 0..32 {
            if st0.x[r] != st.x[r] {
                eprintln!("  x{r}: unit {:#x} interpreter {:#x}", st.x[r], st0.x[r]);
            }
        }
        for r in 0..32 {
            if st0.v[r] != st.v[r] {
                eprintln!("  v{r}: unit {:#x} interpreter {:#x}", st.v[r], st0.v[r]);
            }
        }
        std::process::exit(70);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(k: usize) -> Option<UnitFn> {
        std::ptr::NonNull::new((0x1000 + 16 * k) as *mut u8).map(UnitFn)
    }

    fn empty(lane: &LaneJit) -> bool {
        lane.lookup
            .iter()
            .all(|&(pc, f)| pc == u64::MAX && f.is_none())
    }

    /// A flush empties every slot written since the last one, whether it put back the
    /// slots one by one or, past `FILLED_MAX` of them, the whole table.
    #[test]
    fn a_flush_empties_every_slot_written() {
        let code = CodeCache::new();
        let mut lane = LaneJit::new(&code);
        for round in 0..3u64 {
            // a few, some written twice; then more than are put back one by one
            let n = [40, FILLED_MAX + 7, 3][round as usize];
            for k in 0..n {
                let pc = 0x40_0000 + 4 * (k as u64 * 37 % LOOKUP as u64);
                lane.set_slot(slot(pc), pc, unit(k));
                if k % 5 == 1 {
                    lane.set_slot(slot(pc), pc, None);
                }
            }
            assert!(!empty(&lane));
            lane.flush(round + 1);
            assert!(empty(&lane), "round {round}: a slot survived the flush");
            assert_eq!(lane.filled.as_ref().map(Vec::len), Some(0));
        }
    }
}
