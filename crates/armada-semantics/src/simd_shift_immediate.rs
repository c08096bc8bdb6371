//! AdvSIMD shift by immediate (the Arm ARM's encoding class): the integer element functions
//! of Vn and the shift amount, which the decoder puts in the immediate.

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

pub fn definitions() -> Vec<ElemDef> {
    let sh = imm::<X>;
    vec![
        ElemDef::new(V_SHL, "SHL: Vd = Vn << shift", en() << sh()),
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
