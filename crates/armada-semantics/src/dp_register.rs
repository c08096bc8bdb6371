//! Data-processing (register), the Arm ARM's C4.1.95-97 classes: logical and add/subtract
//! with a shifted or extended register, with carry, conditional compare and select; the one-,
//! two- and three-source classes (multiply-add, long multiplies and high halves, divides,
//! shifts by a register, bit and byte reversal, leading zeros and signs, CRC32).

use crate::def::Def;
use crate::expr::*;
use armada_isa::ops::*;

pub(crate) fn definitions() -> Vec<Def> {
    [
        logical_shifted(),
        add_sub_shifted(),
        add_sub_extended(),
        with_carry(),
        conditional_select(),
        conditional_compare(),
        three_sources(),
        two_sources(),
        one_source(),
    ]
    .concat()
}

/// Logical (shifted register).
fn logical_shifted() -> Vec<Def> {
    vec![
        Def::new(AND_SR_W, "AND: Rd = Rn AND shift(Rm)", wn() & shifted(wm())),
        Def::new(AND_SR_X, "AND: Rd = Rn AND shift(Rm)", xn() & shifted(xm())),
        Def::new(
            BIC_SR_W,
            "BIC: Rd = Rn AND NOT shift(Rm)",
            wn() & !shifted(wm()),
        ),
        Def::new(
            BIC_SR_X,
            "BIC: Rd = Rn AND NOT shift(Rm)",
            xn() & !shifted(xm()),
        ),
        Def::new(ORR_SR_W, "ORR: Rd = Rn OR shift(Rm)", wn() | shifted(wm())),
        Def::new(ORR_SR_X, "ORR: Rd = Rn OR shift(Rm)", xn() | shifted(xm())),
        Def::new(
            ORN_SR_W,
            "ORN: Rd = Rn OR NOT shift(Rm)",
            wn() | !shifted(wm()),
        ),
        Def::new(
            ORN_SR_X,
            "ORN: Rd = Rn OR NOT shift(Rm)",
            xn() | !shifted(xm()),
        ),
        Def::new(EOR_SR_W, "EOR: Rd = Rn EOR shift(Rm)", wn() ^ shifted(wm())),
        Def::new(EOR_SR_X, "EOR: Rd = Rn EOR shift(Rm)", xn() ^ shifted(xm())),
        Def::new(
            EON_SR_W,
            "EON: Rd = Rn EOR NOT shift(Rm)",
            wn() ^ !shifted(wm()),
        ),
        Def::new(
            EON_SR_X,
            "EON: Rd = Rn EOR NOT shift(Rm)",
            xn() ^ !shifted(xm()),
        ),
        Def::logic_flags(
            ANDS_SR_W,
            "ANDS: Rd = Rn AND shift(Rm), NZ of it",
            wn() & shifted(wm()),
        ),
        Def::logic_flags(
            ANDS_SR_X,
            "ANDS: Rd = Rn AND shift(Rm), NZ of it",
            xn() & shifted(xm()),
        ),
        Def::logic_flags(
            BICS_SR_W,
            "BICS: Rd = Rn AND NOT shift(Rm), NZ of it",
            wn() & !shifted(wm()),
        ),
        Def::logic_flags(
            BICS_SR_X,
            "BICS: Rd = Rn AND NOT shift(Rm), NZ of it",
            xn() & !shifted(xm()),
        ),
        Def::new(MOV_REG, "MOV (register): Xd = Xn", xn()),
        Def::new(MOV_REG_W, "MOV (register): Wd = Wn", wn()),
    ]
}

