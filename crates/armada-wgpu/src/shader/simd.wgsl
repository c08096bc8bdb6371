// AdvSIMD micro-ops without memory (simd.cu's integer part): moves, permutes, TBL, logic,
// element-wise integer arithmetic, compares and shifts, widening/narrowing, pairwise and
// across-lane reductions, the FP bit moves FABS, FNEG and FCSEL (FMOV decodes to V_* moves)
// and FCMP/FCCMP in the plain IEEE mode. The rest of FP (arithmetic, conversions, compares
// under FZ) is exec_fp's: fp.wgsl's integer soft-float in the pipelines built with it, or a
// stub that leaves it to the host (lib.rs, `shader_source_with`).
// Vector registers live in the lane record (S_V + 2 * r: low, high); a write sets S_VDIRTY.

struct V2 {
    lo: u64,
    hi: u64,
}

fn emask(e: u32) -> u64 {
    if e >= 3u { return MAXU64; }
    return (1lu << (8u << e)) - 1lu;
}
fn ebits(e: u32) -> u32 { return 8u << e; }
fn esx(x: u64, e: u32) -> i64 {
    let sh = (64u - ebits(e)) & 63u;
    return i64(x << sh) >> sh;
}
fn vget(v: V2, e: u32, i: u32) -> u64 {
    let off = i * ebits(e);
    let w = select(v.hi, v.lo, off < 64u);
    return (w >> (off & 63u)) & emask(e);
}
fn vset(v: V2, e: u32, i: u32, x: u64) -> V2 {
    let off = i * ebits(e);
    let m = emask(e) << (off & 63u);
    let val = (x & emask(e)) << (off & 63u);
    var r = v;
    if off < 64u {
        r.lo = (v.lo & ~m) | val;
    } else {
        r.hi = (v.hi & ~m) | val;
    }
    return r;
}
fn datamask(v: V2, f: u32) -> V2 {
    if f >= 4u { return v; }
    var lo = v.lo;
    if f < 3u { lo &= (1lu << (8u << f)) - 1lu; }
    return V2(lo, 0lu);
}
fn vload(r: u32) -> V2 {
    let w = R + 2u * (S_V + 2u * (r & 31u));
    return V2(ld64w(w), ld64w(w + 2u));
}
fn vstore(r: u32, v: V2) {
    let w = R + 2u * (S_V + 2u * (r & 31u));
    st64w(w, v.lo);
    st64w(w + 2u, v.hi);
    rset(S_VDIRTY, 1lu);
}
// x replicated into every element of size e (both halves).
fn broadcast(x: u64, e: u32) -> V2 {
    var m: u64;
    switch e {
        case 0u: { m = 0x0101010101010101lu; }
        case 1u: { m = 0x0001000100010001lu; }
        case 2u: { m = 0x0000000100000001lu; }
        default: { m = 1lu; }
    }
    let r = (x & emask(e)) * m;
    return V2(r, r);
}
fn mask_if(t: bool) -> u64 { return select(0lu, MAXU64, t); }
fn vbyte(v: V2, i: u32) -> u32 {
    let w = select(v.hi, v.lo, i < 8u);
    return u32((w >> ((8u * i) & 63u)) & 0xfflu);
}
fn vsetbyte(v: V2, i: u32, b: u32) -> V2 { return vset(v, 0u, i, u64(b)); }

// RecipEstimate and RecipSqrtEstimate (URECPE, URSQRTE, as cpu/fp/float.rs): a 9-bit input to a
// 9-bit estimate. The Arm ARM's search for the least b >= 512 with a * (b + 1)^2 >= 2^28 starts
// from the square root's floor less 2 (at or below that b), so it takes a step or two.
fn recip_estimate(input: u32) -> u32 {
    let b = (1u << 19u) / (input * 2u + 1u);
    return (b + 1u) >> 1u;
}
fn recip_sqrt_estimate(input: u32) -> u32 {
    var a = input * 2u + 1u;
    if (input >= 256u) { a = ((input >> 1u) << 1u) * 2u + 2u; }
    var b = u32(max(512, i32(sqrt(268435456.0 / f32(a))) - 2));
    while (a * (b + 1u) * (b + 1u) < 268435456u) { b += 1u; }
    return (b + 1u) / 2u;
}



