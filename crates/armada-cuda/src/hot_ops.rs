//! Which of armada-semantics' defined micro-ops the kernel runs inline, in its interpreter
//! loop's `switch` (`kernel/interp.cu`); the others are cases of `exec_cold`
//! (`kernel/cold.cu`), a function the loop calls out of line. Shared by build.rs (which
//! writes the two sets of cases) and lib.rs (whose test checks every name).
//!
//! Why: on lanes of real programs, whose warps' lanes are seldom at the same micro-op, the
//! kernel's warps spent 42% of their stalls waiting for instructions to be fetched (Nsight
//! Compute on 4,096 Python lanes, docs/performance.md): the loop's switch jumps across the
//! code of every case. The ops below are those that ran at least 0.25% of the micro-ops of
//! any of gpu-check's real batches on the simulator (`ARMADA_SIM_DEFINES=ARMADA_STATS`: 8
//! python3 lanes from the snapshot at `input`, 8 of `go_channels`, 8 of the forking dash
//! script, 4 of sqlite3), which together ran them for 84-97% of their micro-ops; with the
//! loads, stores, branches and fused compares (hand-written in interp.cu) they are about
//! 97% of each. The rest of the defined ops, 84 of 115, are one call away.
pub const HOT: &[&str] = &[
    "ADD_IMM_X",
    "MOV_IMM",
    "MOV_REG",
    "ADD_SR_W",
    "ADD_SR_X",
    "UBFM_X",
    "MOV_REG_W",
    "AND_IMM_W",
    "ADD_IMM_W",
    "AND_IMM_X",
    "UBFM_W",
    "SUBS_EXT_X",
    "MADD_W",
    "SUB_SR_X",
    "LSRV_X",
    "ORR_SR_X",
    "ADDS_IMM_W",
    "ORR_SR_W",
    "AND_SR_W",
    "SBFM_X",
    "ORR_IMM_X",
    "SUBS_SR_X",
    "CCMP_IMM_W",
    "MOVK_X",
    "LSLV_X",
    "ANDS_IMM_X",
    "ADDS_IMM_X",
    "CSEL_X",
    "CSINC_X",
    "CCMP_REG_X",
    "SUB_SR_W",
];

/// Whether the kernel runs the defined op `name` inline.
pub fn inline(name: &str) -> bool {
    HOT.contains(&name)
}
