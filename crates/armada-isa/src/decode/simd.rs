//! Advanced SIMD: the Arm ARM's AdvSIMD data-processing classes (vector and scalar) and the
//! AdvSIMD structure loads and stores.
//!
//! Field letters: `Q` = Q, `z` = size, `S` = sz (bit 22, the FP precision), `n`/`m`/`d`/`t` =
//! registers, `h`/`b` = immh/immb, `L`/`M`/`H` = the index bits of the by-element forms (`m`
//! is then the 4-bit Rm), `i` = imm5 or imm4, `k` = imm4 of the copy class, `c` = cmode,
//! `x`/`y` = abc/defgh of the modified immediate, `o` = an opcode field, `l` = len.
//! Builders return None for reserved size/Q combinations, which then decode as UNDEFINED.

use super::{enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::{reg, MicroOp};

// ---------------------------------------------------------------- size rules and builders

/// Which element sizes an integer encoding allows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sz {
    /// B, H, S, and D only with Q = 1.
    Any,
    /// B, H, S.
    NoD,
    /// H, S.
    HS,
    /// B only.
    B,
    /// D only (scalar compares, shifts, ADD/SUB).
    D,
}

fn size_ok(size: u32, rule: Sz) -> bool {
    match rule {
        Sz::Any => true,
        Sz::NoD => size != 3,
        Sz::HS => size == 1 || size == 2,
        Sz::B => size == 0,
        Sz::D => size == 3,
    }
}

/// Vector `f` from Q.
fn qf(f: &Fields) -> u8 {
    3 + f.get('Q') as u8
}

/// Element size of a vector integer encoding (`z`, `Q`): None when reserved.
fn vsize(f: &Fields, rule: Sz) -> Option<u8> {
    let size = f.get('z');
    if !size_ok(size, rule) || (size == 3 && f.get('Q') == 0) {
        return None;
    }
    Some(size as u8)
}

/// Element size of a scalar integer encoding.
fn ssize(f: &Fields, rule: Sz) -> Option<u8> {
    let size = f.get('z');
    if !size_ok(size, rule) {
        return None;
    }
    Some(size as u8)
}

/// Vector three-register op with an integer element size.
fn v3(f: &Fields, op: u16, rule: Sz, d: u8) -> Option<MicroOp> {
    let e = vsize(f, rule)?;
    Some(rrr(f, op, e, qf(f)).d(d))
}

/// Scalar three-register op with an integer element size.
fn s3(f: &Fields, op: u16, rule: Sz, d: u8) -> Option<MicroOp> {
    let e = ssize(f, rule)?;
    Some(rrr(f, op, e, e).d(d))
}

/// Vector two-register op with an integer element size.
fn v2(f: &Fields, op: u16, rule: Sz, d: u8) -> Option<MicroOp> {
    let e = vsize(f, rule)?;
    Some(rr(f, op, e, qf(f)).d(d))
}

/// Scalar two-register op with an integer element size.
fn s2(f: &Fields, op: u16, rule: Sz, d: u8) -> Option<MicroOp> {
    let e = ssize(f, rule)?;
    Some(rr(f, op, e, e).d(d))
}

/// Vector op where the element size does not matter (bitwise).
fn vbits(f: &Fields, op: u16) -> Option<MicroOp> {
    Some(rrr(f, op, 0, qf(f)))
}

fn rrr(f: &Fields, op: u16, e: u8, fsz: u8) -> MicroOp {
    MicroOp::new(op)
        .a(f.r('d'))
        .b(f.r('n'))
        .c(f.r('m'))
        .e(e)
        .f(fsz)
}

fn rr(f: &Fields, op: u16, e: u8, fsz: u8) -> MicroOp {
    MicroOp::new(op).a(f.r('d')).b(f.r('n')).e(e).f(fsz)
}

/// FP vector element size from `S` (sz): S or D; 2D needs Q = 1.
fn fvsize(f: &Fields) -> Option<u8> {
    let s = f.get('S');
    if s == 1 && f.get('Q') == 0 {
        return None;
    }
    Some(2 + s as u8)
}

/// FP vector three-register op.
fn fv3(f: &Fields, op: u16) -> Option<MicroOp> {
    let e = fvsize(f)?;
    Some(rrr(f, op, e, qf(f)))
}

/// FP vector two-register op.
fn fv2(f: &Fields, op: u16, d: u8) -> Option<MicroOp> {
    let e = fvsize(f)?;
    Some(rr(f, op, e, qf(f)).d(d))
}

/// FP scalar three-register op.
fn fs3(f: &Fields, op: u16) -> Option<MicroOp> {
    let e = 2 + f.get('S') as u8;
    Some(rrr(f, op, e, e))
}

/// FP scalar two-register op.
fn fs2(f: &Fields, op: u16, d: u8) -> Option<MicroOp> {
    let e = 2 + f.get('S') as u8;
    Some(rr(f, op, e, e).d(d))
}

/// FMLA/FMLS (vector): the accumulator is Vd.
fn fmla(f: &Fields, op: u16) -> Option<MicroOp> {
    Some(fv3(f, op)?.d(f.r('d')))
}

/// FP vector to integer conversion with a rounding mode.
fn fcvt_v(f: &Fields, mode: u8, unsigned: bool) -> Option<MicroOp> {
    fv2(f, F_TO_INT_V, mode | (unsigned as u8) << 3)
}

fn fcvt_s(f: &Fields, mode: u8, unsigned: bool) -> Option<MicroOp> {
    fs2(f, F_TO_INT_V, mode | (unsigned as u8) << 3)
}

/// REV16/REV32/REV64: `container` = log2 bytes; the element must be smaller.
fn rev(f: &Fields, container: u8) -> Option<MicroOp> {
    let e = f.get('z') as u8;
    if e >= container {
        return None;
    }
    Some(rr(f, V_REV, e, qf(f)).d(container))
}

/// Narrowing two-register ops (XTN, SQXTN, ...): `z` is the destination size.
fn xtn(f: &Fields, kind: u8) -> Option<MicroOp> {
    let e = ssize(f, Sz::NoD)?;
    Some(rr(f, V_XTN, e, f.get('Q') as u8).d(kind << 1))
}

fn xtn_s(f: &Fields, kind: u8) -> Option<MicroOp> {
    let e = ssize(f, Sz::NoD)?;
    Some(rr(f, V_XTN, e, PART_SCALAR).d(kind << 1))
}

/// Across-lanes integer reductions: `op`, field d `d` (bit 0: unsigned).
fn across(f: &Fields, op: u16, d: u8) -> Option<MicroOp> {
    let size = f.get('z');
    if size == 3 || (size == 2 && f.get('Q') == 0) {
        return None;
    }
    Some(rr(f, op, size as u8, qf(f)).d(d))
}

/// FMAXV and friends: 4S only.
fn facross(f: &Fields, kind: u8) -> Option<MicroOp> {
    if f.get('S') != 0 || f.get('Q') != 1 {
        return None;
    }
    Some(rr(f, F_REDUCE, 2, 4).d(kind))
}

/// Scalar FP pairwise (FADDP Sd, Vn.2S ...): a reduction over two elements.
fn fpair_s(f: &Fields, kind: u8) -> Option<MicroOp> {
    let e = 2 + f.get('S') as u8;
    Some(rr(f, F_REDUCE, e, e + 1).d(kind))
}

/// Three-different ops: `z` is the narrow size, Q selects the half.
fn long3(f: &Fields, op: u16, rule: Sz, d: u8) -> Option<MicroOp> {
    let e = ssize(f, rule)?;
    Some(rrr(f, op, e, f.get('Q') as u8).d(d))
}

fn long3_s(f: &Fields, op: u16) -> Option<MicroOp> {
    let e = ssize(f, Sz::HS)?;
    Some(rrr(f, op, e, PART_SCALAR))
}

fn pmull(f: &Fields) -> Option<MicroOp> {
    let e = f.get('z') as u8;
    if e != 0 && e != 3 {
        return None;
    }
    Some(rrr(f, V_PMULL, e, f.get('Q') as u8))
}

// ---------------------------------------------------------------- shift by immediate

/// Element size from immh (highest set bit), None for immh = 0.
fn immh_esize(f: &Fields) -> Option<u8> {
    let h = f.get('h');
    if h == 0 {
        return None;
    }
    Some((31 - h.leading_zeros()) as u8)
}

fn immhb(f: &Fields) -> u32 {
    (f.get('h') << 3) | f.get('b')
}

/// Vector shift where the element size is that of the operands: returns (e, right shift,
/// left shift).
fn vshift(f: &Fields) -> Option<(u8, u64, u64)> {
    let e = immh_esize(f)?;
    if e == 3 && f.get('Q') == 0 {
        return None;
    }
    let v = immhb(f) as u64;
    Some((e, (16u64 << e) - v, v - (8u64 << e)))
}

/// Scalar shift, D only.
fn sshift_d(f: &Fields) -> Option<(u8, u64, u64)> {
    let e = immh_esize(f)?;
    if e != 3 {
        return None;
    }
    let v = immhb(f) as u64;
    Some((e, 128 - v, v - 64))
}

/// Scalar shift, any size.
fn sshift_any(f: &Fields) -> Option<(u8, u64, u64)> {
    let e = immh_esize(f)?;
    let v = immhb(f) as u64;
    Some((e, (16u64 << e) - v, v - (8u64 << e)))
}

fn shr_v(f: &Fields, d: u8) -> Option<MicroOp> {
    let (e, r, _) = vshift(f)?;
    Some(rr(f, V_SHR, e, qf(f)).d(d).imm(r))
}

fn shr_s(f: &Fields, d: u8) -> Option<MicroOp> {
    let (e, r, _) = sshift_d(f)?;
    Some(rr(f, V_SHR, e, e).d(d).imm(r))
}

fn shl_v(f: &Fields, op: u16, d: u8) -> Option<MicroOp> {
    let (e, _, l) = vshift(f)?;
    Some(rr(f, op, e, qf(f)).d(d).imm(l))
}

fn shl_s(f: &Fields, op: u16, d: u8, any: bool) -> Option<MicroOp> {
    let (e, _, l) = if any { sshift_any(f)? } else { sshift_d(f)? };
    Some(rr(f, op, e, e).d(d).imm(l))
}

fn sri_v(f: &Fields) -> Option<MicroOp> {
    let (e, r, _) = vshift(f)?;
    Some(rr(f, V_SRI, e, qf(f)).imm(r))
}

fn sri_s(f: &Fields) -> Option<MicroOp> {
    let (e, r, _) = sshift_d(f)?;
    Some(rr(f, V_SRI, e, e).imm(r))
}

/// Narrowing shifts: immh gives the destination size (B/H/S).
fn shrn(f: &Fields, d: u8, scalar: bool) -> Option<MicroOp> {
    let e = immh_esize(f)?;
    if e == 3 {
        return None;
    }
    let shift = (16u64 << e) - immhb(f) as u64;
    let part = if scalar {
        PART_SCALAR
    } else {
        f.get('Q') as u8
    };
    Some(rr(f, V_SHRN, e, part).d(d).imm(shift))
}

/// SSHLL/USHLL: immh gives the source size (B/H/S).
fn shll(f: &Fields, unsigned: bool) -> Option<MicroOp> {
    let e = immh_esize(f)?;
    if e == 3 {
        return None;
    }
    let shift = immhb(f) as u64 - (8u64 << e);
    Some(
        rr(f, V_SHLL, e, f.get('Q') as u8)
            .d(unsigned as u8)
            .imm(shift),
    )
}

/// Fixed-point conversions (vector or scalar): S or D only.
fn fixed(f: &Fields, op: u16, d: u8, scalar: bool) -> Option<MicroOp> {
    let e = immh_esize(f)?;
    if e < 2 || (!scalar && e == 3 && f.get('Q') == 0) {
        return None;
    }
    let fbits = (16u64 << e) - immhb(f) as u64;
    let fsz = if scalar { e } else { qf(f) };
    Some(rr(f, op, e, fsz).d(d).imm(fbits))
}

// ---------------------------------------------------------------- by element

/// Integer by-element: (e, Rm, index).
fn idx_int(f: &Fields) -> Option<(u8, u8, u64)> {
    let (h, l, m) = (f.get('H'), f.get('L'), f.get('M'));
    match f.get('z') {
        1 => Some((1, f.get('m') as u8, (h << 2 | l << 1 | m) as u64)),
        2 => Some((2, (m << 4 | f.get('m')) as u8, (h << 1 | l) as u64)),
        _ => None,
    }
}

