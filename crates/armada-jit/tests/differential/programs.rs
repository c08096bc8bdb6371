//! The random programs of the differential test: a loop of random integer, bitfield,
//! multiply/divide, flag, load and store (LSE atomics and DC ZVA included), FP, AdvSIMD
//! and forward-branch instructions, from a seed.

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Mostly from a few registers, so operands often meet (a compare of a register with
    /// itself, equal values), where conditions differ most.
    pub fn reg(&mut self) -> u32 {
        if self.below(4) == 0 {
            self.below(16) as u32
        } else {
            self.below(6) as u32
        }
    }
}

/// FRINTN, FRINTP, FRINTM, FRINTZ, FRINTA, FRINTX, FRINTI (scalar: single, with the type in
/// bits 23..22; vector: 2S, with Q and sz to set), in the same order in both.
pub const FRINT_SCALAR: [u32; 7] = [
    0x1e24_4000,
    0x1e24_c000,
    0x1e25_4000,
    0x1e25_c000,
    0x1e26_4000,
    0x1e27_4000,
    0x1e27_c000,
];
pub const FRINT_VECTOR: [u32; 7] = [
    0x0e21_8800,
    0x0ea1_8800,
    0x0e21_9800,
    0x0ea1_9800,
    0x2e21_8800,
    0x2e21_9800,
    0x2ea1_9800,
];

