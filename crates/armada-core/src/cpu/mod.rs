//! The CPU engine: an interpreter over micro-ops.
//!
//! The loop runs inside one code region with the region's micro-op slice, its base address
//! and the slot index in locals; sequential flow is `idx += 1` and a branch inside the region
//! is an index computation. Leaving the region, the sentinel at its end, a slot not decoded
//! yet and a write to decoded code all go back to the outer loop, which finds the region
//! again. Nothing in the loop allocates or dispatches through a trait object.

pub mod code;
mod defined;
pub mod fp;
pub mod fused;
mod int;

pub use code::{CodeCache, DecodedPages};

use crate::coverage::{CmpLog, CoverageMap};
use crate::memory::{AddressSpace, Fault};
use crate::state::{CpuState, Stop, REG_FILE};
use armada_isa::ops::*;
use armada_isa::uop::{addr_mode, cond, sysreg, MicroOp};
use int::*;
// (what the ID and control registers read: one home in armada-isa, for every engine)
/// NZCV (bits 31..28) of a flag-setting add and of a logic result, as the interpreter
/// computes them (a tier that defers flags makes them with these).
pub use int::{add_with_flags32, add_with_flags64, logic_flags32, logic_flags64};
use sysreg::value::{FPCR_MASK, FPSR_MASK, ZVA_BYTES};

/// Another way to run a lane's code: the translation tier (`armada-jit`) is one. It runs
/// exactly what the interpreter runs (same stops, registers, memory and instruction count),
/// and may hand any part of the work to [`interpret`] or [`interpret_step`].
pub trait Tier: Send + Sync {
    /// [`run`]'s contract.
    fn run(
        &self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut CodeCache,
        budget: u64,
    ) -> Stop;
    /// A short name for messages and statistics ("jit").
    fn name(&self) -> &'static str;
}

static DEFAULT_TIER: std::sync::RwLock<Option<std::sync::Arc<dyn Tier>>> =
    std::sync::RwLock::new(None);

/// Sets the tier every code cache made from now on runs with (None: the interpreter).
/// Front ends call this once, from `--tier` or `ARMADA_TIER`.
pub fn set_default_tier(tier: Option<std::sync::Arc<dyn Tier>>) {
    if let Ok(mut t) = DEFAULT_TIER.write() {
        *t = tier;
    }
}

/// The tier new code caches run with.
pub fn default_tier() -> Option<std::sync::Arc<dyn Tier>> {
    DEFAULT_TIER.read().ok().and_then(|t| t.clone())
}

/// Runs the lane until it stops or has retired `budget` more instructions, on the code
/// cache's tier (the interpreter when it has none).
pub fn run(st: &mut CpuState, mem: &mut AddressSpace, code: &mut CodeCache, budget: u64) -> Stop {
    if let Some(t) = code.tier.clone() {
        return t.run(st, mem, code, budget);
    }
    interpret(st, mem, code, budget)
}

/// [`run`] on the interpreter, whatever the cache's tier.
pub fn interpret(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
) -> Stop {
    run_with::<false, false>(st, mem, code, budget, None, None)
}

/// [`interpret`], returning also (with `Stop::Budget` and budget left) after the first
/// taken branch backwards or call, the places a tier counts to find hot code.
pub fn interpret_step(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
) -> Stop {
    run_with_step::<true>(st, mem, code, budget)
}

/// Runs one FP/AdvSIMD micro-op (op number from `FP_BASE` on) on `st` and `mem`, as the
/// interpreter does; the caller advances the PC.
pub fn exec_fp_op(st: &mut CpuState, mem: &mut AddressSpace, u: &MicroOp) -> Result<(), Fault> {
    fp::exec_fp(st, mem, u)
}

#[inline(always)]
fn run_with_step<const STEP: bool>(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
) -> Stop {
    run_with_mode::<false, false, STEP>(st, mem, code, budget, None, None)
}

/// [`run`], recording every branch's edge into `cov` (see [`crate::coverage`]). A separate
/// instantiation of the loop, so runs without coverage pay nothing for it.
pub fn run_covered(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
    cov: &mut CoverageMap,
) -> Stop {
    run_with::<true, false>(st, mem, code, budget, Some(cov), None)
}

/// [`run`], recording edges into `cov` (when given) and the operands of every compare into
/// `cmp` (see [`crate::coverage::CmpLog`]): the fuzzer's tracing runs.
pub fn run_traced(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
    cov: Option<&mut CoverageMap>,
    cmp: &mut CmpLog,
) -> Stop {
    run_with::<true, true>(st, mem, code, budget, cov, Some(cmp))
}

