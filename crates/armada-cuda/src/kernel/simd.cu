// AdvSIMD and FP micro-ops on the GPU: the common integer vector operations, and IEEE
// arithmetic when FPCR asks for nothing unusual (round to nearest, no flush-to-zero, no
// default-NaN, no alternative half precision). Everything else (saturating and estimate
// operations, half precision, other FPCR modes) returns false and the host runs it.
// Semantics mirror crates/armada-core/src/cpu/fp.rs, fp/lanes.rs and fp/float.rs.

struct V2 {
    u64 lo, hi;
};

__device__ __forceinline__ u64 emask(u32 e) { return e >= 3 ? MAXU64 : (1ull << (8u << e)) - 1; }
__device__ __forceinline__ u32 ebits(u32 e) { return 8u << e; }
__device__ __forceinline__ i64 esx(u64 x, u32 e) {
    u32 sh = 64 - ebits(e);
    return (i64)(x << sh) >> sh;
}
__device__ __forceinline__ u64 vget(V2 v, u32 e, u32 i) {
    u32 off = i * ebits(e);
    u64 w = off < 64 ? v.lo : v.hi;
    return (w >> (off & 63)) & emask(e);
}
__device__ __forceinline__ void vset(V2& v, u32 e, u32 i, u64 x) {
    u32 off = i * ebits(e);
    u64 m = emask(e) << (off & 63);
    u64 val = (x & emask(e)) << (off & 63);
    if (off < 64) v.lo = (v.lo & ~m) | val;
    else v.hi = (v.hi & ~m) | val;
}
__device__ __forceinline__ V2 datamask(V2 v, u32 f) {
    if (f >= 4) return v;
    V2 r;
    r.hi = 0;
    r.lo = f >= 3 ? v.lo : v.lo & ((1ull << (8u << f)) - 1);
    return r;
}
__device__ __forceinline__ V2 vload(const u64* rec, u32 r) {
    V2 v;
    v.lo = rec[S_V + 2 * (r & 31)];
    v.hi = rec[S_V + 2 * (r & 31) + 1];
    return v;
}
__device__ __forceinline__ void vstore(u64* rec, u32 r, V2 v) {
    rec[S_V + 2 * (r & 31)] = v.lo;
    rec[S_V + 2 * (r & 31) + 1] = v.hi;
    rec[S_VDIRTY] = 1;
}
__device__ __forceinline__ V2 broadcast(u64 x, u32 e) {
    V2 r = {0, 0};
    for (u32 i = 0; i < (16u >> e); i++) vset(r, e, i, x);
    return r;
}
__device__ __forceinline__ u64 mask_if(bool t) { return t ? MAXU64 : 0; }
__device__ __forceinline__ u8 vbyte(V2 v, u32 i) { return (u8)((i < 8 ? v.lo >> (8 * i) : v.hi >> (8 * (i - 8))) & 0xff); }
__device__ __forceinline__ void vsetbyte(V2& v, u32 i, u8 b) { vset(v, 0, i, b); }

// ----- IEEE helpers on bit patterns (fast mode only: RN, no FZ, no DN) ----------------------

#ifdef ARMADA_SIM
#include <math.h>
static inline float f32_of(u64 b) { u32 v = (u32)b; float f; memcpy(&f, &v, 4); return f; }
static inline u64 bits_f32(float f) { u32 v; memcpy(&v, &f, 4); return v; }
static inline double f64_of(u64 b) { double d; memcpy(&d, &b, 8); return d; }
static inline u64 bits_f64(double d) { u64 v; memcpy(&v, &d, 8); return v; }
#else
__device__ __forceinline__ float f32_of(u64 b) { return __uint_as_float((u32)b); }
__device__ __forceinline__ u64 bits_f32(float f) { return __float_as_uint(f); }
__device__ __forceinline__ double f64_of(u64 b) { return __longlong_as_double((long long)b); }
__device__ __forceinline__ u64 bits_f64(double d) { return (u64)__double_as_longlong(d); }
#endif

template <int E> struct FT;
template <> struct FT<2> {
    typedef float T;
    static __device__ __forceinline__ T of(u64 b) { return f32_of(b); }
    static __device__ __forceinline__ u64 bits(T x) { return bits_f32(x); }
    static const u64 SIGN = 1ull << 31;
    static const u64 INF = 0x7f800000ull;
    static const u64 QUIET = 1ull << 22;
    static const u32 FRAC = 23;
    static const i32 BIAS = 127;
};
template <> struct FT<3> {
    typedef double T;
    static __device__ __forceinline__ T of(u64 b) { return f64_of(b); }
    static __device__ __forceinline__ u64 bits(T x) { return bits_f64(x); }
    static const u64 SIGN = 1ull << 63;
    static const u64 INF = 0x7ff0000000000000ull;
    static const u64 QUIET = 1ull << 51;
    static const u32 FRAC = 52;
    static const i32 BIAS = 1023;
};

#define F_T typename FT<E>::T
#define F_SIGN FT<E>::SIGN
#define F_INF FT<E>::INF
#define F_QUIET FT<E>::QUIET
#define F_DNAN (FT<E>::INF | FT<E>::QUIET)

template <int E> __device__ __forceinline__ bool f_nan(u64 b) { return (b & ~F_SIGN) > F_INF; }
template <int E> __device__ __forceinline__ bool f_snan(u64 b) { return f_nan<E>(b) && !(b & F_QUIET); }
template <int E> __device__ __forceinline__ bool f_qnan(u64 b) { return f_nan<E>(b) && (b & F_QUIET); }
template <int E> __device__ __forceinline__ bool f_inf(u64 b) { return (b & ~F_SIGN) == F_INF; }
template <int E> __device__ __forceinline__ bool f_zero(u64 b) { return (b & ~F_SIGN) == 0; }
template <int E> __device__ __forceinline__ u64 f_canon(F_T x) { return x != x ? F_DNAN : FT<E>::bits(x); }
template <int E> __device__ __forceinline__ F_T fv(u64 b) { return FT<E>::of(b); }