/// Add/subtract (shifted register); SUBS adds NOT op2 and 1.
fn add_sub_shifted() -> Vec<Def> {
    vec![
        Def::new(ADD_SR_W, "ADD: Rd = Rn + shift(Rm)", wn() + shifted(wm())),
        Def::new(ADD_SR_X, "ADD: Rd = Rn + shift(Rm)", xn() + shifted(xm())),
        Def::new(SUB_SR_W, "SUB: Rd = Rn - shift(Rm)", wn() - shifted(wm())),
        Def::new(SUB_SR_X, "SUB: Rd = Rn - shift(Rm)", xn() - shifted(xm())),
        Def::add_flags(
            ADDS_SR_W,
            "ADDS: Rd = Rn + shift(Rm), NZCV",
            wn(),
            shifted(wm()),
            lit(0),
        ),
        Def::add_flags(
            ADDS_SR_X,
            "ADDS: Rd = Rn + shift(Rm), NZCV",
            xn(),
            shifted(xm()),
            lit(0),
        ),
        Def::add_flags(
            SUBS_SR_W,
            "SUBS: Rd = Rn - shift(Rm), NZCV",
            wn(),
            !shifted(wm()),
            lit(1),
        ),
        Def::add_flags(
            SUBS_SR_X,
            "SUBS: Rd = Rn - shift(Rm), NZCV",
            xn(),
            !shifted(xm()),
            lit(1),
        ),
    ]
}

/// Add/subtract (extended register).
fn add_sub_extended() -> Vec<Def> {
    vec![
        Def::new(
            ADD_EXT_W,
            "ADD: Rd = Rn + extend(Rm)",
            wn() + extended(xm()).lo(),
        ),
        Def::new(
            ADD_EXT_X,
            "ADD: Rd = Rn + extend(Rm)",
            xn() + extended(xm()),
        ),
        Def::new(
            SUB_EXT_W,
            "SUB: Rd = Rn - extend(Rm)",
            wn() - extended(xm()).lo(),
        ),
        Def::new(
            SUB_EXT_X,
            "SUB: Rd = Rn - extend(Rm)",
            xn() - extended(xm()),
        ),
        Def::add_flags(
            ADDS_EXT_W,
            "ADDS: Rd = Rn + extend(Rm), NZCV",
            wn(),
            extended(xm()).lo(),
            lit(0),
        ),
        Def::add_flags(
            ADDS_EXT_X,
            "ADDS: Rd = Rn + extend(Rm), NZCV",
            xn(),
            extended(xm()),
            lit(0),
        ),
        Def::add_flags(
            SUBS_EXT_W,
            "SUBS: Rd = Rn - extend(Rm), NZCV",
            wn(),
            !extended(xm()).lo(),
            lit(1),
        ),
        Def::add_flags(
            SUBS_EXT_X,
            "SUBS: Rd = Rn - extend(Rm), NZCV",
            xn(),
            !extended(xm()),
            lit(1),
        ),
    ]
}

/// Add/subtract with carry.
fn with_carry() -> Vec<Def> {
    vec![
        Def::new(ADC_W, "ADC: Rd = Rn + Rm + C", wn() + wm() + carry()),
        Def::new(ADC_X, "ADC: Rd = Rn + Rm + C", xn() + xm() + carry()),
        Def::new(SBC_W, "SBC: Rd = Rn + NOT Rm + C", wn() + !wm() + carry()),
        Def::new(SBC_X, "SBC: Rd = Rn + NOT Rm + C", xn() + !xm() + carry()),
        Def::add_flags(ADCS_W, "ADCS: Rd = Rn + Rm + C, NZCV", wn(), wm(), carry()),
        Def::add_flags(ADCS_X, "ADCS: Rd = Rn + Rm + C, NZCV", xn(), xm(), carry()),
        Def::add_flags(
            SBCS_W,
            "SBCS: Rd = Rn + NOT Rm + C, NZCV",
            wn(),
            !wm(),
            carry(),
        ),
        Def::add_flags(
            SBCS_X,
            "SBCS: Rd = Rn + NOT Rm + C, NZCV",
            xn(),
            !xm(),
            carry(),
        ),
    ]
}

