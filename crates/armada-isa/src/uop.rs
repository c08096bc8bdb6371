//! The micro-op: the one format every engine executes.
//!
//! Each guest instruction decodes to exactly one 16-byte `MicroOp`, so the micro-op for a PC
//! is found by `(pc - region_base) / 4` and branch targets need no table. The layout is
//! `#[repr(C)]` and plain bytes so that the GPU kernels can read the same array the CPU
//! interpreter runs.

/// Register numbering inside micro-ops. Guest register fields 0..30 map to themselves; field
/// 31 means SP or the zero register depending on the encoding, and the decoder resolves that
/// once so the executors never have to.
pub mod reg {
    /// The stack pointer.
    pub const SP: u8 = 31;
    /// Reads as zero. Never written.
    pub const ZR: u8 = 32;
    /// Writes land here and are never read: the zero register as a destination.
    pub const SINK: u8 = 33;
    /// Size of the general register file every engine keeps.
    pub const COUNT: usize = 34;
}

/// One decoded guest instruction.
///
/// Field use depends on `op` (see `ops`): by convention `a` is the destination (Rd/Rt), `b` the
/// first source or base (Rn), `c` the second source (Rm/Rs), `d` a third register (Ra/Rt2),
/// `e`/`f` small fields (shift type and amount, condition, size, mode), `imm` an immediate
/// already expanded by the decoder (bitmask immediates, branch targets as absolute addresses,
/// PC-relative addresses already added).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MicroOp {
    pub op: u16,
    pub a: u8,
    pub b: u8,
    pub c: u8,
    pub d: u8,
    pub e: u8,
    pub f: u8,
    pub imm: u64,
}

const _: () = assert!(core::mem::size_of::<MicroOp>() == 16);

impl MicroOp {
    pub const fn new(op: u16) -> Self {
        MicroOp {
            op,
            a: 0,
            b: 0,
            c: 0,
            d: 0,
            e: 0,
            f: 0,
            imm: 0,
        }
    }
    pub const fn a(mut self, v: u8) -> Self {
        self.a = v;
        self
    }
    pub const fn b(mut self, v: u8) -> Self {
        self.b = v;
        self
    }
    pub const fn c(mut self, v: u8) -> Self {
        self.c = v;
        self
    }
    pub const fn d(mut self, v: u8) -> Self {
        self.d = v;
        self
    }
    pub const fn e(mut self, v: u8) -> Self {
        self.e = v;
        self
    }
    pub const fn f(mut self, v: u8) -> Self {
        self.f = v;
        self
    }
    pub const fn imm(mut self, v: u64) -> Self {
        self.imm = v;
        self
    }
    /// The micro-op for an encoding we do not implement: it stops the lane with the word.
    pub const fn undefined(word: u32) -> Self {
        MicroOp::new(crate::ops::UNDEFINED).imm(word as u64)
    }
    /// The op and register fields in one word (`op | a << 16 | b << 24 | ... | f << 56`),
    /// the first of the two words the GPU kernels read (`imm` is the second).
    pub const fn fields_word(&self) -> u64 {
        self.op as u64
            | (self.a as u64) << 16
            | (self.b as u64) << 24
            | (self.c as u64) << 32
            | (self.d as u64) << 40
            | (self.e as u64) << 48
            | (self.f as u64) << 56
    }
    /// The micro-op of [`Self::fields_word`]'s word and `imm`.
    pub const fn from_words(word: u64, imm: u64) -> Self {
        MicroOp {
            op: word as u16,
            a: (word >> 16) as u8,
            b: (word >> 24) as u8,
            c: (word >> 32) as u8,
            d: (word >> 40) as u8,
            e: (word >> 48) as u8,
            f: (word >> 56) as u8,
            imm,
        }
    }
    /// Raw bytes, as the GPU engines upload them.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[0..2].copy_from_slice(&self.op.to_le_bytes());
        out[2] = self.a;
        out[3] = self.b;
        out[4] = self.c;
        out[5] = self.d;
        out[6] = self.e;
        out[7] = self.f;
        out[8..16].copy_from_slice(&self.imm.to_le_bytes());
        out
    }
}