// The second operand: Vm, or one element of Vm broadcast (by-element forms).
fn opnd_m(c: u32, e: u32, imm: u64) -> V2 {
    let m = vload(c);
    if (imm & BY_ELEM) != 0lu { return broadcast(vget(m, e, u32(imm & 15lu)), e); }
    return m;
}

// Carry-less product of a and b: low 64 bits returned, high 64 bits in clmul_hi. Eight bits a
// loop iteration (lavapipe's loop limiter).
var<private> clmul_hi: u64;
var<private> cl_lo: u64;
fn cl_step(a: u64, b: u64, k: u32) {
    if ((b >> k) & 1lu) != 0lu {
        cl_lo ^= a << k;
        if k != 0u { clmul_hi ^= a >> ((64u - k) & 63u); }
    }
}
fn clmul_lo(a: u64, b: u64) -> u64 {
    cl_lo = 0lu;
    clmul_hi = 0lu;
    for (var i = 0u; i < 64u; i += 8u) {
        lp(2u);
        cl_step(a, b, i);
        cl_step(a, b, i + 1u);
        cl_step(a, b, i + 2u);
        cl_step(a, b, i + 3u);
        cl_step(a, b, i + 4u);
        cl_step(a, b, i + 5u);
        cl_step(a, b, i + 6u);
        cl_step(a, b, i + 7u);
    }
    return cl_lo;
}
// The same for two bytes (PMUL, PMULL of bytes): no loop.
fn clmul8(a0: u64, b0: u64) -> u64 {
    let a = a0 & 0xfflu;
    let b = b0 & 0xfflu;
    var r = 0lu;
    r ^= select(0lu, a, (b & 1lu) != 0lu);
    r ^= select(0lu, a << 1u, (b & 2lu) != 0lu);
    r ^= select(0lu, a << 2u, (b & 4lu) != 0lu);
    r ^= select(0lu, a << 3u, (b & 8lu) != 0lu);
    r ^= select(0lu, a << 4u, (b & 16lu) != 0lu);
    r ^= select(0lu, a << 5u, (b & 32lu) != 0lu);
    r ^= select(0lu, a << 6u, (b & 64lu) != 0lu);
    r ^= select(0lu, a << 7u, (b & 128lu) != 0lu);
    return r;
}

// element_unary(op): whether an element function reads no Vm (armada-semantics)
// @generated element unary

// Set by int_elem for what the host must do.
var<private> simd_ok: bool;
// Set by int_elem where a saturating op saturated (FPSR.QC).
var<private> simd_qc: bool;

fn int_elem(op: u32, d: u32, e: u32, o: u64, xx: u64, y: u64, imm: u64) -> u64 {
    switch op {
        // (ADD, SUB, MUL, MLA, MLS, the compares, MAX, MIN, ABD, the halving adds, CMP0, NEG,
        // ABS, CNT, CLZ, CLS, RBIT, SHL, SHR (and SRA), SLI, SRI, PMUL and the saturating ops:
        // armada-semantics)
        // @generated elements
        default: {
            simd_ok = false;
            return 0lu;
        }
    }
}

// A long element function (armada-semantics): o is Vd's element and w Vn's at twice the size
// e, xx and y Vn's and Vm's at size e.
fn long_elem(op: u32, d: u32, e: u32, o: u64, xx: u64, y: u64, w: u64, imm: u64) -> u64 {
    switch op {
        // @generated long elements
        default: {
            simd_ok = false;
            return 0lu;
        }
    }
}

