//! Branches, exception generation and system instructions
//! (Arm ARM C4.1.3 "Branches, Exception Generating and System instructions").

use super::{enc, Encoding, Fields};
use crate::ops::*;
use crate::uop::{reg, sysreg, MicroOp};

fn target(f: &Fields, field: char) -> u64 {
    f.pc.wrapping_add((f.sget(field) * 4) as u64)
}

pub(super) const TABLE: &[Encoding] = &[
    // --- Unconditional branch (immediate)
    enc("B", "000101iiiiiiiiiiiiiiiiiiiiiiiiii", |f| {
        Some(MicroOp::new(B).imm(target(f, 'i')))
    }),
    enc("BL", "100101iiiiiiiiiiiiiiiiiiiiiiiiii", |f| {
        Some(MicroOp::new(BL).imm(target(f, 'i')))
    }),
    // --- Conditional branch (immediate)
    enc("B.cond", "01010100iiiiiiiiiiiiiiiiiii0cccc", |f| {
        let c = f.get('c') as u8;
        Some(if c >= 14 {
            MicroOp::new(B).imm(target(f, 'i'))
        } else {
            MicroOp::new(B_COND).e(c).imm(target(f, 'i'))
        })
    }),
    // --- Compare and branch (immediate)
    enc("CBZ", "z0110100iiiiiiiiiiiiiiiiiiittttt", |f| {
        let op = if f.get('z') == 1 { CBZ_X } else { CBZ_W };
        Some(MicroOp::new(op).b(f.rz('t')).imm(target(f, 'i')))
    }),
    enc("CBNZ", "z0110101iiiiiiiiiiiiiiiiiiittttt", |f| {
        let op = if f.get('z') == 1 { CBNZ_X } else { CBNZ_W };
        Some(MicroOp::new(op).b(f.rz('t')).imm(target(f, 'i')))
    }),
    // --- Test and branch (immediate)
    enc("TBZ", "h0110110bbbbbiiiiiiiiiiiiiittttt", |f| {
        let bit = (f.get('h') << 5 | f.get('b')) as u8;
        Some(MicroOp::new(TBZ).b(f.rz('t')).e(bit).imm(target(f, 'i')))
    }),
    enc("TBNZ", "h0110111bbbbbiiiiiiiiiiiiiittttt", |f| {
        let bit = (f.get('h') << 5 | f.get('b')) as u8;
        Some(MicroOp::new(TBNZ).b(f.rz('t')).e(bit).imm(target(f, 'i')))
    }),
    // --- Unconditional branch (register)
    enc("BR", "1101011000011111000000nnnnn00000", |f| {
        Some(MicroOp::new(BR).b(f.rz('n')))
    }),
    enc("BLR", "1101011000111111000000nnnnn00000", |f| {
        Some(MicroOp::new(BLR).b(f.rz('n')))
    }),
    enc("RET", "1101011001011111000000nnnnn00000", |f| {
        Some(MicroOp::new(BR).b(f.rz('n')))
    }),
    // --- Exception generation
    enc("SVC", "11010100000iiiiiiiiiiiiiiii00001", |f| {
        Some(MicroOp::new(SVC).imm(f.get('i') as u64))
    }),
    enc("HLT", "11010100010iiiiiiiiiiiiiiii00000", |f| {
        Some(MicroOp::new(HLT).imm(f.get('i') as u64))
    }),
    enc("BRK", "11010100001iiiiiiiiiiiiiiii00000", |f| {
        Some(MicroOp::new(BRK).imm(f.get('i') as u64))
    }),
    // --- Hints (NOP, YIELD, BTI, PAC hints in the NOP space, ...): no architectural effect
    // for a user-mode program without pointer authentication enabled.
    enc("HINT", "11010101000000110010-------11111", |_| {
        Some(MicroOp::new(NOP))
    }),
    // --- Barriers
    enc("CLREX", "11010101000000110011----01011111", |_| {
        Some(MicroOp::new(CLREX))
    }),
    enc("DSB/DMB/ISB/SB", "11010101000000110011----1--11111", |_| {
        Some(MicroOp::new(NOP))
    }),
    // --- System instructions: DC ZVA zeroes a block; the other cache maintenance
    // operations (DC CVAU/CIVAC..., IC IVAU) have no effect on an emulated flat memory.
    enc("DC ZVA", "110101010000101101110100001ttttt", |f| {
        Some(MicroOp::new(DC_ZVA).b(f.rz('t')))
    }),
    enc(
        "SYS (cache maintenance)",
        "1101010100001---0111------------",
        |_| Some(MicroOp::new(NOP)),
    ),
    // --- System register moves
    enc("MRS", "110101010011sssssssssssssssttttt", |f| {
        let id = sysreg::lookup(f.get('s'))?;
        Some(MicroOp::new(MRS).a(f.wz('t')).imm(id))
    }),
    enc("MSR (register)", "110101010001sssssssssssssssttttt", |f| {
        let id = sysreg::lookup(f.get('s'))?;
        matches!(
            id,
            sysreg::NZCV | sysreg::FPCR | sysreg::FPSR | sysreg::TPIDR_EL0
        )
        .then(|| MicroOp::new(MSR).b(f.rz('t')).imm(id))
    }),
];

#[allow(dead_code)]
const _: u8 = reg::ZR;