/// FP by-element: (e, Rm, index).
fn idx_fp(f: &Fields) -> Option<(u8, u8, u64)> {
    let (h, l, m) = (f.get('H'), f.get('L'), f.get('M'));
    let rm = (m << 4 | f.get('m')) as u8;
    match f.get('S') {
        0 => Some((2, rm, (h << 1 | l) as u64)),
        _ if l == 0 => Some((3, rm, h as u64)),
        _ => None,
    }
}

fn elem_int(f: &Fields, op: u16, scalar: bool, d: u8) -> Option<MicroOp> {
    let (e, rm, i) = idx_int(f)?;
    let fsz = if scalar { e } else { qf(f) };
    Some(
        MicroOp::new(op)
            .a(f.r('d'))
            .b(f.r('n'))
            .c(rm)
            .e(e)
            .f(fsz)
            .d(d)
            .imm(BY_ELEM | i),
    )
}

/// SDOT, UDOT (by element): Vm's word `H:L` (its four bytes) broadcast, as the by-element
/// integer ops read an element of field e's size.
fn elem_dot(f: &Fields, d: u8) -> Option<MicroOp> {
    let rm = (f.get('M') << 4 | f.get('m')) as u8;
    let i = (f.get('H') << 1 | f.get('L')) as u64;
    Some(rrr(f, V_DOT, 2, qf(f)).c(rm).d(d).imm(BY_ELEM | i))
}

fn elem_long(f: &Fields, op: u16, scalar: bool, d: u8) -> Option<MicroOp> {
    let (e, rm, i) = idx_int(f)?;
    let part = if scalar {
        PART_SCALAR
    } else {
        f.get('Q') as u8
    };
    Some(
        MicroOp::new(op)
            .a(f.r('d'))
            .b(f.r('n'))
            .c(rm)
            .e(e)
            .f(part)
            .d(d)
            .imm(BY_ELEM | i),
    )
}

/// FMUL/FMLA/FMLS/FMULX by element (vector or scalar); `acc`: Va = Vd.
fn elem_fp(f: &Fields, op: u16, scalar: bool, acc: bool) -> Option<MicroOp> {
    let (e, rm, i) = idx_fp(f)?;
    if !scalar && e == 3 && f.get('Q') == 0 {
        return None;
    }
    let fsz = if scalar { e } else { qf(f) };
    let d = if acc { f.r('d') } else { 0 };
    Some(
        MicroOp::new(op)
            .a(f.r('d'))
            .b(f.r('n'))
            .c(rm)
            .e(e)
            .f(fsz)
            .d(d)
            .imm(BY_ELEM | i),
    )
}

// ---------------------------------------------------------------- copy, modified immediate

/// imm5 -> (element size, index).
fn imm5(f: &Fields) -> Option<(u8, u64)> {
    let i = f.get('i');
    let e = i.trailing_zeros();
    if e > 3 {
        return None;
    }
    Some((e as u8, (i >> (e + 1)) as u64))
}

fn dup_elem(f: &Fields, scalar: bool) -> Option<MicroOp> {
    let (e, idx) = imm5(f)?;
    let fsz = if scalar {
        e
    } else {
        if e == 3 && f.get('Q') == 0 {
            return None;
        }
        qf(f)
    };
    Some(rr(f, V_DUP_ELEM, e, fsz).imm(idx))
}

fn dup_gen(f: &Fields) -> Option<MicroOp> {
    let (e, _) = imm5(f)?;
    if e == 3 && f.get('Q') == 0 {
        return None;
    }
    Some(
        MicroOp::new(V_DUP_GEN)
            .a(f.r('d'))
            .b(f.rz('n'))
            .e(e)
            .f(qf(f)),
    )
}

fn ins_gen(f: &Fields) -> Option<MicroOp> {
    let (e, idx) = imm5(f)?;
    Some(
        MicroOp::new(V_INS_GEN)
            .a(f.r('d'))
            .b(f.rz('n'))
            .e(e)
            .imm(idx),
    )
}

fn ins_elem(f: &Fields) -> Option<MicroOp> {
    let (e, idx) = imm5(f)?;
    let src = f.get('k') >> e;
    Some(
        MicroOp::new(V_INS_ELEM)
            .a(f.r('d'))
            .b(f.r('n'))
            .e(e)
            .d(src as u8)
            .imm(idx),
    )
}

fn umov(f: &Fields) -> Option<MicroOp> {
    let (e, idx) = imm5(f)?;
    // Q = 0: B/H/S to W; Q = 1: D to X.
    if (f.get('Q') == 1) != (e == 3) {
        return None;
    }
    Some(MicroOp::new(V_UMOV).a(f.wz('d')).b(f.r('n')).e(e).imm(idx))
}

fn smov(f: &Fields) -> Option<MicroOp> {
    let (e, idx) = imm5(f)?;
    let q = f.get('Q') as u8;
    // Q = 0: B/H to W; Q = 1: B/H/S to X.
    if e == 3 || (e == 2 && q == 0) {
        return None;
    }
    Some(
        MicroOp::new(V_SMOV)
            .a(f.wz('d'))
            .b(f.r('n'))
            .e(e)
            .f(q)
            .imm(idx),
    )
}

/// AdvSIMDExpandImm (op, cmode, imm8) -> 64-bit pattern; None where unallocated.
pub(crate) fn adv_simd_expand_imm(op: u32, cmode: u32, imm8: u32) -> Option<u64> {
    let i = imm8 as u64;
    let rep2 = |x: u64| x | (x << 32);
    let rep4 = |x: u64| x | (x << 16) | (x << 32) | (x << 48);
    Some(match cmode >> 1 {
        0 => rep2(i),
        1 => rep2(i << 8),
        2 => rep2(i << 16),
        3 => rep2(i << 24),
        4 => rep4(i),
        5 => rep4(i << 8),
        6 => {
            if cmode & 1 == 0 {
                rep2((i << 8) | 0xff)
            } else {
                rep2((i << 16) | 0xffff)
            }
        }
        _ => match (cmode & 1, op) {
            (0, 0) => i * 0x0101_0101_0101_0101,
            (0, _) => {
                let mut r = 0u64;
                for b in 0..8 {
                    if (i >> b) & 1 != 0 {
                        r |= 0xff << (8 * b);
                    }
                }
                r
            }
            (_, 0) => {
                // FMOV (vector, immediate), single precision
                let b6 = (i >> 6) & 1;
                let v = ((i >> 7) << 31)
                    | ((b6 ^ 1) << 30)
                    | (if b6 == 1 { 0x1f << 25 } else { 0 })
                    | ((i & 0x3f) << 19);
                rep2(v)
            }
            _ => {
                // FMOV (vector, immediate), double precision
                let b6 = (i >> 6) & 1;
                ((i >> 7) << 63)
                    | ((b6 ^ 1) << 62)
                    | (if b6 == 1 { 0xff << 54 } else { 0 })
                    | ((i & 0x3f) << 48)
            }
        },
    })
}

/// AdvSIMD modified immediate: MOVI, MVNI, ORR, BIC (vector, immediate), FMOV (vector, immediate).
fn mod_imm(f: &Fields) -> Option<MicroOp> {
    let q = f.get('Q');
    let op = f.get('o');
    let cmode = f.get('c');
    let imm8 = (f.get('x') << 5) | f.get('y');
    let imm = adv_simd_expand_imm(op, cmode, imm8)?;
    let rd = f.r('d');
    let fsz = 3 + q as u8;
    let u = match (op, cmode) {
        // FMOV (vector, immediate), double: 2D only
        (1, 0b1111) => {
            if q == 0 {
                return None;
            }
            MicroOp::new(V_MOVI).imm(imm).f(4)
        }
        // MOVI 64-bit (scalar Dd when Q = 0, 2D when Q = 1), MOVI 8-bit, FMOV single
        (_, 0b1110) | (0, 0b1111) => MicroOp::new(V_MOVI).imm(imm).f(fsz),
        // shifting-ones forms: MOVI / MVNI
        (_, 0b1100) | (_, 0b1101) => MicroOp::new(V_MOVI)
            .imm(if op == 1 { !imm } else { imm })
            .f(fsz),
        // 32-bit and 16-bit shifted forms: even cmode = MOVI/MVNI, odd = ORR/BIC
        (0, c) if c & 1 == 0 => MicroOp::new(V_MOVI).imm(imm).f(fsz),
        (1, c) if c & 1 == 0 => MicroOp::new(V_MOVI).imm(!imm).f(fsz),
        (0, _) => MicroOp::new(V_ORR_IMM).imm(imm).f(fsz),
        _ => MicroOp::new(V_AND_IMM).imm(!imm).f(fsz),
    };
    Some(u.a(rd))
}

// ---------------------------------------------------------------- loads and stores

/// Post-index offset operands: (c, imm) — register Rm, or the zero register and `imm`.
fn post(f: &Fields, bytes: u64) -> (u8, u64) {
    let m = f.get('m') as u8;
    if m == 31 {
        (reg::ZR, bytes)
    } else {
        (m, 0)
    }
}

/// LD1-4 / ST1-4 (multiple structures).
fn ldst_multi(f: &Fields, load: bool, wb: bool) -> Option<MicroOp> {
    let (rpt, selem) = match f.get('o') {
        0b0000 => (1, 4),
        0b0010 => (4, 1),
        0b0100 => (1, 3),
        0b0110 => (3, 1),
        0b0111 => (1, 1),
        0b1000 => (1, 2),
        0b1010 => (2, 1),
        _ => return None,
    };
    let e = f.get('z') as u8;
    let q = f.get('Q');
    if e == 3 && q == 0 && selem != 1 {
        return None;
    }
    let bytes = (8u64 << q) * rpt as u64 * selem as u64;
    let (c, imm) = if wb { post(f, bytes) } else { (reg::ZR, 0) };
    let op = if load { V_LD_MULTI } else { V_ST_MULTI };
    Some(
        MicroOp::new(op)
            .a(f.r('t'))
            .b(f.rsp('n'))
            .c(c)
            .d(selem | rpt << 3 | if wb { LDST_WB } else { 0 })
            .e(e)
            .f(3 + q as u8)
            .imm(imm),
    )
}

/// LD1-4 / ST1-4 (single structure) and LD1R-LD4R.
fn ldst_single(f: &Fields, load: bool, wb: bool) -> Option<MicroOp> {
    let opc = f.get('o');
    let selem = ((opc & 1) << 1 | f.get('R')) as u8 + 1;
    let s = f.get('S');
    let size = f.get('z');
    let q = f.get('Q');
    let wbf = if wb { LDST_WB } else { 0 };
    let (op, e, fsz) = match opc >> 1 {
        3 => {
            if !load || s == 1 {
                return None;
            }
            (V_LD_REPL, size as u8, 3 + q as u8)
        }
        0 => (0, 0u8, (q << 3 | s << 2 | size) as u8),
        1 => {
            if size & 1 == 1 {
                return None;
            }
            (0, 1, (q << 2 | s << 1 | size >> 1) as u8)
        }
        _ => {
            if size & 2 != 0 {
                return None;
            }
            if size & 1 == 0 {
                (0, 2, (q << 1 | s) as u8)
            } else {
                if s == 1 {
                    return None;
                }
                (0, 3, q as u8)
            }
        }
    };
    let op = if op != 0 {
        op
    } else if load {
        V_LD_SINGLE
    } else {
        V_ST_SINGLE
    };
    let bytes = (selem as u64) << e;
    let (c, imm) = if wb { post(f, bytes) } else { (reg::ZR, 0) };
    Some(
        MicroOp::new(op)
            .a(f.r('t'))
            .b(f.rsp('n'))
            .c(c)
            .d(selem | wbf)
            .e(e)
            .f(fsz)
            .imm(imm),
    )
}

use narrow::{SS, SU, TRUNC, UU};

