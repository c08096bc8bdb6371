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

/// All ones where Vn's element is above Vm's: unsigned or signed as field d says.
fn above() -> V<X> {
    if_d(
        UNSIGNED,
        ones_if(Cmp::Hi, en(), em()),
        ones_if(Cmp::Gt, en(), em()),
    )
}

/// `a` where `mask` is all ones, `b` where it is 0.
fn pick(mask: V<X>, a: V<X>, b: V<X>) -> V<X> {
    (a & mask.clone()) | (b & !mask)
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
        ElemDef::new(
            V_MAX,
            "SMAX, UMAX: the larger of Vn and Vm",
            pick(above(), en(), em()),
        ),
        ElemDef::new(
            V_MIN,
            "SMIN, UMIN: the smaller of Vn and Vm",
            pick(above(), em(), en()),
        ),
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
    ]
}
