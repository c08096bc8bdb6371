//! AdvSIMD three different (the Arm ARM's encoding class): the long element functions, whose
//! element is twice the size of their operands' (`ElemDef::long`): Vn's and Vm's elements of
//! field e's size (from the upper half for the "2" forms, which each engine's loop reads),
//! Vd's old element and Vn's wide one (SADDW) at twice the size.

use crate::def::ElemDef;
use crate::expr::*;
use crate::simd_three_same::{above, nonzero, pick, signed_limit};
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

/// SQDMULL's product of two signed elements (halfwords or words), doubled, and 1 where it
/// saturated: only the most negative times itself (the product 2^(2 esize - 2)) doubles past
/// the largest element of twice the size.
fn doubled_product() -> (V<X>, V<X>) {
    let product = || elem_sext(en()) * elem_sext(em());
    let at_limit = V::from(1u64) << (esize() + esize() - 2);
    let flag = V::from(1u64) - nonzero(product() ^ at_limit);
    let largest = (V::from(1u64) << (esize() + esize() - 1)) - 1;
    (
        pick(V::from(0u64) - flag.clone(), largest, product() + product()),
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

pub fn definitions() -> Vec<ElemDef> {
    let (sqdmull, sqdmull_sat) = doubled_product();
    let (sqdmlal, sqdmlal_sat) = accumulated_product(false);
    let (sqdmlsl, sqdmlsl_sat) = accumulated_product(true);
    vec![
        ElemDef::long(V_ADDL, "SADDL, UADDL: Vd = Vn + Vm, widened", p() + q()),
        ElemDef::long(V_SUBL, "SSUBL, USUBL: Vd = Vn - Vm, widened", p() - q()),
        ElemDef::long(
            V_ADDW,
            "SADDW, UADDW: Vd = wide Vn + Vm, widened",
            en_wide() + q(),
        ),
        ElemDef::long(
            V_SUBW,
            "SSUBW, USUBW: Vd = wide Vn - Vm, widened",
            en_wide() - q(),
        ),
        ElemDef::long(V_MULL, "SMULL, UMULL: Vd = Vn * Vm, widened", p() * q()),
        ElemDef::long(
            V_MLAL,
            "SMLAL, UMLAL: Vd = Vd + Vn * Vm, widened",
            ed() + p() * q(),
        ),
        ElemDef::long(
            V_MLSL,
            "SMLSL, UMLSL: Vd = Vd - Vn * Vm, widened",
            ed() - p() * q(),
        ),
        ElemDef::long(
            V_ABDL,
            "SABDL, UABDL: Vd = |Vn - Vm|, widened",
            difference(),
        ),
        ElemDef::long(
            V_ABAL,
            "SABAL, UABAL: Vd = Vd + |Vn - Vm|, widened",
            ed() + difference(),
        ),
        ElemDef::long_saturating(
            V_SQDMULL,
            "SQDMULL: Vd = 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmull,
            sqdmull_sat,
        ),
        ElemDef::long_saturating(
            V_SQDMLAL,
            "SQDMLAL: Vd = Vd + 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmlal,
            sqdmlal_sat,
        ),
        ElemDef::long_saturating(
            V_SQDMLSL,
            "SQDMLSL: Vd = Vd - 2 Vn Vm, widened, saturated (FPSR.QC)",
            sqdmlsl,
            sqdmlsl_sat,
        ),
    ]
}
