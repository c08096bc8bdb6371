//! A definition: what a micro-op does to the registers and flags, as expressions.

use crate::expr::{Bits, Expr, Width, V};

/// What a micro-op does to the registers and flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Rd (field a) = the value, a 32-bit one zero-extended.
    Rd(Expr),
    /// Rd = a + b + carry, and NZCV = that addition's flags (ADDS; SUBS as a + !b + 1; ADCS,
    /// SBCS with the carry flag). `compare`: a compare, which CmpLog records (ADCS and SBCS
    /// are not).
    AddFlags {
        a: Expr,
        b: Expr,
        carry: Expr,
        compare: bool,
    },
    /// Rd = the value, and NZCV = its N and Z with C and V clear (ANDS, BICS).
    LogicFlags(Expr),
    /// NZCV = the flags of a + b + carry if the condition in field e holds, else field f
    /// (CCMP, CCMN). Writes no register.
    CondFlags { a: Expr, b: Expr, carry: Expr },
}

/// One micro-op's meaning.
#[derive(Clone, Debug)]
pub struct Def {
    /// The micro-op (`armada_isa::ops`).
    pub op: u16,
    /// What it does, in the manual's words.
    pub doc: &'static str,
    pub effect: Effect,
}

impl Def {
    /// Rd = `rd`.
    pub fn new<T: Bits>(op: u16, doc: &'static str, rd: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::Rd(rd.into_expr()),
        }
    }

    /// Rd = `a + b + carry`, NZCV its flags; a compare unless the carry is the flag.
    pub fn add_flags<T: Bits>(op: u16, doc: &'static str, a: V<T>, b: V<T>, carry: V<T>) -> Def {
        let carry = carry.into_expr();
        Def {
            op,
            doc,
            effect: Effect::AddFlags {
                a: a.into_expr(),
                b: b.into_expr(),
                compare: !matches!(carry, Expr::Carry(_)),
                carry,
            },
        }
    }

    /// Rd = `v`, NZCV its N and Z.
    pub fn logic_flags<T: Bits>(op: u16, doc: &'static str, v: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::LogicFlags(v.into_expr()),
        }
    }

    /// NZCV = the flags of `a + b + carry` where the condition in e holds, else field f.
    pub fn cond_flags<T: Bits>(op: u16, doc: &'static str, a: V<T>, b: V<T>, carry: V<T>) -> Def {
        Def {
            op,
            doc,
            effect: Effect::CondFlags {
                a: a.into_expr(),
                b: b.into_expr(),
                carry: carry.into_expr(),
            },
        }
    }

    /// The width it computes at.
    pub fn width(&self) -> Width {
        match &self.effect {
            Effect::Rd(v) | Effect::LogicFlags(v) => v.width(),
            Effect::AddFlags { a, .. } | Effect::CondFlags { a, .. } => a.width(),
        }
    }

    /// Every value it computes.
    pub fn values(&self) -> Vec<&Expr> {
        match &self.effect {
            Effect::Rd(v) | Effect::LogicFlags(v) => vec![v],
            Effect::AddFlags { a, b, carry, .. } | Effect::CondFlags { a, b, carry } => {
                vec![a, b, carry]
            }
        }
    }

    /// The micro-op's name (`MADD_W`).
    pub fn name(&self) -> &'static str {
        armada_isa::ops::name(self.op)
    }
}

/// One SIMD element function's meaning: each element of Vd is the value, computed from the
/// same element of the operands ([`crate::expr::Lane`]) at the element size in field e, over
/// the 2^f bytes of the vector (the bytes above cleared). Each engine keeps its own loop over
/// the elements (and its own reading of a by-element Vm); the definition is the element.
#[derive(Clone, Debug)]
pub struct ElemDef {
    /// The micro-op (`armada_isa::ops`).
    pub op: u16,
    /// What it does, in the manual's words.
    pub doc: &'static str,
    /// The element, in 64 bits (only the element's bits are stored).
    pub value: Expr,
    /// A saturating op's: not zero where the element saturated, which sets FPSR.QC.
    pub saturated: Option<Expr>,
    /// Which elements of the operands make an element of Vd.
    pub shape: Shape,
}

