//! Data-processing (register): the one-, two- and three-source classes of the Arm ARM
//! (C4.1.95-97): multiply-add, long multiplies and high halves, divides, shifts by a
//! register, bit and byte reversal, leading zeros and signs, CRC32.

use crate::expr::*;
use crate::Def;
use armada_isa::ops::*;

/// Wn, Wm, Wa: the 32-bit views of Rn, Rm, Ra.
fn wn() -> V<W> {
    rn()
}
fn wm() -> V<W> {
    rm()
}
fn wa() -> V<W> {
    ra()
}
/// Xn, Xm, Xa.
fn xn() -> V<X> {
    rn()
}
fn xm() -> V<X> {
    rm()
}
fn xa() -> V<X> {
    ra()
}

pub(crate) fn definitions() -> Vec<Def> {
    vec![
        // ----- three sources
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
        // ----- two sources
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
        // ----- one source
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
