//! The decoder: a declarative encoding table, one line per encoding.
//!
//! Each line names the instruction as the Arm ARM does, gives its 32-bit pattern, and a
//! function that builds the micro-op from the named fields. Pattern letters follow dynarmic's
//! `a64.inc` convention: `0`/`1` are fixed bits, `-` is any bit, and a run of one letter is a
//! field named by that letter (read with `f.get('d')`). The files under this module are named
//! after the Arm ARM's encoding classes, and within a table the first matching line wins, so
//! aliases and more specific forms come before the general ones.

mod branch_sys;
mod dp_imm;
mod dp_reg;
mod fp;
mod ldst;
mod simd;

use crate::uop::{reg, MicroOp};
use std::sync::OnceLock;

/// One line of the encoding table.
pub struct Encoding {
    pub name: &'static str,
    pub pattern: &'static str,
    pub build: fn(&Fields) -> Option<MicroOp>,
}

/// Shorthand for a table line.
pub const fn enc(
    name: &'static str,
    pattern: &'static str,
    build: fn(&Fields) -> Option<MicroOp>,
) -> Encoding {
    Encoding {
        name,
        pattern,
        build,
    }
}

/// The decoded fields of one instruction word, read by letter.
pub struct Fields<'a> {
    pub word: u32,
    /// Address of the instruction (for PC-relative forms).
    pub pc: u64,
    layout: &'a Layout,
}

impl Fields<'_> {
    /// The field named `c`, right-aligned. Panics if the pattern has no such field: that is a
    /// bug in the table, caught by the table tests.
    #[inline]
    pub fn get(&self, c: char) -> u32 {
        let (shift, width) = self.layout.field(c);
        (self.word >> shift) & ((1u64 << width) - 1) as u32
    }
    /// The field named `c`, sign-extended from its width.
    pub fn sget(&self, c: char) -> i64 {
        let (_, width) = self.layout.field(c);
        let v = self.get(c) as i64;
        (v << (64 - width)) >> (64 - width)
    }
    /// Register field `c` where 31 means the zero register, as a source.
    pub fn rz(&self, c: char) -> u8 {
        let r = self.get(c) as u8;
        if r == 31 {
            reg::ZR
        } else {
            r
        }
    }
    /// Register field `c` where 31 means the zero register, as a destination.
    pub fn wz(&self, c: char) -> u8 {
        let r = self.get(c) as u8;
        if r == 31 {
            reg::SINK
        } else {
            r
        }
    }
    /// Register field `c` where 31 means SP (source or destination).
    pub fn rsp(&self, c: char) -> u8 {
        self.get(c) as u8
    }
    /// Plain 5-bit register number (FP/SIMD registers).
    pub fn r(&self, c: char) -> u8 {
        self.get(c) as u8
    }
}

/// Where each lettered field sits in the word: (shift, width) by letter.
struct Layout {
    name: &'static str,
    fields: Vec<(char, u32, u32)>,
}

impl Layout {
    fn field(&self, c: char) -> (u32, u32) {
        self.fields
            .iter()
            .find(|f| f.0 == c)
            .map(|f| (f.1, f.2))
            .unwrap_or_else(|| panic!("encoding table: {} has no field '{c}'", self.name))
    }
}

struct Compiled {
    mask: u32,
    value: u32,
    layout: Layout,
    enc: &'static Encoding,
}

fn compile(e: &'static Encoding) -> Compiled {
    let bits: Vec<char> = e.pattern.chars().filter(|c| *c != ' ').collect();
    assert_eq!(bits.len(), 32, "pattern of {} is not 32 bits", e.name);
    let mut mask = 0u32;
    let mut value = 0u32;
    let mut fields: Vec<(char, u32, u32)> = Vec::new();
    for (i, &c) in bits.iter().enumerate() {
        let bit = 31 - i as u32;
        match c {
            '0' => mask |= 1 << bit,
            '1' => {
                mask |= 1 << bit;
                value |= 1 << bit;
            }
            '-' => {}
            letter => {
                if let Some(f) = fields.iter_mut().find(|f| f.0 == letter) {
                    assert_eq!(f.1, bit + 1, "field '{letter}' of {} is split", e.name);
                    f.1 = bit;
                    f.2 += 1;
                } else {
                    fields.push((letter, bit, 1));
                }
            }
        }
    }
    Compiled {
        mask,
        value,
        layout: Layout {
            name: e.name,
            fields,
        },
        enc: e,
    }
}

