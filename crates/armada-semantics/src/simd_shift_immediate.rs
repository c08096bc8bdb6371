//! AdvSIMD shift by immediate (the Arm ARM's encoding class): the integer element functions
//! of Vn and the shift amount, which the decoder puts in the immediate.

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

pub fn definitions() -> Vec<ElemDef> {
    vec![ElemDef::new(
        V_SHL,
        "SHL: Vd = Vn << shift",
        en() << imm::<X>(),
    )]
}