/// Which elements of the operands an element function reads for each element of Vd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The same element of Vn, Vm (or one of Vm broadcast, by element) and Vd, at the element
    /// size in field e.
    Same,
    /// A long op (SADDL, UMULL, SQDMLAL ...): the value is an element of twice the size in
    /// field e, from Vn's and Vm's elements of field e's size in the part field f names (the
    /// upper half for the "2" forms); Vd's old element (`ed`) and Vn's wide one (`en_wide`)
    /// are at twice the size.
    Long,
    /// A pairwise op (ADDP, SMAXP ...): element i of Vd is the value of the pair of adjacent
    /// elements 2i and 2i + 1 of the concatenation Vm:Vn (Vn's elements first), read as Vn's
    /// (`en`) and Vm's (`em`) elements.
    Pairwise,
    /// An across-lanes reduction (ADDV, SMAXV ...): element 0 of Vd (the rest of Vd zero) is
    /// the fold of Vn's elements, from the first, each step the value of the fold so far
    /// (read as Vn's element, `en`) and the next element (as Vm's, `em`).
    Across,
    /// A long across-lanes reduction (SADDLV, UADDLV): element 0 of Vd, at twice the size in
    /// field e (the rest of Vd zero), is the fold of Vn's elements from 0, each step the value
    /// of the fold so far (`en`, at twice the size) and the next element (`em`).
    AcrossLong,
    /// A narrowing op (XTN, SQXTN, SHRN, SQRSHRUN, ADDHN ...): the value is an element of
    /// field e's size from Vn's and Vm's elements at twice it (`en`, `em`: the whole wide
    /// elements), in the lower half of Vd (the upper half zero), or for the "2" forms (field
    /// f 1) in the upper half (the lower half kept); a scalar form (field f 2) is one element.
    Narrow,
}

impl ElemDef {
    pub fn new(op: u16, doc: &'static str, value: V<crate::expr::X>) -> ElemDef {
        ElemDef {
            op,
            doc,
            value: value.into_expr(),
            saturated: None,
            shape: Shape::Same,
        }
    }

    /// The same function as a long one ([`Shape::Long`]).
    pub fn long(self) -> ElemDef {
        ElemDef {
            shape: Shape::Long,
            ..self
        }
    }

    /// The same function as a narrowing one ([`Shape::Narrow`]).
    pub fn narrow(self) -> ElemDef {
        ElemDef {
            shape: Shape::Narrow,
            ..self
        }
    }

    /// The same function as the step of a fold over Vn's elements ([`Shape::Across`]).
    pub fn across(self) -> ElemDef {
        ElemDef {
            shape: Shape::Across,
            ..self
        }
    }

    /// The same function as the step of a long fold ([`Shape::AcrossLong`]).
    pub fn across_long(self) -> ElemDef {
        ElemDef {
            shape: Shape::AcrossLong,
            ..self
        }
    }

    /// The same function over pairs of adjacent elements ([`Shape::Pairwise`]).
    pub fn pairwise(self) -> ElemDef {
        ElemDef {
            shape: Shape::Pairwise,
            ..self
        }
    }

    /// A saturating element function: the value, and where it saturated (FPSR.QC).
    pub fn saturating(
        op: u16,
        doc: &'static str,
        value: V<crate::expr::X>,
        saturated: V<crate::expr::X>,
    ) -> ElemDef {
        ElemDef {
            saturated: Some(saturated.into_expr()),
            ..ElemDef::new(op, doc, value)
        }
    }

    /// The op's name (`armada_isa::ops`).
    pub fn name(&self) -> &'static str {
        armada_isa::ops::name(self.op)
    }

    /// Whether the value reads Vd's old element (an accumulating op).
    pub fn reads_d(&self) -> bool {
        self.exprs().any(|e| reads(e, crate::expr::Lane::D))
    }

    /// Whether the value reads Vm's element (a unary op does not).
    pub fn reads_m(&self) -> bool {
        self.exprs().any(|e| reads(e, crate::expr::Lane::M))
    }

    /// Whether the value reads Vn's element (a long op's wide-operand form may not).
    pub fn reads_n(&self) -> bool {
        self.exprs().any(|e| reads(e, crate::expr::Lane::N))
    }

    /// Whether the value reads Vn's wide element (SADDW ...).
    pub fn reads_wide(&self) -> bool {
        self.exprs().any(|e| reads(e, crate::expr::Lane::W))
    }

    /// The value and, saturating, where it saturated.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        std::iter::once(&self.value).chain(self.saturated.as_ref())
    }
}

/// Whether `e` reads element operand `lane`.
fn reads(e: &Expr, lane: crate::expr::Lane) -> bool {
    *e == Expr::Elem(lane) || e.children().into_iter().any(|c| reads(c, lane))
}
