//! Corpus minimization, as `afl-cmin` does it: a small set of inputs that reaches every
//! edge, in every hit-count bucket, that the whole corpus reaches (`armada fuzz --cmin
//! OUT`). For each (edge, bucket) the smallest input that has it is its candidate; going
//! over the tuples, one not covered yet takes its candidate, and everything that input
//! reaches counts as covered. Inputs that crash or hang are left out (they are crashes,
//! not corpus), and so are inputs whose bytes another input has already.

use std::collections::HashMap;

use anyhow::Result;
use armada_core::coverage::bucket;

use crate::corpus::{content_hash, Named};
use crate::executor::{Executor, Maps};
use crate::target::Outcome;

/// What minimizing found.
#[derive(Debug, Default)]
pub struct Minimized {
    /// Indices into the inputs given, in their order.
    pub kept: Vec<usize>,
    /// Inputs that crashed or hung (left out).
    pub crashed: usize,
    /// Inputs with the same bytes as an earlier one (left out).
    pub duplicates: usize,
    /// (edge, bucket) pairs the corpus reaches.
    pub tuples: usize,
}

/// Runs every input of `inputs` (in rounds of `lanes`) and picks the inputs to keep.
pub fn minimize_corpus(exec: &Executor, inputs: &[Named], lanes: usize) -> Result<Minimized> {
    let mut out = Minimized::default();
    // (edge slot, bucket bit) -> (length, index) of the smallest input with it
    let mut best: HashMap<(u32, u8), (usize, usize)> = HashMap::new();
    let mut tuples_of: HashMap<usize, Vec<(u32, u8)>> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<usize> = (0..inputs.len())
        .filter(|&i| {
            let new = seen.insert(content_hash(&inputs[i].1));
            out.duplicates += usize::from(!new);
            new
        })
        .collect();
    for chunk in unique.chunks(lanes.max(1)) {
        let data: Vec<Vec<u8>> = chunk.iter().map(|&i| inputs[i].1.clone()).collect();
        let results = exec.run(&data, Maps::All)?;
        for (&i, r) in chunk.iter().zip(&results) {
            if !matches!(r.outcome, Outcome::Exited(_)) {
                out.crashed += 1;
                continue;
            }
            let Some(map) = &r.coverage else { continue };
            let len = inputs[i].1.len();
            let mut mine = Vec::new();
            for (slot, &c) in map.as_slice().iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let t = (slot as u32, bucket(c));
                mine.push(t);
                let e = best.entry(t).or_insert((len, i));
                // the smallest, and of equal sizes the first (a repeatable pick)
                if (len, i) < *e {
                    *e = (len, i);
                }
            }
            tuples_of.insert(i, mine);
        }
        exec.recycle(results);
    }
    out.tuples = best.len();
    // (in tuple order: a repeatable pick)
    let mut order: Vec<((u32, u8), usize)> = best.iter().map(|(&t, &(_, i))| (t, i)).collect();
    order.sort_unstable();
    let mut covered = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for (t, i) in order {
        if covered.contains(&t) {
            continue;
        }
        kept.push(i);
        covered.extend(tuples_of[&i].iter().copied());
    }
    kept.sort_unstable();
    out.kept = kept;
    Ok(out)
}
