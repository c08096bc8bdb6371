//! Floating-point data processing (the Arm ARM's one- and two-source classes, scalar, and
//! AdvSIMD's three-same and two-register-miscellaneous FP forms): the element functions of
//! FP arithmetic, FADD ... FRSQRTS, the compares FCMEQ ... FACGT and the estimates.
//!
//! An FP element function is written over the FP operations every engine already has as
//! primitives (FPAdd, FPMul, FPCompareGE, FPRecipEstimate ...), not over bits: each engine's
//! arithmetic is its own and stays so (the interpreter's exact soft-float beside the host's
//! floats, the kernel's hardware floats that leave the hard cases to the host, the shader's
//! integer soft-float, since WGSL has no f64). What is written once is which operations an op
//! is made of, as the manual's pseudocode composes them: FNMUL is FPNeg(FPMul(..)), FABD
//! FPAbs(FPSub(..)), FACGE FPCompareGE(FPAbs(..), FPAbs(..)). Each operation's spelling in
//! each language is one row of `text_fp::FP_SPELLINGS`.
//!
//! Left by hand, and why: FMADD and its kin (the addend is Va, field d names it), FCMxx
//! against zero (field d chooses the comparison and which side zero is on), FRINT* and the
//! conversions (field d's rounding mode, FPCR's when d says so, fixed-point fractions in the
//! immediate), the pairwise and across-lanes folds (their loops), FABS and FNEG (bit
//! operations, which each engine runs outside its FP code).

use armada_isa::ops::*;

/// A value of an FP element function: Vn's element (`N`), Vm's (`M`, or one of Vm broadcast
/// in the by-element forms), an operation of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FpExpr {
    N,
    M,
    Op(FpOp, Vec<FpExpr>),
    /// The value with its sign bit flipped (FPNeg: NaNs too).
    Neg(Box<FpExpr>),
    /// The value with its sign bit clear (FPAbs: NaNs too).
    Abs(Box<FpExpr>),
    /// All ones where the comparison of the two holds, else zero (FCMEQ's quiet compare,
    /// FCMGE's and FCMGT's signalling ones: a NaN is unordered, so zero).
    OnesIf(FpCmp, Box<FpExpr>, Box<FpExpr>),
}

/// The FP operations, as the manual names them; each rounds as FPCR says, flushes and
/// takes NaNs as it says, and raises the cumulative flags in FPSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FpOp {
    Add,
    Sub,
    Mul,
    /// FPMulX: as FPMul, but infinity times zero is 2.0 with the product's sign.
    MulX,
    Div,
    Max,
    Min,
    /// FPMaxNum, FPMinNum: a quiet NaN against a number gives the number.
    MaxNum,
    MinNum,
    /// FPRecipStepFused: 2 - a * b, fused.
    RecipStep,
    /// FPRSqrtStepFused: (3 - a * b) / 2, fused.
    RSqrtStep,
    Sqrt,
    RecipEstimate,
    RSqrtEstimate,
    /// FPRecpX: the reciprocal's exponent.
    RecipExponent,
}

