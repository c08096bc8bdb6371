//! FP and AdvSIMD execution: every micro-op of the `ops::FP_BASE` range.
//!
//! Field conventions are those of `armada_isa::ops_fp` (re-exported from `ops`): `e` is log2
//! of the element size in bytes, `f` log2 of the bytes operated on (or the part of a widening
//! or narrowing op), and every write of a result replaces the whole 128-bit register, so the
//! bits above the operated size are zero as the architecture requires.
//!
//! FPCR.RMode, FZ, DN and AHP are honoured (see `float`), and the FPSR cumulative exception
//! flags (IOC, DZC, OFC, UFC, IXC, IDC) and FPSR.QC (saturation) are set as on hardware.

mod elements;
mod float;
mod lanes;
mod ldst;
mod soft;

use crate::memory::{AddressSpace, Fault};
use crate::state::CpuState;
use armada_isa::ops::*;
use armada_isa::uop::{cond, MicroOp};
use float::{Ctx, Float};
use lanes::*;

/// FPSR.QC, the cumulative saturation bit.
use armada_isa::uop::sysreg::value::FPSR_QC as QC;

/// The FPSR cumulative exception flags (IDC, IXC, UFC, OFC, DZC, IOC).
const EXC: u32 = 0x9f;

/// Whether the FP/AdvSIMD op `op` reads or writes general registers (`.0`: moves between
/// the register files, conversions to and from integers, structure loads and stores, whose
/// base and index are general registers) or NZCV (`.1`: FCMP, FCCMP, FCSEL). Every other
/// op touches only vector registers, FPCR/FPSR and memory, so a tier that keeps general
/// registers and flags elsewhere needs to hand them over only around these. Keep in step
/// with `exec_fp` (the translation tier's differential tests run both kinds).
pub fn touches_general(op: u16) -> (bool, bool) {
    let gen = matches!(
        op,
        V_DUP_GEN
            | V_INS_GEN
            | V_UMOV
            | V_SMOV
            | F_TO_INT
            | INT_TO_F
            | V_LD_MULTI
            | V_ST_MULTI
            | V_LD_SINGLE
            | V_ST_SINGLE
            | V_LD_REPL
    );
    (gen, matches!(op, F_CMP | F_CCMP | F_CSEL))
}

/// FPCR's bits under which FP arithmetic runs on the host's IEEE arithmetic, when all are
/// clear: RMode (round to nearest) and FZ. For a tier that inlines that path.
pub const HOST_FPCR_MASK: u64 = 0b111 << 22;

/// FPSR's cumulative Inexact flag.
pub const FPSR_IXC: u64 = soft::IXC as u64;

/// For element size `e` (2: single, 3: double), the bit patterns `[lo, hi)` of the result
/// magnitudes of FMUL, FDIV, FNMUL and the fused multiply-adds, as the host computes them
/// under [`HOST_FPCR_MASK`], that can raise no exception but Inexact (the interpreter's
/// fast path, `float::safe`); for FADD and FSUB every finite result, `[0, hi)`. With
/// [`FPSR_IXC`] already set such a result changes nothing else: a tier may take the host's
/// answer and leave FPSR alone.
pub fn host_result_range(e: u8, sum: bool) -> (u64, u64) {
    fn range<F: Float>(sum: bool) -> (u64, u64) {
        (if sum { 0 } else { F::SAFE_MIN }, F::INF)
    }
    if e == 2 {
        range::<f32>(sum)
    } else {
        range::<f64>(sum)
    }
}

