//! AdvSIMD three same (the Arm ARM's encoding class; and its by-element forms, which read one
//! element of Vm broadcast): the integer element functions. Each is the value of one
//! element of Vd from the same elements of Vn (`en`), Vm (`em`) and, accumulating, Vd's old
//! one (`ed`), at the element size in field e; arithmetic wraps within the element (the bits
//! above it are never stored).

use crate::def::ElemDef;
use crate::expr::*;
use armada_isa::ops::*;

pub fn definitions() -> Vec<ElemDef> {
    vec![
        ElemDef::new(V_ADD, "ADD (vector): Vd = Vn + Vm", en() + em()),
        ElemDef::new(V_SUB, "SUB (vector): Vd = Vn - Vm", en() - em()),
        ElemDef::new(V_MUL, "MUL (vector, by element): Vd = Vn * Vm", en() * em()),
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
    ]
}