/// Conditional select: Rd = cond ? Rn : f(Rm).
fn conditional_select() -> Vec<Def> {
    vec![
        Def::new(CSEL_W, "CSEL: Rd = cond ? Rn : Rm", if_cond(wn(), wm())),
        Def::new(CSEL_X, "CSEL: Rd = cond ? Rn : Rm", if_cond(xn(), xm())),
        Def::new(
            CSINC_W,
            "CSINC: Rd = cond ? Rn : Rm + 1",
            if_cond(wn(), wm() + 1),
        ),
        Def::new(
            CSINC_X,
            "CSINC: Rd = cond ? Rn : Rm + 1",
            if_cond(xn(), xm() + 1),
        ),
        Def::new(
            CSINV_W,
            "CSINV: Rd = cond ? Rn : NOT Rm",
            if_cond(wn(), !wm()),
        ),
        Def::new(
            CSINV_X,
            "CSINV: Rd = cond ? Rn : NOT Rm",
            if_cond(xn(), !xm()),
        ),
        Def::new(CSNEG_W, "CSNEG: Rd = cond ? Rn : -Rm", if_cond(wn(), -wm())),
        Def::new(CSNEG_X, "CSNEG: Rd = cond ? Rn : -Rm", if_cond(xn(), -xm())),
    ]
}

/// Conditional compare: NZCV = cond ? flags of the compare : nzcv (field f).
fn conditional_compare() -> Vec<Def> {
    vec![
        Def::cond_flags(
            CCMP_REG_W,
            "CCMP: NZCV = cond ? flags(Rn - Rm) : #nzcv",
            wn(),
            !wm(),
            lit(1),
        ),
        Def::cond_flags(
            CCMP_REG_X,
            "CCMP: NZCV = cond ? flags(Rn - Rm) : #nzcv",
            xn(),
            !xm(),
            lit(1),
        ),
        Def::cond_flags(
            CCMN_REG_W,
            "CCMN: NZCV = cond ? flags(Rn + Rm) : #nzcv",
            wn(),
            wm(),
            lit(0),
        ),
        Def::cond_flags(
            CCMN_REG_X,
            "CCMN: NZCV = cond ? flags(Rn + Rm) : #nzcv",
            xn(),
            xm(),
            lit(0),
        ),
        Def::cond_flags(
            CCMP_IMM_W,
            "CCMP: NZCV = cond ? flags(Rn - #imm) : #nzcv",
            wn(),
            !imm(),
            lit(1),
        ),
        Def::cond_flags(
            CCMP_IMM_X,
            "CCMP: NZCV = cond ? flags(Rn - #imm) : #nzcv",
            xn(),
            !imm(),
            lit(1),
        ),
        Def::cond_flags(
            CCMN_IMM_W,
            "CCMN: NZCV = cond ? flags(Rn + #imm) : #nzcv",
            wn(),
            imm(),
            lit(0),
        ),
        Def::cond_flags(
            CCMN_IMM_X,
            "CCMN: NZCV = cond ? flags(Rn + #imm) : #nzcv",
            xn(),
            imm(),
            lit(0),
        ),
    ]
}

/// Three sources.
fn three_sources() -> Vec<Def> {
    vec![
        Def::new(MADD_W, "MADD: Rd = Ra + Rn * Rm", wa() + wn() * wm()),
        Def::new(MADD_X, "MADD: Rd = Ra + Rn * Rm", xa() + xn() * xm()),
        Def::new(MSUB_W, "MSUB: Rd = Ra - Rn * Rm", wa() - wn() * wm()),
        Def::new(MSUB_X, "MSUB: Rd = Ra - Rn * Rm", xa() - xn() * xm()),
        Def::new(
            SMADDL,
            "SMADDL: Xd = Xa + SInt(Wn) * SInt(Wm)",
            xa() + wn().sext() * wm().sext(),
        ),
        Def::new(
            SMSUBL,
            "SMSUBL: Xd = Xa - SInt(Wn) * SInt(Wm)",
            xa() - wn().sext() * wm().sext(),
        ),
        Def::new(
            UMADDL,
            "UMADDL: Xd = Xa + UInt(Wn) * UInt(Wm)",
            xa() + wn().zext() * wm().zext(),
        ),
        Def::new(
            UMSUBL,
            "UMSUBL: Xd = Xa - UInt(Wn) * UInt(Wm)",
            xa() - wn().zext() * wm().zext(),
        ),
        Def::new(
            SMULH,
            "SMULH: Xd = (SInt(Xn) * SInt(Xm))<127:64>",
            smulh(xn(), xm()),
        ),
        Def::new(
            UMULH,
            "UMULH: Xd = (UInt(Xn) * UInt(Xm))<127:64>",
            umulh(xn(), xm()),
        ),
    ]
}

