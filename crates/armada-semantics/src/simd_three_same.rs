//! AdvSIMD three same (the Arm ARM's encoding class; and the by-element forms, which read
//! one element of Vm broadcast): the integer element functions. Each is the value of one
//! element of Vd from the same elements of Vn (`en`), Vm (`em`) and, accumulating, Vd's old
//! one (`ed`), at the element size in field e; arithmetic wraps within the element (the bits
//! above it are never stored).

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

/// Field d's variant bits (the decoder's, `armada_isa::decode`): unsigned (UMAX, UABD ...)
/// rather than signed, and accumulating (SABA, UABA) rather than not.
const UNSIGNED: u8 = 1;
const ACCUMULATE: u8 = 2;
/// SQDMULH's: rounding (SQRDMULH).
const ROUNDING: u8 = 1;
/// The shifts by register's (SSHL ... UQRSHL): rounding, saturating.
const ROUND: u8 = 2;
const SATURATE: u8 = 4;

/// All ones where Vn's element is above Vm's: unsigned or signed as field d says.
pub(crate) fn above() -> V<X> {
    if_d(
        UNSIGNED,
        ones_if(Cmp::Hi, en(), em()),
        ones_if(Cmp::Gt, en(), em()),
    )
}

/// The larger of Vn's and Vm's elements, unsigned or signed as field d says (SMAX, UMAX; and
/// their pairwise and across-lanes forms).
pub(crate) fn larger() -> V<X> {
    pick(above(), en(), em())
}

/// The smaller (SMIN, UMIN, ...).
pub(crate) fn smaller() -> V<X> {
    pick(above(), em(), en())
}

/// `a` where `mask` is all ones, `b` where it is 0.
pub(crate) fn pick(mask: V<X>, a: V<X>, b: V<X>) -> V<X> {
    (a & mask.clone()) | (b & !mask)
}

/// An element at the top of 64 bits (the bits below it zero): a 64-bit sum or difference of
/// two such overflows exactly where the element's own would, whatever the element's size, so
/// one saturating form serves every size (and 64-bit elements need no 65th bit).
pub(crate) fn top(v: V<X>) -> V<X> {
    v << (V::from(64u64) - esize())
}

/// A top-aligned result back at the element's place: arithmetic or logical as field d says.
pub(crate) fn untop(v: V<X>) -> V<X> {
    let by = || V::from(64u64) - esize();
    if_d(UNSIGNED, v.clone() >> by(), asr(v, by()))
}

/// The saturated value of an overflowed signed top-aligned result whose first operand was
/// `n`: the largest (n not negative) or the smallest (n negative) signed value.
pub(crate) fn signed_limit(n: V<X>) -> V<X> {
    asr(n, 63) ^ V::from(i64::MAX as u64)
}

/// 1 where `v` is not zero, else 0 (its lowest set bit negated sets bit 63).
pub(crate) fn nonzero(v: V<X>) -> V<X> {
    (v.clone() | (V::from(0u64) - v)) >> 63
}

/// SQADD, UQADD (`sub` false) and SQSUB, UQSUB (true) of the top-aligned elements: the
/// value, and 1 where it saturated. Signed overflow is the sum's (difference's) sign against
/// the operands' signs; unsigned, the carry (borrow) out of bit 63, from the same signs.
fn saturating(sub: bool) -> (V<X>, V<X>) {
    let (n, m) = (|| top(en()), || top(em()));
    let s = || if sub { n() - m() } else { n() + m() };
    let (overflow, out) = if sub {
        (
            (n() ^ m()) & (n() ^ s()),
            (!n() & m()) | ((!n() | m()) & s()),
        )
    } else {
        (
            (n() ^ s()) & (m() ^ s()),
            (n() & m()) | ((n() | m()) & !s()),
        )
    };
    let flag = if_d(UNSIGNED, out >> 63, overflow >> 63);
    let limit = if_d(
        UNSIGNED,
        if sub { 0u64.into() } else { V::from(u64::MAX) },
        signed_limit(n()),
    );
    let mask = V::from(0u64) - flag.clone();
    (untop(pick(mask, limit, s())), flag)
}