// FPSR cumulative exception flags (cpu/fp/soft.rs).
#define FL_IOC 1u
#define FL_DZC 2u
#define FL_OFC 4u
#define FL_IXC 16u
#define FL_EXC 0x9fu

// Finite, and at least SAFE_MIN in magnitude (the CPU engine's `safe`): a result whose only
// possible exception is Inexact, and whose error terms below are exact.
template <int E> __device__ __forceinline__ u64 f_safe_min() { return E == 2 ? (2ull << 23) : (63ull << 52); }
template <int E> __device__ __forceinline__ bool f_finite(u64 b) { return (b & ~F_SIGN) < F_INF; }
template <int E> __device__ __forceinline__ bool f_safe(u64 b) {
    return ((b & ~F_SIGN) - f_safe_min<E>()) < (F_INF - f_safe_min<E>());
}

// Whether the finite s = RN(a + b) is inexact (Fast2Sum).
template <int E> __device__ __forceinline__ bool sum_inexact(F_T a, F_T b, F_T s) {
    F_T x = a, y = b;
    if (fabs(b) > fabs(a)) { x = b; y = a; }
    return s - x != y;
}

// The arithmetic below is the CPU engine's fast path (cpu/fp/float.rs): plain IEEE results,
// and Inexact worked out with an error-free transformation while FPSR.IXC is clear. Whatever
// that path hands to its exact software arithmetic (NaN and infinite operands, overflow, tiny
// results) clears `ok`, and the host runs the instruction.
template <int E> __device__ __forceinline__ u64 f_add(u64 a, u64 b, bool neg_b, u32& fl, bool& ok) {
    F_T x = fv<E>(a), y = fv<E>(b);
    if (neg_b) y = -y;
    F_T s = x + y;
    u64 sb = FT<E>::bits(s);
    if (!f_finite<E>(sb)) { ok = false; return 0; }
    if (!(fl & FL_IXC) && sum_inexact<E>(x, y, s)) fl |= FL_IXC;
    return sb;
}

template <int E> __device__ __forceinline__ u64 f_mul(u64 a, u64 b, u32& fl, bool& ok) {
    F_T x = fv<E>(a), y = fv<E>(b);
    F_T r = x * y;
    u64 rb = FT<E>::bits(r);
    // an exact zero: a zero factor times a finite one raises nothing
    if ((f_zero<E>(a) && f_finite<E>(b)) || (f_zero<E>(b) && f_finite<E>(a))) return rb;
    if (!f_safe<E>(rb)) { ok = false; return 0; }
    if (!(fl & FL_IXC)) {
        bool inexact = E == 2 ? ((double)x * (double)y != (double)r) : (fma((double)x, (double)y, -(double)r) != 0.0);
        if (inexact) fl |= FL_IXC;
    }
    return rb;
}

template <int E> __device__ __forceinline__ u64 f_div(u64 a, u64 b, u32& fl, bool& ok) {
    F_T x = fv<E>(a), y = fv<E>(b);
    F_T q = x / y;
    u64 qb = FT<E>::bits(q);
    // zero divided by a finite non-zero number: an exact zero
    if (f_zero<E>(a) && f_finite<E>(b) && !f_zero<E>(b)) return qb;
    if (!f_safe<E>(qb)) { ok = false; return 0; }
    if (fl & FL_IXC) return qb;
    bool inexact;
    if (E == 2) inexact = (double)q * (double)y != (double)x;
    else {
        if (fabs((double)x) < f64_of(63ull << 52)) { ok = false; return 0; }
        inexact = fma(-(double)q, (double)y, (double)x) != 0.0;
    }
    if (inexact) fl |= FL_IXC;
    return qb;
}

template <int E> __device__ __forceinline__ u64 f_sqrt(u64 a, u32& fl, bool& ok) {
    F_T x = fv<E>(a);
    F_T r = sqrt(x);
    u64 rb = FT<E>::bits(r);
    if (f_zero<E>(a)) return a; // sqrt(+-0) = +-0, exact
    if (!f_safe<E>(rb)) { ok = false; return 0; }
    if (fl & FL_IXC) return rb;
    bool inexact;
    if (E == 2) inexact = (double)r * (double)r != (double)x;
    else {
        if ((double)x < f64_of(63ull << 52)) { ok = false; return 0; }
        inexact = fma(-(double)r, (double)r, (double)x) != 0.0;
    }
    if (inexact) fl |= FL_IXC;
    return rb;
}

template <int E> __device__ __noinline__ u64 f_muladd(u64 addend, u64 n, u64 m, u32& fl, bool& ok) {
    F_T x = fv<E>(n), y = fv<E>(m), z = fv<E>(addend);
    F_T r = fma(x, y, z);
    u64 rb = FT<E>::bits(r);
    if (!f_safe<E>(rb)) { ok = false; return 0; }
    if (fl & FL_IXC) return rb;
    bool inexact;
    if (E == 2) {
        // the product is exact in double, the sum exact as s + t (2Sum)
        double p = (double)x * (double)y, c = (double)z;
        double s = p + c, bb = s - p;
        double t = (p - (s - bb)) + (c - bb);
        inexact = t != 0.0 || s != (double)r;
    } else {
        double p = (double)x * (double)y;
        double pa = fabs(p), ca = fabs((double)z);
        double lo = f64_of(123ull << 52), hi = f64_of(2023ull << 52);
        if (!(pa >= lo && pa <= hi && ca <= hi) || fma((double)x, (double)y, -p) != 0.0) { ok = false; return 0; }
        inexact = sum_inexact<3>(p, (double)z, (double)r);
    }
    if (inexact) fl |= FL_IXC;
    return rb;
}

template <int E> __device__ __forceinline__ u64 f_maxmin(u32 op, u64 a, u64 b, bool& ok) {
    if (f_nan<E>(a) || f_nan<E>(b)) { ok = false; return 0; }
    bool is_max = op == OP_F_MAX || op == OP_F_MAXNM;
    if (f_zero<E>(a) && f_zero<E>(b)) return is_max ? (a & b) : (a | b);
    if (is_max) return fv<E>(a) > fv<E>(b) ? a : b;
    return fv<E>(a) < fv<E>(b) ? a : b;
}

