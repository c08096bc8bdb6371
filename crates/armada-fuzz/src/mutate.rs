//! Mutations, taken from LibAFL: its havoc mutators (bit and byte flips, arithmetic,
//! interesting values, block insert/delete/copy), splicing with other corpus entries
//! (its crossover mutators) and dictionary tokens, stacked by its scheduled mutator. We
//! keep LibAFL's state only for what the mutators read: the random generator, the corpus
//! they splice from, the tokens and the size cap. Scheduling, execution and feedback are
//! armada's (they run a batch of inputs at once, which LibAFL's one-input executors do not).

use anyhow::{anyhow, Result};
use libafl::corpus::{Corpus, InMemoryCorpus, Testcase};
use libafl::feedbacks::ConstFeedback;
use libafl::inputs::{BytesInput, HasMutatorBytes};
use libafl::mutators::{
    havoc_mutations, tokens_mutations, HavocScheduledMutator, I2SRandReplace, MutationResult,
    Mutator, Tokens,
};
use libafl::observers::cmp::{CmpValues, CmpValuesMetadata};
use libafl::state::{HasCorpus, HasMaxSize, StdState};
use libafl::HasMetadata;
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::Merge;

/// Mutations stacked per input: 2^(1 + [0, MAX_STACK_POW)).
const MAX_STACK_POW: usize = 4;

type State = StdState<InMemoryCorpus<BytesInput>, BytesInput, StdRand, InMemoryCorpus<BytesInput>>;

/// Makes new inputs from corpus entries.
pub struct Mutations {
    state: State,
    mutator: Box<dyn Mutator<BytesInput, State>>,
    i2s: I2SRandReplace,
}

impl Mutations {
    /// `seed` fixes the sequence of mutations; `tokens` is the dictionary.
    pub fn new(seed: u64, tokens: Vec<Vec<u8>>, max_len: usize) -> Result<Mutations> {
        let mut feedback = ConstFeedback::new(false);
        let mut objective = ConstFeedback::new(false);
        let mut state = StdState::new(
            StdRand::with_seed(seed),
            InMemoryCorpus::<BytesInput>::new(),
            InMemoryCorpus::new(),
            &mut feedback,
            &mut objective,
        )
        .map_err(|e| anyhow!("setting up the mutators: {e}"))?;
        state.set_max_size(max_len.max(1));
        if !tokens.is_empty() {
            state.add_metadata(Tokens::from(tokens));
        }
        // 2 to 16 stacked mutations (LibAFL's default goes to 128): small steps keep
        // the structure a parent's find depends on; measured in docs/fuzzing.md.
        let mutator = HavocScheduledMutator::with_max_stack_pow(
            havoc_mutations().merge(tokens_mutations()),
            MAX_STACK_POW,
        );
        Ok(Mutations {
            state,
            mutator: Box::new(mutator),
            i2s: I2SRandReplace,
        })
    }

    /// Adds a corpus entry to splice from.
    pub fn add(&mut self, input: &[u8]) {
        let _ = self
            .state
            .corpus_mut()
            .add(Testcase::new(BytesInput::new(input.to_vec())));
    }

    /// Sets the compare operands (from `Target::trace` of a parent) that
    /// [`Mutations::mutate_i2s`] uses, each at the narrowest width that holds both.
    pub fn set_compares(&mut self, pairs: &[(u64, u64)]) {
        let list = pairs
            .iter()
            .map(|&(a, b)| match a.max(b) {
                m if m <= 0xff => CmpValues::U8((a as u8, b as u8, false)),
                m if m <= 0xffff => CmpValues::U16((a as u16, b as u16, false)),
                m if m <= 0xffff_ffff => CmpValues::U32((a as u32, b as u32, false)),
                _ => CmpValues::U64((a, b, false)),
            })
            .collect();
        self.state
            .metadata_map_mut()
            .insert(CmpValuesMetadata { list });
    }

    /// An input-to-state mutant of `parent`: where the parent's bytes equal one operand of
    /// a compare it ran, the other operand (so a magic value or length check passes in one
    /// step). A havoc mutant when none applies.
    pub fn mutate_i2s(&mut self, parent: &[u8]) -> Vec<u8> {
        let mut i = BytesInput::new(parent.to_vec());
        if let Ok(MutationResult::Mutated) = self.i2s.mutate(&mut self.state, &mut i) {
            let out = i.mutator_bytes().to_vec();
            if out != parent {
                return out;
            }
        }
        self.mutate(parent)
    }

    /// A mutant of `parent` (a different input whenever the mutators manage one).
    pub fn mutate(&mut self, parent: &[u8]) -> Vec<u8> {
        for _ in 0..8 {
            let mut i = BytesInput::new(parent.to_vec());
            if let Ok(MutationResult::Mutated) = self.mutator.mutate(&mut self.state, &mut i) {
                let out = i.mutator_bytes().to_vec();
                if out != parent {
                    return out;
                }
            }
        }
        // the mutators skipped (an empty parent, say): one random byte
        let mut out = parent.to_vec();
        out.push(
            (self.state.corpus().count() as u8)
                .wrapping_mul(31)
                .wrapping_add(7),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_differ_and_repeat_with_the_seed() {
        let run = |seed| {
            let mut m = Mutations::new(seed, vec![b"MAGIC".to_vec()], 64).unwrap();
            m.add(b"hello world");
            m.add(b"another entry");
            (0..50)
                .map(|_| m.mutate(b"hello world"))
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert!(a.iter().all(|x| x != b"hello world" && x.len() <= 64));
        let mut m = Mutations::new(1, vec![], 16).unwrap();
        assert!(!m.mutate(b"").is_empty());
    }
}