#[inline(always)]
fn run_with<const COV: bool, const CMP: bool>(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
    cov: Option<&mut CoverageMap>,
    cmp: Option<&mut CmpLog>,
) -> Stop {
    run_with_mode::<COV, CMP, false>(st, mem, code, budget, cov, cmp)
}

#[inline(always)]
fn run_with_mode<const COV: bool, const CMP: bool, const STEP: bool>(
    st: &mut CpuState,
    mem: &mut AddressSpace,
    code: &mut CodeCache,
    budget: u64,
    mut cov: Option<&mut CoverageMap>,
    mut cmp: Option<&mut CmpLog>,
) -> Stop {
    let limit = st.retired.saturating_add(budget);
    'outer: loop {
        if st.pc & 3 != 0 {
            return Stop::Fault(Fault {
                addr: st.pc,
                access: crate::memory::Access::Execute,
                mapped: true,
            });
        }
        let ri = match code.region_for(st.pc, mem) {
            Ok(i) => i,
            Err(f) => return Stop::Fault(f),
        };
        let (base, len_bytes) = {
            let r = code.region(ri);
            (r.base, r.end - r.base)
        };
        let mut idx = ((st.pc - base) >> 2) as usize;
        let mut retired = st.retired;
        let (ops, ran) = code.region_ran(ri);

        // For a tier (STEP): a block began at slot `i` (see `Region::ran`).
        macro_rules! mark_ran {
            ($i:expr) => {
                if STEP {
                    let i: usize = $i;
                    if let Some(w) = ran.get_mut(i / 64) {
                        *w |= 1 << (i % 64);
                    }
                }
            };
        }
        // Leaves the inner loop with the PC at slot `idx`.
        macro_rules! pc_of {
            ($i:expr) => {
                base + (($i) as u64) * 4
            };
        }
        macro_rules! exit {
            ($stop:expr) => {{
                st.retired = retired;
                return $stop;
            }};
        }
        macro_rules! fault {
            ($f:expr) => {{
                st.pc = pc_of!(idx);
                exit!(Stop::Fault($f))
            }};
        }
        macro_rules! jump {
            ($target:expr) => {{
                let t: u64 = $target;
                retired += 1;
                if STEP && t <= pc_of!(idx) {
                    st.pc = t;
                    exit!(Stop::Budget);
                }
                let off = t.wrapping_sub(base);
                if off < len_bytes && t & 3 == 0 {
                    idx = (off >> 2) as usize;
                    mark_ran!(idx);
                    continue;
                }
                st.pc = t;
                st.retired = retired;
                continue 'outer;
            }};
        }
        // A branch from slot `idx`: its edge, then the jump.
        macro_rules! branch {
            ($target:expr) => {{
                let t: u64 = $target;
                if COV {
                    if let Some(m) = cov.as_deref_mut() {
                        m.hit(pc_of!(idx), t);
                    }
                }
                jump!(t)
            }};
        }
        // A flag-setting add of `bits` bits: its operands, for CmpLog.
        macro_rules! cmp_log {
            ($a:expr, $b:expr, $carry:expr, $bits:expr) => {
                if CMP {
                    if let Some(l) = cmp.as_deref_mut() {
                        l.flags($a as u64, $b as u64, $carry as u64, $bits);
                    }
                }
            };
        }
        // Flag-setting adds (compares): logged under CmpLog (not ADCS/SBCS: not compares).
        macro_rules! af32 {
            ($a:expr, $b:expr, $c:expr) => {{
                let (a32, b32, c32): (u32, u32, u32) = ($a, $b, $c);
                cmp_log!(a32, b32, c32, 32);
                add_with_flags32(a32, b32, c32)
            }};
        }
        macro_rules! af64 {
            ($a:expr, $b:expr, $c:expr) => {{
                let (a64, b64, c64): (u64, u64, u64) = ($a, $b, $c);
                cmp_log!(a64, b64, c64, 64);
                add_with_flags64(a64, b64, c64)
            }};
        }
        // A conditional branch at slot `idx` that falls through.
        macro_rules! not_taken {
            () => {
                mark_ran!(idx + 1);
                if COV {
                    if let Some(m) = cov.as_deref_mut() {
                        m.hit(pc_of!(idx), pc_of!(idx + 1));
                    }
                }
            };
        }
        macro_rules! mem_try {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(f) => fault!(f),
                }
            };
        }
        // After a store: if it hit decoded code, continue through the outer loop so the
        // region's stale slots are decoded again.
        macro_rules! after_store {
            () => {
                if mem.has_code_write() {
                    retired += 1;
                    st.pc = pc_of!(idx + 1);
                    st.retired = retired;
                    continue 'outer;
                }
            };
        }

        mark_ran!(idx);

        loop {
            if retired >= limit {
                st.pc = pc_of!(idx);
                exit!(Stop::Budget);
            }
            // By reference, not a copy: a copied `MicroOp` went through the stack (a 16-byte
            // store, then each field loaded back from it), which cost this loop 10-35% on every
            // `armada bench` program (docs/performance.md, "The interpreter's dispatch").
            debug_assert!(idx < ops.len());
            // SAFETY: `idx` is in bounds. A region's slots are its words plus the
            // END_OF_REGION sentinel (`CodeCache`), and `idx` only ever (a) starts at a PC
            // `region_for` found in the region, (b) jumps to an offset below its length, or
            // (c) steps past a slot that is not the sentinel (whose arm leaves the loop), or
            // past a fused compare's B.cond, which is in the compare's page and so not the
            // sentinel either (`decode_page` fuses pairs within a page).
            let u = unsafe { ops.get_unchecked(idx) };
            let x = &mut st.x;
            let (a, b, c, d) = (
                u.a as usize & 63,
                u.b as usize & 63,
                u.c as usize & 63,
                u.d as usize & 63,
            );
            // (the arms of the ops armada-semantics defines come first: `defined`)
            defined::match_with_defined!(
                (x, st.nzcv, a, b, c, d, cmp_log),
                match u.op {
                    NOT_DECODED => {
                        st.retired = retired;
                        if let Err(f) = code.decode_page(ri, idx, mem) {
                            st.pc = pc_of!(idx);
                            return Stop::Fault(f);
                        }
                        st.pc = pc_of!(idx);
                        continue 'outer;
                    }
                    END_OF_REGION => {
                        st.pc = pc_of!(idx);
                        st.retired = retired;
                        continue 'outer;
                    }
                    UNDEFINED => {
                        st.pc = pc_of!(idx);
                        exit!(Stop::Undefined(u.imm as u32));
                    }
                    NOP | PRFM | MSR_NZCV_IMM => {}
                    SVC => {
                        st.pc = pc_of!(idx + 1);
                        retired += 1;
                        exit!(Stop::Syscall);
                    }
                    HLT => {
                        st.pc = pc_of!(idx + 1);
                        retired += 1;
                        exit!(Stop::Halt(u.imm as u16));
                    }
                    BRK => {
                        st.pc = pc_of!(idx);
                        exit!(Stop::Breakpoint(u.imm as u16));
                    }

                    // ----- branches
                    B => branch!(u.imm),
                    BL => {
                        x[30] = pc_of!(idx + 1);
                        if STEP {
                            retired += 1;
                            st.pc = u.imm;
                            exit!(Stop::Budget);
                        }
                        branch!(u.imm)
                    }
                    BR => branch!(x[b]),
                    BLR => {
                        let t = x[b];
                        x[30] = pc_of!(idx + 1);
                        if STEP {
                            retired += 1;
                            st.pc = t;
                            exit!(Stop::Budget);
                        }
                        branch!(t)
                    }
                    B_COND => {
                        if cond::check(u.e, st.nzcv) {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    CBZ_W => {
                        if x[b] as u32 == 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    CBZ_X => {
                        if x[b] == 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    CBNZ_W => {
                        if x[b] as u32 != 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    CBNZ_X => {
                        if x[b] != 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    TBZ => {
                        if (x[b] >> u.e) & 1 == 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }
                    TBNZ => {
                        if (x[b] >> u.e) & 1 != 0 {
                            branch!(u.imm)
                        } else {
                            not_taken!();
                        }
                    }

                    // ----- system
                    MRS => {
                        let v = match u.imm {
                            sysreg::NZCV => st.nzcv,
                            sysreg::FPCR => st.fpcr,
                            sysreg::FPSR => st.fpsr,
                            sysreg::TPIDR_EL0 => st.tpidr,
                            sysreg::CNTVCT_EL0 | sysreg::CNTPCT_EL0 => retired,
                            id => sysreg::value::constant(id).unwrap_or(0),
                        };
                        st.x[a] = v;
                    }
                    MSR => {
                        let v = x[b];
                        match u.imm {
                            sysreg::NZCV => st.nzcv = v & 0xf000_0000,
                            sysreg::FPCR => st.fpcr = v & FPCR_MASK,
                            sysreg::FPSR => st.fpsr = v & FPSR_MASK,
                            _ => st.tpidr = v,
                        }
                    }
                    CLREX => st.excl_addr = u64::MAX,
                    DC_ZVA => {
                        let addr = x[b] & !(ZVA_BYTES - 1);
                        mem_try!(mem.zero::<{ ZVA_BYTES as usize }>(addr));
                        after_store!();
                    }

                    // ----- loads and stores
                    LDR_B | LDR_H | LDR_W | LDR_X | LDRSB_W | LDRSB_X | LDRSH_W | LDRSH_X
                    | LDRSW => {
                        let addr = ea(x, &u);
                        let v = match u.op {
                            LDR_B => mem_try!(mem.read_u8(addr)) as u64,
                            LDR_H => mem_try!(mem.read_u16(addr)) as u64,
                            LDR_W => mem_try!(mem.read_u32(addr)) as u64,
                            LDR_X => mem_try!(mem.read_u64(addr)),
                            LDRSB_W => mem_try!(mem.read_u8(addr)) as i8 as u32 as u64,
                            LDRSB_X => mem_try!(mem.read_u8(addr)) as i8 as u64,
                            LDRSH_W => mem_try!(mem.read_u16(addr)) as i16 as u32 as u64,
                            LDRSH_X => mem_try!(mem.read_u16(addr)) as i16 as u64,
                            _ => mem_try!(mem.read_u32(addr)) as i32 as u64,
                        };
                        writeback(x, &u, addr);
                        x[a] = v;
                    }
                    STR_B | STR_H | STR_W | STR_X => {
                        let addr = ea(x, &u);
                        let v = x[a];
                        match u.op {
                            STR_B => mem_try!(mem.write_u8(addr, v as u8)),
                            STR_H => mem_try!(mem.write_u16(addr, v as u16)),
                            STR_W => mem_try!(mem.write_u32(addr, v as u32)),
                            _ => mem_try!(mem.write_u64(addr, v)),
                        }
                        writeback(x, &u, addr);
                        after_store!();
                    }
                    LDR_V8 | LDR_V16 | LDR_V32 | LDR_V64 | LDR_V128 => {
                        let addr = ea(x, &u);
                        let v = match u.op {
                            LDR_V8 => mem_try!(mem.read_u8(addr)) as u128,
                            LDR_V16 => mem_try!(mem.read_u16(addr)) as u128,
                            LDR_V32 => mem_try!(mem.read_u32(addr)) as u128,
                            LDR_V64 => mem_try!(mem.read_u64(addr)) as u128,
                            _ => mem_try!(mem.read_u128(addr)),
                        };
                        writeback(x, &u, addr);
                        st.v[a & 31] = v;
                    }
                    STR_V8 | STR_V16 | STR_V32 | STR_V64 | STR_V128 => {
                        let addr = ea(x, &u);
                        let v = st.v[a & 31];
                        match u.op {
                            STR_V8 => mem_try!(mem.write_u8(addr, v as u8)),
                            STR_V16 => mem_try!(mem.write_u16(addr, v as u16)),
                            STR_V32 => mem_try!(mem.write_u32(addr, v as u32)),
                            STR_V64 => mem_try!(mem.write_u64(addr, v as u64)),
                            _ => mem_try!(mem.write_u128(addr, v)),
                        }
                        writeback(&mut st.x, &u, addr);
                        after_store!();
                    }
                    LDP_W | LDPSW => {
                        let addr = ea(x, &u);
                        let v1 = mem_try!(mem.read_u32(addr));
                        let v2 = mem_try!(mem.read_u32(addr.wrapping_add(4)));
                        writeback(x, &u, addr);
                        if u.op == LDPSW {
                            x[a] = v1 as i32 as u64;
                            x[d] = v2 as i32 as u64;
                        } else {
                            x[a] = v1 as u64;
                            x[d] = v2 as u64;
                        }
                    }
                    LDP_X => {
                        let addr = ea(x, &u);
                        let v: [u8; 16] = mem_try!(mem.read(addr));
                        writeback(x, &u, addr);
                        x[a] = u64::from_le_bytes(v[..8].try_into().unwrap());
                        x[d] = u64::from_le_bytes(v[8..].try_into().unwrap());
                    }
                    STP_W => {
                        let addr = ea(x, &u);
                        let v = (x[a] & 0xffff_ffff) | (x[d] << 32);
                        mem_try!(mem.write_u64(addr, v));
                        writeback(x, &u, addr);
                        after_store!();
                    }
                    STP_X => {
                        let addr = ea(x, &u);
                        let v = (x[a] as u128) | ((x[d] as u128) << 64);
                        mem_try!(mem.write_u128(addr, v));
                        writeback(x, &u, addr);
                        after_store!();
                    }
                    LDP_V32 | LDP_V64 | LDP_V128 => {
                        let addr = ea(x, &u);
                        let (v1, v2) = match u.op {
                            LDP_V32 => (
                                mem_try!(mem.read_u32(addr)) as u128,
                                mem_try!(mem.read_u32(addr.wrapping_add(4))) as u128,
                            ),
                            LDP_V64 => (
                                mem_try!(mem.read_u64(addr)) as u128,
                                mem_try!(mem.read_u64(addr.wrapping_add(8))) as u128,
                            ),
                            _ => (
                                mem_try!(mem.read_u128(addr)),
                                mem_try!(mem.read_u128(addr.wrapping_add(16))),
                            ),
                        };
                        writeback(x, &u, addr);
                        st.v[a & 31] = v1;
                        st.v[d & 31] = v2;
                    }
                    STP_V32 | STP_V64 | STP_V128 => {
                        let addr = ea(x, &u);
                        let (v1, v2) = (st.v[a & 31], st.v[d & 31]);
                        match u.op {
                            STP_V32 => {
                                mem_try!(mem.write_u64(
                                    addr,
                                    (v1 as u32 as u64) | ((v2 as u32 as u64) << 32)
                                ))
                            }
                            STP_V64 => mem_try!(mem.write_u128(
                                addr,
                                (v1 as u64 as u128) | ((v2 as u64 as u128) << 64)
                            )),
                            _ => {
                                let mut buf = [0u8; 32];
                                buf[..16].copy_from_slice(&v1.to_le_bytes());
                                buf[16..].copy_from_slice(&v2.to_le_bytes());
                                mem_try!(mem.write_bytes(addr, &buf))
                            }
                        }
                        writeback(&mut st.x, &u, addr);
                        after_store!();
                    }
                    LDXR => {
                        let addr = x[b];
                        let v = mem_try!(load_sized(mem, addr, u.e));
                        x[a] = v;
                        st.excl_addr = addr;
                    }
                    LDXP => {
                        let addr = x[b];
                        if u.e == 2 {
                            let v = mem_try!(mem.read_u64(addr));
                            x[a] = v & 0xffff_ffff;
                            x[d] = v >> 32;
                        } else {
                            let v = mem_try!(mem.read_u128(addr));
                            x[a] = v as u64;
                            x[d] = (v >> 64) as u64;
                        }
                        st.excl_addr = addr;
                    }
                    STXR | STXP => {
                        let addr = x[b];
                        if st.excl_addr == addr {
                            if u.op == STXR {
                                mem_try!(store_sized(mem, addr, u.e, x[a]));
                            } else if u.e == 2 {
                                mem_try!(mem.write_u64(addr, (x[a] & 0xffff_ffff) | (x[d] << 32)));
                            } else {
                                mem_try!(
                                    mem.write_u128(addr, (x[a] as u128) | ((x[d] as u128) << 64))
                                );
                            }
                            st.x[c] = 0;
                        } else {
                            // The store is checked even when it fails, as a real STXR would
                            // fault on a bad address.
                            mem_try!(load_sized(mem, addr, u.e));
                            st.x[c] = 1;
                        }
                        st.excl_addr = u64::MAX;
                        after_store!();
                    }
                    ATOMIC_RMW => {
                        let addr = x[b];
                        let old = mem_try!(load_sized(mem, addr, u.e));
                        let new = atomic_apply(u.f, u.e, old, x[c]);
                        mem_try!(store_sized(mem, addr, u.e, new));
                        st.x[a] = old;
                        after_store!();
                    }
                    CAS => {
                        let addr = x[b];
                        let old = mem_try!(load_sized(mem, addr, u.e));
                        let mask = size_mask(u.e);
                        if old == x[c] & mask {
                            mem_try!(store_sized(mem, addr, u.e, x[a]));
                        } else {
                            // CAS always needs write access, even when the comparison fails.
                            mem_try!(store_sized(mem, addr, u.e, old));
                        }
                        st.x[d] = old;
                        after_store!();
                    }
                    CASP => {
                        let addr = x[b];
                        let (s0, s1, t0, t1) = (c, c + 1, a, a + 1);
                        let rd = |r: usize| if r == 31 { 0 } else { st.x[r] };
                        let (cmp0, cmp1, new0, new1) = (rd(s0), rd(s1), rd(t0), rd(t1));
                        let (old0, old1) = if u.e == 2 {
                            let v = mem_try!(mem.read_u64(addr));
                            (v & 0xffff_ffff, v >> 32)
                        } else {
                            let v = mem_try!(mem.read_u128(addr));
                            (v as u64, (v >> 64) as u64)
                        };
                        let mask = size_mask(u.e);
                        let equal = old0 == cmp0 & mask && old1 == cmp1 & mask;
                        let (w0, w1) = if equal {
                            (new0 & mask, new1 & mask)
                        } else {
                            (old0, old1)
                        };
                        if u.e == 2 {
                            mem_try!(mem.write_u64(addr, w0 | (w1 << 32)));
                        } else {
                            mem_try!(mem.write_u128(addr, (w0 as u128) | ((w1 as u128) << 64)));
                        }
                        if s0 != 31 {
                            st.x[s0] = old0;
                        }
                        if s1 < 31 {
                            st.x[s1] = old1;
                        }
                        after_store!();
                    }

                    // ----- CPU-engine-only forms (see `fused`)
                    fused::SHIFT_PAIR_U => x[a] = (x[b] << u.e) >> u.f,
                    fused::SHIFT_PAIR_S_X => x[a] = (((x[b] << u.e) as i64) >> u.f) as u64,
                    fused::SHIFT_PAIR_S_W => {
                        x[a] = ((((x[b] << u.e) as i64) >> u.f) as u64) & 0xffff_ffff
                    }
                    // ----- compare + B.cond pairs (CPU engine only, see `fused`)
                    fused::ADDS_IMM_W_BCOND
                    | fused::ADDS_IMM_X_BCOND
                    | fused::SUBS_SR_W_BCOND
                    | fused::SUBS_SR_X_BCOND => {
                        let (r, f) = match u.op {
                            fused::ADDS_IMM_W_BCOND => {
                                let (r, f) = af32!(x[b] as u32, u.imm as u32, u.e as u32);
                                (r as u64, f)
                            }
                            fused::ADDS_IMM_X_BCOND => af64!(x[b], u.imm, u.e as u64),
                            fused::SUBS_SR_W_BCOND => {
                                let (r, f) = af32!(x[b] as u32, !shift32(x[c] as u32, u.e, u.f), 1);
                                (r as u64, f)
                            }
                            _ => af64!(x[b], !shift64(x[c], u.e, u.f), 1),
                        };
                        x[a] = r;
                        st.nzcv = f;
                        // Run the branch in the same dispatch when the budget has room for both;
                        // otherwise only the compare retires here and the branch runs alone.
                        if retired + 1 < limit {
                            let br = ops[idx + 1];
                            retired += 1;
                            idx += 1;
                            if cond::check(br.e, f) {
                                branch!(br.imm)
                            }
                            not_taken!();
                        }
                    }

                    // ----- FP and AdvSIMD
                    op if op >= FP_BASE => {
                        if let Err(f) = fp::exec_fp(st, mem, &u) {
                            fault!(f);
                        }
                        if mem.has_code_write() {
                            retired += 1;
                            st.pc = pc_of!(idx + 1);
                            st.retired = retired;
                            continue 'outer;
                        }
                    }
                    _ => {
                        st.pc = pc_of!(idx);
                        exit!(Stop::Undefined(0));
                    }
                }
            );
            idx += 1;
            retired += 1;
        }
    }
}

#[inline(always)]
fn ea(x: &[u64; REG_FILE], u: &MicroOp) -> u64 {
    match u.f {
        addr_mode::OFFSET | addr_mode::PRE => x[u.b as usize & 63].wrapping_add(u.imm),
        addr_mode::POST => x[u.b as usize & 63],
        _ => x[u.b as usize & 63].wrapping_add(extend(x[u.c as usize & 63], u.e >> 3, u.e & 7)),
    }
}

#[inline(always)]
fn writeback(x: &mut [u64; REG_FILE], u: &MicroOp, addr: u64) {
    match u.f {
        addr_mode::PRE => x[u.b as usize & 63] = addr,
        addr_mode::POST => x[u.b as usize & 63] = addr.wrapping_add(u.imm),
        _ => {}
    }
}
