//! A translation unit: the code reachable from one entry inside one page of decoded
//! micro-ops (of it, what has run; see [`scan`]), cut into basic blocks.
//!
//! From the entry, direct branch targets and fall-throughs inside the page are followed,
//! up to [`MAX_SLOTS`] slots. A block runs from a leader (the entry, a branch target, the
//! slot after a conditional branch) to its terminator, the next leader, or the page's end.
//! Calls, indirect branches, SVC and targets outside the unit leave it; the dispatcher finds
//! the next unit. Keeping a unit inside one page means one page's bytes stand for all of it
//! (see `store`).

use armada_isa::{ops, MicroOp};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Slots one unit may take in, so that a long straight function does not cost one long
/// compile before it runs once.
pub const MAX_SLOTS: usize = 512;

/// How a slot's micro-op ends its block, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// Not a branch: the block goes on.
    None,
    /// B: always to `imm`.
    Jump(u64),
    /// B.cond, CBZ/CBNZ, TBZ/TBNZ: to `imm` or the next slot.
    Cond(u64),
    /// BL: x30 is set, then to `imm` (leaves the unit).
    Call(u64),
    /// BR, BLR (and RET): to a register (leaves the unit).
    Indirect,
    /// SVC: retires, then the unit leaves for the syscall.
    Syscall,
    /// An op the interpreter must run itself (HLT, BRK, UNDEFINED, a slot not decoded, the
    /// region's end): the unit leaves with the PC at it, not retired.
    Stop,
}

pub fn term(u: &MicroOp) -> Term {
    match u.op {
        ops::B => Term::Jump(u.imm),
        ops::B_COND
        | ops::CBZ_W
        | ops::CBZ_X
        | ops::CBNZ_W
        | ops::CBNZ_X
        | ops::TBZ
        | ops::TBNZ => Term::Cond(u.imm),
        ops::BL => Term::Call(u.imm),
        ops::BR | ops::BLR => Term::Indirect,
        ops::SVC => Term::Syscall,
        ops::HLT | ops::BRK | ops::UNDEFINED | ops::NOT_DECODED | ops::END_OF_REGION => Term::Stop,
        // the fused compare + B.cond pairs are compares here (their B.cond keeps its slot);
        // a private op of the CPU engine this tier does not know runs on the interpreter
        op if op > ops::PRFM && op < ops::FP_BASE && crate::alu::base_of(op).is_none() => {
            Term::Stop
        }
        _ => Term::None,
    }
}

/// One basic block: slots `start..end` (`end` excluded), the last of which may be its
/// terminator.
#[derive(Clone, Debug)]
pub struct BlockSpan {
    pub start: usize,
    pub end: usize,
    /// The terminator at `end - 1`, or `Term::None` when the block falls into the next
    /// leader or runs off the page, or `Term::Stop` when it ends before a stop op (which
    /// is then not part of it).
    pub term: Term,
}

impl BlockSpan {
    /// Instructions the block retires when it runs to its end.
    pub fn retires(&self) -> u64 {
        (self.end - self.start) as u64
    }
}

pub struct Unit {
    /// The page's first address; slot `i` is at `base + 4 * i`.
    pub base: u64,
    pub entry: usize,
    /// Blocks by leader slot.
    pub blocks: Vec<BlockSpan>,
}

impl Unit {
    pub fn pc(&self, slot: usize) -> u64 {
        self.base + slot as u64 * 4
    }

    /// The slot of `target` if a block of this unit starts there.
    pub fn block_at(&self, target: u64) -> Option<usize> {
        let off = target.wrapping_sub(self.base);
        if off & 3 != 0 {
            return None;
        }
        let slot = usize::try_from(off / 4).ok()?;
        self.blocks
            .binary_search_by_key(&slot, |b| b.start)
            .ok()
            .map(|_| slot)
    }
}

/// The most instructions one budget check may cover past its own block (see
/// [`Unit::budget_checks`]): when a check fails, the interpreter runs the rest of the
/// budget, so this bounds what a turn's end costs.
pub const CHECK_SPAN: u64 = 64;

