//! The batch loop: lanes run in the kernel until they stop; the host services the stops and
//! relaunches.
//!
//! Each lane keeps a host-side `Lane` (registers, an address-space mirror, its Linux process)
//! that is authoritative whenever the host works on the lane; the device holds the lane's
//! record (registers) and its pages. A round:
//!
//! 1. launch the kernel over the active lanes; each runs until a stop or its slice ends;
//! 2. read every lane's stop code; lanes whose slice merely ended need nothing;
//! 3. for the others, download their records and the pages they wrote since their last sync
//!    (the kernel lists them), store those pages in the mirrors;
//! 4. service the stops in parallel (rayon): syscalls through the Linux layer, page misses
//!    against the mirror, host steps through the CPU engine, faults as signals;
//! 5. upload what changed: records, pages the host wrote, page-table entries; lanes that
//!    ended leave the active list.
//!
//! Only stopped lanes' state crosses the bus, and of their memory only the written pages.

use crate::device::{dtoh_into, dtoh_vec, htod_slice, DevPtr, Device};
use crate::layout::*;
use crate::Error;
use armada_core::batch::{LaneResult, Progress};
use armada_core::cpu;
use armada_core::memory::{Access, AddressSpace, Fault, PageData, Perm, PAGE_SHIFT, PAGE_SIZE};
use armada_core::runner::{Exit, Lane};
use armada_core::state::{CpuState, Stop};
use armada_isa::{decode, ops};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

mod bare;
pub use bare::{BareEnd, BareLane, DeviceBuffer};

/// Most chunks of the frame pool (1 TiB of frames with the usual 64 MiB chunks).
const MAX_CHUNKS: usize = 16384;
/// Frames diffed per diff-kernel launch (bounds the staging memory).
const DIFF_BATCH: usize = 32768;
/// The frame that holds zeros and is never written.
const ZERO_FRAME: u32 = 0;
/// Instructions per lane per launch unless ARMADA_CUDA_SLICE says otherwise: in practice no
/// limit, launches end by time (see `Params::max_ns`).
const DEFAULT_SLICE: u64 = 1 << 40;

/// A duration from the environment in milliseconds, as nanoseconds.
fn env_ms(name: &str, default: f64) -> u64 {
    let ms = std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(default);
    (ms * 1e6) as u64
}

/// A host step runs this many instructions when the PC is outside the decoded regions.
const HOST_RUN_OUTSIDE: u64 = 100_000;
/// A writable area of at most this many pages (a program's data and bss) gets lazy entries for
/// all its pages when the lane starts with it or maps it; a larger one for its first pages.
const LAZY_AREA_PAGES: u64 = 64;
/// Around a page the lane starts with or writes, this many pages on each side get lazy
/// entries (stacks grow down a page at a time, heaps and bss up).
const LAZY_AROUND: u64 = 4;

/// Figures of one batch run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub launches: u64,
    pub kernel_s: f64,
    pub service_s: f64,
    pub transfer_s: f64,
    /// `transfer_s` in parts (`TRANSFER_PARTS`), to see which one to work on.
    pub transfer_parts: [f64; 5],
    pub setup_s: f64,
    /// `setup_s` in parts (`SETUP_PARTS`).
    pub setup_parts: [f64; 4],
    pub apply_s: f64,
    /// `apply_s` in parts (`APPLY_PARTS`).
    pub apply_parts: [f64; 4],
    /// Uploads (in `transfer_parts` and `setup_parts`) in parts (`UPLOAD_PARTS`).
    pub upload_parts: [f64; 4],
    pub spawn_s: f64,
    pub syscalls: u64,
    pub misses: u64,
    pub host_steps: u64,
    pub host_instructions: u64,
    pub pages_down: u64,
    pub pages_up: u64,
    pub pages_copied: u64,
    /// Runs of words the host wrote into lanes' own pages, sent instead of the whole pages.
    pub runs_up: u64,
    pub run_words_up: u64,
    pub diff_blocks: u64,
    pub frames_peak: u64,
    /// The peak of frames holding guest pages (`frames_peak` less the lanes' reserves).
    pub guest_frames_peak: u64,
    pub regions: usize,
    pub images: usize,
    pub micro_ops: usize,
    pub pt_slots: u64,
    pub pt_grows: u64,
    /// Lazy pages the kernel copied on a first write (writes that did not stop the lane).
    pub lazy_claims: u64,
    pub stops: HashMap<&'static str, u64>,
    pub host_ops: HashMap<&'static str, u64>,
}

/// The parts of `Stats::transfer_parts`.
const TRANSFER_PARTS: [&str; 5] = [
    "stops",
    "records",
    "written pages",
    "changed blocks",
    "upload",
];

/// The parts of `Stats::setup_parts`.
const SETUP_PARTS: [&str; 4] = ["lane plans", "table", "records", "upload"];

/// The parts of `Stats::apply_parts`.
const APPLY_PARTS: [&str; 4] = ["collect", "running lanes", "ended lanes", "reserves"];

/// The parts of `Stats::upload_parts`.
const UPLOAD_PARTS: [&str; 4] = ["packing", "copy up", "copy kernel", "table writes"];

/// `name` and each part's seconds, for `Batch::stats_list`.
fn parts_line(names: &[&str], secs: &[f64]) -> String {
    names
        .iter()
        .zip(secs)
        .map(|(n, t)| format!("{n} {t:.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Stats {
    /// Adds the time since `lap` to transfer part `i` and restarts `lap`.
    fn lap(&mut self, i: usize, lap: &mut Instant) {
        let now = Instant::now();
        self.transfer_parts[i] += (now - *lap).as_secs_f64();
        *lap = now;
    }
}

/// Why a lane stopped in a launch (the run-to-first-stop mode reports these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneStop {
    /// Still running when the launch's slice ended.
    Slice,
    /// The lane's instruction limit.
    Limit,
    Syscall,
    Halt(u16),
    Breakpoint(u16),
    Undefined(u32),
    /// A page the lane's table does not hold yet (the host maps it, or raises the fault).
    PageMiss {
        addr: u64,
        write: bool,
    },
    /// An instruction the kernel leaves to the host.
    HostStep,
    /// The lane had ended before the launch.
    Finished,
}

/// The two words of the micro-op of `word` at `addr`, as the kernels read them.
fn encode_uop(word: u32, addr: u64) -> [u64; 2] {
    let u = decode(word, addr);
    [
        u.op as u64
            | (u.a as u64) << 16
            | (u.b as u64) << 24
            | (u.c as u64) << 32
            | (u.d as u64) << 40
            | (u.e as u64) << 48
            | (u.f as u64) << 56,
        u.imm,
    ]
}

// ----- host copy of the page table -----------------------------------------------------------

/// The host's copy of the device page table (open addressing, linear probing, as the kernel
/// reads it), each slot's key and value side by side. Lanes are applied in parallel: a key
/// belongs to one lane and only the thread servicing that lane inserts or removes it, so a
/// free slot is claimed with a compare-and-swap and everything else is a relaxed load or
/// store (the parallel section's end orders them for the serial code after it). Written slots
/// are listed (`pending`, or the caller's list); the flush sends each one's contents as they
/// are then, since the order of writes from different threads is not kept.
struct HostTable {
    slots: Vec<[AtomicU64; 2]>,
    mask: u64,
    shift: u32,
    used: AtomicU64,
    pending: Vec<u64>,
}

impl HostTable {
    fn new(slots: u64) -> HostTable {
        HostTable {
            slots: (0..slots)
                .map(|_| [AtomicU64::new(PT_EMPTY), AtomicU64::new(0)])
                .collect(),
            mask: slots - 1,
            shift: 64 - slots.trailing_zeros(),
            used: AtomicU64::new(0),
            pending: Vec::new(),
        }
    }

    fn key(&self, s: u64) -> u64 {
        self.slots[s as usize][0].load(Relaxed)
    }

    fn val(&self, s: u64) -> u64 {
        self.slots[s as usize][1].load(Relaxed)
    }

    fn set_val(&self, s: u64, val: u64) {
        self.slots[s as usize][1].store(val, Relaxed)
    }

    fn find(&self, key: u64) -> Option<u64> {
        let mut s = pt_hash(key, self.shift);
        for _ in 0..=self.mask {
            let k = self.key(s);
            if k == key {
                return Some(s);
            }
            if k == PT_EMPTY {
                return None;
            }
            s = (s + 1) & self.mask;
        }
        None
    }

    /// Sets `key` to `val`, inserting it if needed, and lists the slot in `pending`; returns
    /// the slot. The caller made room (`has_room`).
    fn set(&mut self, key: u64, val: u64, force: bool) -> Result<u64, Error> {
        let mut pending = std::mem::take(&mut self.pending);
        let r = self.set_shared(key, val, force, u64::MAX, &mut pending);
        self.pending = pending;
        r?.ok_or_else(|| {
            Error::Device(format!(
                "the device page table is full ({} slots)",
                self.mask + 1
            ))
        })
    }

    /// As `set`, from any thread (for a key of the lane it services), listing a written slot
    /// in `dirty`; `force` lists it even when it already holds the value. None when an
    /// insertion would take the table past `limit` used slots (the serial path grows it).
    fn set_shared(
        &self,
        key: u64,
        val: u64,
        force: bool,
        limit: u64,
        dirty: &mut Vec<u64>,
    ) -> Result<Option<u64>, Error> {
        if let Some(s) = self.find(key) {
            if force || self.val(s) != val {
                self.set_val(s, val);
                dirty.push(s);
            }
            return Ok(Some(s));
        }
        let mut s = pt_hash(key, self.shift);
        for _ in 0..=self.mask {
            let k = self.key(s);
            if k == PT_EMPTY || k == PT_TOMB {
                if k == PT_EMPTY && self.used.fetch_add(1, Relaxed) >= limit.min(self.mask) {
                    self.used.fetch_sub(1, Relaxed);
                    return Ok(None);
                }
                let slot = &self.slots[s as usize];
                if slot[0].compare_exchange(k, key, Relaxed, Relaxed).is_ok() {
                    slot[1].store(val, Relaxed);
                    dirty.push(s);
                    return Ok(Some(s));
                }
                // another lane took it first
                if k == PT_EMPTY {
                    self.used.fetch_sub(1, Relaxed);
                }
                continue;
            }
            s = (s + 1) & self.mask;
        }
        Err(Error::Device(format!(
            "the device page table is full ({} slots)",
            self.mask + 1
        )))
    }

    /// Whether `more` insertions keep the table at most half full.
    fn has_room(&self, more: u64) -> bool {
        (self.used.load(Relaxed) + more) * 2 <= self.mask + 1
    }

    /// Used slots at which inserting lanes in parallel leave the rest to the serial path.
    fn shared_limit(&self) -> u64 {
        (self.mask >> 1) + 1
    }

    /// Removes the entry at `slot`, listing it in `pending`.
    fn remove(&mut self, slot: u64) {
        self.forget(slot);
        self.pending.push(slot);
    }

    /// As `remove`, from any thread, listing the slot in `dirty`.
    fn remove_shared(&self, slot: u64, dirty: &mut Vec<u64>) {
        self.forget(slot);
        dirty.push(slot);
    }

    /// The whole table as the device holds it (key, value, key, value...).
    fn words(&self) -> Vec<u64> {
        self.slots
            .iter()
            .flat_map(|s| [s[0].load(Relaxed), s[1].load(Relaxed)])
            .collect()
    }

    /// As `remove`, leaving the device's copy as it is: for the entries of a lane that ended,
    /// whose keys no lookup asks for again (to other keys' probes a stale key is as good as a
    /// tombstone, and the slot's next owner overwrites it). Tens of thousands of lanes end in
    /// the same round; this saves writing all their entries.
    fn forget(&self, slot: u64) {
        let s = &self.slots[slot as usize];
        s[0].store(PT_TOMB, Relaxed);
        s[1].store(0, Relaxed);
    }
}

// ----- frames ------------------------------------------------------------------------------------

struct Frames {
    /// log2(frames per chunk): each chunk is one allocation, its frames then their shadows.
    shift: u32,
    chunks: Vec<DevPtr>,
    d_chunks: DevPtr,
    next: u64,
    free: Vec<u32>,
    live: u64,
    peak: u64,
    /// Frames waiting in lanes' reserves (live, but no guest page yet).
    reserved: u64,
    /// Peak of live frames that hold guest pages (reserves left out).
    guest_peak: u64,
}

impl Frames {
    /// A free frame. A frame for a lane's reserve is counted in `reserved` before the call.
    fn alloc(&mut self, dev: &dyn Device) -> Result<u32, Error> {
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                let f = self.next;
                if f >> self.shift >= self.chunks.len() as u64 {
                    if self.chunks.len() >= MAX_CHUNKS || f > PT_FRAME_MASK {
                        return Err(Error::Device("out of device frames".into()));
                    }
                    // frames, then their shadows (the bytes the host has, for diffs)
                    let p = dev.alloc((2 * (PAGE_SIZE << self.shift)) as usize)?;
                    let i = self.chunks.len();
                    self.chunks.push(p);
                    htod_slice(dev, self.d_chunks + 8 * i as u64, &[p])?;
                }
                self.next += 1;
                f as u32
            }
        };
        self.live += 1;
        self.peak = self.peak.max(self.live);
        self.guest_peak = self.guest_peak.max(self.live - self.reserved);
        Ok(f)
    }

    fn release(&mut self, f: u32) {
        if f != ZERO_FRAME {
            self.live -= 1;
            self.free.push(f);
        }
    }

    fn addr(&self, f: u32) -> DevPtr {
        let f = f as u64;
        self.chunks[(f >> self.shift) as usize] + ((f & ((1 << self.shift) - 1)) << PAGE_SHIFT)
    }

    /// The frame's shadow: the bytes the host mirror has for it.
    fn shadow(&self, f: u32) -> DevPtr {
        self.addr(f) + self.shadow_off()
    }

    /// Offset of a frame's shadow from the frame (the second half of its chunk).
    fn shadow_off(&self) -> u64 {
        PAGE_SIZE << self.shift
    }
}