#[rustfmt::skip]
pub(super) const TABLE: &[Encoding] = &[
    // ======== AdvSIMD load/store multiple structures (and post-indexed)
    enc("ST1/ST2/ST3/ST4 (multiple structures)",             "0Q 0011000 0 000000 oooo zz nnnnn ttttt", |f| ldst_multi(f, false, false)),
    enc("LD1/LD2/LD3/LD4 (multiple structures)",             "0Q 0011000 1 000000 oooo zz nnnnn ttttt", |f| ldst_multi(f, true, false)),
    enc("ST1/ST2/ST3/ST4 (multiple structures, post-index)", "0Q 0011001 0 0 mmmmm oooo zz nnnnn ttttt", |f| ldst_multi(f, false, true)),
    enc("LD1/LD2/LD3/LD4 (multiple structures, post-index)", "0Q 0011001 1 0 mmmmm oooo zz nnnnn ttttt", |f| ldst_multi(f, true, true)),
    // ======== AdvSIMD load/store single structure (and post-indexed), LD1R-LD4R
    enc("ST1/ST2/ST3/ST4 (single structure)",                "0Q 0011010 0 R 00000 ooo S zz nnnnn ttttt", |f| ldst_single(f, false, false)),
    enc("LD1/LD2/LD3/LD4 (single structure), LD1R-LD4R",    "0Q 0011010 1 R 00000 ooo S zz nnnnn ttttt", |f| ldst_single(f, true, false)),
    enc("ST1/ST2/ST3/ST4 (single structure, post-index)",    "0Q 0011011 0 R mmmmm ooo S zz nnnnn ttttt", |f| ldst_single(f, false, true)),
    enc("LD1/LD2/LD3/LD4 (single structure, post-index), LD1R-LD4R (post-index)", "0Q 0011011 1 R mmmmm ooo S zz nnnnn ttttt", |f| ldst_single(f, true, true)),

    // ======== AdvSIMD table lookup
    enc("TBL",  "0Q 001110 000 mmmmm 0 ll 0 00 nnnnn ddddd", |f| Some(rrr(f, V_TBL, 0, qf(f)).d(f.get('l') as u8 + 1))),
    enc("TBX",  "0Q 001110 000 mmmmm 0 ll 1 00 nnnnn ddddd", |f| Some(rrr(f, V_TBL, 1, qf(f)).d(f.get('l') as u8 + 1))),
    // ======== AdvSIMD permute
    enc("UZP1", "0Q 001110 zz 0 mmmmm 0 001 10 nnnnn ddddd", |f| v3(f, V_UZP, Sz::Any, 0)),
    enc("TRN1", "0Q 001110 zz 0 mmmmm 0 010 10 nnnnn ddddd", |f| v3(f, V_TRN, Sz::Any, 0)),
    enc("ZIP1", "0Q 001110 zz 0 mmmmm 0 011 10 nnnnn ddddd", |f| v3(f, V_ZIP, Sz::Any, 0)),
    enc("UZP2", "0Q 001110 zz 0 mmmmm 0 101 10 nnnnn ddddd", |f| v3(f, V_UZP, Sz::Any, 1)),
    enc("TRN2", "0Q 001110 zz 0 mmmmm 0 110 10 nnnnn ddddd", |f| v3(f, V_TRN, Sz::Any, 1)),
    enc("ZIP2", "0Q 001110 zz 0 mmmmm 0 111 10 nnnnn ddddd", |f| v3(f, V_ZIP, Sz::Any, 1)),
    // ======== AdvSIMD extract
    enc("EXT",  "0Q 101110 000 mmmmm 0 iiii 0 nnnnn ddddd", |f| { let i = f.get('i'); if f.get('Q') == 0 && i >= 8 { return None; } Some(rrr(f, V_EXT, 0, qf(f)).imm(i as u64)) }),
    // ======== AdvSIMD copy
    enc("DUP (element)",  "0Q 0 01110000 iiiii 0 0000 1 nnnnn ddddd", |f| dup_elem(f, false)),
    enc("DUP (general)",  "0Q 0 01110000 iiiii 0 0001 1 nnnnn ddddd", dup_gen),
    enc("SMOV",           "0Q 0 01110000 iiiii 0 0101 1 nnnnn ddddd", smov),
    enc("UMOV",           "0Q 0 01110000 iiiii 0 0111 1 nnnnn ddddd", umov),
    enc("INS (general)",  "01 0 01110000 iiiii 0 0011 1 nnnnn ddddd", ins_gen),
    enc("INS (element)",  "01 1 01110000 iiiii 0 kkkk 1 nnnnn ddddd", ins_elem),
    // ======== AdvSIMD modified immediate (MOVI, MVNI, ORR, BIC, FMOV (vector, immediate))
    enc("MOVI/MVNI/ORR/BIC/FMOV (vector, immediate)", "0Q o 0111100000 xxx cccc 0 1 yyyyy ddddd", mod_imm),

    // ======== AdvSIMD three same (integer)
    enc("SHADD",  "0Q 0 01110 zz 1 mmmmm 00000 1 nnnnn ddddd", |f| v3(f, V_HADD, Sz::NoD, 0)),
    enc("UHADD",  "0Q 1 01110 zz 1 mmmmm 00000 1 nnnnn ddddd", |f| v3(f, V_HADD, Sz::NoD, 1)),
    enc("SQADD",  "0Q 0 01110 zz 1 mmmmm 00001 1 nnnnn ddddd", |f| v3(f, V_QADD, Sz::Any, 0)),
    enc("UQADD",  "0Q 1 01110 zz 1 mmmmm 00001 1 nnnnn ddddd", |f| v3(f, V_QADD, Sz::Any, 1)),
    enc("SRHADD", "0Q 0 01110 zz 1 mmmmm 00010 1 nnnnn ddddd", |f| v3(f, V_RHADD, Sz::NoD, 0)),
    enc("URHADD", "0Q 1 01110 zz 1 mmmmm 00010 1 nnnnn ddddd", |f| v3(f, V_RHADD, Sz::NoD, 1)),
    enc("AND (vector)",           "0Q 0 01110 00 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_AND)),
    enc("BIC (vector, register)", "0Q 0 01110 01 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_BIC)),
    enc("ORR (vector, register)", "0Q 0 01110 10 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_ORR)),
    enc("ORN (vector)",           "0Q 0 01110 11 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_ORN)),
    enc("EOR (vector)",           "0Q 1 01110 00 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_EOR)),
    enc("BSL",                    "0Q 1 01110 01 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_BSL)),
    enc("BIT",                    "0Q 1 01110 10 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_BIT)),
    enc("BIF",                    "0Q 1 01110 11 1 mmmmm 00011 1 nnnnn ddddd", |f| vbits(f, V_BIF)),
    enc("SHSUB",  "0Q 0 01110 zz 1 mmmmm 00100 1 nnnnn ddddd", |f| v3(f, V_HSUB, Sz::NoD, 0)),
    enc("UHSUB",  "0Q 1 01110 zz 1 mmmmm 00100 1 nnnnn ddddd", |f| v3(f, V_HSUB, Sz::NoD, 1)),
    enc("SQSUB",  "0Q 0 01110 zz 1 mmmmm 00101 1 nnnnn ddddd", |f| v3(f, V_QSUB, Sz::Any, 0)),
    enc("UQSUB",  "0Q 1 01110 zz 1 mmmmm 00101 1 nnnnn ddddd", |f| v3(f, V_QSUB, Sz::Any, 1)),
    enc("CMGT (register)", "0Q 0 01110 zz 1 mmmmm 00110 1 nnnnn ddddd", |f| v3(f, V_CMGT, Sz::Any, 0)),
    enc("CMHI (register)", "0Q 1 01110 zz 1 mmmmm 00110 1 nnnnn ddddd", |f| v3(f, V_CMHI, Sz::Any, 0)),
    enc("CMGE (register)", "0Q 0 01110 zz 1 mmmmm 00111 1 nnnnn ddddd", |f| v3(f, V_CMGE, Sz::Any, 0)),
    enc("CMHS (register)", "0Q 1 01110 zz 1 mmmmm 00111 1 nnnnn ddddd", |f| v3(f, V_CMHS, Sz::Any, 0)),
    enc("SSHL",   "0Q 0 01110 zz 1 mmmmm 01000 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 0)),
    enc("USHL",   "0Q 1 01110 zz 1 mmmmm 01000 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 1)),
    enc("SQSHL (register)",  "0Q 0 01110 zz 1 mmmmm 01001 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 4)),
    enc("UQSHL (register)",  "0Q 1 01110 zz 1 mmmmm 01001 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 5)),
    enc("SRSHL",  "0Q 0 01110 zz 1 mmmmm 01010 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 2)),
    enc("URSHL",  "0Q 1 01110 zz 1 mmmmm 01010 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 3)),
    enc("SQRSHL", "0Q 0 01110 zz 1 mmmmm 01011 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 6)),
    enc("UQRSHL", "0Q 1 01110 zz 1 mmmmm 01011 1 nnnnn ddddd", |f| v3(f, V_SHL_REG, Sz::Any, 7)),
    enc("SMAX",   "0Q 0 01110 zz 1 mmmmm 01100 1 nnnnn ddddd", |f| v3(f, V_MAX, Sz::NoD, 0)),
    enc("UMAX",   "0Q 1 01110 zz 1 mmmmm 01100 1 nnnnn ddddd", |f| v3(f, V_MAX, Sz::NoD, 1)),
    enc("SMIN",   "0Q 0 01110 zz 1 mmmmm 01101 1 nnnnn ddddd", |f| v3(f, V_MIN, Sz::NoD, 0)),
    enc("UMIN",   "0Q 1 01110 zz 1 mmmmm 01101 1 nnnnn ddddd", |f| v3(f, V_MIN, Sz::NoD, 1)),
    enc("SABD",   "0Q 0 01110 zz 1 mmmmm 01110 1 nnnnn ddddd", |f| v3(f, V_ABD, Sz::NoD, 0)),
    enc("UABD",   "0Q 1 01110 zz 1 mmmmm 01110 1 nnnnn ddddd", |f| v3(f, V_ABD, Sz::NoD, 1)),
    enc("SABA",   "0Q 0 01110 zz 1 mmmmm 01111 1 nnnnn ddddd", |f| v3(f, V_ABD, Sz::NoD, 2)),
    enc("UABA",   "0Q 1 01110 zz 1 mmmmm 01111 1 nnnnn ddddd", |f| v3(f, V_ABD, Sz::NoD, 3)),
    enc("ADD (vector)", "0Q 0 01110 zz 1 mmmmm 10000 1 nnnnn ddddd", |f| v3(f, V_ADD, Sz::Any, 0)),
    enc("SUB (vector)", "0Q 1 01110 zz 1 mmmmm 10000 1 nnnnn ddddd", |f| v3(f, V_SUB, Sz::Any, 0)),
    enc("CMTST",  "0Q 0 01110 zz 1 mmmmm 10001 1 nnnnn ddddd", |f| v3(f, V_CMTST, Sz::Any, 0)),
    enc("CMEQ (register)", "0Q 1 01110 zz 1 mmmmm 10001 1 nnnnn ddddd", |f| v3(f, V_CMEQ, Sz::Any, 0)),
    enc("MLA (vector)",  "0Q 0 01110 zz 1 mmmmm 10010 1 nnnnn ddddd", |f| v3(f, V_MLA, Sz::NoD, 0)),
    enc("MLS (vector)",  "0Q 1 01110 zz 1 mmmmm 10010 1 nnnnn ddddd", |f| v3(f, V_MLS, Sz::NoD, 0)),
    enc("MUL (vector)",  "0Q 0 01110 zz 1 mmmmm 10011 1 nnnnn ddddd", |f| v3(f, V_MUL, Sz::NoD, 0)),
    enc("PMUL",          "0Q 1 01110 zz 1 mmmmm 10011 1 nnnnn ddddd", |f| v3(f, V_PMUL, Sz::B, 0)),
    enc("SMAXP",  "0Q 0 01110 zz 1 mmmmm 10100 1 nnnnn ddddd", |f| v3(f, V_MAXP, Sz::NoD, 0)),
    enc("UMAXP",  "0Q 1 01110 zz 1 mmmmm 10100 1 nnnnn ddddd", |f| v3(f, V_MAXP, Sz::NoD, 1)),
    enc("SMINP",  "0Q 0 01110 zz 1 mmmmm 10101 1 nnnnn ddddd", |f| v3(f, V_MINP, Sz::NoD, 0)),
    enc("UMINP",  "0Q 1 01110 zz 1 mmmmm 10101 1 nnnnn ddddd", |f| v3(f, V_MINP, Sz::NoD, 1)),
    enc("SQDMULH (vector)",  "0Q 0 01110 zz 1 mmmmm 10110 1 nnnnn ddddd", |f| v3(f, V_SQDMULH, Sz::HS, 0)),
    enc("SQRDMULH (vector)", "0Q 1 01110 zz 1 mmmmm 10110 1 nnnnn ddddd", |f| v3(f, V_SQDMULH, Sz::HS, 1)),
    enc("ADDP (vector)", "0Q 0 01110 zz 1 mmmmm 10111 1 nnnnn ddddd", |f| v3(f, V_ADDP, Sz::Any, 0)),
    // ======== AdvSIMD three same (floating-point)
    enc("FMAXNM (vector)",  "0Q 0 01110 0S 1 mmmmm 11000 1 nnnnn ddddd", |f| fv3(f, F_MAXNM)),
    enc("FMLA (vector)",    "0Q 0 01110 0S 1 mmmmm 11001 1 nnnnn ddddd", |f| fmla(f, F_MADD)),
    enc("FADD (vector)",    "0Q 0 01110 0S 1 mmmmm 11010 1 nnnnn ddddd", |f| fv3(f, F_ADD)),
    enc("FMULX (vector)",   "0Q 0 01110 0S 1 mmmmm 11011 1 nnnnn ddddd", |f| fv3(f, F_MULX)),
    enc("FCMEQ (register)", "0Q 0 01110 0S 1 mmmmm 11100 1 nnnnn ddddd", |f| fv3(f, F_CMEQ)),
    enc("FMAX (vector)",    "0Q 0 01110 0S 1 mmmmm 11110 1 nnnnn ddddd", |f| fv3(f, F_MAX)),
    enc("FRECPS (vector)",  "0Q 0 01110 0S 1 mmmmm 11111 1 nnnnn ddddd", |f| fv3(f, F_RECPS)),
    enc("FMINNM (vector)",  "0Q 0 01110 1S 1 mmmmm 11000 1 nnnnn ddddd", |f| fv3(f, F_MINNM)),
    enc("FMLS (vector)",    "0Q 0 01110 1S 1 mmmmm 11001 1 nnnnn ddddd", |f| fmla(f, F_MSUB)),
    enc("FSUB (vector)",    "0Q 0 01110 1S 1 mmmmm 11010 1 nnnnn ddddd", |f| fv3(f, F_SUB)),
    enc("FMIN (vector)",    "0Q 0 01110 1S 1 mmmmm 11110 1 nnnnn ddddd", |f| fv3(f, F_MIN)),
    enc("FRSQRTS (vector)", "0Q 0 01110 1S 1 mmmmm 11111 1 nnnnn ddddd", |f| fv3(f, F_RSQRTS)),
    enc("FMAXNMP (vector)", "0Q 1 01110 0S 1 mmmmm 11000 1 nnnnn ddddd", |f| Some(fv3(f, F_PAIR)?.d(fred::MAXNM))),
    enc("FADDP (vector)",   "0Q 1 01110 0S 1 mmmmm 11010 1 nnnnn ddddd", |f| Some(fv3(f, F_PAIR)?.d(fred::ADD))),
    enc("FMUL (vector)",    "0Q 1 01110 0S 1 mmmmm 11011 1 nnnnn ddddd", |f| fv3(f, F_MUL)),
    enc("FCMGE (register)", "0Q 1 01110 0S 1 mmmmm 11100 1 nnnnn ddddd", |f| fv3(f, F_CMGE)),
    enc("FACGE",            "0Q 1 01110 0S 1 mmmmm 11101 1 nnnnn ddddd", |f| fv3(f, F_ACGE)),
    enc("FMAXP (vector)",   "0Q 1 01110 0S 1 mmmmm 11110 1 nnnnn ddddd", |f| Some(fv3(f, F_PAIR)?.d(fred::MAX))),
    enc("FDIV (vector)",    "0Q 1 01110 0S 1 mmmmm 11111 1 nnnnn ddddd", |f| fv3(f, F_DIV)),
    enc("FMINNMP (vector)", "0Q 1 01110 1S 1 mmmmm 11000 1 nnnnn ddddd", |f| Some(fv3(f, F_PAIR)?.d(fred::MINNM))),
    enc("FABD (vector)",    "0Q 1 01110 1S 1 mmmmm 11010 1 nnnnn ddddd", |f| fv3(f, F_ABD)),
    enc("FCMGT (register)", "0Q 1 01110 1S 1 mmmmm 11100 1 nnnnn ddddd", |f| fv3(f, F_CMGT)),
    enc("FACGT",            "0Q 1 01110 1S 1 mmmmm 11101 1 nnnnn ddddd", |f| fv3(f, F_ACGT)),
    enc("FMINP (vector)",   "0Q 1 01110 1S 1 mmmmm 11110 1 nnnnn ddddd", |f| Some(fv3(f, F_PAIR)?.d(fred::MIN))),

    // ======== AdvSIMD three different
    enc("SADDL, SADDL2",  "0Q 0 01110 zz 1 mmmmm 0000 00 nnnnn ddddd", |f| long3(f, V_ADDL, Sz::NoD, 0)),
    enc("UADDL, UADDL2",  "0Q 1 01110 zz 1 mmmmm 0000 00 nnnnn ddddd", |f| long3(f, V_ADDL, Sz::NoD, 1)),
    enc("SADDW, SADDW2",  "0Q 0 01110 zz 1 mmmmm 0001 00 nnnnn ddddd", |f| long3(f, V_ADDW, Sz::NoD, 0)),
    enc("UADDW, UADDW2",  "0Q 1 01110 zz 1 mmmmm 0001 00 nnnnn ddddd", |f| long3(f, V_ADDW, Sz::NoD, 1)),
    enc("SSUBL, SSUBL2",  "0Q 0 01110 zz 1 mmmmm 0010 00 nnnnn ddddd", |f| long3(f, V_SUBL, Sz::NoD, 0)),
    enc("USUBL, USUBL2",  "0Q 1 01110 zz 1 mmmmm 0010 00 nnnnn ddddd", |f| long3(f, V_SUBL, Sz::NoD, 1)),
    enc("SSUBW, SSUBW2",  "0Q 0 01110 zz 1 mmmmm 0011 00 nnnnn ddddd", |f| long3(f, V_SUBW, Sz::NoD, 0)),
    enc("USUBW, USUBW2",  "0Q 1 01110 zz 1 mmmmm 0011 00 nnnnn ddddd", |f| long3(f, V_SUBW, Sz::NoD, 1)),
    enc("ADDHN, ADDHN2",  "0Q 0 01110 zz 1 mmmmm 0100 00 nnnnn ddddd", |f| long3(f, V_ADDHN, Sz::NoD, 0)),
    enc("RADDHN, RADDHN2", "0Q 1 01110 zz 1 mmmmm 0100 00 nnnnn ddddd", |f| long3(f, V_ADDHN, Sz::NoD, 1)),
    enc("SABAL, SABAL2",  "0Q 0 01110 zz 1 mmmmm 0101 00 nnnnn ddddd", |f| long3(f, V_ABAL, Sz::NoD, 0)),
    enc("UABAL, UABAL2",  "0Q 1 01110 zz 1 mmmmm 0101 00 nnnnn ddddd", |f| long3(f, V_ABAL, Sz::NoD, 1)),
    enc("SUBHN, SUBHN2",  "0Q 0 01110 zz 1 mmmmm 0110 00 nnnnn ddddd", |f| long3(f, V_SUBHN, Sz::NoD, 0)),
    enc("RSUBHN, RSUBHN2", "0Q 1 01110 zz 1 mmmmm 0110 00 nnnnn ddddd", |f| long3(f, V_SUBHN, Sz::NoD, 1)),
    enc("SABDL, SABDL2",  "0Q 0 01110 zz 1 mmmmm 0111 00 nnnnn ddddd", |f| long3(f, V_ABDL, Sz::NoD, 0)),
    enc("UABDL, UABDL2",  "0Q 1 01110 zz 1 mmmmm 0111 00 nnnnn ddddd", |f| long3(f, V_ABDL, Sz::NoD, 1)),
    enc("SMLAL, SMLAL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1000 00 nnnnn ddddd", |f| long3(f, V_MLAL, Sz::NoD, 0)),
    enc("UMLAL, UMLAL2 (vector)", "0Q 1 01110 zz 1 mmmmm 1000 00 nnnnn ddddd", |f| long3(f, V_MLAL, Sz::NoD, 1)),
    enc("SQDMLAL, SQDMLAL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1001 00 nnnnn ddddd", |f| long3(f, V_SQDMLAL, Sz::HS, 0)),
    enc("SMLSL, SMLSL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1010 00 nnnnn ddddd", |f| long3(f, V_MLSL, Sz::NoD, 0)),
    enc("UMLSL, UMLSL2 (vector)", "0Q 1 01110 zz 1 mmmmm 1010 00 nnnnn ddddd", |f| long3(f, V_MLSL, Sz::NoD, 1)),
    enc("SQDMLSL, SQDMLSL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1011 00 nnnnn ddddd", |f| long3(f, V_SQDMLSL, Sz::HS, 0)),
    enc("SMULL, SMULL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1100 00 nnnnn ddddd", |f| long3(f, V_MULL, Sz::NoD, 0)),
    enc("UMULL, UMULL2 (vector)", "0Q 1 01110 zz 1 mmmmm 1100 00 nnnnn ddddd", |f| long3(f, V_MULL, Sz::NoD, 1)),
    enc("SQDMULL, SQDMULL2 (vector)", "0Q 0 01110 zz 1 mmmmm 1101 00 nnnnn ddddd", |f| long3(f, V_SQDMULL, Sz::HS, 0)),
    enc("PMULL, PMULL2",  "0Q 0 01110 zz 1 mmmmm 1110 00 nnnnn ddddd", pmull),

    // ======== AdvSIMD two-register miscellaneous (integer)
    enc("REV64",   "0Q 0 01110 zz 10000 00000 10 nnnnn ddddd", |f| rev(f, 3)),
    enc("REV16 (vector)", "0Q 0 01110 zz 10000 00001 10 nnnnn ddddd", |f| rev(f, 1)),
    enc("SADDLP",  "0Q 0 01110 zz 10000 00010 10 nnnnn ddddd", |f| v2(f, V_ADDLP, Sz::NoD, 0)),
    enc("SUQADD",  "0Q 0 01110 zz 10000 00011 10 nnnnn ddddd", |f| v2(f, V_SUQADD, Sz::Any, 0)),
    enc("CLS (vector)", "0Q 0 01110 zz 10000 00100 10 nnnnn ddddd", |f| v2(f, V_CLS, Sz::NoD, 0)),
    enc("CNT",     "0Q 0 01110 zz 10000 00101 10 nnnnn ddddd", |f| v2(f, V_CNT, Sz::B, 0)),
    enc("SADALP",  "0Q 0 01110 zz 10000 00110 10 nnnnn ddddd", |f| v2(f, V_ADDLP, Sz::NoD, 2)),
    enc("SQABS",   "0Q 0 01110 zz 10000 00111 10 nnnnn ddddd", |f| v2(f, V_SQABS, Sz::Any, 0)),
    enc("CMGT (zero)", "0Q 0 01110 zz 10000 01000 10 nnnnn ddddd", |f| v2(f, V_CMP0, Sz::Any, cmp0::GT)),
    enc("CMEQ (zero)", "0Q 0 01110 zz 10000 01001 10 nnnnn ddddd", |f| v2(f, V_CMP0, Sz::Any, cmp0::EQ)),
    enc("CMLT (zero)", "0Q 0 01110 zz 10000 01010 10 nnnnn ddddd", |f| v2(f, V_CMP0, Sz::Any, cmp0::LT)),
    enc("ABS",     "0Q 0 01110 zz 10000 01011 10 nnnnn ddddd", |f| v2(f, V_ABS, Sz::Any, 0)),
    enc("XTN, XTN2",     "0Q 0 01110 zz 10000 10010 10 nnnnn ddddd", |f| xtn(f, TRUNC)),
    enc("SQXTN, SQXTN2", "0Q 0 01110 zz 10000 10100 10 nnnnn ddddd", |f| xtn(f, SS)),
    enc("REV32 (vector)", "0Q 1 01110 zz 10000 00000 10 nnnnn ddddd", |f| rev(f, 2)),
    enc("UADDLP",  "0Q 1 01110 zz 10000 00010 10 nnnnn ddddd", |f| v2(f, V_ADDLP, Sz::NoD, 1)),
    enc("USQADD",  "0Q 1 01110 zz 10000 00011 10 nnnnn ddddd", |f| v2(f, V_USQADD, Sz::Any, 0)),
    enc("CLZ (vector)", "0Q 1 01110 zz 10000 00100 10 nnnnn ddddd", |f| v2(f, V_CLZ, Sz::NoD, 0)),
    enc("NOT",     "0Q 1 01110 00 10000 00101 10 nnnnn ddddd", |f| Some(rr(f, V_NOT, 0, qf(f)))),
    enc("RBIT (vector)", "0Q 1 01110 01 10000 00101 10 nnnnn ddddd", |f| Some(rr(f, V_RBIT, 0, qf(f)))),
    enc("UADALP",  "0Q 1 01110 zz 10000 00110 10 nnnnn ddddd", |f| v2(f, V_ADDLP, Sz::NoD, 3)),
    enc("SQNEG",   "0Q 1 01110 zz 10000 00111 10 nnnnn ddddd", |f| v2(f, V_SQNEG, Sz::Any, 0)),
    enc("CMGE (zero)", "0Q 1 01110 zz 10000 01000 10 nnnnn ddddd", |f| v2(f, V_CMP0, Sz::Any, cmp0::GE)),
    enc("CMLE (zero)", "0Q 1 01110 zz 10000 01001 10 nnnnn ddddd", |f| v2(f, V_CMP0, Sz::Any, cmp0::LE)),
    enc("NEG (vector)", "0Q 1 01110 zz 10000 01011 10 nnnnn ddddd", |f| v2(f, V_NEG, Sz::Any, 0)),
    enc("SQXTUN, SQXTUN2", "0Q 1 01110 zz 10000 10010 10 nnnnn ddddd", |f| xtn(f, SU)),
    enc("SHLL, SHLL2", "0Q 1 01110 zz 10000 10011 10 nnnnn ddddd", |f| { let e = ssize(f, Sz::NoD)?; Some(rr(f, V_SHLL, e, f.get('Q') as u8).d(1).imm(8 << e)) }),
    enc("UQXTN, UQXTN2", "0Q 1 01110 zz 10000 10100 10 nnnnn ddddd", |f| xtn(f, UU)),
    // ======== AdvSIMD two-register miscellaneous (floating-point)
    enc("FCVTN, FCVTN2",   "0Q 0 01110 0S 10000 10110 10 nnnnn ddddd", |f| Some(rr(f, F_CVTN, 2 + f.get('S') as u8, f.get('Q') as u8))),
    enc("FCVTL, FCVTL2",   "0Q 0 01110 0S 10000 10111 10 nnnnn ddddd", |f| Some(rr(f, F_CVTL, 1 + f.get('S') as u8, f.get('Q') as u8))),
    enc("FRINTN (vector)", "0Q 0 01110 0S 10000 11000 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::N)),
    enc("FRINTM (vector)", "0Q 0 01110 0S 10000 11001 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::M)),
    enc("FCVTNS (vector)", "0Q 0 01110 0S 10000 11010 10 nnnnn ddddd", |f| fcvt_v(f, rmode::N, false)),
    enc("FCVTMS (vector)", "0Q 0 01110 0S 10000 11011 10 nnnnn ddddd", |f| fcvt_v(f, rmode::M, false)),
    enc("FCVTAS (vector)", "0Q 0 01110 0S 10000 11100 10 nnnnn ddddd", |f| fcvt_v(f, rmode::A, false)),
    enc("SCVTF (vector, integer)", "0Q 0 01110 0S 10000 11101 10 nnnnn ddddd", |f| fv2(f, INT_TO_F_V, 0)),
    enc("FCMGT (zero)",    "0Q 0 01110 1S 10000 01100 10 nnnnn ddddd", |f| fv2(f, F_CMP0, cmp0::GT)),
    enc("FCMEQ (zero)",    "0Q 0 01110 1S 10000 01101 10 nnnnn ddddd", |f| fv2(f, F_CMP0, cmp0::EQ)),
    enc("FCMLT (zero)",    "0Q 0 01110 1S 10000 01110 10 nnnnn ddddd", |f| fv2(f, F_CMP0, cmp0::LT)),
    enc("FABS (vector)",   "0Q 0 01110 1S 10000 01111 10 nnnnn ddddd", |f| fv2(f, F_ABS, 0)),
    enc("FRINTP (vector)", "0Q 0 01110 1S 10000 11000 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::P)),
    enc("FRINTZ (vector)", "0Q 0 01110 1S 10000 11001 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::Z)),
    enc("FCVTPS (vector)", "0Q 0 01110 1S 10000 11010 10 nnnnn ddddd", |f| fcvt_v(f, rmode::P, false)),
    enc("FCVTZS (vector, integer)", "0Q 0 01110 1S 10000 11011 10 nnnnn ddddd", |f| fcvt_v(f, rmode::Z, false)),
    enc("URECPE",          "0Q 0 01110 10 10000 11100 10 nnnnn ddddd", |f| Some(rr(f, V_URECPE, 2, qf(f)))),
    enc("FRECPE (vector)", "0Q 0 01110 1S 10000 11101 10 nnnnn ddddd", |f| fv2(f, F_RECPE, 0)),
    enc("FCVTXN, FCVTXN2", "0Q 1 01110 01 10000 10110 10 nnnnn ddddd", |f| Some(rr(f, F_CVTN, 3, f.get('Q') as u8).d(1))),
    enc("FRINTA (vector)", "0Q 1 01110 0S 10000 11000 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::A)),
    enc("FRINTX (vector)", "0Q 1 01110 0S 10000 11001 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::FPCR_EXACT)),
    enc("FCVTNU (vector)", "0Q 1 01110 0S 10000 11010 10 nnnnn ddddd", |f| fcvt_v(f, rmode::N, true)),
    enc("FCVTMU (vector)", "0Q 1 01110 0S 10000 11011 10 nnnnn ddddd", |f| fcvt_v(f, rmode::M, true)),
    enc("FCVTAU (vector)", "0Q 1 01110 0S 10000 11100 10 nnnnn ddddd", |f| fcvt_v(f, rmode::A, true)),
    enc("UCVTF (vector, integer)", "0Q 1 01110 0S 10000 11101 10 nnnnn ddddd", |f| fv2(f, INT_TO_F_V, 1)),
    enc("FCMGE (zero)",    "0Q 1 01110 1S 10000 01100 10 nnnnn ddddd", |f| fv2(f, F_CMP0, cmp0::GE)),
    enc("FCMLE (zero)",    "0Q 1 01110 1S 10000 01101 10 nnnnn ddddd", |f| fv2(f, F_CMP0, cmp0::LE)),
    enc("FNEG (vector)",   "0Q 1 01110 1S 10000 01111 10 nnnnn ddddd", |f| fv2(f, F_NEG, 0)),
    enc("FRINTI (vector)", "0Q 1 01110 1S 10000 11001 10 nnnnn ddddd", |f| fv2(f, F_RINT, rmode::FPCR)),
    enc("FCVTPU (vector)", "0Q 1 01110 1S 10000 11010 10 nnnnn ddddd", |f| fcvt_v(f, rmode::P, true)),
    enc("FCVTZU (vector, integer)", "0Q 1 01110 1S 10000 11011 10 nnnnn ddddd", |f| fcvt_v(f, rmode::Z, true)),
    enc("URSQRTE",         "0Q 1 01110 10 10000 11100 10 nnnnn ddddd", |f| Some(rr(f, V_URSQRTE, 2, qf(f)))),
    enc("FRSQRTE (vector)", "0Q 1 01110 1S 10000 11101 10 nnnnn ddddd", |f| fv2(f, F_RSQRTE, 0)),
    enc("FSQRT (vector)",  "0Q 1 01110 1S 10000 11111 10 nnnnn ddddd", |f| fv2(f, F_SQRT, 0)),

    // ======== AdvSIMD across lanes
    enc("SADDLV",  "0Q 0 01110 zz 11000 00011 10 nnnnn ddddd", |f| across(f, V_ADDLV, 0)),
    enc("SMAXV",   "0Q 0 01110 zz 11000 01010 10 nnnnn ddddd", |f| across(f, V_MAXV, 0)),
    enc("SMINV",   "0Q 0 01110 zz 11000 11010 10 nnnnn ddddd", |f| across(f, V_MINV, 0)),
    enc("ADDV",    "0Q 0 01110 zz 11000 11011 10 nnnnn ddddd", |f| across(f, V_ADDV, 0)),
    enc("UADDLV",  "0Q 1 01110 zz 11000 00011 10 nnnnn ddddd", |f| across(f, V_ADDLV, 1)),
    enc("UMAXV",   "0Q 1 01110 zz 11000 01010 10 nnnnn ddddd", |f| across(f, V_MAXV, 1)),
    enc("UMINV",   "0Q 1 01110 zz 11000 11010 10 nnnnn ddddd", |f| across(f, V_MINV, 1)),
    enc("FMAXNMV", "0Q 1 01110 0S 11000 01100 10 nnnnn ddddd", |f| facross(f, fred::MAXNM)),
    enc("FMAXV",   "0Q 1 01110 0S 11000 01111 10 nnnnn ddddd", |f| facross(f, fred::MAX)),
    enc("FMINNMV", "0Q 1 01110 1S 11000 01100 10 nnnnn ddddd", |f| facross(f, fred::MINNM)),
    enc("FMINV",   "0Q 1 01110 1S 11000 01111 10 nnnnn ddddd", |f| facross(f, fred::MIN)),

    // ======== AdvSIMD three same (extra): FEAT_DotProd (words of Vd from the bytes of Vn, Vm)
    enc("SDOT (vector)", "0Q 0 01110 10 0 mmmmm 1 0010 1 nnnnn ddddd", |f| Some(rrr(f, V_DOT, 2, qf(f)))),
    enc("UDOT (vector)", "0Q 1 01110 10 0 mmmmm 1 0010 1 nnnnn ddddd", |f| Some(rrr(f, V_DOT, 2, qf(f)).d(1))),

    // ======== AdvSIMD shift by immediate
    enc("SSHR",    "0Q 0 011110 hhhh bbb 00000 1 nnnnn ddddd", |f| shr_v(f, 0)),
    enc("USHR",    "0Q 1 011110 hhhh bbb 00000 1 nnnnn ddddd", |f| shr_v(f, 1)),
    enc("SSRA",    "0Q 0 011110 hhhh bbb 00010 1 nnnnn ddddd", |f| shr_v(f, 4)),
    enc("USRA",    "0Q 1 011110 hhhh bbb 00010 1 nnnnn ddddd", |f| shr_v(f, 5)),
    enc("SRSHR",   "0Q 0 011110 hhhh bbb 00100 1 nnnnn ddddd", |f| shr_v(f, 2)),
    enc("URSHR",   "0Q 1 011110 hhhh bbb 00100 1 nnnnn ddddd", |f| shr_v(f, 3)),
    enc("SRSRA",   "0Q 0 011110 hhhh bbb 00110 1 nnnnn ddddd", |f| shr_v(f, 6)),
    enc("URSRA",   "0Q 1 011110 hhhh bbb 00110 1 nnnnn ddddd", |f| shr_v(f, 7)),
    enc("SRI",     "0Q 1 011110 hhhh bbb 01000 1 nnnnn ddddd", sri_v),
    enc("SHL",     "0Q 0 011110 hhhh bbb 01010 1 nnnnn ddddd", |f| shl_v(f, V_SHL, 0)),
    enc("SLI",     "0Q 1 011110 hhhh bbb 01010 1 nnnnn ddddd", |f| shl_v(f, V_SLI, 0)),
    enc("SQSHLU",  "0Q 1 011110 hhhh bbb 01100 1 nnnnn ddddd", |f| shl_v(f, V_QSHL_IMM, 2)),
    enc("SQSHL (immediate)", "0Q 0 011110 hhhh bbb 01110 1 nnnnn ddddd", |f| shl_v(f, V_QSHL_IMM, 0)),
    enc("UQSHL (immediate)", "0Q 1 011110 hhhh bbb 01110 1 nnnnn ddddd", |f| shl_v(f, V_QSHL_IMM, 1)),
    enc("SHRN, SHRN2",         "0Q 0 011110 hhhh bbb 10000 1 nnnnn ddddd", |f| shrn(f, TRUNC << 1, false)),
    enc("RSHRN, RSHRN2",       "0Q 0 011110 hhhh bbb 10001 1 nnnnn ddddd", |f| shrn(f, TRUNC << 1 | 1, false)),
    enc("SQSHRN, SQSHRN2",     "0Q 0 011110 hhhh bbb 10010 1 nnnnn ddddd", |f| shrn(f, SS << 1, false)),
    enc("SQRSHRN, SQRSHRN2",   "0Q 0 011110 hhhh bbb 10011 1 nnnnn ddddd", |f| shrn(f, SS << 1 | 1, false)),
    enc("SQSHRUN, SQSHRUN2",   "0Q 1 011110 hhhh bbb 10000 1 nnnnn ddddd", |f| shrn(f, SU << 1, false)),
    enc("SQRSHRUN, SQRSHRUN2", "0Q 1 011110 hhhh bbb 10001 1 nnnnn ddddd", |f| shrn(f, SU << 1 | 1, false)),
    enc("UQSHRN, UQSHRN2",     "0Q 1 011110 hhhh bbb 10010 1 nnnnn ddddd", |f| shrn(f, UU << 1, false)),
    enc("UQRSHRN, UQRSHRN2",   "0Q 1 011110 hhhh bbb 10011 1 nnnnn ddddd", |f| shrn(f, UU << 1 | 1, false)),
    enc("SSHLL, SSHLL2 (SXTL)", "0Q 0 011110 hhhh bbb 10100 1 nnnnn ddddd", |f| shll(f, false)),
    enc("USHLL, USHLL2 (UXTL)", "0Q 1 011110 hhhh bbb 10100 1 nnnnn ddddd", |f| shll(f, true)),
    enc("SCVTF (vector, fixed-point)",  "0Q 0 011110 hhhh bbb 11100 1 nnnnn ddddd", |f| fixed(f, INT_TO_F_V, 0, false)),
    enc("UCVTF (vector, fixed-point)",  "0Q 1 011110 hhhh bbb 11100 1 nnnnn ddddd", |f| fixed(f, INT_TO_F_V, 1, false)),
    enc("FCVTZS (vector, fixed-point)", "0Q 0 011110 hhhh bbb 11111 1 nnnnn ddddd", |f| fixed(f, F_TO_INT_V, rmode::Z, false)),
    enc("FCVTZU (vector, fixed-point)", "0Q 1 011110 hhhh bbb 11111 1 nnnnn ddddd", |f| fixed(f, F_TO_INT_V, rmode::Z | 8, false)),

    // ======== AdvSIMD vector x indexed element
    enc("MLA (by element)",  "0Q 1 01111 zz L M mmmm 0000 H 0 nnnnn ddddd", |f| elem_int(f, V_MLA, false, 0)),
    enc("SMLAL, SMLAL2 (by element)", "0Q 0 01111 zz L M mmmm 0010 H 0 nnnnn ddddd", |f| elem_long(f, V_MLAL, false, 0)),
    enc("UMLAL, UMLAL2 (by element)", "0Q 1 01111 zz L M mmmm 0010 H 0 nnnnn ddddd", |f| elem_long(f, V_MLAL, false, 1)),
    enc("SQDMLAL, SQDMLAL2 (by element)", "0Q 0 01111 zz L M mmmm 0011 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMLAL, false, 0)),
    enc("MLS (by element)",  "0Q 1 01111 zz L M mmmm 0100 H 0 nnnnn ddddd", |f| elem_int(f, V_MLS, false, 0)),
    enc("SMLSL, SMLSL2 (by element)", "0Q 0 01111 zz L M mmmm 0110 H 0 nnnnn ddddd", |f| elem_long(f, V_MLSL, false, 0)),
    enc("UMLSL, UMLSL2 (by element)", "0Q 1 01111 zz L M mmmm 0110 H 0 nnnnn ddddd", |f| elem_long(f, V_MLSL, false, 1)),
    enc("SQDMLSL, SQDMLSL2 (by element)", "0Q 0 01111 zz L M mmmm 0111 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMLSL, false, 0)),
    enc("MUL (by element)",  "0Q 0 01111 zz L M mmmm 1000 H 0 nnnnn ddddd", |f| elem_int(f, V_MUL, false, 0)),
    enc("SDOT (by element)", "0Q 0 01111 10 L M mmmm 1110 H 0 nnnnn ddddd", |f| elem_dot(f, 0)),
    enc("UDOT (by element)", "0Q 1 01111 10 L M mmmm 1110 H 0 nnnnn ddddd", |f| elem_dot(f, 1)),
    enc("SMULL, SMULL2 (by element)", "0Q 0 01111 zz L M mmmm 1010 H 0 nnnnn ddddd", |f| elem_long(f, V_MULL, false, 0)),
    enc("UMULL, UMULL2 (by element)", "0Q 1 01111 zz L M mmmm 1010 H 0 nnnnn ddddd", |f| elem_long(f, V_MULL, false, 1)),
    enc("SQDMULL, SQDMULL2 (by element)", "0Q 0 01111 zz L M mmmm 1011 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMULL, false, 0)),
    enc("SQDMULH (by element)",  "0Q 0 01111 zz L M mmmm 1100 H 0 nnnnn ddddd", |f| elem_int(f, V_SQDMULH, false, 0)),
    enc("SQRDMULH (by element)", "0Q 0 01111 zz L M mmmm 1101 H 0 nnnnn ddddd", |f| elem_int(f, V_SQDMULH, false, 1)),
    enc("FMLA (by element)",  "0Q 0 01111 1S L M mmmm 0001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MADD, false, true)),
    enc("FMLS (by element)",  "0Q 0 01111 1S L M mmmm 0101 H 0 nnnnn ddddd", |f| elem_fp(f, F_MSUB, false, true)),
    enc("FMUL (by element)",  "0Q 0 01111 1S L M mmmm 1001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MUL, false, false)),
    enc("FMULX (by element)", "0Q 1 01111 1S L M mmmm 1001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MULX, false, false)),

    // ======== AdvSIMD scalar copy
    enc("DUP (element, scalar) (MOV)", "01 0 11110000 iiiii 0 0000 1 nnnnn ddddd", |f| dup_elem(f, true)),
    // ======== AdvSIMD scalar pairwise
    enc("ADDP (scalar)",    "01 0 11110 zz 11000 11011 10 nnnnn ddddd", |f| { if f.get('z') != 3 { return None; } Some(rr(f, V_ADDV, 3, 4)) }),
    enc("FMAXNMP (scalar)", "01 1 11110 0S 11000 01100 10 nnnnn ddddd", |f| fpair_s(f, fred::MAXNM)),
    enc("FADDP (scalar)",   "01 1 11110 0S 11000 01101 10 nnnnn ddddd", |f| fpair_s(f, fred::ADD)),
    enc("FMAXP (scalar)",   "01 1 11110 0S 11000 01111 10 nnnnn ddddd", |f| fpair_s(f, fred::MAX)),
    enc("FMINNMP (scalar)", "01 1 11110 1S 11000 01100 10 nnnnn ddddd", |f| fpair_s(f, fred::MINNM)),
    enc("FMINP (scalar)",   "01 1 11110 1S 11000 01111 10 nnnnn ddddd", |f| fpair_s(f, fred::MIN)),
    // ======== AdvSIMD scalar three same (integer)
    enc("SQADD (scalar)",   "01 0 11110 zz 1 mmmmm 00001 1 nnnnn ddddd", |f| s3(f, V_QADD, Sz::Any, 0)),
    enc("UQADD (scalar)",   "01 1 11110 zz 1 mmmmm 00001 1 nnnnn ddddd", |f| s3(f, V_QADD, Sz::Any, 1)),
    enc("SQSUB (scalar)",   "01 0 11110 zz 1 mmmmm 00101 1 nnnnn ddddd", |f| s3(f, V_QSUB, Sz::Any, 0)),
    enc("UQSUB (scalar)",   "01 1 11110 zz 1 mmmmm 00101 1 nnnnn ddddd", |f| s3(f, V_QSUB, Sz::Any, 1)),
    enc("CMGT (register, scalar)", "01 0 11110 zz 1 mmmmm 00110 1 nnnnn ddddd", |f| s3(f, V_CMGT, Sz::D, 0)),
    enc("CMHI (register, scalar)", "01 1 11110 zz 1 mmmmm 00110 1 nnnnn ddddd", |f| s3(f, V_CMHI, Sz::D, 0)),
    enc("CMGE (register, scalar)", "01 0 11110 zz 1 mmmmm 00111 1 nnnnn ddddd", |f| s3(f, V_CMGE, Sz::D, 0)),
    enc("CMHS (register, scalar)", "01 1 11110 zz 1 mmmmm 00111 1 nnnnn ddddd", |f| s3(f, V_CMHS, Sz::D, 0)),
    enc("SSHL (scalar)",    "01 0 11110 zz 1 mmmmm 01000 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::D, 0)),
    enc("USHL (scalar)",    "01 1 11110 zz 1 mmmmm 01000 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::D, 1)),
    enc("SQSHL (register, scalar)", "01 0 11110 zz 1 mmmmm 01001 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::Any, 4)),
    enc("UQSHL (register, scalar)", "01 1 11110 zz 1 mmmmm 01001 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::Any, 5)),
    enc("SRSHL (scalar)",   "01 0 11110 zz 1 mmmmm 01010 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::D, 2)),
    enc("URSHL (scalar)",   "01 1 11110 zz 1 mmmmm 01010 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::D, 3)),
    enc("SQRSHL (scalar)",  "01 0 11110 zz 1 mmmmm 01011 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::Any, 6)),
    enc("UQRSHL (scalar)",  "01 1 11110 zz 1 mmmmm 01011 1 nnnnn ddddd", |f| s3(f, V_SHL_REG, Sz::Any, 7)),
    enc("ADD (vector, scalar)", "01 0 11110 zz 1 mmmmm 10000 1 nnnnn ddddd", |f| s3(f, V_ADD, Sz::D, 0)),
    enc("SUB (vector, scalar)", "01 1 11110 zz 1 mmmmm 10000 1 nnnnn ddddd", |f| s3(f, V_SUB, Sz::D, 0)),
    enc("CMTST (scalar)",   "01 0 11110 zz 1 mmmmm 10001 1 nnnnn ddddd", |f| s3(f, V_CMTST, Sz::D, 0)),
    enc("CMEQ (register, scalar)", "01 1 11110 zz 1 mmmmm 10001 1 nnnnn ddddd", |f| s3(f, V_CMEQ, Sz::D, 0)),
    enc("SQDMULH (vector, scalar)",  "01 0 11110 zz 1 mmmmm 10110 1 nnnnn ddddd", |f| s3(f, V_SQDMULH, Sz::HS, 0)),
    enc("SQRDMULH (vector, scalar)", "01 1 11110 zz 1 mmmmm 10110 1 nnnnn ddddd", |f| s3(f, V_SQDMULH, Sz::HS, 1)),
    // ======== AdvSIMD scalar three same (floating-point)
    enc("FMULX (scalar)",   "01 0 11110 0S 1 mmmmm 11011 1 nnnnn ddddd", |f| fs3(f, F_MULX)),
    enc("FCMEQ (register, scalar)", "01 0 11110 0S 1 mmmmm 11100 1 nnnnn ddddd", |f| fs3(f, F_CMEQ)),
    enc("FRECPS (scalar)",  "01 0 11110 0S 1 mmmmm 11111 1 nnnnn ddddd", |f| fs3(f, F_RECPS)),
    enc("FRSQRTS (scalar)", "01 0 11110 1S 1 mmmmm 11111 1 nnnnn ddddd", |f| fs3(f, F_RSQRTS)),
    enc("FCMGE (register, scalar)", "01 1 11110 0S 1 mmmmm 11100 1 nnnnn ddddd", |f| fs3(f, F_CMGE)),
    enc("FACGE (scalar)",   "01 1 11110 0S 1 mmmmm 11101 1 nnnnn ddddd", |f| fs3(f, F_ACGE)),
    enc("FABD (scalar)",    "01 1 11110 1S 1 mmmmm 11010 1 nnnnn ddddd", |f| fs3(f, F_ABD)),
    enc("FCMGT (register, scalar)", "01 1 11110 1S 1 mmmmm 11100 1 nnnnn ddddd", |f| fs3(f, F_CMGT)),
    enc("FACGT (scalar)",   "01 1 11110 1S 1 mmmmm 11101 1 nnnnn ddddd", |f| fs3(f, F_ACGT)),
    // ======== AdvSIMD scalar three different
    enc("SQDMLAL (scalar)", "01 0 11110 zz 1 mmmmm 1001 00 nnnnn ddddd", |f| long3_s(f, V_SQDMLAL)),
    enc("SQDMLSL (scalar)", "01 0 11110 zz 1 mmmmm 1011 00 nnnnn ddddd", |f| long3_s(f, V_SQDMLSL)),
    enc("SQDMULL (scalar)", "01 0 11110 zz 1 mmmmm 1101 00 nnnnn ddddd", |f| long3_s(f, V_SQDMULL)),
    // ======== AdvSIMD scalar two-register miscellaneous (integer)
    enc("SUQADD (scalar)",  "01 0 11110 zz 10000 00011 10 nnnnn ddddd", |f| s2(f, V_SUQADD, Sz::Any, 0)),
    enc("SQABS (scalar)",   "01 0 11110 zz 10000 00111 10 nnnnn ddddd", |f| s2(f, V_SQABS, Sz::Any, 0)),
    enc("CMGT (zero, scalar)", "01 0 11110 zz 10000 01000 10 nnnnn ddddd", |f| s2(f, V_CMP0, Sz::D, cmp0::GT)),
    enc("CMEQ (zero, scalar)", "01 0 11110 zz 10000 01001 10 nnnnn ddddd", |f| s2(f, V_CMP0, Sz::D, cmp0::EQ)),
    enc("CMLT (zero, scalar)", "01 0 11110 zz 10000 01010 10 nnnnn ddddd", |f| s2(f, V_CMP0, Sz::D, cmp0::LT)),
    enc("ABS (scalar)",     "01 0 11110 zz 10000 01011 10 nnnnn ddddd", |f| s2(f, V_ABS, Sz::D, 0)),
    enc("SQXTN (scalar)",   "01 0 11110 zz 10000 10100 10 nnnnn ddddd", |f| xtn_s(f, SS)),
    enc("USQADD (scalar)",  "01 1 11110 zz 10000 00011 10 nnnnn ddddd", |f| s2(f, V_USQADD, Sz::Any, 0)),
    enc("SQNEG (scalar)",   "01 1 11110 zz 10000 00111 10 nnnnn ddddd", |f| s2(f, V_SQNEG, Sz::Any, 0)),
    enc("CMGE (zero, scalar)", "01 1 11110 zz 10000 01000 10 nnnnn ddddd", |f| s2(f, V_CMP0, Sz::D, cmp0::GE)),
    enc("CMLE (zero, scalar)", "01 1 11110 zz 10000 01001 10 nnnnn ddddd", |f| s2(f, V_CMP0, Sz::D, cmp0::LE)),
    enc("NEG (vector, scalar)", "01 1 11110 zz 10000 01011 10 nnnnn ddddd", |f| s2(f, V_NEG, Sz::D, 0)),
    enc("SQXTUN (scalar)",  "01 1 11110 zz 10000 10010 10 nnnnn ddddd", |f| xtn_s(f, SU)),
    enc("UQXTN (scalar)",   "01 1 11110 zz 10000 10100 10 nnnnn ddddd", |f| xtn_s(f, UU)),
    // ======== AdvSIMD scalar two-register miscellaneous (floating-point)
    enc("FCVTNS (vector, scalar)", "01 0 11110 0S 10000 11010 10 nnnnn ddddd", |f| fcvt_s(f, rmode::N, false)),
    enc("FCVTMS (vector, scalar)", "01 0 11110 0S 10000 11011 10 nnnnn ddddd", |f| fcvt_s(f, rmode::M, false)),
    enc("FCVTAS (vector, scalar)", "01 0 11110 0S 10000 11100 10 nnnnn ddddd", |f| fcvt_s(f, rmode::A, false)),
    enc("SCVTF (vector, integer, scalar)", "01 0 11110 0S 10000 11101 10 nnnnn ddddd", |f| fs2(f, INT_TO_F_V, 0)),
    enc("FCMGT (zero, scalar)",    "01 0 11110 1S 10000 01100 10 nnnnn ddddd", |f| fs2(f, F_CMP0, cmp0::GT)),
    enc("FCMEQ (zero, scalar)",    "01 0 11110 1S 10000 01101 10 nnnnn ddddd", |f| fs2(f, F_CMP0, cmp0::EQ)),
    enc("FCMLT (zero, scalar)",    "01 0 11110 1S 10000 01110 10 nnnnn ddddd", |f| fs2(f, F_CMP0, cmp0::LT)),
    enc("FCVTPS (vector, scalar)", "01 0 11110 1S 10000 11010 10 nnnnn ddddd", |f| fcvt_s(f, rmode::P, false)),
    enc("FCVTZS (vector, integer, scalar)", "01 0 11110 1S 10000 11011 10 nnnnn ddddd", |f| fcvt_s(f, rmode::Z, false)),
    enc("FRECPE (scalar)",         "01 0 11110 1S 10000 11101 10 nnnnn ddddd", |f| fs2(f, F_RECPE, 0)),
    enc("FRECPX",                  "01 0 11110 1S 10000 11111 10 nnnnn ddddd", |f| fs2(f, F_RECPX, 0)),
    enc("FCVTXN (scalar)",         "01 1 11110 01 10000 10110 10 nnnnn ddddd", |f| Some(rr(f, F_CVTN, 3, PART_SCALAR).d(1))),
    enc("FCVTNU (vector, scalar)", "01 1 11110 0S 10000 11010 10 nnnnn ddddd", |f| fcvt_s(f, rmode::N, true)),
    enc("FCVTMU (vector, scalar)", "01 1 11110 0S 10000 11011 10 nnnnn ddddd", |f| fcvt_s(f, rmode::M, true)),
    enc("FCVTAU (vector, scalar)", "01 1 11110 0S 10000 11100 10 nnnnn ddddd", |f| fcvt_s(f, rmode::A, true)),
    enc("UCVTF (vector, integer, scalar)", "01 1 11110 0S 10000 11101 10 nnnnn ddddd", |f| fs2(f, INT_TO_F_V, 1)),
    enc("FCMGE (zero, scalar)",    "01 1 11110 1S 10000 01100 10 nnnnn ddddd", |f| fs2(f, F_CMP0, cmp0::GE)),
    enc("FCMLE (zero, scalar)",    "01 1 11110 1S 10000 01101 10 nnnnn ddddd", |f| fs2(f, F_CMP0, cmp0::LE)),
    enc("FCVTPU (vector, scalar)", "01 1 11110 1S 10000 11010 10 nnnnn ddddd", |f| fcvt_s(f, rmode::P, true)),
    enc("FCVTZU (vector, integer, scalar)", "01 1 11110 1S 10000 11011 10 nnnnn ddddd", |f| fcvt_s(f, rmode::Z, true)),
    enc("FRSQRTE (scalar)",        "01 1 11110 1S 10000 11101 10 nnnnn ddddd", |f| fs2(f, F_RSQRTE, 0)),
    // ======== AdvSIMD scalar shift by immediate
    enc("SSHR (scalar)",   "01 0 111110 hhhh bbb 00000 1 nnnnn ddddd", |f| shr_s(f, 0)),
    enc("USHR (scalar)",   "01 1 111110 hhhh bbb 00000 1 nnnnn ddddd", |f| shr_s(f, 1)),
    enc("SSRA (scalar)",   "01 0 111110 hhhh bbb 00010 1 nnnnn ddddd", |f| shr_s(f, 4)),
    enc("USRA (scalar)",   "01 1 111110 hhhh bbb 00010 1 nnnnn ddddd", |f| shr_s(f, 5)),
    enc("SRSHR (scalar)",  "01 0 111110 hhhh bbb 00100 1 nnnnn ddddd", |f| shr_s(f, 2)),
    enc("URSHR (scalar)",  "01 1 111110 hhhh bbb 00100 1 nnnnn ddddd", |f| shr_s(f, 3)),
    enc("SRSRA (scalar)",  "01 0 111110 hhhh bbb 00110 1 nnnnn ddddd", |f| shr_s(f, 6)),
    enc("URSRA (scalar)",  "01 1 111110 hhhh bbb 00110 1 nnnnn ddddd", |f| shr_s(f, 7)),
    enc("SRI (scalar)",    "01 1 111110 hhhh bbb 01000 1 nnnnn ddddd", sri_s),
    enc("SHL (scalar)",    "01 0 111110 hhhh bbb 01010 1 nnnnn ddddd", |f| shl_s(f, V_SHL, 0, false)),
    enc("SLI (scalar)",    "01 1 111110 hhhh bbb 01010 1 nnnnn ddddd", |f| shl_s(f, V_SLI, 0, false)),
    enc("SQSHLU (scalar)", "01 1 111110 hhhh bbb 01100 1 nnnnn ddddd", |f| shl_s(f, V_QSHL_IMM, 2, true)),
    enc("SQSHL (immediate, scalar)", "01 0 111110 hhhh bbb 01110 1 nnnnn ddddd", |f| shl_s(f, V_QSHL_IMM, 0, true)),
    enc("UQSHL (immediate, scalar)", "01 1 111110 hhhh bbb 01110 1 nnnnn ddddd", |f| shl_s(f, V_QSHL_IMM, 1, true)),
    enc("SQSHRN (scalar)",   "01 0 111110 hhhh bbb 10010 1 nnnnn ddddd", |f| shrn(f, SS << 1, true)),
    enc("SQRSHRN (scalar)",  "01 0 111110 hhhh bbb 10011 1 nnnnn ddddd", |f| shrn(f, SS << 1 | 1, true)),
    enc("SQSHRUN (scalar)",  "01 1 111110 hhhh bbb 10000 1 nnnnn ddddd", |f| shrn(f, SU << 1, true)),
    enc("SQRSHRUN (scalar)", "01 1 111110 hhhh bbb 10001 1 nnnnn ddddd", |f| shrn(f, SU << 1 | 1, true)),
    enc("UQSHRN (scalar)",   "01 1 111110 hhhh bbb 10010 1 nnnnn ddddd", |f| shrn(f, UU << 1, true)),
    enc("UQRSHRN (scalar)",  "01 1 111110 hhhh bbb 10011 1 nnnnn ddddd", |f| shrn(f, UU << 1 | 1, true)),
    enc("SCVTF (vector, fixed-point, scalar)",  "01 0 111110 hhhh bbb 11100 1 nnnnn ddddd", |f| fixed(f, INT_TO_F_V, 0, true)),
    enc("UCVTF (vector, fixed-point, scalar)",  "01 1 111110 hhhh bbb 11100 1 nnnnn ddddd", |f| fixed(f, INT_TO_F_V, 1, true)),
    enc("FCVTZS (vector, fixed-point, scalar)", "01 0 111110 hhhh bbb 11111 1 nnnnn ddddd", |f| fixed(f, F_TO_INT_V, rmode::Z, true)),
    enc("FCVTZU (vector, fixed-point, scalar)", "01 1 111110 hhhh bbb 11111 1 nnnnn ddddd", |f| fixed(f, F_TO_INT_V, rmode::Z | 8, true)),
    // ======== AdvSIMD scalar x indexed element
    enc("SQDMLAL (by element, scalar)",  "01 0 11111 zz L M mmmm 0011 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMLAL, true, 0)),
    enc("SQDMLSL (by element, scalar)",  "01 0 11111 zz L M mmmm 0111 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMLSL, true, 0)),
    enc("SQDMULL (by element, scalar)",  "01 0 11111 zz L M mmmm 1011 H 0 nnnnn ddddd", |f| elem_long(f, V_SQDMULL, true, 0)),
    enc("SQDMULH (by element, scalar)",  "01 0 11111 zz L M mmmm 1100 H 0 nnnnn ddddd", |f| elem_int(f, V_SQDMULH, true, 0)),
    enc("SQRDMULH (by element, scalar)", "01 0 11111 zz L M mmmm 1101 H 0 nnnnn ddddd", |f| elem_int(f, V_SQDMULH, true, 1)),
    enc("FMLA (by element, scalar)",  "01 0 11111 1S L M mmmm 0001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MADD, true, true)),
    enc("FMLS (by element, scalar)",  "01 0 11111 1S L M mmmm 0101 H 0 nnnnn ddddd", |f| elem_fp(f, F_MSUB, true, true)),
    enc("FMUL (by element, scalar)",  "01 0 11111 1S L M mmmm 1001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MUL, true, false)),
    enc("FMULX (by element, scalar)", "01 1 11111 1S L M mmmm 1001 H 0 nnnnn ddddd", |f| elem_fp(f, F_MULX, true, false)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_named;

    #[allow(clippy::too_many_arguments)]
    fn m(op: u16, a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, imm: u64) -> MicroOp {
        MicroOp {
            op,
            a,
            b,
            c,
            d,
            e,
            f,
            imm,
        }
    }

    fn check(cases: &[(u32, MicroOp)]) {
        for (word, want) in cases {
            let (got, name) = decode_named(*word, 0x40_0000);
            assert_eq!(got, *want, "{word:08x} ({name})");
        }
    }

    const ZR: u8 = reg::ZR;

    #[test]
    fn loads_and_stores() {
        check(&[
            // ld1 {v0.16b}, [x0]
            (0x4c407000, m(V_LD_MULTI, 0, 0, ZR, 1 | 1 << 3, 0, 4, 0)),
            // ld4 {v1.4s-v4.4s}, [sp], #64
            (
                0x4cdf0be1,
                m(V_LD_MULTI, 1, 31, ZR, 4 | 1 << 3 | LDST_WB, 2, 4, 64),
            ),
            // st1 {v31.2d, v0.2d}, [x2], x3
            (
                0x4c83ac5f,
                m(V_ST_MULTI, 31, 2, 3, 1 | 2 << 3 | LDST_WB, 3, 4, 0),
            ),
            // ld1 {v0.s}[3], [x1]
            (0x4d409020, m(V_LD_SINGLE, 0, 1, ZR, 1, 2, 3, 0)),
            // ld3r {v5.8h-v7.8h}, [x9], x10
            (0x4dcae525, m(V_LD_REPL, 5, 9, 10, 3 | LDST_WB, 1, 4, 0)),
            // st2 {v0.d, v1.d}[1], [x4], #16
            (0x4dbf8480, m(V_ST_SINGLE, 0, 4, ZR, 2 | LDST_WB, 3, 1, 16)),
        ]);
        // ld2 {v0.1d, v1.1d}, [x0] is reserved
        assert_eq!(decode_named(0x0c408c00, 0).0.op, UNDEFINED);
    }

    #[test]
    fn copies_tables_permutes_immediates() {
        check(&[
            // tbl v0.16b, {v1.16b-v3.16b}, v4.16b ; tbx v0.8b, {v30.16b, v31.16b}, v4.8b
            (0x4e044020, m(V_TBL, 0, 1, 4, 3, 0, 4, 0)),
            (0x0e0433c0, m(V_TBL, 0, 30, 4, 2, 1, 3, 0)),
            // zip2 v0.4s, v1.4s, v2.4s ; ext v0.8b, v1.8b, v2.8b, #7
            (0x4e827820, m(V_ZIP, 0, 1, 2, 1, 2, 4, 0)),
            (0x2e023820, m(V_EXT, 0, 1, 2, 0, 0, 3, 7)),
            // dup v0.8h, v1.h[5] ; dup v0.2d, x3 ; mov d0, v1.d[1]
            (0x4e160420, m(V_DUP_ELEM, 0, 1, 0, 0, 1, 4, 5)),
            (0x4e080c60, m(V_DUP_GEN, 0, 3, 0, 0, 3, 4, 0)),
            (0x5e180420, m(V_DUP_ELEM, 0, 1, 0, 0, 3, 3, 1)),
            // smov x0, v1.s[3] ; umov w0, v1.b[9]
            (0x4e1c2c20, m(V_SMOV, 0, 1, 0, 0, 2, 1, 3)),
            (0x0e133c20, m(V_UMOV, 0, 1, 0, 0, 0, 0, 9)),
            // mov v0.s[2], v1.s[1] ; mov v1.b[15], wzr
            (0x6e142420, m(V_INS_ELEM, 0, 1, 0, 1, 2, 0, 2)),
            (0x4e1f1fe1, m(V_INS_GEN, 1, ZR, 0, 0, 0, 0, 15)),
            // movi v0.2d, #0xff00ff00ff00ff00 ; mvni v2.4s, #0x12, lsl #8
            (
                0x6f05e540,
                m(V_MOVI, 0, 0, 0, 0, 0, 4, 0xff00_ff00_ff00_ff00),
            ),
            (
                0x6f002642,
                m(V_MOVI, 2, 0, 0, 0, 0, 4, 0xffff_edff_ffff_edff),
            ),
            // bic v3.8h, #0x34, lsl #8 ; fmov v0.4s, #-2.0
            (
                0x6f01b683,
                m(V_AND_IMM, 3, 0, 0, 0, 0, 4, 0xcbff_cbff_cbff_cbff),
            ),
            (
                0x4f04f400,
                m(V_MOVI, 0, 0, 0, 0, 0, 4, 0xc000_0000_c000_0000),
            ),
        ]);
    }

    #[test]
    fn three_same_different_and_misc() {
        check(&[
            // add v0.4s ; uqrshl v0.8h ; sqrdmulh v0.2s ; bsl v0.16b
            (0x4ea28420, m(V_ADD, 0, 1, 2, 0, 2, 4, 0)),
            (0x6e625c20, m(V_SHL_REG, 0, 1, 2, 7, 1, 4, 0)),
            (0x2ea2b420, m(V_SQDMULH, 0, 1, 2, 1, 2, 3, 0)),
            (0x6e621c20, m(V_BSL, 0, 1, 2, 0, 0, 4, 0)),
            // fmla v0.2d ; fmaxnmp v0.4s
            (0x4e62cc20, m(F_MADD, 0, 1, 2, 0, 3, 4, 0)),
            (0x6e22c420, m(F_PAIR, 0, 1, 2, fred::MAXNM, 2, 4, 0)),
            // umlal2 v0.2d, v1.4s, v2.4s ; raddhn2 v0.16b ; pmull2 v0.1q
            (0x6ea28020, m(V_MLAL, 0, 1, 2, 1, 2, 1, 0)),
            (0x6e224020, m(V_ADDHN, 0, 1, 2, 1, 0, 1, 0)),
            (0x4ee2e020, m(V_PMULL, 0, 1, 2, 0, 3, 1, 0)),
            // rev32 v0.8h ; sadalp v0.2d, v1.4s ; sqxtun2 v0.8h, v1.4s
            (0x6e600820, m(V_REV, 0, 1, 0, 2, 1, 4, 0)),
            (0x4ea06820, m(V_ADDLP, 0, 1, 0, 2, 2, 4, 0)),
            (0x6e612820, m(V_XTN, 0, 1, 0, narrow::SU << 1, 1, 1, 0)),
            // fcvtn v0.4h, v1.4s ; fcvtl2 v0.2d, v1.4s ; fcmle v0.2d, #0.0
            (0x0e216820, m(F_CVTN, 0, 1, 0, 0, 2, 0, 0)),
            (0x4e617820, m(F_CVTL, 0, 1, 0, 0, 2, 1, 0)),
            (0x6ee0d820, m(F_CMP0, 0, 1, 0, cmp0::LE, 3, 4, 0)),
            // frinti v0.4s ; fcvtzu v0.2s ; uaddlv s0, v1.8h ; fminnmv s0, v1.4s
            (0x6ea19820, m(F_RINT, 0, 1, 0, rmode::FPCR, 2, 4, 0)),
            (0x2ea1b820, m(F_TO_INT_V, 0, 1, 0, rmode::Z | 8, 2, 3, 0)),
            (0x6e703820, m(V_ADDLV, 0, 1, 0, 1, 1, 4, 0)),
            (0x6eb0c820, m(F_REDUCE, 0, 1, 0, fred::MINNM, 2, 4, 0)),
        ]);
        // add v0.1d (size 11, Q = 0), mul v0.2d, fadd v0.1d are reserved
        for w in [0x0ee28420, 0x4ee29c20, 0x0e62d420] {
            assert_eq!(decode_named(w, 0).0.op, UNDEFINED, "{w:08x}");
        }
    }

    #[test]
    fn dot_product() {
        check(&[
            // sdot v3.2s, v31.8b, v25.8b ; udot v16.4s, v16.16b, v13.16b
            (0x0e9997e3, m(V_DOT, 3, 31, 25, 0, 2, 3, 0)),
            (0x6e8d9610, m(V_DOT, 16, 16, 13, 1, 2, 4, 0)),
            // udot v13.2s, v11.8b, v15.4b[2] ; udot v21.4s, v17.16b, v5.4b[3]
            (0x2f8fe96d, m(V_DOT, 13, 11, 15, 1, 2, 3, BY_ELEM | 2)),
            (0x6fa5ea35, m(V_DOT, 21, 17, 5, 1, 2, 4, BY_ELEM | 3)),
        ]);
        // the same with size 01: reserved
        for w in [0x0e5997e3, 0x2f4fe96d] {
            assert_eq!(decode_named(w, 0).0.op, UNDEFINED, "{w:08x}");
        }
    }

    #[test]
    fn shifts_and_by_element() {
        check(&[
            // ushr v0.2d, #64 ; sli v0.4s, #31 ; sqrshrun2 v0.16b, v1.8h, #3 ; uxtl v0.4s, v1.4h
            (0x6f400420, m(V_SHR, 0, 1, 0, 1, 3, 4, 64)),
            (0x6f3f5420, m(V_SLI, 0, 1, 0, 0, 2, 4, 31)),
            (0x6f0d8c20, m(V_SHRN, 0, 1, 0, narrow::SU << 1 | 1, 0, 1, 3)),
            (0x2f10a420, m(V_SHLL, 0, 1, 0, 1, 1, 0, 0)),
            // scvtf v0.2d, #10 ; fcvtzs v0.4s, #32
            (0x4f76e420, m(INT_TO_F_V, 0, 1, 0, 0, 3, 4, 10)),
            (0x4f20fc20, m(F_TO_INT_V, 0, 1, 0, rmode::Z, 2, 4, 32)),
            // mla v0.8h, v1.8h, v15.h[7] ; fmla v0.4s, v1.4s, v31.s[3] ; fmul v0.2d, v17.d[1]
            (0x6f7f0820, m(V_MLA, 0, 1, 15, 0, 1, 4, BY_ELEM | 7)),
            (0x4fbf1820, m(F_MADD, 0, 1, 31, 0, 2, 4, BY_ELEM | 3)),
            (0x4fd19820, m(F_MUL, 0, 1, 17, 0, 3, 4, BY_ELEM | 1)),
            // smull2 v0.4s, v1.8h, v2.h[3] ; sqdmulh s0, s1, v31.s[1] ; fmulx d0, d1, v2.d[1]
            (0x4f72a020, m(V_MULL, 0, 1, 2, 0, 1, 1, BY_ELEM | 3)),
            (0x5fbfc020, m(V_SQDMULH, 0, 1, 31, 0, 2, 2, BY_ELEM | 1)),
            (0x7fc29820, m(F_MULX, 0, 1, 2, 0, 3, 3, BY_ELEM | 1)),
        ]);
    }

    #[test]
    fn scalar_forms() {
        check(&[
            // addp d0, v1.2d ; faddp s0, v1.2s ; fmaxp d0, v1.2d
            (0x5ef1b820, m(V_ADDV, 0, 1, 0, 0, 3, 4, 0)),
            (0x7e30d820, m(F_REDUCE, 0, 1, 0, fred::ADD, 2, 3, 0)),
            (0x7e70f820, m(F_REDUCE, 0, 1, 0, fred::MAX, 3, 4, 0)),
            // cmhi d0, d1, d2 ; sqadd b0, b1, b2 ; fabd s0, s1, s2 ; sqdmlal d0, s1, s2
            (0x7ee23420, m(V_CMHI, 0, 1, 2, 0, 3, 3, 0)),
            (0x5e220c20, m(V_QADD, 0, 1, 2, 0, 0, 0, 0)),
            (0x7ea2d420, m(F_ABD, 0, 1, 2, 0, 2, 2, 0)),
            (0x5ea29020, m(V_SQDMLAL, 0, 1, 2, 0, 2, PART_SCALAR, 0)),
            // abs d0, d1 ; sqxtn h0, s1 ; fcvtzs d0, d1 ; frecpx s0, s1 ; fcvtxn s0, d1
            (0x5ee0b820, m(V_ABS, 0, 1, 0, 0, 3, 3, 0)),
            (
                0x5e614820,
                m(V_XTN, 0, 1, 0, narrow::SS << 1, 1, PART_SCALAR, 0),
            ),
            (0x5ee1b820, m(F_TO_INT_V, 0, 1, 0, rmode::Z, 3, 3, 0)),
            (0x5ea1f820, m(F_RECPX, 0, 1, 0, 0, 2, 2, 0)),
            (0x7e616820, m(F_CVTN, 0, 1, 0, 1, 3, PART_SCALAR, 0)),
            // sshr d0, d1, #1 ; uqshl b0, b1, #7 ; sqshrn s0, d1, #32 ; ucvtf s0, s1, #32
            (0x5f7f0420, m(V_SHR, 0, 1, 0, 0, 3, 3, 1)),
            (0x7f0f7420, m(V_QSHL_IMM, 0, 1, 0, 1, 0, 0, 7)),
            (
                0x5f209420,
                m(V_SHRN, 0, 1, 0, narrow::SS << 1, 2, PART_SCALAR, 32),
            ),
            (0x7f20e420, m(INT_TO_F_V, 0, 1, 0, 1, 2, 2, 32)),
        ]);
    }

    #[test]
    fn modified_immediate_expansion() {
        assert_eq!(
            adv_simd_expand_imm(0, 0b1110, 0xab),
            Some(0xabab_abab_abab_abab)
        );
        assert_eq!(
            adv_simd_expand_imm(1, 0b1110, 0b1000_0001),
            Some(0xff00_0000_0000_00ff)
        );
        assert_eq!(
            adv_simd_expand_imm(0, 0b1100, 0x12),
            Some(0x0000_12ff_0000_12ff)
        );
        assert_eq!(
            adv_simd_expand_imm(0, 0b1101, 0x12),
            Some(0x0012_ffff_0012_ffff)
        );
        assert_eq!(
            adv_simd_expand_imm(0, 0b1111, 0x70),
            Some(0x3f80_0000_3f80_0000)
        );
        assert_eq!(
            adv_simd_expand_imm(1, 0b1111, 0x70),
            Some(0x3ff0_0000_0000_0000)
        );
    }

    /// Decodes the hex words of the file named by ARMADA_WORDS, one per line, and writes
    /// `word name` lines next to it (`.decoded`): for comparing the UNDEFINED space with qemu.
    #[test]
    #[ignore = "tool: needs ARMADA_WORDS"]
    fn classify_words() {
        let Ok(path) = std::env::var("ARMADA_WORDS") else {
            return;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let mut out = String::new();
        for w in text.split_whitespace() {
            let word = u32::from_str_radix(w, 16).unwrap();
            let (_, name) = decode_named(word, 0x40_0000);
            out.push_str(&format!("{w} {name}\n"));
        }
        std::fs::write(format!("{path}.decoded"), out).unwrap();
    }
}