/// SSHL, USHL, SRSHL, URSHL, SQSHL, UQSHL, SQRSHL, UQRSHL (register; field d: bit 0
/// unsigned, bit 1 rounding, bit 2 saturating): Vn's element shifted by the signed low byte
/// of Vm's, left where it is positive, right where negative. Every shift below is by at most
/// 63 (an amount from 64 up chooses its result by `if_ge` instead), since each language takes
/// a larger one modulo 64. Right: by the amount less one, then by one, plus the last bit out
/// where rounding (as SRSHR); a right shift by more than 64 leaves the sign (or 0), whose
/// last bit out is the sign bit (or 0) too. Left: wrapping, or saturating as SQSHL (immediate) is, from the
/// element at the top of 64 bits. The value, and 1 where it saturated.
fn shift_by_register() -> (V<X>, V<X>) {
    // the amount: Vm's low byte, signed
    let amount = || asr(em() << 56, 56);
    let right_shift = || amount() >> 63;
    let x = || if_d(UNSIGNED, en(), elem_sext(en()));
    let shr = |v: V<X>, by: V<X>| if_d(UNSIGNED, v.clone() >> by.clone(), asr(v, by));
    // right, by r = -amount (1 to 128): by r - 1, where from 64 up every bit is out (what
    // is left is the sign, or 0), then by 1
    let r_less_one = || V::from(0u64) - amount() - 1;
    let by_all_but_one = || {
        if_ge(
            r_less_one(),
            V::from(64u64),
            if_d(UNSIGNED, 0.into(), asr(x(), 63)),
            shr(x(), r_less_one()),
        )
    };
    let right = shr(by_all_but_one(), 1.into()) + if_d(ROUND, by_all_but_one() & 1, 0.into());
    // left, by the amount (0 to 127)
    let left_plain = if_ge(amount(), V::from(64u64), 0.into(), x() << amount());
    let t = || top(en());
    let shifted = || if_ge(amount(), V::from(64u64), 0.into(), t() << amount());
    let back = if_ge(amount(), V::from(64u64), 0.into(), shr(shifted(), amount()));
    let lost = nonzero(back ^ t());
    let limit = if_d(UNSIGNED, V::from(u64::MAX), signed_limit(t()));
    let left_saturated = untop(pick(V::from(0u64) - lost.clone(), limit, shifted()));
    let left = if_d(SATURATE, left_saturated, left_plain);
    let right_mask = || V::from(0u64) - right_shift();
    let flag = if_d(SATURATE, lost, 0.into()) & !right_mask();
    (pick(right_mask(), right, left), flag)
}

/// The product of Vn's and Vm's elements as signed integers (halfwords or words: exact in 64
/// bits), and 1 where doubling it passes the largest signed value of twice the element size:
/// only the most negative element times itself (the product 2^(2 esize - 2)) does.
pub(crate) fn signed_product() -> (V<X>, V<X>) {
    let product = elem_sext(en()) * elem_sext(em());
    let at_limit = V::from(1u64) << (esize() + esize() - 2);
    let doubled_too_far = V::from(1u64) - nonzero(product.clone() ^ at_limit);
    (product, doubled_too_far)
}

/// SQDMULH and SQRDMULH (field d's bit 0: rounding) of halfword and word elements: the high
/// half of twice the product, rounded where d says; where the doubled product is too large
/// ([`signed_product`]), the largest element.
fn doubling_multiply_high() -> (V<X>, V<X>) {
    let (product, flag) = signed_product();
    let round = if_d(ROUNDING, V::from(1u64) << (esize() - 1), 0.into());
    let value = asr(product.clone() + product + round, esize());
    let largest = emask() >> 1;
    (pick(V::from(0u64) - flag.clone(), largest, value), flag)
}

/// PMUL's polynomial (carry-less) product of two bytes: Vn's byte shifted left by each set
/// bit's place of Vm's, the eight XORed (the bits above the byte are not stored).
fn polynomial_product() -> V<X> {
    (0..8u64)
        .map(|i| (V::from(0u64) - ((em() >> i) & 1)) & (en() << i))
        .reduce(|a, b| a ^ b)
        .expect("eight terms")
}

/// SDOT, UDOT (FEAT_DotProd): a word of Vd plus the products of the four bytes of Vn's and
/// Vm's words there, byte by byte, signed or unsigned as field d says. (A word holds the
/// sum: four products of bytes need at most 18 bits; only the word's bits are stored.)
fn dot_product() -> V<X> {
    let byte = |v: V<X>, k: u64| {
        if_d(
            UNSIGNED,
            (v.clone() >> (8 * k)) & 0xff,
            asr(v << (56 - 8 * k), 56),
        )
    };
    (0..4u64)
        .map(|k| byte(en(), k) * byte(em(), k))
        .fold(ed(), |sum, product| sum + product)
}

