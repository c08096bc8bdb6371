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
//!
//! The stages live in child modules, one job each, so that `Batch::round` and `Batch::service`
//! read as the sequence above:
//! - `setup`: a new batch (code decoded into micro-ops, the table sized, the first upload);
//! - `launch`: steps 1 to 3, the kernel launch and what comes down (records, written pages);
//! - `records`: a lane's registers as a device record and back, and its stop code;
//! - `service`: step 4, each stopped lane serviced on its own thread;
//! - `wants`: what a lane's pages should look like on the device (for the setup and service);
//! - `apply`: step 5's table and frame changes, on the service threads where it can, then
//!   serially;
//! - `pagetable`: the host's copy of the page table and the frame pool, and their device side;
//! - `upload`: step 5's transfer (records, pages, table writes) through the staging buffers;
//! - `feed`: lanes waiting for the slots of lanes that end (a batch of more lanes than it
//!   holds at once), set up in them between rounds;
//! - `bare`: bare-machine lanes (one flat region, no Linux process), beside the batch loop.

use crate::device::{DevPtr, Device, Queue};
use crate::layout::*;
use crate::Error;
use armada_core::batch::{LaneResult, Progress};
use armada_core::memory::{PageBuf, PAGE_SIZE};
use armada_core::runner::{Exit, Lane};
use armada_core::state::CpuState;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

mod apply;
mod bare;
mod blocks;
mod code;
mod coverage;
mod devio;
mod feed;
mod file_frames;
mod launch;
mod pagetable;
mod persist;
mod pool;
mod records;
mod service;
mod setup;
mod spaces;
mod upload;
mod wants;

pub use bare::{BareEnd, BareLane, DeviceBuffer};
pub use coverage::CoverageNews;
pub use devio::KernelIo;
pub use feed::feed_refusal;
use pagetable::{Frames, HostTable};
use records::{lane_stop, record_to_state};
use upload::Pinned;

/// What a batch's refusal of frames says where its share of the device ran out
/// (`Batch::share_device`), for telling it from the device's own.
pub(crate) const SHARE_REFUSED: &str = "this batch's share of the device's memory";

/// Figures of one batch run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub launches: u64,
    /// Lanes in all launches (the mean a launch shows how full the device was kept).
    pub lanes_launched: u64,
    pub kernel_s: f64,
    /// Kernel builds a launch waited for (`Device::prepare_run`: the wgpu engine compiles
    /// the interpreter for more frame buffers as a batch grows), apart from `kernel_s`.
    pub build_s: f64,
    pub service_s: f64,
    pub transfer_s: f64,
    /// `transfer_s` in parts (`TRANSFER_PARTS`), to see which one to work on.
    pub transfer_parts: [f64; 5],
    pub setup_s: f64,
    /// `setup_s` in parts (`SETUP_PARTS`).
    pub setup_parts: [f64; 7],
    pub apply_s: f64,
    /// `apply_s` in parts (`APPLY_PARTS`).
    pub apply_parts: [f64; 6],
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
    /// Persistent lanes (`persist`): restarts, lanes set up again at them, their time.
    pub restarts: u64,
    pub restarted_again: u64,
    pub restart_s: f64,
    /// `restart_s` in parts (`RESTART_PARTS`).
    pub restart_parts: [f64; 4],
    /// Lanes held at once where more wait for their slots (`feed`).
    pub slots: Option<usize>,
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
const SETUP_PARTS: [&str; 7] = [
    "lanes",
    "code",
    "allocations",
    "lane plans",
    "table",
    "records",
    "upload",
];

/// The parts of `Stats::apply_parts`.
const APPLY_PARTS: [&str; 6] = [
    "collect",
    "running lanes",
    "forks",
    "code",
    "ended lanes",
    "reserves",
];

/// The parts of `Stats::restart_parts`.
const RESTART_PARTS: [&str; 4] = ["host", "set up again", "table", "inputs"];

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
    /// `frame` is shared by spaces of the lane (a fork's child and its parent, copy on
    /// write: `spaces`), counted in `LaneHost::cow` and freed with its last entry.
    cow: bool,
}