// A narrowing element function (armada-semantics): xx and y are Vn's and Vm's elements at
// twice the size e, the result one of size e.
fn narrow_elem(op: u32, d: u32, e: u32, xx: u64, y: u64, imm: u64) -> u64 {
    switch op {
        // @generated narrow elements
        default: {
            simd_ok = false;
            return 0lu;
        }
    }
}

// Executes an AdvSIMD micro-op that needs no memory; false leaves it (untouched) to the host.
// FPCompare as NZCV (bits 31..28) of two floats of 2^e bytes given as bits: unordered 0011
// (and FPSR's IOC where `signal`, FCMPE, or either is a signalling NaN), equal 0110 (+0 and -0
// too), less 1000, greater 0010. Sign and magnitude order as the signed keys +m and -m.
fn f_compare(x: u64, y: u64, e: u32, signal: bool) -> u32 {
    let wide = e == 3u;
    let sign = select(1lu << 31u, 1lu << 63u, wide);
    let inf = select(0x7f800000lu, 0x7ff0000000000000lu, wide);
    let quiet = select(0x00400000lu, 0x0008000000000000lu, wide);
    let mx = x & ~sign;
    let my = y & ~sign;
    if mx > inf || my > inf {
        let snan = (mx > inf && (x & quiet) == 0lu) || (my > inf && (y & quiet) == 0lu);
        if signal || snan {
            rset(S_FPSR, rget(S_FPSR) | 1lu);
        }
        return 0x30000000u;
    }
    if x == y || (mx == 0lu && my == 0lu) {
        return 0x60000000u;
    }
    let kx = select(i64(mx), -i64(mx), (x & sign) != 0lu);
    let ky = select(i64(my), -i64(my), (y & sign) != 0lu);
    return select(0x20000000u, 0x80000000u, kx < ky);
}