impl Unit {
    /// The slots of the unit's blocks that `span` may go to next.
    pub fn successors(&self, span: &BlockSpan) -> impl Iterator<Item = usize> + '_ {
        let next = self.pc(span.end);
        let targets = match span.term {
            Term::None | Term::Stop => [Some(next), None],
            Term::Jump(t) => [Some(t), None],
            Term::Cond(t) => [Some(t), Some(next)],
            _ => [None, None],
        };
        targets
            .into_iter()
            .flatten()
            .filter_map(|t| self.block_at(t))
    }

    /// The unit's other entries, in slot order: the heads of its loops (blocks a branch
    /// goes back to). The interpreter counts the heads of the loops it runs as entries,
    /// and a loop left for the interpreter (a block not in the unit) comes back in at
    /// one. Entering the unit there, rather than making a unit of each, compiles the code
    /// once: bzip2 made a fifth of its units at the heads of loops of units it had.
    ///
    /// (The blocks after calls are not entries: taking them into the unit took in code
    /// that ran a few times, and xz and perl compiled more, not less.)
    pub fn entries(&self) -> Vec<usize> {
        let mut e = BTreeSet::new();
        for span in &self.blocks {
            e.extend(self.successors(span).filter(|&s| s <= span.start));
        }
        e.remove(&self.entry);
        e.into_iter().collect()
    }

    /// The blocks that check the instruction budget on entry, each with the count it checks
    /// for: the most instructions that can retire from there before the next check or a
    /// way out of the unit. The entries check (so each turn of a loop does); from the
    /// others, edges go only forward, so the longest path is found in one pass from the
    /// last block back. A path longer than [`CHECK_SPAN`]
    /// gets another check. The other blocks check nothing: a check is a load, an add, a
    /// compare and a branch, on every block.
    pub fn budget_checks(&self) -> HashMap<usize, u64> {
        let mut checks: HashSet<usize> = self.entries().into_iter().collect();
        checks.insert(self.entry);
        let mut longest: HashMap<usize, u64> = HashMap::new();
        for span in self.blocks.iter().rev() {
            let tail = |checks: &HashSet<usize>| {
                self.successors(span)
                    .filter(|s| !checks.contains(s))
                    .map(|s| longest[&s])
                    .max()
                    .unwrap_or(0)
            };
            let mut t = tail(&checks);
            if span.retires() + t > CHECK_SPAN {
                // the blocks after this one check for themselves
                checks.extend(self.successors(span));
                t = 0;
            }
            longest.insert(span.start, span.retires() + t);
        }
        checks.into_iter().map(|s| (s, longest[&s])).collect()
    }
}

