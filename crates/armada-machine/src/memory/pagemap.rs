//! An address space's materialized pages, in chunks shared copy-on-write between forks.
//!
//! Why chunks: a fork copied the whole page map, one `Arc` increment a page, and the end of
//! either process dropped it again, one decrement a page. Pages a GPU batch's lanes restored
//! from one snapshot are the same buffers in every lane, so those counts' cache lines went
//! from core to core at every fork and exit: on the H200 host's 16 cores, 16,384 lanes of a
//! forking dash script spent a quarter of their host time on the `lock` instructions of
//! those increments and decrements (docs/performance.md). Now a fork copies one `Arc` a chunk
//! of [`CHUNK_PAGES`] pages, and a chunk is copied (its pages' counts incremented) only when
//! one of the address spaces holding it changes it.
//!
//! Whether a page is private to an address space is as before a page map was shared: its
//! chunk is held by this map alone and its buffer by that chunk alone. Every change goes
//! through [`PageMap::get_mut`] and friends, which first make the chunk this map's own, so
//! the pages of a chunk that was shared then count two holders, as they did when each map
//! held them itself.

use super::Page;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// log2 of the pages a chunk holds: 64 pages, 256 KiB of guest memory. A fork costs one
/// increment a chunk; a chunk's first change after a fork costs its pages' increments and
/// 512 bytes. A stack, a heap's end or a library's data are a chunk or two each.
const CHUNK_BITS: u32 = 6;
pub(super) const CHUNK_PAGES: usize = 1 << CHUNK_BITS;
const CHUNK_MASK: u64 = CHUNK_PAGES as u64 - 1;

#[derive(Clone)]
struct Chunk {
    pages: [Option<Page>; CHUNK_PAGES],
    len: u32,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            pages: std::array::from_fn(|_| None),
            len: 0,
        }
    }
}

/// Page number -> page, for one address space.
#[derive(Clone, Default)]
pub(super) struct PageMap {
    chunks: HashMap<u64, Arc<Chunk>>,
    len: usize,
}

fn split(vpn: u64) -> (u64, usize) {
    (vpn >> CHUNK_BITS, (vpn & CHUNK_MASK) as usize)
}

impl PageMap {
    /// Pages materialized.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, vpn: u64) -> Option<&Page> {
        let (c, i) = split(vpn);
        self.chunks.get(&c)?.pages[i].as_ref()
    }

    /// Page `vpn` and whether this map alone holds its buffer (see the module's comment).
    pub(super) fn get_private(&self, vpn: u64) -> Option<(&Page, bool)> {
        let (c, i) = split(vpn);
        let chunk = self.chunks.get(&c)?;
        let page = chunk.pages[i].as_ref()?;
        Some((page, private(chunk, page)))
    }

    /// Page `vpn`, to change: its chunk becomes this map's own first.
    pub(super) fn get_mut(&mut self, vpn: u64) -> Option<&mut Page> {
        let (c, i) = split(vpn);
        let chunk = self.chunks.get_mut(&c)?;
        chunk.pages[i].as_ref()?;
        Arc::make_mut(chunk).pages[i].as_mut()
    }

    /// Page `vpn`, made from `make` where it is not materialized yet.
    pub(super) fn get_or_insert_with(
        &mut self,
        vpn: u64,
        make: impl FnOnce() -> Page,
    ) -> &mut Page {
        let (c, i) = split(vpn);
        let chunk = Arc::make_mut(
            self.chunks
                .entry(c)
                .or_insert_with(|| Arc::new(Chunk::new())),
        );
        if chunk.pages[i].is_none() {
            chunk.len += 1;
            self.len += 1;
        }
        chunk.pages[i].get_or_insert_with(make)
    }

    /// Puts `page` at `vpn`; returns the page it replaces.
    pub(super) fn insert(&mut self, vpn: u64, page: Page) -> Option<Page> {
        let (c, i) = split(vpn);
        let chunk = Arc::make_mut(
            self.chunks
                .entry(c)
                .or_insert_with(|| Arc::new(Chunk::new())),
        );
        let old = chunk.pages[i].replace(page);
        if old.is_none() {
            chunk.len += 1;
            self.len += 1;
        }
        old
    }

    #[cfg(test)]
    fn remove(&mut self, vpn: u64) -> Option<Page> {
        let (c, i) = split(vpn);
        let chunk = self.chunks.get_mut(&c)?;
        chunk.pages[i].as_ref()?;
        let owned = Arc::make_mut(chunk);
        let page = owned.pages[i].take();
        owned.len -= 1;
        self.len -= 1;
        if owned.len == 0 {
            self.chunks.remove(&c);
        }
        page
    }

    /// Removes the pages in [first, last), handing each to `gone` (its buffer's count tells
    /// whether it was private, as after [`Self::remove`]).
    pub(super) fn remove_range(&mut self, first: u64, last: u64, mut gone: impl FnMut(u64, Page)) {
        if first >= last {
            return;
        }
        let (c0, c1) = (first >> CHUNK_BITS, (last - 1) >> CHUNK_BITS);
        let mut ids: Vec<u64> = if c1 - c0 >= self.chunks.len() as u64 {
            self.chunks
                .keys()
                .copied()
                .filter(|&c| c >= c0 && c <= c1)
                .collect()
        } else {
            (c0..=c1).filter(|c| self.chunks.contains_key(c)).collect()
        };
        ids.sort_unstable();
        for c in ids {
            let base = c << CHUNK_BITS;
            let lo = first.max(base) - base;
            let hi = last.min(base + CHUNK_PAGES as u64) - base;
            let chunk = self.chunks.get_mut(&c).expect("listed above");
            if !(lo..hi).any(|i| chunk.pages[i as usize].is_some()) {
                continue;
            }
            let owned = Arc::make_mut(chunk);
            for i in lo..hi {
                if let Some(p) = owned.pages[i as usize].take() {
                    owned.len -= 1;
                    self.len -= 1;
                    gone(base + i, p);
                }
            }
            if owned.len == 0 {
                self.chunks.remove(&c);
            }
        }
    }

    /// Every page with its number, in no particular order.
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = (u64, &Page)> + '_ {
        self.iter_private().map(|(v, p, _)| (v, p))
    }

    /// Every page with its number and whether this map alone holds its buffer.
    pub(super) fn iter_private(&self) -> impl Iterator<Item = (u64, &Page, bool)> + '_ {
        self.chunks.iter().flat_map(|(&c, chunk)| {
            chunk.pages.iter().enumerate().filter_map(move |(i, p)| {
                let p = p.as_ref()?;
                Some(((c << CHUNK_BITS) + i as u64, p, private(chunk, p)))
            })
        })
    }

    /// Each page, to change (every chunk becomes this map's own).
    pub(super) fn for_each_mut(&mut self, mut f: impl FnMut(u64, &mut Page)) {
        for (&c, chunk) in self.chunks.iter_mut() {
            for (i, p) in Arc::make_mut(chunk).pages.iter_mut().enumerate() {
                if let Some(p) = p {
                    f((c << CHUNK_BITS) + i as u64, p);
                }
            }
        }
    }
}