/// Addressing modes of loads and stores (field `f` of the load/store micro-ops).
pub mod addr_mode {
    /// `[Xn, #imm]` (unsigned offset, unscaled, literal with Xn = ZR and imm = address).
    pub const OFFSET: u8 = 0;
    /// `[Xn, #imm]!`
    pub const PRE: u8 = 1;
    /// `[Xn], #imm`
    pub const POST: u8 = 2;
    /// `[Xn, Rm, extend #amount]`: `e` holds `option << 3 | amount`.
    pub const REG: u8 = 3;
}

/// Condition codes (B.cond, CSEL, CCMP ...), in the manual's numbering.
pub mod cond {
    pub const EQ: u8 = 0;
    pub const NE: u8 = 1;
    pub const AL: u8 = 14;

    /// `TABLE[cond] >> (nzcv >> 28) & 1` says whether `cond` holds for the flags.
    pub const TABLE: [u16; 16] = build();

    const fn holds(cond: u8, nzcv: u8) -> bool {
        let n = nzcv & 8 != 0;
        let z = nzcv & 4 != 0;
        let c = nzcv & 2 != 0;
        let v = nzcv & 1 != 0;
        let base = match cond >> 1 {
            0 => z,
            1 => c,
            2 => n,
            3 => v,
            4 => c && !z,
            5 => n == v,
            6 => n == v && !z,
            _ => true,
        };
        if cond & 1 == 1 && cond != 15 {
            !base
        } else {
            base
        }
    }

    const fn build() -> [u16; 16] {
        let mut t = [0u16; 16];
        let mut c = 0;
        while c < 16 {
            let mut f = 0;
            while f < 16 {
                if holds(c as u8, f as u8) {
                    t[c] |= 1 << f;
                }
                f += 1;
            }
            c += 1;
        }
        t
    }

    #[inline(always)]
    pub fn check(cond: u8, nzcv: u64) -> bool {
        (TABLE[(cond & 15) as usize] >> ((nzcv >> 28) & 15)) & 1 != 0
    }

    pub const NAMES: [&str; 16] = [
        "eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al",
        "nv",
    ];
}

/// System registers reachable with MRS/MSR (field `imm` of those micro-ops).
pub mod sysreg {
    pub const NZCV: u64 = 1;
    pub const FPCR: u64 = 2;
    pub const FPSR: u64 = 3;
    pub const TPIDR_EL0: u64 = 4;
    pub const DCZID_EL0: u64 = 5;
    pub const CTR_EL0: u64 = 6;
    pub const MIDR_EL1: u64 = 7;
    pub const CNTVCT_EL0: u64 = 8;
    pub const CNTFRQ_EL0: u64 = 9;
    pub const TPIDRRO_EL0: u64 = 10;
    pub const MPIDR_EL1: u64 = 11;
    pub const REVIDR_EL1: u64 = 12;
    pub const ID_AA64PFR0_EL1: u64 = 13;
    pub const ID_AA64ISAR0_EL1: u64 = 14;
    pub const ID_AA64ISAR1_EL1: u64 = 15;
    pub const CNTPCT_EL0: u64 = 16;

    /// (op0, op1, CRn, CRm, op2) packed as in the MRS encoding bits [20:5], and our id.
    pub const TABLE: &[(u32, u64, &str)] = &[
        (enc(3, 3, 4, 2, 0), NZCV, "nzcv"),
        (enc(3, 3, 4, 4, 0), FPCR, "fpcr"),
        (enc(3, 3, 4, 4, 1), FPSR, "fpsr"),
        (enc(3, 3, 13, 0, 2), TPIDR_EL0, "tpidr_el0"),
        (enc(3, 3, 13, 0, 3), TPIDRRO_EL0, "tpidrro_el0"),
        (enc(3, 3, 0, 0, 7), DCZID_EL0, "dczid_el0"),
        (enc(3, 3, 0, 0, 1), CTR_EL0, "ctr_el0"),
        (enc(3, 0, 0, 0, 0), MIDR_EL1, "midr_el1"),
        (enc(3, 0, 0, 0, 5), MPIDR_EL1, "mpidr_el1"),
        (enc(3, 0, 0, 0, 6), REVIDR_EL1, "revidr_el1"),
        (enc(3, 0, 0, 4, 0), ID_AA64PFR0_EL1, "id_aa64pfr0_el1"),
        (enc(3, 0, 0, 6, 0), ID_AA64ISAR0_EL1, "id_aa64isar0_el1"),
        (enc(3, 0, 0, 6, 1), ID_AA64ISAR1_EL1, "id_aa64isar1_el1"),
        (enc(3, 3, 14, 0, 2), CNTVCT_EL0, "cntvct_el0"),
        (enc(3, 3, 14, 0, 1), CNTPCT_EL0, "cntpct_el0"),
        (enc(3, 3, 14, 0, 0), CNTFRQ_EL0, "cntfrq_el0"),
    ];