/// Executes one FP/AdvSIMD micro-op. The caller advances the PC.
pub(crate) fn exec_fp(st: &mut CpuState, mem: &mut AddressSpace, u: &MicroOp) -> Result<(), Fault> {
    let (a, b, c) = (u.a as usize, u.b as usize, u.c as usize);
    let (d, e, f) = (u.d, u.e, u.f);
    let mut qc = false;
    let cx = Ctx::from_fpcr(st.fpcr);
    // The exception flags: those already set, and those the op raises. Knowing the sticky
    // ones lets the fast paths skip working out Inexact once it is set.
    let mut fl = st.fpsr as u32 & EXC;

    // FP op on one or two bit patterns, by element size.
    // (the arms of the element functions armada-semantics defines come first: `elements`)
    elements::match_with_elements!(
        (st, u, e, qc, cx, fl),
        match u.op {
            // ------------------------------------------------------------ moves and copies
            V_MOVI => {
                st.v[a] = if f >= 4 {
                    (u.imm as u128) | ((u.imm as u128) << 64)
                } else {
                    u.imm as u128 & datamask(f)
                };
            }
            V_ORR_IMM | V_AND_IMM => {
                let imm = (u.imm as u128) | ((u.imm as u128) << 64);
                let r = if u.op == V_ORR_IMM {
                    st.v[a] | imm
                } else {
                    st.v[a] & imm
                };
                st.v[a] = r & datamask(f);
            }
            V_DUP_ELEM => {
                let x = get(st.v[b], e, u.imm as usize);
                st.v[a] = broadcast(x, e) & datamask(f);
            }
            V_DUP_GEN => {
                let x = st.x[b];
                st.v[a] = broadcast(x, e) & datamask(f);
            }
            V_INS_ELEM => {
                let x = get(st.v[b], e, d as usize);
                set(&mut st.v[a], e, u.imm as usize, x);
            }
            V_INS_GEN => {
                let x = st.x[b];
                set(&mut st.v[a], e, u.imm as usize, x);
            }
            V_UMOV => {
                st.x[a] = get(st.v[b], e, u.imm as usize);
            }
            V_SMOV => {
                let s = sx(get(st.v[b], e, u.imm as usize), e);
                st.x[a] = if f == 1 { s as u64 } else { s as u32 as u64 };
            }
            V_EXT => {
                let n = bytes(st.v[b]);
                let m = bytes(st.v[c]);
                let ds = 1usize << f;
                let mut out = [0u8; 16];
                for (i, o) in out.iter_mut().enumerate().take(ds) {
                    let j = u.imm as usize + i;
                    *o = if j < ds { n[j] } else { m[j - ds] };
                }
                st.v[a] = from_bytes(out);
            }
            V_TBL => {
                let regs = d as usize;
                let mut table = [0u8; 64];
                for r in 0..regs {
                    table[16 * r..16 * r + 16].copy_from_slice(&bytes(st.v[(b + r) % 32]));
                }
                let idx = bytes(st.v[c]);
                let old = bytes(st.v[a]);
                let mut out = [0u8; 16];
                for i in 0..(1usize << f) {
                    let j = idx[i] as usize;
                    out[i] = if j < 16 * regs {
                        table[j]
                    } else if e == 1 {
                        old[i]
                    } else {
                        0
                    };
                }
                st.v[a] = from_bytes(out);
            }
            V_UZP | V_ZIP | V_TRN => {
                let (n, m) = (st.v[b], st.v[c]);
                let cnt = 1usize << (f - e);
                let part = d as usize;
                let half = cnt / 2;
                let mut r = 0u128;
                for i in 0..cnt {
                    let x = match u.op {
                        V_UZP => {
                            let j = 2 * i + part;
                            if j < cnt {
                                get(n, e, j)
                            } else {
                                get(m, e, j - cnt)
                            }
                        }
                        V_ZIP => {
                            let j = part * half + i / 2;
                            get(if i & 1 == 0 { n } else { m }, e, j)
                        }
                        _ => {
                            let j = (i & !1) + part;
                            get(if i & 1 == 0 { n } else { m }, e, j)
                        }
                    };
                    set(&mut r, e, i, x);
                }
                st.v[a] = r;
            }

            // ------------------------------------------------------------ integer, element-wise
            // (ADD, SUB, MUL, MLA, MLS, the compares, MAX, MIN, ABD, the halving
            // adds, SQADD ... UQSUB, SQDMULH, CMP0, NEG, ABS, SQABS, SQNEG, CNT, CLZ, CLS,
            // RBIT, SHL, SHR, SQSHL (immediate), SLI, SRI: `elements`)
            V_AND | V_BIC | V_ORR | V_ORN | V_EOR | V_BSL | V_BIT | V_BIF => {
                let (n, m, old) = (st.v[b], st.v[c], st.v[a]);
                let r = match u.op {
                    V_AND => n & m,
                    V_BIC => n & !m,
                    V_ORR => n | m,
                    V_ORN => n | !m,
                    V_EOR => n ^ m,
                    V_BSL => (old & n) | (!old & m),
                    V_BIT => (old & !m) | (n & m),
                    _ => (old & m) | (n & !m),
                };
                st.v[a] = r & datamask(f);
            }
            V_NOT => st.v[a] = !st.v[b] & datamask(f),
            V_REV => {
                let n = bytes(st.v[b]);
                let mut out = [0u8; 16];
                let cmask = (1usize << d) - 1;
                let emask = (1usize << e) - 1;
                for (p, o) in out.iter_mut().enumerate().take(1usize << f) {
                    let k = (p & cmask) >> e;
                    let per = 1usize << (d - e);
                    let src = (p & !cmask) | ((per - 1 - k) << e) | (p & emask);
                    *o = n[src];
                }
                st.v[a] = from_bytes(out);
            }
            V_ADDLP => {
                let uns = d & 1 != 0;
                let acc = d & 2 != 0;
                let (n, old) = (st.v[b], st.v[a]);
                let cnt = (1usize << f) >> (e + 1);
                let mut r = 0u128;
                for i in 0..cnt {
                    let mut s = int(get(n, e, 2 * i), e, uns) + int(get(n, e, 2 * i + 1), e, uns);
                    if acc {
                        s += get(old, e + 1, i) as i128;
                    }
                    set(&mut r, e + 1, i, s as u64);
                }
                st.v[a] = r;
            }
            V_URECPE => map1(st, u, |x| float::urecpe(x as u32) as u64),
            V_URSQRTE => map1(st, u, |x| float::ursqrte(x as u32) as u64),

            // (SHRN, XTN and their saturating forms, ADDHN, SUBHN: armada-semantics, as
            // narrowing element functions)
            V_PMULL => {
                let (n, m) = (st.v[b], st.v[c]);
                if e == 3 {
                    st.v[a] = clmul(get(n, 3, f as usize), get(m, 3, f as usize));
                } else {
                    let base = 8 * f as usize;
                    let mut r = 0u128;
                    for i in 0..8 {
                        let p = clmul(get(n, 0, base + i), get(m, 0, base + i));
                        set(&mut r, 1, i, p as u64);
                    }
                    st.v[a] = r;
                }
            }

            // ------------------------------------------------------------ FP, element-wise
            // (FADD ... FACGT, FSQRT and the estimates: armada-semantics' FP element
            // functions, fp_data_processing.rs)
            F_CMP0 => map1(st, u, |x| {
                let t = if e == 2 {
                    fcmp0::<f32>(x, d, cx, &mut fl)
                } else {
                    fcmp0::<f64>(x, d, cx, &mut fl)
                };
                mask_if(t)
            }),
            F_MADD | F_MSUB | F_NMADD | F_NMSUB => {
                let sign = if e == 2 { 1u64 << 31 } else { 1u64 << 63 };
                // negations of the addend and of the first factor
                let (neg_a, neg_n) = match u.op {
                    F_MADD => (0, 0),
                    F_MSUB => (0, sign),
                    F_NMADD => (sign, sign),
                    _ => (sign, 0),
                };
                let addend = st.v[d as usize];
                let (n, m) = (st.v[b], opnd_m(st, u));
                let cnt = 1usize << (f - e);
                let mut r = 0u128;
                for i in 0..cnt {
                    let (x, y, z) = (
                        get(addend, e, i) ^ neg_a,
                        get(n, e, i) ^ neg_n,
                        get(m, e, i),
                    );
                    let v = if e == 2 {
                        float::muladd::<f32>(x, y, z, cx, &mut fl)
                    } else {
                        float::muladd::<f64>(x, y, z, cx, &mut fl)
                    };
                    set(&mut r, e, i, v);
                }
                st.v[a] = r;
            }
            F_ABS => map1(st, u, |x| {
                if e == 2 {
                    float::abs::<f32>(x)
                } else {
                    float::abs::<f64>(x)
                }
            }),
            F_NEG => map1(st, u, |x| {
                if e == 2 {
                    float::neg::<f32>(x)
                } else {
                    float::neg::<f64>(x)
                }
            }),
            F_RINT => {
                let exact = d == rmode::FPCR_EXACT;
                let mode = if d == rmode::FPCR || exact {
                    ((st.fpcr >> 22) & 3) as u8
                } else {
                    d
                };
                map1(st, u, |x| {
                    if e == 2 {
                        float::round_int::<f32>(x, mode, exact, cx, &mut fl)
                    } else {
                        float::round_int::<f64>(x, mode, exact, cx, &mut fl)
                    }
                })
            }
            F_PAIR => {
                let cnt = 1usize << (f - e);
                let (n, m) = (st.v[b], st.v[c]);
                let el = |j: usize| {
                    if j < cnt {
                        get(n, e, j)
                    } else {
                        get(m, e, j - cnt)
                    }
                };
                let mut r = 0u128;
                for i in 0..cnt {
                    set(
                        &mut r,
                        e,
                        i,
                        fp_red(d, e, el(2 * i), el(2 * i + 1), cx, &mut fl),
                    );
                }
                st.v[a] = r;
            }
            F_REDUCE => {
                let cnt = 1usize << (f - e);
                let n = st.v[b];
                st.v[a] = fp_reduce(d, e, n, 0, cnt, cx, &mut fl) as u128;
            }

            // ------------------------------------------------------------ FP conversions
            F_CVT => {
                let x = get(st.v[b], d, 0);
                st.v[a] = float::convert(x, d, e, cx, &mut fl) as u128;
            }
            F_CVTL => {
                let n = st.v[b];
                let cnt = 8usize >> e;
                let base = cnt * f as usize;
                let mut r = 0u128;
                for i in 0..cnt {
                    set(
                        &mut r,
                        e + 1,
                        i,
                        float::convert(get(n, e, base + i), e, e + 1, cx, &mut fl),
                    );
                }
                st.v[a] = r;
            }
            F_CVTN => {
                // e is the source size; the narrowing helper works with the destination size.
                let odd = d == 1;
                let src = e;
                let nu = MicroOp { e: e - 1, ..*u };
                narrow_op(st, &nu, |x, _| {
                    if odd {
                        float::d_to_s_odd(x, cx, &mut fl)
                    } else {
                        float::convert(x, src, src - 1, cx, &mut fl)
                    }
                })
            }
            F_TO_INT => {
                let x = get(st.v[b], e, 0);
                let (mode, uns) = (d & 7, d & 8 != 0);
                let wide = f == 1;
                let fbits = u.imm as u32;
                st.x[a] = if e == 2 {
                    float::to_int::<f32>(x, mode, uns, wide, fbits, cx, &mut fl)
                } else {
                    float::to_int::<f64>(x, mode, uns, wide, fbits, cx, &mut fl)
                };
            }
            INT_TO_F => {
                let raw = st.x[b];
                let uns = d & 1 != 0;
                let x = match (f, uns) {
                    (0, true) => raw as u32 as u64,
                    (0, false) => raw as i32 as i64 as u64,
                    _ => raw,
                };
                let fbits = u.imm as u32;
                st.v[a] = if e == 2 {
                    float::from_int::<f32>(x, uns, fbits, cx, &mut fl)
                } else {
                    float::from_int::<f64>(x, uns, fbits, cx, &mut fl)
                } as u128;
            }
            F_TO_INT_V => {
                let (mode, uns) = (d & 7, d & 8 != 0);
                let fbits = u.imm as u32;
                map1(st, u, |x| {
                    if e == 2 {
                        float::to_int::<f32>(x, mode, uns, false, fbits, cx, &mut fl)
                    } else {
                        float::to_int::<f64>(x, mode, uns, true, fbits, cx, &mut fl)
                    }
                })
            }
            INT_TO_F_V => {
                let uns = d & 1 != 0;
                let fbits = u.imm as u32;
                map1(st, u, |x| {
                    let x = int(x, e, uns) as u64;
                    if e == 2 {
                        float::from_int::<f32>(x, uns, fbits, cx, &mut fl)
                    } else {
                        float::from_int::<f64>(x, uns, fbits, cx, &mut fl)
                    }
                })
            }

            // ------------------------------------------------------------ FP compare and select
            F_CMP | F_CCMP => {
                if u.op == F_CCMP && !cond::check(d & 15, st.nzcv) {
                    st.nzcv = u.imm & 0xf000_0000;
                } else {
                    let x = get(st.v[b], e, 0);
                    let y = if u.op == F_CMP && d & fcmp::ZERO != 0 {
                        0
                    } else {
                        get(st.v[c], e, 0)
                    };
                    let signal = if u.op == F_CMP {
                        d & fcmp::SIGNAL != 0
                    } else {
                        d & fcmp::CCMP_SIGNAL != 0
                    };
                    st.nzcv = if e == 2 {
                        float::compare::<f32>(x, y, signal, cx, &mut fl)
                    } else {
                        float::compare::<f64>(x, y, signal, cx, &mut fl)
                    };
                }
            }
            F_CSEL => {
                let src = if cond::check(d, st.nzcv) { b } else { c };
                st.v[a] = get(st.v[src], e, 0) as u128;
            }

            // ------------------------------------------------------------ structure loads/stores
            V_LD_MULTI | V_ST_MULTI | V_LD_SINGLE | V_ST_SINGLE | V_LD_REPL => {
                return ldst::exec(st, mem, u);
            }

            _ => {
                // The decoder produces no other op in this range.
                debug_assert!(false, "exec_fp: unknown op {:#x}", u.op);
            }
        }
    );
    st.fpsr |= fl as u64 | if qc { QC } else { 0 };
    Ok(())
}