/// Every table, in the order they are searched.
fn tables() -> [&'static [Encoding]; 6] {
    [
        branch_sys::TABLE,
        dp_imm::TABLE,
        dp_reg::TABLE,
        ldst::TABLE,
        fp::TABLE,
        simd::TABLE,
    ]
}

/// The table bucketed by bits [28:25] (the top-level `op0` of the A64 encoding index), so a
/// lookup scans only the lines that can match.
struct Decoder {
    buckets: Vec<Vec<Compiled>>,
}

fn decoder() -> &'static Decoder {
    static D: OnceLock<Decoder> = OnceLock::new();
    D.get_or_init(|| {
        let mut buckets: Vec<Vec<Compiled>> = (0..16).map(|_| Vec::new()).collect();
        for table in tables() {
            for e in table {
                for (op0, bucket) in buckets.iter_mut().enumerate() {
                    let c = compile(e);
                    let m = (c.mask >> 25) & 15;
                    let v = (c.value >> 25) & 15;
                    if (op0 as u32) & m == v {
                        bucket.push(c);
                    }
                }
            }
        }
        Decoder { buckets }
    })
}

/// Decodes one instruction word at `pc`. Never fails: an encoding that is not implemented
/// becomes an `UNDEFINED` micro-op carrying the word.
pub fn decode(word: u32, pc: u64) -> MicroOp {
    decode_named(word, pc).0
}

/// Decodes and also returns the manual name of the encoding that matched.
pub fn decode_named(word: u32, pc: u64) -> (MicroOp, &'static str) {
    let d = decoder();
    for c in &d.buckets[((word >> 25) & 15) as usize] {
        if word & c.mask == c.value {
            let f = Fields {
                word,
                pc,
                layout: &c.layout,
            };
            if let Some(u) = (c.enc.build)(&f) {
                return (u, c.enc.name);
            }
        }
    }
    (MicroOp::undefined(word), "UNDEFINED")
}

/// Number of lines in the encoding table.
pub fn table_len() -> usize {
    tables().iter().map(|t| t.len()).sum()
}

/// Decodes `bits` replicated bitmask immediates (the logical-immediate `N:immr:imms`
/// encoding). Returns None for reserved encodings.
pub fn decode_bit_masks(n: u32, imms: u32, immr: u32, datasize: u32) -> Option<u64> {
    let combined = (n << 6) | (!imms & 0x3f);
    if combined == 0 {
        return None;
    }
    let len = 31 - combined.leading_zeros();
    if len < 1 {
        return None;
    }
    let esize = 1u32 << len;
    if esize > datasize {
        return None;
    }
    let levels = esize - 1;
    let s = imms & levels;
    let r = immr & levels;
    if s == levels {
        return None;
    }
    let welem: u64 = if s + 1 == 64 {
        u64::MAX
    } else {
        (1u64 << (s + 1)) - 1
    };
    let emask = if esize == 64 {
        u64::MAX
    } else {
        (1u64 << esize) - 1
    };
    let rotated = if r == 0 {
        welem
    } else {
        ((welem >> r) | (welem << (esize - r))) & emask
    };
    let mut out = 0u64;
    let mut i = 0;
    while i < datasize {
        out |= rotated << i;
        i += esize;
    }
    if datasize == 32 {
        out &= 0xffff_ffff;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles_and_builds_without_panicking() {
        // Compiling checks widths and contiguous fields; building each line with its fixed
        // bits and all-zero and all-one fields checks that every letter a builder reads exists.
        for table in tables() {
            for e in table {
                let c = compile(e);
                for fill in [0u32, !0u32, 0x5555_5555, 0xaaaa_aaaa] {
                    let word = c.value | (fill & !c.mask);
                    let f = Fields {
                        word,
                        pc: 0x40_0000,
                        layout: &c.layout,
                    };
                    let _ = (e.build)(&f);
                }
            }
        }
    }

    #[test]
    fn bitmask_immediates() {
        // and x0, x0, #0xff  -> N=1 immr=0 imms=7
        assert_eq!(decode_bit_masks(1, 7, 0, 64), Some(0xff));
        // and w0, w0, #0x80000001 -> N=0 immr=1 imms=1
        assert_eq!(decode_bit_masks(0, 1, 1, 32), Some(0x8000_0001));
        // 0x5555... pattern: esize 2
        assert_eq!(
            decode_bit_masks(0, 0b111100, 0, 64),
            Some(0x5555_5555_5555_5555)
        );
        assert_eq!(decode_bit_masks(0, 0b111111, 0, 64), None);
    }
}
