//! Data processing -- immediate (Arm ARM C4.1.2): PC-relative addressing, add/subtract,
//! logical, move wide, bitfield, extract.

use super::{decode_bit_masks, enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::MicroOp;

fn w_mask(sf: u32, v: u64) -> u64 {
    if sf == 1 {
        v
    } else {
        v & 0xffff_ffff
    }
}

fn add_sub_imm(f: &Fields) -> Option<MicroOp> {
    let sf = f.get('z');
    let imm = (f.get('i') as u64) << (12 * f.get('h'));
    let sub = f.get('o') == 1;
    if f.get('S') == 0 {
        let op = if sf == 1 { ADD_IMM_X } else { ADD_IMM_W };
        let imm = if sub { imm.wrapping_neg() } else { imm };
        Some(MicroOp::new(op).a(f.rsp('d')).b(f.rsp('n')).imm(imm))
    } else {
        let op = if sf == 1 { ADDS_IMM_X } else { ADDS_IMM_W };
        let imm = if sub { w_mask(sf, !imm) } else { imm };
        Some(
            MicroOp::new(op)
                .a(f.wz('d'))
                .b(f.rsp('n'))
                .e(sub as u8)
                .imm(imm),
        )
    }
}

fn logical_imm(f: &Fields) -> Option<MicroOp> {
    let sf = f.get('z');
    if sf == 0 && f.get('N') == 1 {
        return None;
    }
    let imm = decode_bit_masks(
        f.get('N'),
        f.get('s'),
        f.get('r'),
        if sf == 1 { 64 } else { 32 },
    )?;
    let x = sf == 1;
    let (op, rd) = match f.get('o') {
        0 => (if x { AND_IMM_X } else { AND_IMM_W }, f.rsp('d')),
        1 => {
            if f.get('n') == 31 {
                // MOV (bitmask immediate); Rd may be SP here.
                return Some(MicroOp::new(MOV_IMM).a(f.rsp('d')).imm(imm));
            }
            (if x { ORR_IMM_X } else { ORR_IMM_W }, f.rsp('d'))
        }
        2 => (if x { EOR_IMM_X } else { EOR_IMM_W }, f.rsp('d')),
        _ => (if x { ANDS_IMM_X } else { ANDS_IMM_W }, f.wz('d')),
    };
    Some(MicroOp::new(op).a(rd).b(f.rz('n')).imm(imm))
}

fn move_wide(f: &Fields) -> Option<MicroOp> {
    let sf = f.get('z');
    let hw = f.get('h');
    if sf == 0 && hw >= 2 {
        return None;
    }
    let imm = f.get('i') as u64;
    let shifted = imm << (16 * hw);
    match f.get('o') {
        0 => Some(MicroOp::new(MOV_IMM).a(f.wz('d')).imm(w_mask(sf, !shifted))),
        2 => Some(MicroOp::new(MOV_IMM).a(f.wz('d')).imm(shifted)),
        3 => {
            let op = if sf == 1 { MOVK_X } else { MOVK_W };
            Some(
                MicroOp::new(op)
                    .a(f.wz('d'))
                    .b(f.rz('d'))
                    .e((16 * hw) as u8)
                    .imm(imm),
            )
        }
        _ => None,
    }
}

fn bitfield(f: &Fields) -> Option<MicroOp> {
    let sf = f.get('z');
    if f.get('N') != sf || (sf == 0 && (f.get('r') >= 32 || f.get('s') >= 32)) {
        return None;
    }
    let x = sf == 1;
    let op = match f.get('o') {
        0 => {
            if x {
                SBFM_X
            } else {
                SBFM_W
            }
        }
        1 => {
            if x {
                BFM_X
            } else {
                BFM_W
            }
        }
        2 => {
            if x {
                UBFM_X
            } else {
                UBFM_W
            }
        }
        _ => return None,
    };
    Some(
        MicroOp::new(op)
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('d'))
            .e(f.get('r') as u8)
            .f(f.get('s') as u8),
    )
}

fn extract(f: &Fields) -> Option<MicroOp> {
    let sf = f.get('z');
    if f.get('N') != sf || (sf == 0 && f.get('s') >= 32) {
        return None;
    }
    let op = if sf == 1 { EXTR_X } else { EXTR_W };
    Some(
        MicroOp::new(op)
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m'))
            .e(f.get('s') as u8),
    )
}

pub(super) const TABLE: &[Encoding] = &[
    // --- PC-rel. addressing: the address is known at decode time.
    enc("ADR", "0ll10000hhhhhhhhhhhhhhhhhhhddddd", |f| {
        let off = ((f.sget('h') << 2) | f.get('l') as i64) as u64;
        Some(
            MicroOp::new(MOV_IMM)
                .a(f.wz('d'))
                .imm(f.pc.wrapping_add(off)),
        )
    }),
    enc("ADRP", "1ll10000hhhhhhhhhhhhhhhhhhhddddd", |f| {
        let off = (((f.sget('h') << 2) | f.get('l') as i64) << 12) as u64;
        Some(
            MicroOp::new(MOV_IMM)
                .a(f.wz('d'))
                .imm((f.pc & !0xfff).wrapping_add(off)),
        )
    }),
    // --- Add/subtract (immediate)
    enc(
        "ADD/ADDS/SUB/SUBS (immediate)",
        "zoS100010hiiiiiiiiiiiinnnnnddddd",
        add_sub_imm,
    ),
    // --- Logical (immediate)
    enc(
        "AND/ORR/EOR/ANDS (immediate)",
        "zoo100100Nrrrrrrssssssnnnnnddddd",
        logical_imm,
    ),
    // --- Move wide (immediate)
    enc(
        "MOVN/MOVZ/MOVK",
        "zoo100101hhiiiiiiiiiiiiiiiiddddd",
        move_wide,
    ),
    // --- Bitfield
    enc(
        "SBFM/BFM/UBFM",
        "zoo100110Nrrrrrrssssssnnnnnddddd",
        bitfield,
    ),
    // --- Extract
    enc("EXTR", "z00100111N0mmmmmssssssnnnnnddddd", extract),
];