#[inline(always)]
fn mask_if(t: bool) -> u64 {
    if t {
        u64::MAX
    } else {
        0
    }
}

/// The second operand: Vm, or one element of Vm broadcast (by-element forms).
#[inline(always)]
fn opnd_m(st: &CpuState, u: &MicroOp) -> u128 {
    let m = st.v[u.c as usize];
    if u.imm & BY_ELEM != 0 {
        broadcast(get(m, u.e, (u.imm & 15) as usize), u.e)
    } else {
        m
    }
}

/// Vd = op(Vn) element-wise over 2^f bytes.
#[inline(always)]
fn map1(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64) -> u64) {
    let n = st.v[u.b as usize];
    let mut op3 = |_: u64, x: u64, _: u64| op(x);
    st.v[u.a as usize] = by_shape(u.e, u.f, 0, n, 0, &mut op3);
}

/// Vd = op(Vn, Vm) element-wise.
#[inline(always)]
fn map2(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64) -> u64) {
    let (n, m) = (st.v[u.b as usize], opnd_m(st, u));
    let mut op3 = |_: u64, x: u64, y: u64| op(x, y);
    st.v[u.a as usize] = by_shape(u.e, u.f, 0, n, m, &mut op3);
}

/// Vd = op(Vd, Vn, Vm) element-wise (accumulating forms).
#[inline(always)]
fn map3(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64, u64) -> u64) {
    let (old, n, m) = (st.v[u.a as usize], st.v[u.b as usize], opnd_m(st, u));
    st.v[u.a as usize] = by_shape(u.e, u.f, old, n, m, &mut op);
}

