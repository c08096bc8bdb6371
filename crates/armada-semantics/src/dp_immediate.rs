//! Data-processing (immediate), the Arm ARM's C4.1.92 classes: add/subtract, logical and
//! move-wide immediates, bitfield moves and extract. The decoder has expanded each immediate (bitmask immediates,
//! shifts), negated SUB's and inverted SUBS's with the carry in field e.

use crate::def::Def;
use crate::expr::Width;
use crate::expr::*;
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
        // ----- bitfield moves: UBFM (UBFX, UBFIZ, LSL, LSR, UXTB ...), SBFM (SBFX, SBFIZ,
        // ASR, SXTB ...), BFM (BFI, BFXIL), immr in field e, imms in f
        Def::new(
            UBFM_W,
            "UBFM: the field of Wn at immr..imms, moved",
            ubfm(xn(), Width::W).lo(),
        ),
        Def::new(
            UBFM_X,
            "UBFM: the field of Xn at immr..imms, moved",
            ubfm(xn(), Width::X),
        ),
        Def::new(
            SBFM_W,
            "SBFM: the field of Wn at immr..imms, moved and sign-extended",
            asr(xn() << left(), right(Width::W)).lo(),
        ),
        Def::new(
            SBFM_X,
            "SBFM: the field of Xn at immr..imms, moved and sign-extended",
            asr(xn() << left(), right(Width::X)),
        ),
        // (field c is Rd, read: what the field is inserted into)
        Def::new(
            BFM_W,
            "BFM: the field of Wn at immr..imms inserted into Wd",
            (wm() & !ubfm(lit(-1), Width::W).lo()) | ubfm(xn(), Width::W).lo(),
        ),
        Def::new(
            BFM_X,
            "BFM: the field of Xn at immr..imms inserted into Xd",
            (xm() & !ubfm(lit(-1), Width::X)) | ubfm(xn(), Width::X),
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

// A bitfield move as two shifts of the 64-bit register (as the CPU engine's fused shift
// pairs run it): left by 63 - imms puts the field's top bit at bit 63, then right puts its
// low bit where it goes; a W form reads Xn whole, since the left shift (by 32 or more)
// pushes the upper half out.

/// The left shift: 63 - imms.
fn left() -> V<X> {
    lit::<X>(63) - field_f()
}

/// The right shift: 63 - imms + immr for an extract (imms >= immr), else immr - imms - 1
/// (X) or 31 - imms + immr (W) for an insert at size - immr.
fn right(size: Width) -> V<X> {
    let insert = match size {
        Width::X => field_e() - field_f() - 1,
        Width::W => lit::<X>(31) - field_f() + field_e(),
    };
    if_ge(
        field_f::<X>(),
        field_e(),
        lit::<X>(63) - field_f() + field_e(),
        insert,
    )
}

/// UBFM of `v` at `size`: the field, zero-extended (within `size` bits).
fn ubfm(v: V<X>, size: Width) -> V<X> {
    (v << left()) >> right(size)
}