impl Entry {
    /// An entry on a frame of the lane's own.
    fn own(slot: u64, frame: u32) -> Entry {
        Entry {
            slot,
            frame,
            private: true,
            lazy: false,
            cow: false,
        }
    }
}

struct LaneHost {
    /// Boxed: a lane is 10 KB, and tens of thousands of them moved by value into the batch
    /// were a serial copy of hundreds of MB at its setup.
    lane: Box<Lane>,
    /// Index of the running program's image in `Batch::images`.
    image: usize,
    /// The running process's space (`spaces`): its entries by page, its page-table key
    /// (`S_SPACE`) and its address space's identity; the lane's other processes' spaces.
    entries: FxHashMap<u64, Entry>,
    space: u64,
    space_mem: u64,
    spaces: FxHashMap<u64, spaces::Space>,
    /// Frames shared by the lane's spaces (`Entry::cow`): how many entries map each; and
    /// those whose last entry went where no frame pool was at hand (`apply_claims`).
    cow: FxHashMap<u32, u32>,
    cow_freed: Vec<u32>,
    epoch: u32,
    /// The batch's instruction limit (`u64::MAX`: none).
    limit: u64,
    /// The limit the lane's record has on the device (`LaneHost::schedule`): `limit`, or
    /// the next point at which the lane's scheduler must look (the end of its running
    /// task's turn, a timer), whichever comes first.
    dev_limit: u64,
    /// The record's `S_REGIONS` (first, count: the lane's run of the region table; 0 until
    /// its setup), and those regions' areas (for telling code the kernel may run from code
    /// only the host runs).
    regions: u64,
    code: Vec<(u64, u64)>,
    host_steps: u64,
    done: bool,
    /// The last page miss ((address, retired, write), repeats), to notice a lane that is stuck.
    last_miss: ((u64, u64, bool), u32),
    /// Frames the kernel may take for lazy pages (the record's S_RES list, same order).
    reserve: Vec<u32>,
    /// The host took frames from the end of `reserve` for pages of the lane's own
    /// (`apply::apply_shared`): the record's count (S_RES_N) must go up with the next
    /// service's record words, or the kernel would hand out a frame the lane holds.
    res_taken: bool,
    /// Times a write missed with the reserve empty: each doubles the reserve it is given,
    /// up to RES_CAP (`Batch::top_up`). Most lanes need few frames between stops; a
    /// Python lane from a snapshot copies hundreds of the snapshot's pages.
    res_grown: u32,
    /// Pages the kernel made private (claims) that the host mirror still shares: made private
    /// there before the lane's next changes are applied.
    claimed: Vec<u64>,
    /// Pages a lane that exited on the device claimed there and its mirror still shares:
    /// not copied on the host (its memory is not looked at again), but private to it, and
    /// counted in its result as the CPU engine counts them.
    ended_private: u64,
    /// Persistent lanes (`persist`): the host serviced the lane since its start, so its host
    /// state has moved on; the lane's end when the kernel ended it (exit status, instructions
    /// retired), and its coverage-news word (`layout::END_WORDS`); its frame reserve at the
    /// start.
    touched: bool,
    dev_exit: Option<(i32, u64)>,
    dev_news: Option<u64>,
    /// Claims taken from the log that the entries and the host's table do not show yet
    /// (`apply::apply_claims`; persistent lanes apply them only when the host looks).
    unapplied: Vec<apply::Claim>,
    start_reserve: Vec<u32>,
    /// The most frames the lane held when the host looked (`own_frames`; counted where
    /// lanes wait for slots, `feed`).
    peak_own: u64,
    /// The lane left the device for want of memory and waits on the host to come back
    /// (`feed`: `Batch::park`); its slot holds it meanwhile. And the bytes of pages the
    /// host holds for it then (counted against the process's budget for such lanes).
    parked: bool,
    parked_bytes: u64,
    /// The pages it had entries for when it left, entries again when it comes back
    /// (`setup_again`): its lazy and library entries were the service's answers to its
    /// misses, and without them each lane that came back stopped at its writes again.
    back: Vec<u64>,
}