// FMULX: as FMUL, but infinity times zero is 2.0 with the product's sign.
template <int E> __device__ __forceinline__ u64 f_mulx(u64 a, u64 b, u32& fl, bool& ok) {
    if (f_nan<E>(a) || f_nan<E>(b)) { ok = false; return 0; }
    if ((f_inf<E>(a) && f_zero<E>(b)) || (f_zero<E>(a) && f_inf<E>(b)))
        return ((a ^ b) & F_SIGN) | FT<E>::bits((F_T)2.0);
    return f_mul<E>(a, b, fl, ok);
}

template <int E> __device__ __forceinline__ bool f_ordered(u64 a, u64 b, bool& ok) {
    if (f_nan<E>(a) || f_nan<E>(b)) { ok = false; return false; }
    return true;
}
// FPCompare as NZCV: unordered 0011 (an Invalid Operation where `signal`, FCMPE, or either is
// a signalling NaN), equal 0110, less 1000, greater 0010.
template <int E> __device__ __forceinline__ u32 f_compare(u64 a, u64 b, bool signal, u32& fl) {
    u32 r;
    if (f_nan<E>(a) || f_nan<E>(b)) {
        if (signal || f_snan<E>(a) || f_snan<E>(b)) fl |= FL_IOC;
        r = 3;
    } else if (fv<E>(a) == fv<E>(b)) r = 6;
    else if (fv<E>(a) < fv<E>(b)) r = 8;
    else r = 2;
    return r << 28;
}

template <int E> __device__ __forceinline__ F_T round_val(F_T x, u32 mode) {
    switch (mode) {
    case 0: return rint(x);
    case 1: return ceil(x);
    case 2: return floor(x);
    case 3: return trunc(x);
    default: return round(x);
    }
}

template <int E> __device__ __forceinline__ F_T pow2(i32 n) { return FT<E>::of((u64)(n + FT<E>::BIAS) << FT<E>::FRAC); }

// FP to integer, as the CPU engine: out of range and NaN (Invalid Operation) go to the host.
template <int E> __device__ __noinline__ u64 f_to_int(u64 a, u32 mode, bool uns, bool wide, u32 fbits, u32& fl, bool& ok) {
    if (f_nan<E>(a)) { ok = false; return 0; }
    F_T x = fv<E>(a);
    if (fbits) x = x * pow2<E>((i32)fbits);
    F_T r = round_val<E>(x, mode);
    i32 bits = wide ? 64 : 32;
    F_T lo = uns ? (F_T)0 : -pow2<E>(bits - 1);
    F_T hi = uns ? pow2<E>(bits) : pow2<E>(bits - 1);
    if (!(r >= lo && r < hi)) { ok = false; return 0; }
    if (r != x) fl |= FL_IXC;
    if (!wide) return uns ? (u64)(u32)r : (u64)(u32)(i32)r;
    return uns ? (u64)r : (u64)(i64)r;
}

template <int E> __device__ __forceinline__ u64 f_from_int(u64 x, bool uns, u32 fbits, u32& fl) {
    F_T r;
    u64 mag;
    if (uns) { r = (F_T)x; mag = x; }
    else { r = (F_T)(i64)x; mag = (i64)x < 0 ? 0 - x : x; }
    if (mag != 0) {
        u64 odd = mag >> (63 - a_clz64(mag & (0 - mag)));
        if (odd >> (FT<E>::FRAC + 1)) fl |= FL_IXC;
    }
    if (fbits) r = r * pow2<E>(-(i32)fbits);
    return FT<E>::bits(r);
}

// ---- the reciprocal estimates and steps (FRECPE, FRSQRTE, FRECPX, FRECPS, FRSQRTS, URECPE,
// URSQRTE), as the CPU engine computes them (cpu/fp/float.rs) under the plain FPCR this code runs
// under (round to nearest, no flushing): integer steps on the operand's bits. NaN operands go to
// the host, which propagates them.

// RecipEstimate: a 9-bit input in [256, 511] to a 9-bit estimate.
__device__ __forceinline__ u32 recip_estimate(u32 input) {
    u32 b = (1u << 19) / (input * 2 + 1);
    return (b + 1) >> 1;
}

// RecipSqrtEstimate: a 9-bit input in [128, 511] to a 9-bit estimate. The Arm ARM's search for
// the least b >= 512 with a * (b + 1)^2 >= 2^28 starts from the square root's floor less 2
// (at or below that b), so it takes a step or two instead of up to 512.
__device__ __forceinline__ u32 recip_sqrt_estimate(u32 input) {
    u64 a = input;
    if (a < 256) a = a * 2 + 1;
    else a = ((a >> 1) << 1) * 2 + 2;
    i64 s = (i64)sqrt((double)(1u << 28) / (double)a) - 2;
    u64 b = s > 512 ? (u64)s : 512;
    while (a * (b + 1) * (b + 1) < (1ull << 28)) b++;
    return (u32)((b + 1) / 2);
}

template <int E> __device__ __forceinline__ u32 f_exp_bits() { return E == 2 ? 8 : 11; }

template <int E> __device__ __noinline__ u64 f_recpe(u64 a, u32& fl, bool& ok) {
    if (f_nan<E>(a)) { ok = false; return 0; }
    const u32 fb = FT<E>::FRAC;
    u64 sign = a & F_SIGN;
    if (f_inf<E>(a)) return sign;
    if (f_zero<E>(a)) { fl |= FL_DZC; return sign | F_INF; }
    i64 exp = (i64)((a >> fb) & ((1ull << f_exp_bits<E>()) - 1));
    u64 frac = (a & ((1ull << fb) - 1)) << (52 - fb); // aligned to a double's 52 bits
    // a subnormal with the top two fraction bits zero: the reciprocal overflows (to infinity,
    // rounding to nearest)
    if (exp == 0 && frac >> 50 == 0) { fl |= FL_OFC | FL_IXC; return sign | F_INF; }
    if (exp == 0) {
        if (((frac >> 51) & 1) == 0) { exp = -1; frac <<= 2; }
        else frac <<= 1;
        frac &= (1ull << 52) - 1;
    }
    u64 est = recip_estimate(256 | (u32)((frac >> 44) & 0xff));
    i64 rexp = (E == 2 ? 253 : 2045) - exp;
    u64 rfrac = (est & 0xff) << 44;
    if (rexp == 0) rfrac = (rfrac >> 1) | (1ull << 51);
    else if (rexp == -1) { rfrac = (rfrac >> 2) | (1ull << 50); rexp = 0; }
    return sign | ((u64)rexp << fb) | (rfrac >> (52 - fb));
}

