//! FP and AdvSIMD micro-op numbers (range starting at `ops::FP_BASE`).
//!
//! One micro-op per operation; the element size and the vector length are fields, so the same
//! op serves every arrangement and the scalar forms. Conventions shared by (almost) all of them:
//!
//! - `a` = Vd (destination), `b` = Vn, `c` = Vm, `d` = Va or a small selector (documented per op).
//! - `e` = log2 of the element size in bytes (0 = B, 1 = H, 2 = S, 3 = D).
//! - `f` = log2 of the number of bytes operated on: 4 = 128-bit vector, 3 = 64-bit vector
//!   (bits 127..64 of Vd are zeroed), `f == e` = scalar (one element; Vd above it is zeroed).
//!   For widening ops (`*L`, `*W`, `SHLL`, `FCVTL`) and narrowing ops (`*N`) `f` is instead the
//!   part: 0 = lower half, 1 = upper half (the "2" forms), 2 = scalar (one element).
//! - `imm & BY_ELEM` (in element-wise two-source ops): the second operand is element
//!   `imm & 15` of Vm, broadcast ("by element" forms).
//! - General registers (`V_UMOV`, `V_DUP_GEN`, conversions): 32 = zero register as a source,
//!   33 = sink as a destination, as `uop::reg`; the base register of structure loads/stores
//!   is 0..=31 with 31 = SP.

/// Flag in `imm` of element-wise two-source ops: the second operand is `Vm[imm & 15]`.
pub const BY_ELEM: u64 = 0x100;

/// `f` of widening and narrowing ops for the scalar forms (one element).
pub const PART_SCALAR: u8 = 2;

/// Flag in `d` of the structure loads/stores: write the base register back (post-index).
pub const LDST_WB: u8 = 0x80;

/// FP rounding selectors (`d` of `F_RINT` and the FP to integer conversions).
pub mod rmode {
    pub const N: u8 = 0; // to nearest, ties to even
    pub const P: u8 = 1; // towards +inf
    pub const M: u8 = 2; // towards -inf
    pub const Z: u8 = 3; // towards zero
    pub const A: u8 = 4; // to nearest, ties away from zero
    pub const FPCR: u8 = 5; // FPCR.RMode (FRINTI)
    pub const FPCR_EXACT: u8 = 6; // FPCR.RMode, Inexact raised when the value changes (FRINTX)
}

/// Flags in `d` of `F_CMP` and `F_CCMP`.
pub mod fcmp {
    /// `F_CMP`: compare with +0.0.
    pub const ZERO: u8 = 1;
    /// `F_CMP`: signalling compare (FCMPE): any NaN operand is an Invalid Operation.
    pub const SIGNAL: u8 = 2;
    /// `F_CCMP`: signalling compare (FCCMPE); bits 3..0 are the condition.
    pub const CCMP_SIGNAL: u8 = 0x10;
}

/// Comparison selectors of `V_CMP0` and `F_CMP0` (`d`).
pub mod cmp0 {
    pub const EQ: u8 = 0;
    pub const GE: u8 = 1;
    pub const GT: u8 = 2;
    pub const LE: u8 = 3;
    pub const LT: u8 = 4;
}

/// Operations of `F_PAIR` / `F_REDUCE` (`d`).
pub mod fred {
    pub const ADD: u8 = 0;
    pub const MAX: u8 = 1;
    pub const MIN: u8 = 2;
    pub const MAXNM: u8 = 3;
    pub const MINNM: u8 = 4;
}

/// Saturation kinds of the narrowing ops `V_XTN` and `V_SHRN` (`d >> 1`).
pub mod narrow {
    /// Plain truncation (XTN, SHRN, RSHRN).
    pub const TRUNC: u8 = 0;
    /// Signed source, signed saturation (SQXTN, SQSHRN, SQRSHRN).
    pub const SS: u8 = 1;
    /// Unsigned source, unsigned saturation (UQXTN, UQSHRN, UQRSHRN).
    pub const UU: u8 = 2;
    /// Signed source, unsigned saturation (SQXTUN, SQSHRUN, SQRSHRUN).
    pub const SU: u8 = 3;
}

