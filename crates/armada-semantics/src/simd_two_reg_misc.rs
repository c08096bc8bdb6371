//! AdvSIMD two-register miscellaneous (the Arm ARM's encoding class): the integer element
//! functions of Vn alone (see `simd_three_same` for the element operands).

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

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