impl LaneHost {
    /// `lane` in slot `slot` (its page-table key, see `spaces`) running image `image`, with
    /// nothing on the device yet; `epoch` its record's first.
    fn new(lane: Box<Lane>, image: usize, slot: usize, limit: u64, epoch: u32) -> LaneHost {
        LaneHost {
            space_mem: lane.program.mem.space_id(),
            lane,
            image,
            entries: FxHashMap::default(),
            space: slot as u64,
            spaces: FxHashMap::default(),
            cow: FxHashMap::default(),
            cow_freed: Vec::new(),
            epoch,
            limit,
            dev_limit: limit,
            regions: 0,
            code: Vec::new(),
            host_steps: 0,
            done: false,
            last_miss: ((0, 0, false), 0),
            res_grown: 0,
            reserve: Vec::new(),
            res_taken: false,
            claimed: Vec::new(),
            ended_private: 0,
            touched: false,
            dev_exit: None,
            dev_news: None,
            unapplied: Vec::new(),
            start_reserve: Vec::new(),
            peak_own: 0,
            parked: false,
            parked_bytes: 0,
            back: Vec::new(),
        }
    }

    /// The lane as `new` makes it, with nothing on the device, its record's epoch moved on
    /// (the kernel's cached translations of the old one go stale): for a lane that leaves
    /// the device with all its state on the host (`Batch::park`) once its frames and
    /// entries were given back. What it is on the host stays: its counts, its limit, its
    /// image and code regions (a library's regions stay in the region table).
    fn vacate(&mut self) {
        debug_assert!(self.entries.is_empty() && self.reserve.is_empty());
        self.spaces.clear();
        self.cow.clear();
        self.cow_freed.clear();
        self.epoch = self.epoch.wrapping_add(1).max(1);
        self.dev_limit = self.limit;
        self.last_miss = ((0, 0, false), 0);
        self.res_taken = false;
        self.claimed.clear();
        self.unapplied.clear();
        self.start_reserve.clear();
    }

    /// Frames the lane holds: its own pages and its reserve.
    fn own_frames(&self) -> u64 {
        (self.entries.values().filter(|e| e.private).count() + self.reserve.len()) as u64
    }

    /// Readies the lane to go (back) onto the device: its scheduler fires the timers that
    /// are due and switches tasks whose turn is over (`Lane::schedule`), and the record's
    /// limit becomes the next point it must look again, so the device stops the lane at
    /// the same instruction as the CPU engine's scheduler would. Returns false when the lane
    /// ended there.
    fn schedule(&mut self) -> bool {
        match self.lane.schedule() {
            None => false,
            Some(until) => {
                self.dev_limit = self.limit.min(self.lane.retired().saturating_add(until));
                true
            }
        }
    }

    /// Entry `e` leaves the lane's table: the frame it shared with other spaces, when it
    /// was that frame's last entry (to free).
    fn unshare(&mut self, e: &Entry) -> Option<u32> {
        if !e.cow {
            return None;
        }
        let n = self.cow.get_mut(&e.frame)?;
        *n -= 1;
        if *n > 0 {
            return None;
        }
        self.cow.remove(&e.frame);
        Some(e.frame)
    }

    /// The lane reached its record's limit before the batch's: a point its scheduler must
    /// see (see `schedule`), not the end of its run.
    fn at_turn_point(&self) -> bool {
        self.lane.retired() < self.limit
    }
}

struct Image {
    /// The program it is (None: the image without pages, for programs the batch did not
    /// start with).
    elf: Option<Arc<armada_core::elf::Image>>,
    /// vpn -> (bytes, frame, the entry's PT_R/PT_W/PT_LAZY), the image's shared pages.
    pages: FxHashMap<u64, (Arc<PageBuf>, u32, u64)>,
    /// The page-table lane number of its shared pages.
    key_lane: u64,
    /// Decoded code regions (start, end), and their place in the device's region table.
    regions: Vec<(u64, u64)>,
    first_region: u32,
    /// Instructions a host step runs when the kernel left an instruction inside the decoded
    /// code to the host (`Device::host_run`).
    host_run: u64,
}