/// Two sources.
fn two_sources() -> Vec<Def> {
    vec![
        Def::new(
            SDIV_W,
            "SDIV: Rd = Rn / Rm toward zero (0 if Rm is 0)",
            sdiv(wn(), wm()),
        ),
        Def::new(
            SDIV_X,
            "SDIV: Rd = Rn / Rm toward zero (0 if Rm is 0)",
            sdiv(xn(), xm()),
        ),
        Def::new(
            UDIV_W,
            "UDIV: Rd = Rn / Rm (0 if Rm is 0)",
            udiv(wn(), wm()),
        ),
        Def::new(
            UDIV_X,
            "UDIV: Rd = Rn / Rm (0 if Rm is 0)",
            udiv(xn(), xm()),
        ),
        Def::new(LSLV_W, "LSLV: Rd = Rn << (Rm mod 32)", wn() << wm()),
        Def::new(LSLV_X, "LSLV: Rd = Rn << (Rm mod 64)", xn() << xm()),
        Def::new(
            LSRV_W,
            "LSRV: Rd = Rn >> (Rm mod 32), logical",
            wn() >> wm(),
        ),
        Def::new(
            LSRV_X,
            "LSRV: Rd = Rn >> (Rm mod 64), logical",
            xn() >> xm(),
        ),
        Def::new(
            ASRV_W,
            "ASRV: Rd = Rn >> (Rm mod 32), arithmetic",
            asr(wn(), wm()),
        ),
        Def::new(
            ASRV_X,
            "ASRV: Rd = Rn >> (Rm mod 64), arithmetic",
            asr(xn(), xm()),
        ),
        Def::new(
            RORV_W,
            "RORV: Rd = Rn rotated right by Rm mod 32",
            ror(wn(), wm()),
        ),
        Def::new(
            RORV_X,
            "RORV: Rd = Rn rotated right by Rm mod 64",
            ror(xn(), xm()),
        ),
        Def::new(
            CRC32,
            "CRC32*, CRC32C*: Wd = CRC of Rm's low 2^e bytes into Wn",
            crc32(wn(), xm()),
        ),
    ]
}

/// One source.
fn one_source() -> Vec<Def> {
    vec![
        Def::new(CLZ_W, "CLZ: Rd = leading zero bits of Rn", clz(wn())),
        Def::new(CLZ_X, "CLZ: Rd = leading zero bits of Rn", clz(xn())),
        // leading bits equal to the sign, the sign not counted
        Def::new(
            CLS_W,
            "CLS: Rd = CountLeadingSignBits(Rn)",
            clz(wn() ^ asr(wn(), 31)) - 1,
        ),
        Def::new(
            CLS_X,
            "CLS: Rd = CountLeadingSignBits(Rn)",
            clz(xn() ^ asr(xn(), 63)) - 1,
        ),
        Def::new(RBIT_W, "RBIT: Rd = Rn's bits reversed", rbit(wn())),
        Def::new(RBIT_X, "RBIT: Rd = Rn's bits reversed", rbit(xn())),
        Def::new(REV_W, "REV: Rd = Rn's bytes reversed", rev(wn())),
        Def::new(REV_X, "REV: Rd = Rn's bytes reversed", rev(xn())),
        Def::new(
            REV16_W,
            "REV16: the bytes of each halfword of Rn swapped",
            ((wn() & 0x00ff_00ff) << 8) | ((wn() >> 8) & 0x00ff_00ff),
        ),
        Def::new(
            REV16_X,
            "REV16: the bytes of each halfword of Rn swapped",
            ((xn() & 0x00ff_00ff_00ff_00ffu64) << 8) | ((xn() >> 8) & 0x00ff_00ff_00ff_00ffu64),
        ),
        Def::new(
            REV32_X,
            "REV32: the bytes of each word of Xn reversed",
            rev(xn().lo()).zext() | (rev((xn() >> 32).lo()).zext() << 32),
        ),
    ]
}
