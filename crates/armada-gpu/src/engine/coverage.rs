//! Edge coverage of a batch's lanes. With coverage on (any lane has `Lane::set_coverage`), the
//! batch keeps a map of hit counters per lane on the device (`Params::cov`, COV_MAP_BYTES a
//! lane) and the kernel build with coverage counts every branch edge there. Instructions the
//! host runs for a lane (host steps) count in the lane's own host map; a lane's map is the
//! sum of the two, the map the CPU engine records.
//!
//! Maps stay on the device unless asked for: a fuzzer asks which lanes found something new
//! against what it has seen ([`Batch::coverage_news`], a kernel that compares every lane's map
//! with the virgin map and returns one word a lane), then fetches the maps of those lanes only.

use super::Batch;
use crate::device::{dtoh_vec, htod_slice, DevPtr};
use crate::layout::{CopyDesc, COV_MAP_BYTES};
use crate::Error;
use armada_core::coverage::{CoverageMap, Novelty, Virgin};

/// Lanes whose maps come down in one transfer (64 MiB).
const MAPS_PER_DOWNLOAD: usize = 1024;
/// Maps `coverage_maps` gathers on the device and brings down at once (16 MiB).
const MAPS_PER_FETCH: usize = 256;

/// What one lane's coverage adds to what a fuzzer has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoverageNews {
    /// Some hit is in a bucket the virgin map lacks (`Virgin::novelty` is not `None`).
    pub new: bool,
    /// `armada_core::coverage::path_hash` of the lane's map.
    pub path: u32,
}

/// The device buffers of `coverage_news`: the virgin map, the list of lanes and the answers
/// (freed with the batch).
#[derive(Default)]
pub(super) struct NewsBuffers {
    pub(super) virgin: DevPtr,
    pub(super) list: DevPtr,
    pub(super) out: DevPtr,
    /// Lanes `list` and `out` have room for.
    room: usize,
}

impl Batch {
    /// Whether the batch records coverage.
    pub fn has_coverage(&self) -> bool {
        self.d_cov != 0
    }

    fn no_coverage() -> Error {
        Error::Device("the batch records no coverage (no lane had coverage on)".into())
    }

    /// For each listed lane, whether its map adds to `virgin` and its path hash, computed
    /// on the device; lanes the host ran instructions for are judged on the host, with
    /// their whole map. Persistent lanes that ended at exit were judged by the kernel then,
    /// against the map of `set_virgin`: an older one may show news that `virgin` has since
    /// seen (the caller finds that in the map), never hide any.
    pub fn coverage_news(
        &mut self,
        lanes: &[usize],
        virgin: &Virgin,
    ) -> Result<Vec<CoverageNews>, Error> {
        if !self.has_coverage() {
            return Err(Self::no_coverage());
        }
        if lanes.is_empty() {
            return Ok(Vec::new());
        }
        let word = |w: u64| CoverageNews {
            new: w >> 32 != 0,
            path: w as u32,
        };
        let mut news: Vec<CoverageNews> = lanes
            .iter()
            .map(|&l| word(self.lanes[l].dev_news.unwrap_or(0)))
            .collect();
        let list: Vec<u32> = lanes
            .iter()
            .filter(|&&l| self.lanes[l].dev_news.is_none())
            .map(|&l| l as u32)
            .collect();
        if !list.is_empty() {
            let words = {
                let n = list.len();
                if self.news.virgin == 0 {
                    self.news.virgin = self.dev.alloc(COV_MAP_BYTES)?;
                }
                if self.news.room < n {
                    for p in [self.news.list, self.news.out] {
                        if p != 0 {
                            self.dev.free(p);
                        }
                    }
                    self.news.list = 0;
                    self.news.out = 0;
                    self.news.room = 0;
                    self.news.list = self.dev.alloc(n * 4)?;
                    self.news.out = self.dev.alloc(n * 8)?;
                    self.news.room = n;
                }
                let (b, dev) = (&self.news, &*self.dev);
                dev.htod(b.virgin, virgin.seen())?;
                htod_slice(dev, b.list, &list)?;
                dev.cov_news(self.d_cov, b.virgin, b.list, n as u32, b.out)?;
                dtoh_vec::<u64>(dev, b.out, n)?
            };
            let mut from_kernel = words.into_iter();
            for (k, &l) in lanes.iter().enumerate() {
                if self.lanes[l].dev_news.is_none() {
                    news[k] = word(from_kernel.next().unwrap_or(0));
                }
            }
        }
        let hosted: Vec<usize> = (0..lanes.len())
            .filter(|&k| self.lanes[lanes[k]].host_steps > 0)
            .collect();
        if !hosted.is_empty() {
            let which: Vec<usize> = hosted.iter().map(|&k| lanes[k]).collect();
            for (k, map) in hosted.into_iter().zip(self.coverage_maps(&which)?) {
                news[k] = CoverageNews {
                    new: virgin.novelty(map.as_slice()) != Novelty::None,
                    path: map.path_hash(),
                };
            }
        }
        Ok(news)
    }