template <int E> __device__ __noinline__ u64 f_rsqrte(u64 a, u32& fl, bool& ok) {
    if (f_nan<E>(a)) { ok = false; return 0; }
    const u32 fb = FT<E>::FRAC;
    if (f_zero<E>(a)) { fl |= FL_DZC; return (a & F_SIGN) | F_INF; }
    if (a & F_SIGN) { fl |= FL_IOC; return F_DNAN; }
    if (f_inf<E>(a)) return 0;
    i64 exp = (i64)((a >> fb) & ((1ull << f_exp_bits<E>()) - 1));
    u64 frac = (a & ((1ull << fb) - 1)) << (52 - fb);
    if (exp == 0) {
        while (((frac >> 51) & 1) == 0) { frac <<= 1; exp--; }
        frac = (frac & ((1ull << 51) - 1)) << 1;
    }
    u32 scaled = (exp & 1) ? 128 | (u32)((frac >> 45) & 0x7f) : 256 | (u32)((frac >> 44) & 0xff);
    u64 est = recip_sqrt_estimate(scaled);
    i64 rexp = ((E == 2 ? 380 : 3068) - exp) / 2;
    return ((u64)rexp << fb) | ((est & 0xff) << (fb - 8));
}

template <int E> __device__ __forceinline__ u64 f_recpx(u64 a, bool& ok) {
    if (f_nan<E>(a)) { ok = false; return 0; }
    const u32 fb = FT<E>::FRAC;
    u64 emask_ = (1ull << f_exp_bits<E>()) - 1;
    u64 exp = (a >> fb) & emask_;
    return (a & F_SIGN) | ((exp == 0 ? emask_ - 1 : ~exp & emask_) << fb);
}

// FRECPS: 2 - n * m, fused.
template <int E> __device__ __forceinline__ u64 f_recps(u64 n, u64 m, u32& fl, bool& ok) {
    return f_muladd<E>(FT<E>::bits((F_T)2), n ^ F_SIGN, m, fl, ok);
}

// FRSQRTS: (3 - n * m) / 2 with one rounding. The CPU engine's fast path, taken only where
// Inexact is already set (it does not work Inexact out): halving a factor that halves exactly,
// or, both factors tiny, a product that vanishes next to 3.
template <int E> __device__ __noinline__ u64 f_rsqrts(u64 n, u64 m, u32& fl, bool& ok) {
    if (!(fl & FL_IXC)) { ok = false; return 0; }
    F_T x = fv<E>(n ^ F_SIGN), y = fv<E>(m);
    F_T half = (F_T)0.5, two = (F_T)2;
    F_T xh = x * half, yh = y * half, r;
    if (xh * two == x) r = fma(xh, y, (F_T)1.5);
    else if (yh * two == y) r = fma(x, yh, (F_T)1.5);
    else r = fma(x, y, (F_T)3) * half;
    u64 rb = FT<E>::bits(r);
    if (!f_safe<E>(rb)) { ok = false; return 0; }
    return rb;
}

// URECPE, URSQRTE: of a 32-bit element.
__device__ __forceinline__ u32 urecpe(u32 x) { return x >> 31 == 0 ? 0xffffffffu : recip_estimate(x >> 23) << 23; }
__device__ __forceinline__ u32 ursqrte(u32 x) { return x >> 30 == 0 ? 0xffffffffu : recip_sqrt_estimate(x >> 23) << 23; }

// S <-> D conversion (FPConvert): NaNs, overflow and tiny results go to the host.
__device__ __forceinline__ u64 f_convert(u64 x, u32 from, u32 to, u32& fl, bool& ok) {
    if (from == 2) {
        if (f_nan<2>(x)) { ok = false; return 0; }
        return bits_f64((double)f32_of(x));
    }
    if (f_nan<3>(x)) { ok = false; return 0; }
    double dv = f64_of(x);
    float r = (float)dv;
    u64 rb = bits_f32(r);
    if (!f_safe<2>(rb)) { ok = false; return 0; }
    if (!(fl & FL_IXC) && (double)r != dv) fl |= FL_IXC;
    return rb;
}

template <int E> __device__ __forceinline__ u64 fp_red(u32 kind, u64 x, u64 y, u32& fl, bool& ok) {
    switch (kind) {
    case FRED_ADD: return f_add<E>(x, y, false, fl, ok);
    case FRED_MAX: return f_maxmin<E>(OP_F_MAX, x, y, ok);
    case FRED_MIN: return f_maxmin<E>(OP_F_MIN, x, y, ok);
    case FRED_MAXNM: return f_maxmin<E>(OP_F_MAXNM, x, y, ok);
    default: return f_maxmin<E>(OP_F_MINNM, x, y, ok);
    }
}

// The FP element functions armada-semantics defines (fp_data_processing.rs): f_arith, the
// two-operand arithmetic out of line, and the macros of f_elem's other cases and labels
// @include fp_elements.cu

