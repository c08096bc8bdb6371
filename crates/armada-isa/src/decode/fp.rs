//! Data-processing (scalar floating-point) and the conversions between floating-point and
//! integer / fixed-point: the Arm ARM classes under "Data Processing -- Scalar Floating-Point
//! and Advanced SIMD" whose encodings start `x0x11110` / `x0x11111`.
//!
//! Field letters: `t` = ftype (00 S, 01 D, 11 H, 10 reserved), `s` = sf, `n`/`m`/`d`/`a` =
//! registers, `c` = cond, `v` = nzcv, `i` = imm8, `k` = scale, `o` = an opcode field.
//! Half precision is decoded only for FCVT and FMOV (general/immediate); FP16 arithmetic
//! (FEAT_FP16) stays UNDEFINED.

use super::{enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::MicroOp;

/// log2 of the element size in bytes for an ftype, when arithmetic on it is implemented.
fn ty(f: &Fields) -> Option<u8> {
    match f.get('t') {
        0 => Some(2),
        1 => Some(3),
        _ => None,
    }
}

/// log2 of the element size for an ftype, half precision included (conversions, moves).
fn ty_h(f: &Fields) -> Option<u8> {
    match f.get('t') {
        0 => Some(2),
        1 => Some(3),
        3 => Some(1),
        _ => None,
    }
}

/// Scalar one-source op on Vn -> Vd.
fn one(f: &Fields, op: u16) -> Option<MicroOp> {
    let e = ty(f)?;
    Some(MicroOp::new(op).a(f.r('d')).b(f.r('n')).e(e).f(e))
}

/// Scalar two-source op Vn, Vm -> Vd.
fn two(f: &Fields, op: u16) -> Option<MicroOp> {
    let e = ty(f)?;
    Some(
        MicroOp::new(op)
            .a(f.r('d'))
            .b(f.r('n'))
            .c(f.r('m'))
            .e(e)
            .f(e),
    )
}

/// Scalar three-source op: Vd = op(Va, Vn, Vm).
fn three(f: &Fields, op: u16) -> Option<MicroOp> {
    Some(two(f, op)?.d(f.r('a')))
}

fn rint(f: &Fields, mode: u8) -> Option<MicroOp> {
    Some(one(f, F_RINT)?.d(mode))
}

/// FCVT: `o` is the destination type.
fn fcvt(f: &Fields) -> Option<MicroOp> {
    let src = ty_h(f)?;
    let dst = match f.get('o') {
        0 => 2,
        1 => 3,
        3 => 1,
        _ => return None,
    };
    if src == dst {
        return None;
    }
    Some(MicroOp::new(F_CVT).a(f.r('d')).b(f.r('n')).e(dst).d(src))
}

/// VFPExpandImm for a 16/32/64-bit format.
pub(crate) fn vfp_expand_imm(imm8: u32, e: u8) -> u64 {
    let (ebits, fbits) = match e {
        1 => (5u32, 10u32),
        2 => (8, 23),
        _ => (11, 52),
    };
    let imm8 = imm8 as u64;
    let sign = (imm8 >> 7) & 1;
    let b6 = (imm8 >> 6) & 1;
    // exp = NOT(imm8<6>) : Replicate(imm8<6>, E-3) : imm8<5:4>
    let mut exp = (b6 ^ 1) << (ebits - 1);
    if b6 == 1 {
        exp |= ((1u64 << (ebits - 3)) - 1) << 2;
    }
    exp |= (imm8 >> 4) & 3;
    let frac = (imm8 & 15) << (fbits - 4);
    (sign << (ebits + fbits)) | (exp << fbits) | frac
}

fn fmov_imm(f: &Fields) -> Option<MicroOp> {
    let e = ty_h(f)?;
    Some(
        MicroOp::new(V_MOVI)
            .a(f.r('d'))
            .imm(vfp_expand_imm(f.get('i'), e))
            .f(e),
    )
}

fn fcmp(f: &Fields, zero: bool, signal: bool) -> Option<MicroOp> {
    let e = ty(f)?;
    let m = if zero { 0 } else { f.r('m') };
    let d = if zero { fcmp::ZERO } else { 0 } | if signal { fcmp::SIGNAL } else { 0 };
    Some(MicroOp::new(F_CMP).b(f.r('n')).c(m).e(e).d(d))
}

fn fccmp(f: &Fields, signal: bool) -> Option<MicroOp> {
    let e = ty(f)?;
    let sig = if signal { fcmp::CCMP_SIGNAL } else { 0 };
    Some(
        MicroOp::new(F_CCMP)
            .b(f.r('n'))
            .c(f.r('m'))
            .e(e)
            .d(f.get('c') as u8 | sig)
            .imm((f.get('v') as u64) << 28),
    )
}

fn fcsel(f: &Fields) -> Option<MicroOp> {
    Some(two(f, F_CSEL)?.d(f.get('c') as u8))
}

/// FP to integer (FCVT[NPMZA][SU] scalar, and FCVTZ[SU] fixed-point with `fbits`).
fn to_int(f: &Fields, mode: u8, unsigned: bool, fbits: u32) -> Option<MicroOp> {
    let e = ty(f)?;
    let sf = f.get('s');
    Some(
        MicroOp::new(F_TO_INT)
            .a(f.wz('d'))
            .b(f.r('n'))
            .e(e)
            .d(mode | (unsigned as u8) << 3)
            .f(sf as u8)
            .imm(fbits as u64),
    )
}

/// Integer to FP (SCVTF/UCVTF scalar, and the fixed-point forms).
fn from_int(f: &Fields, unsigned: bool, fbits: u32) -> Option<MicroOp> {
    let e = ty(f)?;
    let sf = f.get('s');
    Some(
        MicroOp::new(INT_TO_F)
            .a(f.r('d'))
            .b(f.rz('n'))
            .e(e)
            .d(unsigned as u8)
            .f(sf as u8)
            .imm(fbits as u64),
    )
}

/// fbits of the fixed-point forms: 64 - scale, and at most 32 for a 32-bit integer.
fn fbits(f: &Fields) -> Option<u32> {
    let scale = f.get('k');
    if f.get('s') == 0 && scale < 32 {
        return None;
    }
    Some(64 - scale)
}

/// FMOV (general), general -> FP register: `e` is the FP size; the rest of Vd is zeroed.
fn fmov_to_v(f: &Fields, e: u8) -> Option<MicroOp> {
    Some(MicroOp::new(V_DUP_GEN).a(f.r('d')).b(f.rz('n')).e(e).f(e))
}

/// FMOV (general), FP register -> general (zero-extended).
fn fmov_from_v(f: &Fields, e: u8, index: u64) -> Option<MicroOp> {
    Some(
        MicroOp::new(V_UMOV)
            .a(f.wz('d'))
            .b(f.r('n'))
            .e(e)
            .imm(index),
    )
}

#[rustfmt::skip]
pub(super) const TABLE: &[Encoding] = &[
    // --- Floating-point data-processing (1 source)
    enc("FMOV (register)",          "00011110 tt1 000000 10000 nnnnn ddddd", |f| { let e = ty_h(f)?; Some(MicroOp::new(V_DUP_ELEM).a(f.r('d')).b(f.r('n')).e(e).f(e)) }),
    enc("FABS (scalar)",            "00011110 tt1 000001 10000 nnnnn ddddd", |f| one(f, F_ABS)),
    enc("FNEG (scalar)",            "00011110 tt1 000010 10000 nnnnn ddddd", |f| one(f, F_NEG)),
    enc("FSQRT (scalar)",           "00011110 tt1 000011 10000 nnnnn ddddd", |f| one(f, F_SQRT)),
    enc("FCVT",                     "00011110 tt1 0001oo 10000 nnnnn ddddd", fcvt),
    enc("FRINTN (scalar)",          "00011110 tt1 001000 10000 nnnnn ddddd", |f| rint(f, rmode::N)),
    enc("FRINTP (scalar)",          "00011110 tt1 001001 10000 nnnnn ddddd", |f| rint(f, rmode::P)),
    enc("FRINTM (scalar)",          "00011110 tt1 001010 10000 nnnnn ddddd", |f| rint(f, rmode::M)),
    enc("FRINTZ (scalar)",          "00011110 tt1 001011 10000 nnnnn ddddd", |f| rint(f, rmode::Z)),
    enc("FRINTA (scalar)",          "00011110 tt1 001100 10000 nnnnn ddddd", |f| rint(f, rmode::A)),
    enc("FRINTX (scalar)",          "00011110 tt1 001110 10000 nnnnn ddddd", |f| rint(f, rmode::FPCR_EXACT)),
    enc("FRINTI (scalar)",          "00011110 tt1 001111 10000 nnnnn ddddd", |f| rint(f, rmode::FPCR)),
    // --- Floating-point compare
    enc("FCMP",                     "00011110 tt1 mmmmm 001000 nnnnn 00000", |f| fcmp(f, false, false)),
    enc("FCMP (zero)",              "00011110 tt1 ----- 001000 nnnnn 01000", |f| fcmp(f, true, false)),
    enc("FCMPE",                    "00011110 tt1 mmmmm 001000 nnnnn 10000", |f| fcmp(f, false, true)),
    enc("FCMPE (zero)",             "00011110 tt1 ----- 001000 nnnnn 11000", |f| fcmp(f, true, true)),
    // --- Floating-point immediate
    enc("FMOV (scalar, immediate)", "00011110 tt1 iiiiiiii 100 00000 ddddd", fmov_imm),
    // --- Floating-point conditional compare
    enc("FCCMP",                    "00011110 tt1 mmmmm cccc 01 nnnnn 0 vvvv", |f| fccmp(f, false)),
    enc("FCCMPE",                   "00011110 tt1 mmmmm cccc 01 nnnnn 1 vvvv", |f| fccmp(f, true)),
    // --- Floating-point data-processing (2 source)
    enc("FMUL (scalar)",            "00011110 tt1 mmmmm 0000 10 nnnnn ddddd", |f| two(f, F_MUL)),
    enc("FDIV (scalar)",            "00011110 tt1 mmmmm 0001 10 nnnnn ddddd", |f| two(f, F_DIV)),
    enc("FADD (scalar)",            "00011110 tt1 mmmmm 0010 10 nnnnn ddddd", |f| two(f, F_ADD)),
    enc("FSUB (scalar)",            "00011110 tt1 mmmmm 0011 10 nnnnn ddddd", |f| two(f, F_SUB)),
    enc("FMAX (scalar)",            "00011110 tt1 mmmmm 0100 10 nnnnn ddddd", |f| two(f, F_MAX)),
    enc("FMIN (scalar)",            "00011110 tt1 mmmmm 0101 10 nnnnn ddddd", |f| two(f, F_MIN)),
    enc("FMAXNM (scalar)",          "00011110 tt1 mmmmm 0110 10 nnnnn ddddd", |f| two(f, F_MAXNM)),
    enc("FMINNM (scalar)",          "00011110 tt1 mmmmm 0111 10 nnnnn ddddd", |f| two(f, F_MINNM)),
    enc("FNMUL (scalar)",           "00011110 tt1 mmmmm 1000 10 nnnnn ddddd", |f| two(f, F_NMUL)),
    // --- Floating-point conditional select
    enc("FCSEL",                    "00011110 tt1 mmmmm cccc 11 nnnnn ddddd", fcsel),
    // --- Floating-point data-processing (3 source)
    enc("FMADD",                    "00011111 tt0 mmmmm 0 aaaaa nnnnn ddddd", |f| three(f, F_MADD)),
    enc("FMSUB",                    "00011111 tt0 mmmmm 1 aaaaa nnnnn ddddd", |f| three(f, F_MSUB)),
    enc("FNMADD",                   "00011111 tt1 mmmmm 0 aaaaa nnnnn ddddd", |f| three(f, F_NMADD)),
    enc("FNMSUB",                   "00011111 tt1 mmmmm 1 aaaaa nnnnn ddddd", |f| three(f, F_NMSUB)),
    // --- Conversion between floating-point and fixed-point
    enc("SCVTF (scalar, fixed-point)",  "s0011110 tt0 00 010 kkkkkk nnnnn ddddd", |f| from_int(f, false, fbits(f)?)),
    enc("UCVTF (scalar, fixed-point)",  "s0011110 tt0 00 011 kkkkkk nnnnn ddddd", |f| from_int(f, true, fbits(f)?)),
    enc("FCVTZS (scalar, fixed-point)", "s0011110 tt0 11 000 kkkkkk nnnnn ddddd", |f| to_int(f, rmode::Z, false, fbits(f)?)),
    enc("FCVTZU (scalar, fixed-point)", "s0011110 tt0 11 001 kkkkkk nnnnn ddddd", |f| to_int(f, rmode::Z, true, fbits(f)?)),
    // --- Conversion between floating-point and integer
    enc("FCVTNS (scalar)",          "s0011110 tt1 00 000 000000 nnnnn ddddd", |f| to_int(f, rmode::N, false, 0)),
    enc("FCVTNU (scalar)",          "s0011110 tt1 00 001 000000 nnnnn ddddd", |f| to_int(f, rmode::N, true, 0)),
    enc("SCVTF (scalar, integer)",  "s0011110 tt1 00 010 000000 nnnnn ddddd", |f| from_int(f, false, 0)),
    enc("UCVTF (scalar, integer)",  "s0011110 tt1 00 011 000000 nnnnn ddddd", |f| from_int(f, true, 0)),
    enc("FCVTAS (scalar)",          "s0011110 tt1 00 100 000000 nnnnn ddddd", |f| to_int(f, rmode::A, false, 0)),
    enc("FCVTAU (scalar)",          "s0011110 tt1 00 101 000000 nnnnn ddddd", |f| to_int(f, rmode::A, true, 0)),
    enc("FMOV (general, S to W)",   "00011110 001 00 110 000000 nnnnn ddddd", |f| fmov_from_v(f, 2, 0)),
    enc("FMOV (general, W to S)",   "00011110 001 00 111 000000 nnnnn ddddd", |f| fmov_to_v(f, 2)),
    enc("FMOV (general, H to W)",   "00011110 111 00 110 000000 nnnnn ddddd", |f| fmov_from_v(f, 1, 0)),
    enc("FMOV (general, W to H)",   "00011110 111 00 111 000000 nnnnn ddddd", |f| fmov_to_v(f, 1)),
    enc("FMOV (general, H to X)",   "10011110 111 00 110 000000 nnnnn ddddd", |f| fmov_from_v(f, 1, 0)),
    enc("FMOV (general, X to H)",   "10011110 111 00 111 000000 nnnnn ddddd", |f| fmov_to_v(f, 1)),
    enc("FMOV (general, D to X)",   "10011110 011 00 110 000000 nnnnn ddddd", |f| fmov_from_v(f, 3, 0)),
    enc("FMOV (general, X to D)",   "10011110 011 00 111 000000 nnnnn ddddd", |f| fmov_to_v(f, 3)),
    enc("FMOV (general, D[1] to X)", "10011110 101 01 110 000000 nnnnn ddddd", |f| fmov_from_v(f, 3, 1)),
    enc("FMOV (general, X to D[1])", "10011110 101 01 111 000000 nnnnn ddddd", |f| Some(MicroOp::new(V_INS_GEN).a(f.r('d')).b(f.rz('n')).e(3).imm(1))),
    enc("FCVTPS (scalar)",          "s0011110 tt1 01 000 000000 nnnnn ddddd", |f| to_int(f, rmode::P, false, 0)),
    enc("FCVTPU (scalar)",          "s0011110 tt1 01 001 000000 nnnnn ddddd", |f| to_int(f, rmode::P, true, 0)),
    enc("FCVTMS (scalar)",          "s0011110 tt1 10 000 000000 nnnnn ddddd", |f| to_int(f, rmode::M, false, 0)),
    enc("FCVTMU (scalar)",          "s0011110 tt1 10 001 000000 nnnnn ddddd", |f| to_int(f, rmode::M, true, 0)),
    enc("FCVTZS (scalar, integer)", "s0011110 tt1 11 000 000000 nnnnn ddddd", |f| to_int(f, rmode::Z, false, 0)),
    enc("FCVTZU (scalar, integer)", "s0011110 tt1 11 001 000000 nnnnn ddddd", |f| to_int(f, rmode::Z, true, 0)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_named;
    use crate::uop::reg;

    fn d(word: u32) -> (MicroOp, &'static str) {
        decode_named(word, 0x40_0000)
    }

    #[test]
    fn arithmetic() {
        // fadd d0, d1, d2
        let (u, n) = d(0x1e622820);
        assert_eq!(n, "FADD (scalar)");
        assert_eq!((u.op, u.a, u.b, u.c, u.e, u.f), (F_ADD, 0, 1, 2, 3, 3));
        // fmul s3, s4, s5
        let (u, _) = d(0x1e250883);
        assert_eq!((u.op, u.a, u.b, u.c, u.e, u.f), (F_MUL, 3, 4, 5, 2, 2));
        // fnmul d0, d1, d2
        assert_eq!(d(0x1e628820).0.op, F_NMUL);
        // fmadd d0, d1, d2, d3 / fnmsub s0, s1, s2, s3
        let (u, _) = d(0x1f420c20);
        assert_eq!((u.op, u.a, u.b, u.c, u.d, u.e), (F_MADD, 0, 1, 2, 3, 3));
        assert_eq!(d(0x1f228c20).0.op, F_NMSUB);
        // fsqrt d0, d1 ; fabs s2, s3 ; fneg d4, d5
        assert_eq!(d(0x1e61c020).0.op, F_SQRT);
        assert_eq!(d(0x1e20c062).0.op, F_ABS);
        assert_eq!(d(0x1e6140a4).0.op, F_NEG);
        // fadd h0, h1, h2 (FP16 arithmetic) stays undefined
        assert_eq!(d(0x1ee22820).0.op, UNDEFINED);
    }

    #[test]
    fn moves_and_immediates() {
        // fmov d0, d1
        let (u, _) = d(0x1e604020);
        assert_eq!(
            (u.op, u.a, u.b, u.e, u.f, u.imm),
            (V_DUP_ELEM, 0, 1, 3, 3, 0)
        );
        // fmov s0, #1.0
        let (u, _) = d(0x1e2e1000);
        assert_eq!((u.op, u.f, u.imm), (V_MOVI, 2, 0x3f80_0000));
        // fmov d0, #-2.5
        let (u, _) = d(0x1e709000);
        assert_eq!((u.op, u.f, u.imm), (V_MOVI, 3, 0xc004_0000_0000_0000));
        // fmov x0, d1 ; fmov d1, xzr ; fmov w2, s3 ; fmov s3, w4
        let (u, _) = d(0x9e660020);
        assert_eq!((u.op, u.a, u.b, u.e), (V_UMOV, 0, 1, 3));
        let (u, _) = d(0x9e6703e1);
        assert_eq!((u.op, u.a, u.b, u.e, u.f), (V_DUP_GEN, 1, reg::ZR, 3, 3));
        assert_eq!(d(0x1e260062).0.op, V_UMOV);
        assert_eq!(d(0x1e270083).0.op, V_DUP_GEN);
        // fmov x0, v1.d[1] ; fmov v1.d[1], x2
        let (u, _) = d(0x9eae0020);
        assert_eq!((u.op, u.e, u.imm), (V_UMOV, 3, 1));
        let (u, _) = d(0x9eaf0041);
        assert_eq!((u.op, u.a, u.b, u.e, u.imm), (V_INS_GEN, 1, 2, 3, 1));
    }

    #[test]
    fn compares_and_selects() {
        // fcmp d0, d1 ; fcmpe s2, #0.0
        let (u, n) = d(0x1e612000);
        assert_eq!((n, u.op, u.b, u.c, u.d, u.e), ("FCMP", F_CMP, 0, 1, 0, 3));
        let (u, _) = d(0x1e202058);
        assert_eq!(
            (u.op, u.b, u.d, u.e),
            (F_CMP, 2, fcmp::ZERO | fcmp::SIGNAL, 2)
        );
        // fcmpe d0, d1 ; fccmp d0, d1, #0x4, ne ; fccmpe d0, d1, #0x4, ne
        assert_eq!(d(0x1e612010).0.d, fcmp::SIGNAL);
        let (u, _) = d(0x1e611404);
        assert_eq!((u.op, u.d, u.imm), (F_CCMP, 1, 0x4000_0000));
        let (u, _) = d(0x1e611414);
        assert_eq!(
            (u.op, u.d, u.imm),
            (F_CCMP, 1 | fcmp::CCMP_SIGNAL, 0x4000_0000)
        );
        // fcsel s0, s1, s2, gt
        let (u, _) = d(0x1e22cc20);
        assert_eq!((u.op, u.a, u.b, u.c, u.d, u.e), (F_CSEL, 0, 1, 2, 12, 2));
    }

    #[test]
    fn conversions() {
        // fcvt s0, d1 ; fcvt h0, s1 ; fcvt d2, h3
        let (u, _) = d(0x1e624020);
        assert_eq!((u.op, u.e, u.d), (F_CVT, 2, 3));
        let (u, _) = d(0x1e23c020);
        assert_eq!((u.op, u.e, u.d), (F_CVT, 1, 2));
        let (u, _) = d(0x1ee2c062);
        assert_eq!((u.op, u.e, u.d), (F_CVT, 3, 1));
        // fcvtzs w0, d1 ; fcvtzu x2, s3 ; fcvtms x0, d0 ; fcvtzs wzr, s0
        let (u, _) = d(0x1e780020);
        assert_eq!(
            (u.op, u.a, u.b, u.d, u.e, u.f),
            (F_TO_INT, 0, 1, rmode::Z, 3, 0)
        );
        let (u, _) = d(0x9e390062);
        assert_eq!((u.op, u.d, u.e, u.f), (F_TO_INT, rmode::Z | 8, 2, 1));
        assert_eq!(d(0x9e700000).0.d, rmode::M);
        assert_eq!(d(0x1e38001f).0.a, reg::SINK);
        // scvtf d0, x1 ; ucvtf s0, w1 ; scvtf d0, w1, #16 ; fcvtzs x0, d1, #10
        let (u, _) = d(0x9e620020);
        assert_eq!((u.op, u.a, u.b, u.d, u.e, u.f), (INT_TO_F, 0, 1, 0, 3, 1));
        let (u, _) = d(0x1e230020);
        assert_eq!((u.op, u.d, u.e, u.f), (INT_TO_F, 1, 2, 0));
        let (u, _) = d(0x1e42c020);
        assert_eq!((u.op, u.imm, u.f), (INT_TO_F, 16, 0));
        let (u, _) = d(0x9e58d820);
        assert_eq!((u.op, u.imm, u.d), (F_TO_INT, 10, rmode::Z));
        // frinti d0, d1 ; frintx d0, d1 ; frinta s0, s1
        assert_eq!(d(0x1e67c020).0.d, rmode::FPCR);
        assert_eq!(d(0x1e674020).0.d, rmode::FPCR_EXACT);
        assert_eq!(d(0x1e264020).0.d, rmode::A);
    }

    #[test]
    fn vfp_immediates() {
        assert_eq!(vfp_expand_imm(0x70, 2), 0x3f80_0000); // 1.0
        assert_eq!(vfp_expand_imm(0x00, 3), 0x4000_0000_0000_0000); // 2.0
        assert_eq!(vfp_expand_imm(0x70, 1), 0x3c00); // 1.0 (half)
        assert_eq!(vfp_expand_imm(0x1f, 2), 0x40f8_0000); // 7.75
    }
}
