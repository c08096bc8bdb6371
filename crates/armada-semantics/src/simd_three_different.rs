//! AdvSIMD three different (the Arm ARM's encoding class): the long element functions, whose
//! element is twice the size of their operands' (`ElemDef::long`): Vn's and Vm's elements of
//! field e's size (from the upper half for the "2" forms, which each engine's loop reads),
//! Vd's old element and Vn's wide one (SADDW) at twice the size.

use crate::def::ElemDef;
use crate::expr::*;
use crate::simd_three_same::{above, pick, signed_limit, signed_product};
use armada_isa::ops::*;

/// Field d's variant bit (the decoder's): unsigned (UADDL ...) rather than signed.
const UNSIGNED: u8 = 1;

/// Vn's and Vm's elements as integers in 64 bits, unsigned or signed as field d says.
fn p() -> V<X> {
    if_d(UNSIGNED, en(), elem_sext(en()))
}
fn q() -> V<X> {
    if_d(UNSIGNED, em(), elem_sext(em()))
}

/// |Vn - Vm| of the elements as integers.
fn difference() -> V<X> {
    pick(above(), p() - q(), q() - p())
}

/// SQDMULL: twice the product of two signed elements (halfwords or words) at twice their
/// size, the largest there where it is too large (`simd_three_same::signed_product`); and 1
/// where it saturated.
fn doubled_product() -> (V<X>, V<X>) {
    let (product, flag) = signed_product();
    let largest = (V::from(1u64) << (esize() + esize() - 1)) - 1;
    (
        pick(
            V::from(0u64) - flag.clone(),
            largest,
            product.clone() + product,
        ),
        flag,
    )
}

/// SQDMLAL (`sub` false) and SQDMLSL (true): Vd's element plus or minus the saturated doubled
/// product, saturated at twice the element size. Both at the top of 64 bits (shifted left by
/// 64 - 2 esize), the signed overflow from the operands' and the result's signs, as SQADD.
fn accumulated_product(sub: bool) -> (V<X>, V<X>) {
    let (product, first) = doubled_product();
    let by = || V::from(64u64) - esize() - esize();
    let a = || ed() << by();
    let b = || product.clone() << by();
    let s = || if sub { a() - b() } else { a() + b() };
    let overflow = if sub {
        ((a() ^ b()) & (a() ^ s())) >> 63
    } else {
        ((a() ^ s()) & (b() ^ s())) >> 63
    };
    let value = pick(V::from(0u64) - overflow.clone(), signed_limit(a()), s());
    (asr(value, by()), first | overflow)
}

/// Field d of ADDHN and SUBHN: rounding (RADDHN, RSUBHN).
const HIGH_ROUND: u8 = 1;

/// ADDHN (`sub` false) and SUBHN (true): the high half of the sum (difference) of Vn's and
/// Vm's wide elements, rounded where field d says, as the manual's sum of twice the element's
/// bits plus one: done in halves of the element's size, the low halves' carry (borrow, an
/// arithmetic shift of their difference) added into the high halves, so that 64-bit wide
/// elements need no 65th bit.
fn high_half(sub: bool) -> V<X> {
    let low = |v: V<X>| v & emask();
    let high = |v: V<X>| v >> esize();
    let round = if_d(HIGH_ROUND, V::from(1u64) << (esize() - 1), 0.into());
    if sub {
        let lo = low(en()) - low(em()) + round;
        high(en()) - high(em()) + asr(lo, esize())
    } else {
        let lo = low(en()) + low(em()) + round;
        high(en()) + high(em()) + (lo >> esize())
    }
}

pub fn definitions() -> Vec<ElemDef> {
    let (sqdmull, sqdmull_sat) = doubled_product();
    let (sqdmlal, sqdmlal_sat) = accumulated_product(false);
    let (sqdmlsl, sqdmlsl_sat) = accumulated_product(true);
    let long = |op, doc, value| ElemDef::new(op, doc, value).long();
    let saturating =
        |op, doc, value, saturated| ElemDef::saturating(op, doc, value, saturated).long();
    let narrow = |op, doc, value| ElemDef::new(op, doc, value).narrow();
    vec![
        narrow(
            V_ADDHN,
            "ADDHN, RADDHN: Vd = the high half of Vn + Vm (rounded), narrowed",
            high_half(false),
        ),
        narrow(
            V_SUBHN,
            "SUBHN, RSUBHN: Vd = the high half of Vn - Vm (rounded), narrowed",
            high_half(true),
        ),
        long(V_ADDL, "SADDL, UADDL: Vd = Vn + Vm, widened", p() + q()),
        long(V_SUBL, "SSUBL, USUBL: Vd = Vn - Vm, widened", p() - q()),
        long(
            V_ADDW,
            "SADDW, UADDW: Vd = wide Vn + Vm, widened",
            en_wide() + q(),
        ),
        long(
            V_SUBW,
            "SSUBW, USUBW: Vd = wide Vn - Vm, widened",
            en_wide() - q(),
        ),
        long(V_MULL, "SMULL, UMULL: Vd = Vn * Vm, widened", p() * q()),
        long(
            V_MLAL,
            "SMLAL, UMLAL: Vd = Vd + Vn * Vm, widened",
            ed() + p() * q(),
        ),
        long(
            V_MLSL,
            "SMLSL, UMLSL: Vd = Vd - Vn * Vm, widened",
            ed() - p() * q(),
        ),
        long(
            V_ABDL,
            "SABDL, UABDL: Vd = |Vn - Vm|, widened",
            difference(),
        ),
        long(
            V_ABAL,
            "SABAL, UABAL: Vd = Vd + |Vn - Vm|, widened",
            ed() + difference(),
        ),
        saturating(
            V_SQDMULL,
            "SQDMULL: Vd = 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmull,
            sqdmull_sat,
        ),
        saturating(
            V_SQDMLAL,
            "SQDMLAL: Vd = Vd + 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmlal,
            sqdmlal_sat,
        ),
        saturating(
            V_SQDMLSL,
            "SQDMLSL: Vd = Vd - 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmlsl,
            sqdmlsl_sat,
        ),
    ]
}