// ----- lanes -------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Entry {
    slot: u64,
    frame: u32,
    /// The frame belongs to this lane (freed with the entry).
    private: bool,
    /// A lazy entry: `frame` holds the bytes the page starts from; the kernel gives the lane
    /// a frame of its own on the first write.
    lazy: bool,
}

struct LaneHost {
    lane: Lane,
    /// Index of the lane's program image in `Batch::images`.
    image: usize,
    entries: FxHashMap<u64, Entry>,
    epoch: u32,
    limit: u64,
    host_steps: u64,
    done: bool,
    /// The last page miss ((address, retired, write), repeats), to notice a lane that is stuck.
    last_miss: ((u64, u64, bool), u32),
    /// Frames the kernel may take for lazy pages (the record's S_RES list, same order).
    reserve: Vec<u32>,
    /// Pages the kernel made private (claims) that the host mirror still shares: made private
    /// there before the lane's next changes are applied.
    claimed: Vec<u64>,
}

/// What a lane's page should look like on the device.
enum Want {
    /// No entry of its own (absent, or the shared image page serves it).
    Nothing,
    /// An entry on a frame it does not own (the zero frame; perms 0 blocks an image page).
    Shared { frame: u32, perms: u64 },
    /// Its own frame, with these bytes when given (else the frame's bytes are current).
    Private { perms: u64, data: Option<PageSrc> },
    /// A lazy entry on `frame` (the zero frame or an image page), writable: the kernel copies
    /// it into a frame of the lane's reserve on the first write.
    Lazy { frame: u32, perms: u64 },
}

/// Where a frame's new bytes come from.
enum PageSrc {
    /// From the host.
    Bytes(Box<PageData>),
    /// A copy of another frame on the device (an image page being copied on write, or zeros).
    Frame(u32),
    /// Some words of a frame whose other bytes the device has: runs of (first word, words),
    /// and the runs' words back to back.
    Runs(Vec<(u16, u16)>, Vec<u64>),
}

/// Blocks of a page the host wrote beyond which the whole page goes up instead of its runs.
const RUNS_MAX_BLOCKS: usize = 48;

/// The 64-byte blocks of `after` that differ from `before` (the bytes the device has), as an
/// upload: their runs, the whole page when most of it changed, or None when nothing did.
/// (Syscalls write a few bytes of a page, a stat buffer or a path; sending only those blocks
/// keeps the per-syscall upload small.)
fn changed_runs(before: &PageData, after: &PageData) -> Option<PageSrc> {
    let mut runs: Vec<(u16, u16)> = Vec::new();
    let mut words: Vec<u64> = Vec::new();
    let mut blocks = 0;
    for (b, (x, y)) in before
        .chunks_exact(64)
        .zip(after.chunks_exact(64))
        .enumerate()
    {
        if x == y {
            continue;
        }
        blocks += 1;
        if blocks > RUNS_MAX_BLOCKS {
            return Some(PageSrc::Bytes(Box::new(*after)));
        }
        let first = 8 * b as u16;
        match runs.last_mut() {
            Some((f, n)) if *f + *n == first => *n += 8,
            _ => runs.push((first, 8)),
        }
        words.extend(
            y.chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap())),
        );
    }
    (blocks > 0).then_some(PageSrc::Runs(runs, words))
}

/// A serviced lane: its number, its plan, and the record words to write back (first word,
/// words).
type Serviced = (usize, Plan, Applied, Vec<(usize, Vec<u64>)>);

/// What servicing one lane produced, for the serial part of the round.
#[derive(Default)]
struct Plan {
    wants: Vec<(u64, Want)>,
    exited: bool,
    syscalls: u64,
    misses: u64,
    host_instructions: u64,
    host_steps: u64,
    /// The micro-op the kernel left to the host, when it was one.
    host_op: Option<&'static str>,
    /// Write the page-table entries even when the host copy says they are current.
    force: bool,
    /// The lane makes no progress (an engine bug): the batch stops with this message.
    stuck: Option<String>,
}

struct Image {
    /// vpn -> (bytes, frame), the image's shared pages.
    pages: FxHashMap<u64, (Arc<PageData>, u32)>,
    /// The page-table lane number of its shared pages.
    key_lane: u64,
    /// Decoded code regions (start, end), and their place in the device's region table.
    regions: Vec<(u64, u64)>,
    first_region: u32,
    /// Instructions a host step runs when the kernel left an instruction inside the decoded
    /// code to the host (`Device::host_run`).
    host_run: u64,
}

fn area_perms(p: Perm) -> u64 {
    (if p.contains(Perm::R) { PT_R } else { 0 }) | (if p.contains(Perm::W) { PT_W } else { 0 })
}

/// The device state page `vpn` of `mem` calls for. `owned`: the lane already has its own frame
/// for it (then unchanged bytes need no upload unless `force`); `read_miss`: the lane just
/// read it, so a page never touched maps the zero frame; `lazy`: a writable page that still
/// holds its starting bytes (zeros or the image's) gets a lazy entry (`Want::Lazy`), so the
/// kernel copies it on the first write without stopping the lane.
fn want_for(
    mem: &AddressSpace,
    vpn: u64,
    image: &Image,
    owned: bool,
    force: bool,
    read_miss: bool,
    lazy: bool,
) -> Want {
    let addr = vpn << PAGE_SHIFT;
    let img = image.pages.get(&vpn);
    let Some((_, _, perm)) = mem.area_at(addr) else {
        return if img.is_some() {
            Want::Shared {
                frame: ZERO_FRAME,
                perms: 0,
            }
        } else {
            Want::Nothing
        };
    };
    let perms = area_perms(perm);
    // A page never written and one that is still the shared zero page look the same to the
    // device (image pages are never the zero page, see `Batch::new`).
    let page = mem
        .gpu_page(vpn)
        .filter(|(d, private)| *private || !AddressSpace::gpu_is_zero_page(d));
    match page {
        Some((data, private)) => {
            let is_image = img.is_some_and(|(d, _)| Arc::ptr_eq(d, data));
            if is_image && !private {
                if lazy && perms & PT_W != 0 {
                    Want::Lazy {
                        frame: img.map_or(ZERO_FRAME, |i| i.1),
                        perms,
                    }
                } else if perms & PT_R != 0 {
                    Want::Nothing
                } else {
                    Want::Shared {
                        frame: ZERO_FRAME,
                        perms: 0,
                    }
                }
            } else {
                // A private page (or a shared one of unknown origin, kept read-only so a write
                // comes back to the host first).
                let perms = if private { perms } else { perms & PT_R };
                let data = if !owned || force {
                    Some(PageSrc::Bytes(Box::new(**data)))
                } else {
                    None
                };
                Want::Private { perms, data }
            }
        }
        None => {
            if lazy && perms & PT_W != 0 {
                Want::Lazy {
                    frame: ZERO_FRAME,
                    perms,
                }
            } else if read_miss || img.is_some() || owned {
                Want::Shared {
                    frame: ZERO_FRAME,
                    perms: perms & PT_R,
                }
            } else {
                Want::Nothing
            }
        }
    }
}

/// Lazy entries, into `out`, for the pages `lo..hi` that the lane has no entry for (nor a want
/// in `out`) and that qualify (writable, still zeros or the image's bytes).
fn lazy_range(lh: &LaneHost, image: &Image, lo: u64, hi: u64, out: &mut Vec<(u64, Want)>) {
    let mem = &lh.lane.program.mem;
    for v in lo..hi {
        if lh.entries.contains_key(&v) || out.iter().any(|w| w.0 == v) {
            continue;
        }
        let w = want_for(mem, v, image, false, false, false, true);
        if matches!(w, Want::Lazy { .. }) {
            out.push((v, w));
        }
    }
}

/// `lazy_range` around page `vpn` (which itself is left alone).
fn lazy_around(lh: &LaneHost, image: &Image, vpn: u64, out: &mut Vec<(u64, Want)>) {
    let lo = vpn.saturating_sub(LAZY_AROUND);
    lazy_range(lh, image, lo, vpn, out);
    lazy_range(lh, image, vpn + 1, vpn.saturating_add(LAZY_AROUND + 1), out);
}

/// Lazy entries for a writable area the lane has just got or that grew (`lo..hi` in pages):
/// all of a small one (a program's data and bss), else its first pages (a heap grows up).
fn lazy_area(lh: &LaneHost, image: &Image, lo: u64, hi: u64, out: &mut Vec<(u64, Want)>) {
    let hi = if hi - lo <= LAZY_AREA_PAGES {
        hi
    } else {
        lo + 2 * LAZY_AROUND
    };
    lazy_range(lh, image, lo, hi, out);
}

/// Areas as a comparable list.
fn area_list(mem: &AddressSpace) -> Vec<(u64, u64, Perm)> {
    mem.areas().collect()
}

