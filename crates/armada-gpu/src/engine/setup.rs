//! Setup of a new batch (before the first round): each program image's code decoded into
//! micro-ops (`code`) and its pages put in shared frames, the page table sized for the
//! lanes, every lane's pages planned (`wants`) and applied (`apply`), and the records and pages
//! uploaded (`upload`) in pieces. The launch parameters come from the environment here.

use super::apply::{apply_shared, Applied};
use super::code::{code_areas, Code};
use super::devio::KernelIo;
use super::pagetable::{Frames, HostTable, MAX_CHUNKS, ZERO_FRAME};
use super::pool::FramePool;
use super::records::{state_to_record, Records};
use super::service::Plan;
use super::upload::PageSrc;
use super::wants::{lazy_around, lazy_range, want_for, Want, LAZY_AREA_PAGES, LAZY_AROUND};
use super::{Batch, Image, LaneHost, Spare, Stats};
use crate::device::Device;
use crate::layout::*;
use crate::Error;
use armada_core::memory::{AddressSpace, PageBuf, Perm, PAGE_SHIFT, PAGE_SIZE};
use armada_core::runner::Lane;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use std::time::Instant;

/// Instructions per lane per launch unless ARMADA_CUDA_SLICE says otherwise: in practice no
/// limit, launches end by time (see `Params::max_ns`).
pub(super) const DEFAULT_SLICE: u64 = 1 << 40;

/// A duration from the environment in milliseconds, as nanoseconds.
pub(super) fn env_ms(name: &str, default: f64) -> u64 {
    let ms = std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(default);
    (ms * 1e6) as u64
}

/// Records or pages in one upload of the setup (64 MB of pages).
const SETUP_PIECE: usize = 16384;

/// The page states a lane starts with on the device: its private pages (its stack), and
/// with lazy pages, lazy entries where it will likely write first. `all`: every page it has
/// that its image does not serve, shared ones too (a space a fork or an exec made: its
/// pages are its parent's, or an image the batch did not start with).
pub(super) fn start_wants(l: &LaneHost, image: &Image, lazy: bool, all: bool) -> Vec<(u64, Want)> {
    let mem = &l.lane.program.mem;
    let vpns: Vec<u64> = mem
        .gpu_pages()
        .filter(|p| p.2 || all)
        .map(|p| p.0)
        .collect();
    let mut wants: Vec<(u64, Want)> = vpns
        .iter()
        .map(|&v| (v, want_for(mem, v, image, false, true, false, false)))
        .collect();
    if lazy {
        let mut wanted: FxHashSet<u64> = vpns.iter().copied().collect();
        // pages the lane will likely write: its small writable areas (data, bss) and the
        // pages around its first private ones (the stack's top; the stack's far end stays
        // unmapped)
        for (start, end, perm) in mem.areas() {
            let (lo, hi) = (start >> PAGE_SHIFT, end.div_ceil(PAGE_SIZE));
            if perm.contains(Perm::W) && hi - lo <= LAZY_AREA_PAGES {
                lazy_range(l, image, lo, hi, &mut wants, &mut wanted);
            }
        }
        for &v in &vpns {
            lazy_around(l, image, v, &mut wants, &mut wanted);
        }
        // and the pages around the stack pointer: a lane restored from a snapshot owns no
        // page yet (they are the snapshot's, shared), and its next writes go to the frames
        // there
        let sp = l.lane.program.state.x[31] >> PAGE_SHIFT;
        lazy_range(
            l,
            image,
            sp.saturating_sub(LAZY_AROUND),
            sp + LAZY_AROUND + 1,
            &mut wants,
            &mut wanted,
        );
    }
    wants
}

