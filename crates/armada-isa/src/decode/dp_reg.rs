//! Data processing -- register (Arm ARM C4.1.5): logical and add/subtract (shifted and
//! extended register), with carry, conditional compare and select, 1-, 2- and 3-source.

use super::{enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::MicroOp;

/// Picks the W or X form of an operation.
fn wx(f: &Fields, w: u16, x: u16) -> u16 {
    if f.get('z') == 1 {
        x
    } else {
        w
    }
}

fn logical_shifted(f: &Fields) -> Option<MicroOp> {
    if f.get('z') == 0 && f.get('i') >= 32 {
        return None;
    }
    let (w, x) = match (f.get('o'), f.get('N')) {
        (0, 0) => (AND_SR_W, AND_SR_X),
        (0, _) => (BIC_SR_W, BIC_SR_X),
        (1, 0) => (ORR_SR_W, ORR_SR_X),
        (1, _) => (ORN_SR_W, ORN_SR_X),
        (2, 0) => (EOR_SR_W, EOR_SR_X),
        (2, _) => (EON_SR_W, EON_SR_X),
        (_, 0) => (ANDS_SR_W, ANDS_SR_X),
        (_, _) => (BICS_SR_W, BICS_SR_X),
    };
    if w == ORR_SR_W && f.get('n') == 31 && f.get('i') == 0 {
        // MOV (register)
        let op = wx(f, MOV_REG_W, MOV_REG);
        return Some(MicroOp::new(op).a(f.wz('d')).b(f.rz('m')));
    }
    Some(
        MicroOp::new(wx(f, w, x))
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m'))
            .e(f.get('h') as u8)
            .f(f.get('i') as u8),
    )
}

fn add_sub_shifted(f: &Fields) -> Option<MicroOp> {
    if f.get('h') == 3 || (f.get('z') == 0 && f.get('i') >= 32) {
        return None;
    }
    let (w, x) = match (f.get('o'), f.get('S')) {
        (0, 0) => (ADD_SR_W, ADD_SR_X),
        (0, _) => (ADDS_SR_W, ADDS_SR_X),
        (_, 0) => (SUB_SR_W, SUB_SR_X),
        (_, _) => (SUBS_SR_W, SUBS_SR_X),
    };
    Some(
        MicroOp::new(wx(f, w, x))
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m'))
            .e(f.get('h') as u8)
            .f(f.get('i') as u8),
    )
}

fn add_sub_extended(f: &Fields) -> Option<MicroOp> {
    if f.get('i') > 4 {
        return None;
    }
    let s = f.get('S') == 1;
    let (w, x) = match (f.get('o'), s) {
        (0, false) => (ADD_EXT_W, ADD_EXT_X),
        (0, true) => (ADDS_EXT_W, ADDS_EXT_X),
        (_, false) => (SUB_EXT_W, SUB_EXT_X),
        (_, true) => (SUBS_EXT_W, SUBS_EXT_X),
    };
    let rd = if s { f.wz('d') } else { f.rsp('d') };
    Some(
        MicroOp::new(wx(f, w, x))
            .a(rd)
            .b(f.rsp('n'))
            .c(f.rz('m'))
            .e(f.get('x') as u8)
            .f(f.get('i') as u8),
    )
}

fn with_carry(f: &Fields) -> Option<MicroOp> {
    let (w, x) = match (f.get('o'), f.get('S')) {
        (0, 0) => (ADC_W, ADC_X),
        (0, _) => (ADCS_W, ADCS_X),
        (_, 0) => (SBC_W, SBC_X),
        (_, _) => (SBCS_W, SBCS_X),
    };
    Some(
        MicroOp::new(wx(f, w, x))
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m')),
    )
}

fn cond_compare(f: &Fields, imm_form: bool) -> Option<MicroOp> {
    let cmp = f.get('o') == 1;
    let op = match (cmp, imm_form) {
        (true, false) => wx(f, CCMP_REG_W, CCMP_REG_X),
        (false, false) => wx(f, CCMN_REG_W, CCMN_REG_X),
        (true, true) => wx(f, CCMP_IMM_W, CCMP_IMM_X),
        (false, true) => wx(f, CCMN_IMM_W, CCMN_IMM_X),
    };
    let u = MicroOp::new(op)
        .b(f.rz('n'))
        .e(f.get('c') as u8)
        .f(f.get('f') as u8);
    Some(if imm_form {
        u.imm(f.get('m') as u64)
    } else {
        u.c(f.rz('m'))
    })
}

fn cond_select(f: &Fields) -> Option<MicroOp> {
    let (w, x) = match (f.get('p'), f.get('q')) {
        (0, 0) => (CSEL_W, CSEL_X),
        (0, _) => (CSINC_W, CSINC_X),
        (_, 0) => (CSINV_W, CSINV_X),
        (_, _) => (CSNEG_W, CSNEG_X),
    };
    Some(
        MicroOp::new(wx(f, w, x))
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m'))
            .e(f.get('c') as u8),
    )
}

fn dp_2src(f: &Fields) -> Option<MicroOp> {
    let opcode = f.get('o');
    if opcode >> 3 == 0b010 {
        // CRC32 / CRC32C: the X form (sz = 11) needs sf = 1 and the others sf = 0.
        let sz = opcode & 3;
        if (sz == 3) != (f.get('z') == 1) {
            return None;
        }
        return Some(
            MicroOp::new(CRC32)
                .a(f.wz('d'))
                .b(f.rz('n'))
                .c(f.rz('m'))
                .e(sz as u8)
                .f(((opcode >> 2) & 1) as u8),
        );
    }
    let (w, x) = match opcode {
        0b000010 => (UDIV_W, UDIV_X),
        0b000011 => (SDIV_W, SDIV_X),
        0b001000 => (LSLV_W, LSLV_X),
        0b001001 => (LSRV_W, LSRV_X),
        0b001010 => (ASRV_W, ASRV_X),
        0b001011 => (RORV_W, RORV_X),
        _ => return None,
    };
    Some(
        MicroOp::new(wx(f, w, x))
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m')),
    )
}

fn dp_1src(f: &Fields) -> Option<MicroOp> {
    let x = f.get('z') == 1;
    let op = match (f.get('o'), x) {
        (0, false) => RBIT_W,
        (0, true) => RBIT_X,
        (1, false) => REV16_W,
        (1, true) => REV16_X,
        (2, false) => REV_W,
        (2, true) => REV32_X,
        (3, true) => REV_X,
        (4, false) => CLZ_W,
        (4, true) => CLZ_X,
        (5, false) => CLS_W,
        (5, true) => CLS_X,
        _ => return None,
    };
    Some(MicroOp::new(op).a(f.wz('d')).b(f.rz('n')))
}

fn dp_3src(f: &Fields) -> Option<MicroOp> {
    let x = f.get('z') == 1;
    let op = match (f.get('o'), f.get('q'), x) {
        (0, 0, _) => wx(f, MADD_W, MADD_X),
        (0, 1, _) => wx(f, MSUB_W, MSUB_X),
        (1, 0, true) => SMADDL,
        (1, 1, true) => SMSUBL,
        (2, 0, true) => SMULH,
        (5, 0, true) => UMADDL,
        (5, 1, true) => UMSUBL,
        (6, 0, true) => UMULH,
        _ => return None,
    };
    Some(
        MicroOp::new(op)
            .a(f.wz('d'))
            .b(f.rz('n'))
            .c(f.rz('m'))
            .d(f.rz('a')),
    )
}

pub(super) const TABLE: &[Encoding] = &[
    // --- Logical (shifted register)
    enc(
        "AND/BIC/ORR/ORN/EOR/EON/ANDS/BICS (shifted register)",
        "zoo01010hhNmmmmmiiiiiinnnnnddddd",
        logical_shifted,
    ),
    // --- Add/subtract (shifted register)
    enc(
        "ADD/ADDS/SUB/SUBS (shifted register)",
        "zoS01011hh0mmmmmiiiiiinnnnnddddd",
        add_sub_shifted,
    ),
    // --- Add/subtract (extended register)
    enc(
        "ADD/ADDS/SUB/SUBS (extended register)",
        "zoS01011001mmmmmxxxiiinnnnnddddd",
        add_sub_extended,
    ),
    // --- Add/subtract (with carry)
    enc(
        "ADC/ADCS/SBC/SBCS",
        "zoS11010000mmmmm000000nnnnnddddd",
        with_carry,
    ),
    // --- Conditional compare (register / immediate)
    enc(
        "CCMN/CCMP (register)",
        "zo111010010mmmmmcccc00nnnnn0ffff",
        |f| cond_compare(f, false),
    ),
    enc(
        "CCMN/CCMP (immediate)",
        "zo111010010mmmmmcccc10nnnnn0ffff",
        |f| cond_compare(f, true),
    ),
    // --- Conditional select
    enc(
        "CSEL/CSINC/CSINV/CSNEG",
        "zp011010100mmmmmcccc0qnnnnnddddd",
        cond_select,
    ),
    // --- Data-processing (2 source)
    enc(
        "UDIV/SDIV/LSLV/LSRV/ASRV/RORV/CRC32/CRC32C",
        "z0011010110mmmmmoooooonnnnnddddd",
        dp_2src,
    ),
    // --- Data-processing (1 source)
    enc(
        "RBIT/REV16/REV32/REV/CLZ/CLS",
        "z101101011000000oooooonnnnnddddd",
        dp_1src,
    ),
    // --- Data-processing (3 source)
    enc(
        "MADD/MSUB/SMADDL/SMSUBL/SMULH/UMADDL/UMSUBL/UMULH",
        "z0011011ooommmmmqaaaaannnnnddddd",
        dp_3src,
    ),
];