/// Page numbers whose area or permissions differ between two area lists.
fn changed_ranges(a: &[(u64, u64, Perm)], b: &[(u64, u64, Perm)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (x, y) in [(a, b), (b, a)] {
        for &(s, e, p) in x {
            if !y.iter().any(|&(s2, e2, p2)| s2 == s && e2 == e && p2 == p) {
                out.push((s >> PAGE_SHIFT, e >> PAGE_SHIFT));
            }
        }
    }
    out
}

fn state_to_record(st: &CpuState, limit: u64, epoch: u32, rec: &mut [u64]) {
    rec[S_X..S_X + 32].copy_from_slice(&st.x[..32]);
    rec[S_PC] = st.pc;
    rec[S_NZCV] = st.nzcv;
    rec[S_FPCR] = st.fpcr;
    rec[S_FPSR] = st.fpsr;
    rec[S_TPIDR] = st.tpidr;
    rec[S_EXCL] = st.excl_addr;
    rec[S_RETIRED] = st.retired;
    rec[S_LIMIT] = limit;
    rec[S_STOP] = STOP_NONE as u64;
    rec[S_INFO] = 0;
    rec[S_EPOCH] = epoch as u64;
    rec[S_DIRTY_N] = 0;
    rec[S_VDIRTY] = 0;
    for i in 0..32 {
        rec[S_V + 2 * i] = st.v[i] as u64;
        rec[S_V + 2 * i + 1] = (st.v[i] >> 64) as u64;
    }
}

/// The registers of a downloaded record; the vector registers when given (else the host's
/// copy is current).
fn record_to_state(rec: &[u64], v: Option<&[u64]>, st: &mut CpuState) {
    st.x[..32].copy_from_slice(&rec[S_X..S_X + 32]);
    st.x[32] = 0;
    st.pc = rec[S_PC];
    st.nzcv = rec[S_NZCV];
    st.fpcr = rec[S_FPCR];
    st.fpsr = rec[S_FPSR];
    st.tpidr = rec[S_TPIDR];
    st.excl_addr = rec[S_EXCL];
    st.retired = rec[S_RETIRED];
    if let Some(v) = v {
        for i in 0..32 {
            st.v[i] = v[2 * i] as u128 | (v[2 * i + 1] as u128) << 64;
        }
    }
}

fn lane_stop(rec: &[u64], stop: u32) -> LaneStop {
    let info = rec[S_INFO];
    match stop {
        STOP_SLICE => LaneStop::Slice,
        STOP_LIMIT => LaneStop::Limit,
        STOP_SVC => LaneStop::Syscall,
        STOP_HLT => LaneStop::Halt(info as u16),
        STOP_BRK => LaneStop::Breakpoint(info as u16),
        STOP_UNDEFINED => LaneStop::Undefined(info as u32),
        STOP_MISS_R => LaneStop::PageMiss {
            addr: info,
            write: false,
        },
        STOP_MISS_W => LaneStop::PageMiss {
            addr: info,
            write: true,
        },
        STOP_HOST => LaneStop::HostStep,
        _ => LaneStop::Finished,
    }
}

/// A batch of lanes on one device.
pub struct Batch {
    dev: Arc<dyn Device>,
    lanes: Vec<LaneHost>,
    images: Vec<Image>,
    pt: HostTable,
    frames: Frames,
    params: Params,
    d_ops: DevPtr,
    d_regions: DevPtr,
    d_lanes: DevPtr,
    d_stops: DevPtr,
    d_active: DevPtr,
    d_pt: DevPtr,
    d_pt_epoch: DevPtr,
    d_stage: DevPtr,
    stage_bytes: usize,
    d_sched: DevPtr,
    progress_host: *mut u64,
    active: Vec<u32>,
    active_dirty: bool,
    /// Stop codes of the last launch (index = lane).
    stops: Vec<u32>,
    /// Records downloaded for the lanes being serviced.
    slice: u64,
    pub stats: Stats,
    trace: bool,
    /// Lanes that have ended, for pollers on other threads.
    pub(crate) done: Arc<std::sync::atomic::AtomicUsize>,
    spare: Spare,
    /// Lazy pages are on (the device supports them and ARMADA_GPU_LAZY is not 0).
    lazy: bool,
}

/// A mirror page that a downloaded block goes to (null: none).
#[derive(Clone, Copy)]
struct PagePtr(*mut u8);
// SAFETY: each points into a page of one lane's mirror, written only while the lanes are not
// otherwise touched (see `Batch::service`).
unsafe impl Send for PagePtr {}
unsafe impl Sync for PagePtr {}

/// Host buffers kept from round to round. A round of tens of thousands of stopped lanes moves
/// tens of MB each way; fresh allocations of that size come from the kernel (mmap) and fault
/// every page in again, which showed in profiles as the page-fault path. They are page-locked
/// (`Device::alloc_host`), so the driver copies at the bus's full rate.
#[derive(Default)]
struct Spare {
    recs: Pinned,
    changes: Pinned,
    up: Pinned,
}

/// Largest piece of changed blocks downloaded at once (`Batch::stream_changes`).
const CHANGES_PIECE: usize = 32 << 20;

/// Records or pages in one upload of the setup (64 MB of pages).
const SETUP_PIECE: usize = 16384;

/// Largest upload staged in page-locked memory: the setup's upload of every lane's stack can
/// be much larger, once, and pinning that much would cost more than it saves.
const PINNED_UP_MAX: usize = 256 << 20;

/// A page-locked host buffer from the device, grown by doubling (its contents are not kept),
/// freed when dropped.
#[derive(Default)]
struct Pinned {
    ptr: Option<(std::ptr::NonNull<u8>, Arc<dyn Device>)>,
    bytes: usize,
}

// SAFETY: the buffer is owned by this value and only reached through `&`/`&mut` of it; the
// devices are shared across threads already (`Batch` moves between threads with its device).
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    /// Room for `bytes` (what it held before is lost when it grows).
    fn reserve(&mut self, dev: &Arc<dyn Device>, bytes: usize) -> Result<(), Error> {
        if bytes <= self.bytes {
            return Ok(());
        }
        *self = Pinned::default();
        let want = bytes.next_power_of_two().max(1 << 20);
        let p = std::ptr::NonNull::new(dev.alloc_host(want)?)
            .ok_or_else(|| Error::Device("page-locked allocation returned null".into()))?;
        self.ptr = Some((p, dev.clone()));
        self.bytes = want;
        Ok(())
    }

    fn base(&self) -> *mut u8 {
        self.ptr
            .as_ref()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), |p| p.0.as_ptr())
    }

    fn bytes_mut(&mut self, n: usize) -> &mut [u8] {
        assert!(n <= self.bytes, "staging buffer overrun");
        // SAFETY: the buffer holds `self.bytes` bytes, owned by this value (or n is 0 and the
        // pointer dangling but aligned).
        unsafe { std::slice::from_raw_parts_mut(self.base(), n) }
    }

    fn words(&self, n: usize) -> &[u64] {
        assert!(8 * n <= self.bytes, "staging buffer overrun");
        // SAFETY: as in `bytes_mut`; the buffer is page-aligned.
        unsafe { std::slice::from_raw_parts(self.base() as *const u64, n) }
    }

    fn words_mut(&mut self, n: usize) -> &mut [u64] {
        assert!(8 * n <= self.bytes, "staging buffer overrun");
        // SAFETY: as in `bytes_mut`; the buffer is page-aligned.
        unsafe { std::slice::from_raw_parts_mut(self.base() as *mut u64, n) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some((p, dev)) = self.ptr.take() {
            // SAFETY: from this device's `alloc_host` with `self.bytes`; not used after.
            unsafe { dev.free_host(p.as_ptr(), self.bytes) };
        }
    }
}

// SAFETY: progress_host points at pinned host memory owned by this batch (freed in Drop); it is
// only read through volatile loads, so moving the batch to another thread is fine.
unsafe impl Send for Batch {}

impl Drop for Batch {
    fn drop(&mut self) {
        // tens of thousands of lanes, each with its own maps and pages: drop them in parallel
        std::mem::take(&mut self.lanes)
            .into_par_iter()
            .for_each(drop);
        let d = &self.dev;
        for p in [
            self.d_ops,
            self.d_regions,
            self.d_lanes,
            self.d_stops,
            self.d_active,
            self.d_pt,
            self.d_pt_epoch,
            self.d_stage,
            self.d_sched,
            self.frames.d_chunks,
        ] {
            if p != 0 {
                d.free(p);
            }
        }
        for &c in &self.frames.chunks {
            d.free(c);
        }
        if !self.progress_host.is_null() {
            d.free_mapped(self.progress_host);
        }
    }
}