/// Finds the unit entered at slot `entry` of a page whose slots are `page` (at `base`).
/// None when the entry's own op must run on the interpreter.
///
/// A branch is followed only to a slot that `follow` accepts; a way out of the unit to
/// one it does not leaves the unit, as a call does. The store follows only blocks that
/// have run: compiling takes tens of microseconds an instruction, and half or more of the
/// code reachable from an entry (error paths, cases that never come) never ran.
pub fn scan(
    page: &[MicroOp],
    base: u64,
    entry: usize,
    follow: impl Fn(usize) -> bool,
) -> Option<Unit> {
    let n = page.len();
    if entry >= n || term(&page[entry]) == Term::Stop {
        return None;
    }
    let in_page = |t: u64| -> Option<usize> {
        let off = t.wrapping_sub(base);
        (off & 3 == 0 && off < n as u64 * 4).then_some((off / 4) as usize)
    };
    let mut leaders = BTreeSet::from([entry]);
    let mut seen = vec![false; n];
    let mut work = vec![entry];
    let mut taken = 0usize;
    while let Some(start) = work.pop() {
        let mut k = start;
        while k < n && !seen[k] {
            seen[k] = true;
            taken += 1;
            let add = |s: usize, leaders: &mut BTreeSet<usize>, work: &mut Vec<usize>| {
                if taken < MAX_SLOTS
                    && term(&page[s]) != Term::Stop
                    && follow(s)
                    && leaders.insert(s)
                {
                    work.push(s);
                }
            };
            match term(&page[k]) {
                Term::None => {
                    k += 1;
                    continue;
                }
                Term::Jump(t) => {
                    if let Some(s) = in_page(t) {
                        add(s, &mut leaders, &mut work);
                    }
                }
                Term::Cond(t) => {
                    if let Some(s) = in_page(t) {
                        add(s, &mut leaders, &mut work);
                    }
                    if k + 1 < n {
                        add(k + 1, &mut leaders, &mut work);
                    }
                }
                _ => {}
            }
            break;
        }
    }
    // a branch into a block that was taken in whole from an earlier leader splits it; a
    // leader that was never reached (the budget of slots ran out) has no block
    let mut blocks = Vec::with_capacity(leaders.len());
    for &l in &leaders {
        if !seen[l] {
            continue;
        }
        let mut k = l;
        let span = loop {
            let t = term(&page[k]);
            if t == Term::Stop {
                break BlockSpan {
                    start: l,
                    end: k,
                    term: Term::Stop,
                };
            }
            if t != Term::None {
                break BlockSpan {
                    start: l,
                    end: k + 1,
                    term: t,
                };
            }
            k += 1;
            if k == n || leaders.contains(&k) || !seen[k] {
                break BlockSpan {
                    start: l,
                    end: k,
                    term: Term::None,
                };
            }
        };
        blocks.push(span);
    }
    Some(Unit {
        base,
        entry,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(op: u16, imm: u64) -> MicroOp {
        let mut u = MicroOp::new(op);
        u.imm = imm;
        u
    }

    /// slot 0: CBZ to 3; 1: NOP; 2: B to 4; 3: NOP; 4: B.cond back to 0; 5: BRK
    fn page() -> Vec<MicroOp> {
        const BASE: u64 = 0x1000;
        vec![
            op(ops::CBZ_X, BASE + 12),
            op(ops::NOP, 0),
            op(ops::B, BASE + 16),
            op(ops::NOP, 0),
            op(ops::B_COND, BASE),
            op(ops::BRK, 0),
        ]
    }

    fn leaders(u: &Unit) -> Vec<usize> {
        u.blocks.iter().map(|b| b.start).collect()
    }

    #[test]
    fn every_reachable_block_when_all_may_be_followed() {
        let u = scan(&page(), 0x1000, 0, |_| true).unwrap();
        assert_eq!(leaders(&u), [0, 1, 3, 4]);
    }

    #[test]
    fn the_entry_checks_for_the_longest_way_round_the_loop() {
        let u = scan(&page(), 0x1000, 0, |_| true).unwrap();
        // 0 -> 1..3 -> 4 is the longest way back to the entry's check
        assert_eq!(u.budget_checks(), HashMap::from([(0, 4)]));
    }

    #[test]
    fn the_heads_of_its_loops_are_a_units_other_entries() {
        // entered at 1: 1..3 -> 4 -> back to 0, which is a loop's head
        let u = scan(&page(), 0x1000, 1, |_| true).unwrap();
        assert_eq!(u.entries(), [0]);
        // entered at the head itself: no other entry
        let u = scan(&page(), 0x1000, 0, |_| true).unwrap();
        assert!(u.entries().is_empty());
    }

    #[test]
    fn a_long_way_gets_more_checks() {
        // 0: CBZ to 70; 1..70: 69 NOPs; 70..100: NOPs; 100: B.cond back to 0; 101: BRK
        let mut p = vec![op(ops::CBZ_X, 0x1000 + 70 * 4)];
        p.extend((1..100).map(|_| op(ops::NOP, 0)));
        p.push(op(ops::B_COND, 0x1000));
        p.push(op(ops::BRK, 0));
        let u = scan(&p, 0x1000, 0, |_| true).unwrap();
        // 1 -> 70 -> 100 would be 100 instructions: 70 checks for itself
        assert_eq!(
            u.budget_checks(),
            HashMap::from([(0, 1), (1, 69), (70, 31)])
        );
    }

    #[test]
    fn only_blocks_it_may_follow() {
        // the branch at 0 was never taken: slot 3 did not run
        let ran = [0, 1, 4];
        let u = scan(&page(), 0x1000, 0, |s| ran.contains(&s)).unwrap();
        assert_eq!(leaders(&u), [0, 1, 4]);
        assert_eq!(u.block_at(0x100c), None);
        // the fall-through that never ran is left out too
        let ran = [0, 3, 4];
        let u = scan(&page(), 0x1000, 0, |s| ran.contains(&s)).unwrap();
        assert_eq!(leaders(&u), [0, 3]);
    }
}