/// `op(old, n, m)` on each element of 2^e bytes over 2^f bytes (the upper bytes 0): with
/// both sizes as constants for the common shapes, so that the element loop unrolls with
/// fixed shifts. A loop of variable count shifting u128s by variable amounts took most of
/// the time of SIMD-heavy code such as glibc's string functions (grep: half its run).
#[inline(always)]
fn by_shape(
    e: u8,
    f: u8,
    old: u128,
    n: u128,
    m: u128,
    op: &mut impl FnMut(u64, u64, u64) -> u64,
) -> u128 {
    match (e, f) {
        (0, 4) => lanes::<0, 16>(old, n, m, op),
        (0, 3) => lanes::<0, 8>(old, n, m, op),
        (1, 4) => lanes::<1, 8>(old, n, m, op),
        (1, 3) => lanes::<1, 4>(old, n, m, op),
        (2, 4) => lanes::<2, 4>(old, n, m, op),
        (2, 3) => lanes::<2, 2>(old, n, m, op),
        (3, 4) => lanes::<3, 2>(old, n, m, op),
        _ => {
            let mut r = 0u128;
            for i in 0..(1usize << (f - e)) {
                set(&mut r, e, i, op(get(old, e, i), get(n, e, i), get(m, e, i)));
            }
            r
        }
    }
}

