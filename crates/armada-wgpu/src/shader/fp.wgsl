// FP arithmetic, conversions and compares (simd.cu's FP part) in integer arithmetic: WGSL has
// no f64 and no rounding control, and its f32 may flush subnormals, so the shader computes on the
// operands' bits as the CPU engine's exact path does (crates/armada-core/src/cpu/fp/soft.rs for
// the numbers, float.rs for NaNs, FPCR.FZ and the ops built on them), in every FPCR rounding
// mode, with FZ, DN and AHP and the FPSR cumulative flags. Results are the CPU engine's bit for
// bit, so nothing here goes to the host but the half-precision arithmetic the decoder never
// makes (e not 2 or 3).
//
// Not in ORDER: this file is its own piece of the source (lib.rs, `shader_source_with`), in the
// pipelines a device builds once a batch stops for the host at FP ops (device.rs, `want_fp`).
// The others have exec_fp return false, so their code and compile time are what they were: in
// the shader always, this file slowed every lavapipe program by 25-40% (docs/performance.md).
//
// Values are bit patterns in a u64; e = 1 (half), 2 (single), 3 (double). Mantissas of at
// most 53 bits are u64s, and products and aligned sums (soft.rs's u128) are U128s.

// FPSR cumulative exception flags (soft.rs)
const FL_IOC: u32 = 1u;
const FL_DZC: u32 = 2u;
const FL_OFC: u32 = 4u;
const FL_UFC: u32 = 8u;
const FL_IXC: u32 = 16u;
const FL_IDC: u32 = 128u;
const FL_EXC: u32 = 0x9fu;
// round_pack's modes: FPCR.RMode's four, ties away (FRINTA, FCVTAS), to odd (FCVTXN)
const RM_NEAREST: u32 = 0u;
const RM_PLUS: u32 = 1u;
const RM_MINUS: u32 = 2u;
const RM_AWAY: u32 = 4u;
const RM_ODD: u32 = 5u;

// FPCR's fields and the flags raised so far, for the instruction being run (exec_fp sets them)
var<private> fp_fl: u32;
var<private> fp_mode: u32;
var<private> fp_fz: bool;
var<private> fp_dn: bool;
var<private> fp_ahp: bool;

// ----- formats

fn f_fb(e: u32) -> u32 { return select(select(10u, 23u, e == 2u), 52u, e == 3u); }
fn f_eb(e: u32) -> u32 { return select(select(5u, 8u, e == 2u), 11u, e == 3u); }
fn f_bias(e: u32) -> i32 { return (1 << (f_eb(e) - 1u)) - 1; }
fn f_sign(e: u32) -> u64 { return 1lu << (f_eb(e) + f_fb(e)); }
fn f_inf(e: u32) -> u64 { return ((1lu << f_eb(e)) - 1lu) << f_fb(e); }
fn f_quiet(e: u32) -> u64 { return 1lu << (f_fb(e) - 1u); }
fn f_dnan(e: u32) -> u64 { return f_inf(e) | f_quiet(e); }
fn f_mag(e: u32, b: u64) -> u64 { return b & (f_sign(e) - 1lu); }
fn f_nan(e: u32, b: u64) -> bool { return f_mag(e, b) > f_inf(e); }
fn f_snan(e: u32, b: u64) -> bool { return f_nan(e, b) && (b & f_quiet(e)) == 0lu; }
fn f_qnan(e: u32, b: u64) -> bool { return f_nan(e, b) && (b & f_quiet(e)) != 0lu; }
fn f_isinf(e: u32, b: u64) -> bool { return f_mag(e, b) == f_inf(e); }
fn f_iszero(e: u32, b: u64) -> bool { return f_mag(e, b) == 0lu; }
fn f_zero_of(e: u32, sign: bool) -> u64 { return select(0lu, f_sign(e), sign); }
fn f_inf_of(e: u32, sign: bool) -> u64 { return f_zero_of(e, sign) | f_inf(e); }
// 2.0, 1.5 and 3.0 (FMULX, FRECPS, FRSQRTS): exponent 1 or 0 and the top fraction bit
fn f_two(e: u32) -> u64 { return u64(f_bias(e) + 1) << f_fb(e); }
fn f_one_half(e: u32) -> u64 { return (u64(f_bias(e)) << f_fb(e)) | f_quiet(e); }
fn f_three(e: u32) -> u64 { return f_two(e) | f_quiet(e); }
// An order key: the value's order as a signed integer (+0 and -0 the same)
fn f_key(e: u32, b: u64) -> i64 { return select(i64(f_mag(e, b)), -i64(f_mag(e, b)), (b & f_sign(e)) != 0lu); }

// ----- 128-bit integers

struct U128 {
    hi: u64,
    lo: u64,
}

fn w_of(x: u64) -> U128 { return U128(0lu, x); }
fn w_nz(m: U128) -> bool { return (m.hi | m.lo) != 0lu; }
fn shl64(x: u64, s: u32) -> u64 { return select(0lu, x << (s & 63u), s < 64u); }
fn shr64(x: u64, s: u32) -> u64 { return select(0lu, x >> (s & 63u), s < 64u); }
fn w_shl(m: U128, s: u32) -> U128 {
    if s == 0u { return m; }
    if s >= 64u { return U128(shl64(m.lo, s - 64u), 0lu); }
    return U128((m.hi << s) | (m.lo >> (64u - s)), m.lo << s);
}
fn w_shr(m: U128, s: u32) -> U128 {
    if s == 0u { return m; }
    if s >= 64u { return U128(0lu, shr64(m.hi, s - 64u)); }
    return U128(m.hi >> s, (m.lo >> s) | (m.hi << (64u - s)));
}
// Whether any bit below bit s is set.
fn w_below(m: U128, s: u32) -> bool {
    if s >= 128u { return w_nz(m); }
    if s >= 64u { return m.lo != 0lu || (m.hi & (shl64(1lu, s - 64u) - 1lu)) != 0lu; }
    return (m.lo & (shl64(1lu, s) - 1lu)) != 0lu;
}
fn w_msb(m: U128) -> i32 {
    if m.hi != 0lu { return 127 - i32(clz64(m.hi)); }
    if m.lo != 0lu { return 63 - i32(clz64(m.lo)); }
    return -1;
}
fn w_add(a: U128, b: U128) -> U128 {
    let lo = a.lo + b.lo;
    return U128(a.hi + b.hi + select(0lu, 1lu, lo < a.lo), lo);
}
fn w_sub(a: U128, b: U128) -> U128 { return U128(a.hi - b.hi - select(0lu, 1lu, a.lo < b.lo), a.lo - b.lo); }
fn w_gt(a: U128, b: U128) -> bool { return a.hi > b.hi || (a.hi == b.hi && a.lo > b.lo); }
fn w_mul(a: u64, b: u64) -> U128 { return U128(umulhi(a, b), a * b); }

