//! One device frame for each page buffer a cache holds for its whole life
//! (`PageBuf::is_held`): a shared library's pages from the file-page cache, an exec'd
//! program's image pages. Every lane that maps such a page gets an entry on the batch's one
//! frame for it, so libc's pages go up once a batch rather than once a lane that touches them.
//!
//! Why this is safe: the map holds a clone of each buffer's `Arc`, so no address space holds
//! one alone, and none writes it in place (a write copies it first, and the lane's page then
//! becomes private, on a frame of its own). The frame's bytes, uploaded once, stay the
//! buffer's. The frames live as long as the batch: a lane's entry on one is not counted as
//! the lane's, and dropping the entry frees nothing.

use super::pagetable::Frames;
use super::upload::PageSrc;
use crate::device::Device;
use crate::Error;
use armada_core::memory::PageBuf;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Frames given to held page buffers at most (1 GiB of device memory); past it such pages
/// go up to each lane's own frames, as other shared pages do.
const MAX_FILE_FRAMES: usize = 1 << 18;

pub(super) struct FileFrames {
    /// The buffer's address -> (the buffer, its frame).
    map: FxHashMap<usize, (Arc<PageBuf>, u32)>,
    /// Off with ARMADA_GPU_FILE_FRAMES=0 (each lane's own frames, as before; for measuring).
    on: bool,
}

impl FileFrames {
    pub(super) fn new() -> FileFrames {
        FileFrames {
            map: FxHashMap::default(),
            on: std::env::var("ARMADA_GPU_FILE_FRAMES").map_or(true, |v| v != "0"),
        }
    }

    /// The frame that holds `buf`'s bytes, if it has one.
    pub(super) fn get(&self, buf: &Arc<PageBuf>) -> Option<u32> {
        self.map.get(&(Arc::as_ptr(buf) as usize)).map(|e| e.1)
    }

    /// The frame for `buf`: its own, or a new one whose bytes go into `uploads`. None when
    /// the map is full.
    pub(super) fn frame_for(
        &mut self,
        buf: &Arc<PageBuf>,
        frames: &mut Frames,
        dev: &dyn Device,
        uploads: &mut Vec<(u32, PageSrc)>,
    ) -> Result<Option<u32>, Error> {
        if let Some(f) = self.get(buf) {
            return Ok(Some(f));
        }
        if !self.on || self.map.len() >= MAX_FILE_FRAMES {
            return Ok(None);
        }
        let f = frames.alloc(dev)?;
        frames.shared += 1;
        uploads.push((f, PageSrc::Bytes(Box::new(***buf))));
        self.map.insert(Arc::as_ptr(buf) as usize, (buf.clone(), f));
        Ok(Some(f))
    }

    /// Frames given to held buffers.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}