/// A batch of lanes on one device.
pub struct Batch {
    dev: Arc<dyn Device>,
    lanes: Vec<LaneHost>,
    images: Vec<Image>,
    /// The image without pages (the last of `images`).
    empty_image: usize,
    /// Keys for the address spaces lanes make (`spaces`).
    space_keys: spaces::SpaceKeys,
    pt: HostTable,
    frames: Frames,
    /// One frame for each page buffer a cache holds (libraries' pages), for every lane.
    files: file_frames::FileFrames,
    params: Params,
    d_ops: DevPtr,
    d_regions: DevPtr,
    /// The micro-ops and region table, on the host (`code`).
    code: code::Code,
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
    /// Each lane's retired count at the last launch (`ARMADA_CUDA_TRACE`).
    trace_last: Vec<u64>,
    /// Lanes that have ended, for pollers on other threads.
    pub(crate) done: Arc<std::sync::atomic::AtomicUsize>,
    spare: Spare,
    /// Lazy pages are on (the device supports them and ARMADA_GPU_LAZY is not 0).
    lazy: bool,
    /// `Frames::refusals` when lanes last left the device for want of memory (`shed`).
    refusals_seen: u64,
    /// The lanes' coverage maps (`Params::cov`; 0: no coverage), see `coverage`.
    d_cov: DevPtr,
    /// The maps were added to the lanes' own (`collect_coverage`).
    cov_collected: bool,
    /// The kernel answers some syscalls itself (see `devio`): the lanes' blocks and inputs.
    devio: bool,
    /// Frames a lane's lazy-page reserve is topped up to (at most RES_CAP): 8, and 16 in a
    /// `devio` batch, where a short run that writes a few more pages (stack, input buffer,
    /// stdio) then ends without stopping for a refill.
    res_target: usize,
    d_sysd: DevPtr,
    /// The output list the kernel keeps answered writes in (`Params::out`; 0: they are
    /// dropped), and its capacity in words, see `devio`.
    d_out: DevPtr,
    out_words: u64,
    d_inputs: DevPtr,
    /// Bytes at `d_inputs`.
    inputs_bytes: usize,
    /// Persistent lanes (`persist`): every lane's record at its start (0: not persistent),
    /// and the kernel's side of taking lanes back there (`Params::undo` ..).
    d_start: DevPtr,
    d_persist: persist::DevicePersist,
    /// The device queue the batch's run kernel goes to (`Device::new_queue`), so that
    /// batches sharing the device overlap.
    queue: Queue,
    /// Device buffers `coverage_news` keeps from call to call: freeing device memory waits
    /// for the whole device, another batch's kernel included.
    news: coverage::NewsBuffers,
    /// Free frames lanes take on the device once their reserve is empty (`pool`).
    pool: pool::FramePool,
    /// The lanes' second-level translation caches (`Params::tlb2`; 0: none), the last
    /// launch's generation, and the generations before the caches start again from zeros
    /// (`TLB2_GEN_MAX`; fewer with `ARMADA_GPU_TLB2_GENS`, for tests).
    d_tlb2: DevPtr,
    gen: u32,
    gens: u32,
    /// Lanes waiting for the slots of lanes that end (`feed`; None: every lane at once).
    feed: Option<feed::Feed>,
    /// The most frames each lane held (its own pages and its reserve), counted as it gave
    /// them up.
    lane_peaks: feed::Peaks,
    /// Translated blocks (`blocks`).
    blocks: blocks::Blocks,
}

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
            self.pool.d,
            self.d_tlb2,
            self.frames.d_chunks,
            self.d_cov,
            self.d_sysd,
            self.d_out,
            self.d_inputs,
            self.d_start,
            self.news.virgin,
            self.news.list,
            self.news.out,
            self.d_persist.undo,
            self.d_persist.restart,
            self.d_persist.newio,
            self.d_persist.ends,
            self.d_persist.virgin,
            self.d_persist.covlist,
            self.feed.as_ref().map_or(0, |f| f.d_inputs),
        ] {
            if p != 0 {
                d.free(p);
            }
        }
        d.drop_queue(self.queue);
        for &c in &self.frames.chunks {
            d.free(c);
        }
        if !self.progress_host.is_null() {
            d.free_mapped(self.progress_host);
        }
    }
}

