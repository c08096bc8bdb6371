//! GPU engine support.
//!
//! The GPU engines keep a copy of each lane's pages in device memory and this address space as
//! the authoritative mirror the Linux layer works on. These calls let them list pages, take
//! pages private for a guest write the device asked for, store pages downloaded from the
//! device, and learn which pages the host wrote (a syscall, a signal frame) since the last sync.

use super::{zero_page, zero_page_ref, AddressSpace, Fault, Page, PageBuf, PageData, PAGE_SHIFT};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

impl AddressSpace {
    /// Every materialized page: (page number, bytes, whether this address space owns it alone).
    pub fn gpu_pages(&self) -> impl Iterator<Item = (u64, &Arc<PageBuf>, bool)> + '_ {
        self.pages
            .iter_private()
            .map(|(vpn, p, private)| (vpn, &p.data, private))
    }

    /// Page `vpn` if it is materialized: its bytes and whether it is private.
    pub fn gpu_page(&self, vpn: u64) -> Option<(&Arc<PageBuf>, bool)> {
        self.pages
            .get_private(vpn)
            .map(|(p, private)| (&p.data, private))
    }

    /// Whether `data` is the shared page of zeros that stands for pages never written.
    pub fn gpu_is_zero_page(data: &Arc<PageBuf>) -> bool {
        Arc::ptr_eq(data, zero_page_ref())
    }

    /// Makes the page holding `addr` private for a guest write, exactly as a guest store would
    /// (write permission, copy-on-write, the lane's memory cap), and returns its bytes. Not
    /// recorded as a host write.
    pub fn gpu_make_private(&mut self, addr: u64) -> Result<&PageData, Fault> {
        let saved = self.host_written.take();
        let r = self.page_for_write(addr);
        self.host_written = saved;
        r?;
        let vpn = addr >> PAGE_SHIFT;
        Ok(&self.pages.get(vpn).expect("made private above").data)
    }

    /// Stores bytes downloaded from a device into page `vpn`, which becomes private (counted
    /// against the cap like any written page). Not recorded as a host write. Pages outside
    /// every area are ignored.
    pub fn gpu_store_page(&mut self, vpn: u64, data: &PageData) {
        if self.area_at(vpn << PAGE_SHIFT).is_none() {
            return;
        }
        let page = self
            .pages
            .get_or_insert_with(vpn, || Page { data: zero_page() });
        let copy = Arc::strong_count(&page.data) != 1;
        if let Some(buf) = Arc::get_mut(&mut page.data) {
            buf.copy_from_slice(data);
        } else {
            page.data = Arc::new(PageBuf::from_bytes(data));
        }
        if copy {
            self.add_private(1);
        }
        self.flush_page(vpn);
        if self.code_pages.remove(&vpn) {
            self.code_written.push(vpn);
        }
    }

    /// The bytes of page `vpn` for an update downloaded from a device: made private (counted
    /// against the cap like any written page) if it was shared. Not recorded as a host write.
    /// `None` if the page is not materialized.
    pub fn gpu_page_mut(&mut self, vpn: u64) -> Option<&mut PageData> {
        let (_, private) = self.pages.get_private(vpn)?;
        self.flush_page(vpn);
        if self.code_pages.remove(&vpn) {
            self.code_written.push(vpn);
        }
        if !private {
            self.add_private(1);
        }
        let page = self.pages.get_mut(vpn)?;
        Some(&mut **super::own_page(&mut page.data))
    }

    /// Starts recording the pages the host writes (see `gpu_take_written`).
    pub fn gpu_track_writes(&mut self) {
        self.flush_tlb();
        self.host_written = Some(HashSet::default());
        self.host_before = None;
    }

    /// As `gpu_track_writes`, also keeping each written page's bytes from before the host's
    /// first write to it (see `gpu_take_written_keep`).
    pub fn gpu_track_writes_keep(&mut self) {
        self.gpu_track_writes();
        self.host_before = Some(HashMap::default());
    }

    /// Records page `vpn` as written by the host since `gpu_track_writes_keep`, with `before`
    /// (what a device holds for it, None: not known): for a page the host wrote before the
    /// recording started that a device must still be given (a forked child's page the clone
    /// wrote, see armada-gpu's `spaces::adopt_space`). Nothing when not recording.
    pub fn gpu_note_written(&mut self, vpn: u64, before: Option<Box<PageData>>) {
        if let Some(w) = self.host_written.as_mut() {
            if w.insert(vpn) {
                if let Some(b) = self.host_before.as_mut() {
                    b.insert(vpn, before);
                }
            }
        }
    }

    /// Stops recording; returns the pages written (or dropped) since `gpu_track_writes_keep`,
    /// in page order, each with its bytes from before the host's first write (None for a page
    /// dropped meanwhile).
    pub fn gpu_take_written_keep(&mut self) -> Vec<(u64, Option<Box<PageData>>)> {
        self.host_written = None;
        let mut v: Vec<(u64, Option<Box<PageData>>)> = self
            .host_before
            .take()
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        v.sort_unstable_by_key(|p| p.0);
        v
    }

    /// Stops recording and returns the page numbers written since `gpu_track_writes`.
    pub fn gpu_take_written(&mut self) -> Vec<u64> {
        self.host_before = None;
        let mut v: Vec<u64> = self
            .host_written
            .take()
            .map(|s| s.into_iter().collect())
            .unwrap_or_default();
        v.sort_unstable();
        v
    }
}
