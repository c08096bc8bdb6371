//! Micro-op numbers. Each group of operations lives in its own numeric range so that the
//! integer and the FP/SIMD halves can grow independently; the numbers are part of the format
//! the GPU kernels read (they are exported to them from `ALL`).

/// Declares one group of micro-op numbers, sequential from `$base`, and their names.
macro_rules! define_ops {
    ($group:ident, $base:expr, [$($name:ident),* $(,)?]) => {
        #[allow(non_camel_case_types, dead_code, clippy::upper_case_acronyms)]
        #[repr(u16)]
        enum $group {
            $($name),*
        }
        $(pub const $name: u16 = $base + $group::$name as u16;)*
        /// (number, name) of every micro-op in this group.
        pub const NAMES: &[(u16, &str)] = &[$(($name, stringify!($name))),*];
    };
}
pub(crate) use define_ops;

/// Control flow, system and integer operations.
pub mod int {
    super::define_ops!(
        IntOps,
        0,
        [
            // --- stops and housekeeping
            NOT_DECODED, // placeholder for a word not decoded yet: the engine decodes and retries
            UNDEFINED,   // imm = the raw word
            END_OF_REGION, // sentinel after the last micro-op of a region
            NOP,
            SVC, // imm = immediate
            HLT,
            BRK,
            // --- branches (imm = absolute target)
            B,
            BL,
            BR,     // b = Rn
            BLR,    // b = Rn
            B_COND, // e = cond
            CBZ_W,
            CBZ_X,
            CBNZ_W,
            CBNZ_X, // b = Rt
            TBZ,
            TBNZ, // b = Rt, e = bit
            // --- system
            MRS,          // a = Rt, imm = sysreg id
            MSR,          // b = Rt, imm = sysreg id
            MSR_NZCV_IMM, // unused placeholder for MSR (immediate) forms we treat as no-ops
            CLREX,
            DC_ZVA, // b = Rt
            // --- data processing, immediate
            MOV_IMM, // a = Rd, imm = value (MOVZ/MOVN/ADR/ADRP and the MOV aliases)
            MOVK_W,
            MOVK_X, // a = Rd, b = Rd (read), e = shift, imm = imm16
            ADD_IMM_W,
            ADD_IMM_X, // a = Rd|SP, b = Rn|SP, imm (SUB is ADD of the negation)
            ADDS_IMM_W,
            ADDS_IMM_X, // a = Rd, b = Rn|SP, imm = operand already inverted for SUBS, e = carry in
            AND_IMM_W,
            AND_IMM_X,
            ORR_IMM_W,
            ORR_IMM_X,
            EOR_IMM_W,
            EOR_IMM_X, // a = Rd|SP
            ANDS_IMM_W,
            ANDS_IMM_X,
            UBFM_W,
            UBFM_X,
            SBFM_W,
            SBFM_X,
            BFM_W,
            BFM_X, // a = Rd, b = Rn, c = Rd (read, BFM), e = immr, f = imms
            EXTR_W,
            EXTR_X, // a = Rd, b = Rn, c = Rm, e = lsb
            // --- data processing, register (e = shift type, f = amount)
            ADD_SR_W,
            ADD_SR_X,
            SUB_SR_W,
            SUB_SR_X,
            ADDS_SR_W,
            ADDS_SR_X,
            SUBS_SR_W,
            SUBS_SR_X,
            // extended register: e = option, f = left shift
            ADD_EXT_W,
            ADD_EXT_X,
            SUB_EXT_W,
            SUB_EXT_X,
            ADDS_EXT_W,
            ADDS_EXT_X,
            SUBS_EXT_W,
            SUBS_EXT_X,
            ADC_W,
            ADC_X,
            SBC_W,
            SBC_X,
            ADCS_W,
            ADCS_X,
            SBCS_W,
            SBCS_X,
            AND_SR_W,
            AND_SR_X,
            BIC_SR_W,
            BIC_SR_X,
            ORR_SR_W,
            ORR_SR_X,
            ORN_SR_W,
            ORN_SR_X,
            EOR_SR_W,
            EOR_SR_X,
            EON_SR_W,
            EON_SR_X,
            ANDS_SR_W,
            ANDS_SR_X,
            BICS_SR_W,
            BICS_SR_X,
            MOV_REG,   // a = Rd, b = Rn (64-bit copy; the MOV (register) alias of ORR X)
            MOV_REG_W, // a = Rd, b = Rn (32-bit copy, zero-extending)
            // conditional: e = cond
            CSEL_W,
            CSEL_X,
            CSINC_W,
            CSINC_X,
            CSINV_W,
            CSINV_X,
            CSNEG_W,
            CSNEG_X,
            // conditional compare: b = Rn, c = Rm (REG forms) or imm, e = cond, f = nzcv
            CCMP_REG_W,
            CCMP_REG_X,
            CCMN_REG_W,
            CCMN_REG_X,
            CCMP_IMM_W,
            CCMP_IMM_X,
            CCMN_IMM_W,
            CCMN_IMM_X,
            // multiply/divide: a = Rd, b = Rn, c = Rm, d = Ra
            MADD_W,
            MADD_X,
            MSUB_W,
            MSUB_X,
            SMADDL,
            SMSUBL,
            UMADDL,
            UMSUBL,
            SMULH,
            UMULH,
            SDIV_W,
            SDIV_X,
            UDIV_W,
            UDIV_X,
            LSLV_W,
            LSLV_X,
            LSRV_W,
            LSRV_X,
            ASRV_W,
            ASRV_X,
            RORV_W,
            RORV_X,
            // one source: a = Rd, b = Rn
            CLZ_W,
            CLZ_X,
            CLS_W,
            CLS_X,
            RBIT_W,
            RBIT_X,
            REV_W,
            REV_X,
            REV16_W,
            REV16_X,
            REV32_X,
            // CRC32{B,H,W,X} and CRC32C*: a = Rd, b = Rn (accumulator), c = Rm (data),
            // e = log2(data bytes), f = 1 for the Castagnoli polynomial
            CRC32,
            // --- loads and stores: a = Rt, b = Rn|SP, c = Rm, imm = offset, f = addr_mode, e = reg-offset extend
            LDR_B,
            LDR_H,
            LDR_W,
            LDR_X, // zero-extending
            LDRSB_W,
            LDRSB_X,
            LDRSH_W,
            LDRSH_X,
            LDRSW,
            STR_B,
            STR_H,
            STR_W,
            STR_X,
            // FP/SIMD register loads and stores, same addressing; a = Vt
            LDR_V8,
            LDR_V16,
            LDR_V32,
            LDR_V64,
            LDR_V128,
            STR_V8,
            STR_V16,
            STR_V32,
            STR_V64,
            STR_V128,
            // pairs: a = Rt, d = Rt2, b = Rn|SP, imm = offset, f = mode
            LDP_W,
            LDP_X,
            LDPSW,
            STP_W,
            STP_X,
            LDP_V32,
            LDP_V64,
            LDP_V128,
            STP_V32,
            STP_V64,
            STP_V128,
            // exclusives: e = log2(size); a = Rt, b = Rn, c = Rs (status), d = Rt2
            LDXR,
            STXR,
            LDXP,
            STXP,
            // LSE: e = log2(size), f = atomic operation (see atomic_op), a = Rt, b = Rn, c = Rs
            ATOMIC_RMW,
            CAS,  // c = Rs (compare, receives old), a = Rt (new value), b = Rn, e = log2(size)
            CASP, // c = Rs (even of pair), a = Rt (even of pair), b = Rn, e = log2(size)
            PRFM, // no-op, kept distinct for disassembly
        ]
    );
}