/// A lane's whole record as it starts: registers, limit, the syscalls the kernel may answer,
/// its image's code regions, and its frame reserve (`reserve`: words from S_POOL_LEFT, when it
/// has one).
pub(super) fn start_record(
    l: &mut LaneHost,
    img: &Image,
    devio: bool,
    reserve: Option<Vec<u64>>,
) -> Vec<u64> {
    let mut rec = vec![0u64; S_WORDS];
    // (a lane restored from a snapshot of several threads may switch, or end, here first;
    // one that ended stops at once with its limit and is serviced as ended)
    if !l.schedule() {
        l.dev_limit = l.lane.retired();
    }
    state_to_record(&l.lane.program.state, l.dev_limit, l.epoch, &mut rec);
    super::devio::sys_words(&l.lane, devio, &mut rec);
    if l.regions == 0 {
        // (a lane starting, or set up again from its start: the image's regions)
        l.regions = img.first_region as u64 | (img.regions.len() as u64) << 32;
        l.code.clone_from(&img.regions);
    }
    rec[S_REGIONS] = l.regions;
    rec[S_IMAGE] = img.key_lane;
    rec[S_SPACE] = l.space;
    if let Some(r) = reserve {
        rec[S_POOL_LEFT..S_POOL_LEFT + r.len()].copy_from_slice(&r);
    }
    rec
}

