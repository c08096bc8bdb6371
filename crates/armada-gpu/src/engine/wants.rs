//! What a lane's pages should look like on the device (`Want`), worked out from its host
//! mirror: at setup for every page a lane starts with, and after a service for the pages the
//! host wrote, the page that missed and the areas that changed. Lazy entries go to the pages a
//! lane will likely write next, so that the kernel copies them on the first write instead of
//! stopping the lane. The wants are applied by `apply`.

use super::pagetable::ZERO_FRAME;
use super::upload::PageSrc;
use super::{Image, LaneHost};
use crate::layout::*;
use armada_core::memory::{AddressSpace, PageBuf, Perm, PAGE_SHIFT};
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// A writable area of at most this many pages (a program's data and bss, an allocator's
/// arena) gets lazy entries for all its pages when the lane starts with it or maps it; a
/// larger one for its first pages. CPython's allocator maps 1 MiB arenas (256 pages) and
/// places its pools anywhere in them: with 64, a Python lane from a snapshot stopped about
/// five more times on pages of its arenas (docs/performance.md, "Lazy entries for whole
/// arenas").
pub(super) const LAZY_AREA_PAGES: u64 = 256;
/// Around a page the lane starts with or writes, this many pages on each side get lazy
/// entries (stacks grow down a page at a time, heaps and bss up).
pub(super) const LAZY_AROUND: u64 = 4;

/// What a lane's page should look like on the device.
pub(super) enum Want {
    /// No entry of its own (absent, or the shared image page serves it).
    Nothing,
    /// An entry on a frame it does not own (the zero frame; perms 0 blocks an image page).
    Shared { frame: u32, perms: u64 },
    /// Its own frame, with these bytes when given (else the frame's bytes are current).
    Private { perms: u64, data: Option<PageSrc> },
    /// A lazy entry on `frame` (the zero frame or an image page), writable: the kernel copies
    /// it into a frame of the lane's reserve on the first write.
    Lazy { frame: u32, perms: u64 },
    /// An entry on the batch's frame for a page buffer a cache holds (a library's page,
    /// `FileFrames`), read-only: a write comes back to the host.
    File { buf: Arc<PageBuf>, perms: u64 },
}

fn area_perms(p: Perm) -> u64 {
    (if p.contains(Perm::R) { PT_R } else { 0 }) | (if p.contains(Perm::W) { PT_W } else { 0 })
}

