//! The address space's TLB: the entries `read` and `write` look pages up in, and that
//! translated code reads itself (`tlb_layout`, `TlbView`); filling, growing and emptying it.

use super::window::{self, Window};
use super::{guards_on, AddressSpace, PAGE_SHIFT};

/// One TLB entry. Translated code (the `armada-jit` tier) reads entries through
/// [`AddressSpace::tlb_view`], at the offsets in [`tlb_layout`].
///
/// The pointers are the page's buffer less the page's guest address (wrapping), so a guest
/// address plus the pointer is the host address of its byte, as qemu's TLB keeps an
/// addend: one add an access, where a pointer to the page's start needed the offset in the
/// page masked out first. (Wrapping pointer arithmetic keeps the buffer's provenance; the
/// sum is in the buffer whenever the tag matched.) In an address space with a window
/// (`window.rs`) they are the window's base, where the page is at its guest address. The tags are the pages' addresses, not
/// their numbers: translated code compares a tag with its access's address masked by a
/// constant, which Cranelift computes again where it is needed rather than keep a shift's
/// result live (and spilled) from one access to a later one at the same address.
#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct TlbEntry {
    pub(super) rtag: u64,
    pub(super) rptr: *const u8,
    pub(super) wtag: u64,
    pub(super) wptr: *mut u8,
}

/// A page buffer's pointer as a TLB entry keeps it (see [`TlbEntry`]).
#[inline(always)]
pub(super) fn biased(page: *mut u8, vpn: u64) -> *mut u8 {
    page.wrapping_sub((vpn << PAGE_SHIFT) as usize)
}

/// Where a TLB entry's fields are, for code that looks entries up itself (the translation
/// tier inlines the lookup `read` and `write` make): entry `vpn & mask` of `entries`, whose
/// tag is the page's address (the guest address with its low 12 bits clear), and on a tag
/// match the guest address's byte at the address plus the pointer. A read tag never
/// matches a page that is not readable, a write tag one that is not writable by this address
/// space alone (or that holds decoded code), so a hit needs no other check.
pub mod tlb_layout {
    pub const ENTRY_BYTES: i32 = 32;
    pub const RTAG: i32 = 0;
    pub const RPTR: i32 = 8;
    pub const WTAG: i32 = 16;
    pub const WPTR: i32 = 24;
    const _: () = {
        assert!(std::mem::size_of::<super::TlbEntry>() == ENTRY_BYTES as usize);
        assert!(std::mem::offset_of!(super::TlbEntry, rptr) == RPTR as usize);
        assert!(std::mem::offset_of!(super::TlbEntry, wtag) == WTAG as usize);
        assert!(std::mem::offset_of!(super::TlbEntry, wptr) == WPTR as usize);
    };
}

/// The TLB's current entries and index mask, kept next to the table so translated code can
/// find them from one pointer (both change when the table is made, on its first fill, and when
/// it grows).
#[repr(C)]
pub struct TlbView {
    pub entries: *const u8,
    pub mask: u64,
    /// The address space's window (see `window.rs`), null if it has none: where an entry
    /// holds a read tag, the page's bytes are also at this plus the guest address.
    pub window: *const u8,
}

pub(super) const TLB_BITS: u32 = 8;
pub(super) const TLB_SIZE: usize = 1 << TLB_BITS;
/// The most entries a TLB grows to (256 KiB, 32 MiB of pages).
pub(super) const TLB_MAX: usize = 1 << 13;
/// A TLB doubles once it has been refilled this many times its size since it last grew:
/// a working set larger than its reach (bzip2's 900 KB blocks and their 3.6 MB of
/// pointers, a sort's buffers) missed on most accesses at 256 entries (1 MiB). Lanes that
/// never miss much, most of the lanes of a batch, keep 8 KiB.
pub(super) const TLB_GROW_FILLS: usize = 8;
/// Filled entries an emptying of the TLB clears one by one (see `AddressSpace::tlb_dirty`).
pub(super) const TLB_RECENT: usize = 16;
/// Never a page's address (its low bits are set).
pub(super) const NO_TAG: u64 = u64::MAX;
pub(super) const EMPTY: TlbEntry = TlbEntry {
    rtag: NO_TAG,
    rptr: std::ptr::null(),
    wtag: NO_TAG,
    wptr: std::ptr::null_mut(),
};