impl Batch {
    /// Prepares `lanes` (all of one program) on the device: decodes the program's code,
    /// uploads the shared image pages and every lane's registers and private pages.
    pub fn new(
        dev: Arc<dyn Device>,
        lanes: Vec<Lane>,
        max_instructions: Option<u64>,
        slice: Option<u64>,
    ) -> Result<Batch, Error> {
        let t0 = Instant::now();
        if lanes.is_empty() {
            return Err(Error::Device("a batch needs at least one lane".into()));
        }
        if lanes.len() as u64 >= PT_IMAGE_LANE {
            return Err(Error::Device("too many lanes".into()));
        }
        // Lanes may run different programs: each image's code and pages are shared by the
        // lanes that run it.
        let mut image_of: Vec<Arc<armada_core::elf::Image>> = Vec::new();
        let lane_image: Vec<usize> = lanes
            .iter()
            .map(|l| {
                match image_of
                    .iter()
                    .position(|i| Arc::ptr_eq(i, &l.program.image))
                {
                    Some(k) => k,
                    None => {
                        image_of.push(l.program.image.clone());
                        image_of.len() - 1
                    }
                }
            })
            .collect();
        if image_of.len() as u64 + lanes.len() as u64 >= PT_IMAGE_LANE {
            return Err(Error::Device("too many lanes".into()));
        }
        let limit = max_instructions.unwrap_or(u64::MAX);
        let mut lanes: Vec<LaneHost> = lanes
            .into_iter()
            .zip(lane_image)
            .map(|(lane, image)| LaneHost {
                lane,
                image,
                entries: FxHashMap::default(),
                epoch: 1,
                limit,
                host_steps: 0,
                done: false,
                last_miss: ((0, 0, false), 0),
                reserve: Vec::new(),
                claimed: Vec::new(),
            })
            .collect();
        let n = lanes.len();
        let dev_ref: &dyn Device = &*dev;

        // Code: every executable (and not writable) area of each image, decoded once.
        let mut ops_words: Vec<u64> = Vec::new();
        let mut region_words: Vec<u64> = Vec::new();
        let mut images: Vec<Image> = Vec::new();
        let mut image_pages: Vec<Vec<(u64, Arc<PageData>, Perm)>> = Vec::new();
        for k in 0..image_of.len() {
            let first = lanes.iter().position(|l| l.image == k).unwrap();
            let mem = &mut lanes[first].lane.program.mem;
            let areas: Vec<_> = mem
                .areas()
                .filter(|a| a.2.contains(Perm::X) && !a.2.contains(Perm::W))
                .collect();
            let mut img = Image {
                pages: FxHashMap::default(),
                key_lane: PT_IMAGE_LANE - k as u64,
                regions: Vec::new(),
                first_region: (region_words.len() / 3) as u32,
                host_run: dev.host_run().max(1),
            };
            for (start, end, _) in areas {
                let mut bytes = vec![0u8; (end - start) as usize];
                if mem.fetch_bytes(start, &mut bytes).is_err() {
                    continue;
                }
                let first_op = (ops_words.len() / 2) as u64;
                region_words.extend_from_slice(&[start, end, first_op]);
                img.regions.push((start, end));
                for (k, w) in bytes.chunks_exact(4).enumerate() {
                    let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                    ops_words.extend_from_slice(&encode_uop(word, start + 4 * k as u64));
                }
                if dev.fused_pairs() {
                    crate::layout::fused::fuse(&mut ops_words[2 * first_op as usize..]);
                }
                ops_words.push(ops::END_OF_REGION as u64);
                ops_words.push(0);
            }
            let mem = &lanes[first].lane.program.mem;
            image_pages.push(
                mem.gpu_pages()
                    .filter(|(_, d, private)| !private && !AddressSpace::gpu_is_zero_page(d))
                    .filter_map(|(vpn, d, _)| {
                        mem.area_at(vpn << PAGE_SHIFT)
                            .map(|a| (vpn, d.clone(), a.2))
                    })
                    .collect(),
            );
            images.push(img);
        }
        // padding: the kernel loads the micro-op after the one it runs, also after a sentinel
        ops_words.push(ops::END_OF_REGION as u64);
        ops_words.push(0);
        let nregions = (region_words.len() / 3) as u32;
        let d_ops = dev.alloc(ops_words.len().max(2) * 8)?;
        htod_slice(dev_ref, d_ops, &ops_words)?;
        let d_regions = dev.alloc(region_words.len().max(3) * 8)?;
        htod_slice(dev_ref, d_regions, &region_words)?;

        // The page table: sized for the lanes' expected pages, with room to spare.
        let total_image_pages: u64 = image_pages.iter().map(|p| p.len() as u64).sum();
        // (lazy pages give a lane entries for its data, bss and stack top from the start)
        let per_lane = if dev.lazy_pages() { 96 } else { 32 };
        let want_slots = 2 * (total_image_pages + per_lane * n as u64);
        let slots = want_slots.next_power_of_two().clamp(1 << 12, 1 << 27);
        let mut pt = HostTable::new(slots);
        let d_pt = dev.alloc(slots as usize * 16)?;
        let d_pt_epoch = dev.alloc(slots as usize * 4)?;

        let d_chunks = dev.alloc(MAX_CHUNKS * 8)?;
        let mut frames = Frames {
            shift: dev.chunk_shift(),
            chunks: Vec::new(),
            d_chunks,
            next: 0,
            free: Vec::new(),
            live: 0,
            peak: 0,
            reserved: 0,
            guest_peak: 0,
        };
        let zero = frames.alloc(dev_ref)?;
        debug_assert_eq!(zero, ZERO_FRAME);

        // Shared image pages: one frame each, read-only for every lane of the image.
        let mut uploads: Vec<(u32, PageSrc)> = Vec::new();
        for (img, pages) in images.iter_mut().zip(image_pages) {
            for (vpn, data, perm) in pages {
                let f = frames.alloc(dev_ref)?;
                let perms = if perm.contains(Perm::R) { PT_R } else { 0 };
                pt.set(pt_key(img.key_lane, vpn), f as u64 | perms, false)?;
                uploads.push((f, PageSrc::Bytes(Box::new(*data))));
                img.pages.insert(vpn, (data, f));
            }
        }

        let d_lanes = dev.alloc(n * S_WORDS * 8)?;
        let d_stops = dev.alloc(n * 4)?;
        let d_active = dev.alloc(n * 4)?;
        let (progress_host, d_progress) = dev.alloc_mapped(n * 8)?;
        // the scheduling words, then the claim log (count, then two words a claim; every
        // lane's whole reserve fits, so it cannot overflow)
        let lazy = dev.lazy_pages() && std::env::var("ARMADA_GPU_LAZY").map_or(true, |v| v != "0");
        let claim_words = if lazy { 1 + 2 * RES_CAP * n } else { 0 };
        let d_sched = dev.alloc(16 + 8 * claim_words)?;

        let mut batch = Batch {
            dev: dev.clone(),
            lanes: Vec::new(),
            images,
            pt,
            frames,
            params: Params::default(),
            d_ops,
            d_regions,
            d_lanes,
            d_stops,
            d_active,
            d_pt,
            d_pt_epoch,
            d_stage: 0,
            stage_bytes: 0,
            d_sched,
            progress_host,
            active: (0..n as u32).collect(),
            active_dirty: true,
            stops: vec![STOP_NONE; n],
            slice: slice.or(dev.default_slice()).unwrap_or(DEFAULT_SLICE),
            stats: Stats::default(),
            trace: std::env::var_os("ARMADA_CUDA_TRACE").is_some(),
            done: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            spare: Spare::default(),
            lazy,
        };
        batch.stats.regions = nregions as usize;
        batch.stats.images = batch.images.len();
        batch.stats.micro_ops = ops_words.len() / 2;
        batch.stats.pt_slots = slots;
        batch.params = Params {
            ops: d_ops,
            regions: d_regions,
            lanes: d_lanes,
            stops: d_stops,
            active: d_active,
            pt: d_pt,
            pt_epoch: d_pt_epoch,
            chunks: d_chunks,
            progress: d_progress,
            sched: d_sched,
            claims: if lazy { d_sched + 16 } else { 0 },
            slice: batch.slice,
            max_ns: env_ms("ARMADA_CUDA_LAUNCH_MS", 100.0),
            min_grace_ns: env_ms("ARMADA_CUDA_GRACE_MS", 5.0),
            min_run_ns: env_ms("ARMADA_CUDA_MIN_RUN_MS", 1.0),
            pt_mask: slots - 1,
            nactive: n as u32,
            nregions,
            pt_shift: 64 - slots.trailing_zeros(),
            chunk_shift: batch.frames.shift,
            lane_shift: 0,
        };

        // Every lane's private pages (its stack) and registers.
        let images_ref = &batch.images;
        let pt = &batch.pt;
        let t_plans = Instant::now();
        let plans: Vec<(Plan, Applied)> = lanes
            .par_iter_mut()
            .enumerate()
            .map(|(i, l)| {
                let mem = &l.lane.program.mem;
                let image = &images_ref[l.image];
                let vpns: Vec<u64> = mem.gpu_pages().filter(|p| p.2).map(|p| p.0).collect();
                let mut wants: Vec<(u64, Want)> = vpns
                    .iter()
                    .map(|&v| (v, want_for(mem, v, image, false, true, false, false)))
                    .collect();
                if lazy {
                    // pages the lane will likely write: its small writable areas (data, bss)
                    // and the pages around its first private ones (the stack's top; the
                    // stack's far end stays unmapped)
                    for (start, end, perm) in mem.areas() {
                        let (lo, hi) = (start >> PAGE_SHIFT, end.div_ceil(PAGE_SIZE));
                        if perm.contains(Perm::W) && hi - lo <= LAZY_AREA_PAGES {
                            lazy_range(l, image, lo, hi, &mut wants);
                        }
                    }
                    for &v in &vpns {
                        lazy_around(l, image, v, &mut wants);
                    }
                }
                let mut plan = Plan {
                    wants,
                    ..Default::default()
                };
                // the table was sized for this: most entries go in here, in parallel
                let applied = apply_shared(pt, l, i, &mut plan);
                (plan, applied)
            })
            .collect();
        batch.lanes = lanes;
        let incoming: u64 = plans.iter().map(|p| p.0.wants.len() as u64).sum();
        batch.ensure_pt_room(incoming)?;
        // the table and frames serially, then the records in parallel
        let t_table = Instant::now();
        let mut reserves: Vec<Option<Vec<u64>>> = Vec::with_capacity(n);
        for (i, (plan, applied)) in plans.into_iter().enumerate() {
            batch.apply_rest(i, applied, plan, &mut uploads)?;
            reserves.push(batch.top_up(i)?);
        }
        let t_records = Instant::now();
        let images = &batch.images;
        let records: Vec<(u32, usize, Vec<u64>)> = batch
            .lanes
            .par_iter_mut()
            .zip(reserves.into_par_iter())
            .enumerate()
            .map(|(i, (l, reserve))| {
                let l = &*l;
                let mut rec = vec![0u64; S_WORDS];
                state_to_record(&l.lane.program.state, l.limit, l.epoch, &mut rec);
                let img = &images[l.image];
                rec[S_REGIONS] = img.first_region as u64 | (img.regions.len() as u64) << 32;
                rec[S_IMAGE] = img.key_lane;
                if let Some(r) = reserve {
                    rec[S_RES_N..S_RES_N + r.len()].copy_from_slice(&r);
                }
                (i as u32, 0, rec)
            })
            .collect();
        let t_up = Instant::now();
        // in pieces that fit the page-locked staging buffer (a fresh buffer of every lane's
        // stack, hundreds of MB, would cost its page faults and the driver's own staging)
        for part in records.chunks(SETUP_PIECE) {
            batch.upload(part, Vec::new())?;
        }
        while !uploads.is_empty() {
            let part = uploads.split_off(uploads.len().saturating_sub(SETUP_PIECE));
            batch.upload(&[], part)?;
        }
        batch.stats.setup_parts = [
            (t_table - t_plans).as_secs_f64(),
            (t_records - t_table).as_secs_f64(),
            (t_up - t_records).as_secs_f64(),
            t_up.elapsed().as_secs_f64(),
        ];
        batch.stats.setup_s = t0.elapsed().as_secs_f64();
        Ok(batch)
    }

    pub(crate) fn lane_hosts_mut(&mut self) -> impl Iterator<Item = (&mut Lane, u64)> {
        self.lanes.iter_mut().map(|l| (&mut l.lane, l.host_steps))
    }

    /// Makes the device current on the calling thread.
    pub fn bind(&self) -> Result<(), Error> {
        self.dev.bind()
    }

    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Lanes that have not ended.
    pub fn active(&self) -> usize {
        self.active.len()
    }

    /// A counter of retired instructions that another thread may read while the batch runs
    /// (finished lanes plus the host-mapped per-lane counters the kernel writes).
    pub fn progress_reader(&self) -> ProgressReader {
        ProgressReader {
            ptr: self.progress_host as usize,
            lanes: self.lanes.len(),
        }
    }

    fn ensure_stage(&mut self, bytes: usize) -> Result<DevPtr, Error> {
        if bytes > self.stage_bytes {
            if self.d_stage != 0 {
                self.dev.free(self.d_stage);
            }
            let want = bytes.next_power_of_two().max(1 << 20);
            self.d_stage = self.dev.alloc(want)?;
            self.stage_bytes = want;
        }
        Ok(self.d_stage)
    }

    /// Copies blocks between device addresses through the copy kernel.
    fn run_copies(&mut self, descs: &[CopyDesc], desc_at: DevPtr) -> Result<(), Error> {
        if descs.is_empty() {
            return Ok(());
        }
        htod_slice(&*self.dev, desc_at, descs)?;
        self.dev.copy(desc_at, descs.len() as u32)
    }