fn exec_simd(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, imm: u64) -> bool {
    let va = a & 31u;
    let vb = b & 31u;
    let vc = c & 31u;
    switch op {
        // ---- moves and permutes
        case OP_V_MOVI: {
            vstore(va, datamask(V2(imm, select(0lu, imm, f >= 4u)), f));
        }
        case OP_V_ORR_IMM, OP_V_AND_IMM: {
            let o = vload(va);
            var r: V2;
            if op == OP_V_ORR_IMM {
                r = V2(o.lo | imm, o.hi | imm);
            } else {
                r = V2(o.lo & imm, o.hi & imm);
            }
            vstore(va, datamask(r, f));
        }
        case OP_V_DUP_ELEM: { vstore(va, datamask(broadcast(vget(vload(vb), e, u32(imm)), e), f)); }
        case OP_V_DUP_GEN: { vstore(va, datamask(broadcast(x[b], e), f)); }
        case OP_V_URECPE, OP_V_URSQRTE: {
            let n = vload(vb);
            var r = V2(0lu, 0lu);
            for (var i = 0u; i < (1u << (f - 2u)); i++) {
                let v = u32(vget(n, 2u, i));
                var o = 0xffffffffu;
                if (op == OP_V_URECPE && (v >> 31u) != 0u) {
                    o = recip_estimate(v >> 23u) << 23u;
                } else if (op == OP_V_URSQRTE && (v >> 30u) != 0u) {
                    o = recip_sqrt_estimate(v >> 23u) << 23u;
                }
                r = vset(r, 2u, i, u64(o));
            }
            vstore(va, r);
        }
        case OP_V_INS_ELEM: { vstore(va, vset(vload(va), e, u32(imm), vget(vload(vb), e, d))); }
        case OP_V_INS_GEN: { vstore(va, vset(vload(va), e, u32(imm), x[b])); }
        case OP_V_UMOV: { x[a] = vget(vload(vb), e, u32(imm)); }
        case OP_V_SMOV: {
            let s = u64(esx(vget(vload(vb), e, u32(imm)), e));
            x[a] = select(s & LO32, s, f == 1u);
        }
        case OP_V_EXT: {
            let n = vload(vb);
            let m = vload(vc);
            var r = V2(0lu, 0lu);
            let ds = 1u << f;
            for (var i = 0u; i < ds; i++) {
                lp(2u);
                let j = u32(imm) + i;
                r = vsetbyte(r, i, select(vbyte(m, j - ds), vbyte(n, j), j < ds));
            }
            vstore(va, r);
        }
        case OP_V_TBL: {
            let regs = d;
            let idx = vload(vc);
            let old = vload(va);
            var r = V2(0lu, 0lu);
            for (var i = 0u; i < (1u << f); i++) {
                lp(2u);
                let j = vbyte(idx, i);
                var v: u32;
                if j < 16u * regs {
                    v = vbyte(vload((b + j / 16u) % 32u), j % 16u);
                } else {
                    v = select(0u, vbyte(old, i), e == 1u);
                }
                r = vsetbyte(r, i, v);
            }
            vstore(va, r);
        }
        case OP_V_UZP, OP_V_ZIP, OP_V_TRN: {
            let n = vload(vb);
            let m = vload(vc);
            var r = V2(0lu, 0lu);
            let cnt = 1u << (f - e);
            let part = d;
            let half = cnt / 2u;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                var v: u64;
                if op == OP_V_UZP {
                    let j = 2u * i + part;
                    v = select(vget(m, e, j - cnt), vget(n, e, j), j < cnt);
                } else {
                    var j: u32;
                    if op == OP_V_ZIP {
                        j = part * half + i / 2u;
                    } else {
                        j = (i & ~1u) + part;
                    }
                    v = select(vget(m, e, j), vget(n, e, j), (i & 1u) == 0u);
                }
                r = vset(r, e, i, v);
            }
            vstore(va, r);
        }
        // ---- whole-register logic
        case OP_V_AND, OP_V_BIC, OP_V_ORR, OP_V_ORN, OP_V_EOR, OP_V_BSL, OP_V_BIT, OP_V_BIF, OP_V_NOT: {
            let n = vload(vb);
            let m = vload(vc);
            let o = vload(va);
            var r: V2;
            switch op {
                case OP_V_AND: { r = V2(n.lo & m.lo, n.hi & m.hi); }
                case OP_V_BIC: { r = V2(n.lo & ~m.lo, n.hi & ~m.hi); }
                case OP_V_ORR: { r = V2(n.lo | m.lo, n.hi | m.hi); }
                case OP_V_ORN: { r = V2(n.lo | ~m.lo, n.hi | ~m.hi); }
                case OP_V_EOR: { r = V2(n.lo ^ m.lo, n.hi ^ m.hi); }
                case OP_V_BSL: { r = V2((o.lo & n.lo) | (~o.lo & m.lo), (o.hi & n.hi) | (~o.hi & m.hi)); }
                case OP_V_BIT: { r = V2((o.lo & ~m.lo) | (n.lo & m.lo), (o.hi & ~m.hi) | (n.hi & m.hi)); }
                case OP_V_BIF: { r = V2((o.lo & m.lo) | (n.lo & ~m.lo), (o.hi & m.hi) | (n.hi & ~m.hi)); }
                default: { r = V2(~n.lo, ~n.hi); }
            }
            vstore(va, datamask(r, f));
        }
        case OP_V_REV: {
            let n = vload(vb);
            var r = V2(0lu, 0lu);
            let cmask = (1u << d) - 1u;
            let em = (1u << e) - 1u;
            let per = 1u << (d - e);
            for (var p = 0u; p < (1u << f); p++) {
                lp(2u);
                let k = (p & cmask) >> e;
                let src = (p & ~cmask) | ((per - 1u - k) << e) | (p & em);
                r = vsetbyte(r, p, vbyte(n, src));
            }
            vstore(va, r);
        }
        case OP_V_ADDLP: {
            if e >= 3u { return false; }
            let uns = (d & 1u) != 0u;
            let acc = (d & 2u) != 0u;
            let n = vload(vb);
            let o = vload(va);
            var r = V2(0lu, 0lu);
            let cnt = (1u << f) >> (e + 1u);
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                let p = vget(n, e, 2u * i);
                let q = vget(n, e, 2u * i + 1u);
                var s = select(esx(p, e), i64(p), uns) + select(esx(q, e), i64(q), uns);
                if acc { s += i64(vget(o, e + 1u, i)); }
                r = vset(r, e + 1u, i, u64(s));
            }
            vstore(va, r);
        }
        // ---- pairwise element functions (armada-semantics): element i of Vd from elements 2i
        // and 2i + 1 of the concatenation Vm:Vn, through int_elem
        case /* @generated pair ops */ : {
            let cnt = 1u << (f - e);
            let n = vload(vb);
            let m = vload(vc);
            var r = V2(0lu, 0lu);
            simd_ok = true;
            simd_qc = false;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                let j0 = 2u * i;
                let j1 = 2u * i + 1u;
                let x0 = select(vget(m, e, j0 - cnt), vget(n, e, j0), j0 < cnt);
                let x1 = select(vget(m, e, j1 - cnt), vget(n, e, j1), j1 < cnt);
                r = vset(r, e, i, int_elem(op, d, e, 0lu, x0, x1, imm));
            }
            if !simd_ok { return false; }
            vstore(va, r);
            if simd_qc { rset(S_FPSR, rget(S_FPSR) | CONST_FPSR_QC); }
        }
        // ---- across-lanes reductions (armada-semantics): Vd's element 0 the fold of Vn's
        // elements through int_elem (the fold so far as Vn's element, the next as Vm's)
        case /* @generated across ops */ : {
            let cnt = 1u << (f - e);
            let n = vload(vb);
            simd_ok = true;
            simd_qc = false;
            var acc = vget(n, e, 0u);
            for (var i = 1u; i < cnt; i++) {
                lp(2u);
                acc = int_elem(op, d, e, 0lu, acc, vget(n, e, i), imm) & emask(e);
            }
            if !simd_ok { return false; }
            vstore(va, V2(acc, 0lu));
            if simd_qc { rset(S_FPSR, rget(S_FPSR) | CONST_FPSR_QC); }
        }
        // SADDLV, UADDLV (armada-semantics): the fold from 0 at twice the element size
        case /* @generated across long ops */ : {
            if e >= 3u { return false; }
            let cnt = 1u << (f - e);
            let n = vload(vb);
            simd_ok = true;
            simd_qc = false;
            var acc = 0lu;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                acc = int_elem(op, d, e, 0lu, acc, vget(n, e, i), imm) & emask(e + 1u);
            }
            if !simd_ok { return false; }
            vstore(va, V2(acc, 0lu));
        }
        // ---- element-wise integer ops
        case /* @generated element ops */ : {
            let n = vload(vb);
            let o = vload(va);
            let m = opnd_m(vc, e, imm);
            var r = V2(0lu, 0lu);
            // map1 ops read no Vm
            let unary = element_unary(op);
            let cnt = 1u << (f - e);
            simd_ok = true;
            simd_qc = false;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                let y = select(vget(m, e, i), 0lu, unary);
                r = vset(r, e, i, int_elem(op, d, e, vget(o, e, i), vget(n, e, i), y, imm));
            }
            if !simd_ok { return false; }
            vstore(va, r);
            if simd_qc { rset(S_FPSR, rget(S_FPSR) | CONST_FPSR_QC); }
        }
        // ---- narrowing element functions (armada-semantics): Vn's and Vm's elements at twice
        // the size e, each giving one of size e in the lower half of Vd (the upper half zero),
        // or for the "2" forms (f 1) in the upper half (the lower half kept)
        case /* @generated narrow ops */ : {
            if e >= 3u { return false; }
            let n = vload(vb);
            let m = vload(vc);
            var r = V2(0lu, 0lu);
            let cnt = select(8u >> e, 1u, f == 2u);
            let base = select(0u, 8u >> e, f == 1u);
            if f == 1u { r = datamask(vload(va), 3u); }
            simd_ok = true;
            simd_qc = false;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                r = vset(r, e, base + i, narrow_elem(op, d, e, vget(n, e + 1u, i), vget(m, e + 1u, i), imm));
            }
            if !simd_ok { return false; }
            vstore(va, r);
            if simd_qc { rset(S_FPSR, rget(S_FPSR) | CONST_FPSR_QC); }
        }
        // ---- long element functions (armada-semantics): Vn's and Vm's elements of size e
        // from the part f names, Vd's and Vn's wide ones (index i) at size e + 1
        case /* @generated long ops */ : {
            if e >= 3u { return false; }
            let n = vload(vb);
            let o = vload(va);
            var r = V2(0lu, 0lu);
            let m = opnd_m(vc, e, imm);
            let cnt = select(8u >> e, 1u, f == 2u);
            let base = select(0u, 8u >> e, f == 1u);
            simd_ok = true;
            simd_qc = false;
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                let xn = vget(n, e, base + i);
                let xm = vget(m, e, base + i);
                r = vset(r, e + 1u, i, long_elem(op, d, e, vget(o, e + 1u, i), xn, xm, vget(n, e + 1u, i), imm));
            }
            if !simd_ok { return false; }
            vstore(va, r);
            if simd_qc { rset(S_FPSR, rget(S_FPSR) | CONST_FPSR_QC); }
        }
        case OP_V_PMULL: {
            let n = vload(vb);
            let m = vload(vc);
            var r = V2(0lu, 0lu);
            if e == 3u {
                r.lo = clmul_lo(vget(n, 3u, f), vget(m, 3u, f));
                r.hi = clmul_hi;
            } else {
                let base = 8u * f;
                for (var i = 0u; i < 8u; i++) {
                    lp(2u);
                    r = vset(r, 1u, i, clmul8(vget(n, 0u, base + i), vget(m, 0u, base + i)));
                }
            }
            vstore(va, r);
        }
        // ---- FP bit moves (no rounding, no exceptions: cpu/fp/float.rs abs, neg; F_CSEL)
        case OP_F_ABS, OP_F_NEG: {
            if e != 2u && e != 3u { return false; }
            let sign = select(1lu << 63u, 1lu << 31u, e == 2u);
            let n = vload(vb);
            var r = V2(0lu, 0lu);
            let cnt = 1u << (f - e);
            for (var i = 0u; i < cnt; i++) {
                lp(2u);
                let v = vget(n, e, i);
                r = vset(r, e, i, select(v ^ sign, v & ~sign, op == OP_F_ABS));
            }
            vstore(va, r);
        }
        case OP_F_CSEL: {
            let src = select(vc, vb, cond_holds(d, nzcv));
            vstore(va, V2(vget(vload(src), e, 0u), 0lu));
        }
        // ---- FP compare (cpu/fp/float.rs compare), on the operands' bits: in the plain IEEE
        // mode only (FZ flushes denormal inputs, which the host does)
        case OP_F_CMP, OP_F_CCMP: {
            if e != 2u && e != 3u { return false; }
            if (u32(rget(S_FPCR)) & FPCR_SPECIAL) != 0u { return exec_fp(op, a, b, c, d, e, f, imm); }
            if op == OP_F_CCMP && !cond_holds(d & 15u, nzcv) {
                nzcv = u32(imm & 0xf0000000lu);
            } else {
                let x = vget(vload(vb), e, 0u);
                var y = 0lu;
                if op != OP_F_CMP || (d & FCMP_ZERO) == 0u {
                    y = vget(vload(vc), e, 0u);
                }
                let signal = (d & select(FCMP_CCMP_SIGNAL, FCMP_SIGNAL, op == OP_F_CMP)) != 0u;
                nzcv = f_compare(x, y, e, signal);
            }
        }
        default: {
            return exec_fp(op, a, b, c, d, e, f, imm);
        }
    }
    return true;
}
