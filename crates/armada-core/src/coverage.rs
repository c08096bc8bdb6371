//! Edge coverage, the same on every engine: at every branch the engine records the edge
//! (branch address, next address) into a 64 KiB map of hit counters, as AFL does. A
//! conditional branch records its edge whether it is taken or not (the fall-through is an
//! edge too, as AFL's per-block instrumentation sees it); an unconditional one records its
//! target. The GPU kernels compute [`edge_index`] with the same 32-bit arithmetic.
//!
//! A fuzzer compares each run's map with [`Virgin`], the union of everything seen so far,
//! counting hits in AFL's buckets (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+), so a loop that
//! runs a new number of times is news too.

/// Map size: 64 KiB of one-byte counters.
pub const MAP_SIZE: usize = 1 << 16;

/// The map slot of the edge from the branch at `src` to `dst` (both 4-byte aligned).
/// Multiplicative hashing of the two word addresses; the top 16 bits of the product.
#[inline(always)]
pub fn edge_index(src: u64, dst: u64) -> usize {
    let s = ((src >> 2) as u32).wrapping_mul(0x9e37_79b1);
    let h = (s ^ ((dst >> 2) as u32)).wrapping_mul(0x85eb_ca6b);
    (h >> 16) as usize
}

/// One run's hit counters (saturating at 255).
#[derive(Clone)]
pub struct CoverageMap {
    counts: Box<[u8; MAP_SIZE]>,
    /// Known to be all zeros (cleared, and not written since), so clearing it again is
    /// free: a fuzzer hands a map to every execution, and 64 KiB of stores each time were a
    /// tenth of a short target's executions.
    zero: bool,
    /// The 64-byte blocks `hit` wrote since the map was cleared, a bit each; `None` once
    /// the map was written another way (`as_mut_slice`, `add`), which makes it scanned whole.
    /// A fuzzer looks at every run's map: the scan of all 64 KiB for the few hundred blocks a
    /// short target's run touches was a fifth of its executions (docs/performance.md, "A
    /// run's map scanned where it was hit").
    touched: Option<[u64; BLOCKS / 64]>,
}

/// The map's 64-byte blocks.
const BLOCKS: usize = MAP_SIZE / 64;

impl PartialEq for CoverageMap {
    fn eq(&self, other: &Self) -> bool {
        self.counts[..] == other.counts[..]
    }
}

impl Eq for CoverageMap {}

impl Default for CoverageMap {
    fn default() -> Self {
        CoverageMap {
            counts: vec![0u8; MAP_SIZE]
                .into_boxed_slice()
                .try_into()
                .expect("size"),
            zero: true,
            touched: Some([0; BLOCKS / 64]),
        }
    }
}

impl std::fmt::Debug for CoverageMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CoverageMap({} edges)", self.edges())
    }
}

impl CoverageMap {
    #[inline(always)]
    pub fn hit(&mut self, src: u64, dst: u64) {
        self.zero = false;
        let i = edge_index(src, dst);
        if let Some(t) = self.touched.as_mut() {
            t[i >> 12] |= 1 << ((i >> 6) & 63);
        }
        let c = &mut self.counts[i];
        *c = c.saturating_add(1);
    }
    pub fn clear(&mut self) {
        if !self.zero {
            match self.touched {
                Some(t) => each_block(&t, |b| self.counts[b * 64..b * 64 + 64].fill(0)),
                None => self.counts.fill(0),
            }
            self.zero = true;
        }
        self.touched = Some([0; BLOCKS / 64]);
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.counts[..]
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.zero = false;
        self.touched = None;
        &mut self.counts[..]
    }
    /// Calls `f` with each hit slot and its count, in slot order (see `each_hit`), over the
    /// blocks `hit` touched where those are known.
    fn each_hit(&self, mut f: impl FnMut(usize, u8) -> std::ops::ControlFlow<()>) {
        match &self.touched {
            Some(t) => {
                let mut stop = false;
                each_block(t, |b| {
                    if !stop {
                        let base = b * 64;
                        each_hit(&self.counts[base..base + 64], |i, c| {
                            let r = f(base + i, c);
                            stop = r.is_break();
                            r
                        });
                    }
                });
            }
            None => each_hit(&self.counts[..], f),
        }
    }
    /// Slots hit at least once.
    pub fn edges(&self) -> usize {
        self.counts.iter().filter(|&&c| c != 0).count()
    }
    /// Adds the counts of `other` (saturating): a GPU lane's map and the part the host ran
    /// for it make the map the CPU engine records.
    pub fn add(&mut self, other: &[u8]) {
        self.zero = false;
        self.touched = None;
        for (c, &o) in self.counts.iter_mut().zip(other) {
            *c = c.saturating_add(o);
        }
    }
    /// What this map adds to `virgin`; a map that adds nothing is cleared on the way (only
    /// the blocks it hit are written), so a fuzzer's worker gives it back ready for the
    /// next execution in one pass over it instead of two.
    pub fn novelty_or_clear(&mut self, virgin: &Virgin) -> Novelty {
        let mut blocks = [0u64; BLOCKS / 64];
        let mut n = Novelty::None;
        self.each_hit(|i, c| {
            blocks[i / 4096] |= 1 << ((i / 64) % 64);
            let s = virgin.seen[i];
            if s == 0 {
                n = Novelty::NewEdges;
                return std::ops::ControlFlow::Break(());
            }
            if s & bucket(c) == 0 {
                n = Novelty::NewCounts;
            }
            std::ops::ControlFlow::Continue(())
        });
        if n == Novelty::None {
            each_block(&blocks, |b| self.counts[b * 64..b * 64 + 64].fill(0));
            self.zero = true;
            self.touched = Some([0; BLOCKS / 64]);
        }
        n
    }
    /// [`path_hash`] of this map.
    pub fn path_hash(&self) -> u32 {
        let mut h = 0u32;
        self.each_hit(|i, c| {
            h = h.wrapping_add(slot_mix(i as u32, c));
            std::ops::ControlFlow::Continue(())
        });
        h
    }
}

