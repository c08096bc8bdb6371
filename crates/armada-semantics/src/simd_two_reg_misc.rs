//! AdvSIMD two-register miscellaneous (the Arm ARM's encoding class): the integer element
//! functions of Vn alone (see `simd_three_same` for the element operands).

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

pub fn definitions() -> Vec<ElemDef> {
    // all ones where Vn's element is negative
    let negative = || ones_if(Cmp::Gt, 0.into(), en());
    vec![
        ElemDef::new(V_NEG, "NEG (vector): Vd = -Vn", -en()),
        // (-x where x < 0: x XOR ones, minus ones)
        ElemDef::new(
            V_ABS,
            "ABS: Vd = |Vn|, signed",
            (en() ^ negative()) - negative(),
        ),
    ]
}
