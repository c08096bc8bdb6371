//! Loads and stores (Arm ARM C4.1.4): single registers in every addressing mode, literal,
//! pairs, exclusives, load-acquire/store-release and the LSE atomics. The FP/SIMD register
//! forms of the same classes are here too (they share the addressing); the AdvSIMD structure
//! loads (LD1..LD4) are in `simd.rs`.

use super::{enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::{addr_mode, reg, MicroOp};

/// The micro-op of a single-register access, from size, V and opc, and the log2 of its size.
fn single(size: u32, v: u32, opc: u32) -> Option<(u16, u32, bool)> {
    // (op, log2 access size, is_load)
    Some(match (v, size, opc) {
        (0, 0, 0) => (STR_B, 0, false),
        (0, 1, 0) => (STR_H, 1, false),
        (0, 2, 0) => (STR_W, 2, false),
        (0, 3, 0) => (STR_X, 3, false),
        (0, 0, 1) => (LDR_B, 0, true),
        (0, 1, 1) => (LDR_H, 1, true),
        (0, 2, 1) => (LDR_W, 2, true),
        (0, 3, 1) => (LDR_X, 3, true),
        (0, 0, 2) => (LDRSB_X, 0, true),
        (0, 1, 2) => (LDRSH_X, 1, true),
        (0, 2, 2) => (LDRSW, 2, true),
        (0, 3, 2) => (PRFM, 3, true),
        (0, 0, 3) => (LDRSB_W, 0, true),
        (0, 1, 3) => (LDRSH_W, 1, true),
        (1, 0, 0) => (STR_V8, 0, false),
        (1, 0, 1) => (LDR_V8, 0, true),
        (1, 1, 0) => (STR_V16, 1, false),
        (1, 1, 1) => (LDR_V16, 1, true),
        (1, 2, 0) => (STR_V32, 2, false),
        (1, 2, 1) => (LDR_V32, 2, true),
        (1, 3, 0) => (STR_V64, 3, false),
        (1, 3, 1) => (LDR_V64, 3, true),
        (1, 0, 2) => (STR_V128, 4, false),
        (1, 0, 3) => (LDR_V128, 4, true),
        _ => return None,
    })
}

/// Builds a single-register load/store with the transfer register resolved.
fn single_op(f: &Fields, mode: u8, imm: u64, scaled: bool) -> Option<MicroOp> {
    let (op, log2, load) = single(f.get('s'), f.get('V'), f.get('o'))?;
    if op == PRFM {
        return Some(MicroOp::new(PRFM));
    }
    let rt = if f.get('V') == 1 {
        f.r('t')
    } else if load {
        f.wz('t')
    } else {
        f.rz('t')
    };
    let imm = if scaled { imm << log2 } else { imm };
    Some(MicroOp::new(op).a(rt).b(f.rsp('n')).f(mode).imm(imm))
}

fn reg_offset(f: &Fields) -> Option<MicroOp> {
    let option = f.get('x');
    if option & 2 == 0 {
        return None;
    }
    let (op, log2, load) = single(f.get('s'), f.get('V'), f.get('o'))?;
    if op == PRFM {
        return Some(MicroOp::new(PRFM));
    }
    let rt = if f.get('V') == 1 {
        f.r('t')
    } else if load {
        f.wz('t')
    } else {
        f.rz('t')
    };
    let amount = if f.get('S') == 1 { log2 } else { 0 };
    Some(
        MicroOp::new(op)
            .a(rt)
            .b(f.rsp('n'))
            .c(f.rz('m'))
            .e((option << 3 | amount) as u8)
            .f(addr_mode::REG),
    )
}

fn literal(f: &Fields) -> Option<MicroOp> {
    let addr = f.pc.wrapping_add((f.sget('i') * 4) as u64);
    let (op, rt) = match (f.get('V'), f.get('o')) {
        (0, 0) => (LDR_W, f.wz('t')),
        (0, 1) => (LDR_X, f.wz('t')),
        (0, 2) => (LDRSW, f.wz('t')),
        (0, _) => return Some(MicroOp::new(PRFM)),
        (_, 0) => (LDR_V32, f.r('t')),
        (_, 1) => (LDR_V64, f.r('t')),
        (_, 2) => (LDR_V128, f.r('t')),
        _ => return None,
    };
    Some(
        MicroOp::new(op)
            .a(rt)
            .b(reg::ZR)
            .f(addr_mode::OFFSET)
            .imm(addr),
    )
}

fn pair(f: &Fields) -> Option<MicroOp> {
    let mode = match f.get('m') {
        0 | 2 => addr_mode::OFFSET,
        1 => addr_mode::POST,
        _ => addr_mode::PRE,
    };
    let load = f.get('L') == 1;
    let (op, log2) = match (f.get('V'), f.get('o'), load) {
        (0, 0, false) => (STP_W, 2),
        (0, 0, true) => (LDP_W, 2),
        (0, 1, true) if f.get('m') != 0 => (LDPSW, 2),
        (0, 2, false) => (STP_X, 3),
        (0, 2, true) => (LDP_X, 3),
        (1, 0, false) => (STP_V32, 2),
        (1, 0, true) => (LDP_V32, 2),
        (1, 1, false) => (STP_V64, 3),
        (1, 1, true) => (LDP_V64, 3),
        (1, 2, false) => (STP_V128, 4),
        (1, 2, true) => (LDP_V128, 4),
        _ => return None,
    };
    let (rt, rt2) = if f.get('V') == 1 {
        (f.r('t'), f.r('u'))
    } else if load {
        (f.wz('t'), f.wz('u'))
    } else {
        (f.rz('t'), f.rz('u'))
    };
    let imm = (f.sget('i') << log2) as u64;
    Some(MicroOp::new(op).a(rt).d(rt2).b(f.rsp('n')).f(mode).imm(imm))
}

/// Plain load or store of `size` (log2) at [Xn] (load-acquire / store-release forms).
fn ordered(f: &Fields, load: bool) -> Option<MicroOp> {
    let op = match (f.get('z'), load) {
        (0, true) => LDR_B,
        (1, true) => LDR_H,
        (2, true) => LDR_W,
        (_, true) => LDR_X,
        (0, false) => STR_B,
        (1, false) => STR_H,
        (2, false) => STR_W,
        (_, false) => STR_X,
    };
    let rt = if load { f.wz('t') } else { f.rz('t') };
    Some(MicroOp::new(op).a(rt).b(f.rsp('n')).f(addr_mode::OFFSET))
}

fn exclusive(f: &Fields, load: bool, pair: bool) -> Option<MicroOp> {
    // Single registers carry the size in a 2-bit field; pairs in one bit (0: W, 1: X).
    let size = if pair { 2 + f.get('z') } else { f.get('z') };
    let u = MicroOp::new(match (load, pair) {
        (true, false) => LDXR,
        (false, false) => STXR,
        (true, true) => LDXP,
        (false, true) => STXP,
    })
    .b(f.rsp('n'))
    .e(size as u8);
    Some(if load {
        u.a(f.wz('t')).d(f.wz('u'))
    } else {
        u.a(f.rz('t')).d(f.rz('u')).c(f.wz('s'))
    })
}

fn cas(f: &Fields) -> Option<MicroOp> {
    Some(
        MicroOp::new(CAS)
            .a(f.rz('t'))
            .b(f.rsp('n'))
            .c(f.rz('s'))
            .d(f.wz('s'))
            .e(f.get('z') as u8),
    )
}

fn casp(f: &Fields) -> Option<MicroOp> {
    let (s, t) = (f.get('s'), f.get('t'));
    if s & 1 == 1 || t & 1 == 1 {
        return None;
    }
    Some(
        MicroOp::new(CASP)
            .a(t as u8)
            .b(f.rsp('n'))
            .c(s as u8)
            .e(2 + f.get('z') as u8),
    )
}

fn atomic(f: &Fields) -> Option<MicroOp> {
    let size = f.get('z') as u8;
    let op = match (f.get('x'), f.get('o')) {
        (0, o) => o as u8,
        (1, 0) => crate::ops::atomic_op::SWP,
        (1, 4) => {
            // LDAPR: a load with acquire-RCpc ordering; plain load here.
            let op = [LDR_B, LDR_H, LDR_W, LDR_X][size as usize];
            return Some(
                MicroOp::new(op)
                    .a(f.wz('t'))
                    .b(f.rsp('n'))
                    .f(addr_mode::OFFSET),
            );
        }
        _ => return None,
    };
    Some(
        MicroOp::new(ATOMIC_RMW)
            .a(f.wz('t'))
            .b(f.rsp('n'))
            .c(f.rz('s'))
            .e(size)
            .f(op),
    )
}

pub(super) const TABLE: &[Encoding] = &[
    // --- Load/store exclusive, ordered, compare and swap (size 001000 o2 L o1 Rs o0 Rt2 Rn Rt)
    enc("STXR/STLXR", "zz0010000L0sssss-uuuuunnnnnttttt", |f| {
        if f.get('L') == 1 {
            exclusive(f, true, false)
        } else {
            exclusive(f, false, false)
        }
    }),
    enc(
        "CASP/CASPA/CASPL/CASPAL",
        "0z0010000L1sssss-11111nnnnnttttt",
        casp,
    ),
    enc(
        "STXP/STLXP/LDXP/LDAXP",
        "1z0010000L1sssss-uuuuunnnnnttttt",
        |f| {
            if f.get('L') == 1 {
                exclusive(f, true, true)
            } else {
                exclusive(f, false, true)
            }
        },
    ),
    enc(
        "STLLR/STLR/LDLAR/LDAR",
        "zz0010001L0-----------nnnnnttttt",
        |f| ordered(f, f.get('L') == 1),
    ),
    enc(
        "CAS/CASA/CASL/CASAL",
        "zz0010001L1sssss-11111nnnnnttttt",
        cas,
    ),
    // --- Load register (literal)
    enc(
        "LDR/LDRSW/PRFM (literal)",
        "oo011V00iiiiiiiiiiiiiiiiiiittttt",
        literal,
    ),
    // --- Load/store pair (no-allocate, post-index, offset, pre-index)
    enc(
        "STNP/LDNP/STP/LDP/LDPSW",
        "oo101V0mmLiiiiiiiuuuuunnnnnttttt",
        pair,
    ),
    // --- Atomic memory operations (LSE)
    enc(
        "LDADD/LDCLR/LDEOR/LDSET/LDSMAX/LDSMIN/LDUMAX/LDUMIN/SWP/LDAPR",
        "zz111000AR1sssssxooo00nnnnnttttt",
        atomic,
    ),
    // --- Load/store register (unscaled immediate, post-index, unprivileged, pre-index)
    enc(
        "STUR/LDUR (unscaled)",
        "ss111V00oo0iiiiiiiii00nnnnnttttt",
        |f| single_op(f, addr_mode::OFFSET, f.sget('i') as u64, false),
    ),
    enc(
        "STR/LDR (immediate, post-index)",
        "ss111V00oo0iiiiiiiii01nnnnnttttt",
        |f| single_op(f, addr_mode::POST, f.sget('i') as u64, false),
    ),
    enc(
        "STTR/LDTR (unprivileged)",
        "ss111V00oo0iiiiiiiii10nnnnnttttt",
        |f| {
            (f.get('V') == 0)
                .then(|| single_op(f, addr_mode::OFFSET, f.sget('i') as u64, false))
                .flatten()
        },
    ),
    enc(
        "STR/LDR (immediate, pre-index)",
        "ss111V00oo0iiiiiiiii11nnnnnttttt",
        |f| single_op(f, addr_mode::PRE, f.sget('i') as u64, false),
    ),
    // --- Load/store register (register offset)
    enc(
        "STR/LDR (register)",
        "ss111V00oo1mmmmmxxxS10nnnnnttttt",
        reg_offset,
    ),
    // --- Load/store register (unsigned immediate)
    enc(
        "STR/LDR (immediate, unsigned offset)",
        "ss111V01ooiiiiiiiiiiiinnnnnttttt",
        |f| single_op(f, addr_mode::OFFSET, f.get('i') as u64, true),
    ),
];
