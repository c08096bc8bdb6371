// ------------------------------------------------------------------------------------------
// The integer micro-ops the interpreter's loop calls out for: the ops armada-semantics
// defines that real programs seldom run (every one but those of hot_ops.rs, which the loop's
// switch runs inline) and the system registers. Out of line (`__noinline__`), as ldst.cu's
// accesses, so that the loop's own code stays small: on lanes whose warps' lanes are at
// different micro-ops, the kernel's stalls were mostly instruction fetches across the loop's
// cases (docs/performance.md, "Where the kernel's time goes on Python lanes").
// ARMADA_COLD_INLINE (a variant to measure) inlines them again.
#ifdef ARMADA_COLD_INLINE
#define COLD_FN __forceinline__
#else
#define COLD_FN __noinline__
#endif

// A defined op the loop does not run inline; false: not one of them.
__device__ COLD_FN bool exec_cold(u64* x, u32& nzcv, u32 op, u32 a, u32 b, u32 c, u32 dr, u32 e, u32 f,
                                  u64 imm) {
    switch (op) {
// @include defined_cold.cu
    default: return false;
    }
    return true;
}

// MRS: the value of system register `imm`.
__device__ COLD_FN u64 sysreg_read(const u64* rec, u64 imm, u32 nzcv, u64 tpidr, u64 retired) {
    switch (imm) {
    case SYSREG_NZCV: return nzcv;
    case SYSREG_FPCR: return rec[S_FPCR];
    case SYSREG_FPSR: return rec[S_FPSR];
    case SYSREG_TPIDR_EL0: return tpidr;
    case SYSREG_CNTVCT_EL0:
    case SYSREG_CNTPCT_EL0: return retired;
    // (the registers whose read is a constant: armada_isa's sysreg::value::CONSTANT)
    SYSREG_CONSTANTS
    default: return 0;
    }
}

// MSR: system register `imm` set to `v` (the decoder leaves only these writable ones).
__device__ COLD_FN void sysreg_write(u64* rec, u64 imm, u64 v, u32& nzcv, u64& tpidr) {
    switch (imm) {
    case SYSREG_NZCV: nzcv = (u32)(v & 0xf0000000ull); break;
    case SYSREG_FPCR: rec[S_FPCR] = v & CONST_FPCR_MASK; break;
    case SYSREG_FPSR: rec[S_FPSR] = v & CONST_FPSR_MASK; break;
    default: tpidr = v; break;
    }
}