/// A hash of the edges a run took and their hit-count buckets, the same for the same path
/// whatever the order the edges were found in: the sum over hit slots of a mix of (slot,
/// bucket). The GPU kernels compute it beside the map (a sum parallelizes), so a fuzzer can
/// tell paths apart without moving maps to the host.
pub fn path_hash(map: &[u8]) -> u32 {
    let mut h = 0u32;
    each_hit(map, |i, c| {
        h = h.wrapping_add(slot_mix(i as u32, c));
        std::ops::ControlFlow::Continue(())
    });
    h
}

/// murmur3's finalizer over (slot << 8 | bucket).
#[inline]
pub fn slot_mix(slot: u32, count: u8) -> u32 {
    let mut h = (slot << 8) | u32::from(bucket(count));
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The operands of compares one run made (CmpLog, for input-to-state mutations: an input
/// byte pattern equal to one operand is replaced by the other). Recorded at every
/// flag-setting add and subtract (CMP, CMN, CCMP, ADDS, SUBS), each pair once, up to
/// [`CmpLog::CAP`] pairs.
#[derive(Clone, Debug, Default)]
pub struct CmpLog {
    pairs: Vec<(u64, u64)>,
    seen: std::collections::HashSet<(u64, u64)>,
}

impl CmpLog {
    pub const CAP: usize = 4096;

    /// A flag-setting `a + b + carry` of `bits` bits: with carry 1 it compares `a` with
    /// `!b` (SUBS/CMP), with carry 0 `a` with `-b` (ADDS/CMN).
    #[inline]
    pub fn flags(&mut self, a: u64, b: u64, carry: u64, bits: u32) {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let other = if carry != 0 { !b } else { b.wrapping_neg() };
        let (a, other) = (a & mask, other & mask);
        if a != other && self.pairs.len() < Self::CAP && self.seen.insert((a, other)) {
            self.pairs.push((a, other));
        }
    }

    /// The distinct operand pairs, in the order first seen.
    pub fn pairs(&self) -> &[(u64, u64)] {
        &self.pairs
    }

    pub fn clear(&mut self) {
        self.pairs.clear();
        self.seen.clear();
    }
}

/// AFL's hit-count class of a counter, as one bit (0 for no hits).
#[inline]
pub fn bucket(count: u8) -> u8 {
    match count {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        _ => 128,
    }
}

/// Calls `f(slot, count)` for every slot of `map` that was hit, in slot order; stops when
/// `f` says so. Most of a map is zero: 64 bytes at a time are tested as one (the OR of eight
/// words, which the compiler vectorizes), then the hit bytes of a non-zero word are found by
/// their trailing zeros. This scan is what a fuzzer does once per execution, so it is kept
/// tight (the iterator it replaced took a third of a 2-core fuzz run in the merge alone).
#[inline]
fn each_hit(map: &[u8], mut f: impl FnMut(usize, u8) -> std::ops::ControlFlow<()>) {
    for (blk, block) in map.chunks_exact(64).enumerate() {
        let mut words = [0u64; 8];
        for (w, c) in words.iter_mut().zip(block.chunks_exact(8)) {
            *w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        if words.iter().fold(0, |a, w| a | w) == 0 {
            continue;
        }
        for (k, &w) in words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let byte = (w.trailing_zeros() / 8) as usize;
                if f(blk * 64 + k * 8 + byte, (w >> (8 * byte)) as u8).is_break() {
                    return;
                }
                w &= !(0xffu64 << (8 * byte));
            }
        }
    }
}

/// Calls `f` with the number of each block whose bit is set in `bits`, in order.
#[inline]
fn each_block(bits: &[u64; BLOCKS / 64], mut f: impl FnMut(usize)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            f(w * 64 + word.trailing_zeros() as usize);
            word &= word - 1;
        }
    }
}