#[rustfmt::skip]
crate::ops::define_ops!(FpOps, 0x400, [
    // ---- moves, copies, permutes
    V_MOVI,      // a = Vd, imm = 64-bit pattern, f: 1/2/3 = H/S/D scalar (rest zeroed), 4 = imm in both halves
    V_ORR_IMM,   // a = Vd (read too), imm = 64-bit pattern, f = 3/4
    V_AND_IMM,   // a = Vd (read too), imm = 64-bit pattern (BIC with the pattern inverted), f = 3/4
    V_DUP_ELEM,  // a = Vd, b = Vn, e, f, imm = index: DUP (element), MOV (scalar), FMOV (register)
    V_DUP_GEN,   // a = Vd, b = Rn, e, f: DUP (general), FMOV (general) to H/S/D
    V_INS_ELEM,  // a = Vd, b = Vn, e, imm = destination index, d = source index
    V_INS_GEN,   // a = Vd, b = Rn, e, imm = index (INS (general), FMOV Vd.D[1], Xn)
    V_UMOV,      // a = Rd, b = Vn, e, imm = index: UMOV, FMOV to general
    V_SMOV,      // a = Rd, b = Vn, e, imm = index, f = 1 for Xd (0: Wd, upper 32 bits zero)
    V_EXT,       // a, b, c, f, imm = byte position
    V_TBL,       // a, b = first table register, c = indices, d = registers (1-4), e = 1 for TBX, f
    V_UZP,       // a, b, c, e, f, d = 0 (UZP1) / 1 (UZP2)
    V_ZIP,       // a, b, c, e, f, d = 0 (ZIP1) / 1 (ZIP2)
    V_TRN,       // a, b, c, e, f, d = 0 (TRN1) / 1 (TRN2)
    // ---- integer, element-wise (a, b, c, e, f)
    V_ADD, V_SUB, V_MUL, V_MLA, V_MLS, V_PMUL,
    V_AND, V_BIC, V_ORR, V_ORN, V_EOR, V_BSL, V_BIT, V_BIF,
    V_CMEQ, V_CMTST, V_CMGT, V_CMGE, V_CMHI, V_CMHS,
    V_CMP0,      // d = cmp0::*
    V_MAX,       // d = 1: unsigned
    V_MIN,       // d = 1: unsigned
    V_ABD,       // d bit 0: unsigned, bit 1: accumulate (SABA/UABA)
    V_HADD,      // d = 1: unsigned
    V_RHADD,     // d = 1: unsigned
    V_HSUB,      // d = 1: unsigned
    V_QADD,      // d = 1: unsigned (sets FPSR.QC)
    V_QSUB,      // d = 1: unsigned
    V_SUQADD,    // a = Vd (read too), b = Vn
    V_USQADD,    // a = Vd (read too), b = Vn
    V_SHL_REG,   // SSHL USHL SRSHL URSHL SQSHL UQSHL SQRSHL UQRSHL: d bit 0 unsigned, bit 1 round, bit 2 saturate
    V_SQDMULH,   // d = 1: rounding (SQRDMULH)
    V_DOT,       // e = 2, d = 1: unsigned: SDOT, UDOT (vector, by element): each word of Vd plus the dot product of the four bytes of Vn's and Vm's words there
    V_NEG, V_ABS, V_SQABS, V_SQNEG, V_NOT, V_CNT, V_CLZ, V_CLS, V_RBIT,
    V_REV,       // e, f, d = log2 of the container in bytes (REV16/32/64)
    V_ADDLP,     // e = source esize, f, d bit 0: unsigned, bit 1: accumulate (S/UADDLP, S/UADALP)
    V_URECPE, V_URSQRTE, // e = 2
    V_ADDP,      // a, b, c, e, f: ADDP (vector): each element the sum of a pair of the concatenation Vm:Vn
    V_MAXP,      // a, b, c, e, f, d bit 0: unsigned: SMAXP, UMAXP (pairs as V_ADDP's)
    V_MINP,      // a, b, c, e, f, d bit 0: unsigned: SMINP, UMINP (pairs as V_ADDP's)
    V_ADDV,      // a, b, e, f: ADDV, ADDP (scalar): Vd's element 0 the sum of Vn's elements (the rest 0)
    V_MAXV,      // a, b, e, f, d bit 0: unsigned: SMAXV, UMAXV (the largest of Vn's elements)
    V_MINV,      // a, b, e, f, d bit 0: unsigned: SMINV, UMINV (the smallest)
    V_ADDLV,     // a, b, e (Vn's size), f, d bit 0: unsigned: SADDLV, UADDLV (the sum at twice e)
    // ---- integer shifts by immediate (imm = shift)
    V_SHR,       // d bit 0: unsigned, bit 1: round, bit 2: accumulate (SSHR USHR SRSHR URSHR SSRA ...)
    V_SHL,
    V_QSHL_IMM,  // d = 0 SQSHL, 1 UQSHL, 2 SQSHLU
    V_SRI, V_SLI,
    V_SHRN,      // e = destination esize, f = part, d bit 0: round, d >> 1 = narrow::*
    V_XTN,       // e = destination esize, f = part, d >> 1 = narrow::*
    V_SHLL,      // e = source esize, f = part, imm = shift, d = 1: unsigned (SSHLL USHLL SHLL)
    // ---- integer, three different (e = source (narrow) esize, f = part; d = 1: unsigned)
    V_ADDL, V_SUBL, V_ADDW, V_SUBW, V_MULL, V_MLAL, V_MLSL, V_ABDL, V_ABAL,
    V_ADDHN,     // d = 1: rounding (RADDHN); e = destination esize
    V_SUBHN,     // d = 1: rounding (RSUBHN); e = destination esize
    V_PMULL,     // e = 0 (8B -> 8H) or 3 (1D -> 1Q)
    V_SQDMULL, V_SQDMLAL, V_SQDMLSL,
    // ---- FP, element-wise (a, b, c, e = 2/3 (1 = H where noted), f)
    F_ADD, F_SUB, F_MUL, F_DIV, F_MULX, F_NMUL, F_ABD,
    F_MAX, F_MIN, F_MAXNM, F_MINNM,
    F_RECPS, F_RSQRTS,
    F_CMEQ, F_CMGE, F_CMGT, F_ACGE, F_ACGT,
    F_CMP0,      // d = cmp0::*
    F_MADD,      // d = Va: Vd = Va + Vn*Vm fused (FMADD; FMLA with d = a)
    F_MSUB,      // Vd = Va - Vn*Vm (FMSUB; FMLS with d = a)
    F_NMADD,     // Vd = -Va - Vn*Vm
    F_NMSUB,     // Vd = -Va + Vn*Vm
    F_ABS, F_NEG, F_SQRT,
    F_RINT,      // d = rmode::*
    F_RECPE, F_RSQRTE, F_RECPX,
    F_PAIR,      // d = fred::*: FADDP FMAXP ... (vector)
    F_REDUCE,    // d = fred::*, f = source bytes: FMAXV ..., scalar FADDP ...
    // ---- FP conversions
    F_CVT,       // scalar: a, b, e = destination esize (1/2/3), d = source esize (1/2/3)
    F_CVTL,      // e = source esize (1/2), f = part: FCVTL, FCVTL2
    F_CVTN,      // e = source esize (2/3), f = part or PART_SCALAR, d = 1: round to odd (FCVTXN)
    F_TO_INT,    // a = Rd, b = Vn, e = source esize, d = rmode | unsigned << 3, f = 1: 64-bit Rd, imm = fbits
    INT_TO_F,    // a = Vd, b = Rn, e = destination esize, d = 1: unsigned, f = 1: 64-bit Rn, imm = fbits
    F_TO_INT_V,  // a, b, e, f, d = rmode | unsigned << 3, imm = fbits (FCVTZS (vector) ...)
    INT_TO_F_V,  // a, b, e, f, d = 1: unsigned, imm = fbits (SCVTF (vector) ...)
    // ---- FP scalar compare and select (e = esize)
    F_CMP,       // b = Vn, c = Vm, d = fcmp::ZERO | fcmp::SIGNAL (FCMP, FCMPE)
    F_CCMP,      // b, c, d = cond | fcmp::CCMP_SIGNAL, imm = nzcv when the condition fails (FCCMP, FCCMPE)
    F_CSEL,      // a, b, c, d = cond
    // ---- structure loads and stores (a = Vt, b = Rn|SP, c = Rm or 32 (zero register),
    //      post-index adds X[c] + imm to the base when d & LDST_WB)
    V_LD_MULTI,  // e, f = 3/4, d = selem | rpt << 3 | LDST_WB (LD1..LD4 multiple structures)
    V_ST_MULTI,
    V_LD_SINGLE, // e, f = lane index, d = selem | LDST_WB (LD1..LD4 single structure)
    V_ST_SINGLE,
    V_LD_REPL,   // e, f = 3/4, d = selem | LDST_WB (LD1R..LD4R)
]);