// ----- the exact arithmetic of numbers (soft.rs)

// An operand: zero, infinity, or mant * 2^exp with mant != 0.
const K_ZERO: u32 = 0u;
const K_INF: u32 = 1u;
const K_NUM: u32 = 2u;
struct Unp {
    sign: bool,
    kind: u32,
    mant: u64,
    exp: i32,
}

// A non-NaN operand; `fz` flushes denormals to zero (Input Denormal), `ahp` reads the
// alternative half-precision format (no infinities).
fn unpack(e: u32, b: u64, fz: bool, ahp: bool) -> Unp {
    let fb = f_fb(e);
    let sign = (b & f_sign(e)) != 0lu;
    let emax = (1lu << f_eb(e)) - 1lu;
    let ex = (b >> fb) & emax;
    let fr = b & ((1lu << fb) - 1lu);
    if ex == emax && !ahp { return Unp(sign, K_INF, 0lu, 0); }
    if ex == 0lu {
        if fr == 0lu { return Unp(sign, K_ZERO, 0lu, 0); }
        if fz {
            fp_fl |= FL_IDC;
            return Unp(sign, K_ZERO, 0lu, 0);
        }
        return Unp(sign, K_NUM, fr, 1 - f_bias(e) - i32(fb));
    }
    return Unp(sign, K_NUM, fr | (1lu << fb), i32(ex) - f_bias(e) - i32(fb));
}

// (mant + sticky) * 2^exp rounded to format e in `mode` (sticky: a nonzero amount below mant's
// lowest bit), raising Inexact, Underflow and Overflow. `fz` flushes results that are tiny
// before rounding; `ahp` packs the alternative half-precision format.
fn round_pack(e: u32, sign: bool, mant: U128, exp: i32, sticky: bool, mode: u32, fz: bool, ahp: bool) -> u64 {
    if !w_nz(mant) && !sticky { return f_zero_of(e, sign); }
    let fb = i32(f_fb(e));
    // a lone sticky bit stands for a value far below everything
    var m0 = mant;
    var x0 = exp;
    if !w_nz(mant) {
        m0 = w_of(1lu);
        x0 = exp - 200;
    }
    let top = x0 + w_msb(m0);
    let emin = 1 - f_bias(e);
    let tiny = top < emin;
    if tiny && fz {
        fp_fl |= FL_UFC;
        return f_zero_of(e, sign);
    }
    var q = max(top, emin) - fb;
    let sh = q - x0;
    var m = 0lu;
    var rbit = false;
    var st = sticky;
    if sh <= 0 {
        m = w_shl(m0, u32(-sh)).lo;
    } else if sh > 128 {
        st = true;
    } else {
        m = w_shr(m0, u32(sh)).lo;
        rbit = (w_shr(m0, u32(sh - 1)).lo & 1lu) != 0lu;
        st = st || w_below(m0, u32(sh - 1));
    }
    let inexact = rbit || st;
    var up = rbit;
    switch mode {
        case 0u: { up = rbit && (st || (m & 1lu) != 0lu); }
        case 1u: { up = inexact && !sign; }
        case 2u: { up = inexact && sign; }
        case 3u, 5u: { up = false; }
        default: {}
    }
    if up {
        m += 1lu;
        if (m >> u32(fb + 1)) != 0lu {
            m >>= 1u;
            q += 1;
        }
    }
    if mode == RM_ODD && inexact { m |= 1lu; }
    let s = f_zero_of(e, sign);
    let e_field = select(q + fb + f_bias(e), 0, (m >> u32(fb)) == 0lu);
    let e_max = (1 << f_eb(e)) - select(2, 1, ahp);
    if e_field > e_max {
        if ahp {
            fp_fl |= FL_IOC;
            return s | (f_sign(e) - 1lu);
        }
        fp_fl |= FL_OFC | FL_IXC;
        let to_inf = mode == RM_NEAREST || mode == RM_AWAY || (mode == RM_PLUS && !sign) || (mode == RM_MINUS && sign);
        return select(s | (f_inf(e) - 1lu), s | f_inf(e), to_inf);
    }
    if inexact { fp_fl |= select(FL_IXC, FL_UFC | FL_IXC, tiny); }
    if m == 0lu { return s; }
    return s | (u64(e_field) << u32(fb)) | (m & ((1lu << u32(fb)) - 1lu));
}

// Rounding deferred: lavapipe (like every Vulkan driver's compiler) inlines every call, so the
// shader's size, and its compile time, grow with the call sites of the big functions. The
// operations leave round_pack's arguments here instead of calling it, and exec_fp's one loop
// calls it once (pk_on: the operation's result is the packed value, not the one returned).
var<private> pk_on: bool;
var<private> pk_e: u32;
var<private> pk_sign: bool;
var<private> pk_mant: U128;
var<private> pk_exp: i32;
var<private> pk_sticky: bool;
var<private> pk_mode: u32;
var<private> pk_fz: bool;
var<private> pk_ahp: bool;
fn pack_later(e: u32, sign: bool, mant: U128, exp: i32, sticky: bool, mode: u32, fz: bool, ahp: bool) -> u64 {
    pk_on = true;
    pk_e = e;
    pk_sign = sign;
    pk_mant = mant;
    pk_exp = exp;
    pk_sticky = sticky;
    pk_mode = mode;
    pk_fz = fz;
    pk_ahp = ahp;
    return 0lu;
}
// In FPCR's rounding mode and FZ.
fn pack(e: u32, sign: bool, mant: U128, exp: i32, sticky: bool) -> u64 {
    return pack_later(e, sign, mant, exp, sticky, fp_mode, fp_fz, false);
}