/// What a run's map added to what was seen before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Novelty {
    None,
    /// A known edge ran a new number of times (a new bucket).
    NewCounts,
    /// An edge never seen before.
    NewEdges,
}

/// The buckets every edge has been seen in, over all runs so far.
#[derive(Clone)]
pub struct Virgin {
    seen: Box<[u8; MAP_SIZE]>,
    edges: usize,
}

impl Default for Virgin {
    fn default() -> Self {
        Virgin {
            seen: vec![0u8; MAP_SIZE]
                .into_boxed_slice()
                .try_into()
                .expect("size"),
            edges: 0,
        }
    }
}

impl Virgin {
    /// What `map` adds, without recording it.
    pub fn novelty(&self, map: &[u8]) -> Novelty {
        use std::ops::ControlFlow::{Break, Continue};
        let mut n = Novelty::None;
        each_hit(map, |i, c| {
            let s = self.seen[i];
            if s == 0 {
                n = Novelty::NewEdges;
                return Break(());
            }
            if s & bucket(c) == 0 {
                n = Novelty::NewCounts;
            }
            Continue(())
        });
        n
    }

    /// Records `map`; returns what it added.
    pub fn merge(&mut self, map: &[u8]) -> Novelty {
        let mut n = Novelty::None;
        let (seen, edges) = (&mut self.seen, &mut self.edges);
        each_hit(map, |i, c| {
            let s = &mut seen[i];
            if *s == 0 {
                *edges += 1;
                n = Novelty::NewEdges;
            } else if *s & bucket(c) == 0 && n == Novelty::None {
                n = Novelty::NewCounts;
            }
            *s |= bucket(c);
            std::ops::ControlFlow::Continue(())
        });
        n
    }