/// Vd = op over the pairs of adjacent elements of the concatenation Vm:Vn (Vn's first): the
/// pairwise element functions (ADDP, SMAXP ...), each element op(pair's first, its second).
#[inline(always)]
fn pair2(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64) -> u64) {
    let (n, m) = (st.v[u.b as usize], st.v[u.c as usize]);
    let op = &mut op;
    st.v[u.a as usize] = match (u.e, u.f) {
        (0, 4) => pairwise::<0, 16>(n, m, op),
        (0, 3) => pairwise::<0, 8>(n, m, op),
        (1, 4) => pairwise::<1, 8>(n, m, op),
        (1, 3) => pairwise::<1, 4>(n, m, op),
        (2, 4) => pairwise::<2, 4>(n, m, op),
        (2, 3) => pairwise::<2, 2>(n, m, op),
        (3, 4) => pairwise::<3, 2>(n, m, op),
        (e, f) => {
            // the decoder makes no other shape (`vsize`: no 1D vector)
            debug_assert!(false, "pair2: {} of shape ({e}, {f})", name(u.op));
            st.v[u.a as usize]
        }
    };
}

/// Vd's element 0 (the rest 0) = the fold of Vn's elements by `op` (the fold so far, the next
/// element), from the first: the across-lanes reductions (ADDV, SMAXV ...).
#[inline(always)]
fn across(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64) -> u64) {
    let (n, e) = (st.v[u.b as usize], u.e);
    let mut acc = get(n, e, 0);
    for i in 1..1usize << (u.f - e) {
        acc = op(acc, get(n, e, i)) & mask(e);
    }
    st.v[u.a as usize] = acc as u128;
}

