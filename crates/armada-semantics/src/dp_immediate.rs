//! Data-processing (immediate), the Arm ARM's C4.1.92 classes: add/subtract, logical and
//! move-wide immediates, and extract. The decoder has expanded each immediate (bitmask immediates,
//! shifts), negated SUB's and inverted SUBS's with the carry in field e.

use crate::dp_register::{wm, wn, xm, xn};
use crate::expr::*;
use crate::Def;
use armada_isa::ops::*;

pub(crate) fn definitions() -> Vec<Def> {
    vec![
        Def::new(MOV_IMM, "MOVZ, MOVN, ADR, ADRP, MOV: Xd = imm", imm::<X>()),
        // MOVK: the 16 bits at field e's position replaced (b = Rd, read)
        Def::new(
            MOVK_W,
            "MOVK: Rd<e+15:e> = imm16",
            (wn() & !(lit::<W>(0xffff) << field_e())) | (imm() << field_e()),
        ),
        Def::new(
            MOVK_X,
            "MOVK: Rd<e+15:e> = imm16",
            (xn() & !(lit::<X>(0xffff) << field_e())) | (imm() << field_e()),
        ),
        Def::new(
            ADD_IMM_W,
            "ADD, SUB (immediate): Rd = Rn + imm",
            wn() + imm(),
        ),
        Def::new(
            ADD_IMM_X,
            "ADD, SUB (immediate): Rd = Rn + imm",
            xn() + imm(),
        ),
        Def::add_flags(
            ADDS_IMM_W,
            "ADDS, SUBS (immediate): Rd = Rn + imm + e, NZCV",
            wn(),
            imm(),
            field_e(),
        ),
        Def::add_flags(
            ADDS_IMM_X,
            "ADDS, SUBS (immediate): Rd = Rn + imm + e, NZCV",
            xn(),
            imm(),
            field_e(),
        ),
        Def::new(AND_IMM_W, "AND (immediate): Rd = Rn AND imm", wn() & imm()),
        Def::new(AND_IMM_X, "AND (immediate): Rd = Rn AND imm", xn() & imm()),
        Def::new(ORR_IMM_W, "ORR (immediate): Rd = Rn OR imm", wn() | imm()),
        Def::new(ORR_IMM_X, "ORR (immediate): Rd = Rn OR imm", xn() | imm()),
        Def::new(EOR_IMM_W, "EOR (immediate): Rd = Rn EOR imm", wn() ^ imm()),
        Def::new(EOR_IMM_X, "EOR (immediate): Rd = Rn EOR imm", xn() ^ imm()),
        Def::logic_flags(
            ANDS_IMM_W,
            "ANDS (immediate): Rd = Rn AND imm, NZ of it",
            wn() & imm(),
        ),
        Def::logic_flags(
            ANDS_IMM_X,
            "ANDS (immediate): Rd = Rn AND imm, NZ of it",
            xn() & imm(),
        ),
        // EXTR (and ROR immediate): Rn:Rm shifted right by lsb (field e), the low half
        Def::new(
            EXTR_W,
            "EXTR: Wd = (Wn:Wm >> lsb)<31:0>",
            (((wn().zext() << 32) | wm().zext()) >> field_e()).lo(),
        ),
        // (two shifts of Xn, so that lsb 0 shifts it out whole: one of 64 would be taken as 0)
        Def::new(
            EXTR_X,
            "EXTR: Xd = (Xn:Xm >> lsb)<63:0>",
            (xm() >> field_e()) | ((xn() << 1) << (lit::<X>(63) - field_e())),
        ),
    ]
}