    /// Edges seen so far.
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// The buckets seen, slot by slot (what a GPU kernel compares lanes' maps with).
    pub fn seen(&self) -> &[u8] {
        &self.seen[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_spread_and_depend_on_both_ends() {
        let a = edge_index(0x400000, 0x400010);
        assert_ne!(a, edge_index(0x400010, 0x400000));
        assert_ne!(a, edge_index(0x400000, 0x400014));
        let mut slots = std::collections::HashSet::new();
        for i in 0..4096u64 {
            slots.insert(edge_index(0x400000 + 4 * i, 0x400004 + 4 * i));
        }
        // straight-line fall-through edges of 4,096 branches barely collide
        assert!(slots.len() > 3900, "{}", slots.len());
    }

    #[test]
    fn cmplog_takes_compare_operands_once() {
        let mut l = CmpLog::default();
        // cmp w1, #0x41 is adds w, w1, #!0x41 with carry 1
        l.flags(0x30, !0x41u64, 1, 32);
        l.flags(0x30, !0x41u64, 1, 32);
        // cmn x1, #5 compares x1 with -5
        l.flags(7, 5, 0, 64);
        // equal operands say nothing
        l.flags(9, !9u64, 1, 64);
        assert_eq!(l.pairs(), &[(0x30, 0x41), (7, 5u64.wrapping_neg())]);
    }

    #[test]
    fn virgin_reports_new_edges_then_new_counts_then_nothing() {
        let mut v = Virgin::default();
        let mut m = CoverageMap::default();
        m.hit(0x1000, 0x2000);
        assert_eq!(v.merge(m.as_slice()), Novelty::NewEdges);
        assert_eq!(v.edges(), 1);
        assert_eq!(v.merge(m.as_slice()), Novelty::None);
        for _ in 0..5 {
            m.hit(0x1000, 0x2000);
        }
        assert_eq!(v.novelty(m.as_slice()), Novelty::NewCounts);
        assert_eq!(v.merge(m.as_slice()), Novelty::NewCounts);
        assert_eq!(v.merge(m.as_slice()), Novelty::None);
        for _ in 0..300 {
            m.hit(0x1000, 0x2000);
        }
        assert_eq!(m.as_slice()[edge_index(0x1000, 0x2000)], 255);
    }

    /// The slot-by-slot definitions the word scan must agree with.
    fn naive(v: &Virgin, map: &[u8]) -> (Novelty, u32) {
        let mut n = Novelty::None;
        let mut h = 0u32;
        for (i, &c) in map.iter().enumerate() {
            if c == 0 {
                continue;
            }
            h = h.wrapping_add(slot_mix(i as u32, c));
            if v.seen[i] == 0 {
                n = Novelty::NewEdges;
            } else if v.seen[i] & bucket(c) == 0 && n == Novelty::None {
                n = Novelty::NewCounts;
            }
        }
        (n, h)
    }

    proptest::proptest! {
        /// Sparse maps (hits anywhere, the first and last slots of blocks included) against
        /// a virgin map made of other such maps: novelty, merge, the path hash and clearing.
        #[test]
        fn the_word_scan_agrees_with_slot_by_slot(
            earlier in proptest::collection::vec(
                proptest::collection::vec((0usize..MAP_SIZE, 1u8..=255), 0..40), 0..4),
            hits in proptest::collection::vec((0usize..MAP_SIZE, 1u8..=255), 0..40),
            edges_of_blocks in proptest::collection::vec(0usize..MAP_SIZE / 64, 0..4),
        ) {
            let mut v = Virgin::default();
            for e in &earlier {
                let mut m = CoverageMap::default();
                for &(i, c) in e {
                    m.as_mut_slice()[i] = c;
                }
                v.merge(m.as_slice());
            }
            let mut m = CoverageMap::default();
            for &(i, c) in &hits {
                m.as_mut_slice()[i] = c;
            }
            for &b in &edges_of_blocks {
                m.as_mut_slice()[b * 64] = 1;
                m.as_mut_slice()[b * 64 + 63] = 200;
            }
            let (n, h) = naive(&v, m.as_slice());
            proptest::prop_assert_eq!(v.novelty(m.as_slice()), n);
            proptest::prop_assert_eq!(path_hash(m.as_slice()), h);
            let before = m.clone();
            let edges = v.edges() + m.as_slice().iter().enumerate()
                .filter(|&(i, &c)| c != 0 && v.seen[i] == 0).count();
            let mut merged = v.clone();
            proptest::prop_assert_eq!(merged.merge(m.as_slice()), n);
            proptest::prop_assert_eq!(merged.edges(), edges);
            for (i, &c) in m.as_slice().iter().enumerate() {
                proptest::prop_assert_eq!(merged.seen[i], v.seen[i] | bucket(c));
            }
            // a map with news is left as it was; one without is cleared, and then clearing
            // it again is free and leaves it zero
            proptest::prop_assert_eq!(m.novelty_or_clear(&v), n);
            if n == Novelty::None {
                proptest::prop_assert!(m.as_slice().iter().all(|&c| c == 0));
                m.clear();
                proptest::prop_assert!(m.as_slice().iter().all(|&c| c == 0));
            } else {
                proptest::prop_assert!(m == before);
            }
        }
    }

    proptest::proptest! {
        /// Maps written by `hit`, which scan only the blocks it touched, agree with the same
        /// counts written through the slice (scanned whole): novelty, the path hash, clearing,
        /// and the next runs on the same map after it was cleared.
        #[test]
        fn touched_blocks_agree_with_the_whole_map(
            earlier in proptest::collection::vec((0u64..1 << 20, 0u64..1 << 20), 0..60),
            runs in proptest::collection::vec(
                proptest::collection::vec((0u64..1 << 20, 0u64..1 << 20, 1usize..300), 0..40), 1..4),
        ) {
            let mut v = Virgin::default();
            let mut seen = CoverageMap::default();
            for &(s, d) in &earlier {
                seen.hit(s * 4, d * 4);
            }
            v.merge(seen.as_slice());
            let mut m = CoverageMap::default();
            for run in &runs {
                for &(s, d, k) in run {
                    for _ in 0..k {
                        m.hit(s * 4, d * 4);
                    }
                }
                let mut whole = CoverageMap::default();
                whole.as_mut_slice().copy_from_slice(m.as_slice());
                proptest::prop_assert_eq!(m.path_hash(), path_hash(m.as_slice()));
                proptest::prop_assert_eq!(m.path_hash(), whole.path_hash());
                let n = m.novelty_or_clear(&v);
                proptest::prop_assert_eq!(n, whole.novelty_or_clear(&v));
                proptest::prop_assert!(m == whole);
                m.clear();
                proptest::prop_assert!(m.as_slice().iter().all(|&c| c == 0));
            }
        }
    }

    #[test]
    fn a_cleared_map_written_again_is_cleared_again() {
        let mut m = CoverageMap::default();
        m.clear();
        m.hit(0x1000, 0x2000);
        m.clear();
        assert!(m.as_slice().iter().all(|&c| c == 0));
        m.as_mut_slice()[7] = 3;
        m.clear();
        assert!(m.as_slice().iter().all(|&c| c == 0));
        m.add(&[1; 16]);
        m.clear();
        assert!(m.as_slice().iter().all(|&c| c == 0));
    }
}
