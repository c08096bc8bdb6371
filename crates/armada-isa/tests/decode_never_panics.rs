//! Every 32-bit word decodes to some micro-op without panicking: unknown encodings become
//! UNDEFINED carrying the word, never a crash.

use armada_isa::{decode, ops};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200_000))]
    #[test]
    fn any_word_decodes(word in any::<u32>(), pc in any::<u64>()) {
        let u = decode(word, pc & !3);
        if u.op == ops::UNDEFINED {
            prop_assert_eq!(u.imm, word as u64);
        }
    }
}

#[test]
fn udf_zero_is_undefined() {
    let u = decode(0, 0x1000);
    assert_eq!(u.op, ops::UNDEFINED);
}

#[test]
fn sweep_of_structured_words_decodes() {
    // Walk every value of the top 12 bits with a few fillers for the rest: this touches
    // every line of the table with many field combinations.
    for top in 0u32..4096 {
        for low in [0u32, 0xfffff, 0x5a5a5, 0xa5a5a, 0x12345, 0x7c1f] {
            let _ = decode(top << 20 | low, 0x40_0000);
        }
    }
}