impl AddressSpace {
    /// Empties the TLB. After a `clone`, the next write to a page the two now share then
    /// copies it (a TLB entry would write the shared buffer in place).
    ///
    /// In an address space with a guarded window, the window shows nothing after it either
    /// (its pages fault in again): a guarded window lets translated code write wherever a
    /// write tag would, so it forgets what the TLB forgets.
    ///
    /// A guarded window showing more than [`window::RESET_MOST`] pages is given up instead:
    /// emptying it costs about a microsecond a page, and showing the pages again after it
    /// a host fault and a mapping each (a process of 100 MiB forked 20 times took 0.29 s
    /// where it took 0.04 s without a window).
    pub fn flush_tlb(&mut self) {
        if let Some(w) = self.window.as_mut().filter(|w| w.guarded()) {
            if w.shown_len() > window::RESET_MOST {
                self.retire_window();
                return;
            }
            let t0 = std::time::Instant::now();
            w.reset();
            w.charge(t0.elapsed());
        }
        self.flush_tlb_only();
    }

    /// Empties the TLB, where the caller took the window's pages back itself.
    pub(super) fn flush_tlb_only(&mut self) {
        match self.tlb_dirty {
            0 => {}
            n if n <= TLB_RECENT => {
                for &i in &self.tlb_recent[..n] {
                    self.tlb[i as usize] = EMPTY;
                }
            }
            _ => self.tlb.fill(EMPTY),
        }
        self.tlb_dirty = 0;
    }

    /// The TLB entry page `vpn` is filled into (the whole TLB made on the first fill).
    pub(super) fn tlb_fill_entry(&mut self, vpn: u64) -> &mut TlbEntry {
        self.tlb_fills += 1;
        if self.tlb_mask == 0 {
            self.resize_tlb(TLB_SIZE);
        } else if self.tlb_fills > TLB_GROW_FILLS * self.tlb.len() && self.tlb.len() < TLB_MAX {
            // the entries are dropped, not rehashed: the next accesses fill them again
            self.resize_tlb(self.tlb.len() * 2);
        }
        let i = (vpn as usize) & self.tlb_mask;
        if let Some(r) = self.tlb_recent.get_mut(self.tlb_dirty) {
            *r = i as u32;
        }
        self.tlb_dirty = self.tlb_dirty.saturating_add(1);
        &mut self.tlb[i]
    }

    pub(super) fn resize_tlb(&mut self, entries: usize) {
        self.tlb = vec![EMPTY; entries].into_boxed_slice();
        self.tlb_mask = entries - 1;
        self.tlb_fills = 0;
        self.tlb_dirty = 0;
        self.view.entries = self.tlb.as_ptr() as *const u8;
        self.view.mask = self.tlb_mask as u64;
    }

    /// The TLB's entries and mask for code that looks them up itself (see [`tlb_layout`]).
    /// The view lives inside this address space: it is valid while the address space is
    /// neither moved nor dropped, and its contents change when the TLB is first filled and
    /// when it grows (after any access that missed it).
    ///
    /// The first call makes the address space's window where one can be had: from then on
    /// every page with a read tag in the TLB is also at `window` plus its address.
    pub fn tlb_view(&mut self) -> *const TlbView {
        if self.window.is_none() && !self.no_window && self.flat.is_none() && self.window_cap > 0 {
            match Window::new(self.guards.unwrap_or_else(guards_on)) {
                Ok(Some(mut w)) => {
                    w.set_cap(self.window_cap);
                    // entries filled before are not in the window
                    self.flush_tlb_only();
                    self.window = Some(w);
                }
                Ok(None) => {}
                Err(()) => self.no_window = true,
            }
        }
        if self.tlb_mask == 0 {
            // the view of a one-entry table would need a mask of 0 and a pointer to it
            self.view.entries = self.tlb.as_ptr() as *const u8;
            self.view.mask = 0;
        }
        self.view.window = self.window.as_ref().map_or(std::ptr::null(), |w| w.base());
        &self.view
    }

    /// The TLB's entries and index mask (see [`tlb_layout`]) for code that looks them up
    /// itself through the entries' pointers and never through a window (the quick tier):
    /// unlike [`Self::tlb_view`] this makes no window. Both change after an access that
    /// missed (the first fill makes the table, and it grows).
    pub fn tlb_table(&self) -> (*const u8, u64) {
        (self.tlb.as_ptr() as *const u8, self.tlb_mask as u64)
    }

    pub(super) fn flush_page(&mut self, vpn: u64) {
        if let Some(w) = self.window.as_mut().filter(|w| w.guarded()) {
            w.hide(vpn, vpn + 1);
        }
        let e = &mut self.tlb[(vpn as usize) & self.tlb_mask];
        let tag = vpn << PAGE_SHIFT;
        if e.rtag == tag || e.wtag == tag {
            *e = EMPTY;
        }
    }
}
