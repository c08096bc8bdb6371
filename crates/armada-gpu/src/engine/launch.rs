//! Launch and the way down (steps 1 to 3 of the round): the kernel runs over the active
//! lanes until each stops or its slice ends; the stop codes and the claim log come down; then,
//! for the lanes to service, their records, their vector registers when they wrote any, and
//! the changed blocks of the pages they wrote, straight into their mirrors. What came down
//! (`Down`) goes on to the service (`service`).

use super::apply::apply_claims;
use super::upload::Pinned;
use super::Batch;
use crate::device::{dtoh_into, dtoh_vec, htod_slice};
use crate::layout::*;
use crate::Error;

/// exit and exit_group (arm64).
const NR_EXIT: u64 = 93;
const NR_EXIT_GROUP: u64 = 94;
use armada_core::memory::PAGE_SHIFT;
use rayon::prelude::*;
use std::time::Instant;

/// Frames diffed per diff-kernel launch (bounds the staging memory).
const DIFF_BATCH: usize = 32768;

/// Largest piece of changed blocks downloaded at once (`Batch::stream_changes`).
const CHANGES_PIECE: usize = 32 << 20;

/// A mirror page that a downloaded block goes to (null: none).
#[derive(Clone, Copy)]
struct PagePtr(*mut u8);
// SAFETY: each points into a page of one lane's mirror, written only while the lanes are not
// otherwise touched (see `Batch::service`).
unsafe impl Send for PagePtr {}
unsafe impl Sync for PagePtr {}

/// The state of the lanes being serviced that `Batch::download_stopped` brought down (their
/// pages went straight into their mirrors).
pub(super) struct Down {
    /// Their records, `DOWN_WORDS` words a lane in the order of the list, in the batch's spare
    /// buffer (`Batch::service_lanes` gives it back).
    pub(super) recs: Pinned,
    /// The vector registers (64 words a lane) of the lanes that wrote any.
    pub(super) vwords: Vec<u64>,
    /// Each listed lane's place in `vwords`, if it has one.
    pub(super) vpos: Vec<Option<usize>>,
}

impl Batch {
    /// The active lanes that stopped in the last launch for something other than the end of
    /// their slice.
    pub(super) fn stopped_lanes(&self) -> Vec<u32> {
        self.active
            .iter()
            .copied()
            .filter(|&l| self.stops[l as usize] != STOP_SLICE)
            .collect()
    }

    pub(super) fn launch(&mut self, slice: u64) -> Result<(), Error> {
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
        self.fill_pool()?;
        if self.lazy && self.dev.image_cow() {
            // room for the entries the kernel may insert (copy-on-write image pages): one
            // for each frame in the lanes' reserves
            self.ensure_pt_room(self.frames.reserved)?;
        }
        if self.active_dirty {
            htod_slice(&*self.dev, self.d_active, &self.active)?;
            self.active_dirty = false;
        }
        let reset: &[u64] = if self.lazy { &[0, 0, 0] } else { &[0, 0] };
        htod_slice(&*self.dev, self.d_sched, reset)?;
        if self.d_tlb2 != 0 {
            // a new generation: the last launch's second-level entries are no more (the
            // table changed since); after the last, the cache starts again from zeros
            if self.gen >= self.gens {
                self.dev
                    .zero(self.d_tlb2, self.lanes.len() * TLB2_ENTRIES * 16)?;
                self.gen = 0;
            }
            self.gen += 1;
            self.params.gen = self.gen;
        }
        self.params.nactive = self.active.len() as u32;
        self.params.slice = slice.max(1);
        self.params.lane_shift = lane_shift(self.active.len().max(1) as u32);
        let t = Instant::now();
        self.dev.prepare_run(&self.params)?;
        self.stats.build_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.dev.launch_run_on(&self.params, self.queue)?;
        self.dev.wait_on(self.queue)?;
        let secs = t.elapsed().as_secs_f64();
        self.stats.kernel_s += secs;
        self.stats.launches += 1;
        self.stats.lanes_launched += self.active.len() as u64;
        let t = Instant::now();
        let mut lap = t;
        let stops: Vec<u32> = dtoh_vec(&*self.dev, self.d_stops, self.lanes.len())?;
        self.stops = stops;
        self.take_output()?;
        if self.lazy {
            self.take_claims()?;
        }
        if self.trace {
            self.trace_launch(slice, secs);
        }
        self.stats.transfer_s += t.elapsed().as_secs_f64();
        self.stats.lap(0, &mut lap);
        self.sample_blocks()?;
        Ok(())
    }

    /// `ARMADA_CUDA_TRACE`: a line a launch with what it did (the lanes that ran, why they
    /// left, the instructions they retired), to see where a batch's kernel time goes. (A
    /// lane's first launch counts what it had retired before, a snapshot's start included.)
    fn trace_launch(&mut self, slice: u64, secs: f64) {
        let mut why: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut retired = 0u64;
        self.trace_last.resize(self.lanes.len(), 0);
        for &l in &self.active {
            let l = l as usize;
            *why.entry(stop_name(self.stops[l])).or_default() += 1;
            // SAFETY: the progress counters (one a lane) live as long as the batch.
            let now = unsafe { std::ptr::read_volatile(self.progress_host.add(l)) };
            retired += now.saturating_sub(self.trace_last[l]);
            self.trace_last[l] = now;
        }
        eprintln!(
            "armada-cuda: launch {} of {} lanes, slice {slice}, {secs:.4} s, {retired} instructions, left: {why:?}",
            self.stats.launches,
            self.active.len(),
        );
    }