// One element of the element-wise FP ops. `y` is the second operand, or the fraction bits of
// the fixed-point conversions; `exact` marks FRINTX.
template <int E> __device__ __forceinline__ u64 f_elem(u32 op, u32 d, u64 x, u64 y, bool exact, u32& fl, bool& ok) {
    switch (op) {
    FP_ARITH_CASES return f_arith<E>(op, x, y, fl, ok);
    FP_INLINE_ELEMENTS
    case OP_F_CMP0: {
        if (!f_ordered<E>(x, 0, ok)) return 0;
        F_T v = fv<E>(x);
        switch (d) {
        case CMP0_EQ: return mask_if(v == (F_T)0);
        case CMP0_GE: return mask_if(v >= (F_T)0);
        case CMP0_GT: return mask_if(v > (F_T)0);
        case CMP0_LE: return mask_if((F_T)0 >= v);
        default: return mask_if((F_T)0 > v);
        }
    }
    case OP_F_ABS: return x & ~F_SIGN;
    case OP_F_NEG: return x ^ F_SIGN;
    case OP_F_RINT: {
        if (f_nan<E>(x)) { ok = false; return 0; }
        F_T v = fv<E>(x);
        F_T r = round_val<E>(v, d);
        if (exact && r != v) fl |= FL_IXC;
        return FT<E>::bits(r);
    }
    case OP_F_TO_INT_V: return f_to_int<E>(x, d & 7, (d & 8) != 0, E == 3, (u32)y, fl, ok);
    case OP_INT_TO_F_V: {
        bool uns = d & 1;
        u64 v = uns ? x & emask(E) : (u64)esx(x, E);
        return f_from_int<E>(v, uns, (u32)y, fl);
    }
    default: ok = false; return 0;
    }
}

// The second operand: Vm, or one element of Vm broadcast (by-element forms).
__device__ __forceinline__ V2 opnd_m(const u64* rec, u32 c, u32 e, u64 imm) {
    V2 m = vload(rec, c);
    if (imm & BY_ELEM) return broadcast(vget(m, e, (u32)(imm & 15)), e);
    return m;
}

__device__ __forceinline__ u64 clmul_lo(u64 a, u64 b, u64& hi) {
    u64 lo = 0;
    hi = 0;
    for (int i = 0; i < 64; i++) {
        if ((b >> i) & 1) {
            lo ^= a << i;
            if (i) hi ^= a >> (64 - i);
        }
    }
    return lo;
}

// Integer element op of the element-wise group; `ok` is cleared for what the host must do.
// qc: set where a saturating op saturated (FPSR.QC).
__device__ __forceinline__ u64 int_elem(u32 op, u32 d, u32 e, u64 o, u64 xx, u64 y, u64 imm, bool& ok,
                                        bool& qc) {
    switch (op) {
// (ADD, SUB, MUL, MLA, MLS, the compares, MAX, MIN, ABD, the halving adds, CMP0, NEG, ABS,
// CNT, CLZ, CLS, RBIT, SHL, SHR (and SRA), SLI, SRI, PMUL and the saturating ops: defined in
// armada-semantics; and ELEMENT_CASES, ELEMENT_UNARY)
// @include elements.cu
    default: ok = false; return 0;
    }
}

// A long element function (armada-semantics: LONG_ELEMENTS, defined in elements.cu): o is
// Vd's element and w Vn's at twice the size e, xx and y Vn's and Vm's at size e; `ok` is
// cleared for what the host must do, `qc` set where a saturating op saturated.
__device__ __forceinline__ u64 long_elem(u32 op, u32 d, u32 e, u64 o, u64 xx, u64 y, u64 w, u64 imm, bool& ok,
                                         bool& qc) {
    switch (op) {
    LONG_ELEMENTS
    default: ok = false; return 0;
    }
}

// A narrowing element function (armada-semantics: NARROW_ELEMENTS, defined in elements.cu): xx
// and y are Vn's and Vm's elements at twice the size e, the result one of size e.
__device__ __forceinline__ u64 narrow_elem(u32 op, u32 d, u32 e, u64 xx, u64 y, u64 imm, bool& ok, bool& qc) {
    switch (op) {
    NARROW_ELEMENTS
    default: ok = false; return 0;
    }
}