pub fn definitions() -> Vec<ElemDef> {
    // the elements as integers (unsigned or signed as field d says) in 64 bits, which hold
    // their sum and difference: these ops have no 64-bit elements
    let p = || if_d(UNSIGNED, en(), elem_sext(en()));
    let q = || if_d(UNSIGNED, em(), elem_sext(em()));
    let difference = || pick(above(), en() - em(), em() - en());
    vec![
        ElemDef::new(V_ADD, "ADD (vector): Vd = Vn + Vm", en() + em()),
        ElemDef::new(V_SUB, "SUB (vector): Vd = Vn - Vm", en() - em()),
        ElemDef::new(V_MUL, "MUL (vector, by element): Vd = Vn * Vm", en() * em()),
        ElemDef::new(
            V_PMUL,
            "PMUL: the polynomial (carry-less) product of Vn's and Vm's bytes, low byte",
            polynomial_product(),
        ),
        ElemDef::new(
            V_MLA,
            "MLA (vector, by element): Vd = Vd + Vn * Vm",
            ed() + en() * em(),
        ),
        ElemDef::new(
            V_MLS,
            "MLS (vector, by element): Vd = Vd - Vn * Vm",
            ed() - en() * em(),
        ),
        ElemDef::new(
            V_CMEQ,
            "CMEQ (register): ones where Vn == Vm",
            ones_if(Cmp::Eq, en(), em()),
        ),
        ElemDef::new(
            V_CMTST,
            "CMTST: ones where Vn AND Vm is not zero",
            ones_if(Cmp::Ne, en() & em(), 0.into()),
        ),
        ElemDef::new(
            V_CMGT,
            "CMGT (register): ones where Vn > Vm, signed",
            ones_if(Cmp::Gt, en(), em()),
        ),
        ElemDef::new(
            V_CMGE,
            "CMGE (register): ones where Vn >= Vm, signed",
            ones_if(Cmp::Ge, en(), em()),
        ),
        ElemDef::new(
            V_CMHI,
            "CMHI (register): ones where Vn > Vm, unsigned",
            ones_if(Cmp::Hi, en(), em()),
        ),
        ElemDef::new(
            V_CMHS,
            "CMHS (register): ones where Vn >= Vm, unsigned",
            ones_if(Cmp::Hs, en(), em()),
        ),
        ElemDef::new(V_MAX, "SMAX, UMAX: the larger of Vn and Vm", larger()),
        ElemDef::new(V_MIN, "SMIN, UMIN: the smaller of Vn and Vm", smaller()),
        // the pairwise forms: the same functions of a pair of adjacent elements of Vm:Vn
        ElemDef::new(
            V_ADDP,
            "ADDP (vector): the sum of a pair of elements of Vm:Vn",
            en() + em(),
        )
        .pairwise(),
        ElemDef::new(
            V_MAXP,
            "SMAXP, UMAXP: the larger of a pair of elements of Vm:Vn",
            larger(),
        )
        .pairwise(),
        ElemDef::new(
            V_MINP,
            "SMINP, UMINP: the smaller of a pair of elements of Vm:Vn",
            smaller(),
        )
        .pairwise(),
        ElemDef::new(
            V_ABD,
            "SABD, UABD: |Vn - Vm|; SABA, UABA: Vd + |Vn - Vm|",
            if_d(ACCUMULATE, ed() + difference(), difference()),
        ),
        ElemDef::new(V_HADD, "SHADD, UHADD: (Vn + Vm) >> 1", asr(p() + q(), 1)),
        ElemDef::new(
            V_RHADD,
            "SRHADD, URHADD: (Vn + Vm + 1) >> 1",
            asr(p() + q() + 1, 1),
        ),
        ElemDef::new(V_HSUB, "SHSUB, UHSUB: (Vn - Vm) >> 1", asr(p() - q(), 1)),
        {
            let (value, saturated) = saturating(false);
            ElemDef::saturating(
                V_QADD,
                "SQADD, UQADD: Vn + Vm, saturated (FPSR.QC)",
                value,
                saturated,
            )
        },
        {
            let (value, saturated) = shift_by_register();
            ElemDef::saturating(
                V_SHL_REG,
                "SSHL, USHL, SRSHL ... UQRSHL: Vn shifted by Vm's signed low byte (rounded, saturated)",
                value,
                saturated,
            )
        },
        {
            let (value, saturated) = doubling_multiply_high();
            ElemDef::saturating(
                V_SQDMULH,
                "SQDMULH, SQRDMULH: the high half of 2 Vn Vm (rounded), saturated (FPSR.QC)",
                value,
                saturated,
            )
        },
        ElemDef::new(
            V_DOT,
            "SDOT, UDOT (vector, by element): Vd.S += the dot product of Vn's and Vm's bytes there",
            dot_product(),
        ),
        {
            let (value, saturated) = saturating(true);
            ElemDef::saturating(
                V_QSUB,
                "SQSUB, UQSUB: Vn - Vm, saturated (FPSR.QC)",
                value,
                saturated,
            )
        },
    ]
}