    /// Brings the state of the listed (stopped) lanes down: their records, the vector
    /// registers of those that wrote any, and the pages they wrote since their last sync, into
    /// their mirrors.
    pub(super) fn download_stopped(&mut self, svc: &[u32]) -> Result<Down, Error> {
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
                    "armada-cuda: lane {l} stop {} pc {:#x} info {:#x} x8 {} retired {} dirty {}",
                    stop_name(self.stops[l as usize]),
                    r[S_PC],
                    r[S_INFO],
                    r[S_X + 8],
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
        // The rest of the dirty lists of the lanes that wrote more pages than the first
        // part holds (S_DIRTY_MORE), each lane's part to its length.
        let more: Vec<(usize, usize)> = (0..svc.len())
            .filter_map(|k| {
                let n = recs[k * W + S_DIRTY_N] as usize;
                (n > DIRTY_CAP && n <= DIRTY_ALL).then(|| (k, n - DIRTY_CAP))
            })
            .collect();
        let more_words = self.download_parts(
            &more
                .iter()
                .map(|&(k, len)| (svc[k], S_DIRTY_MORE, len))
                .collect::<Vec<_>>(),
        )?;
        let mut more_at: Vec<Option<usize>> = vec![None; svc.len()];
        let mut off = 0;
        for &(k, len) in &more {
            more_at[k] = Some(off);
            off += len;
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
        // With the kernel answering a fuzz target's I/O (`devio`), a lane stopped at exit or
        // exit_group ends there: its memory is not looked at again, so its pages stay down.
        let (devio, stops) = (self.devio, &self.stops);
        let lists: Vec<Result<Vec<(u32, PagePtr)>, Error>> = self
            .lanes
            .par_iter_mut()
            .zip(at.into_par_iter())
            .enumerate()
            .filter_map(|(lane_id, (lh, k))| {
                let rec = &recs[k? * W..(k? + 1) * W];
                // (persistent lanes: its host state moves on from its start)
                lh.touched = true;
                if let Err(e) = apply_claims(lh, pt, lane_id) {
                    return Some(Err(e));
                }
                // (exit ends the lane only as its last thread's; exit_group as its only
                // process's)
                let lane = &lh.lane;
                let ends = |nr: u64| {
                    lane.process_count() == 1
                        && (nr == NR_EXIT_GROUP || nr == NR_EXIT && lane.thread_count() == 1)
                };
                let exiting = devio
                    && (stops[lane_id] == STOP_EXIT
                        || stops[lane_id] == STOP_SVC && ends(rec[S_X + 8]));
                let mem = &mut lh.lane.program.mem;
                // (an exiting lane's mirror is not read again: its claimed pages stay shared
                // there, which spares a 4 KiB copy each, tens of thousands a batch; they count
                // as its own in its result)
                for vpn in lh.claimed.drain(..) {
                    if exiting {
                        if mem.gpu_page(vpn).is_none_or(|(_, private)| !private) {
                            lh.ended_private += 1;
                        }
                    } else if mem.gpu_make_private(vpn << PAGE_SHIFT).is_err() {
                        return Some(Err(Error::Device(format!(
                            "lane {lane_id}: claimed page {vpn:#x} cannot be made private"
                        ))));
                    }
                }
                let n = rec[S_DIRTY_N] as usize;
                let written: Vec<(u64, u32)> = if exiting {
                    Vec::new()
                } else if n <= DIRTY_ALL {
                    let rest = match more_at[k?] {
                        Some(at) => &more_words[at..at + n - DIRTY_CAP],
                        None => &[][..],
                    };
                    rec[S_DIRTY..S_DIRTY + n.min(DIRTY_CAP)]
                        .iter()
                        .chain(rest)
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
        Ok(Down {
            recs: recs_buf,
            vwords,
            vpos,
        })
    }

    /// Downloads `words` words at word `first` of the records of `lanes`, back to back.
    pub(super) fn download_records(
        &mut self,
        lanes: &[u32],
        first: usize,
        words: usize,
    ) -> Result<Vec<u64>, Error> {
        let mut out = vec![0u64; lanes.len() * words];
        self.download_records_into(lanes, first, words, &mut out)?;
        Ok(out)
    }

    /// Parts of lanes' records, (lane, first word, words) each, one after the other.
    fn download_parts(&mut self, parts: &[(u32, usize, usize)]) -> Result<Vec<u64>, Error> {
        let total: usize = parts.iter().map(|p| p.2).sum();
        if total == 0 {
            return Ok(Vec::new());
        }
        let desc_bytes = parts.len() * std::mem::size_of::<CopyDesc>();
        let stage = self.ensure_stage(total * 8 + desc_bytes)?;
        let mut at = 0u64;
        let descs: Vec<CopyDesc> = parts
            .iter()
            .map(|&(l, first, words)| {
                let d = CopyDesc {
                    src: self.d_lanes + ((l as u64) * (S_WORDS as u64) + first as u64) * 8,
                    dst: stage + at * 8,
                    words: words as u64,
                };
                at += words as u64;
                d
            })
            .collect();
        self.run_copies(&descs, stage + (total * 8) as u64)?;
        dtoh_vec(&*self.dev, stage, total)
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
}

/// Threads a lane (as a power of two) for a launch of `n` lanes: a small batch spreads its
/// lanes one to a warp (up to 32 threads a lane, 65,536 threads in all), so that lanes at
/// different PCs do not serialize each other. `ARMADA_GPU_LANE_SHIFT=K` (0 to 5) chooses, to
/// measure.
fn lane_shift(n: u32) -> u32 {
    static CHOSEN: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let chosen = CHOSEN.get_or_init(|| {
        std::env::var("ARMADA_GPU_LANE_SHIFT")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    chosen.unwrap_or_else(|| (65536 / n).max(1).ilog2()).min(5)
}