impl Batch {
    pub(crate) fn lane_hosts_mut(&mut self) -> impl Iterator<Item = (&mut Lane, u64)> {
        self.lanes.iter_mut().map(|l| (&mut *l.lane, l.host_steps))
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
            ended: self.feed.as_ref().map(|f| f.retired.clone()),
        }
    }

    /// Launches the kernel over the active lanes and waits; returns each active lane's stop.
    pub fn execute(&mut self, slice: u64) -> Result<Vec<(usize, LaneStop)>, Error> {
        self.launch(slice)?;
        let t = Instant::now();
        // Records of stopped lanes, for the stop details.
        let stopped = self.stopped_lanes();
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

    /// Lane `i`'s registers as the device holds them now (debugging, lockstep checks).
    pub fn device_state(&mut self, i: usize) -> Result<CpuState, Error> {
        let recs = self.download_records(&[i as u32], 0, S_WORDS)?;
        let mut st = self.lanes[i].lane.program.state.clone();
        record_to_state(&recs, Some(&recs[S_V..]), &mut st);
        Ok(st)
    }

    /// One round: launch, then service every lane that stopped for something other than the
    /// end of its slice. Returns false once every lane has ended.
    pub fn round(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> Result<bool, Error> {
        if self.active.is_empty() {
            return Ok(false);
        }
        let slice = self.slice;
        self.launch(slice)?;
        let mut svc = self.stopped_lanes();
        if self.d_start != 0 {
            svc = self.end_on_device(svc)?;
        }
        if !svc.is_empty() {
            self.service(&svc)?;
            self.refill()?;
        }
        let reader = self.progress_reader();
        let (lanes_done, lanes) = self.lanes_done_of();
        progress(Progress {
            lanes_done,
            lanes,
            instructions: reader.retired(),
        });
        Ok(!self.active.is_empty())
    }

    /// Services the listed lanes (stopped in the last launch): their state comes down
    /// (`launch`), the stops are serviced in parallel (`service`), the table and frames take
    /// what that produced (`apply`), and what changed goes up (`upload`).
    pub fn service(&mut self, svc: &[u32]) -> Result<(), Error> {
        let down = self.download_stopped(svc)?;
        let serviced = self.service_lanes(svc, down)?;
        let (records, mut uploads) = self
            .apply_serviced(serviced)
            .map_err(|e| self.lanes_that_fit(e))?;
        self.shed(svc, &mut uploads)?;
        // code decoded for lanes that mapped libraries, before their records name it
        self.code
            .upload(&*self.dev, &mut self.d_ops, &mut self.d_regions)?;
        self.params.ops = self.d_ops;
        self.params.regions = self.d_regions;
        self.params.nregions = self.code.nregions();
        self.stats.regions = self.params.nregions as usize;
        self.stats.micro_ops = self.code.ops.len() / 2;
        self.upload(&records, uploads)?;
        Ok(())
    }

    /// `e`, where the device ran out of frames while the lanes ran, with how many lanes would
    /// fit at once if each needed what the largest lane held then (its own pages and its
    /// reserve): a lane's need is known only once it ends, so this is an upper bound (lanes
    /// that grow further fit fewer), which the message says.
    fn lanes_that_fit(&self, e: Error) -> Error {
        let Error::OutOfMemory(m, fit) = e else {
            return e;
        };
        if !self.frames.exhausted {
            return Error::OutOfMemory(m, fit);
        }
        let own = |l: &LaneHost| l.own_frames();
        // (lanes that ended in a batch that feeds its slots count too)
        let largest = self
            .lanes
            .iter()
            .map(own)
            .max()
            .unwrap_or(0)
            .max(self.lane_peaks.max);
        let room = self.frames.live.saturating_sub(self.frames.shared);
        if largest == 0 {
            return Error::OutOfMemory(m, fit);
        }
        let most = (room / largest) as usize;
        Error::OutOfMemory(
            format!(
                "{m}; the largest lane held {} KiB then, and lanes may need more: at most about \
                 {most} lanes of this program fit at once on this device",
                (largest * PAGE_SIZE) >> 10,
            ),
            Some(most),
        )
    }

    /// Runs until every lane has ended (continuous mode).
    pub fn run(&mut self, progress: &(dyn Fn(Progress) + Sync)) -> Result<(), Error> {
        while self.round(progress)? {}
        Ok(())
    }

    /// Every lane's result (lanes that have not ended report the instruction limit).
    pub fn results(&mut self) -> Vec<LaneResult> {
        if let Some(all) = self.feed_results() {
            return all;
        }
        self.lanes
            .iter_mut()
            .enumerate()
            .map(|(i, lh)| {
                if lh.lane.exit.is_none() {
                    lh.lane.exit = Some(Exit::InstructionLimit);
                }
                let mut r = LaneResult::from_lane(i, &mut lh.lane, lh.host_steps);
                r.private_bytes += lh.ended_private * PAGE_SIZE;
                r
            })
            .collect()
    }

    /// The lanes themselves, once the batch is over (for callers that keep using them).
    pub fn into_lanes(mut self) -> Vec<(Lane, u64)> {
        std::mem::take(&mut self.lanes)
            .into_iter()
            .map(|l| (*l.lane, l.host_steps))
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
            (
                "lanes a launch".into(),
                (s.lanes_launched / s.launches.max(1)).to_string(),
            ),
            ("kernel s".into(), format!("{:.3}", s.kernel_s)),
            ("kernel builds s".into(), format!("{:.3}", s.build_s)),
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
                "shared frames".into(),
                format!(
                    "{} ({} MiB), one for every lane that maps the page: the images' pages and {} pages of libraries and exec'd programs",
                    self.frames.shared,
                    (self.frames.shared * PAGE_SIZE) >> 20,
                    self.files.len()
                ),
            ),
            (
                "lazy pages".into(),
                if self.lazy {
                    let pool = if self.pool.d == 0 {
                        "no frame pool".to_string()
                    } else {
                        format!(
                            "{} frames from the batch's pool, which ran out in {} launches \
                             and was filled to {} frames at most, {} at the end",
                            self.pool.frames_taken,
                            self.pool.emptied,
                            self.pool.largest,
                            self.pool.holds()
                        )
                    };
                    format!(
                        "{} copied in the kernel (reserve {} frames a lane, up to {RES_CAP} for lanes that ran out; {pool})",
                        s.lazy_claims, self.res_target
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
            ("translated blocks".into(), self.blocks.describe()),
            (
                "page-table slots".into(),
                format!("{} ({} grows)", s.pt_slots, s.pt_grows),
            ),
            ("final slice".into(), self.slice.to_string()),
            (
                "slots".into(),
                match (&self.feed, s.slots) {
                    (Some(f), Some(n)) if f.total > n => format!(
                        "{n} lanes at once of {}, each slot taken by the next lane as one ended \
                         ({} lanes set up in a slot another had held; rounds that left a slot \
                         empty for want of memory: {}; the largest lane held {} KiB)",
                        f.total,
                        f.fed,
                        f.waits,
                        (self.lane_peaks.max * PAGE_SIZE) >> 10
                    ),
                    _ => "every lane at once".into(),
                },
            ),
            (
                "lanes off the device".into(),
                match &self.feed {
                    Some(f) if f.parks > 0 => format!(
                        "{} times a lane left the device for want of memory, its state kept \
                         on the host, and came back as lanes ended",
                        f.parks
                    ),
                    _ => "none".into(),
                },
            ),
            (
                "restarts".into(),
                if self.d_start != 0 {
                    format!(
                        "{} in {:.3} s ({} lanes set up again): {}",
                        s.restarts,
                        s.restart_s,
                        s.restarted_again,
                        parts_line(&RESTART_PARTS, &s.restart_parts)
                    )
                } else {
                    "off".into()
                },
            ),
        ]
    }
}

/// Reads retired-instruction counts that the kernel publishes in host-mapped memory.
#[derive(Clone)]
pub struct ProgressReader {
    ptr: usize,
    lanes: usize,
    /// What lanes that left their slot retired (`feed`).
    ended: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl ProgressReader {
    /// Instructions retired by all lanes, as of their last publication (each launch's end).
    pub fn retired(&self) -> u64 {
        let p = self.ptr as *const u64;
        (0..self.lanes)
            // SAFETY: p points at `lanes` u64 counters that live as long as the batch; the
            // kernel writes them whole, and volatile reads see the latest value.
            .map(|i| unsafe { std::ptr::read_volatile(p.add(i)) })
            .sum::<u64>()
            + self
                .ended
                .as_ref()
                .map_or(0, |e| e.load(std::sync::atomic::Ordering::Relaxed))
    }
}