// Executes an FP/SIMD micro-op that needs no memory. Returns false to leave it to the host.
// x: the general registers; rec: the lane record (vector registers, FPCR, FPSR).
__device__ __noinline__ bool exec_simd(u64* rec, u64* x, u32& nzcv, u32 op, u32 a, u32 b, u32 c,
                                       u32 d, u32 e, u32 f, u64 imm) {
    const u32 va = a & 31, vb = b & 31, vc = c & 31;
    switch (op) {
    // ---- moves and permutes
    case OP_V_MOVI: {
        V2 r;
        r.lo = imm;
        r.hi = f >= 4 ? imm : 0;
        vstore(rec, va, datamask(r, f));
        return true;
    }
    case OP_V_ORR_IMM:
    case OP_V_AND_IMM: {
        V2 o = vload(rec, va), r;
        if (op == OP_V_ORR_IMM) { r.lo = o.lo | imm; r.hi = o.hi | imm; }
        else { r.lo = o.lo & imm; r.hi = o.hi & imm; }
        vstore(rec, va, datamask(r, f));
        return true;
    }
    case OP_V_DUP_ELEM: vstore(rec, va, datamask(broadcast(vget(vload(rec, vb), e, (u32)imm), e), f)); return true;
    case OP_V_DUP_GEN: vstore(rec, va, datamask(broadcast(x[b], e), f)); return true;
    case OP_V_URECPE:
    case OP_V_URSQRTE: {
        V2 n = vload(rec, vb), r = {0, 0};
        for (u32 i = 0; i < (1u << (f - 2)); i++) {
            u32 v = (u32)vget(n, 2, i);
            vset(r, 2, i, op == OP_V_URECPE ? urecpe(v) : ursqrte(v));
        }
        vstore(rec, va, r);
        return true;
    }
    case OP_V_INS_ELEM: {
        V2 r = vload(rec, va);
        vset(r, e, (u32)imm, vget(vload(rec, vb), e, d));
        vstore(rec, va, r);
        return true;
    }
    case OP_V_INS_GEN: {
        V2 r = vload(rec, va);
        vset(r, e, (u32)imm, x[b]);
        vstore(rec, va, r);
        return true;
    }
    case OP_V_UMOV: x[a] = vget(vload(rec, vb), e, (u32)imm); return true;
    case OP_V_SMOV: {
        i64 s = esx(vget(vload(rec, vb), e, (u32)imm), e);
        x[a] = f == 1 ? (u64)s : (u64)(u32)s;
        return true;
    }
    case OP_V_EXT: {
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        u32 ds = 1u << f;
        for (u32 i = 0; i < ds; i++) {
            u32 j = (u32)imm + i;
            vsetbyte(r, i, j < ds ? vbyte(n, j) : vbyte(m, j - ds));
        }
        vstore(rec, va, r);
        return true;
    }
    case OP_V_TBL: {
        u32 regs = d;
        V2 idx = vload(rec, vc), old = vload(rec, va), r = {0, 0};
        for (u32 i = 0; i < (1u << f); i++) {
            u32 j = vbyte(idx, i);
            u8 v;
            if (j < 16 * regs) v = vbyte(vload(rec, (b + j / 16) % 32), j % 16);
            else v = e == 1 ? vbyte(old, i) : 0;
            vsetbyte(r, i, v);
        }
        vstore(rec, va, r);
        return true;
    }
    case OP_V_UZP:
    case OP_V_ZIP:
    case OP_V_TRN: {
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        u32 cnt = 1u << (f - e), part = d, half = cnt / 2;
        for (u32 i = 0; i < cnt; i++) {
            u64 v;
            if (op == OP_V_UZP) {
                u32 j = 2 * i + part;
                v = j < cnt ? vget(n, e, j) : vget(m, e, j - cnt);
            } else if (op == OP_V_ZIP) {
                u32 j = part * half + i / 2;
                v = vget((i & 1) == 0 ? n : m, e, j);
            } else {
                u32 j = (i & ~1u) + part;
                v = vget((i & 1) == 0 ? n : m, e, j);
            }
            vset(r, e, i, v);
        }
        vstore(rec, va, r);
        return true;
    }
    // ---- whole-register logic
    case OP_V_AND: case OP_V_BIC: case OP_V_ORR: case OP_V_ORN: case OP_V_EOR:
    case OP_V_BSL: case OP_V_BIT: case OP_V_BIF: case OP_V_NOT: {
        V2 n = vload(rec, vb), m = vload(rec, vc), o = vload(rec, va), r;
#define LOGIC(fn) r.lo = fn(n.lo, m.lo, o.lo); r.hi = fn(n.hi, m.hi, o.hi);
#define L_AND(n, m, o) ((n) & (m))
#define L_BIC(n, m, o) ((n) & ~(m))
#define L_ORR(n, m, o) ((n) | (m))
#define L_ORN(n, m, o) ((n) | ~(m))
#define L_EOR(n, m, o) ((n) ^ (m))
#define L_BSL(n, m, o) (((o) & (n)) | (~(o) & (m)))
#define L_BIT(n, m, o) (((o) & ~(m)) | ((n) & (m)))
#define L_BIF(n, m, o) (((o) & (m)) | ((n) & ~(m)))
#define L_NOT(n, m, o) (~(n))
        switch (op) {
        case OP_V_AND: LOGIC(L_AND) break;
        case OP_V_BIC: LOGIC(L_BIC) break;
        case OP_V_ORR: LOGIC(L_ORR) break;
        case OP_V_ORN: LOGIC(L_ORN) break;
        case OP_V_EOR: LOGIC(L_EOR) break;
        case OP_V_BSL: LOGIC(L_BSL) break;
        case OP_V_BIT: LOGIC(L_BIT) break;
        case OP_V_BIF: LOGIC(L_BIF) break;
        default: LOGIC(L_NOT) break;
        }
        vstore(rec, va, datamask(r, f));
        return true;
    }
    case OP_V_REV: {
        V2 n = vload(rec, vb), r = {0, 0};
        u32 cmask = (1u << d) - 1, em = (1u << e) - 1, per = 1u << (d - e);
        for (u32 p = 0; p < (1u << f); p++) {
            u32 k = (p & cmask) >> e;
            u32 src = (p & ~cmask) | ((per - 1 - k) << e) | (p & em);
            vsetbyte(r, p, vbyte(n, src));
        }
        vstore(rec, va, r);
        return true;
    }
    case OP_V_ADDLP: {
        if (e >= 3) return false;
        bool uns = d & 1, acc = d & 2;
        V2 n = vload(rec, vb), o = vload(rec, va), r = {0, 0};
        u32 cnt = (1u << f) >> (e + 1);
        for (u32 i = 0; i < cnt; i++) {
            u64 p = vget(n, e, 2 * i), q = vget(n, e, 2 * i + 1);
            i64 s = (uns ? (i64)p : esx(p, e)) + (uns ? (i64)q : esx(q, e));
            if (acc) s += (i64)vget(o, e + 1, i);
            vset(r, e + 1, i, (u64)s);
        }
        vstore(rec, va, r);
        return true;
    }
    // ---- pairwise element functions (armada-semantics: PAIR_CASES): element i of Vd from
    // elements 2i and 2i + 1 of the concatenation Vm:Vn, through int_elem
    PAIR_CASES {
        u32 cnt = 1u << (f - e);
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        bool ok = true, qc = false;
        for (u32 i = 0; i < cnt; i++) {
            u32 j0 = 2 * i, j1 = 2 * i + 1;
            u64 x0 = j0 < cnt ? vget(n, e, j0) : vget(m, e, j0 - cnt);
            u64 x1 = j1 < cnt ? vget(n, e, j1) : vget(m, e, j1 - cnt);
            vset(r, e, i, int_elem(op, d, e, 0, x0, x1, imm, ok, qc));
        }
        if (!ok) return false;
        vstore(rec, va, r);
        if (qc) rec[S_FPSR] |= CONST_FPSR_QC;
        return true;
    }
    // ---- across-lanes reductions (armada-semantics: ACROSS_CASES): Vd's element 0 the fold of
    // Vn's elements through int_elem (the fold so far as Vn's element, the next as Vm's)
    ACROSS_CASES {
        u32 cnt = 1u << (f - e);
        V2 n = vload(rec, vb), r = {0, 0};
        bool ok = true, qc = false;
        u64 acc = vget(n, e, 0);
        for (u32 i = 1; i < cnt; i++) acc = int_elem(op, d, e, 0, acc, vget(n, e, i), imm, ok, qc) & emask(e);
        if (!ok) return false;
        r.lo = acc;
        vstore(rec, va, r);
        if (qc) rec[S_FPSR] |= CONST_FPSR_QC;
        return true;
    }
    // SADDLV, UADDLV (armada-semantics: ACROSS_LONG_CASES): the fold from 0 at twice the size
    ACROSS_LONG_CASES {
        if (e >= 3) return false;
        u32 cnt = 1u << (f - e);
        V2 n = vload(rec, vb), r = {0, 0};
        bool ok = true, qc = false;
        u64 acc = 0;
        for (u32 i = 0; i < cnt; i++) acc = int_elem(op, d, e, 0, acc, vget(n, e, i), imm, ok, qc) & emask(e + 1);
        if (!ok) return false;
        r.lo = acc;
        vstore(rec, va, r);
        return true;
    }
    // ---- element-wise integer ops
    ELEMENT_CASES {
        // map1 ops read no Vm, so no by-element broadcast of it
        V2 n = vload(rec, vb), o = vload(rec, va), r = {0, 0};
        V2 m = opnd_m(rec, vc, e, imm);
        bool unary = ELEMENT_UNARY(op);
        u32 cnt = 1u << (f - e);
        bool ok = true, qc = false;
        for (u32 i = 0; i < cnt; i++) {
            u64 y = unary ? 0 : vget(m, e, i);
            vset(r, e, i, int_elem(op, d, e, vget(o, e, i), vget(n, e, i), y, imm, ok, qc));
        }
        if (!ok) return false;
        vstore(rec, va, r);
        if (qc) rec[S_FPSR] |= CONST_FPSR_QC;
        return true;
    }
    // ---- narrowing element functions (armada-semantics: NARROW_CASES): Vn's and Vm's elements
    // at twice the size e, each giving one of size e in the lower half of Vd (the upper half
    // zero), or for the "2" forms (f 1) in the upper half (the lower half kept)
    NARROW_CASES {
        if (e >= 3) return false;
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        u32 cnt = f == 2 ? 1 : 8u >> e, base = f == 1 ? 8u >> e : 0;
        if (f == 1) r = datamask(vload(rec, va), 3);
        bool ok = true, qc = false;
        for (u32 i = 0; i < cnt; i++)
            vset(r, e, base + i, narrow_elem(op, d, e, vget(n, e + 1, i), vget(m, e + 1, i), imm, ok, qc));
        if (!ok) return false;
        vstore(rec, va, r);
        if (qc) rec[S_FPSR] |= CONST_FPSR_QC;
        return true;
    }
    // ---- long element functions (armada-semantics: LONG_CASES): Vn's and Vm's elements of
    // size e from the part f names, Vd's and Vn's wide ones (index i) at size e + 1
    LONG_CASES {
        if (e >= 3) return false;
        V2 n = vload(rec, vb), o = vload(rec, va), r = {0, 0};
        V2 m = opnd_m(rec, vc, e, imm);
        u32 cnt = f == 2 ? 1 : 8u >> e, base = f == 1 ? 8u >> e : 0;
        bool ok = true, qc = false;
        for (u32 i = 0; i < cnt; i++) {
            u64 xn = vget(n, e, base + i), xm = vget(m, e, base + i);
            vset(r, e + 1, i, long_elem(op, d, e, vget(o, e + 1, i), xn, xm, vget(n, e + 1, i), imm, ok, qc));
        }
        if (!ok) return false;
        vstore(rec, va, r);
        if (qc) rec[S_FPSR] |= CONST_FPSR_QC;
        return true;
    }
    case OP_V_PMULL: {
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        if (e == 3) {
            u64 hi;
            r.lo = clmul_lo(vget(n, 3, f), vget(m, 3, f), hi);
            r.hi = hi;
        } else {
            u32 base = 8 * f;
            for (u32 i = 0; i < 8; i++) {
                u64 h;
                vset(r, 1, i, clmul_lo(vget(n, 0, base + i), vget(m, 0, base + i), h));
            }
        }
        vstore(rec, va, r);
        return true;
    }
    default:
        break;
    }

    // ---- floating point: only in the plain IEEE mode, single and double precision
    if (rec[S_FPCR] & FPCR_SPECIAL) return false;
    u32 fl = (u32)rec[S_FPSR] & FL_EXC;
    bool ok = true;
    switch (op) {
    // (the FP element functions' labels and which read no Vm: generated, fp_elements.cu)
    FP_ELEMENT_CASES
    case OP_F_CMP0: case OP_F_ABS: case OP_F_NEG: case OP_F_RINT: case OP_F_TO_INT_V: case OP_INT_TO_F_V: {
        if (e != 2 && e != 3) return false;
        bool unary = FP_ELEMENT_UNARY(op) || op == OP_F_CMP0 || op == OP_F_ABS || op == OP_F_NEG ||
                     op == OP_F_RINT || op == OP_F_TO_INT_V || op == OP_INT_TO_F_V;
        V2 n = vload(rec, vb), r = {0, 0};
        V2 m = unary ? r : opnd_m(rec, vc, e, imm);
        u32 dd = d;
        bool exact = false;
        if (op == OP_F_RINT && (d == RMODE_FPCR || d == RMODE_FPCR_EXACT)) {
            exact = d == RMODE_FPCR_EXACT;
            dd = (u32)((rec[S_FPCR] >> 22) & 3);
        }
        u32 cnt = 1u << (f - e);
        for (u32 i = 0; i < cnt && ok; i++) {
            u64 xn = vget(n, e, i);
            u64 y = (op == OP_F_TO_INT_V || op == OP_INT_TO_F_V) ? imm : vget(m, e, i);
            u64 v = e == 2 ? f_elem<2>(op, dd, xn, y, exact, fl, ok) : f_elem<3>(op, dd, xn, y, exact, fl, ok);
            vset(r, e, i, v);
        }
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_MADD: case OP_F_MSUB: case OP_F_NMADD: case OP_F_NMSUB: {
        if (e != 2 && e != 3) return false;
        u64 sign = e == 2 ? 1ull << 31 : 1ull << 63;
        u64 neg_a = (op == OP_F_NMADD || op == OP_F_NMSUB) ? sign : 0;
        u64 neg_n = (op == OP_F_MSUB || op == OP_F_NMADD) ? sign : 0;
        V2 ad = vload(rec, d), n = vload(rec, vb), m = opnd_m(rec, vc, e, imm), r = {0, 0};
        u32 cnt = 1u << (f - e);
        for (u32 i = 0; i < cnt && ok; i++) {
            u64 xa = vget(ad, e, i) ^ neg_a, xn = vget(n, e, i) ^ neg_n, xm = vget(m, e, i);
            vset(r, e, i, e == 2 ? f_muladd<2>(xa, xn, xm, fl, ok) : f_muladd<3>(xa, xn, xm, fl, ok));
        }
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_PAIR: {
        if (e != 2 && e != 3) return false;
        u32 cnt = 1u << (f - e);
        V2 n = vload(rec, vb), m = vload(rec, vc), r = {0, 0};
        for (u32 i = 0; i < cnt && ok; i++) {
            u32 j0 = 2 * i, j1 = 2 * i + 1;
            u64 x0 = j0 < cnt ? vget(n, e, j0) : vget(m, e, j0 - cnt);
            u64 x1 = j1 < cnt ? vget(n, e, j1) : vget(m, e, j1 - cnt);
            vset(r, e, i, e == 2 ? fp_red<2>(d, x0, x1, fl, ok) : fp_red<3>(d, x0, x1, fl, ok));
        }
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_REDUCE: {
        if (e != 2 && e != 3) return false;
        u32 cnt = 1u << (f - e);
        V2 n = vload(rec, vb), r = {0, 0};
        u64 v;
        if (cnt == 1) v = vget(n, e, 0);
        else if (cnt == 2) v = e == 2 ? fp_red<2>(d, vget(n, e, 0), vget(n, e, 1), fl, ok) : fp_red<3>(d, vget(n, e, 0), vget(n, e, 1), fl, ok);
        else if (cnt == 4 && e == 2) {
            u64 p = fp_red<2>(d, vget(n, e, 0), vget(n, e, 1), fl, ok);
            u64 q = fp_red<2>(d, vget(n, e, 2), vget(n, e, 3), fl, ok);
            v = fp_red<2>(d, p, q, fl, ok);
        } else return false;
        if (!ok) return false;
        r.lo = v;
        vstore(rec, va, r);
        break;
    }
    case OP_F_CVT: {
        // d = source size, e = destination size; single <-> double only
        if ((d != 2 && d != 3) || (e != 2 && e != 3) || d == e) return false;
        V2 r = {f_convert(vget(vload(rec, vb), d, 0), d, e, fl, ok), 0};
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_CVTL: {
        if (e != 2) return false;
        V2 n = vload(rec, vb), r = {0, 0};
        u32 base = 2 * f;
        for (u32 i = 0; i < 2; i++) vset(r, 3, i, f_convert(vget(n, 2, base + i), 2, 3, fl, ok));
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_CVTN: {
        if (e != 3 || d == 1) return false;
        V2 n = vload(rec, vb), r = {0, 0};
        u32 cnt = f == 2 ? 1 : 2, base = f == 1 ? 2 : 0;
        if (f == 1) r = datamask(vload(rec, va), 3);
        for (u32 i = 0; i < cnt; i++) vset(r, 2, base + i, f_convert(vget(n, 3, i), 3, 2, fl, ok));
        if (!ok) return false;
        vstore(rec, va, r);
        break;
    }
    case OP_F_TO_INT: {
        if (e != 2 && e != 3) return false;
        u64 xv = vget(vload(rec, vb), e, 0);
        u32 mode = d & 7;
        bool uns = d & 8, wide = f == 1;
        u64 v = e == 2 ? f_to_int<2>(xv, mode, uns, wide, (u32)imm, fl, ok) : f_to_int<3>(xv, mode, uns, wide, (u32)imm, fl, ok);
        if (!ok) return false;
        x[a] = v;
        break;
    }
    case OP_INT_TO_F: {
        if (e != 2 && e != 3) return false;
        u64 raw = x[b];
        bool uns = d & 1;
        u64 v = f == 0 ? (uns ? (u64)(u32)raw : (u64)(i64)(i32)(u32)raw) : raw;
        V2 r = {e == 2 ? f_from_int<2>(v, uns, (u32)imm, fl) : f_from_int<3>(v, uns, (u32)imm, fl), 0};
        vstore(rec, va, r);
        break;
    }
    case OP_F_CMP:
    case OP_F_CCMP: {
        if (e != 2 && e != 3) return false;
        if (op == OP_F_CCMP && !cond_holds(d & 15, nzcv)) {
            nzcv = (u32)(imm & 0xf0000000ull);
        } else {
            u64 xv = vget(vload(rec, vb), e, 0);
            u64 yv = (op == OP_F_CMP && (d & FCMP_ZERO)) ? 0 : vget(vload(rec, vc), e, 0);
            bool signal = (d & (op == OP_F_CMP ? FCMP_SIGNAL : FCMP_CCMP_SIGNAL)) != 0;
            nzcv = e == 2 ? f_compare<2>(xv, yv, signal, fl) : f_compare<3>(xv, yv, signal, fl);
        }
        break;
    }
    case OP_F_CSEL: {
        u32 src = cond_holds(d, nzcv) ? vb : vc;
        V2 r = {vget(vload(rec, src), e, 0), 0};
        vstore(rec, va, r);
        break;
    }
    default:
        return false;
    }
    rec[S_FPSR] |= fl;
    return true;
}
