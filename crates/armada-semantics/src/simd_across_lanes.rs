//! AdvSIMD across lanes (the Arm ARM's encoding class; and ADDP (scalar), the same sum of a
//! doubleword pair): the integer reductions. Each is the step of a fold over Vn's elements
//! ([`crate::def::Shape::Across`]; SADDLV and UADDLV at twice the element size,
//! [`crate::def::Shape::AcrossLong`]): `en` the fold so far, `em` the next element.

use crate::def::ElemDef;
use crate::expr::*;
use crate::simd_three_same::{larger, smaller};

/// Field d's variant bit (the decoder's): unsigned (UADDLV) rather than signed.
const UNSIGNED: u8 = 1;
use armada_isa::ops::*;

pub fn definitions() -> Vec<ElemDef> {
    vec![
        ElemDef::new(
            V_ADDV,
            "ADDV, ADDP (scalar): the sum of Vn's elements",
            en() + em(),
        )
        .across(),
        ElemDef::new(
            V_MAXV,
            "SMAXV, UMAXV: the largest of Vn's elements",
            larger(),
        )
        .across(),
        ElemDef::new(
            V_MINV,
            "SMINV, UMINV: the smallest of Vn's elements",
            smaller(),
        )
        .across(),
        ElemDef::new(
            V_ADDLV,
            "SADDLV, UADDLV: the sum of Vn's elements, at twice their size",
            en() + if_d(UNSIGNED, em(), elem_sext(em())),
        )
        .across_long(),
    ]
}
