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
//
// This file holds what every part needs (types, atomics, the parameters); the parts come in
// where the `@include` lines name them (`layout::cuda_source`, in this order): integer
// helpers (int.cu), SIMD and floating point (simd.cu), memory (memory.cu), the loads and
// stores the interpreter calls out for (ldst.cu), its other out-of-line ops (cold.cu), edge coverage
// (coverage.cu), the syscalls the kernel answers (devio.cu), the interpreter (interp.cu),
// and the kernels the host launches (entry.cu).

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
static inline u32 a_popc32(u32 v) { return (u32)__builtin_popcount(v); }
static inline u32 a_popc64(u64 v) { return (u32)__builtin_popcountll(v); }
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
#define a_popc32(v) ((u32)__popc((v)))
#define a_popc64(v) ((u32)__popcll((v)))
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
static inline bool a_take_empty(u64* p, u64 v) {
    u64 expected = 0;
    return __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
#else
__device__ __forceinline__ u64 a_now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void a_set_once(u64* p, u64 v) { atomicCAS((unsigned long long*)p, 0ull, (unsigned long long)v); }
__device__ __forceinline__ u64 a_fetch_add(u64* p, u64 v) { return atomicAdd((unsigned long long*)p, (unsigned long long)v); }
// Whether *p was 0 and is now v.
__device__ __forceinline__ bool a_take_empty(u64* p, u64 v) {
    return atomicCAS((unsigned long long*)p, 0ull, (unsigned long long)v) == 0ull;
}
#endif

// ------------------------------------------------------------------------------------------
// Kernel parameters: generated from layout::Params (#[repr(C)]), which documents each.
// @params

struct CopyDesc {
    u64 src;
    u64 dst;
    u64 words;
};

// @include int.cu
// @include simd.cu

// @include memory.cu
// @include ldst.cu
// @include cold.cu
// @include coverage.cu
// @include persist.cu
// @include devio.cu
// @include interp.cu
// @include entry.cu