fn private(chunk: &Arc<Chunk>, page: &Page) -> bool {
    Arc::strong_count(chunk) == 1 && Arc::strong_count(&page.data) == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::PageBuf;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn page(tag: u8) -> Page {
        let mut b = PageBuf::zeroed();
        b[0] = tag;
        Page { data: Arc::new(b) }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u8),
        Remove(u64),
        RemoveRange(u64, u64),
        Write(u64, u8),
        Fork,
        DropOther,
    }

    fn op() -> impl Strategy<Value = Op> {
        // page numbers over a few chunks, so that ops share chunks and cross their edges
        let vpn = 0u64..(4 * CHUNK_PAGES as u64);
        prop_oneof![
            (vpn.clone(), any::<u8>()).prop_map(|(v, t)| Op::Insert(v, t)),
            vpn.clone().prop_map(Op::Remove),
            (vpn.clone(), 0u64..200).prop_map(|(v, n)| Op::RemoveRange(v, v + n)),
            (vpn, any::<u8>()).prop_map(|(v, t)| Op::Write(v, t)),
            Just(Op::Fork),
            Just(Op::DropOther),
        ]
    }

    fn contents(m: &PageMap) -> BTreeMap<u64, u8> {
        m.iter().map(|(v, p)| (v, p.data[0])).collect()
    }

    proptest! {
        /// The map holds what a plain map of pages would, a fork's copy does not see the
        /// other's later changes, and a page counts as private exactly when no other map
        /// can reach its buffer.
        #[test]
        fn behaves_as_a_map_of_pages(ops in proptest::collection::vec(op(), 1..80)) {
            let mut m = PageMap::default();
            let mut model: BTreeMap<u64, u8> = BTreeMap::new();
            let mut other: Option<(PageMap, BTreeMap<u64, u8>)> = None;
            for op in ops {
                match op {
                    Op::Insert(v, t) => {
                        m.insert(v, page(t));
                        model.insert(v, t);
                    }
                    Op::Remove(v) => {
                        prop_assert_eq!(m.remove(v).map(|p| p.data[0]), model.remove(&v));
                    }
                    Op::RemoveRange(a, b) => {
                        let mut got = Vec::new();
                        m.remove_range(a, b, |v, p| got.push((v, p.data[0])));
                        got.sort_unstable();
                        let want: Vec<(u64, u8)> = model.range(a..b).map(|(&v, &t)| (v, t)).collect();
                        prop_assert_eq!(got, want);
                        model.retain(|&v, _| v < a || v >= b);
                    }
                    Op::Write(v, t) => {
                        if let Some(p) = m.get_mut(v) {
                            Arc::make_mut(&mut p.data)[0] = t;
                            model.insert(v, t);
                        }
                    }
                    Op::Fork => other = Some((m.clone(), model.clone())),
                    Op::DropOther => other = None,
                }
                prop_assert_eq!(contents(&m), model.clone());
                prop_assert_eq!(m.len(), model.len());
                if let Some((o, om)) = &other {
                    prop_assert_eq!(&contents(o), om);
                }
                for (v, p, private) in m.iter_private() {
                    let in_other = other
                        .as_ref()
                        .and_then(|(o, _)| o.get(v))
                        .is_some_and(|q| Arc::ptr_eq(&q.data, &p.data));
                    prop_assert_eq!(private, !in_other, "page {}", v);
                    prop_assert_eq!(m.get_private(v).map(|x| x.1), Some(private));
                }
            }
        }
    }
}