// The exact sum of two signed numbers (soft.rs `sum`): both aligned to 2^e0 with the larger's
// top bit at 124, the bits shifted out of the smaller kept as a sticky bit.
struct Sum {
    some: bool, // false: exactly zero
    sign: bool,
    mant: U128,
    exp: i32,
    sticky: bool,
}
fn w_align(m: U128, ex: i32, e0: i32) -> U128 {
    if ex >= e0 { return w_shl(m, u32(ex - e0)); }
    return w_shr(m, u32(e0 - ex));
}
fn w_align_lost(m: U128, ex: i32, e0: i32) -> bool { return ex < e0 && w_below(m, u32(e0 - ex)); }
fn sum(s1: bool, m1: U128, e1: i32, s2: bool, m2: U128, e2: i32) -> Sum {
    let e0 = max(e1 + w_msb(m1), e2 + w_msb(m2)) - 124;
    let a = w_align(m1, e1, e0);
    let b = w_align(m2, e2, e0);
    let la = w_align_lost(m1, e1, e0);
    let lb = w_align_lost(m2, e2, e0);
    if s1 == s2 { return Sum(true, s1, w_add(a, b), e0, la || lb); }
    // the truncated operand (if any) is the smaller one
    if w_gt(a, b) {
        if lb { return Sum(true, s1, w_sub(w_sub(a, b), w_of(1lu)), e0, true); }
        return Sum(true, s1, w_sub(a, b), e0, false);
    }
    if w_gt(b, a) {
        if la { return Sum(true, s2, w_sub(w_sub(b, a), w_of(1lu)), e0, true); }
        return Sum(true, s2, w_sub(b, a), e0, false);
    }
    // equal after truncation: the truncated one is bigger by a fraction
    if la || lb { return Sum(true, select(s2, s1, la), w_of(0lu), e0, true); }
    return Sum(false, false, w_of(0lu), e0, false);
}

// The sign of an exact zero sum of operands of opposite signs: -0 only rounding down.
fn zero_sum_sign() -> bool { return fp_mode == RM_MINUS; }

