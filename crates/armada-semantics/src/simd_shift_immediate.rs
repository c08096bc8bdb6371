//! AdvSIMD shift by immediate (the Arm ARM's encoding class): the integer element functions
//! of Vn and the shift amount, which the decoder puts in the immediate.

use crate::def::ElemDef;
use crate::expr::*;
use crate::simd_three_same::{nonzero, pick, signed_limit, top};
use crate::simd_two_reg_misc::{narrowed, wide_sext};
use armada_isa::ops::*;

/// Field d's variant bits of the right shifts (the decoder's, `armada_isa::decode`): unsigned
/// (USHR ...) rather than signed, rounding (SRSHR, URSHR ...), accumulating (SSRA, USRA ...).
const UNSIGNED: u8 = 1;
const ROUND: u8 = 2;
const ACCUMULATE: u8 = 4;

/// Vn's element shifted right by the immediate (1 to the element's bits), arithmetic or
/// logical as field d says, rounded where it says: the element as an integer in 64 bits,
/// shifted by the amount less one and then by one more, so that a shift by all 64 bits of a
/// doubleword is two shifts each below 64; rounding adds the last bit shifted out, which is
/// the manual's adding half the divisor first, without that sum's 65th bit.
fn shift_right() -> V<X> {
    let sh = imm::<X>;
    let by_all_but_one = if_d(UNSIGNED, en() >> (sh() - 1), asr(elem_sext(en()), sh() - 1));
    let by_all = if_d(
        UNSIGNED,
        by_all_but_one.clone() >> 1,
        asr(by_all_but_one.clone(), 1),
    );
    by_all + if_d(ROUND, by_all_but_one & 1, 0.into())
}

/// SQSHL (field d 0), UQSHL (1) and SQSHLU (2) by an immediate below the element's bits: the
/// element at the top of 64 bits (`simd_three_same::top`) shifted left, saturated where a bit
/// that differs from the result's sign (signed) or any set bit (unsigned) went out, or, for
/// SQSHLU, where the element is negative (to 0): the value, and 1 where it saturated.
fn saturating_shift_left() -> (V<X>, V<X>) {
    let sh = imm::<X>;
    let t = || top(en());
    let shifted = || t() << sh();
    let negative = || t() >> 63;
    let lost_signed = nonzero(asr(shifted(), sh()) ^ t());
    let lost_unsigned = || nonzero((shifted() >> sh()) ^ t());
    let flag = if_d_is(
        0,
        lost_signed,
        if_d_is(1, lost_unsigned(), negative() | lost_unsigned()),
    );
    let limit = if_d_is(
        0,
        signed_limit(t()),
        // (SQSHLU: 0 below zero, else the largest unsigned, as UQSHL's)
        !(V::from(0u64) - if_d_is(1, 0.into(), negative())),
    );
    let top_value = pick(V::from(0u64) - flag.clone(), limit, shifted());
    let by = || V::from(64u64) - esize();
    let value = if_d_is(0, asr(top_value.clone(), by()), top_value >> by());
    (value, flag)
}

/// Field d's bit 0 of SHRN and its kin: rounding (RSHRN, SQRSHRN ...).
const NARROW_ROUND: u8 = 1;

/// SHRN and its kin: Vn's wide element shifted right by the immediate (1 to the narrow
/// element's bits), arithmetic where field d reads the source as signed, rounded where it
/// says (as `shift_right`: by the amount less one, then by one more, adding the last bit
/// shifted out), then narrowed (`simd_two_reg_misc::narrowed`).
fn shift_right_narrow() -> (V<X>, V<X>) {
    let sh = imm::<X>;
    let round = |by_all_but_one: V<X>, by_all: V<X>| {
        by_all + if_d(NARROW_ROUND, by_all_but_one & 1, 0.into())
    };
    let s = || asr(wide_sext(en()), sh() - 1);
    let u = || en() >> (sh() - 1);
    narrowed(round(s(), asr(s(), 1)), round(u(), u() >> 1))
}

pub fn definitions() -> Vec<ElemDef> {
    let sh = imm::<X>;
    vec![
        ElemDef::new(
            V_SHR,
            "SSHR, USHR, SRSHR, URSHR: Vd = Vn >> shift (rounded); SSRA ... URSRA: Vd + that",
            if_d(ACCUMULATE, ed(), 0.into()) + shift_right(),
        ),
        ElemDef::new(V_SHL, "SHL: Vd = Vn << shift", en() << sh()),
        {
            let (value, saturated) = shift_right_narrow();
            ElemDef::saturating(
                V_SHRN,
                "SHRN, RSHRN, SQSHRN, UQSHRN, SQSHRUN (and rounding): Vd = Vn >> shift, narrowed, truncated or saturated (FPSR.QC)",
                value,
                saturated,
            )
            .narrow()
        },
        ElemDef::new(
            V_SHLL,
            "SSHLL, USHLL, SHLL: Vd = Vn << shift, widened",
            if_d(UNSIGNED, en(), elem_sext(en())) << sh(),
        )
        .long(),
        {
            let (value, saturated) = saturating_shift_left();
            ElemDef::saturating(
                V_QSHL_IMM,
                "SQSHL, UQSHL, SQSHLU (immediate): Vn << shift, saturated (FPSR.QC)",
                value,
                saturated,
            )
        },
        // (Vd's bits from the shift up kept; shift 0 to the element's bits less one)
        ElemDef::new(
            V_SLI,
            "SLI: Vn << shift inserted into Vd, Vd's low shift bits kept",
            (ed() & !((emask() << sh()) & emask())) | (en() << sh()),
        ),
        // (shift 1 to the element's bits; by all of them Vd stays as it was)
        ElemDef::new(
            V_SRI,
            "SRI: Vn >> shift inserted into Vd, Vd's high shift bits kept",
            if_ge(
                sh(),
                esize(),
                ed(),
                (ed() & !(emask() >> sh())) | (en() >> sh()),
            ),
        ),
    ]
}