/// One random body instruction (never writes x26..x31 except x26 by writeback); `left` is
/// how many body slots follow it, for forward branches.
fn insn(r: &mut Rng, left: u32) -> u32 {
    let (d, n, m, a) = (r.reg(), r.reg(), r.reg(), r.reg());
    let sf = if r.below(2) == 0 { 0x8000_0000 } else { 0 };
    let cond = r.below(15) as u32;
    match r.below(31) {
        0 => {
            [0x1100_0000, 0x5100_0000, 0x3100_0000, 0x7100_0000][r.below(4) as usize]
                | sf
                | (r.below(4096) as u32) << 10
                | n << 5
                | d
        }
        1 => {
            let shift = r.below(3) as u32;
            let amt = r.below(if sf != 0 { 64 } else { 32 }) as u32;
            [0x0b00_0000, 0x4b00_0000, 0x2b00_0000, 0x6b00_0000][r.below(4) as usize]
                | sf
                | shift << 22
                | m << 16
                | amt << 10
                | n << 5
                | d
        }
        2 => {
            let shift = r.below(4) as u32;
            let amt = r.below(if sf != 0 { 64 } else { 32 }) as u32;
            let inv = (r.below(2) as u32) << 21;
            [0x0a00_0000, 0x2a00_0000, 0x4a00_0000, 0x6a00_0000][r.below(4) as usize]
                | sf
                | shift << 22
                | inv
                | m << 16
                | amt << 10
                | n << 5
                | d
        }
        3 => {
            [0x0b20_0000, 0x6b20_0000, 0x2b20_0000, 0x4b20_0000][r.below(4) as usize]
                | sf
                | m << 16
                | (r.below(8) as u32) << 13
                | (r.below(5) as u32) << 10
                | n << 5
                | d
        }
        4 => {
            let hw = r.below(if sf != 0 { 4 } else { 2 }) as u32;
            [0x1280_0000, 0x5280_0000, 0x7280_0000][r.below(3) as usize]
                | sf
                | hw << 21
                | (r.below(65536) as u32) << 5
                | d
        }
        5 => 0x1b00_0000 | sf | m << 16 | (r.below(2) as u32) << 15 | a << 10 | n << 5 | d,
        6 => {
            [
                0x9b40_7c00,
                0x9bc0_7c00,
                0x9b20_0000 | a << 10,
                0x9ba0_8000 | a << 10,
            ][r.below(4) as usize]
                | m << 16
                | n << 5
                | d
        }
        7 => [0x1ac0_0800, 0x1ac0_0c00][r.below(2) as usize] | sf | m << 16 | n << 5 | d,
        8 => {
            [0x1ac0_2000, 0x1ac0_2400, 0x1ac0_2800, 0x1ac0_2c00][r.below(4) as usize]
                | sf
                | m << 16
                | n << 5
                | d
        }
        9 => {
            [0x1a80_0000, 0x1a80_0400, 0x5a80_0000, 0x5a80_0400][r.below(4) as usize]
                | sf
                | m << 16
                | cond << 12
                | n << 5
                | d
        }
        10 => {
            let imm = (r.below(2) as u32) << 11;
            let rm = if imm != 0 { r.below(32) as u32 } else { m };
            [0x7a40_0000, 0x3a40_0000][r.below(2) as usize]
                | sf
                | imm
                | rm << 16
                | cond << 12
                | n << 5
                | r.below(16) as u32
        }
        11 => {
            let (bits, nbit) = if sf != 0 { (64, 1 << 22) } else { (32, 0) };
            [0x1300_0000, 0x3300_0000, 0x5300_0000][r.below(3) as usize]
                | sf
                | nbit
                | (r.below(bits) as u32) << 16
                | (r.below(bits) as u32) << 10
                | n << 5
                | d
        }
        12 => {
            if sf != 0 {
                0x93c0_0000 | m << 16 | (r.below(64) as u32) << 10 | n << 5 | d
            } else {
                0x1380_0000 | m << 16 | (r.below(32) as u32) << 10 | n << 5 | d
            }
        }
        13 => {
            [
                0x5ac0_1000,
                0x5ac0_1400,
                0x5ac0_0000,
                0x5ac0_0800,
                0x5ac0_0400,
            ][r.below(5) as usize]
                | sf
                | if sf != 0 && r.below(3) == 0 { 0x400 } else { 0 }
                | n << 5
                | d
        }
        14 => {
            [0x1a00_0000, 0x3a00_0000, 0x5a00_0000, 0x7a00_0000][r.below(4) as usize]
                | sf
                | m << 16
                | n << 5
                | d
        }
        // loads and stores off x26 (unsigned offset, unscaled, pre/post-index)
        15 | 16 => {
            let ops: [(u32, u32); 11] = [
                (0xf940_0000, 8),
                (0xf900_0000, 8),
                (0xb940_0000, 4),
                (0xb900_0000, 4),
                (0x3940_0000, 1),
                (0x3900_0000, 1),
                (0x7940_0000, 2),
                (0x7900_0000, 2),
                (0xb980_0000, 4),
                (0x3980_0000, 1),
                (0x79c0_0000, 2),
            ];
            let (op, _) = ops[r.below(11) as usize];
            op | (r.below(120) as u32) << 10 | 26 << 5 | d
        }
        17 => {
            let base = [
                0xf840_0000u32,
                0xf800_0000,
                0xb840_0000,
                0xb800_0000,
                0x3840_0000,
            ][r.below(5) as usize];
            let mode = [0x000, 0x400, 0xc00][r.below(3) as usize];
            let imm9 = (r.below(129) as i32 - 64) as u32 & 0x1ff;
            base | mode | imm9 << 12 | 26 << 5 | d
        }
        // DC ZVA of the 64 bytes at x26 (inline where the TLB or the window has the page)
        18 if r.below(6) == 0 => 0xd50b_7420 | 26,
        // LSE atomics at x26: LDADD, LDCLR, LDEOR, LDSET, LD{S,U}{MAX,MIN} (ST* where Rt is
        // xzr) and SWP, each size, acquire/release bits at random
        18 if r.below(4) == 0 => {
            let (o3, opc) = if r.below(9) == 0 {
                (1, 0)
            } else {
                (0, r.below(8) as u32)
            };
            let rt = if r.below(4) == 0 { 31 } else { d };
            0x3820_0000
                | (r.below(4) as u32) << 30
                | (r.below(4) as u32) << 22
                | m << 16
                | o3 << 15
                | opc << 12
                | 26 << 5
                | rt
        }
        // CAS at x26, each size, acquire/release bits at random
        18 if r.below(4) == 0 => {
            0x08a0_7c00
                | (r.below(4) as u32) << 30
                | (r.below(2) as u32) << 22
                | m << 16
                | (r.below(2) as u32) << 15
                | 26 << 5
                | d
        }
        18 => {
            let op = [0xa940_0000u32, 0xa900_0000, 0x2940_0000, 0x2900_0000][r.below(4) as usize];
            let imm7 = (r.below(32) as i32 - 8) as u32 & 0x7f;
            let d2 = (d + 1 + r.below(15) as u32) & 15;
            op | imm7 << 15 | d2 << 10 | 26 << 5 | d
        }
        // FP/SIMD: loads and stores of D and Q, arithmetic, FMOV both ways, FCMP, FCSEL
        19 if r.below(3) == 0 => {
            // LDP and STP of S, D and Q registers: signed offset, pre- and post-index
            let op = [
                0x2d40_0000u32,
                0x2d00_0000,
                0x6d40_0000,
                0x6d00_0000,
                0xad40_0000,
                0xad00_0000,
            ][r.below(6) as usize];
            let (op, imm7) = match r.below(4) {
                0 => (op | 0x0080_0000, (r.below(16) as i32 - 8) as u32 & 0x7f),
                1 => (
                    (op & !0x0100_0000) | 0x0080_0000,
                    (r.below(16) as i32 - 8) as u32 & 0x7f,
                ),
                _ => (op, r.below(16) as u32),
            };
            op | imm7 << 15 | ((d + 1) & 7) << 10 | 26 << 5 | (d & 7)
        }
        19 => {
            // LDR and STR of B, H, S, D and Q registers: unsigned offset, or unscaled,
            // pre- and post-index
            let op = [
                0x3d40_0000u32,
                0x3d00_0000,
                0x7d40_0000,
                0x7d00_0000,
                0xbd40_0000,
                0xbd00_0000,
                0xfd40_0000,
                0xfd00_0000,
                0x3dc0_0000,
                0x3d80_0000,
            ][r.below(10) as usize];
            if r.below(3) == 0 {
                let mode = [0x000, 0x400, 0xc00][r.below(3) as usize];
                let imm9 = (r.below(129) as i32 - 64) as u32 & 0x1ff;
                (op & !0x0100_0000) | mode | imm9 << 12 | 26 << 5 | (d & 7)
            } else {
                op | (r.below(60) as u32) << 10 | 26 << 5 | (d & 7)
            }
        }
        // FADD FMUL FSUB FDIV FNMUL, FMADD FMSUB FNMADD FNMSUB, double and single
        20 => {
            let single = r.below(3) == 0;
            let ty = if single { 0 } else { 1 << 22 };
            let ops = [
                0x1e20_2800u32,
                0x1e20_0800,
                0x1e20_3800,
                0x1e20_1800,
                0x1e20_8800,
                0x1f00_0000,
                0x1f00_8000,
                0x1f20_0000,
                0x1f20_8000,
            ];
            let op = ops[r.below(ops.len() as u64) as usize];
            let ra = if op >> 24 == 0x1f {
                (r.below(8) as u32) << 10
            } else {
                0
            };
            op | ty | ra | (m & 7) << 16 | (n & 7) << 5 | (d & 7)
        }
        21 => [
            0x9e67_0000u32 | n << 5 | (d & 7),
            0x9e66_0000 | (n & 7) << 5 | d,
        ][r.below(2) as usize],
        22 => [
            0x1e60_2000u32 | (m & 7) << 16 | (n & 7) << 5,
            0x1e60_0c00 | (m & 7) << 16 | cond << 12 | (n & 7) << 5 | (d & 7),
        ][r.below(2) as usize],
        // AdvSIMD moves and lane ops (the translation tier's inline ones, and the shapes
        // next to them that go to the helper)
        25 => {
            let q = (r.below(2) as u32) << 30;
            let (vd, vn, vm) = (d & 7, n & 7, m & 7);
            let es = r.below(4) as u32;
            let idx = r.below(16 >> es) as u32;
            let imm5 = ((idx << 1) | 1) << es;
            let q_es = if es == 3 { 1 << 30 } else { q };
            let size = r.below(4) as u32;
            let q_size = if size == 3 { 1 << 30 } else { q };
            match r.below(12) {
                // MOVI (2D and scalar D)
                0 => {
                    [0x6f00_e400u32, 0x2f00_e400][r.below(2) as usize]
                        | (r.below(8) as u32) << 16
                        | (r.below(32) as u32) << 5
                        | vd
                }
                // DUP (element), vector and scalar
                1 => 0x0e00_0400 | q_es | imm5 << 16 | vn << 5 | vd,
                2 => 0x5e00_0400 | imm5 << 16 | vn << 5 | vd,
                // DUP (general)
                3 => 0x0e00_0c00 | q_es | (1 << es) << 16 | n << 5 | vd,
                // UMOV, SMOV
                4 => 0x0e00_3c00 | (if es == 3 { 1 << 30 } else { 0 }) | imm5 << 16 | vn << 5 | d,
                5 => {
                    let es = es.min(2);
                    let idx = r.below(16 >> es) as u32;
                    let q = if es == 2 { 1 << 30 } else { q };
                    0x0e00_2c00 | q | (((idx << 1) | 1) << es) << 16 | vn << 5 | d
                }
                // INS (general), INS (element)
                6 => 0x4e00_1c00 | imm5 << 16 | n << 5 | vd,
                7 => {
                    let from = r.below(16 >> es) as u32;
                    0x6e00_0400 | imm5 << 16 | (from << es) << 11 | vn << 5 | vd
                }
                // ADD, SUB, CMEQ (vector); ADD, SUB (scalar); CMEQ #0
                8 => {
                    [0x0e20_8400u32, 0x2e20_8400, 0x2e20_8c00][r.below(3) as usize]
                        | q_size
                        | size << 22
                        | vm << 16
                        | vn << 5
                        | vd
                }
                9 => [
                    0x5ee0_8400u32 | vm << 16 | vn << 5 | vd,
                    0x7ee0_8400 | vm << 16 | vn << 5 | vd,
                    0x0e20_9800 | q_size | size << 22 | vn << 5 | vd,
                ][r.below(3) as usize],
                // AND BIC ORR ORN EOR BSL BIT BIF, NOT
                10 => {
                    let ops = [
                        0x0e20_1c00u32,
                        0x0e60_1c00,
                        0x0ea0_1c00,
                        0x0ee0_1c00,
                        0x2e20_1c00,
                        0x2e60_1c00,
                        0x2ea0_1c00,
                        0x2ee0_1c00,
                        0x2e20_5800,
                    ];
                    ops[r.below(ops.len() as u64) as usize] | q | vm << 16 | vn << 5 | vd
                }
                // FABS, FNEG (vector)
                _ => {
                    let sz = r.below(2) as u32;
                    [0x0ea0_f800u32, 0x2ea0_f800][r.below(2) as usize]
                        | sz << 22
                        | (if sz == 1 { 1 << 30 } else { q })
                        | vn << 5
                        | vd
                }
            }
        }
        // scalar FABS, FNEG, FCMP/FCMPE (with a register or #0), FCSEL of singles, and
        // SCVTF, whose small integers make exact sums and products (Inexact stays clear)
        26 => {
            let (vd, vn, vm) = (d & 7, n & 7, m & 7);
            let ty = (r.below(2) as u32) << 22;
            match r.below(5) {
                0 => [0x1e20_c000u32, 0x1e21_4000][r.below(2) as usize] | ty | vn << 5 | vd,
                1 => {
                    0x1e20_2000
                        | ty
                        | vm << 16
                        | vn << 5
                        | [0x00, 0x08, 0x10, 0x18][r.below(4) as usize]
                }
                2 => 0x1e20_0c00 | vm << 16 | cond << 12 | vn << 5 | vd,
                _ => [0x9e62_0000u32, 0x1e22_0000][r.below(2) as usize] | n << 5 | vd,
            }
        }
        // vector FADD FSUB FMUL FDIV FMLA FMLS on 2S, 4S and 2D, and FMUL FMLA FMLS by
        // element
        28 => {
            let (vd, vn, vm) = (d & 7, n & 7, m & 7);
            let sz = r.below(2) as u32;
            let q = if sz == 1 {
                1 << 30
            } else {
                (r.below(2) as u32) << 30
            };
            if r.below(3) == 0 {
                let op = [0x0f80_9000u32, 0x0f80_1000, 0x0f80_5000][r.below(3) as usize];
                // the element: H:L for singles, H for doubles
                let idx = if sz == 1 {
                    (r.below(2) as u32) << 11
                } else {
                    let i = r.below(4) as u32;
                    (i >> 1) << 11 | (i & 1) << 21
                };
                op | q | sz << 22 | idx | vm << 16 | vn << 5 | vd
            } else {
                let ops = [
                    0x0e20_d400u32,
                    0x0ea0_d400,
                    0x2e20_dc00,
                    0x2e20_fc00,
                    0x0e20_cc00,
                    0x0ea0_cc00,
                ];
                ops[r.below(ops.len() as u64) as usize] | q | sz << 22 | vm << 16 | vn << 5 | vd
            }
        }
        // SCVTF UCVTF, FCVTZS FCVTZU FCVTNS FCVTPS FCVTMS FCVTAS (scalar, general
        // registers), FSQRT, FCVT between single and double; SHL SSHR USHR SSRA USRA
        // (vector and scalar) and their rounding forms; the FRINTs
        29 => {
            let (vd, vn, vm) = (d & 7, n & 7, m & 7);
            let ty = (r.below(2) as u32) << 22;
            match r.below(11) {
                // FRINTN FRINTP FRINTM FRINTZ FRINTA FRINTX FRINTI, scalar and vector
                10 => {
                    if r.below(2) == 0 {
                        let ops = FRINT_SCALAR;
                        ops[r.below(ops.len() as u64) as usize] | ty | vn << 5 | vd
                    } else {
                        let ops = FRINT_VECTOR;
                        let sz = r.below(2) as u32;
                        let q = if sz == 1 {
                            1 << 30
                        } else {
                            (r.below(2) as u32) << 30
                        };
                        ops[r.below(ops.len() as u64) as usize] | q | sz << 22 | vn << 5 | vd
                    }
                }
                // SCVTF UCVTF (vector)
                6 => {
                    let sz = r.below(2) as u32;
                    let q = if sz == 1 {
                        1 << 30
                    } else {
                        (r.below(2) as u32) << 30
                    };
                    [0x0e21_d800u32, 0x2e21_d800][r.below(2) as usize] | q | sz << 22 | vn << 5 | vd
                }
                // SSHLL USHLL (SXTL UXTL at shift 0), lower and upper halves
                7 => {
                    let es = r.below(3) as u32;
                    let imm = (8 << es) + r.below(8 << es) as u32;
                    let q = (r.below(2) as u32) << 30;
                    [0x0f00_a400u32, 0x2f00_a400][r.below(2) as usize]
                        | q
                        | imm << 16
                        | vn << 5
                        | vd
                }
                // XTN, SHRN, RSHRN (and the upper-half forms)
                9 => {
                    let es = r.below(3) as u32;
                    let q = (r.below(2) as u32) << 30;
                    match r.below(3) {
                        0 => 0x0e21_2800 | q | es << 22 | vn << 5 | vd,
                        k => {
                            let imm = (16 << es) - 1 - r.below(8 << es) as u32;
                            [0, 0x0f00_8400u32, 0x0f00_8c00][k as usize]
                                | q
                                | imm << 16
                                | vn << 5
                                | vd
                        }
                    }
                }
                // MUL (vector, and by element on 16- and 32-bit lanes)
                8 => {
                    let q = (r.below(2) as u32) << 30;
                    if r.below(2) == 0 {
                        0x0e20_9c00 | q | (r.below(3) as u32) << 22 | vm << 16 | vn << 5 | vd
                    } else if r.below(2) == 0 {
                        let i = r.below(8) as u32;
                        0x0f40_8000
                            | q
                            | (i >> 2) << 11
                            | (i >> 1 & 1) << 21
                            | (i & 1) << 20
                            | vm << 16
                            | vn << 5
                            | vd
                    } else {
                        let i = r.below(4) as u32;
                        0x0f80_8000 | q | (i >> 1) << 11 | (i & 1) << 21 | vm << 16 | vn << 5 | vd
                    }
                }
                0 => [0x1e22_0000u32, 0x1e23_0000][r.below(2) as usize] | sf | ty | n << 5 | vd,
                1 => {
                    let ops = [
                        0x1e38_0000u32,
                        0x1e39_0000,
                        0x1e20_0000,
                        0x1e21_0000,
                        0x1e28_0000,
                        0x1e30_0000,
                        0x1e24_0000,
                    ];
                    ops[r.below(ops.len() as u64) as usize] | sf | ty | vn << 5 | d
                }
                2 => 0x1e21_c000 | ty | vn << 5 | vd,
                3 => [0x1e22_c000u32, 0x1e62_4000][r.below(2) as usize] | vn << 5 | vd,
                _ => {
                    let es = r.below(4) as u32;
                    let width = 8u32 << es;
                    let q = if es == 3 {
                        1 << 30
                    } else {
                        (r.below(2) as u32) << 30
                    };
                    let scalar = es == 3 && r.below(2) == 0;
                    let ops = [
                        0x0f00_5400u32, // SHL
                        0x0f00_0400,    // SSHR
                        0x2f00_0400,    // USHR
                        0x0f00_1400,    // SSRA
                        0x2f00_1400,    // USRA
                        0x2f00_2400,    // URSHR
                    ];
                    let k = r.below(ops.len() as u64) as usize;
                    let imm = if k == 0 {
                        width + r.below(width as u64) as u32
                    } else {
                        2 * width - 1 - r.below(width as u64) as u32
                    };
                    let op = if scalar {
                        ops[k] | 0x5000_0000
                    } else {
                        ops[k] | q
                    };
                    op | imm << 16 | vn << 5 | vd
                }
            }
        }
        // AdvSIMD integer ops on host SIMD: compares, MAX/MIN, pairwise and across-lanes
        // ops, ADDHN/SUBHN (rounding too), MLA/MLS; and LD1 of one to four registers off
        // x26 (no offset, post-index by the size or by a register)
        30 => {
            let (vd, vn, vm) = (d & 7, n & 7, m & 7);
            let q = (r.below(2) as u32) << 30;
            let size = r.below(3) as u32;
            let three = |op: u32, size: u32, q: u32| op | q | size << 22 | vm << 16 | vn << 5 | vd;
            match r.below(8) {
                // CMGT CMGE CMHI CMHS CMTST, SMAX UMAX SMIN UMIN
                0 => {
                    let ops = [
                        0x0e20_3400u32,
                        0x0e20_3c00,
                        0x2e20_3400,
                        0x2e20_3c00,
                        0x0e20_8c00,
                        0x0e20_6400,
                        0x2e20_6400,
                        0x0e20_6c00,
                        0x2e20_6c00,
                    ];
                    let k = r.below(ops.len() as u64) as usize;
                    // the compares' 2D and scalar D forms (to the helper)
                    if k < 5 && r.below(6) == 0 {
                        [three(ops[k], 3, 1 << 30), three(ops[k] | 0x5000_0000, 3, 0)]
                            [r.below(2) as usize]
                    } else {
                        three(ops[k], size, q)
                    }
                }
                // CMGT CMGE CMLE CMLT #0 (and CMEQ #0)
                1 => {
                    let ops = [
                        0x0e20_8800u32,
                        0x2e20_8800,
                        0x2e20_9800,
                        0x0e20_a800,
                        0x0e20_9800,
                    ];
                    ops[r.below(ops.len() as u64) as usize] | q | size << 22 | vn << 5 | vd
                }
                // ADDP SMAXP UMAXP SMINP UMINP (vector; ADDP on 2D too)
                2 => {
                    let ops = [
                        0x0e20_bc00u32,
                        0x0e20_a400,
                        0x2e20_a400,
                        0x0e20_ac00,
                        0x2e20_ac00,
                    ];
                    let k = r.below(ops.len() as u64) as usize;
                    if k == 0 && r.below(4) == 0 {
                        three(ops[0], 3, 1 << 30)
                    } else {
                        three(ops[k], size, q)
                    }
                }
                // ADDV SMAXV UMAXV SMINV UMINV (4S only for 32-bit lanes), ADDP (scalar)
                3 => {
                    let ops = [
                        0x0e31_b800u32,
                        0x0e30_a800,
                        0x2e30_a800,
                        0x0e31_a800,
                        0x2e31_a800,
                    ];
                    let q = if size == 2 { 1 << 30 } else { q };
                    if r.below(6) == 0 {
                        0x5ef1_b800 | vn << 5 | vd
                    } else {
                        ops[r.below(ops.len() as u64) as usize] | q | size << 22 | vn << 5 | vd
                    }
                }
                // ADDHN RADDHN SUBHN RSUBHN, lower and upper halves
                4 => {
                    let ops = [0x0e20_4000u32, 0x2e20_4000, 0x0e20_6000, 0x2e20_6000];
                    three(ops[r.below(4) as usize], size, q)
                }
                // MLA MLS (vector, and by element on 16- and 32-bit lanes)
                5 => {
                    let size = 1 + r.below(2) as u32;
                    if r.below(2) == 0 {
                        let op = [0x0e20_9400u32, 0x2e20_9400][r.below(2) as usize];
                        // (bytes go to the helper)
                        let size = if r.below(4) == 0 { 0 } else { size };
                        three(op, size, q)
                    } else {
                        let op = [0x2f00_0000u32, 0x2f00_4000][r.below(2) as usize];
                        let hlm = if size == 1 {
                            let i = r.below(8) as u32;
                            (i >> 2) << 11 | (i >> 1 & 1) << 21 | (i & 1) << 20
                        } else {
                            let i = r.below(4) as u32;
                            (i >> 1) << 11 | (i & 1) << 21
                        };
                        op | q | size << 22 | hlm | vm << 16 | vn << 5 | vd
                    }
                }
                // LD1 (multiple structures), 1-4 registers: no offset, post-index by the
                // registers' size, or (rarely) by a register
                _ => {
                    let opcode = [0b0111u32, 0b1010, 0b0110, 0b0010][r.below(4) as usize];
                    let es = r.below(4) as u32;
                    let post = match r.below(8) {
                        0..=3 => 0,
                        4..=6 => 0x0080_0000 | 31 << 16,
                        _ => 0x0080_0000 | n << 16,
                    };
                    0x0c40_0000 | post | q | opcode << 12 | es << 10 | 26 << 5 | vd
                }
            }
        }
        // forward branches within the body
        23 | 24 | 27 if left > 1 => {
            let k = 1 + r.below(left.min(6) as u64) as u32;
            match r.below(3) {
                0 => 0x5400_0000 | k << 5 | cond,
                1 => [0xb400_0000u32, 0xb500_0000][r.below(2) as usize] | k << 5 | n,
                _ => {
                    let bit = r.below(64) as u32;
                    [0x3600_0000u32, 0x3700_0000][r.below(2) as usize]
                        | (bit >> 5) << 31
                        | (bit & 31) << 19
                        | k << 5
                        | n
                }
            }
        }
        _ => 0x8b00_0000 | m << 16 | n << 5 | d,
    }
}

/// The random program of `seed`: a loop of `len` random body instructions, its counter in
/// x28, then BRK.
pub fn program(seed: u64) -> Vec<u32> {
    let mut r = Rng(seed | 1);
    let len = 4 + r.below(28) as u32;
    let mut body = Vec::new();
    // mov x26, x27 at the loop's head: the writeback base starts over each time round
    body.push(0xaa1b_03fa);
    for i in 0..len {
        body.push(insn(&mut r, len - i));
    }
    body.push(0xf100_079c); // subs x28, x28, #1
    let back = -(body.len() as i32) & 0x7ffff;
    body.push(0x5400_0001 | (back as u32) << 5); // b.ne loop
    body.push(0xd420_0000); // brk #0
    body
}
