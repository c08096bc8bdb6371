// armada's CUDA engine: one GPU thread runs one guest lane through the shared micro-op array.
//
// The host prepends a generated header (see layout.rs) with the micro-op numbers (OP_*), the
// lane record layout (S_*), the stop codes (STOP_*), the page table format (PT_*) and the
// condition table, all produced from the Rust tables, so the numbers can never drift.
//
// The same source also builds as plain C++ on the host (ARMADA_SIM), which is how the tests
// check this kernel against the CPU engine on machines without a GPU.
//
// Semantics mirror crates/armada-core/src/cpu/mod.rs and cpu/int.rs bit for bit; whatever
// this kernel does not implement stops the lane with STOP_HOST, and the host runs that one
// instruction with the CPU engine.

#ifdef ARMADA_SIM
#include <stdint.h>
#include <string.h>
typedef uint64_t u64;
typedef int64_t i64;
typedef uint32_t u32;
typedef int32_t i32;
typedef uint16_t u16;
typedef uint8_t u8;
#define __device__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __constant__ static const
#define KERNEL extern "C"
static inline u64 a_umulhi(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
static inline i64 a_mulhi(i64 a, i64 b) { return (i64)(((__int128)a * b) >> 64); }
static inline u32 a_clz64(u64 v) { return v ? (u32)__builtin_clzll(v) : 64u; }
static inline u32 a_clz32(u32 v) { return v ? (u32)__builtin_clz(v) : 32u; }
static inline u32 a_brev32(u32 v) {
    v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
    v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
    v = ((v >> 4) & 0x0f0f0f0fu) | ((v & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(v);
}
static inline u64 a_brev64(u64 v) { return ((u64)a_brev32((u32)v) << 32) | a_brev32((u32)(v >> 32)); }
static inline u32 a_bswap32(u32 v) { return __builtin_bswap32(v); }
static inline u64 a_bswap64(u64 v) { return __builtin_bswap64(v); }
static inline void a_store_progress(volatile u64* p, u64 v) { *p = v; }
#else
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;
typedef unsigned short u16;
typedef unsigned char u8;
#define KERNEL extern "C" __global__
#define a_umulhi(a, b) __umul64hi((a), (b))
#define a_mulhi(a, b) __mul64hi((a), (b))
#define a_clz64(v) ((u32)__clzll((long long)(v)))
#define a_clz32(v) ((u32)__clz((int)(v)))
#define a_brev32(v) __brev((v))
#define a_brev64(v) __brevll((v))
#define a_bswap32(v) __byte_perm((v), 0u, 0x0123u)
__device__ __forceinline__ u64 a_bswap64(u64 v) {
    return ((u64)__byte_perm((u32)v, 0u, 0x0123u) << 32) | __byte_perm((u32)(v >> 32), 0u, 0x0123u);
}
__device__ __forceinline__ void a_store_progress(volatile u64* p, u64 v) { *p = v; }
#endif

#define MAXU64 0xffffffffffffffffull

#ifdef ARMADA_SIM
#include <time.h>
static inline u64 a_now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}
static inline void a_set_once(u64* p, u64 v) {
    u64 expected = 0;
    __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
static inline u64 a_fetch_add(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
#else
__device__ __forceinline__ u64 a_now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void a_set_once(u64* p, u64 v) { atomicCAS((unsigned long long*)p, 0ull, (unsigned long long)v); }
__device__ __forceinline__ u64 a_fetch_add(u64* p, u64 v) { return atomicAdd((unsigned long long*)p, (unsigned long long)v); }
#endif

// ------------------------------------------------------------------------------------------
// Kernel parameters (mirrored by layout::Params, #[repr(C)]).

struct Params {
    const u64* ops;         // micro-ops, two words each: op|a|b|c|d|e|f, imm
    const u64* regions;     // nregions x (base, end, first slot)
    u64* lanes;             // lane records, S_WORDS words each
    u32* stops;             // stop code of each lane (also in its record)
    const u32* active;      // lanes to run this launch
    u64* pt;                // page table: PT_SLOTS x (key, value)
    u32* pt_epoch;          // per slot: lane epoch of its last recorded write
    const u64* chunks;      // frame chunk base addresses
    u64* progress;          // per lane retired count, host-mapped (may be null)
    u64* sched;             // [0]: time the first lane stopped for the host, [1]: launch start (0: not yet)
    u64* claims;            // lazy pages taken: [0] count, then (lane << 32 | frame, vpn, slot) (0: none)
    u8* cov;                // edge coverage: COV_MAP_BYTES of hit counters per lane (0: off)
    const u64* sysd;        // per lane SYSD_WORDS: the input and stats of the syscalls answered here (0: none)
    u64 slice;              // instructions per lane per launch
    u64 max_ns;             // a lane leaves this long after it started
    u64 min_grace_ns;       // after the first stop, running lanes go on at least this long
    u64 min_run_ns;         // ... and every lane runs at least this long
    u64 pt_mask;            // slots - 1
    u32 nactive;
    u32 nregions;
    u32 pt_shift;           // 64 - log2(slots)
    u32 chunk_shift;        // log2(frames per chunk)
    u32 lane_shift;         // log2(threads per lane)
};

struct CopyDesc {
    u64 src;
    u64 dst;
    u64 words;
};

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

__device__ __forceinline__ u64 ubfm(u64 src, u32 r, u32 s, u32 size) {
    src &= ones(size);
    if (s >= r) return (src >> r) & ones(s - r + 1);
    return ((src & ones(s + 1)) << (size - r)) & ones(size);
}

__device__ __forceinline__ u64 sbfm(u64 src, u32 r, u32 s, u32 size) {
    src &= ones(size);
    u64 v;
    if (s >= r) v = sext((src >> r) & ones(s - r + 1), s - r + 1);
    else v = sext(src & ones(s + 1), s + 1) << (size - r);
    return v & ones(size);
}

__device__ __forceinline__ u64 bfm(u64 dst, u64 src, u32 r, u32 s, u32 size) {
    u64 v;
    if (s >= r) {
        u32 w = s - r + 1;
        v = (dst & ~ones(w)) | ((src >> r) & ones(w));
    } else {
        u32 w = s + 1;
        u32 pos = size - r;
        v = (dst & ~(ones(w) << pos)) | ((src & ones(w)) << pos);
    }
    return v & ones(size);
}

__device__ __forceinline__ u64 rev16(u64 v) {
    return ((v & 0x00ff00ff00ff00ffull) << 8) | ((v >> 8) & 0x00ff00ff00ff00ffull);
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

// @include simd.cu

// ------------------------------------------------------------------------------------------
// Memory: a per-lane translation cache in registers in front of the shared page table.

struct Tlb {
    u64 tag0, tag1, tag2, tag3;
    u64 ptr0, ptr1, ptr2, ptr3;
    u32 wr; // bit i: entry i may be written (the page is marked dirty this sync period)
};

__device__ __forceinline__ u64 pt_hash(u64 key, u32 shift) { return (key * 0x9E3779B97F4A7C15ull) >> shift; }

__device__ __forceinline__ u64 frame_addr(const Params& P, u64 frame) {
    return P.chunks[frame >> P.chunk_shift] + ((frame & ((1ull << P.chunk_shift) - 1)) << 12);
}

// The slot holding `key`, or MAXU64.
__device__ __forceinline__ u64 pt_find(const Params& P, u64 key) {
    u64 s = pt_hash(key, P.pt_shift);
    for (u64 probes = 0; probes <= P.pt_mask; probes++) {
        u64 k = P.pt[2 * s];
        if (k == key) return s;
        if (k == 0) return MAXU64;
        s = (s + 1) & P.pt_mask;
    }
    return MAXU64;
}

// Finds page `vpn` of `lane` (then of the shared image); returns the frame's address, or 0 when
// the host must step in. A write marks the slot dirty for this sync period.
__device__ __noinline__ u64 pt_lookup(const Params& P, u32 lane, u64* rec, u64 vpn, u32 write) {
    if (vpn >> PT_VPN_BITS) return 0;
    u64 s = pt_find(P, ((u64)lane << PT_VPN_BITS | vpn) + 1);
    if (s == MAXU64) {
        if (write) return 0; // image pages are never written in place
        s = pt_find(P, (rec[S_IMAGE] << PT_VPN_BITS | vpn) + 1);
        if (s == MAXU64) return 0;
    }
    u64 val = P.pt[2 * s + 1];
    if (!(val & (write ? PT_W : PT_R))) return 0;
    if (write && (val & PT_LAZY)) {
        // First write to a lazy page: copy its starting bytes (zero frame or image page) into
        // a frame of the lane's reserve and into that frame's shadow (the host's copy starts
        // from the same bytes), point the entry at it, and log the claim. Only this lane uses
        // its own entries, so no other thread races on the slot.
        u64 n = rec[S_RES_N];
        if (n == 0 || !P.claims) return 0; // the host takes it as a miss
        u64 f = rec[S_RES + n - 1];
        rec[S_RES_N] = n - 1;
        const u64* src = (const u64*)frame_addr(P, val & PT_FRAME_MASK);
        u64* dst = (u64*)frame_addr(P, f);
        u64* shadow = dst + (512ull << P.chunk_shift);
        for (u32 i = 0; i < 512; i++) {
            u64 w = src[i];
            dst[i] = w;
            shadow[i] = w;
        }
        val = f | (val & (PT_R | PT_W));
        P.pt[2 * s + 1] = val;
        u64 at = a_fetch_add(&P.claims[0], 1);
        P.claims[1 + 3 * at] = (u64)lane << 32 | f;
        P.claims[2 + 3 * at] = vpn;
        P.claims[3 + 3 * at] = s;
    }
    if (write) {
        u32 ep = (u32)rec[S_EPOCH];
        if (P.pt_epoch[s] != ep) {
            P.pt_epoch[s] = ep;
            u64 n = rec[S_DIRTY_N];
            if (n < DIRTY_CAP) rec[S_DIRTY + n] = vpn;
            rec[S_DIRTY_N] = n + 1;
        }
    }
    return frame_addr(P, val & PT_FRAME_MASK);
}

__device__ __forceinline__ u8* tlb_get(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, u32 write) {
    u64 vpn = addr >> 12;
    u64 off = addr & 4095;
    if (T.tag0 == vpn && (!write || (T.wr & 1))) return (u8*)(T.ptr0 + off);
    if (T.tag1 == vpn && (!write || (T.wr & 2))) return (u8*)(T.ptr1 + off);
    if (T.tag2 == vpn && (!write || (T.wr & 4))) return (u8*)(T.ptr2 + off);
    if (T.tag3 == vpn && (!write || (T.wr & 8))) return (u8*)(T.ptr3 + off);
    u64 base = pt_lookup(P, lane, rec, vpn, write);
    if (!base) return 0;
    if (write) {
        // a read entry of the page may point at the bytes a lazy page started from
        if (T.tag0 == vpn) T.tag0 = MAXU64;
        if (T.tag1 == vpn) T.tag1 = MAXU64;
        if (T.tag2 == vpn) T.tag2 = MAXU64;
        if (T.tag3 == vpn) T.tag3 = MAXU64;
    }
    T.tag3 = T.tag2; T.ptr3 = T.ptr2;
    T.tag2 = T.tag1; T.ptr2 = T.ptr1;
    T.tag1 = T.tag0; T.ptr1 = T.ptr0;
    T.tag0 = vpn; T.ptr0 = base;
    T.wr = ((T.wr << 1) & 0xe) | (write ? 1u : 0u);
    return (u8*)(base + off);
}

__device__ __forceinline__ u64 ld_raw(const u8* p, u32 size) {
    u64 a = (u64)p;
    switch (size) {
    case 1: return *p;
    case 2: if (!(a & 1)) return *(const u16*)p; break;
    case 4: if (!(a & 3)) return *(const u32*)p; break;
    default: if (!(a & 7)) return *(const u64*)p; break;
    }
    u64 v = 0;
    for (u32 i = 0; i < size; i++) v |= (u64)p[i] << (8 * i);
    return v;
}

__device__ __forceinline__ void st_raw(u8* p, u32 size, u64 v) {
    u64 a = (u64)p;
    switch (size) {
    case 1: *p = (u8)v; return;
    case 2: if (!(a & 1)) { *(u16*)p = (u16)v; return; } break;
    case 4: if (!(a & 3)) { *(u32*)p = (u32)v; return; } break;
    default: if (!(a & 7)) { *(u64*)p = v; return; } break;
    }
    for (u32 i = 0; i < size; i++) p[i] = (u8)(v >> (8 * i));
}

// ------------------------------------------------------------------------------------------
// Edge coverage (armada-core's coverage.rs): the build with ARMADA_COVERAGE counts every branch
// edge in the lane's map; the plain build compiles it away. The simulator always has it and
// asks P.cov at run time.

// A run of hits of one edge (a loop's back edge) is counted in registers and added to the map
// when another edge comes or the lane leaves the launch: one byte read and written a run
// instead of one a hit. The counters saturate at 255 either way, so the map is the same.
#if defined(ARMADA_COVERAGE) || defined(ARMADA_SIM)
__device__ __forceinline__ u32 cov_slot(u64 src, u64 dst) {
    u32 s = (u32)(src >> 2) * 0x9e3779b1u;
    return ((s ^ (u32)(dst >> 2)) * 0x85ebca6bu) >> 16;
}
__device__ __forceinline__ void cov_add(const Params& P, u32 lane, u32 slot, u32 n) {
    if (!P.cov || n == 0) return;
    u8* m = P.cov + (u64)lane * COV_MAP_BYTES + slot;
    u32 c = *m + n;
    *m = (u8)(c > 255 ? 255 : c);
}
#define COV_STATE u32 cov_last = 0, cov_run = 0;
#define COV_EDGE(src_, dst_)                                                          \
    {                                                                                 \
        u32 cs_ = cov_slot((src_), (dst_));                                           \
        if (cs_ == cov_last) {                                                        \
            cov_run += cov_run < 255;                                                 \
        } else {                                                                      \
            cov_add(P, lane, cov_last, cov_run);                                      \
            cov_last = cs_;                                                           \
            cov_run = 1;                                                              \
        }                                                                             \
    }
#define COV_FLUSH() cov_add(P, lane, cov_last, cov_run);
#else
#define COV_STATE
#define COV_EDGE(src_, dst_)
#define COV_FLUSH()
#endif

// ------------------------------------------------------------------------------------------
// Syscalls the kernel answers itself (armada-gpu's engine/devio.rs, armada-core's
// Process::device_io): the ones a fuzz target's execution repeats, each only where the host's
// answer is known to be the same. Anything else, or a buffer whose pages are not all in the
// lane's table, stops for the host as before (and nothing was changed).

#define NR_READ 63
#define NR_WRITE 64
#define NR_NEWFSTATAT 79
#define NR_FSTAT 80
#define AT_EMPTY_PATH_ 0x1000
// Linux's MAX_RW_COUNT; armada's write clamps to it too (rw.rs MAX_RW)
#define MAX_RW_ 0x7ffff000ull

// Whether every page of [addr, addr + n) is in the lane's table, readable or (`write`)
// writable, a lazy page counting as writable: what the host's check_readable/check_writable
// would say of the whole buffer (the host answers when the table does not know a page).
// Nothing is claimed or marked.
__device__ __forceinline__ bool range_ok(const Params& P, u32 lane, u64* rec, u64 addr, u64 n, u32 write) {
    if (n == 0) return true;
    if (addr + n < addr) return false;
    for (u64 vpn = addr >> 12; vpn <= (addr + n - 1) >> 12; vpn++) {
        if (vpn >> PT_VPN_BITS) return false;
        u64 s = pt_find(P, ((u64)lane << PT_VPN_BITS | vpn) + 1);
        if (s == MAXU64) {
            if (write) return false;
            s = pt_find(P, (rec[S_IMAGE] << PT_VPN_BITS | vpn) + 1);
            if (s == MAXU64) return false;
        }
        if (!(P.pt[2 * s + 1] & (write ? PT_W : PT_R))) return false;
    }
    return true;
}

// Makes the pages of [addr, addr + n) the lane's own for writing (lazy pages copied from
// the reserve); false when the reserve runs out (the host then answers: nothing visible
// changed, a claimed page holds the bytes it had).
__device__ __forceinline__ bool claim_range(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, u64 n) {
    for (u64 a = addr; a < addr + n; a = (a | 4095) + 1)
        if (!tlb_get(T, P, lane, rec, a, 1)) return false;
    return true;
}

// Copies n bytes to guest `addr` (claim_range first).
__device__ __forceinline__ void copy_out(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, const u8* src, u64 n) {
    u64 i = 0;
    while (i < n) {
        u64 a = addr + i;
        u64 chunk = 4096 - (a & 4095);
        if (chunk > n - i) chunk = n - i;
        u8* p = tlb_get(T, P, lane, rec, a, 1);
        for (u64 k = 0; k < chunk; k++) p[k] = src[i + k];
        i += chunk;
    }
}

#define NR_EXIT 93
#define NR_EXIT_GROUP 94
#define DEV_HOST 0u
#define DEV_ANSWERED 1u
#define DEV_EXIT 2u

// Answers the syscall in x (x8 = number) when it is one of those the host allowed (S_SYS):
// sets x0 and returns DEV_ANSWERED; DEV_EXIT for an exit that ends the lane (the host takes
// it from the record: nothing changes here); DEV_HOST: the host services it.
__device__ __noinline__ u32 dev_syscall(Tlb& T, const Params& P, u32 lane, u64* rec, u64* x) {
    u64 allowed = rec[S_SYS];
    if (!allowed || !P.sysd) return DEV_HOST;
    const u64* sd = P.sysd + (u64)lane * SYSD_WORDS;
    u64 nr = x[8];
    u32 fd = (u32)x[0];
    u64 ret;
    if ((nr == NR_EXIT || nr == NR_EXIT_GROUP) && (allowed & SYS_EXIT)) return DEV_EXIT;
    if (nr == NR_READ && fd == 0 && (allowed & SYS_READ0)) {
        u64 len = sd[1], off = rec[S_IN_OFF];
        u64 count = x[2] < MAX_RW_ ? x[2] : MAX_RW_;
        u64 left = off < len ? len - off : 0;
        u64 n = count < left ? count : left;
        // the whole buffer must be writable (EFAULT otherwise, even at the end of input)
        if (!range_ok(P, lane, rec, x[1], count, 1) || !claim_range(T, P, lane, rec, x[1], n)) return DEV_HOST;
        copy_out(T, P, lane, rec, x[1], (const u8*)sd[0] + off, n);
        rec[S_IN_OFF] = off + n;
        ret = n;
    } else if (nr == NR_WRITE && (fd == 1 || fd == 2) && (allowed & (fd == 1 ? SYS_DROP1 : SYS_DROP2))) {
        u64 n = x[2] < MAX_RW_ ? x[2] : MAX_RW_;
        u64 room = rec[S_ROOM + fd - 1];
        // a write the capture cannot take whole, or from a buffer not (yet) in the table:
        // the host
        if (n > room || !range_ok(P, lane, rec, x[1], n, 0)) return DEV_HOST;
        rec[S_ROOM + fd - 1] = room - n;
        ret = n;
    } else if ((nr == NR_FSTAT || nr == NR_NEWFSTATAT) && fd < 3 && (allowed & (SYS_STAT0 << fd))) {
        u64 buf = x[1];
        if (nr == NR_NEWFSTATAT) {
            // only newfstatat(fd, "", buf, AT_EMPTY_PATH): an fstat
            if (x[3] != AT_EMPTY_PATH_) return DEV_HOST;
            const u8* path = range_ok(P, lane, rec, x[1], 1, 0) ? tlb_get(T, P, lane, rec, x[1], 0) : 0;
            if (!path || *path != 0) return DEV_HOST;
            buf = x[2];
        }
        if (!range_ok(P, lane, rec, buf, 128, 1) || !claim_range(T, P, lane, rec, buf, 128)) return DEV_HOST;
        copy_out(T, P, lane, rec, buf, (const u8*)(sd + 8 + 16 * fd), 128);
        ret = 0;
    } else {
        return DEV_HOST;
    }
    x[0] = ret;
    rec[S_SYS_N] += 1;
    return DEV_ANSWERED;
}

// ------------------------------------------------------------------------------------------
// The interpreter.

__device__ __forceinline__ bool find_region(const Params& P, u64 regs, u64 pc, u64& base, u64& len, const u64*& ops) {
    if (pc & 3) return false;
    u32 first = (u32)regs, n = (u32)(regs >> 32);
    for (u32 i = first; i < first + n && i < P.nregions; i++) {
        u64 b = P.regions[3 * i], e = P.regions[3 * i + 1];
        if (pc >= b && pc < e) {
            base = b;
            len = e - b;
            ops = P.ops + 2 * P.regions[3 * i + 2];
            return true;
        }
    }
    return false;
}

__device__ void run_lane(const Params& P, u32 lane) {
    u64* rec = P.lanes + (u64)lane * S_WORDS;
    u64 x[64];
#pragma unroll
    for (int r = 0; r < 32; r++) x[r] = rec[S_X + r];
    x[32] = 0;
    x[33] = 0;
    u64 pc = rec[S_PC];
    u32 nzcv = (u32)rec[S_NZCV];
    u64 tpidr = rec[S_TPIDR];
    u64 excl = rec[S_EXCL];
    u64 retired = rec[S_RETIRED];
    u64 limit = rec[S_LIMIT];
    u64 regs = rec[S_REGIONS];
    u64 end = retired + P.slice;
    if (end < retired || end > limit) end = limit;
    // Every CHECK_EVERY instructions a running lane asks whether to leave the launch: after
    // max_ns, or once the first lane that stopped for the host has waited about as long as it
    // ran (at least min_grace), so lanes that stop early do not wait long for the others. Every
    // lane runs at least min_run, so lanes of late waves of blocks still make progress.
    u64 t_start = a_now_ns();
    a_set_once(&P.sched[1], t_start);
    u64 launch_start = *(volatile u64*)&P.sched[1];
    u64 check = retired + CHECK_EVERY;
    if (check > end) check = end;
    Tlb T;
    T.tag0 = T.tag1 = T.tag2 = T.tag3 = MAXU64;
    T.ptr0 = T.ptr1 = T.ptr2 = T.ptr3 = 0;
    T.wr = 0;
    COV_STATE

    u32 stop = STOP_NONE;
    u64 info = 0;
    u64 base = 0, rlen = 0, idx = 0;
    const u64* ops = P.ops;
    u64 miss_addr = 0;
    u32 miss_write = 0;
    u64 nw0 = 0, nimm = 0;

    if (!find_region(P, regs, pc, base, rlen, ops)) {
        stop = STOP_HOST;
        goto done;
    }
    idx = (pc - base) >> 2;

// Translates one access of `size` bytes (never crossing a page) or leaves through a miss.
#define TR(var, addr_, write_)                                                        \
    u8* var = tlb_get(T, P, lane, rec, (addr_), (write_));                            \
    if (!var) {                                                                       \
        miss_addr = (addr_);                                                          \
        miss_write = (write_);                                                        \
        goto miss;                                                                    \
    }

// The micro-op at idx is loaded one iteration ahead (its latency hides behind the current
// one); a jump loads it again.
#ifdef ARMADA_NO_PREFETCH
#define RELOAD()
#else
#define RELOAD()                                                                      \
    {                                                                                 \
        nw0 = ops[2 * idx];                                                           \
        nimm = ops[2 * idx + 1];                                                      \
    }
#endif

#define JUMP(target_)                                                                 \
    {                                                                                 \
        u64 t_ = (target_);                                                           \
        retired++;                                                                    \
        u64 off_ = t_ - base;                                                         \
        if (off_ < rlen && (t_ & 3) == 0) {                                           \
            idx = off_ >> 2;                                                          \
            RELOAD()                                                                  \
            continue;                                                                 \
        }                                                                             \
        if (!find_region(P, regs, t_, base, rlen, ops)) {                             \
            pc = t_;                                                                  \
            stop = STOP_HOST;                                                         \
            goto done;                                                                \
        }                                                                             \
        idx = (t_ - base) >> 2;                                                       \
        RELOAD()                                                                      \
        continue;                                                                     \
    }

// A branch from slot idx: its edge, then the jump. FALL: a conditional branch not taken
// (its fall-through is an edge too).
#define BRANCH(target_)                                                               \
    {                                                                                 \
        u64 bt_ = (target_);                                                          \
        COV_EDGE(base + idx * 4, bt_);                                                \
        JUMP(bt_)                                                                     \
    }
#define FALL() COV_EDGE(base + idx * 4, base + idx * 4 + 4)

    nw0 = ops[2 * idx];
    nimm = ops[2 * idx + 1];

    for (;;) {
#if defined(ARMADA_MINPC) && !defined(ARMADA_SIM)
        // Lanes of a warp at different micro-ops serialize, and lanes running the same code
        // out of step stay out of step: only the lanes at the warp's lowest micro-op run an
        // instruction (the others wait), so they fall back into step. On an H200 with 65,536
        // lanes of lanecrc this took the kernel from 64 to 118 G/s (table) and from 51 to
        // 135 G/s (bitwise). With one lane a warp (lane_shift 5) there is nothing to vote on.
        if (P.lane_shift < 5) {
            u32 key = (u32)((ops - P.ops) >> 1) + (u32)idx;
            if (key != __reduce_min_sync(__activemask(), key)) continue;
        }
#endif
        if (retired >= check) {
            if (retired >= end) {
                stop = retired >= limit ? STOP_LIMIT : STOP_SLICE;
                break;
            }
            u64 now = a_now_ns();
            if (now - t_start >= P.min_run_ns) {
                u64 first = *(volatile u64*)&P.sched[0];
                u64 grace = first > launch_start ? first - launch_start : 0;
                if (grace < P.min_grace_ns) grace = P.min_grace_ns;
                if (now - t_start >= P.max_ns || (first != 0 && now >= first + grace)) {
                    stop = STOP_SLICE;
                    break;
                }
            }
            check = retired + CHECK_EVERY;
            if (check > end) check = end;
        }
#ifdef ARMADA_NO_PREFETCH
        u64 w0 = ops[2 * idx];
        u64 imm = ops[2 * idx + 1];
#else
        u64 w0 = nw0, imm = nimm;
        nw0 = ops[2 * idx + 2];
        nimm = ops[2 * idx + 3];
#endif
        u32 op = (u32)(w0 & 0xffff);
        u32 a = (u32)(w0 >> 16) & 63, b = (u32)(w0 >> 24) & 63, c = (u32)(w0 >> 32) & 63;
        u32 d = (u32)(w0 >> 40) & 0xff, dr = d & 63;
        u32 e = (u32)(w0 >> 48) & 0xff, f = (u32)(w0 >> 56) & 0xff;

        switch (op) {
        case OP_NOP:
        case OP_PRFM:
        case OP_MSR_NZCV_IMM:
            break;
        case OP_END_OF_REGION: {
            pc = base + idx * 4;
            if (!find_region(P, regs, pc, base, rlen, ops)) {
                stop = STOP_HOST;
                goto done;
            }
            idx = (pc - base) >> 2;
            RELOAD()
            continue;
        }
        case OP_UNDEFINED:
            stop = STOP_UNDEFINED;
            info = imm;
            goto stop_here;
        case OP_SVC:
            idx++;
            retired++;
            {
                u32 dev = dev_syscall(T, P, lane, rec, x);
                if (dev == DEV_ANSWERED) {
                    RELOAD()
                    continue;
                }
                stop = dev == DEV_EXIT ? STOP_EXIT : STOP_SVC;
            }
            info = imm;
            goto stop_here;
        case OP_HLT:
            idx++;
            retired++;
            stop = STOP_HLT;
            info = imm;
            goto stop_here;
        case OP_BRK:
            stop = STOP_BRK;
            info = imm;
            goto stop_here;

        // ----- branches
        case OP_B: BRANCH(imm)
        case OP_BL:
            x[30] = base + (idx + 1) * 4;
            BRANCH(imm)
        case OP_BR: BRANCH(x[b])
        case OP_BLR: {
            u64 t = x[b];
            x[30] = base + (idx + 1) * 4;
            BRANCH(t)
        }
        case OP_B_COND:
            if (cond_holds(e, nzcv)) BRANCH(imm)
            FALL();
            break;
        case OP_CBZ_W:
            if ((u32)x[b] == 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBZ_X:
            if (x[b] == 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBNZ_W:
            if ((u32)x[b] != 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBNZ_X:
            if (x[b] != 0) BRANCH(imm)
            FALL();
            break;
        case OP_TBZ:
            if (((x[b] >> (e & 63)) & 1) == 0) BRANCH(imm)
            FALL();
            break;
        case OP_TBNZ:
            if (((x[b] >> (e & 63)) & 1) != 0) BRANCH(imm)
            FALL();
            break;

        // ----- system
        case OP_MRS: {
            u64 v;
            switch (imm) {
            case SYSREG_NZCV: v = nzcv; break;
            case SYSREG_FPCR: v = rec[S_FPCR]; break;
            case SYSREG_FPSR: v = rec[S_FPSR]; break;
            case SYSREG_TPIDR_EL0: v = tpidr; break;
            case SYSREG_TPIDRRO_EL0: v = 0; break;
            case SYSREG_DCZID_EL0: v = CONST_DCZID; break;
            case SYSREG_CTR_EL0: v = CONST_CTR; break;
            case SYSREG_MIDR_EL1: v = CONST_MIDR; break;
            case SYSREG_MPIDR_EL1: v = 0x80000000ull; break;
            case SYSREG_REVIDR_EL1: v = 0; break;
            case SYSREG_ID_AA64PFR0_EL1: v = 0x0000000000010011ull; break;
            case SYSREG_ID_AA64ISAR0_EL1: v = 0x0000000000200000ull; break;
            case SYSREG_ID_AA64ISAR1_EL1: v = 0; break;
            case SYSREG_CNTVCT_EL0:
            case SYSREG_CNTPCT_EL0: v = retired; break;
            case SYSREG_CNTFRQ_EL0: v = CONST_CNTFRQ; break;
            default: v = 0; break;
            }
            x[a] = v;
            break;
        }
        case OP_MSR: {
            u64 v = x[b];
            switch (imm) {
            case SYSREG_NZCV: nzcv = (u32)(v & 0xf0000000ull); break;
            case SYSREG_FPCR: rec[S_FPCR] = v & CONST_FPCR_MASK; break;
            case SYSREG_FPSR: rec[S_FPSR] = v & CONST_FPSR_MASK; break;
            default: tpidr = v; break;
            }
            break;
        }
        case OP_CLREX: excl = MAXU64; break;
        case OP_DC_ZVA: {
            u64 addr = x[b] & ~(u64)(ZVA_BYTES - 1);
            TR(p, addr, 1)
            for (int i = 0; i < ZVA_BYTES / 8; i++) ((u64*)p)[i] = 0;
            break;
        }

        // ----- data processing, immediate
        case OP_MOV_IMM: x[a] = imm; break;
        case OP_MOVK_W: {
            u64 v = (x[b] & ~(0xffffull << (e & 63))) | (imm << (e & 63));
            x[a] = v & 0xffffffffull;
            break;
        }
        case OP_MOVK_X: x[a] = (x[b] & ~(0xffffull << (e & 63))) | (imm << (e & 63)); break;
        case OP_ADD_IMM_W: x[a] = (u32)((u32)x[b] + (u32)imm); break;
        case OP_ADD_IMM_X: x[a] = x[b] + imm; break;
        case OP_ADDS_IMM_W: x[a] = add_flags32((u32)x[b], (u32)imm, e, nzcv); break;
        case OP_ADDS_IMM_X: x[a] = add_flags64(x[b], imm, e, nzcv); break;
        case OP_AND_IMM_W:
        case OP_AND_IMM_X: x[a] = x[b] & imm; break;
        case OP_ORR_IMM_W: x[a] = (x[b] | imm) & 0xffffffffull; break;
        case OP_ORR_IMM_X: x[a] = x[b] | imm; break;
        case OP_EOR_IMM_W: x[a] = (x[b] ^ imm) & 0xffffffffull; break;
        case OP_EOR_IMM_X: x[a] = x[b] ^ imm; break;
        case OP_ANDS_IMM_W: {
            u32 r = (u32)x[b] & (u32)imm;
            x[a] = r;
            nzcv = logic_flags32(r);
            break;
        }
        case OP_ANDS_IMM_X: {
            u64 r = x[b] & imm;
            x[a] = r;
            nzcv = logic_flags64(r);
            break;
        }
        case OP_UBFM_W: x[a] = ubfm(x[b], e, f, 32); break;
        case OP_UBFM_X: x[a] = ubfm(x[b], e, f, 64); break;
        case OP_SBFM_W: x[a] = sbfm(x[b], e, f, 32); break;
        case OP_SBFM_X: x[a] = sbfm(x[b], e, f, 64); break;
        case OP_BFM_W: x[a] = bfm(x[c], x[b], e, f, 32); break;
        case OP_BFM_X: x[a] = bfm(x[c], x[b], e, f, 64); break;
        case OP_EXTR_W: {
            u64 v = ((u64)(u32)x[b] << 32) | (u64)(u32)x[c];
            x[a] = (v >> (e & 63)) & 0xffffffffull;
            break;
        }
        case OP_EXTR_X: x[a] = e == 0 ? x[c] : (x[c] >> (e & 63)) | (x[b] << ((64 - e) & 63)); break;

        // ----- data processing, register
        case OP_ADD_SR_W: x[a] = (u32)((u32)x[b] + shift32((u32)x[c], e, f)); break;
        case OP_ADD_SR_X: x[a] = x[b] + shift64(x[c], e, f); break;
        case OP_SUB_SR_W: x[a] = (u32)((u32)x[b] - shift32((u32)x[c], e, f)); break;
        case OP_SUB_SR_X: x[a] = x[b] - shift64(x[c], e, f); break;
        case OP_ADDS_SR_W: x[a] = add_flags32((u32)x[b], shift32((u32)x[c], e, f), 0, nzcv); break;
        case OP_ADDS_SR_X: x[a] = add_flags64(x[b], shift64(x[c], e, f), 0, nzcv); break;
        case OP_SUBS_SR_W: x[a] = add_flags32((u32)x[b], ~shift32((u32)x[c], e, f), 1, nzcv); break;
        case OP_SUBS_SR_X: x[a] = add_flags64(x[b], ~shift64(x[c], e, f), 1, nzcv); break;
        // A compare and the B.cond after it in one dispatch (layout.rs: fused), when the
        // lane's budget has room for both; otherwise only the compare retires here.
        case OP_ADDS_IMM_W_BCOND:
        case OP_ADDS_IMM_X_BCOND:
        case OP_SUBS_SR_W_BCOND:
        case OP_SUBS_SR_X_BCOND: {
            if (op == OP_ADDS_IMM_W_BCOND) x[a] = add_flags32((u32)x[b], (u32)imm, e, nzcv);
            else if (op == OP_ADDS_IMM_X_BCOND) x[a] = add_flags64(x[b], imm, e, nzcv);
            else if (op == OP_SUBS_SR_W_BCOND) x[a] = add_flags32((u32)x[b], ~shift32((u32)x[c], e, f), 1, nzcv);
            else x[a] = add_flags64(x[b], ~shift64(x[c], e, f), 1, nzcv);
            if (retired + 1 < end) {
#ifdef ARMADA_NO_PREFETCH
                u64 bw0 = ops[2 * idx + 2], bimm = ops[2 * idx + 3];
#else
                u64 bw0 = nw0, bimm = nimm; // the B.cond, loaded one ahead
#endif
                retired++;
                idx++;
                if (cond_holds((u32)(bw0 >> 48) & 0xff, nzcv)) BRANCH(bimm)
                FALL();
                idx++;
                retired++;
                RELOAD()
                continue;
            }
            break;
        }
        case OP_ADD_EXT_W: x[a] = (u32)((u32)x[b] + (u32)extend(x[c], e, f)); break;
        case OP_ADD_EXT_X: x[a] = x[b] + extend(x[c], e, f); break;
        case OP_SUB_EXT_W: x[a] = (u32)((u32)x[b] - (u32)extend(x[c], e, f)); break;
        case OP_SUB_EXT_X: x[a] = x[b] - extend(x[c], e, f); break;
        case OP_ADDS_EXT_W: x[a] = add_flags32((u32)x[b], (u32)extend(x[c], e, f), 0, nzcv); break;
        case OP_ADDS_EXT_X: x[a] = add_flags64(x[b], extend(x[c], e, f), 0, nzcv); break;
        case OP_SUBS_EXT_W: x[a] = add_flags32((u32)x[b], ~(u32)extend(x[c], e, f), 1, nzcv); break;
        case OP_SUBS_EXT_X: x[a] = add_flags64(x[b], ~extend(x[c], e, f), 1, nzcv); break;
        case OP_ADC_W: x[a] = (u32)((u32)x[b] + (u32)x[c] + ((nzcv >> 29) & 1)); break;
        case OP_ADC_X: x[a] = x[b] + x[c] + ((nzcv >> 29) & 1); break;
        case OP_SBC_W: x[a] = (u32)((u32)x[b] + ~(u32)x[c] + ((nzcv >> 29) & 1)); break;
        case OP_SBC_X: x[a] = x[b] + ~x[c] + ((nzcv >> 29) & 1); break;
        case OP_ADCS_W: x[a] = add_flags32((u32)x[b], (u32)x[c], (nzcv >> 29) & 1, nzcv); break;
        case OP_ADCS_X: x[a] = add_flags64(x[b], x[c], (nzcv >> 29) & 1, nzcv); break;
        case OP_SBCS_W: x[a] = add_flags32((u32)x[b], ~(u32)x[c], (nzcv >> 29) & 1, nzcv); break;
        case OP_SBCS_X: x[a] = add_flags64(x[b], ~x[c], (nzcv >> 29) & 1, nzcv); break;
        case OP_AND_SR_W: x[a] = (u32)x[b] & shift32((u32)x[c], e, f); break;
        case OP_AND_SR_X: x[a] = x[b] & shift64(x[c], e, f); break;
        case OP_BIC_SR_W: x[a] = (u32)x[b] & ~shift32((u32)x[c], e, f); break;
        case OP_BIC_SR_X: x[a] = x[b] & ~shift64(x[c], e, f); break;
        case OP_ORR_SR_W: x[a] = (u32)x[b] | shift32((u32)x[c], e, f); break;
        case OP_ORR_SR_X: x[a] = x[b] | shift64(x[c], e, f); break;
        case OP_ORN_SR_W: x[a] = (u32)((u32)x[b] | ~shift32((u32)x[c], e, f)); break;
        case OP_ORN_SR_X: x[a] = x[b] | ~shift64(x[c], e, f); break;
        case OP_EOR_SR_W: x[a] = (u32)x[b] ^ shift32((u32)x[c], e, f); break;
        case OP_EOR_SR_X: x[a] = x[b] ^ shift64(x[c], e, f); break;
        case OP_EON_SR_W: x[a] = (u32)((u32)x[b] ^ ~shift32((u32)x[c], e, f)); break;
        case OP_EON_SR_X: x[a] = x[b] ^ ~shift64(x[c], e, f); break;
        case OP_ANDS_SR_W: {
            u32 r = (u32)x[b] & shift32((u32)x[c], e, f);
            x[a] = r;
            nzcv = logic_flags32(r);
            break;
        }
        case OP_ANDS_SR_X: {
            u64 r = x[b] & shift64(x[c], e, f);
            x[a] = r;
            nzcv = logic_flags64(r);
            break;
        }
        case OP_BICS_SR_W: {
            u32 r = (u32)x[b] & ~shift32((u32)x[c], e, f);
            x[a] = r;
            nzcv = logic_flags32(r);
            break;
        }
        case OP_BICS_SR_X: {
            u64 r = x[b] & ~shift64(x[c], e, f);
            x[a] = r;
            nzcv = logic_flags64(r);
            break;
        }
        case OP_MOV_REG: x[a] = x[b]; break;
        case OP_MOV_REG_W: x[a] = x[b] & 0xffffffffull; break;
        case OP_CSEL_W: case OP_CSEL_X: case OP_CSINC_W: case OP_CSINC_X:
        case OP_CSINV_W: case OP_CSINV_X: case OP_CSNEG_W: case OP_CSNEG_X: {
            u64 v;
            if (cond_holds(e, nzcv)) v = x[b];
            else if (op == OP_CSEL_W || op == OP_CSEL_X) v = x[c];
            else if (op == OP_CSINC_W || op == OP_CSINC_X) v = x[c] + 1;
            else if (op == OP_CSINV_W || op == OP_CSINV_X) v = ~x[c];
            else v = 0 - x[c];
            if (op == OP_CSEL_W || op == OP_CSINC_W || op == OP_CSINV_W || op == OP_CSNEG_W) v &= 0xffffffffull;
            x[a] = v;
            break;
        }
        case OP_CCMP_REG_W: case OP_CCMP_REG_X: case OP_CCMN_REG_W: case OP_CCMN_REG_X:
        case OP_CCMP_IMM_W: case OP_CCMP_IMM_X: case OP_CCMN_IMM_W: case OP_CCMN_IMM_X: {
            if (cond_holds(e, nzcv)) {
                bool isimm = op == OP_CCMP_IMM_W || op == OP_CCMP_IMM_X || op == OP_CCMN_IMM_W || op == OP_CCMN_IMM_X;
                u64 op2 = isimm ? imm : x[c];
                bool sub = op == OP_CCMP_REG_W || op == OP_CCMP_REG_X || op == OP_CCMP_IMM_W || op == OP_CCMP_IMM_X;
                bool wide = op == OP_CCMP_REG_X || op == OP_CCMN_REG_X || op == OP_CCMP_IMM_X || op == OP_CCMN_IMM_X;
                if (wide) {
                    if (sub) add_flags64(x[b], ~op2, 1, nzcv);
                    else add_flags64(x[b], op2, 0, nzcv);
                } else {
                    if (sub) add_flags32((u32)x[b], ~(u32)op2, 1, nzcv);
                    else add_flags32((u32)x[b], (u32)op2, 0, nzcv);
                }
            } else {
                nzcv = (f & 15) << 28;
            }
            break;
        }
        case OP_MADD_W: x[a] = (u32)((u32)x[dr] + (u32)x[b] * (u32)x[c]); break;
        case OP_MADD_X: x[a] = x[dr] + x[b] * x[c]; break;
        case OP_MSUB_W: x[a] = (u32)((u32)x[dr] - (u32)x[b] * (u32)x[c]); break;
        case OP_MSUB_X: x[a] = x[dr] - x[b] * x[c]; break;
        case OP_SMADDL: x[a] = x[dr] + (u64)((i64)(i32)(u32)x[b] * (i64)(i32)(u32)x[c]); break;
        case OP_SMSUBL: x[a] = x[dr] - (u64)((i64)(i32)(u32)x[b] * (i64)(i32)(u32)x[c]); break;
        case OP_UMADDL: x[a] = x[dr] + (u64)(u32)x[b] * (u64)(u32)x[c]; break;
        case OP_UMSUBL: x[a] = x[dr] - (u64)(u32)x[b] * (u64)(u32)x[c]; break;
        case OP_SMULH: x[a] = (u64)a_mulhi((i64)x[b], (i64)x[c]); break;
        case OP_UMULH: x[a] = a_umulhi(x[b], x[c]); break;
        case OP_SDIV_W: {
            i32 n = (i32)(u32)x[b], m = (i32)(u32)x[c];
            u32 r;
            if (m == 0) r = 0;
            else if (m == -1) r = 0u - (u32)n;
            else r = (u32)(n / m);
            x[a] = r;
            break;
        }
        case OP_SDIV_X: {
            i64 n = (i64)x[b], m = (i64)x[c];
            u64 r;
            if (m == 0) r = 0;
            else if (m == -1) r = 0 - (u64)n;
            else r = (u64)(n / m);
            x[a] = r;
            break;
        }
        case OP_UDIV_W: {
            u32 n = (u32)x[b], m = (u32)x[c];
            x[a] = m ? n / m : 0;
            break;
        }
        case OP_UDIV_X: x[a] = x[c] ? x[b] / x[c] : 0; break;
        case OP_LSLV_W: x[a] = (u32)((u32)x[b] << (x[c] & 31)); break;
        case OP_LSLV_X: x[a] = x[b] << (x[c] & 63); break;
        case OP_LSRV_W: x[a] = (u32)x[b] >> (x[c] & 31); break;
        case OP_LSRV_X: x[a] = x[b] >> (x[c] & 63); break;
        case OP_ASRV_W: x[a] = (u32)((i32)(u32)x[b] >> (x[c] & 31)); break;
        case OP_ASRV_X: x[a] = (u64)((i64)x[b] >> (x[c] & 63)); break;
        case OP_RORV_W: x[a] = ror32((u32)x[b], (u32)(x[c] & 31)); break;
        case OP_RORV_X: x[a] = ror64(x[b], (u32)(x[c] & 63)); break;
        case OP_CLZ_W: x[a] = a_clz32((u32)x[b]); break;
        case OP_CLZ_X: x[a] = a_clz64(x[b]); break;
        case OP_CLS_W: {
            u32 v = (u32)x[b];
            x[a] = a_clz32(v ^ (u32)((i32)v >> 31)) - 1;
            break;
        }
        case OP_CLS_X: {
            u64 v = x[b];
            x[a] = a_clz64(v ^ (u64)((i64)v >> 63)) - 1;
            break;
        }
        case OP_RBIT_W: x[a] = a_brev32((u32)x[b]); break;
        case OP_RBIT_X: x[a] = a_brev64(x[b]); break;
        case OP_REV_W: x[a] = a_bswap32((u32)x[b]); break;
        case OP_REV_X: x[a] = a_bswap64(x[b]); break;
        case OP_REV16_W: x[a] = rev16(x[b]) & 0xffffffffull; break;
        case OP_REV16_X: x[a] = rev16(x[b]); break;
        case OP_REV32_X: {
            u64 v = x[b];
            x[a] = (u64)a_bswap32((u32)v) | ((u64)a_bswap32((u32)(v >> 32)) << 32);
            break;
        }
        case OP_CRC32: x[a] = crc32_fold((u32)x[b], x[c], e, f); break;

        // ----- loads and stores
        case OP_LDR_B: case OP_LDR_H: case OP_LDR_W: case OP_LDR_X:
        case OP_LDRSB_W: case OP_LDRSB_X: case OP_LDRSH_W: case OP_LDRSH_X: case OP_LDRSW:
        case OP_LDR_V8: case OP_LDR_V16: case OP_LDR_V32: case OP_LDR_V64: case OP_LDR_V128:
        case OP_STR_B: case OP_STR_H: case OP_STR_W: case OP_STR_X:
        case OP_STR_V8: case OP_STR_V16: case OP_STR_V32: case OP_STR_V64: case OP_STR_V128:
        case OP_LDP_W: case OP_LDP_X: case OP_LDPSW: case OP_STP_W: case OP_STP_X:
        case OP_LDP_V32: case OP_LDP_V64: case OP_LDP_V128: case OP_STP_V32: case OP_STP_V64: case OP_STP_V128: {
            u64 addr;
            if (f == AM_OFFSET || f == AM_PRE) addr = x[b] + imm;
            else if (f == AM_POST) addr = x[b];
            else addr = x[b] + extend(x[c], e >> 3, e & 7);
            // The common case first: one general register, within one page.
            if (op >= OP_LDR_B && op <= OP_STR_X) {
                u32 k = op - OP_LDR_B;
                u32 lg = (LDST_LG >> (2 * k)) & 3;
                if ((addr & 4095) + (1u << lg) <= 4096) {
                    u32 wr1 = op >= OP_STR_B;
                    TR(p1, addr, wr1)
                    if (wr1) {
                        st_raw(p1, 1u << lg, x[a]);
                        if (f == AM_PRE) x[b] = addr;
                        else if (f == AM_POST) x[b] = addr + imm;
                    } else {
                        u64 v = ld_raw(p1, 1u << lg);
                        switch (op) {
                        case OP_LDRSB_W: v = (u32)(i32)(signed char)(u8)v; break;
                        case OP_LDRSB_X: v = (u64)(i64)(signed char)(u8)v; break;
                        case OP_LDRSH_W: v = (u32)(i32)(short)(u16)v; break;
                        case OP_LDRSH_X: v = (u64)(i64)(short)(u16)v; break;
                        case OP_LDRSW: v = (u64)(i64)(i32)(u32)v; break;
                        default: break;
                        }
                        if (f == AM_PRE) x[b] = addr;
                        else if (f == AM_POST) x[b] = addr + imm;
                        x[a] = v;
                    }
                    break;
                }
            }
            // size of the access, whether it writes, whether it is a pair of two halves
            u32 size, write = 0;
            switch (op) {
            case OP_LDR_B: case OP_LDRSB_W: case OP_LDRSB_X: case OP_LDR_V8: size = 1; break;
            case OP_STR_B: case OP_STR_V8: size = 1; write = 1; break;
            case OP_LDR_H: case OP_LDRSH_W: case OP_LDRSH_X: case OP_LDR_V16: size = 2; break;
            case OP_STR_H: case OP_STR_V16: size = 2; write = 1; break;
            case OP_LDR_W: case OP_LDRSW: case OP_LDR_V32: size = 4; break;
            case OP_STR_W: case OP_STR_V32: size = 4; write = 1; break;
            case OP_LDR_X: case OP_LDR_V64: case OP_LDP_W: case OP_LDPSW: case OP_LDP_V32: size = 8; break;
            case OP_STR_X: case OP_STR_V64: case OP_STP_W: case OP_STP_V32: size = 8; write = 1; break;
            case OP_LDR_V128: case OP_LDP_X: case OP_LDP_V64: size = 16; break;
            case OP_STR_V128: case OP_STP_X: case OP_STP_V64: size = 16; write = 1; break;
            case OP_LDP_V128: size = 32; break;
            default: size = 32; write = 1; break; // STP_V128
            }
            // Both pages are translated before any byte moves, so a faulting access changes
            // nothing (the CPU engine checks a straddling write's pages first, too).
            u64 off = addr & 4095;
            u8* p0;
            u8* p1 = 0;
            u32 n0 = size;
            {
                TR(q0, addr, write)
                p0 = q0;
            }
            if (off + size > 4096) {
                n0 = (u32)(4096 - off);
                u64 a1 = (addr | 4095) + 1;
                TR(q1, a1, write)
                p1 = q1;
            }
            // The data, as up to four 64-bit words (little-endian).
            u64 wv[4] = {0, 0, 0, 0};
            if (write) {
                switch (op) {
                case OP_STR_B: case OP_STR_H: case OP_STR_W: case OP_STR_X: wv[0] = x[a]; break;
                case OP_STP_W: wv[0] = (x[a] & 0xffffffffull) | (x[dr] << 32); break;
                case OP_STP_X: wv[0] = x[a]; wv[1] = x[dr]; break;
                case OP_STR_V8: case OP_STR_V16: case OP_STR_V32: case OP_STR_V64:
                    wv[0] = rec[S_V + 2 * (a & 31)];
                    break;
                case OP_STR_V128:
                    wv[0] = rec[S_V + 2 * (a & 31)];
                    wv[1] = rec[S_V + 2 * (a & 31) + 1];
                    break;
                case OP_STP_V32:
                    wv[0] = (rec[S_V + 2 * (a & 31)] & 0xffffffffull) | (rec[S_V + 2 * (d & 31)] << 32);
                    break;
                case OP_STP_V64:
                    wv[0] = rec[S_V + 2 * (a & 31)];
                    wv[1] = rec[S_V + 2 * (d & 31)];
                    break;
                default: // STP_V128
                    wv[0] = rec[S_V + 2 * (a & 31)];
                    wv[1] = rec[S_V + 2 * (a & 31) + 1];
                    wv[2] = rec[S_V + 2 * (d & 31)];
                    wv[3] = rec[S_V + 2 * (d & 31) + 1];
                    break;
                }
                if (!p1) {
                    if (size <= 8) st_raw(p0, size, wv[0]);
                    else for (u32 i = 0; i < size / 8; i++) st_raw(p0 + 8 * i, 8, wv[i]);
                } else {
                    for (u32 i = 0; i < size; i++) {
                        u8 byte = (u8)(wv[i >> 3] >> (8 * (i & 7)));
                        if (i < n0) p0[i] = byte;
                        else p1[i - n0] = byte;
                    }
                }
            } else {
                if (!p1) {
                    if (size <= 8) wv[0] = ld_raw(p0, size);
                    else for (u32 i = 0; i < size / 8; i++) wv[i] = ld_raw(p0 + 8 * i, 8);
                } else {
                    for (u32 i = 0; i < size; i++) {
                        u8 byte = i < n0 ? p0[i] : p1[i - n0];
                        wv[i >> 3] |= (u64)byte << (8 * (i & 7));
                    }
                }
            }
            // Base register write-back, then the loaded registers (a load into the base wins).
            if (f == AM_PRE) x[b] = addr;
            else if (f == AM_POST) x[b] = addr + imm;
            if (!write) {
                if ((op >= OP_LDR_V8 && op <= OP_LDR_V128) || (op >= OP_LDP_V32 && op <= OP_LDP_V128)) rec[S_VDIRTY] = 1;
                switch (op) {
                case OP_LDR_B: case OP_LDR_H: case OP_LDR_W: case OP_LDR_X: x[a] = wv[0]; break;
                case OP_LDRSB_W: x[a] = (u32)(i32)(signed char)(u8)wv[0]; break;
                case OP_LDRSB_X: x[a] = (u64)(i64)(signed char)(u8)wv[0]; break;
                case OP_LDRSH_W: x[a] = (u32)(i32)(short)(u16)wv[0]; break;
                case OP_LDRSH_X: x[a] = (u64)(i64)(short)(u16)wv[0]; break;
                case OP_LDRSW: x[a] = (u64)(i64)(i32)(u32)wv[0]; break;
                case OP_LDP_W:
                    x[a] = wv[0] & 0xffffffffull;
                    x[dr] = wv[0] >> 32;
                    break;
                case OP_LDPSW:
                    x[a] = (u64)(i64)(i32)(u32)wv[0];
                    x[dr] = (u64)(i64)(i32)(u32)(wv[0] >> 32);
                    break;
                case OP_LDP_X:
                    x[a] = wv[0];
                    x[dr] = wv[1];
                    break;
                case OP_LDR_V8: case OP_LDR_V16: case OP_LDR_V32: case OP_LDR_V64:
                    rec[S_V + 2 * (a & 31)] = wv[0];
                    rec[S_V + 2 * (a & 31) + 1] = 0;
                    break;
                case OP_LDR_V128:
                    rec[S_V + 2 * (a & 31)] = wv[0];
                    rec[S_V + 2 * (a & 31) + 1] = wv[1];
                    break;
                case OP_LDP_V32:
                    rec[S_V + 2 * (a & 31)] = wv[0] & 0xffffffffull;
                    rec[S_V + 2 * (a & 31) + 1] = 0;
                    rec[S_V + 2 * (d & 31)] = wv[0] >> 32;
                    rec[S_V + 2 * (d & 31) + 1] = 0;
                    break;
                case OP_LDP_V64:
                    rec[S_V + 2 * (a & 31)] = wv[0];
                    rec[S_V + 2 * (a & 31) + 1] = 0;
                    rec[S_V + 2 * (d & 31)] = wv[1];
                    rec[S_V + 2 * (d & 31) + 1] = 0;
                    break;
                default: // LDP_V128
                    rec[S_V + 2 * (a & 31)] = wv[0];
                    rec[S_V + 2 * (a & 31) + 1] = wv[1];
                    rec[S_V + 2 * (d & 31)] = wv[2];
                    rec[S_V + 2 * (d & 31) + 1] = wv[3];
                    break;
                }
            }
            break;
        }

        // exclusives and atomics: the natural alignment is not required here, as in the CPU
        // engine; a straddling one goes to the host.
        case OP_LDXR: case OP_LDXP: case OP_STXR: case OP_STXP: case OP_ATOMIC_RMW: case OP_CAS: case OP_CASP: {
            u64 addr = x[b];
            u32 lg = e & 3;
            u32 size = 1u << lg;
            if (op == OP_LDXP || op == OP_STXP || op == OP_CASP) size = lg == 2 ? 8 : 16;
            if ((addr & 4095) + size > 4096) {
                stop = STOP_HOST;
                goto stop_here;
            }
            if (op == OP_LDXR) {
                TR(p, addr, 0)
                x[a] = ld_raw(p, size);
                excl = addr;
            } else if (op == OP_LDXP) {
                TR(p, addr, 0)
                if (lg == 2) {
                    u64 v = ld_raw(p, 8);
                    x[a] = v & 0xffffffffull;
                    x[dr] = v >> 32;
                } else {
                    u64 lo = ld_raw(p, 8), hi = ld_raw(p + 8, 8);
                    x[a] = lo;
                    x[dr] = hi;
                }
                excl = addr;
            } else if (op == OP_STXR || op == OP_STXP) {
                if (excl == addr) {
                    TR(p, addr, 1)
                    if (op == OP_STXR) st_raw(p, size, x[a]);
                    else if (lg == 2) st_raw(p, 8, (x[a] & 0xffffffffull) | (x[dr] << 32));
                    else {
                        st_raw(p, 8, x[a]);
                        st_raw(p + 8, 8, x[dr]);
                    }
                    x[c] = 0;
                } else {
                    // the failing store is still checked (as a read of its size), as the CPU
                    // engine does
                    if ((addr & 4095) + (1u << lg) > 4096) {
                        stop = STOP_HOST;
                        goto stop_here;
                    }
                    TR(p, addr, 0)
                    (void)p;
                    x[c] = 1;
                }
                excl = MAXU64;
            } else if (op == OP_ATOMIC_RMW) {
                { TR(pr, addr, 0) (void)pr; }
                TR(p, addr, 1)
                u64 old = ld_raw(p, size);
                st_raw(p, size, atomic_apply(f, lg, old, x[c]));
                x[a] = old;
            } else if (op == OP_CAS) {
                { TR(pr, addr, 0) (void)pr; }
                TR(p, addr, 1)
                u64 old = ld_raw(p, size);
                u64 m = size_mask(lg);
                if (old == (x[c] & m)) st_raw(p, size, x[a]);
                x[dr] = old;
            } else { // CASP
                { TR(pr, addr, 0) (void)pr; }
                TR(p, addr, 1)
                u32 s0 = c, s1 = c + 1, t0 = a, t1 = a + 1;
                u64 cmp0 = s0 == 31 ? 0 : x[s0 & 63], cmp1 = s1 == 31 ? 0 : x[s1 & 63];
                u64 new0 = t0 == 31 ? 0 : x[t0 & 63], new1 = t1 == 31 ? 0 : x[t1 & 63];
                u64 old0, old1;
                if (lg == 2) {
                    u64 v = ld_raw(p, 8);
                    old0 = v & 0xffffffffull;
                    old1 = v >> 32;
                } else {
                    old0 = ld_raw(p, 8);
                    old1 = ld_raw(p + 8, 8);
                }
                u64 m = size_mask(lg);
                bool eq = old0 == (cmp0 & m) && old1 == (cmp1 & m);
                if (eq) {
                    if (lg == 2) st_raw(p, 8, (new0 & m) | ((new1 & m) << 32));
                    else {
                        st_raw(p, 8, new0 & m);
                        st_raw(p + 8, 8, new1 & m);
                    }
                }
                if (s0 != 31) x[s0 & 63] = old0;
                if (s1 < 31) x[s1 & 63] = old1;
            }
            break;
        }

        // structure loads and stores of one register group (LD1/ST1 and the one-element
        // forms); the interleaving forms (LD2..LD4) go to the host
        case OP_V_LD_MULTI: case OP_V_ST_MULTI: case OP_V_LD_SINGLE: case OP_V_ST_SINGLE: case OP_V_LD_REPL: {
            u32 selem = d & 7;
            if (selem != 1) {
                stop = STOP_HOST;
                goto stop_here;
            }
            u64 addr = x[b];
            bool wr = op == OP_V_ST_MULTI || op == OP_V_ST_SINGLE;
            u32 size;
            if (op == OP_V_LD_MULTI || op == OP_V_ST_MULTI) size = ((d >> 3) & 7) << f;
            else size = 1u << e;
            u64 off = addr & 4095;
            u8* p0;
            u8* p1 = 0;
            u32 n0 = size;
            {
                TR(q0, addr, wr)
                p0 = q0;
            }
            if (off + size > 4096) {
                n0 = (u32)(4096 - off);
                u64 a1 = (addr | 4095) + 1;
                TR(q1, a1, wr)
                p1 = q1;
            }
            if (op == OP_V_LD_MULTI || op == OP_V_ST_MULTI) {
                u32 rpt = (d >> 3) & 7, rb = 1u << f;
                for (u32 r = 0; r < rpt; r++) {
                    u32 reg = (a + r) & 31;
                    for (u32 h = 0; h < rb / 8; h++) {
                        u32 at = r * rb + 8 * h;
                        if (wr) {
                            u64 v = rec[S_V + 2 * reg + h];
                            if (!p1) st_raw(p0 + at, 8, v);
                            else for (u32 i = 0; i < 8; i++) {
                                u32 k = at + i;
                                if (k < n0) p0[k] = (u8)(v >> (8 * i)); else p1[k - n0] = (u8)(v >> (8 * i));
                            }
                        } else {
                            u64 v = 0;
                            if (!p1) v = ld_raw(p0 + at, 8);
                            else for (u32 i = 0; i < 8; i++) {
                                u32 k = at + i;
                                v |= (u64)(k < n0 ? p0[k] : p1[k - n0]) << (8 * i);
                            }
                            rec[S_V + 2 * reg + h] = v;
                            rec[S_VDIRTY] = 1;
                        }
                    }
                    if (!wr && rb == 8) rec[S_V + 2 * reg + 1] = 0;
                }
            } else {
                u64 v = 0;
                u32 reg = a & 31;
                V2 rv = vload(rec, reg);
                if (op == OP_V_ST_SINGLE) v = vget(rv, e, f);
                for (u32 i = 0; i < size; i++) {
                    if (wr) {
                        u8 byte = (u8)(v >> (8 * i));
                        if (i < n0) p0[i] = byte; else p1[i - n0] = byte;
                    } else {
                        v |= (u64)(i < n0 ? p0[i] : p1[i - n0]) << (8 * i);
                    }
                }
                if (op == OP_V_LD_SINGLE) {
                    vset(rv, e, f, v);
                    vstore(rec, reg, rv);
                } else if (op == OP_V_LD_REPL) {
                    vstore(rec, reg, datamask(broadcast(v, e), f));
                }
            }
            if (d & LDST_WB) x[b] = addr + (x[c] + imm);
            break;
        }

        default:
            // FP/SIMD without memory: on the GPU when exec_simd knows it, else on the host.
            if (op >= OP_V_MOVI && exec_simd(rec, x, nzcv, op, a, b, c, d, e, f, imm)) break;
            stop = STOP_HOST;
            goto stop_here;
        }
        idx++;
        retired++;
    }
stop_here:
    pc = base + idx * 4;
    goto done;
miss:
    pc = base + idx * 4;
    stop = miss_write ? STOP_MISS_W : STOP_MISS_R;
    info = miss_addr;
    goto done;
done:
    if (stop == STOP_LIMIT || stop == STOP_SLICE) pc = base + idx * 4;
    COV_FLUSH()
#pragma unroll
    for (int r = 0; r < 32; r++) rec[S_X + r] = x[r];
    rec[S_PC] = pc;
    rec[S_NZCV] = nzcv;
    rec[S_TPIDR] = tpidr;
    rec[S_EXCL] = excl;
    rec[S_RETIRED] = retired;
    rec[S_STOP] = stop;
    rec[S_INFO] = info;
    P.stops[lane] = stop;
    // the clock of the grace period (lanes leave the launch once the first lane that needs
    // the host has waited about as long as it ran): a lane that ended at exit needs nothing
    // soon, so its stop does not start it
    if (stop != STOP_SLICE && stop != STOP_EXIT) a_set_once(&P.sched[0], a_now_ns());
    if (P.progress) a_store_progress((volatile u64*)&P.progress[lane], retired);
#undef TR
#undef JUMP
#undef BRANCH
#undef FALL
}

// ------------------------------------------------------------------------------------------
// Coverage news (coverage.rs: bucket, slot_mix, Virgin::novelty): whether a lane's map has a
// hit in a bucket the virgin map (the buckets seen so far, one bit each) lacks, and the map's
// path hash, the sum over hit slots of slot_mix.

__device__ __forceinline__ u32 cov_bucket(u32 c) {
    if (c <= 2) return c;
    if (c == 3) return 4;
    if (c <= 7) return 8;
    if (c <= 15) return 16;
    if (c <= 31) return 32;
    if (c <= 127) return 64;
    return 128;
}

__device__ __forceinline__ u32 cov_mix(u32 slot, u32 bucket) {
    u32 h = (slot << 8) | bucket;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

// Word w (8 slots) of one map: sets news when a bucket is new, adds to hash.
__device__ __forceinline__ void cov_scan(const u64* m, const u8* virgin, u32 w, u32& news, u32& hash) {
    u64 v = m[w];
    if (!v) return;
    for (u32 j = 0; j < 8; j++) {
        u32 c = (u32)(v >> (8 * j)) & 255;
        if (!c) continue;
        u32 slot = w * 8 + j;
        u32 bk = cov_bucket(c);
        if (!(virgin[slot] & bk)) news = 1;
        hash += cov_mix(slot, bk);
    }
}

// ------------------------------------------------------------------------------------------
// Entry points.

#ifndef ARMADA_SIM
#ifndef ARMADA_MIN_BLOCKS
#define ARMADA_MIN_BLOCKS 1
#endif
// Thread t runs active lane t >> lane_shift when its low lane_shift bits are zero: a small
// batch spreads its lanes one to a warp, so lanes at different PCs do not share a warp.
KERNEL void __launch_bounds__(BLOCK_THREADS, ARMADA_MIN_BLOCKS) armada_run(Params P) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t & ((1u << P.lane_shift) - 1)) return;
    u32 i = t >> P.lane_shift;
    if (i < P.nactive) run_lane(P, P.active[i]);
}

// One block per descriptor (grid-stride over descriptors): copies `words` words.
KERNEL void armada_copy(const CopyDesc* descs, u32 n) {
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        const u64* s = (const u64*)descs[k].src;
        u64* t = (u64*)descs[k].dst;
        u64 w = descs[k].words;
        for (u64 i = threadIdx.x; i < w; i += blockDim.x) t[i] = s[i];
    }
}

// Changed 64-byte blocks of the listed frames against their shadows (the bytes the host has):
// each changed block is appended to `out` as (index << 6 | block, 8 words) and copied to the
// shadow. One block of 64 threads per frame.
KERNEL void armada_diff(const u64* frames, u32 n, u64 shadow_off, u64* out, unsigned long long* count) {
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        u64* fr = (u64*)frames[k];
        u64* sh = (u64*)(frames[k] + shadow_off);
        u32 t = threadIdx.x;
        if (t < 64) {
            u64 w[8];
            bool diff = false;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                w[i] = fr[8 * t + i];
                diff |= w[i] != sh[8 * t + i];
            }
            if (diff) {
                u64 pos = atomicAdd(count, 1ull);
                u64* o = out + 9 * pos;
                o[0] = ((u64)k << 6) | t;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    o[1 + i] = w[i];
                    sh[8 * t + i] = w[i];
                }
            }
        }
    }
}

// Page-table writes: (slot, key, value) triples; the slot's write epoch is cleared.
KERNEL void armada_pt_write(u64* pt, u32* pt_epoch, const u64* writes, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        u64 s = writes[3 * i];
        pt[2 * s] = writes[3 * i + 1];
        pt[2 * s + 1] = writes[3 * i + 2];
        pt_epoch[s] = 0;
    }
}

// Coverage news of the listed lanes: out[k] = news << 32 | path hash of lane lanes[k]'s map.
// One block per lane (grid-stride over lanes).
KERNEL void armada_cov_news(const u8* maps, const u8* virgin, const u32* lanes, u32 n, u64* out) {
    __shared__ u32 news, hash;
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        if (threadIdx.x == 0) {
            news = 0;
            hash = 0;
        }
        __syncthreads();
        const u64* m = (const u64*)(maps + (u64)lanes[k] * COV_MAP_BYTES);
        u32 nw = 0, h = 0;
        for (u32 w = threadIdx.x; w < COV_MAP_BYTES / 8; w += blockDim.x) cov_scan(m, virgin, w, nw, h);
        if (nw) atomicOr(&news, 1u);
        if (h) atomicAdd(&hash, h);
        __syncthreads();
        if (threadIdx.x == 0) out[k] = ((u64)news << 32) | hash;
        __syncthreads();
    }
}
#else
extern "C" void armada_sim_cov_news(const u8* maps, const u8* virgin, const u32* lanes, u32 n, u64* out) {
    for (u32 k = 0; k < n; k++) {
        const u64* m = (const u64*)(maps + (u64)lanes[k] * COV_MAP_BYTES);
        u32 nw = 0, h = 0;
        for (u32 w = 0; w < COV_MAP_BYTES / 8; w++) cov_scan(m, virgin, w, nw, h);
        out[k] = ((u64)nw << 32) | h;
    }
}
extern "C" void armada_sim_run_lane(const Params* P, u32 i) {
    if (i < P->nactive) run_lane(*P, P->active[i]);
}
extern "C" void armada_sim_copy(const CopyDesc* descs, u32 n) {
    for (u32 k = 0; k < n; k++) memcpy((void*)descs[k].dst, (const void*)descs[k].src, descs[k].words * 8);
}
extern "C" void armada_sim_diff(const u64* frames, u32 n, u64 shadow_off, u64* out, u64* count) {
    for (u32 k = 0; k < n; k++) {
        u64* fr = (u64*)frames[k];
        u64* sh = (u64*)(frames[k] + shadow_off);
        for (u32 t = 0; t < 64; t++) {
            if (memcmp(fr + 8 * t, sh + 8 * t, 64) != 0) {
                u64 pos = (*count)++;
                u64* o = out + 9 * pos;
                o[0] = ((u64)k << 6) | t;
                memcpy(o + 1, fr + 8 * t, 64);
                memcpy(sh + 8 * t, fr + 8 * t, 64);
            }
        }
    }
}
extern "C" void armada_sim_pt_write(u64* pt, u32* pt_epoch, const u64* writes, u32 n) {
    for (u32 i = 0; i < n; i++) {
        u64 s = writes[3 * i];
        pt[2 * s] = writes[3 * i + 1];
        pt[2 * s + 1] = writes[3 * i + 2];
        pt_epoch[s] = 0;
    }
}
#endif