// a + b of non-NaN operands.
fn s_add(e: u32, a: u64, b: u64) -> u64 {
    let x = unpack(e, a, fp_fz, false);
    let y = unpack(e, b, fp_fz, false);
    if x.kind == K_INF && y.kind == K_INF {
        if x.sign == y.sign { return f_inf_of(e, x.sign); }
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if x.kind == K_INF { return f_inf_of(e, x.sign); }
    if y.kind == K_INF { return f_inf_of(e, y.sign); }
    if x.kind == K_ZERO && y.kind == K_ZERO { return f_zero_of(e, select(zero_sum_sign(), x.sign, x.sign == y.sign)); }
    if x.kind == K_ZERO { return pack(e, y.sign, w_of(y.mant), y.exp, false); }
    if y.kind == K_ZERO { return pack(e, x.sign, w_of(x.mant), x.exp, false); }
    let s = sum(x.sign, w_of(x.mant), x.exp, y.sign, w_of(y.mant), y.exp);
    if !s.some { return f_zero_of(e, zero_sum_sign()); }
    return pack(e, s.sign, s.mant, s.exp, s.sticky);
}

fn s_mul(e: u32, a: u64, b: u64) -> u64 {
    let x = unpack(e, a, fp_fz, false);
    let y = unpack(e, b, fp_fz, false);
    let s = x.sign != y.sign;
    if (x.kind == K_INF && y.kind == K_ZERO) || (x.kind == K_ZERO && y.kind == K_INF) {
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if x.kind == K_INF || y.kind == K_INF { return f_inf_of(e, s); }
    if x.kind == K_ZERO || y.kind == K_ZERO { return f_zero_of(e, s); }
    return pack(e, s, w_mul(x.mant, y.mant), x.exp + y.exp, false);
}

// A mantissa's top bit moved to bit 52 (the exponent lowered to match).
fn norm_shift(m: u64) -> u32 { return clz64(m) - 11u; }

fn s_div(e: u32, a: u64, b: u64) -> u64 {
    let x = unpack(e, a, fp_fz, false);
    let y = unpack(e, b, fp_fz, false);
    let s = x.sign != y.sign;
    if (x.kind == K_INF && y.kind == K_INF) || (x.kind == K_ZERO && y.kind == K_ZERO) {
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if x.kind == K_INF { return f_inf_of(e, s); }
    if y.kind == K_ZERO {
        fp_fl |= FL_DZC;
        return f_inf_of(e, s);
    }
    if x.kind == K_ZERO || y.kind == K_INF { return f_zero_of(e, s); }
    // both normalized to [2^52, 2^53): 56 quotient bits beyond the first, 8 at a time (the
    // remainder stays below 2^53, so shifted by 8 it fits), enough for the rounding of any
    // format, the remainder the sticky bit
    let kx = norm_shift(x.mant);
    let ky = norm_shift(y.mant);
    let n = x.mant << kx;
    let d = y.mant << ky;
    var q = n / d;
    var r = n % d;
    let t1 = r << 8u; q = (q << 8u) | (t1 / d); r = t1 % d;
    let t2 = r << 8u; q = (q << 8u) | (t2 / d); r = t2 % d;
    let t3 = r << 8u; q = (q << 8u) | (t3 / d); r = t3 % d;
    let t4 = r << 8u; q = (q << 8u) | (t4 / d); r = t4 % d;
    let t5 = r << 8u; q = (q << 8u) | (t5 / d); r = t5 % d;
    let t6 = r << 8u; q = (q << 8u) | (t6 / d); r = t6 % d;
    let t7 = r << 8u; q = (q << 8u) | (t7 / d); r = t7 % d;
    let ex = (x.exp - i32(kx)) - (y.exp - i32(ky)) - 56;
    return pack(e, s, w_of(q), ex, r != 0lu);
}

fn s_sqrt(e: u32, a: u64) -> u64 {
    let x = unpack(e, a, fp_fz, false);
    if x.kind == K_ZERO { return f_zero_of(e, x.sign); }
    if x.sign {
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if x.kind == K_INF { return f_inf(e); }
    // the mantissa normalized with an even exponent, then shifted up by 58: n < 2^112, whose
    // integer root (digit by digit, two bits of n a step) has 56 bits, the remainder sticky
    let k = norm_shift(x.mant);
    var m = x.mant << k;
    var ex = x.exp - i32(k);
    if (ex & 1) != 0 {
        m <<= 1u;
        ex -= 1;
    }
    let n = w_shl(w_of(m), 58u);
    var root = 0lu;
    var rem = 0lu;
    lp(58u);
    for (var i = 56u; i > 0u; i--) {
        let sh = 2u * (i - 1u);
        let pair = select(shr64(n.lo, sh), shr64(n.hi, sh - 64u), sh >= 64u) & 3lu;
        rem = (rem << 2u) | pair;
        let trial = (root << 2u) | 1lu;
        if rem >= trial {
            rem -= trial;
            root = (root << 1u) | 1lu;
        } else {
            root <<= 1u;
        }
    }
    return pack(e, false, w_of(root), (ex - 58) / 2, rem != 0lu);
}

// addend + n * m with one rounding; `halve` divides the exact result by two first (FRSQRTS).
// NaN operands are the caller's.
fn s_muladd(e: u32, addend: u64, n: u64, m: u64, halve: bool) -> u64 {
    let c = unpack(e, addend, fp_fz, false);
    let x = unpack(e, n, fp_fz, false);
    let y = unpack(e, m, fp_fz, false);
    let sp = x.sign != y.sign;
    let h = select(0, 1, halve);
    if (x.kind == K_INF && y.kind == K_ZERO) || (x.kind == K_ZERO && y.kind == K_INF) {
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    var pk = K_NUM;
    if x.kind == K_INF || y.kind == K_INF {
        pk = K_INF;
    } else if x.kind == K_ZERO || y.kind == K_ZERO {
        pk = K_ZERO;
    }
    if pk == K_INF && c.kind == K_INF {
        if sp == c.sign { return f_inf_of(e, sp); }
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if pk == K_INF { return f_inf_of(e, sp); }
    if c.kind == K_INF { return f_inf_of(e, c.sign); }
    if pk == K_ZERO && c.kind == K_ZERO { return f_zero_of(e, select(zero_sum_sign(), sp, sp == c.sign)); }
    if pk == K_ZERO { return pack(e, c.sign, w_of(c.mant), c.exp - h, false); }
    let p = w_mul(x.mant, y.mant);
    if c.kind == K_ZERO { return pack(e, sp, p, x.exp + y.exp - h, false); }
    let s = sum(sp, p, x.exp + y.exp, c.sign, w_of(c.mant), c.exp);
    if !s.some { return f_zero_of(e, zero_sum_sign()); }
    return pack(e, s.sign, s.mant, s.exp - h, s.sticky);
}

// ----- the operations (float.rs): NaNs, FZ, and the numbers to the exact arithmetic above.
// Each is called from one place (fp_one), for the reason pack_later gives.

// Input Denormal for an operand FZ flushes.
fn fp_idc(e: u32, b: u64) {
    if fp_fz && (b & f_inf(e)) == 0lu && f_mag(e, b) != 0lu { fp_fl |= FL_IDC; }
}
// A denormal operand read as zero under FZ.
fn fp_flush(e: u32, b: u64) -> u64 {
    if fp_fz && (b & f_inf(e)) == 0lu {
        fp_idc(e, b);
        return b & f_sign(e);
    }
    return b;
}
// FPProcessNaN: quiet (the default NaN under DN); a signalling NaN is an Invalid Operation.
fn fp_quiet(e: u32, b: u64) -> u64 {
    if (b & f_quiet(e)) == 0lu { fp_fl |= FL_IOC; }
    return select(b | f_quiet(e), f_dnan(e), fp_dn);
}
// FPProcessNaNs of up to three operands in order (`three`: c too): the first signalling NaN,
// else the first NaN, made quiet; 0 when no operand is a NaN. Raises Input Denormal for the
// operands FZ flushes, as the unpacking after it would.
fn nans(e: u32, a: u64, b: u64, c: u64, three: bool) -> u64 {
    fp_idc(e, a);
    fp_idc(e, b);
    if three { fp_idc(e, c); }
    let cn = three && f_nan(e, c);
    var pick = 0lu;
    if f_snan(e, a) {
        pick = a;
    } else if f_snan(e, b) {
        pick = b;
    } else if cn && f_snan(e, c) {
        pick = c;
    } else if f_nan(e, a) {
        pick = a;
    } else if f_nan(e, b) {
        pick = b;
    } else if cn {
        pick = c;
    } else {
        return 0lu;
    }
    return fp_quiet(e, pick);
}

// FADD, FSUB, FABD (the caller clears the sign).
fn fp_addsub(e: u32, a: u64, b: u64, subtract: bool) -> u64 {
    let n = nans(e, a, b, 0lu, false);
    if n != 0lu { return n; }
    return s_add(e, a, b ^ select(0lu, f_sign(e), subtract));
}
// FMUL, FNMUL (the caller flips the sign), FMULX (`x`: infinity times zero is 2.0 with the
// product's sign).
fn fp_mul(e: u32, a: u64, b: u64, x: bool) -> u64 {
    let n = nans(e, a, b, 0lu, false);
    if n != 0lu { return n; }
    if x {
        let fa = fp_flush(e, a);
        let fb = fp_flush(e, b);
        if (f_isinf(e, fa) && f_iszero(e, fb)) || (f_iszero(e, fa) && f_isinf(e, fb)) {
            return ((fa ^ fb) & f_sign(e)) | f_two(e);
        }
    }
    return s_mul(e, a, b);
}
fn fp_div(e: u32, a: u64, b: u64) -> u64 {
    let n = nans(e, a, b, 0lu, false);
    if n != 0lu { return n; }
    return s_div(e, a, b);
}
// FMAX, FMIN, and (`nm`) FMAXNM, FMINNM, where a single quiet NaN loses against a number.
fn fp_maxmin(e: u32, a0: u64, b0: u64, is_max: bool, nm: bool) -> u64 {
    var a = a0;
    var b = b0;
    if nm {
        let lose = select(f_inf(e), f_inf(e) | f_sign(e), is_max);
        let qa = f_qnan(e, a);
        let qb = f_qnan(e, b);
        if qa && !qb {
            a = lose;
        } else if qb && !qa {
            b = lose;
        }
    }
    let n = nans(e, a, b, 0lu, false);
    if n != 0lu { return n; }
    let x = fp_flush(e, a);
    let y = fp_flush(e, b);
    // +0 against -0: max +0, min -0
    if f_iszero(e, x) && f_iszero(e, y) { return select(x | y, x & y, is_max); }
    if is_max { return select(y, x, f_key(e, x) > f_key(e, y)); }
    return select(y, x, f_key(e, x) < f_key(e, y));
}
// FPMulAdd(addend, n, m) (`step` 0), FRECPS (1: 2 - n * m) and FRSQRTS (2: (3 - n * m) / 2),
// fused. FPMulAdd: a quiet NaN addend with infinity times zero is an Invalid Operation; the
// steps: infinity times zero gives 2 or 1.5.
fn fp_fused(e: u32, addend0: u64, n0: u64, m: u64, step: u32) -> u64 {
    var addend = addend0;
    var n = n0;
    if step != 0u {
        n = n0 ^ f_sign(e);
        addend = select(f_two(e), f_three(e), step == 2u);
    }
    let x = fp_flush(e, n);
    let y = fp_flush(e, m);
    let inf_zero = (f_isinf(e, x) && f_iszero(e, y)) || (f_iszero(e, x) && f_isinf(e, y));
    if step == 0u && f_qnan(e, addend) && inf_zero {
        fp_idc(e, addend);
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    // (the steps' NaN operands are n and m only: their addend is a constant)
    let r = nans(e, select(n, addend, step == 0u), select(m, n, step == 0u), m, step == 0u);
    if r != 0lu { return r; }
    if step != 0u && inf_zero { return select(f_two(e), f_one_half(e), step == 2u); }
    return s_muladd(e, addend, x, y, step == 2u);
}
fn fp_sqrt(e: u32, a: u64) -> u64 {
    if f_nan(e, a) { return fp_quiet(e, a); }
    return s_sqrt(e, a);
}

// FPCompare as NZCV (bits 31..28): unordered 0011 (an Invalid Operation for any NaN where
// `signal`, else for a signalling one), equal 0110, less 1000, greater 0010.
fn fp_compare(e: u32, a: u64, b: u64, signal: bool) -> u32 {
    let x = fp_flush(e, a);
    let y = fp_flush(e, b);
    if f_nan(e, a) || f_nan(e, b) {
        if signal || f_snan(e, a) || f_snan(e, b) { fp_fl |= FL_IOC; }
        return 0x30000000u;
    }
    let kx = f_key(e, x);
    let ky = f_key(e, y);
    if kx == ky { return 0x60000000u; }
    return select(0x20000000u, 0x80000000u, kx < ky);
}
// The element compares as a mask: FCMEQ (`eq`) quiet, FCMGE (`ge`) and FCMGT signalling.
fn fp_cmp(e: u32, a: u64, b: u64, eq: bool, ge: bool) -> u64 {
    let x = fp_flush(e, a);
    let y = fp_flush(e, b);
    if f_nan(e, a) || f_nan(e, b) {
        if !eq || f_snan(e, a) || f_snan(e, b) { fp_fl |= FL_IOC; }
        return 0lu;
    }
    let kx = f_key(e, x);
    let ky = f_key(e, y);
    return mask_if(select(select(kx > ky, kx >= ky, ge), kx == ky, eq));
}

// |mant * 2^exp| (exp < 0) rounded to an integer in `mode` (sign given for the directed
// modes), and whether that was inexact (fp_inexact).
var<private> fp_inexact: bool;
fn int_round(sign: bool, mant: u64, exp: i32, mode: u32) -> u64 {
    let sh = u32(-exp);
    var iv = 0lu;
    var rbit = false;
    var st = true; // shifted out entirely: mant has at most 53 bits
    if sh < 64u {
        iv = mant >> sh;
        rbit = ((mant >> (sh - 1u)) & 1lu) != 0lu;
        st = (mant & ((1lu << (sh - 1u)) - 1lu)) != 0lu;
    }
    let inexact = rbit || st;
    var up = rbit;
    switch mode {
        case 0u: { up = rbit && (st || (iv & 1lu) != 0lu); }
        case 1u: { up = inexact && !sign; }
        case 2u: { up = inexact && sign; }
        case 3u: { up = false; }
        default: {}
    }
    fp_inexact = inexact;
    return iv + select(0lu, 1lu, up);
}

// FRINT* in `mode` (FPCR's resolved); `exact` (FRINTX) raises Inexact when the value changes.
fn fp_round_int(e: u32, a: u64, mode: u32, exact: bool) -> u64 {
    if f_nan(e, a) { return fp_quiet(e, a); }
    let x = unpack(e, a, fp_fz, false);
    if x.kind == K_ZERO { return f_zero_of(e, x.sign); }
    if x.kind == K_INF || x.exp >= 0 { return a; }
    let iv = int_round(x.sign, x.mant, x.exp, mode);
    if fp_inexact && exact { fp_fl |= FL_IXC; }
    if iv == 0lu { return f_zero_of(e, x.sign); }
    // an integer no wider than the format's precision and at least 1: packed exactly, without
    // flags
    return pack_later(e, x.sign, w_of(iv), 0, false, RM_NEAREST, false, false);
}

// FP to a 32- or 64-bit integer (`wide`) with `fbits` fraction bits, rounding in `mode`,
// saturating: out of range and NaN (0) are an Invalid Operation, else an inexact result raises
// Inexact. A 32-bit result is zero-extended.
fn fp_to_int(e: u32, a: u64, mode: u32, uns: bool, wide: bool, fbits: u32) -> u64 {
    if f_nan(e, a) {
        fp_fl |= FL_IOC;
        return 0lu;
    }
    let x = unpack(e, fp_flush(e, a), false, false);
    var big = x.kind == K_INF;
    var iv = 0lu;
    var inexact = false;
    if x.kind == K_NUM {
        let ex = x.exp + i32(fbits);
        if ex >= 0 {
            big = ex + i32(63u - clz64(x.mant)) >= 64;
            iv = shl64(x.mant, u32(ex));
        } else {
            iv = int_round(x.sign, x.mant, ex, mode);
            inexact = fp_inexact;
        }
    }
    let lim = select(1lu << 31u, 1lu << 63u, wide);
    var ok: bool;
    if uns {
        ok = !big && (!x.sign || iv == 0lu) && (wide || iv <= 0xfffffffflu);
    } else {
        ok = !big && select(iv < lim, iv <= lim, x.sign);
    }
    let ones = select(0xfffffffflu, MAXU64, wide);
    if !ok {
        fp_fl |= FL_IOC;
        if uns { return select(ones, 0lu, x.sign); }
        return select(lim - 1lu, lim, x.sign);
    }
    if inexact { fp_fl |= FL_IXC; }
    return select(iv, 0lu - iv, x.sign) & ones;
}

// An integer (sign- or zero-extended to 64 bits) times 2^-fbits to format e, in FPCR's mode.
fn fp_from_int(e: u32, v: u64, uns: bool, fbits: u32) -> u64 {
    let neg = !uns && i64(v) < 0li;
    return pack(e, neg, w_of(select(v, 0lu - v, neg)), -i32(fbits), false);
}

// FPConvert between half (1), single (2) and double (3): FZ for single and double operands and
// results only, AHP on the half side, NaNs per FPConvertNaN. `odd`: FCVTXN's rounding to odd.
fn fp_convert(v: u64, src: u32, dst: u32, odd: bool) -> u64 {
    let ahp_in = fp_ahp && src == 1u;
    let ahp_out = fp_ahp && dst == 1u;
    if !ahp_in && f_nan(src, v) {
        if ahp_out || (v & f_quiet(src)) == 0lu { fp_fl |= FL_IOC; }
        let sign = (v & f_sign(src)) != 0lu;
        if ahp_out { return f_zero_of(dst, sign); }
        if fp_dn { return f_dnan(dst); }
        // the sign, quiet, the top fraction bits
        let frac = v & ((1lu << f_fb(src)) - 1lu);
        let keep = min(f_fb(src), f_fb(dst));
        return f_zero_of(dst, sign) | f_dnan(dst) | ((frac >> (f_fb(src) - keep)) << (f_fb(dst) - keep));
    }
    let x = unpack(src, v, fp_fz && src != 1u, ahp_in);
    if x.kind == K_ZERO { return f_zero_of(dst, x.sign); }
    if x.kind == K_INF {
        if ahp_out {
            fp_fl |= FL_IOC;
            return f_zero_of(dst, x.sign) | (f_sign(dst) - 1lu);
        }
        return f_inf_of(dst, x.sign);
    }
    return pack_later(dst, x.sign, w_of(x.mant), x.exp, false, select(fp_mode, RM_ODD, odd), fp_fz && dst != 1u, ahp_out);
}

// FRECPE: the Arm ARM's integer steps on the operand's bits, the fraction aligned to a double's.
fn fp_recpe(e: u32, a0: u64) -> u64 {
    if f_nan(e, a0) { return fp_quiet(e, a0); }
    let a = fp_flush(e, a0);
    let sign = a & f_sign(e);
    if f_isinf(e, a) { return sign; }
    if f_iszero(e, a) {
        fp_fl |= FL_DZC;
        return sign | f_inf(e);
    }
    let fb = f_fb(e);
    var exp = i64((a >> fb) & ((1lu << f_eb(e)) - 1lu));
    var frac = (a & ((1lu << fb) - 1lu)) << (52u - fb);
    // a subnormal with the top two fraction bits zero: the reciprocal overflows
    if exp == 0li && (frac >> 50u) == 0lu {
        fp_fl |= FL_OFC | FL_IXC;
        let s = sign != 0lu;
        let to_inf = fp_mode == RM_NEAREST || (fp_mode == RM_PLUS && !s) || (fp_mode == RM_MINUS && s);
        return select(sign | (f_inf(e) - 1lu), sign | f_inf(e), to_inf);
    }
    let exp_off = select(2045li, 253li, e == 2u);
    if exp >= exp_off && fp_fz {
        fp_fl |= FL_UFC;
        return sign;
    }
    if exp == 0li {
        if ((frac >> 51u) & 1lu) == 0lu {
            exp = -1li;
            frac <<= 2u;
        } else {
            frac <<= 1u;
        }
        frac &= (1lu << 52u) - 1lu;
    }
    let est = u64(recip_estimate(256u | u32((frac >> 44u) & 0xfflu)));
    var rexp = exp_off - exp;
    var rfrac = (est & 0xfflu) << 44u;
    if rexp == 0li {
        rfrac = (rfrac >> 1u) | (1lu << 51u);
    } else if rexp == -1li {
        rfrac = (rfrac >> 2u) | (1lu << 50u);
        rexp = 0li;
    }
    return sign | (u64(rexp) << fb) | (rfrac >> (52u - fb));
}

// FRSQRTE.
fn fp_rsqrte(e: u32, a0: u64) -> u64 {
    if f_nan(e, a0) { return fp_quiet(e, a0); }
    let a = fp_flush(e, a0);
    if f_iszero(e, a) {
        fp_fl |= FL_DZC;
        return (a & f_sign(e)) | f_inf(e);
    }
    if (a & f_sign(e)) != 0lu {
        fp_fl |= FL_IOC;
        return f_dnan(e);
    }
    if f_isinf(e, a) { return 0lu; }
    let fb = f_fb(e);
    var exp = i64((a >> fb) & ((1lu << f_eb(e)) - 1lu));
    var frac = (a & ((1lu << fb) - 1lu)) << (52u - fb);
    if exp == 0li {
        // a subnormal normalized: its leading one shifted out at bit 52, the exponent lowered
        let k = clz64(frac) - 11u;
        frac = (frac << k) & ((1lu << 52u) - 1lu);
        exp = 1li - i64(k);
    }
    var scaled = 256u | u32((frac >> 44u) & 0xfflu);
    if (exp & 1li) != 0li { scaled = 128u | u32((frac >> 45u) & 0x7flu); }
    let est = u64(recip_sqrt_estimate(scaled));
    let rexp = (select(3068li, 380li, e == 2u) - exp) / 2li;
    return (u64(rexp) << fb) | ((est & 0xfflu) << (fb - 8u));
}

// FRECPX: the exponent inverted, the fraction zero.
fn fp_recpx(e: u32, a0: u64) -> u64 {
    if f_nan(e, a0) { return fp_quiet(e, a0); }
    let a = fp_flush(e, a0);
    let emask_ = (1lu << f_eb(e)) - 1lu;
    let exp = (a >> f_fb(e)) & emask_;
    return (a & f_sign(e)) | (select(~exp & emask_, emask_ - 1lu, exp == 0lu) << f_fb(e));
}

// One element of any FP op but the scalar compares: the operands x (Vn's element, or the
// general register), y (Vm's, or the fraction bits of the fixed-point conversions) and
// `addend` (FMADD's Va); d the op's field, the rounding mode of FRINT resolved (`exact`:
// FRINTX). The pairwise and across-lanes folds come as the op of their kind.
fn fp_one(op: u32, d: u32, e: u32, f: u32, addend: u64, x: u64, y: u64, exact: bool) -> u64 {
    switch op {
        // FADD ... FACGT, FSQRT and the estimates: armada-semantics' FP element functions
        // @generated fp elements
        case OP_F_MADD, OP_F_MSUB, OP_F_NMADD, OP_F_NMSUB: { return fp_fused(e, addend, x, y, 0u); }
        case OP_F_CMP0: {
            // against zero: LE and LT as 0 >= x and 0 > x
            let rev = d == CMP0_LE || d == CMP0_LT;
            return fp_cmp(e, select(x, 0lu, rev), select(0lu, x, rev), d == CMP0_EQ, d == CMP0_GE || d == CMP0_LE);
        }
        case OP_F_RINT: { return fp_round_int(e, x, d, exact); }
        case OP_F_TO_INT, OP_F_TO_INT_V: {
            // the scalar form's f: a 64-bit register; the vector form's: its element size
            let wide = select(e == 3u, f == 1u, op == OP_F_TO_INT);
            return fp_to_int(e, x, d & 7u, (d & 8u) != 0u, wide, u32(y));
        }
        case OP_INT_TO_F, OP_INT_TO_F_V: { return fp_from_int(e, x, (d & 1u) != 0u, u32(y)); }
        case OP_F_CVT, OP_F_CVTL, OP_F_CVTN: {
            // F_CVT: from size d to e; F_CVTL: e to e + 1; F_CVTN: e to e - 1 (d 1: FCVTXN)
            let src = select(e, d, op == OP_F_CVT);
            let dst = select(select(e + 1u, e - 1u, op == OP_F_CVTN), e, op == OP_F_CVT);
            return fp_convert(x, src, dst, op == OP_F_CVTN && d == 1u);
        }
        default: {
            simd_ok = false;
            return 0lu;
        }
    }
}

// @generated fp after

// The op of an F_PAIR's or F_REDUCE's kind (d = FRED_*).
fn fred_op(kind: u32) -> u32 {
    switch kind {
        case FRED_ADD: { return OP_F_ADD; }
        case FRED_MAX: { return OP_F_MAX; }
        case FRED_MIN: { return OP_F_MIN; }
        case FRED_MAXNM: { return OP_F_MAXNM; }
        default: { return OP_F_MINNM; }
    }
}

// Executes an FP micro-op (those exec_simd does not know); false leaves it, untouched, to the
// host. All but the scalar compares are one loop over the result's elements (or, for the
// across-lanes folds, the steps of the fold), each through fp_one and one round_pack.
fn exec_fp(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, imm: u64) -> bool {
    let va = a & 31u;
    let vb = b & 31u;
    let vc = c & 31u;
    let fpcr = u32(rget(S_FPCR));
    fp_mode = (fpcr >> 22u) & 3u;
    fp_fz = (fpcr & (1u << 24u)) != 0u;
    fp_dn = (fpcr & (1u << 25u)) != 0u;
    fp_ahp = (fpcr & (1u << 26u)) != 0u;
    fp_fl = u32(rget(S_FPSR)) & FL_EXC;
    switch op {
        case OP_F_CMP, OP_F_CCMP: {
            if e != 2u && e != 3u { return false; }
            if op == OP_F_CCMP && !cond_holds(d & 15u, nzcv) {
                nzcv = u32(imm & 0xf0000000lu);
            } else {
                let xv = vget(vload(vb), e, 0u);
                var yv = 0lu;
                if op != OP_F_CMP || (d & FCMP_ZERO) == 0u { yv = vget(vload(vc), e, 0u); }
                let signal = (d & select(FCMP_CCMP_SIGNAL, FCMP_SIGNAL, op == OP_F_CMP)) != 0u;
                nzcv = fp_compare(e, xv, yv, signal);
            }
            rset(S_FPSR, rget(S_FPSR) | u64(fp_fl));
            return true;
        }
        default: {}
    }
    if op < OP_F_ADD || op > OP_INT_TO_F_V || op == OP_F_ABS || op == OP_F_NEG { return false; }
    let cvt = op == OP_F_CVT || op == OP_F_CVTL || op == OP_F_CVTN;
    if !cvt && e != 2u && e != 3u { return false; }
    let unary = fp_element_unary(op) || op == OP_F_CMP0 || op == OP_F_RINT || op == OP_F_TO_INT_V ||
                op == OP_INT_TO_F_V;
    let fused = op == OP_F_MADD || op == OP_F_MSUB || op == OP_F_NMADD || op == OP_F_NMSUB;
    let n = vload(vb);
    var m = V2(0lu, 0lu);
    if op == OP_F_PAIR {
        m = vload(vc);
    } else if !unary && !cvt && op != OP_F_REDUCE && op != OP_F_TO_INT && op != OP_INT_TO_F {
        m = opnd_m(vc, e, imm);
    }
    // FMADD and friends: the addend (Va, in d), it and the first factor negated as the op says
    var addend = V2(0lu, 0lu);
    if fused { addend = vload(d & 31u); }
    let neg_a = select(0lu, f_sign(e), op == OP_F_NMADD || op == OP_F_NMSUB);
    let neg_n = select(0lu, f_sign(e), op == OP_F_MSUB || op == OP_F_NMADD);
    var dd = d;
    var exact = false;
    if op == OP_F_RINT && (d == RMODE_FPCR || d == RMODE_FPCR_EXACT) {
        exact = d == RMODE_FPCR_EXACT;
        dd = fp_mode;
    }
    // the element's op, and the result's shape: `cnt` elements of size `re` from index `base`
    // of `r`
    var eop = op;
    if op == OP_F_PAIR || op == OP_F_REDUCE { eop = fred_op(d); }
    var cnt = 1u << (f - e);
    var re = e;
    var base = 0u;
    var r = V2(0lu, 0lu);
    var steps = cnt;
    switch op {
        case OP_F_REDUCE: {
            // the manual's Reduce(): the halves reduced, then op(low half, high half): for four
            // elements (0 1) (2 3) and the two results
            steps = cnt - 1u;
            r = V2(vget(n, e, 0u), 0lu);
        }
        case OP_F_CVT: {
            cnt = 1u;
            steps = 1u;
        }
        case OP_F_CVTL: {
            cnt = 8u >> e;
            steps = cnt;
            re = e + 1u;
        }
        case OP_F_CVTN: {
            // into the lower half of Vd (the upper zero), for the "2" forms (f 1) the upper half
            // (the lower kept), or one element (f 2)
            re = e - 1u;
            cnt = select(8u >> re, 1u, f == 2u);
            steps = cnt;
            base = select(0u, 8u >> re, f == 1u);
            if f == 1u { r = datamask(vload(va), 3u); }
        }
        case OP_F_TO_INT, OP_INT_TO_F: { steps = 1u; }
        default: {}
    }
    var t0 = 0lu;
    var t1 = 0lu;
    simd_ok = true;
    for (var i = 0u; i < steps; i++) {
        lp(2u);
        var xv = vget(n, e, i);
        var yv = vget(m, e, i);
        var out = i;
        switch op {
            case OP_F_PAIR: {
                // element i from elements 2i and 2i + 1 of the concatenation Vm:Vn
                let j = 2u * i;
                xv = select(vget(m, e, j - cnt), vget(n, e, j), j < cnt);
                yv = select(vget(m, e, j + 1u - cnt), vget(n, e, j + 1u), j + 1u < cnt);
            }
            case OP_F_REDUCE: {
                xv = select(vget(n, e, 2u * i), t0, i == 2u);
                yv = select(vget(n, e, 2u * i + 1u), t1, i == 2u);
                out = 0u;
            }
            case OP_F_CVT: { xv = vget(n, d, 0u); }
            case OP_F_CVTL: { xv = vget(n, e, cnt * f + i); }
            case OP_F_TO_INT_V, OP_INT_TO_F_V, OP_F_TO_INT: { yv = imm; }
            case OP_INT_TO_F: {
                let raw = x[b];
                let uns = (d & 1u) != 0u;
                xv = raw;
                if f == 0u { xv = select(u64(i64(i32(u32(raw)))), raw & LO32, uns); }
                yv = imm;
            }
            default: {}
        }
        if op == OP_INT_TO_F_V && (d & 1u) == 0u { xv = u64(esx(xv, e)); }
        pk_on = false;
        var v = fp_one(eop, dd, e, f, vget(addend, e, i) ^ neg_a, xv ^ select(0lu, neg_n, fused), yv, exact);
        if pk_on { v = round_pack(pk_e, pk_sign, pk_mant, pk_exp, pk_sticky, pk_mode, pk_fz, pk_ahp); }
        // FNMUL's product negated and FABD's difference made positive, NaNs included, once
        // rounded (generated from the definitions: fp_after)
        v = fp_after(op, e, v);
        if i == 0u { t0 = v; } else if i == 1u { t1 = v; }
        r = vset(r, re, base + out, v);
    }
    if !simd_ok { return false; }
    if op == OP_F_TO_INT {
        x[a] = t0;
    } else {
        vstore(va, r);
    }
    rset(S_FPSR, rget(S_FPSR) | u64(fp_fl));
    return true;
}