/// The operation of `ATOMIC_RMW` (field `f`), in the encoding's `opc` order, plus SWP.
pub mod atomic_op {
    pub const ADD: u8 = 0;
    pub const CLR: u8 = 1;
    pub const EOR: u8 = 2;
    pub const SET: u8 = 3;
    pub const SMAX: u8 = 4;
    pub const SMIN: u8 = 5;
    pub const UMAX: u8 = 6;
    pub const UMIN: u8 = 7;
    pub const SWP: u8 = 8;
}

// Both groups define a `NAMES` table; callers use `int::NAMES` / `ops_fp::NAMES` by path,
// the glob exports are for the operation numbers.
#[allow(ambiguous_glob_reexports)]
pub use int::*;

/// Floating point and AdvSIMD operations.
#[allow(ambiguous_glob_reexports)]
pub use crate::ops_fp::*;

/// The first number of the FP/SIMD range.
pub const FP_BASE: u16 = 0x400;

/// Every micro-op's name, for traces and for the kernels' generated headers.
pub fn name(op: u16) -> &'static str {
    all().find(|e| e.0 == op).map(|e| e.1).unwrap_or("?")
}

/// Every micro-op, with its name: the integer ones, then the FP/SIMD ones.
pub fn all() -> impl Iterator<Item = (u16, &'static str)> {
    int::NAMES
        .iter()
        .chain(crate::ops_fp::NAMES.iter())
        .copied()
}
