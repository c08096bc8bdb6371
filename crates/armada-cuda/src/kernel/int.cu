// ------------------------------------------------------------------------------------------
// Integer helpers (cpu/int.rs).

__device__ __forceinline__ u64 add_flags64(u64 a, u64 b, u64 carry, u32& nz) {
    u64 r1 = a + b;
    u64 c1 = r1 < a;
    u64 r = r1 + carry;
    u64 c2 = r < r1;
    u64 c = c1 | c2;
    u64 v = ((a ^ r) & (b ^ r)) >> 63;
    u64 n = r >> 63;
    u64 z = r == 0;
    nz = (u32)(n << 31 | z << 30 | c << 29 | v << 28);
    return r;
}

__device__ __forceinline__ u32 add_flags32(u32 a, u32 b, u32 carry, u32& nz) {
    u32 r1 = a + b;
    u32 c1 = r1 < a;
    u32 r = r1 + carry;
    u32 c2 = r < r1;
    u32 c = c1 | c2;
    u32 v = ((a ^ r) & (b ^ r)) >> 31;
    u32 n = r >> 31;
    u32 z = r == 0;
    nz = n << 31 | z << 30 | c << 29 | v << 28;
    return r;
}

__device__ __forceinline__ u32 logic_flags64(u64 r) { return (u32)((r >> 63) << 31) | ((u32)(r == 0) << 30); }
__device__ __forceinline__ u32 logic_flags32(u32 r) { return ((r >> 31) << 31) | ((u32)(r == 0) << 30); }

__device__ __forceinline__ u64 ror64(u64 v, u32 n) { n &= 63; return n ? (v >> n) | (v << (64 - n)) : v; }
__device__ __forceinline__ u32 ror32(u32 v, u32 n) { n &= 31; return n ? (v >> n) | (v << (32 - n)) : v; }

__device__ __forceinline__ u64 shift64(u64 v, u32 ty, u32 amount) {
    u32 n = amount & 63;
    switch (ty) {
    case 0: return v << n;
    case 1: return v >> n;
    case 2: return (u64)((i64)v >> n);
    default: return ror64(v, n);
    }
}

__device__ __forceinline__ u32 shift32(u32 v, u32 ty, u32 amount) {
    u32 n = amount & 31;
    switch (ty) {
    case 0: return v << n;
    case 1: return v >> n;
    case 2: return (u32)((i32)v >> n);
    default: return ror32(v, n);
    }
}

__device__ __forceinline__ u64 extend(u64 v, u32 option, u32 sh) {
    u64 e;
    switch (option & 7) {
    case 0: e = (u8)v; break;
    case 1: e = (u16)v; break;
    case 2: e = (u32)v; break;
    case 4: e = (u64)(i64)(signed char)(u8)v; break;
    case 5: e = (u64)(i64)(short)(u16)v; break;
    case 6: e = (u64)(i64)(i32)(u32)v; break;
    default: e = v; break;
    }
    return e << (sh & 7);
}

__device__ __forceinline__ u64 ones(u32 n) { return n >= 64 ? MAXU64 : (1ull << n) - 1; }

__device__ __forceinline__ u64 sext(u64 v, u32 width) {
    return width >= 64 ? v : (u64)(((i64)(v << (64 - width))) >> (64 - width));
}

// divisions as the guest has them (armada-semantics' Udiv, Sdiv): a zero divisor gives 0,
// MIN / -1 gives MIN (the hardware's division is undefined there)
__device__ __forceinline__ u32 udiv_w(u32 n, u32 m) { return m ? n / m : 0u; }
__device__ __forceinline__ u64 udiv_x(u64 n, u64 m) { return m ? n / m : 0ull; }
__device__ __forceinline__ u32 sdiv_w(u32 n, u32 m) {
    if (m == 0) return 0u;
    if (m == 0xffffffffu) return 0u - n;
    return (u32)((i32)n / (i32)m);
}
__device__ __forceinline__ u64 sdiv_x(u64 n, u64 m) {
    if (m == 0) return 0ull;
    if (m == ~0ull) return 0ull - n;
    return (u64)((i64)n / (i64)m);
}

__device__ __forceinline__ u64 size_mask(u32 log2) { return ones(8u << log2); }

__device__ __noinline__ u32 crc32_fold(u32 acc, u64 data, u32 log2, u32 castagnoli) {
    u32 poly = castagnoli & 1 ? 0x82F63B78u : 0xEDB88320u;
    u32 c = acc;
    u32 n = 1u << log2;
    for (u32 i = 0; i < n; i++) {
        c ^= (u32)((data >> (8 * i)) & 0xff);
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    }
    return c;
}

__device__ __noinline__ u64 atomic_apply(u32 op, u32 log2, u64 old, u64 operand) {
    u32 bits = 8u << log2;
    u64 m = ones(bits);
    u64 o = old & m, v = operand & m;
    i64 so = (i64)sext(o, bits), sv = (i64)sext(v, bits);
    u64 r;
    switch (op) {
    case AOP_ADD: r = o + v; break;
    case AOP_CLR: r = o & ~v; break;
    case AOP_EOR: r = o ^ v; break;
    case AOP_SET: r = o | v; break;
    case AOP_SMAX: r = (u64)(so > sv ? so : sv); break;
    case AOP_SMIN: r = (u64)(so < sv ? so : sv); break;
    case AOP_UMAX: r = o > v ? o : v; break;
    case AOP_UMIN: r = o < v ? o : v; break;
    default: r = v; break;
    }
    return r & m;
}

__constant__ u16 COND_TABLE[16] = {COND_TABLE_INIT};

__device__ __forceinline__ bool cond_holds(u32 cond, u32 nzcv) {
    return (COND_TABLE[cond & 15] >> ((nzcv >> 28) & 15)) & 1;
}

