//! AdvSIMD two-register miscellaneous (the Arm ARM's encoding class): the integer element
//! functions of Vn alone (see `simd_three_same` for the element operands).

use crate::def::ElemDef;
use crate::expr::*;
use crate::simd_three_same::{nonzero, pick, top};
use armada_isa::ops::*;

/// SQABS (`neg` false) and SQNEG (true) of Vn's element at the top of 64 bits (see
/// `simd_three_same::top`): the value, and 1 where it saturated, which is only the most
/// negative element, whose magnitude is one past the largest.
fn saturating_sign(neg: bool) -> (V<X>, V<X>) {
    let n = || top(en());
    let s = || {
        if neg {
            V::from(0u64) - n()
        } else {
            // (n XOR its sign) - its sign: n where not negative, -n where negative
            (n() ^ asr(n(), 63)) - asr(n(), 63)
        }
    };
    // the result is negative where it should not be: from n and -n both negative (SQNEG)
    // or from |n| negative (SQABS), both only at the most negative value
    let flag = if neg { (n() & s()) >> 63 } else { s() >> 63 };
    // (which saturates to the largest value: the magnitude of the most negative is positive)
    let value = pick(V::from(0u64) - flag.clone(), V::from(i64::MAX as u64), s());
    (asr(value, V::from(64u64) - esize()), flag)
}

/// SUQADD (`signed_into` true: Vd signed, Vn unsigned, a signed result) and USQADD (false:
/// Vd unsigned, Vn signed, an unsigned result): Vd's element plus Vn's, saturated. Both at the
/// top of 64 bits (`simd_three_same::top`), with their 64-bit sum s and its carry out:
/// - SUQADD only overflows upward: with Vd not negative, where Vn's top bit or s's is set;
///   with Vd negative, where the sum carried and s's top bit is set;
/// - USQADD overflows upward (Vn not negative: it carried) or below zero (Vn negative: it did
///   not carry), so where the carry differs from Vn's sign, to all ones or 0.
fn saturating_accumulate(signed_into: bool) -> (V<X>, V<X>) {
    let (d, n) = (|| top(ed()), || top(en()));
    let s = || d() + n();
    let carry = || ((d() & n()) | ((d() | n()) & !s())) >> 63;
    let top_bit = |v: V<X>| v >> 63;
    if signed_into {
        let d_negative = || top_bit(d());
        let flag = (d_negative() & carry() & top_bit(s()))
            | ((V::from(1u64) - d_negative()) & (top_bit(n()) | top_bit(s())));
        let value = pick(V::from(0u64) - flag.clone(), V::from(i64::MAX as u64), s());
        (asr(value, V::from(64u64) - esize()), flag)
    } else {
        let n_negative = || top_bit(n());
        let flag = carry() ^ n_negative();
        // (the limit: 0 below zero, where Vn is negative, else all ones)
        let limit = n_negative() - 1;
        let value = pick(V::from(0u64) - flag.clone(), limit, s());
        (value >> (V::from(64u64) - esize()), flag)
    }
}

/// Field d of the narrowing ops (`armada_isa::ops::narrow`'s kind shifted left by one, SHRN's
/// rounding in bit 0): the source read as signed (SQXTN, SQXTUN, SQSHRN ...), and the result
/// saturated unsigned (UQXTN, SQXTUN, UQSHRN ...); neither bit: plain truncation (XTN, SHRN).
pub(crate) const SIGNED_SOURCE: u8 = (narrow::SS << 1) & (narrow::SU << 1);
pub(crate) const UNSIGNED_RESULT: u8 = (narrow::UU << 1) & (narrow::SU << 1);

/// Vn's wide element (twice field e's size) sign-extended to 64 bits.
pub(crate) fn wide_sext(v: V<X>) -> V<X> {
    let by = || V::from(64u64) - esize() - esize();
    asr(v << by(), by())
}