impl FpOp {
    /// How many operands it takes.
    pub fn arity(self) -> usize {
        match self {
            FpOp::Sqrt | FpOp::RecipEstimate | FpOp::RSqrtEstimate | FpOp::RecipExponent => 1,
            _ => 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FpCmp {
    Eq,
    Ge,
    Gt,
}

/// One FP element function: the value of an element of Vd (single or double precision, as
/// field e says) from the same elements of Vn and Vm.
#[derive(Clone, Debug)]
pub struct FpDef {
    pub op: u16,
    pub doc: &'static str,
    pub value: FpExpr,
}

impl FpDef {
    pub fn name(&self) -> &'static str {
        armada_isa::ops::name(self.op)
    }

    /// Whether it reads Vm (FSQRT and the estimates do not).
    pub fn reads_m(&self) -> bool {
        fn reads(e: &FpExpr) -> bool {
            match e {
                FpExpr::M => true,
                FpExpr::N => false,
                FpExpr::Op(_, v) => v.iter().any(reads),
                FpExpr::Neg(a) | FpExpr::Abs(a) => reads(a),
                FpExpr::OnesIf(_, a, b) => reads(a) || reads(b),
            }
        }
        reads(&self.value)
    }
}

fn n() -> FpExpr {
    FpExpr::N
}

fn m() -> FpExpr {
    FpExpr::M
}

fn op(o: FpOp, args: Vec<FpExpr>) -> FpExpr {
    assert_eq!(args.len(), o.arity(), "{o:?}'s operands");
    FpExpr::Op(o, args)
}

fn neg(a: FpExpr) -> FpExpr {
    FpExpr::Neg(Box::new(a))
}

fn abs(a: FpExpr) -> FpExpr {
    FpExpr::Abs(Box::new(a))
}

fn ones_if(c: FpCmp, a: FpExpr, b: FpExpr) -> FpExpr {
    FpExpr::OnesIf(c, Box::new(a), Box::new(b))
}

fn def(op: u16, doc: &'static str, value: FpExpr) -> FpDef {
    FpDef { op, doc, value }
}

pub fn definitions() -> Vec<FpDef> {
    use FpOp::*;
    let two = |o| op(o, vec![n(), m()]);
    let one = |o| op(o, vec![n()]);
    vec![
        def(F_ADD, "FADD: Vn + Vm", two(Add)),
        def(F_SUB, "FSUB: Vn - Vm", two(Sub)),
        def(F_MUL, "FMUL: Vn * Vm", two(Mul)),
        def(F_DIV, "FDIV: Vn / Vm", two(Div)),
        def(F_MULX, "FMULX: Vn * Vm, infinity times zero 2.0", two(MulX)),
        def(F_NMUL, "FNMUL: -(Vn * Vm)", neg(two(Mul))),
        def(F_ABD, "FABD: |Vn - Vm|", abs(two(Sub))),
        def(F_MAX, "FMAX: the larger of Vn and Vm", two(Max)),
        def(F_MIN, "FMIN: the smaller of Vn and Vm", two(Min)),
        def(
            F_MAXNM,
            "FMAXNM: the larger, a quiet NaN losing to a number",
            two(MaxNum),
        ),
        def(
            F_MINNM,
            "FMINNM: the smaller, a quiet NaN losing to a number",
            two(MinNum),
        ),
        def(F_RECPS, "FRECPS: 2 - Vn * Vm, fused", two(RecipStep)),
        def(
            F_RSQRTS,
            "FRSQRTS: (3 - Vn * Vm) / 2, fused",
            two(RSqrtStep),
        ),
        def(
            F_CMEQ,
            "FCMEQ (register): ones where Vn == Vm",
            ones_if(FpCmp::Eq, n(), m()),
        ),
        def(
            F_CMGE,
            "FCMGE (register): ones where Vn >= Vm",
            ones_if(FpCmp::Ge, n(), m()),
        ),
        def(
            F_CMGT,
            "FCMGT (register): ones where Vn > Vm",
            ones_if(FpCmp::Gt, n(), m()),
        ),
        def(
            F_ACGE,
            "FACGE: ones where |Vn| >= |Vm|",
            ones_if(FpCmp::Ge, abs(n()), abs(m())),
        ),
        def(
            F_ACGT,
            "FACGT: ones where |Vn| > |Vm|",
            ones_if(FpCmp::Gt, abs(n()), abs(m())),
        ),
        def(F_SQRT, "FSQRT: the square root of Vn", one(Sqrt)),
        def(
            F_RECPE,
            "FRECPE: the reciprocal estimate of Vn",
            one(RecipEstimate),
        ),
        def(
            F_RSQRTE,
            "FRSQRTE: the reciprocal square root estimate of Vn",
            one(RSqrtEstimate),
        ),
        def(
            F_RECPX,
            "FRECPX: the reciprocal exponent of Vn",
            one(RecipExponent),
        ),
    ]
}