    /// The whole maps of the listed lanes: the device's counts plus the host steps'.
    pub fn coverage_maps(&mut self, lanes: &[usize]) -> Result<Vec<CoverageMap>, Error> {
        if !self.has_coverage() {
            return Err(Self::no_coverage());
        }
        // gathered on the device into the staging buffer and brought down a piece at a
        // time (one copy of 64 KiB a lane took most of a fuzz round whose lanes all had news)
        let mut out = Vec::with_capacity(lanes.len());
        let mut buf = vec![0u8; MAPS_PER_FETCH.min(lanes.len()) * COV_MAP_BYTES];
        for part in lanes.chunks(MAPS_PER_FETCH) {
            let bytes = part.len() * COV_MAP_BYTES;
            let stage = self.ensure_stage(bytes + part.len() * std::mem::size_of::<CopyDesc>())?;
            let descs: Vec<CopyDesc> = part
                .iter()
                .enumerate()
                .map(|(k, &l)| CopyDesc {
                    src: self.d_cov + (l * COV_MAP_BYTES) as u64,
                    dst: stage + (k * COV_MAP_BYTES) as u64,
                    words: (COV_MAP_BYTES / 8) as u64,
                })
                .collect();
            self.run_copies(&descs, stage + bytes as u64)?;
            self.dev.dtoh(stage, &mut buf[..bytes])?;
            for (k, &l) in part.iter().enumerate() {
                let mut map = CoverageMap::default();
                map.as_mut_slice()
                    .copy_from_slice(&buf[k * COV_MAP_BYTES..(k + 1) * COV_MAP_BYTES]);
                if let Some(host) = self.lanes[l].lane.coverage() {
                    map.add(host.as_slice());
                }
                out.push(map);
            }
        }
        Ok(out)
    }

    /// Gives every lane with coverage on its whole map (`Lane::coverage`), once, for the
    /// results: all maps come down, `MAPS_PER_DOWNLOAD` lanes at a time.
    pub fn collect_coverage(&mut self) -> Result<(), Error> {
        if !self.has_coverage() || self.cov_collected {
            return Ok(());
        }
        self.cov_collected = true;
        let n = self.lanes.len();
        let mut bytes = vec![0u8; MAPS_PER_DOWNLOAD.min(n) * COV_MAP_BYTES];
        for first in (0..n).step_by(MAPS_PER_DOWNLOAD) {
            let k = MAPS_PER_DOWNLOAD.min(n - first);
            let part = &mut bytes[..k * COV_MAP_BYTES];
            self.dev
                .dtoh(self.d_cov + (first * COV_MAP_BYTES) as u64, part)?;
            for (i, dev_map) in part.chunks_exact(COV_MAP_BYTES).enumerate() {
                self.lanes[first + i].lane.add_coverage(dev_map);
            }
        }
        Ok(())
    }
}