    /// Uploads records and pages, and flushes pending page-table writes.
    fn upload(
        &mut self,
        records: &[(u32, usize, Vec<u64>)],
        pages: Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        let t = Instant::now();
        // The copy kernel writes in parallel: one upload per frame, the last one.
        let pages = if pages.len() > 1 {
            let mut seen = FxHashSet::with_capacity_and_hasher(pages.len(), Default::default());
            let mut v: Vec<(u32, PageSrc)> = pages
                .into_iter()
                .rev()
                .filter(|p| seen.insert(p.0))
                .collect();
            v.reverse();
            v
        } else {
            pages
        };
        let rec_words: usize = records.iter().map(|r| r.2.len()).sum();
        let host_pages: Vec<&PageData> = pages
            .iter()
            .filter_map(|p| match &p.1 {
                PageSrc::Bytes(b) => Some(&**b),
                _ => None,
            })
            .collect();
        let (mut run_words, mut n_runs) = (0usize, 0usize);
        for p in &pages {
            if let PageSrc::Runs(runs, words) = &p.1 {
                run_words += words.len();
                n_runs += runs.len();
            }
        }
        let rec_bytes = rec_words * 8;
        let page_bytes = host_pages.len() * PAGE_SIZE as usize;
        let data_bytes = rec_bytes + page_bytes + run_words * 8;
        // each page (or run) goes to its frame and its shadow
        let n_whole = pages.len()
            - pages
                .iter()
                .filter(|p| matches!(p.1, PageSrc::Runs(..)))
                .count();
        let n_desc = records.len() + 2 * (n_whole + n_runs);
        let desc_bytes = n_desc * std::mem::size_of::<CopyDesc>();
        if n_desc > 0 {
            let stage = self.ensure_stage(data_bytes + desc_bytes)?;
            let mut pinned = std::mem::take(&mut self.spare.up);
            let mut plain = Vec::new();
            let host: &mut [u8] = if data_bytes <= PINNED_UP_MAX {
                pinned.reserve(&self.dev, data_bytes)?;
                pinned.bytes_mut(data_bytes)
            } else {
                plain.resize(data_bytes, 0u8);
                &mut plain
            };
            let mut descs = Vec::with_capacity(n_desc);
            // the records' places first, then their words in parallel
            let mut rec_host = &mut host[..rec_bytes];
            let mut places: Vec<&mut [u8]> = Vec::with_capacity(records.len());
            let mut off = 0usize;
            for (lane, first, words) in records {
                let (mine, more) = std::mem::take(&mut rec_host).split_at_mut(8 * words.len());
                places.push(mine);
                rec_host = more;
                descs.push(CopyDesc {
                    src: stage + off as u64,
                    dst: self.d_lanes + ((*lane as u64) * (S_WORDS as u64) + *first as u64) * 8,
                    words: words.len() as u64,
                });
                off += 8 * words.len();
            }
            records
                .par_iter()
                .zip(places)
                .with_min_len(256)
                .for_each(|((_, _, words), dst)| {
                    for (d, v) in dst.chunks_exact_mut(8).zip(words) {
                        d.copy_from_slice(&v.to_le_bytes());
                    }
                });
            host[rec_bytes..rec_bytes + page_bytes]
                .par_chunks_mut(PAGE_SIZE as usize)
                .zip(host_pages.par_iter())
                .for_each(|(dst, data)| dst.copy_from_slice(&data[..]));
            let mut k = 0usize;
            let mut run_off = rec_bytes + page_bytes;
            for (frame, src) in &pages {
                let (to, shadow) = (self.frames.addr(*frame), self.frames.shadow(*frame));
                let from = match src {
                    PageSrc::Bytes(_) => {
                        k += 1;
                        stage + (rec_bytes + (k - 1) * PAGE_SIZE as usize) as u64
                    }
                    PageSrc::Frame(g) => self.frames.addr(*g),
                    PageSrc::Runs(runs, words) => {
                        for (w, v) in words.iter().enumerate() {
                            host[run_off + 8 * w..run_off + 8 * w + 8]
                                .copy_from_slice(&v.to_le_bytes());
                        }
                        for &(first, n) in runs {
                            for dst in [to, shadow] {
                                descs.push(CopyDesc {
                                    src: stage + run_off as u64,
                                    dst: dst + 8 * first as u64,
                                    words: n as u64,
                                });
                            }
                            run_off += 8 * n as usize;
                        }
                        self.stats.runs_up += runs.len() as u64;
                        self.stats.run_words_up += words.len() as u64;
                        continue;
                    }
                };
                for dst in [to, shadow] {
                    descs.push(CopyDesc {
                        src: from,
                        dst,
                        words: PAGE_SIZE / 8,
                    });
                }
            }
            let t_htod = Instant::now();
            self.stats.upload_parts[0] += (t_htod - t).as_secs_f64();
            self.dev.htod(stage, host)?;
            self.spare.up = pinned;
            let t_copy = Instant::now();
            self.stats.upload_parts[1] += (t_copy - t_htod).as_secs_f64();
            self.run_copies(&descs, stage + data_bytes as u64)?;
            self.stats.upload_parts[2] += t_copy.elapsed().as_secs_f64();
            self.stats.pages_up += host_pages.len() as u64;
            self.stats.pages_copied += (n_whole - host_pages.len()) as u64;
        }
        let t_pt = Instant::now();
        self.flush_pt()?;
        self.stats.upload_parts[3] += t_pt.elapsed().as_secs_f64();
        if self.active_dirty {
            htod_slice(&*self.dev, self.d_active, &self.active)?;
            self.active_dirty = false;
        }
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        self.stats.transfer_parts[4] += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Makes room for `more` page-table entries, doubling the table (on the host and the
    /// device) as often as needed. Dirty-page marks move with their entries.
    fn ensure_pt_room(&mut self, more: u64) -> Result<(), Error> {
        if self.pt.has_room(more) {
            return Ok(());
        }
        let t = Instant::now();
        self.flush_pt()?;
        let dev: &dyn Device = &*self.dev;
        let old_slots = self.pt.mask + 1;
        let live = (0..old_slots)
            .filter(|&s| {
                let k = self.pt.key(s);
                k != PT_EMPTY && k != PT_TOMB
            })
            .count() as u64;
        let mut slots = old_slots * 2;
        while (live + more) * 2 > slots {
            slots *= 2;
        }
        let epochs: Vec<u32> = dtoh_vec(dev, self.d_pt_epoch, old_slots as usize)?;
        let mut nt = HostTable::new(slots);
        let mut new_epochs = vec![0u32; slots as usize];
        let vpn_mask = (1u64 << PT_VPN_BITS) - 1;
        for (s, &epoch) in epochs.iter().enumerate() {
            let k = self.pt.key(s as u64);
            if k == PT_EMPTY || k == PT_TOMB {
                continue;
            }
            let ns = nt.set(k, self.pt.val(s as u64), false)?;
            new_epochs[ns as usize] = epoch;
            let lane = (k - 1) >> PT_VPN_BITS;
            if (lane as usize) < self.lanes.len() {
                if let Some(e) = self.lanes[lane as usize]
                    .entries
                    .get_mut(&((k - 1) & vpn_mask))
                {
                    e.slot = ns;
                }
            }
        }
        nt.pending.clear();
        let words = nt.words();
        let d_pt = dev.alloc(slots as usize * 16)?;
        let d_pt_epoch = dev.alloc(slots as usize * 4)?;
        htod_slice(dev, d_pt, &words)?;
        htod_slice(dev, d_pt_epoch, &new_epochs)?;
        dev.free(self.d_pt);
        dev.free(self.d_pt_epoch);
        self.d_pt = d_pt;
        self.d_pt_epoch = d_pt_epoch;
        self.params.pt = d_pt;
        self.params.pt_epoch = d_pt_epoch;
        self.params.pt_mask = slots - 1;
        self.params.pt_shift = 64 - slots.trailing_zeros();
        self.pt = nt;
        self.stats.pt_slots = slots;
        self.stats.pt_grows += 1;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Writes pending page-table changes to the device.
    fn flush_pt(&mut self) -> Result<(), Error> {
        if self.pt.pending.is_empty() {
            return Ok(());
        }
        // The kernel applies the writes in parallel: each slot once, with what it holds now
        // (a slot freed by one lane can be taken by another in the same round).
        let mut slots = std::mem::take(&mut self.pt.pending);
        slots.par_sort_unstable();
        slots.dedup();
        let pt = &self.pt;
        let writes: Vec<u64> = slots
            .par_iter()
            .flat_map_iter(|&s| [s, pt.key(s), pt.val(s)])
            .collect();
        let n = writes.len() / 3;
        let stage = self.ensure_stage(writes.len() * 8)?;
        htod_slice(&*self.dev, stage, &writes)?;
        self.dev
            .pt_write(self.d_pt, self.d_pt_epoch, stage, n as u32)
    }

    /// Applies one lane's wanted page states to the table and frames (the serial path: for
    /// the wants `apply_shared` left, and for a lane that ended); collects uploads.
    fn apply_plan(
        &mut self,
        i: usize,
        plan: Plan,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        let dev: &dyn Device = &*self.dev;
        let l = &mut self.lanes[i];
        for (vpn, want) in plan.wants {
            let key = pt_key(i as u64, vpn);
            let cur = l.entries.get(&vpn).copied();
            match want {
                Want::Nothing => {
                    if let Some(e) = cur {
                        self.pt.remove(e.slot);
                        if e.private {
                            self.frames.release(e.frame);
                        }
                        l.entries.remove(&vpn);
                    }
                }
                Want::Shared { frame, perms } | Want::Lazy { frame, perms } => {
                    // an entry on a frame the lane does not own (a lazy one: until the kernel
                    // gives it a frame on the first write)
                    let lazy = matches!(want, Want::Lazy { .. });
                    if let Some(e) = cur {
                        if e.private {
                            self.frames.release(e.frame);
                        }
                    }
                    let val = frame as u64 | perms | if lazy { PT_LAZY } else { 0 };
                    let slot = self.pt.set(key, val, plan.force)?;
                    l.entries.insert(
                        vpn,
                        Entry {
                            slot,
                            frame,
                            private: false,
                            lazy,
                        },
                    );
                }
                Want::Private { perms, data } => {
                    let (frame, fresh) = match cur {
                        Some(e) if e.private => (e.frame, false),
                        _ => (self.frames.alloc(dev)?, true),
                    };
                    let slot = self.pt.set(key, frame as u64 | perms, plan.force)?;
                    l.entries.insert(
                        vpn,
                        Entry {
                            slot,
                            frame,
                            private: true,
                            lazy: false,
                        },
                    );
                    match data {
                        Some(d) => uploads.push((frame, d)),
                        None if fresh => {
                            // never happens by construction (a new frame always comes with its
                            // bytes), but a fresh frame must not show stale bytes
                            uploads.push((frame, PageSrc::Frame(ZERO_FRAME)));
                        }
                        None => {}
                    }
                }
            }
        }
        if plan.exited {
            for (_, e) in l.entries.drain() {
                self.pt.forget(e.slot);
                if e.private {
                    self.frames.release(e.frame);
                }
            }
            for f in std::mem::take(&mut l.reserve) {
                self.frames.release(f);
                self.frames.reserved -= 1;
            }
        }
        self.stats.frames_peak = self.frames.peak;
        self.stats.guest_frames_peak = self.frames.guest_peak;
        Ok(())
    }

    /// Takes what `apply_shared` did for lane `i` into the batch: table writes, freed frames,
    /// uploads; then applies the wants it left (they need frames or table room).
    fn apply_rest(
        &mut self,
        i: usize,
        done: Applied,
        plan: Plan,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<(), Error> {
        self.pt.pending.extend_from_slice(&done.dirty);
        for f in done.freed {
            self.frames.release(f);
        }
        uploads.extend(done.uploads);
        if !plan.wants.is_empty() || plan.exited {
            self.apply_plan(i, plan, uploads)?;
        }
        Ok(())
    }

    /// Fills lane `i`'s frame reserve up to RES_CAP frames, within its memory cap (counting the
    /// pages it claimed that the mirror does not show yet). Returns the record words from
    /// S_RES_N on when the reserve changed.
    fn top_up(&mut self, i: usize) -> Result<Option<Vec<u64>>, Error> {
        if !self.lazy {
            return Ok(None);
        }
        let l = &mut self.lanes[i];
        let mem = &l.lane.program.mem;
        let used = mem.private_bytes() + l.claimed.len() as u64 * PAGE_SIZE;
        let room = (mem.limit().saturating_sub(used) / PAGE_SIZE).min(RES_CAP as u64) as usize;
        let before = l.reserve.len();
        if before == room {
            return Ok(None);
        }
        while l.reserve.len() > room {
            let f = l.reserve.pop().unwrap_or(ZERO_FRAME);
            self.frames.release(f);
            self.frames.reserved -= 1;
        }
        while l.reserve.len() < room {
            // out of device memory: a smaller reserve (the lane's writes then stop it as
            // misses, and the host says so if it cannot map them either)
            self.frames.reserved += 1;
            let Ok(f) = self.frames.alloc(&*self.dev) else {
                self.frames.reserved -= 1;
                break;
            };
            l.reserve.push(f);
        }
        if l.reserve.len() == before {
            return Ok(None);
        }
        self.stats.frames_peak = self.frames.peak;
        let mut words = Vec::with_capacity(1 + l.reserve.len());
        words.push(l.reserve.len() as u64);
        words.extend(l.reserve.iter().map(|&f| f as u64));
        Ok(Some(words))
    }

    /// Reads the claim log of the last launch: each lazy page the kernel gave a frame of the
    /// lane's reserve becomes the lane's private page in the host's table.
    fn take_claims(&mut self) -> Result<(), Error> {
        let dev: &dyn Device = &*self.dev;
        let n = dtoh_vec::<u64>(dev, self.params.claims, 1)?[0] as usize;
        if n == 0 {
            return Ok(());
        }
        if n > RES_CAP * self.lanes.len() {
            return Err(Error::Device(format!(
                "the claim log holds {n} entries, more than fit"
            )));
        }
        let words: Vec<u64> = dtoh_vec(dev, self.params.claims + 8, 2 * n)?;
        for c in words.chunks_exact(2) {
            let (lane, frame, vpn) = ((c[0] >> 32) as usize, c[0] as u32, c[1]);
            let bad = || Error::Device(format!("lane {lane} claimed page {vpn:#x} out of step"));
            let l = self.lanes.get_mut(lane).ok_or_else(bad)?;
            // the kernel takes frames from the end of the list, as the host does here
            if l.reserve.pop() != Some(frame) {
                return Err(bad());
            }
            let e = l.entries.get_mut(&vpn).filter(|e| e.lazy).ok_or_else(bad)?;
            let slot = e.slot as usize;
            *e = Entry {
                slot: e.slot,
                frame,
                private: true,
                lazy: false,
            };
            // the kernel wrote the same value to its copy
            let v = self.pt.val(slot as u64);
            self.pt
                .set_val(slot as u64, frame as u64 | (v & (PT_R | PT_W)));
            l.claimed.push(vpn);
        }
        self.frames.reserved -= n as u64;
        let f = &mut self.frames;
        f.guest_peak = f.guest_peak.max(f.live - f.reserved);
        self.stats.guest_frames_peak = f.guest_peak;
        self.stats.lazy_claims += n as u64;
        Ok(())
    }

    /// Launches the kernel over the active lanes and waits; returns each active lane's stop.
    pub fn execute(&mut self, slice: u64) -> Result<Vec<(usize, LaneStop)>, Error> {
        self.launch(slice)?;
        let t = Instant::now();
        // Records of stopped lanes, for the stop details.
        let stopped: Vec<u32> = self
            .active
            .iter()
            .copied()
            .filter(|&l| self.stops[l as usize] != STOP_SLICE)
            .collect();
        let recs = self.download_records(&stopped, 0, DOWN_WORDS)?;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        let mut out = Vec::with_capacity(self.active.len());
        let mut k = 0;
        for &l in &self.active {
            let s = self.stops[l as usize];
            if s == STOP_SLICE {
                out.push((l as usize, LaneStop::Slice));
            } else {
                out.push((
                    l as usize,
                    lane_stop(&recs[k * DOWN_WORDS..(k + 1) * DOWN_WORDS], s),
                ));
                k += 1;
            }
        }
        Ok(out)
    }

    fn launch(&mut self, slice: u64) -> Result<(), Error> {
        if self.active.is_empty() {
            return Ok(());
        }
        // With more lanes than the GPU holds at once, later blocks start late; rotating the
        // list lets every lane be early now and then.
        if self.active.len() > 32768 {
            let k = (self.stats.launches as usize * 7919) % self.active.len();
            self.active.rotate_left(k);
            self.active_dirty = true;
        }
        if self.active_dirty {
            htod_slice(&*self.dev, self.d_active, &self.active)?;
            self.active_dirty = false;
        }
        let reset: &[u64] = if self.lazy { &[0, 0, 0] } else { &[0, 0] };
        htod_slice(&*self.dev, self.d_sched, reset)?;
        self.params.nactive = self.active.len() as u32;
        self.params.slice = slice.max(1);
        // a small batch: one lane per warp (up to 32 threads a lane, 65536 threads in all)
        let n = self.active.len().max(1) as u32;
        self.params.lane_shift = (65536 / n).max(1).ilog2().min(5);
        let t = Instant::now();
        self.dev.launch_run(&self.params)?;
        self.dev.sync()?;
        let secs = t.elapsed().as_secs_f64();
        self.stats.kernel_s += secs;
        self.stats.launches += 1;
        let t = Instant::now();
        let mut lap = t;
        let stops: Vec<u32> = dtoh_vec(&*self.dev, self.d_stops, self.lanes.len())?;
        self.stops = stops;
        if self.lazy {
            self.take_claims()?;
        }
        if self.trace {
            eprintln!(
                "armada-cuda: launch {} of {} lanes, slice {}, {:.3} s, lane 0 stop {} retired {}",
                self.stats.launches,
                self.active.len(),
                slice,
                secs,
                stop_name(self.stops[0]),
                // SAFETY: the progress counters live as long as the batch.
                unsafe { std::ptr::read_volatile(self.progress_host) }
            );
        }
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        self.stats.lap(0, &mut lap);
        Ok(())
    }

    /// Downloads `words` words at word `first` of the records of `lanes`, back to back.
    fn download_records(
        &mut self,
        lanes: &[u32],
        first: usize,
        words: usize,
    ) -> Result<Vec<u64>, Error> {
        let mut out = vec![0u64; lanes.len() * words];
        self.download_records_into(lanes, first, words, &mut out)?;
        Ok(out)
    }

    /// As `download_records`, into `out` (`lanes.len() * words` words).
    fn download_records_into(
        &mut self,
        lanes: &[u32],
        first: usize,
        words: usize,
        out: &mut [u64],
    ) -> Result<(), Error> {
        if lanes.is_empty() {
            return Ok(());
        }
        let rec_bytes = lanes.len() * words * 8;
        let desc_bytes = lanes.len() * std::mem::size_of::<CopyDesc>();
        let stage = self.ensure_stage(rec_bytes + desc_bytes)?;
        let descs: Vec<CopyDesc> = lanes
            .iter()
            .enumerate()
            .map(|(k, &l)| CopyDesc {
                src: self.d_lanes + ((l as u64) * (S_WORDS as u64) + first as u64) * 8,
                dst: stage + (k * words * 8) as u64,
                words: words as u64,
            })
            .collect();
        self.run_copies(&descs, stage + rec_bytes as u64)?;
        dtoh_into(&*self.dev, stage, out)
    }

    /// The changed 64-byte blocks of `frames` since the host last had them (their shadows),
    /// handed to `each` piece by piece as 9-word entries (index in `frames` << 6 | block, 8
    /// words); the shadows are brought up to date. The pieces come down through `buf`, a
    /// page-locked buffer of at most CHANGES_PIECE bytes: a round can change hundreds of MB,
    /// and pinning that much host memory costs more than the copy.
    fn stream_changes(
        &mut self,
        frames: &[u32],
        buf: &mut Pinned,
        mut each: impl FnMut(&[u64]),
    ) -> Result<(), Error> {
        let mut blocks = 0usize;
        for (b, chunk) in frames.chunks(DIFF_BATCH).enumerate() {
            let n = chunk.len();
            let out_bytes = n * 64 * 72;
            let list_bytes = n * 8;
            let stage = self.ensure_stage(out_bytes + list_bytes + 8)?;
            let list: Vec<u64> = chunk.iter().map(|&f| self.frames.addr(f)).collect();
            let list_at = stage + out_bytes as u64;
            let count_at = list_at + list_bytes as u64;
            htod_slice(&*self.dev, list_at, &list)?;
            htod_slice(&*self.dev, count_at, &[0u64])?;
            self.dev
                .diff(list_at, n as u32, self.frames.shadow_off(), stage, count_at)?;
            let count = dtoh_vec::<u64>(&*self.dev, count_at, 1)?[0] as usize;
            if count > n * 64 {
                return Err(Error::Device(format!(
                    "the diff kernel reported {count} changed blocks of {n} frames"
                )));
            }
            blocks += count;
            let base = (b * DIFF_BATCH) as u64;
            let piece_words = CHANGES_PIECE / 72 * 9;
            buf.reserve(&self.dev, (9 * count).min(piece_words) * 8)?;
            let mut done = 0usize;
            while done < 9 * count {
                let len = (9 * count - done).min(piece_words);
                let piece = buf.words_mut(len);
                dtoh_into(&*self.dev, stage + 8 * done as u64, piece)?;
                if base != 0 {
                    piece.chunks_exact_mut(9).for_each(|e| e[0] += base << 6);
                }
                each(piece);
                done += len;
            }
        }
        self.stats.pages_down += frames.len() as u64;
        self.stats.diff_blocks += blocks as u64;
        Ok(())
    }

    /// One round: launch, then service every lane that stopped for something other than the
    /// end of its slice. Returns false once every lane has ended.
    pub fn round(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> Result<bool, Error> {
        if self.active.is_empty() {
            return Ok(false);
        }
        let slice = self.slice;
        self.launch(slice)?;
        let svc: Vec<u32> = self
            .active
            .iter()
            .copied()
            .filter(|&l| self.stops[l as usize] != STOP_SLICE)
            .collect();
        if !svc.is_empty() {
            self.service(&svc)?;
        }
        let reader = self.progress_reader();
        progress(Progress {
            lanes_done: self.lanes.len() - self.active.len(),
            lanes: self.lanes.len(),
            instructions: reader.retired(),
        });
        Ok(!self.active.is_empty())
    }

    /// Services the listed lanes (stopped in the last launch).
    pub fn service(&mut self, svc: &[u32]) -> Result<(), Error> {
        let t = Instant::now();
        let mut lap = t;
        const W: usize = DOWN_WORDS;
        let mut recs_buf = std::mem::take(&mut self.spare.recs);
        recs_buf.reserve(&self.dev, 8 * svc.len() * W)?;
        self.download_records_into(svc, 0, W, recs_buf.words_mut(svc.len() * W))?;
        let recs = recs_buf.words(svc.len() * W);
        if self.trace {
            for (k, &l) in svc.iter().enumerate().take(4) {
                let r = &recs[k * W..(k + 1) * W];
                eprintln!(
                    "armada-cuda: lane {l} stop {} pc {:#x} info {:#x} retired {} dirty {}",
                    stop_name(self.stops[l as usize]),
                    r[S_PC],
                    r[S_INFO],
                    r[S_RETIRED],
                    r[S_DIRTY_N]
                );
            }
        }
        // Vector registers, of the lanes that wrote any since their last sync.
        let vlanes: Vec<usize> = (0..svc.len())
            .filter(|&k| recs[k * W + S_VDIRTY] != 0)
            .collect();
        let vl: Vec<u32> = vlanes.iter().map(|&k| svc[k]).collect();
        let vwords = self.download_records(&vl, S_V, 64)?;
        let mut vpos: Vec<Option<usize>> = vec![None; svc.len()];
        for (j, &k) in vlanes.iter().enumerate() {
            vpos[k] = Some(j);
        }
        self.stats.lap(1, &mut lap);
        // Pages the lanes wrote since their last sync (only their changed blocks come back),
        // found in parallel: each stopped lane makes the pages the kernel claimed private in
        // its mirror (the reserve stayed within the cap, so this cannot fail but in an engine
        // bug), then lists the frame and mirror page of each page its record says it wrote.
        let mut at: Vec<Option<usize>> = vec![None; self.lanes.len()];
        for (k, &l) in svc.iter().enumerate() {
            at[l as usize] = Some(k);
        }
        let pt = &self.pt;
        let lists: Vec<Result<Vec<(u32, PagePtr)>, Error>> = self
            .lanes
            .par_iter_mut()
            .zip(at.into_par_iter())
            .enumerate()
            .filter_map(|(lane_id, (lh, k))| {
                let rec = &recs[k? * W..(k? + 1) * W];
                let mem = &mut lh.lane.program.mem;
                for vpn in lh.claimed.drain(..) {
                    if mem.gpu_make_private(vpn << PAGE_SHIFT).is_err() {
                        return Some(Err(Error::Device(format!(
                            "lane {lane_id}: claimed page {vpn:#x} cannot be made private"
                        ))));
                    }
                }
                let n = rec[S_DIRTY_N] as usize;
                let written: Vec<(u64, u32)> = if n <= DIRTY_CAP {
                    rec[S_DIRTY..S_DIRTY + n]
                        .iter()
                        .filter_map(|vpn| {
                            let e = lh.entries.get(vpn).filter(|e| e.private)?;
                            Some((*vpn, e.frame))
                        })
                        .collect()
                } else {
                    // more than the record lists: every writable page of its own
                    lh.entries
                        .iter()
                        .filter(|(_, e)| e.private && pt.val(e.slot) & PT_W != 0)
                        .map(|(&vpn, e)| (vpn, e.frame))
                        .collect()
                };
                let mut list = Vec::with_capacity(written.len());
                for (vpn, frame) in written {
                    let page = mem.gpu_page_mut(vpn);
                    list.push((
                        frame,
                        PagePtr(page.map_or(std::ptr::null_mut(), |p| p.as_mut_ptr())),
                    ));
                }
                Some(Ok(list))
            })
            .collect();
        let mut frames: Vec<u32> = Vec::new();
        let mut pages: Vec<PagePtr> = Vec::new();
        for list in lists {
            for (f, p) in list? {
                frames.push(f);
                pages.push(p);
            }
        }
        self.stats.lap(2, &mut lap);
        // Then the changed blocks, piece by piece as they come down, each to its page: every
        // (frame, block) comes once, so no two copies write the same bytes.
        let pages = &pages;
        let mut changes_buf = std::mem::take(&mut self.spare.changes);
        let streamed = self.stream_changes(&frames, &mut changes_buf, |piece| {
            piece.par_chunks(9 * 1024).for_each(|part| {
                for c in part.chunks_exact(9) {
                    let p = pages[(c[0] >> 6) as usize].0;
                    if p.is_null() {
                        continue;
                    }
                    let at = (c[0] & 63) as usize * 64;
                    for (i, word) in c[1..].iter().enumerate() {
                        // SAFETY: `p` is a private page of a stopped lane's mirror, found
                        // just above; no page of it changes until the service below, and
                        // the blocks are distinct.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                word.to_le_bytes().as_ptr(),
                                p.add(at + 8 * i),
                                8,
                            )
                        };
                    }
                }
            })
        });
        self.spare.changes = changes_buf;
        streamed?;
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        self.stats.lap(3, &mut lap);

        // Service in parallel, and apply what each lane wants of the table where it can (room
        // for most of it first: the rest waits for the serial part).
        self.ensure_pt_room(svc.len() as u64 * 16)?;
        let t = Instant::now();
        struct Work<'a> {
            k: usize,
            rec: &'a [u64],
            v: Option<&'a [u64]>,
        }
        let mut work: Vec<Option<Work>> = (0..self.lanes.len()).map(|_| None).collect();
        for (k, &l) in svc.iter().enumerate() {
            work[l as usize] = Some(Work {
                k,
                rec: &recs[k * W..(k + 1) * W],
                v: vpos[k].map(|j| &vwords[j * 64..(j + 1) * 64]),
            });
        }
        let images = &self.images;
        let stops = &self.stops;
        let lazy = self.lazy;
        let pt = &self.pt;
        let mut results: Vec<Option<Result<Serviced, Error>>> = self
            .lanes
            .par_iter_mut()
            .zip(work.into_par_iter())
            .map(|(lh, w)| {
                let w = w?;
                let lane_id = svc[w.k] as usize;
                let image = &images[lh.image];
                record_to_state(w.rec, w.v, &mut lh.lane.program.state);
                let v_before = lh.lane.program.state.v;
                let mut plan = service_lane(lh, lane_id, w.rec, stops[lane_id], image, lazy);
                let applied = apply_shared(pt, lh, lane_id, &mut plan);
                let mut out = Vec::new();
                if !plan.exited {
                    lh.epoch = lh.epoch.wrapping_add(1).max(1);
                    let st = &lh.lane.program.state;
                    let mut core = vec![0u64; S_WORDS];
                    state_to_record(st, lh.limit, lh.epoch, &mut core);
                    let v = core[S_V..].to_vec();
                    core.truncate(CORE_WORDS);
                    out.push((0, core));
                    if st.v != v_before {
                        out.push((S_V, v));
                    }
                }
                Some(Ok((lane_id, plan, applied, out)))
            })
            .collect();
        self.stats.service_s += t.elapsed().as_secs_f64();
        self.spare.recs = recs_buf;

        // Serial part: table, frames, results.
        let t_apply = Instant::now();
        let mut uploads: Vec<(u32, PageSrc)> = Vec::new();
        let mut records: Vec<(u32, usize, Vec<u64>)> = Vec::new();
        let mut ended = false;
        // (walked in place: a round's results are tens of MB, and collecting them again
        // showed up)
        if let Some(k) = results.iter().position(|r| matches!(r, Some(Err(_)))) {
            if let Some(Err(e)) = results.swap_remove(k) {
                return Err(e);
            }
        }
        let incoming: u64 = results
            .iter()
            .flatten()
            .flatten()
            .map(|r| r.1.wants.len() as u64)
            .sum();
        self.ensure_pt_room(incoming)?;
        let mut parts = [t_apply.elapsed().as_secs_f64(), 0.0, 0.0, 0.0];
        // stops by kind, counted here and named once (a map update per lane showed up)
        let mut stop_counts = [0u64; STOP_HOST as usize + 2];
        for (lane_id, plan, applied, rec) in results.into_iter().flatten().flatten() {
            if let Some(msg) = &plan.stuck {
                return Err(Error::Device(msg.clone()));
            }
            stop_counts[(self.stops[lane_id] as usize).min(STOP_HOST as usize + 1)] += 1;
            self.stats.syscalls += plan.syscalls;
            self.stats.misses += plan.misses;
            self.stats.host_steps += plan.host_steps;
            self.stats.host_instructions += plan.host_instructions;
            if let Some(op) = plan.host_op {
                *self.stats.host_ops.entry(op).or_insert(0) += 1;
            }
            let exited = plan.exited;
            let t_lane = Instant::now();
            self.apply_rest(lane_id, applied, plan, &mut uploads)?;
            if exited {
                let lh = &mut self.lanes[lane_id];
                lh.done = true;
                ended = true;
                parts[2] += t_lane.elapsed().as_secs_f64();
            } else {
                for (first, words) in rec {
                    records.push((lane_id as u32, first, words));
                }
                let t_res = Instant::now();
                parts[1] += (t_res - t_lane).as_secs_f64();
                if let Some(r) = self.top_up(lane_id)? {
                    records.push((lane_id as u32, S_RES_N, r));
                }
                parts[3] += t_res.elapsed().as_secs_f64();
            }
        }
        for (sum, p) in self.stats.apply_parts.iter_mut().zip(parts) {
            *sum += p;
        }
        for (code, &n) in stop_counts.iter().enumerate() {
            if n > 0 {
                *self.stats.stops.entry(stop_name(code as u32)).or_insert(0) += n;
            }
        }
        if ended {
            let lanes = &self.lanes;
            self.active.retain(|&l| !lanes[l as usize].done);
            self.active_dirty = true;
            self.done.store(
                self.lanes.len() - self.active.len(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        self.stats.apply_s += t_apply.elapsed().as_secs_f64();
        self.upload(&records, uploads)?;
        Ok(())
    }

    /// Runs until every lane has ended (continuous mode).
    pub fn run(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> Result<(), Error> {
        while self.round(progress)? {}
        Ok(())
    }

    /// Every lane's result (lanes that have not ended report the instruction limit).
    pub fn results(&mut self) -> Vec<LaneResult> {
        self.lanes
            .iter_mut()
            .enumerate()
            .map(|(i, lh)| {
                if lh.lane.exit.is_none() {
                    lh.lane.exit = Some(Exit::InstructionLimit);
                }
                LaneResult::from_lane(i, &mut lh.lane, lh.host_steps)
            })
            .collect()
    }

    /// The lanes themselves, once the batch is over (for callers that keep using them).
    pub fn into_lanes(mut self) -> Vec<(Lane, u64)> {
        std::mem::take(&mut self.lanes)
            .into_iter()
            .map(|l| (l.lane, l.host_steps))
            .collect()
    }

    /// The figures of this run as (name, value) pairs.
    pub fn stats_list(&self) -> Vec<(String, String)> {
        let s = &self.stats;
        let mut stops: Vec<_> = s.stops.iter().map(|(k, v)| format!("{k}={v}")).collect();
        stops.sort();
        vec![
            ("device".into(), self.dev.describe()),
            ("launches".into(), s.launches.to_string()),
            ("kernel s".into(), format!("{:.3}", s.kernel_s)),
            ("service s".into(), format!("{:.3}", s.service_s)),
            ("transfer s".into(), format!("{:.3}", s.transfer_s)),
            (
                "transfer parts s".into(),
                parts_line(&TRANSFER_PARTS, &s.transfer_parts),
            ),
            ("setup s".into(), format!("{:.3}", s.setup_s)),
            (
                "setup parts s".into(),
                parts_line(&SETUP_PARTS, &s.setup_parts),
            ),
            ("spawn s".into(), format!("{:.3}", s.spawn_s)),
            ("page-table apply s".into(), format!("{:.3}", s.apply_s)),
            (
                "apply parts s".into(),
                parts_line(&APPLY_PARTS, &s.apply_parts),
            ),
            (
                "upload parts s".into(),
                parts_line(&UPLOAD_PARTS, &s.upload_parts),
            ),
            ("stops".into(), stops.join(" ")),
            (
                "host-step instructions".into(),
                s.host_instructions.to_string(),
            ),
            ("host-step ops".into(), {
                let mut v: Vec<_> = s.host_ops.iter().collect();
                v.sort_by(|a, b| b.1.cmp(a.1));
                v.iter()
                    .take(12)
                    .map(|(k, n)| format!("{k}={n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
            (
                "pages synced down".into(),
                format!(
                    "{} ({} changed 64-byte blocks)",
                    s.pages_down, s.diff_blocks
                ),
            ),
            (
                "pages up".into(),
                format!(
                    "{} from the host, {} copied on the device; {} runs of host writes ({} KiB)",
                    s.pages_up,
                    s.pages_copied,
                    s.runs_up,
                    s.run_words_up / 128
                ),
            ),
            (
                "device frames peak".into(),
                format!(
                    "{} ({} MiB)",
                    s.frames_peak,
                    (s.frames_peak * PAGE_SIZE) >> 20
                ),
            ),
            (
                "guest frames peak".into(),
                format!(
                    "{} ({} MiB)",
                    s.guest_frames_peak,
                    (s.guest_frames_peak * PAGE_SIZE) >> 20
                ),
            ),
            (
                "lazy pages".into(),
                if self.lazy {
                    format!(
                        "{} copied in the kernel (reserve {RES_CAP} frames a lane)",
                        s.lazy_claims
                    )
                } else {
                    "off".into()
                },
            ),
            (
                "micro-ops".into(),
                format!(
                    "{} in {} regions of {} images",
                    s.micro_ops, s.regions, s.images
                ),
            ),
            (
                "page-table slots".into(),
                format!("{} ({} grows)", s.pt_slots, s.pt_grows),
            ),
            ("final slice".into(), self.slice.to_string()),
        ]
    }
}

/// Reads retired-instruction counts that the kernel publishes in host-mapped memory.
#[derive(Clone, Copy)]
pub struct ProgressReader {
    ptr: usize,
    lanes: usize,
}

impl ProgressReader {
    /// Instructions retired by all lanes, as of their last publication (each launch's end).
    pub fn retired(&self) -> u64 {
        let p = self.ptr as *const u64;
        (0..self.lanes)
            // SAFETY: p points at `lanes` u64 counters that live as long as the batch; the
            // kernel writes them whole, and volatile reads see the latest value.
            .map(|i| unsafe { std::ptr::read_volatile(p.add(i)) })
            .sum()
    }
}

/// Services one lane's stop; returns what to change on the device.
/// What `apply_shared` did for one lane, for the serial part of the round.
#[derive(Default)]
struct Applied {
    /// Page-table slots written.
    dirty: Vec<u64>,
    /// Frames the lane no longer uses.
    freed: Vec<u32>,
    uploads: Vec<(u32, PageSrc)>,
}

/// Applies the wants of lane `i` that need neither a new frame nor more table room than the
/// table has (most of them: entries on shared frames, lazy entries, bytes for frames the lane
/// owns), on the thread that serviced the lane; returns the rest (in `plan.wants`) for the
/// serial path. Wants name distinct pages, so the order they are applied in does not matter.
fn apply_shared(pt: &HostTable, l: &mut LaneHost, i: usize, plan: &mut Plan) -> Applied {
    let mut out = Applied::default();
    if plan.exited {
        return out;
    }
    let limit = pt.shared_limit();
    let mut rest = Vec::new();
    for (vpn, want) in plan.wants.drain(..) {
        let key = pt_key(i as u64, vpn);
        let cur = l.entries.get(&vpn).copied();
        let (frame, private, lazy, val, data) = match &want {
            Want::Nothing => {
                if let Some(e) = cur {
                    pt.remove_shared(e.slot, &mut out.dirty);
                    if e.private {
                        out.freed.push(e.frame);
                    }
                    l.entries.remove(&vpn);
                }
                continue;
            }
            Want::Shared { frame, perms } => (*frame, false, false, *frame as u64 | perms, None),
            Want::Lazy { frame, perms } => {
                (*frame, false, true, *frame as u64 | perms | PT_LAZY, None)
            }
            Want::Private { perms, .. } => match cur {
                Some(e) if e.private => (e.frame, true, false, e.frame as u64 | perms, Some(())),
                _ => {
                    rest.push((vpn, want));
                    continue;
                }
            },
        };
        match pt.set_shared(key, val, plan.force, limit, &mut out.dirty) {
            Ok(Some(slot)) => {
                if let Some(e) = cur {
                    if e.private && !private {
                        out.freed.push(e.frame);
                    }
                }
                l.entries.insert(
                    vpn,
                    Entry {
                        slot,
                        frame,
                        private,
                        lazy,
                    },
                );
                if data.is_some() {
                    if let Want::Private { data: Some(d), .. } = want {
                        out.uploads.push((frame, d));
                    }
                }
            }
            // no room (or a full table, which the serial path reports)
            _ => rest.push((vpn, want)),
        }
    }
    plan.wants = rest;
    out
}

fn service_lane(
    lh: &mut LaneHost,
    lane_id: usize,
    rec: &[u64],
    stop: u32,
    image: &Image,
    lazy: bool,
) -> Plan {
    let mut plan = Plan::default();
    let before = area_list(&lh.lane.program.mem);
    lh.lane.program.mem.gpu_track_writes_keep();
    let info = rec[S_INFO];
    let mut extra: Vec<(u64, Want)> = Vec::new();
    let exit: Option<Exit> = match stop {
        STOP_SVC => {
            plan.syscalls += 1;
            lh.lane.service(Stop::Syscall)
        }
        STOP_HLT => lh.lane.service(Stop::Halt(info as u16)),
        STOP_BRK => lh.lane.service(Stop::Breakpoint(info as u16)),
        STOP_UNDEFINED => lh.lane.service(Stop::Undefined(info as u32)),
        STOP_LIMIT => lh.lane.service(Stop::Budget),
        STOP_MISS_R | STOP_MISS_W => {
            plan.misses += 1;
            let write = stop == STOP_MISS_W;
            // The same miss again at the same point: the device did not see the last fix.
            let key = (info, lh.lane.program.state.retired, write);
            if lh.last_miss.0 == key {
                lh.last_miss.1 += 1;
                plan.force = true;
                if lh.last_miss.1 > 8 {
                    plan.stuck = Some(format!(
                        "lane {lane_id} keeps missing page {info:#x} at pc {:#x}",
                        lh.lane.program.state.pc
                    ));
                }
            } else {
                lh.last_miss = (key, 0);
            }
            let vpn = info >> PAGE_SHIFT;
            let owned = lh.entries.get(&vpn).is_some_and(|e| e.private);
            // A page copied on write from the image, or one never written: the device makes
            // the lane's frame from the image's frame or the zero frame, nothing to upload.
            let src = if write && !owned {
                match lh.lane.program.mem.gpu_page(vpn) {
                    None => Some(ZERO_FRAME),
                    Some((d, false)) if AddressSpace::gpu_is_zero_page(d) => Some(ZERO_FRAME),
                    Some((d, false)) => image
                        .pages
                        .get(&vpn)
                        .filter(|(i, _)| Arc::ptr_eq(i, d))
                        .map(|(_, f)| *f),
                    _ => None,
                }
            } else {
                None
            };
            match resolve_miss(&mut lh.lane.program.mem, info, write) {
                Ok(()) => {
                    let mem = &lh.lane.program.mem;
                    let w = want_for(mem, vpn, image, owned, !owned, !write, lazy && !write);
                    let w = match (src, w) {
                        (Some(f), Want::Private { perms, .. }) => Want::Private {
                            perms,
                            data: Some(PageSrc::Frame(f)),
                        },
                        (_, w) => w,
                    };
                    extra.push((vpn, w));
                    if lazy {
                        // the pages around it will likely be written next
                        let mut around = Vec::new();
                        lazy_around(lh, image, vpn, &mut around);
                        extra.extend(around);
                    }
                    None
                }
                // A real fault: the CPU engine runs the instruction, so the fault (and any
                // bytes a straddling store writes before it) is exactly the CPU engine's.
                Err(_) => host_step(lh, image, &mut plan),
            }
        }
        STOP_HOST => host_step(lh, image, &mut plan),
        _ => None,
    };
    let written_kept = lh.lane.program.mem.gpu_take_written_keep();
    if let Some(e) = exit {
        lh.lane.exit = Some(e);
        plan.exited = true;
        return plan;
    }
    let mem = &lh.lane.program.mem;
    let after = area_list(mem);
    let written: Vec<u64> = written_kept.iter().map(|p| p.0).collect();
    let mut vpns: Vec<u64> = Vec::new();
    if before != after {
        let ranges = changed_ranges(&before, &after);
        let inside = |v: u64| ranges.iter().any(|&(s, e)| v >= s && v < e);
        vpns.extend(lh.entries.keys().copied().filter(|&v| inside(v)));
        vpns.extend(image.pages.keys().copied().filter(|&v| inside(v)));
    }
    let mut wants: Vec<(u64, Want)> = Vec::new();
    vpns.sort_unstable();
    vpns.dedup();
    for v in vpns {
        if written.binary_search(&v).is_ok() || extra.iter().any(|x| x.0 == v) {
            continue;
        }
        let e = lh.entries.get(&v);
        let owned = e.is_some_and(|e| e.private);
        // a lazy entry stays lazy; an image page of a writable area becomes one
        let lazy = lazy && (e.is_some_and(|e| e.lazy) || image.pages.contains_key(&v));
        wants.push((v, want_for(mem, v, image, owned, false, false, lazy)));
    }
    for (v, kept) in written_kept {
        if extra.iter().any(|x| x.0 == v) {
            continue;
        }
        let owned = lh.entries.get(&v).is_some_and(|e| e.private);
        // A frame of the lane's own holds the page as it was before the host wrote it (the
        // kernel's changes came back before the service): only the changed blocks go up.
        let want = match (kept, owned) {
            (Some(kept), true) => match want_for(mem, v, image, true, false, false, false) {
                Want::Private { perms, data: None } => Want::Private {
                    perms,
                    data: mem
                        .gpu_page(v)
                        .and_then(|(now, _)| changed_runs(&kept, now)),
                },
                w => w,
            },
            _ => want_for(mem, v, image, owned, true, false, false),
        };
        wants.push((v, want));
    }
    wants.extend(extra);
    if lazy && before != after {
        // a writable area that is new or changed (a heap that grew, a fresh mapping)
        for &(start, end, perm) in &after {
            if perm.contains(Perm::W) && !before.contains(&(start, end, perm)) {
                let (lo, hi) = (start >> PAGE_SHIFT, end.div_ceil(PAGE_SIZE));
                lazy_area(lh, image, lo, hi, &mut wants);
            }
        }
    }
    plan.wants = wants;
    plan
}

/// Runs the instruction at the lane's PC on the CPU engine (or up to HOST_RUN_OUTSIDE of
/// them when the PC is outside the decoded code), then services whatever stopped it.
fn host_step(lh: &mut LaneHost, image: &Image, plan: &mut Plan) -> Option<Exit> {
    plan.host_steps += 1;
    let pc = lh.lane.program.state.pc;
    let inside = image.regions.iter().any(|&(s, e)| pc >= s && pc < e);
    let mut word = [0u8; 4];
    if inside && lh.lane.program.mem.fetch_bytes(pc, &mut word).is_ok() {
        plan.host_op = Some(ops::name(decode(u32::from_le_bytes(word), pc).op));
    }
    let st = &mut lh.lane.program.state;
    let left = lh.limit.saturating_sub(st.retired);
    let budget = left.min(if inside {
        image.host_run
    } else {
        HOST_RUN_OUTSIDE
    });
    let before_r = st.retired;
    let s = cpu::run(st, &mut lh.lane.program.mem, &mut lh.lane.code, budget);
    let done = lh.lane.program.state.retired - before_r;
    plan.host_instructions += done;
    lh.host_steps += done;
    if s == Stop::Budget && budget < left {
        None
    } else {
        if let Stop::Syscall = s {
            plan.syscalls += 1;
        }
        lh.lane.service(s)
    }
}

/// A page miss against the mirror: Ok when the access is allowed (the page is made private
/// for a write, as a guest store would), else the fault the CPU engine would raise.
fn resolve_miss(mem: &mut AddressSpace, addr: u64, write: bool) -> Result<(), Fault> {
    let access = if write { Access::Write } else { Access::Read };
    let Some((_, _, perm)) = mem.area_at(addr) else {
        return Err(Fault {
            addr,
            access,
            mapped: false,
        });
    };
    if write {
        mem.gpu_make_private(addr).map(|_| ())
    } else if perm.contains(Perm::R) {
        Ok(())
    } else {
        Err(Fault {
            addr,
            access,
            mapped: true,
        })
    }
}

impl Batch {
    /// Lane `i`'s registers as the device holds them now (debugging, lockstep checks).
    pub fn device_state(&mut self, i: usize) -> Result<CpuState, Error> {
        let recs = self.download_records(&[i as u32], 0, S_WORDS)?;
        let mut st = self.lanes[i].lane.program.state.clone();
        record_to_state(&recs, Some(&recs[S_V..]), &mut st);
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_runs_send_only_the_blocks_that_changed() {
        let before = [0u8; PAGE_SIZE as usize];
        let mut after = before;
        assert!(changed_runs(&before, &after).is_none());
        // blocks 1 and 2 (one run) and block 63
        after[64] = 1;
        after[191] = 2;
        after[4095] = 3;
        let Some(PageSrc::Runs(runs, words)) = changed_runs(&before, &after) else {
            panic!("expected runs");
        };
        assert_eq!(runs, [(8, 16), (504, 8)]);
        assert_eq!(words.len(), 24);
        assert_eq!(words[0], 1);
        assert_eq!(words[15], 2 << 56);
        assert_eq!(words[23], 3 << 56);
        // most of the page: the whole page
        let after = [9u8; PAGE_SIZE as usize];
        assert!(matches!(
            changed_runs(&before, &after),
            Some(PageSrc::Bytes(_))
        ));
    }

    #[test]
    fn host_table_takes_lanes_in_parallel() {
        // 64 lanes insert, update and remove their own keys from many threads at once, in a
        // table small enough that their probes cross; then every key is where `find` says and
        // the flush list covers every slot written.
        let t = HostTable::new(1 << 12);
        let lanes = 64u64;
        let dirty: Vec<Vec<u64>> = (0..lanes)
            .into_par_iter()
            .map(|lane| {
                let mut dirty = Vec::new();
                for vpn in 0..24u64 {
                    let slot = t
                        .set_shared(pt_key(lane, vpn), vpn, false, u64::MAX, &mut dirty)
                        .unwrap()
                        .unwrap();
                    if vpn % 3 == 0 {
                        t.remove_shared(slot, &mut dirty);
                    } else if vpn % 3 == 1 {
                        t.set_shared(pt_key(lane, vpn), vpn + 100, false, u64::MAX, &mut dirty)
                            .unwrap();
                    }
                }
                dirty
            })
            .collect();
        let written: FxHashSet<u64> = dirty.into_iter().flatten().collect();
        for lane in 0..lanes {
            for vpn in 0..24u64 {
                let found = t.find(pt_key(lane, vpn));
                match vpn % 3 {
                    0 => assert_eq!(found, None),
                    r => {
                        let s = found.expect("a key that was set");
                        assert!(written.contains(&s));
                        assert_eq!(t.key(s), pt_key(lane, vpn));
                        assert_eq!(t.val(s), if r == 1 { vpn + 100 } else { vpn });
                    }
                }
            }
        }
        // past the limit (used slots), an insertion is left to the serial path
        let t = HostTable::new(16);
        let mut dirty = Vec::new();
        for vpn in 0..4 {
            assert!(t
                .set_shared(pt_key(0, vpn), 1, false, 4, &mut dirty)
                .unwrap()
                .is_some());
        }
        let before = dirty.len();
        assert_eq!(
            t.set_shared(pt_key(0, 4), 1, false, 4, &mut dirty).unwrap(),
            None
        );
        assert_eq!((dirty.len(), t.used.load(Relaxed)), (before, 4));
    }
}
