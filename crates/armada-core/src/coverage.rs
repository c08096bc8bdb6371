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
#[derive(Clone, PartialEq, Eq)]
pub struct CoverageMap(Box<[u8; MAP_SIZE]>);

impl Default for CoverageMap {
    fn default() -> Self {
        CoverageMap(
            vec![0u8; MAP_SIZE]
                .into_boxed_slice()
                .try_into()
                .expect("size"),
        )
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
        let c = &mut self.0[edge_index(src, dst)];
        *c = c.saturating_add(1);
    }
    pub fn clear(&mut self) {
        self.0.fill(0);
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.0[..]
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0[..]
    }
    /// Slots hit at least once.
    pub fn edges(&self) -> usize {
        self.0.iter().filter(|&&c| c != 0).count()
    }
    /// Adds the counts of `other` (saturating): a GPU lane's map and the part the host ran
    /// for it make the map the CPU engine records.
    pub fn add(&mut self, other: &[u8]) {
        for (c, &o) in self.0.iter_mut().zip(other) {
            *c = c.saturating_add(o);
        }
    }
    /// [`path_hash`] of this map.
    pub fn path_hash(&self) -> u32 {
        path_hash(self.as_slice())
    }
}

/// A hash of the edges a run took and their hit-count buckets, the same for the same path
/// whatever the order the edges were found in: the sum over hit slots of a mix of (slot,
/// bucket). The GPU kernels compute it beside the map (a sum parallelizes), so a fuzzer can
/// tell paths apart without moving maps to the host.
pub fn path_hash(map: &[u8]) -> u32 {
    hit_slots(map).fold(0u32, |h, i| h.wrapping_add(slot_mix(i as u32, map[i])))
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

/// The slots of `map` that were hit, found eight at a time (most of a map is zero).
fn hit_slots(map: &[u8]) -> impl Iterator<Item = usize> + '_ {
    map.chunks_exact(8).enumerate().flat_map(move |(w, chunk)| {
        let word = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
        let base = w * 8;
        (0..8)
            .filter(move |_| word != 0)
            .map(move |k| base + k)
            .filter(move |&i| map[i] != 0)
    })
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
        let mut n = Novelty::None;
        for i in hit_slots(map) {
            let c = map[i];
            let b = bucket(c);
            let s = self.seen[i];
            if s == 0 {
                return Novelty::NewEdges;
            }
            if s & b == 0 {
                n = Novelty::NewCounts;
            }
        }
        n
    }

    /// Records `map`; returns what it added.
    pub fn merge(&mut self, map: &[u8]) -> Novelty {
        let mut n = Novelty::None;
        for i in hit_slots(map) {
            let c = map[i];
            let b = bucket(c);
            let s = &mut self.seen[i];
            if *s == 0 {
                self.edges += 1;
                n = Novelty::NewEdges;
            } else if *s & b == 0 && n == Novelty::None {
                n = Novelty::NewCounts;
            }
            *s |= b;
        }
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
}