impl Batch {
    /// Prepares `lanes` (all of one program) on the device: decodes the program's code,
    /// uploads the shared image pages and every lane's registers and private pages.
    pub fn new(
        dev: Arc<dyn Device>,
        lanes: Vec<Box<Lane>>,
        max_instructions: Option<u64>,
        slice: Option<u64>,
        device_io: KernelIo,
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
        // (and the image without pages, for programs an exec starts)
        if image_of.len() as u64 + 1 + lanes.len() as u64 >= PT_IMAGE_LANE {
            return Err(Error::Device("too many lanes".into()));
        }
        let limit = max_instructions.unwrap_or(u64::MAX);
        let mut lanes: Vec<LaneHost> = lanes
            .into_par_iter()
            .zip(lane_image)
            .enumerate()
            .map(|(i, (lane, image))| LaneHost::new(lane, image, i, limit, 1))
            .collect();
        let n = lanes.len();
        let dev_ref: &dyn Device = &*dev;
        let t_code = Instant::now();

        // Code: every executable (and not writable) area of each image, decoded once.
        // (compare + B.cond pairs in one dispatch where the kernel has them;
        // ARMADA_GPU_FUSED=0 leaves them apart, to measure what they give)
        let mut code = Code::new(
            dev.fused_pairs() && std::env::var("ARMADA_GPU_FUSED").map_or(true, |v| v != "0"),
        );
        let mut images: Vec<Image> = Vec::new();
        let mut image_pages: Vec<Vec<(u64, Arc<PageBuf>, Perm)>> = Vec::new();
        for (k, elf) in image_of.iter().enumerate() {
            let first = lanes.iter().position(|l| l.image == k).unwrap();
            let mem = &mut lanes[first].lane.program.mem;
            let set: Vec<_> = code_areas(mem)
                .into_iter()
                .filter_map(|(start, end)| code.image_region(mem, start, end))
                .collect();
            let img = Image {
                elf: Some(elf.clone()),
                pages: FxHashMap::default(),
                key_lane: PT_IMAGE_LANE - k as u64,
                regions: set.iter().map(|r| (r.0, r.1)).collect(),
                first_region: code.set(&set),
                host_run: dev.host_run().max(1),
            };
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
        let empty_image = images.len();
        images.push(Image {
            elf: None,
            pages: FxHashMap::default(),
            key_lane: PT_IMAGE_LANE - empty_image as u64,
            regions: Vec::new(),
            first_region: 0,
            host_run: dev.host_run().max(1),
        });
        image_pages.push(Vec::new());
        let space_keys =
            super::spaces::SpaceKeys::new(n as u64, PT_IMAGE_LANE - empty_image as u64);
        let (mut d_ops, mut d_regions) = (0, 0);
        code.upload(dev_ref, &mut d_ops, &mut d_regions)?;
        let nregions = code.nregions();
        let micro_ops = code.ops.len() / 2;

        let t_alloc = Instant::now();
        // The page table: sized for the lanes' expected pages, with room to spare.
        let total_image_pages: u64 = image_pages.iter().map(|p| p.len() as u64).sum();
        // (lazy pages give a lane entries for its data, bss and stack top from the start)
        let per_lane = if dev.lazy_pages() { 96 } else { 32 };
        let want_slots = 2 * (total_image_pages + per_lane * n as u64);
        // (ARMADA_GPU_PT_SLOTS: a smaller table to start from, so tests see it grow)
        let slots = std::env::var("ARMADA_GPU_PT_SLOTS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(want_slots, |s| s.min(want_slots))
            .next_power_of_two()
            .clamp(1 << 12, 1 << 27);
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
            lanes: n as u64,
            shared: 0,
            exhausted: false,
            refusals: 0,
            pool: Vec::new(),
            pool_taken: 0,
            max_chunks: None,
        };
        let zero = frames.alloc(dev_ref)?;
        debug_assert_eq!(zero, ZERO_FRAME);

        // Shared image pages: one frame each, never written in place. The writable ones are
        // copy-on-write where the kernel copies them itself (`Device::image_cow`): a lane
        // restored from a snapshot then writes the snapshot's heap without an entry of its
        // own for each page, and without stopping. Elsewhere they are read-only, and a write
        // is a miss.
        let lazy = dev.lazy_pages() && std::env::var("ARMADA_GPU_LAZY").map_or(true, |v| v != "0");
        let cow = lazy && dev.image_cow();
        let mut uploads: Vec<(u32, PageSrc)> = Vec::new();
        for (img, pages) in images.iter_mut().zip(image_pages) {
            for (vpn, data, perm) in pages {
                let f = frames.alloc(dev_ref)?;
                let perms = match (perm.contains(Perm::R), perm.contains(Perm::W)) {
                    (true, true) if cow => PT_R | PT_W | PT_LAZY,
                    (true, _) => PT_R,
                    _ => 0,
                };
                pt.set(pt_key(img.key_lane, vpn), f as u64 | perms, false)?;
                uploads.push((f, PageSrc::Bytes(Box::new(**data))));
                img.pages.insert(vpn, (data, f, perms));
            }
        }
        frames.shared = frames.live;

        let d_lanes = dev.alloc(n * S_WORDS * 8)?;
        let d_stops = dev.alloc(n * 4)?;
        let d_active = dev.alloc(n * 4)?;
        let (progress_host, d_progress) = dev.alloc_mapped(n * 8)?;
        // the scheduling words, then the claim log (count, then two words a claim; every
        // lane's whole reserve and the pool fit, so it cannot overflow)
        let pool =
            lazy && dev.frame_pool() && std::env::var("ARMADA_GPU_POOL").map_or(true, |v| v != "0");
        let claim_words = if lazy {
            1 + 2 * FramePool::claims_room(n, pool)
        } else {
            0
        };
        let d_sched = dev.alloc(16 + 8 * claim_words)?;
        // coverage maps, when any lane records coverage (zeroed by alloc)
        let d_cov = if lanes.iter().any(|l| l.lane.coverage().is_some()) {
            dev.prepare_coverage()?;
            dev.alloc(n * COV_MAP_BYTES).map_err(|e| {
                Error::Device(format!(
                    "edge coverage needs a 64 KiB map a lane on the device ({} MiB for {n} lanes), and that did not fit ({e}): run fewer lanes at once",
                    (n * COV_MAP_BYTES) >> 20
                ))
            })?
        } else {
            0
        };

        let mut batch = Batch {
            dev: dev.clone(),
            lanes: Vec::new(),
            images,
            empty_image,
            space_keys,
            pt,
            frames,
            files: super::file_frames::FileFrames::new(),
            params: Params::default(),
            d_ops,
            d_regions,
            code,
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
            trace_last: Vec::new(),
            done: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            spare: Spare::default(),
            lazy,
            refusals_seen: 0,
            d_cov,
            cov_collected: false,
            devio: device_io != KernelIo::Off && dev.device_syscalls(),
            res_target: if device_io != KernelIo::Off && dev.device_syscalls() {
                RES_CAP / 4
            } else {
                8
            },
            d_sysd: 0,
            d_out: 0,
            out_words: 0,
            d_inputs: 0,
            inputs_bytes: 0,
            d_start: 0,
            d_persist: Default::default(),
            queue: 0,
            news: Default::default(),
            pool: Default::default(),
            d_tlb2: 0,
            gen: 0,
            gens: std::env::var("ARMADA_GPU_TLB2_GENS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map_or(TLB2_GEN_MAX, |g: u32| g.clamp(1, TLB2_GEN_MAX)),
            feed: None,
            lane_peaks: Default::default(),
            blocks: super::blocks::Blocks::new(dev.translates()),
        };
        batch.queue = dev.new_queue()?;
        batch.stats.regions = nregions as usize;
        batch.stats.images = batch.empty_image;
        batch.stats.micro_ops = micro_ops;
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
            cov: d_cov,
            sysd: 0,
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
            ..Default::default()
        };
        // the lanes' second-level translation caches (a KiB a lane, zeroed: no entry); a cache,
        // so a device without room for it runs without
        if dev.second_level_tlb() && std::env::var("ARMADA_GPU_TLB2").map_or(true, |v| v != "0") {
            if let Ok(d) = dev.alloc(n * TLB2_ENTRIES * 16) {
                batch.d_tlb2 = d;
                batch.params.tlb2 = d;
            }
        }

        // Every lane's private pages (its stack) and registers.
        let images_ref = &batch.images;
        let pt = &batch.pt;
        let t_plans = Instant::now();
        let plans: Vec<(Plan, Applied)> = lanes
            .par_iter_mut()
            .enumerate()
            .map(|(_, l)| {
                let mut plan = Plan {
                    wants: start_wants(l, &images_ref[l.image], lazy, false),
                    ..Default::default()
                };
                // the table was sized for this: most entries go in here, in parallel
                let applied = apply_shared(pt, &batch.files, l, &mut plan, false);
                (plan, applied)
            })
            .collect();
        if batch.devio {
            batch.upload_sys_blocks(&lanes)?;
            if device_io == KernelIo::Keep {
                batch.alloc_output(Batch::output_words(n))?;
            }
        }
        batch.lanes = lanes;
        if pool {
            batch.make_pool()?;
        }
        let incoming: u64 = plans.iter().map(|p| p.0.wants.len() as u64).sum();
        batch.ensure_pt_room(incoming)?;
        // the table and frames serially, then the records in parallel
        let t_table = Instant::now();
        let mut reserves: Vec<Option<Vec<u64>>> = Vec::with_capacity(n);
        for (i, (plan, applied)) in plans.into_iter().enumerate() {
            batch
                .apply_rest(i, applied, plan, &mut uploads)
                .map_err(|e| match e {
                    // the lanes before this one fit with their starting pages
                    Error::OutOfMemory(m, _) if i > 0 => Error::OutOfMemory(
                        format!(
                            "{m}; the starting pages of {i} of the {n} lanes fit: run at most \
                             {i} lanes at once on this device (fewer where they grow)"
                        ),
                        Some(i / 2),
                    ),
                    e => e,
                })?;
            reserves.push(batch.top_up(i)?);
        }
        let t_records = Instant::now();
        let images = &batch.images;
        let devio = batch.devio;
        let records: Vec<(u32, usize, Vec<u64>)> = batch
            .lanes
            .par_iter_mut()
            .zip(reserves.into_par_iter())
            .enumerate()
            .map(|(i, (l, reserve))| {
                (
                    i as u32,
                    0,
                    start_record(l, &images[l.image], devio, reserve),
                )
            })
            .collect();
        let t_up = Instant::now();
        // in pieces that fit the page-locked staging buffer (a fresh buffer of every lane's
        // stack, hundreds of MB, would cost its page faults and the driver's own staging)
        for part in records.chunks(SETUP_PIECE) {
            let part: Records = part.iter().map(|(l, f, w)| (*l, *f, &w[..])).collect();
            batch.upload(&part, Vec::new())?;
        }
        while !uploads.is_empty() {
            let part = uploads.split_off(uploads.len().saturating_sub(SETUP_PIECE));
            batch.upload(&Records::default(), part)?;
        }
        batch.stats.setup_parts = [
            (t_code - t0).as_secs_f64(),
            (t_alloc - t_code).as_secs_f64(),
            (t_plans - t_alloc).as_secs_f64(),
            (t_table - t_plans).as_secs_f64(),
            (t_records - t_table).as_secs_f64(),
            (t_up - t_records).as_secs_f64(),
            t_up.elapsed().as_secs_f64(),
        ];
        batch.stats.setup_s = t0.elapsed().as_secs_f64();
        Ok(batch)
    }
}