    const fn enc(op0: u32, op1: u32, crn: u32, crm: u32, op2: u32) -> u32 {
        (op0 - 2) << 14 | op1 << 11 | crn << 7 | crm << 3 | op2
    }

    pub fn lookup(bits: u32) -> Option<u64> {
        TABLE.iter().find(|e| e.0 == bits).map(|e| e.1)
    }

    pub fn name(id: u64) -> &'static str {
        TABLE.iter().find(|e| e.1 == id).map(|e| e.2).unwrap_or("?")
    }

    /// What the emulated CPU's registers read, in every engine (the CPU engine's MRS and
    /// the GPU kernels' generated headers take them from here).
    pub mod value {
        /// DC ZVA's block: DCZID_EL0.BS = log2(words) = 4, so 64 bytes.
        pub const ZVA_BYTES: u64 = 64;
        pub const DCZID_EL0: u64 = 4;
        /// CTR_EL0: 64-byte I and D cache lines, as on common Arm cores.
        pub const CTR_EL0: u64 = 0x8444_c004;
        /// MIDR_EL1: an Arm Cortex-A72, so glibc picks its generic string routines.
        pub const MIDR_EL1: u64 = 0x410f_d083;
        /// CNTFRQ_EL0: the virtual counter ticks once per retired instruction, at a nominal
        /// 1 GHz.
        pub const CNTFRQ_EL0: u64 = 1_000_000_000;
        /// MPIDR_EL1: one core, affinity 0 (bit 31 reads as one).
        pub const MPIDR_EL1: u64 = 0x8000_0000;
        /// ID_AA64PFR0_EL1: EL0 and EL1 in AArch64 only, FP and AdvSIMD with half precision.
        pub const ID_AA64PFR0_EL1: u64 = 0x0000_0000_0001_0011;
        /// ID_AA64ISAR0_EL1: Atomic 2 (FEAT_LSE), DP 1 (FEAT_DotProd: SDOT, UDOT), as
        /// `HWCAP_ATOMICS` and `HWCAP_ASIMDDP` tell (armada_core::process::HWCAP).
        pub const ID_AA64ISAR0_EL1: u64 = 0x0000_1000_0020_0000;
        /// HWCAP bits of what armada implements (AT_HWCAP): FP, ASIMD, ATOMICS, ASIMDDP.
        pub const HWCAP: u64 = (1 << 0) | (1 << 1) | (1 << 8) | (1 << 20);

        /// Every register whose read is a constant, (id, value): the CPU engine's MRS and the
        /// kernels' (`SYSREG_CONSTANTS`, `sysreg_constant`, generated by armada-gpu's layout.rs)
        /// read this one table. The ID registers say what the HWCAP bits say.
        pub const CONSTANT: &[(u64, u64)] = &[
            (super::DCZID_EL0, DCZID_EL0),
            (super::CTR_EL0, CTR_EL0),
            (super::MIDR_EL1, MIDR_EL1),
            (super::MPIDR_EL1, MPIDR_EL1),
            (super::REVIDR_EL1, 0),
            (super::ID_AA64PFR0_EL1, ID_AA64PFR0_EL1),
            (super::ID_AA64ISAR0_EL1, ID_AA64ISAR0_EL1),
            (super::ID_AA64ISAR1_EL1, 0),
            (super::TPIDRRO_EL0, 0),
            (super::CNTFRQ_EL0, CNTFRQ_EL0),
        ];

        /// The value of register `id` where it is a constant ([`CONSTANT`]).
        pub fn constant(id: u64) -> Option<u64> {
            CONSTANT.iter().find(|c| c.0 == id).map(|c| c.1)
        }
        /// FPCR bits a program may set (AHP, DN, FZ, RMode, FZ16; the trap enables read 0).
        pub const FPCR_MASK: u64 = 0x07f0_0000;
        /// FPSR bits a program may set (NZCV, QC, the cumulative exception flags).
        pub const FPSR_MASK: u64 = 0xf800_009f;
        /// FPSR.QC: set by an AdvSIMD saturating op that saturated, until a program clears it.
        pub const FPSR_QC: u64 = 1 << 27;
    }
}