/// The device state page `vpn` of `mem` calls for. `owned`: the lane already has its own frame
/// for it (then unchanged bytes need no upload unless `force`); `read_miss`: the lane just
/// read it, so a page never touched maps the zero frame; `lazy`: a writable page that still
/// holds its starting bytes (zeros or the image's) gets a lazy entry (`Want::Lazy`), so the
/// kernel copies it on the first write without stopping the lane.
pub(super) fn want_for(
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
            let is_image = img.is_some_and(|(d, ..)| Arc::ptr_eq(d, data));
            if is_image && !private {
                // (the image's entry: read-only, or copy-on-write, see `Batch::new`)
                let (frame, img_perms) = img.map_or((ZERO_FRAME, 0), |i| (i.1, i.2));
                let cow = img_perms & PT_W != 0;
                if cow && perms == PT_R | PT_W {
                    // the kernel copies it on the lane's first write
                    Want::Nothing
                } else if lazy && perms & PT_W != 0 {
                    Want::Lazy { frame, perms }
                } else if perms & PT_R != 0 {
                    if cow {
                        // not writable in this lane: an entry of its own keeps it read-only
                        Want::Shared { frame, perms: PT_R }
                    } else {
                        Want::Nothing
                    }
                } else {
                    Want::Shared {
                        frame: ZERO_FRAME,
                        perms: 0,
                    }
                }
            } else if !private && data.is_held() {
                // a library's page (or an exec'd image's): the batch's one frame for it
                Want::File {
                    buf: data.clone(),
                    perms: perms & PT_R,
                }
            } else {
                // A private page (or a shared one of unknown origin, kept read-only so a write
                // comes back to the host first).
                let perms = if private { perms } else { perms & PT_R };
                let data = if !owned || force {
                    Some(PageSrc::Bytes(Box::new(***data)))
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

/// The pages in `lo..hi` that `out` has a want for (one scan of `out`, not one a page).
fn wanted_in(out: &[(u64, Want)], lo: u64, hi: u64) -> FxHashSet<u64> {
    out.iter()
        .map(|w| w.0)
        .filter(|&v| v >= lo && v < hi)
        .collect()
}

/// Lazy entries, into `out`, for the pages `lo..hi` that the lane has no entry for (nor a want
/// in `out`: `wanted`, the caller's set of `out`'s pages, kept with it) and that qualify
/// (writable, still zeros or the image's bytes). (A set the caller keeps, not a scan of
/// `out`: a new space's plan has a want for each of its hundreds of pages and looks around
/// each one, which scanning made quadratic.)
pub(super) fn lazy_range(
    lh: &LaneHost,
    image: &Image,
    lo: u64,
    hi: u64,
    out: &mut Vec<(u64, Want)>,
    wanted: &mut FxHashSet<u64>,
) {
    let mem = &lh.lane.program.mem;
    for v in lo..hi {
        if lh.entries.contains_key(&v) || wanted.contains(&v) {
            continue;
        }
        let w = want_for(mem, v, image, false, false, false, true);
        if matches!(w, Want::Lazy { .. }) {
            out.push((v, w));
            wanted.insert(v);
        }
    }
}

/// Around a library page that missed, this many pages on each side get entries on the
/// batch's frames for them (`Want::File`) where the lane maps such pages there.
pub(super) const FILE_AROUND: u64 = 16;

/// Entries on the batch's library frames, into `out`, for the pages within `FILE_AROUND` of
/// `vpn` (left alone) that the lane maps to such a page and has no entry (nor a want) for.
pub(super) fn files_around(lh: &LaneHost, image: &Image, vpn: u64, out: &mut Vec<(u64, Want)>) {
    let mem = &lh.lane.program.mem;
    let (lo, hi) = (
        vpn.saturating_sub(FILE_AROUND),
        vpn.saturating_add(FILE_AROUND + 1),
    );
    let wanted = wanted_in(out, lo, hi);
    for v in lo..hi {
        if v == vpn || lh.entries.contains_key(&v) || wanted.contains(&v) {
            continue;
        }
        if mem
            .gpu_page(v)
            .is_none_or(|(d, private)| private || !d.is_held())
        {
            continue;
        }
        let w = want_for(mem, v, image, false, false, false, false);
        if matches!(w, Want::File { .. }) {
            out.push((v, w));
        }
    }
}

/// `lazy_range` around page `vpn` (which itself is left alone).
pub(super) fn lazy_around(
    lh: &LaneHost,
    image: &Image,
    vpn: u64,
    out: &mut Vec<(u64, Want)>,
    wanted: &mut FxHashSet<u64>,
) {
    let lo = vpn.saturating_sub(LAZY_AROUND);
    lazy_range(lh, image, lo, vpn, out, wanted);
    let hi = vpn.saturating_add(LAZY_AROUND + 1);
    lazy_range(lh, image, vpn + 1, hi, out, wanted);
}

/// Lazy entries for a writable area the lane has just got or that grew (`lo..hi` in pages):
/// all of a small one (a program's data and bss), else its first pages (a heap grows up).
pub(super) fn lazy_area(
    lh: &LaneHost,
    image: &Image,
    lo: u64,
    hi: u64,
    out: &mut Vec<(u64, Want)>,
    wanted: &mut FxHashSet<u64>,
) {
    let hi = if hi - lo <= LAZY_AREA_PAGES {
        hi
    } else {
        lo + 2 * LAZY_AROUND
    };
    lazy_range(lh, image, lo, hi, out, wanted);
}