/// Vd's element 0 at twice the element size (the rest 0) = the fold of Vn's elements by
/// `op` (the fold so far, the next element), from 0: SADDLV, UADDLV.
#[inline(always)]
fn across_long(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64) -> u64) {
    let (n, e) = (st.v[u.b as usize], u.e);
    let mut acc = 0;
    for i in 0..1usize << (u.f - e) {
        acc = op(acc, get(n, e, i)) & mask(e + 1);
    }
    st.v[u.a as usize] = acc as u128;
}

/// `op` over the pairs of N elements of 2^E bytes: the pairs of Vn's elements, then Vm's,
/// each made one element.
#[inline(always)]
fn pairwise<const E: u8, const N: usize>(
    n: u128,
    m: u128,
    op: &mut impl FnMut(u64, u64) -> u64,
) -> u128 {
    let (xs, ys) = (elements::<E>(n), elements::<E>(m));
    let el = |j: usize| if j < N { xs[j] } else { ys[j - N] };
    let mut r = [0u64; 16];
    for (i, o) in r.iter_mut().enumerate().take(N) {
        *o = op(el(2 * i), el(2 * i + 1));
    }
    from_elements::<E, N>(&r)
}

/// `op(old, n, m)` on each of the N elements of 2^E bytes.
#[inline(always)]
fn lanes<const E: u8, const N: usize>(
    old: u128,
    n: u128,
    m: u128,
    op: &mut impl FnMut(u64, u64, u64) -> u64,
) -> u128 {
    let (os, xs, ys) = (elements::<E>(old), elements::<E>(n), elements::<E>(m));
    let mut r = [0u64; 16];
    for i in 0..N {
        r[i] = op(os[i], xs[i], ys[i]);
    }
    from_elements::<E, N>(&r)
}

/// The elements of 2^E bytes of `v`, zero-extended (through its bytes: shifts of a u128 by
/// a variable amount cost a branch each on x86-64).
#[inline(always)]
fn elements<const E: u8>(v: u128) -> [u64; 16] {
    let b = v.to_le_bytes();
    let w = 1usize << E;
    let mut out = [0u64; 16];
    for (i, o) in out.iter_mut().enumerate().take(16 / w) {
        let mut x = [0u8; 8];
        x[..w].copy_from_slice(&b[i * w..i * w + w]);
        *o = u64::from_le_bytes(x);
    }
    out
}

