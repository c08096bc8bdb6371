//! The upload (the end of step 5 of the round, and of the setup): records, pages from the
//! host (whole, or the runs of words the host changed), pages copied on the device, and the
//! pending page-table writes, staged in page-locked host memory (`Pinned`) and a device
//! buffer, then put in place by the copy kernel.

use super::records::Records;
use super::Batch;
use crate::device::{htod_slice, DevPtr, Device};
use crate::layout::*;
use crate::Error;
use armada_core::memory::{PageData, PAGE_SIZE};
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::sync::Arc;
use std::time::Instant;

/// Where a frame's new bytes come from.
pub(super) enum PageSrc {
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
pub(super) fn changed_runs(before: &PageData, after: &PageData) -> Option<PageSrc> {
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

/// Largest upload staged in page-locked memory: the setup's upload of every lane's stack can
/// be much larger, once, and pinning that much would cost more than it saves.
const PINNED_UP_MAX: usize = 256 << 20;

/// A page-locked host buffer from the device, grown by doubling (its contents are not kept),
/// freed when dropped.
#[derive(Default)]
pub(super) struct Pinned {
    ptr: Option<(std::ptr::NonNull<u8>, Arc<dyn Device>)>,
    bytes: usize,
}

// SAFETY: the buffer is owned by this value and only reached through `&`/`&mut` of it; the
// devices are shared across threads already (`Batch` moves between threads with its device).
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    /// Room for `bytes` (what it held before is lost when it grows).
    pub(super) fn reserve(&mut self, dev: &Arc<dyn Device>, bytes: usize) -> Result<(), Error> {
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

    pub(super) fn words(&self, n: usize) -> &[u64] {
        assert!(8 * n <= self.bytes, "staging buffer overrun");
        // SAFETY: as in `bytes_mut`; the buffer is page-aligned.
        unsafe { std::slice::from_raw_parts(self.base() as *const u64, n) }
    }

    pub(super) fn words_mut(&mut self, n: usize) -> &mut [u64] {
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

impl Batch {
    pub(super) fn ensure_stage(&mut self, bytes: usize) -> Result<DevPtr, Error> {
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
    pub(super) fn run_copies(&mut self, descs: &[CopyDesc], desc_at: DevPtr) -> Result<(), Error> {
        if descs.is_empty() {
            return Ok(());
        }
        htod_slice(&*self.dev, desc_at, descs)?;
        self.dev.copy(desc_at, descs.len() as u32)
    }

    /// Uploads records and pages, and flushes pending page-table writes.
    pub(super) fn upload(
        &mut self,
        records: &Records,
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
        let rec_words = records.words().len();
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
        let n_desc = records.heads().len() + 2 * (n_whole + n_runs);
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
            // the records' words as they are (one buffer), each run a copy to its lane's record
            host[..rec_bytes]
                .par_chunks_mut(8 * 4096)
                .zip(records.words().par_chunks(4096))
                .for_each(|(dst, words)| {
                    for (d, v) in dst.chunks_exact_mut(8).zip(words) {
                        d.copy_from_slice(&v.to_le_bytes());
                    }
                });
            let mut off = 0u64;
            descs.extend(records.heads().iter().map(|&(lane, first, n)| {
                let d = CopyDesc {
                    src: stage + off,
                    dst: self.d_lanes + ((lane as u64) * (S_WORDS as u64) + first as u64) * 8,
                    words: n as u64,
                };
                off += 8 * n as u64;
                d
            }));
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
}