/// A narrowing op's element from its source value, `signed` (a signed 64-bit integer) or
/// `unsigned` as field d reads the source, truncated or saturated to field e's size as field
/// d says: the value, and 1 where it saturated. Signed saturation: where the value differs
/// from its low bits sign-extended, to the largest or the smallest by its sign; unsigned:
/// where bits above the element's are set (a negative signed value included), to all ones,
/// or 0 for a negative one.
pub(crate) fn narrowed(signed: V<X>, unsigned: V<X>) -> (V<X>, V<X>) {
    let by = || V::from(64u64) - esize();
    let s = || signed.clone();
    let signed_flag = || nonzero(asr(s() << by(), by()) ^ s());
    let signed_value = pick(
        V::from(0u64) - signed_flag(),
        asr(s(), 63) ^ (emask() >> 1),
        s(),
    );
    let u = || unsigned.clone();
    let unsigned_flag = || nonzero(u() >> esize());
    let unsigned_value = pick(V::from(0u64) - unsigned_flag(), emask(), u());
    // (a signed source saturated unsigned: above the element's bits, or negative)
    let su_flag = || nonzero(s() >> esize());
    let su_value = pick(
        V::from(0u64) - su_flag(),
        pick(V::from(0u64) - (s() >> 63), 0.into(), emask()),
        s(),
    );
    let value = if_d(
        UNSIGNED_RESULT,
        if_d(SIGNED_SOURCE, su_value, unsigned_value),
        if_d(SIGNED_SOURCE, signed_value, u()),
    );
    let flag = if_d(
        UNSIGNED_RESULT,
        if_d(SIGNED_SOURCE, su_flag(), unsigned_flag()),
        if_d(SIGNED_SOURCE, signed_flag(), 0.into()),
    );
    (value, flag)
}

pub fn definitions() -> Vec<ElemDef> {
    // all ones where Vn's element is negative
    let negative = || ones_if(Cmp::Gt, 0.into(), en());
    vec![
        ElemDef::new(
            V_CMP0,
            "CMEQ, CMGE, CMGT, CMLE, CMLT (zero): ones where Vn compares so with 0, signed",
            if_d_is(
                cmp0::EQ,
                ones_if(Cmp::Eq, en(), 0.into()),
                if_d_is(
                    cmp0::GE,
                    ones_if(Cmp::Ge, en(), 0.into()),
                    if_d_is(
                        cmp0::GT,
                        ones_if(Cmp::Gt, en(), 0.into()),
                        // (LE: 0 >= Vn; LT, the rest: 0 > Vn)
                        if_d_is(
                            cmp0::LE,
                            ones_if(Cmp::Ge, 0.into(), en()),
                            ones_if(Cmp::Gt, 0.into(), en()),
                        ),
                    ),
                ),
            ),
        ),
        ElemDef::new(V_NEG, "NEG (vector): Vd = -Vn", -en()),
        {
            let (value, saturated) = saturating_sign(false);
            ElemDef::saturating(
                V_SQABS,
                "SQABS: |Vn|, saturated (FPSR.QC)",
                value,
                saturated,
            )
        },
        {
            let (value, saturated) = saturating_sign(true);
            ElemDef::saturating(V_SQNEG, "SQNEG: -Vn, saturated (FPSR.QC)", value, saturated)
        },
        {
            let (value, saturated) = saturating_accumulate(true);
            ElemDef::saturating(
                V_SUQADD,
                "SUQADD: signed Vd + unsigned Vn, saturated signed (FPSR.QC)",
                value,
                saturated,
            )
        },
        {
            let (value, saturated) = saturating_accumulate(false);
            ElemDef::saturating(
                V_USQADD,
                "USQADD: unsigned Vd + signed Vn, saturated unsigned (FPSR.QC)",
                value,
                saturated,
            )
        },
        {
            let (value, saturated) = narrowed(wide_sext(en()), en());
            ElemDef::saturating(
                V_XTN,
                "XTN, SQXTN, UQXTN, SQXTUN: Vd = Vn narrowed, truncated or saturated (FPSR.QC)",
                value,
                saturated,
            )
            .narrow()
        },
        ElemDef::new(V_CNT, "CNT: the set bits of each byte of Vn", popcnt(en())),
        // (the element's leading zeros are those of the 64-bit value less the bits above it)
        ElemDef::new(
            V_CLZ,
            "CLZ (vector): the leading zero bits of each element of Vn",
            clz(en()) + esize() - 64,
        ),
        // (the bits after the sign bit that equal it: where the sign-extended value first
        // differs from its neighbour above, counted as leading zeros, less the sign bit and
        // the bits above the element)
        ElemDef::new(
            V_CLS,
            "CLS (vector): the leading sign bits of each element of Vn, the sign bit not counted",
            {
                let s = || elem_sext(en());
                clz(s() ^ asr(s(), 1)) + esize() - 65
            },
        ),
        ElemDef::new(
            V_RBIT,
            "RBIT (vector): the bits of each byte of Vn reversed",
            rbit(en()) >> (V::from(64) - esize()),
        ),
        // (-x where x < 0: x XOR ones, minus ones)
        ElemDef::new(
            V_ABS,
            "ABS: Vd = |Vn|, signed",
            (en() ^ negative()) - negative(),
        ),
    ]
}