/// The register whose first N elements of 2^E bytes are `el`'s (truncated), the rest 0.
#[inline(always)]
fn from_elements<const E: u8, const N: usize>(el: &[u64; 16]) -> u128 {
    let w = 1usize << E;
    let mut b = [0u8; 16];
    for i in 0..N {
        b[i * w..i * w + w].copy_from_slice(&el[i].to_le_bytes()[..w]);
    }
    u128::from_le_bytes(b)
}

/// Widening ops: `e` is the narrow size, `f` the part (0 low half, 1 high half, 2 scalar).
/// `op(n_narrow, m_narrow, n_wide, d_wide)` gives each wide result element.
#[inline(always)]
fn long_op(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64, u64, u64) -> u64) {
    let e = u.e;
    let (n, m, old) = (st.v[u.b as usize], opnd_m(st, u), st.v[u.a as usize]);
    let (cnt, base) = match u.f {
        0 => (8usize >> e, 0),
        1 => (8usize >> e, 8usize >> e),
        _ => (1, 0),
    };
    let mut r = 0u128;
    for i in 0..cnt {
        let x = op(
            get(n, e, base + i),
            get(m, e, base + i),
            get(n, e + 1, i),
            get(old, e + 1, i),
        );
        set(&mut r, e + 1, i, x);
    }
    st.v[u.a as usize] = r;
}

/// Narrowing ops: `e` is the narrow (destination) size, `f` the part. `op(n_wide, m_wide)`
/// gives each narrow result element; part 1 keeps the low half of Vd.
#[inline(always)]
fn narrow_op(st: &mut CpuState, u: &MicroOp, mut op: impl FnMut(u64, u64) -> u64) {
    let e = u.e;
    let (n, m) = (st.v[u.b as usize], st.v[u.c as usize]);
    let (cnt, base, mut r) = match u.f {
        0 => (8usize >> e, 0, 0u128),
        1 => (8usize >> e, 8usize >> e, st.v[u.a as usize] & datamask(3)),
        _ => (1, 0, 0u128),
    };
    for i in 0..cnt {
        let x = op(get(n, e + 1, i), get(m, e + 1, i));
        set(&mut r, e, base + i, x);
    }
    st.v[u.a as usize] = r;
}

/// One step of an FP pairwise operation or reduction.
fn fp_red(kind: u8, e: u8, x: u64, y: u64, cx: Ctx, fl: &mut u32) -> u64 {
    fn go<F: Float>(kind: u8, x: u64, y: u64, cx: Ctx, fl: &mut u32) -> u64 {
        match kind {
            fred::ADD => float::add::<F>(x, y, cx, fl),
            fred::MAX => float::max::<F>(x, y, cx, fl),
            fred::MIN => float::min::<F>(x, y, cx, fl),
            fred::MAXNM => float::maxnm::<F>(x, y, cx, fl),
            _ => float::minnm::<F>(x, y, cx, fl),
        }
    }
    if e == 2 {
        go::<f32>(kind, x, y, cx, fl)
    } else {
        go::<f64>(kind, x, y, cx, fl)
    }
}

/// The manual's Reduce(): halves reduced recursively, op(low half, high half).
fn fp_reduce(kind: u8, e: u8, n: u128, lo: usize, cnt: usize, cx: Ctx, fl: &mut u32) -> u64 {
    if cnt == 1 {
        return get(n, e, lo);
    }
    let half = cnt / 2;
    let x = fp_reduce(kind, e, n, lo, half, cx, fl);
    let y = fp_reduce(kind, e, n, lo + half, half, cx, fl);
    fp_red(kind, e, x, y, cx, fl)
}

/// FCMEQ (quiet) and FCMGE/FCMGT/FCMLE/FCMLT (signalling) against zero.
fn fcmp0<F: Float>(x: u64, kind: u8, cx: Ctx, fl: &mut u32) -> bool {
    match kind {
        cmp0::EQ => float::cmp_eq::<F>(x, 0, cx, fl),
        cmp0::GE => float::cmp_ge::<F>(x, 0, cx, fl),
        cmp0::GT => float::cmp_gt::<F>(x, 0, cx, fl),
        cmp0::LE => float::cmp_ge::<F>(0, x, cx, fl),
        _ => float::cmp_gt::<F>(0, x, cx, fl),
    }
}

#[cfg(test)]
mod tests;
