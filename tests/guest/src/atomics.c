// C11 <stdatomic.h> and __atomic builtins on 8/16/32/64-bit objects (single thread).
// Default build uses gcc's outline atomics (runtime choice between LL/SC and LSE);
// variant "llsc" forces load/store-exclusive loops, variant "lse" inlines ARMv8.1 LSE atomics.
// armada-variants: llsc=-mno-outline-atomics lse=-march=armv8.1-a
#include <stdio.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdbool.h>

static uint64_t h = 1469598103934665603ULL;
static void mix(uint64_t v) { h = (h ^ v) * 1099511628211ULL; }

#define TEST_BUILTINS(T, NAME, START)                                                                   \
    do {                                                                                                \
        T v = (T)(START), old, expected;                                                                \
        bool ok;                                                                                        \
        old = __atomic_fetch_add(&v, (T)0x11, __ATOMIC_SEQ_CST); mix((uint64_t)old); mix((uint64_t)v); \
        old = __atomic_fetch_sub(&v, (T)0x23, __ATOMIC_ACQ_REL); mix((uint64_t)old); mix((uint64_t)v); \
        old = __atomic_fetch_and(&v, (T)0x5a5a5a5a5a5a5a5aULL, __ATOMIC_ACQUIRE); mix((uint64_t)old);   \
        old = __atomic_fetch_or(&v, (T)0x0101010101010101ULL, __ATOMIC_RELEASE); mix((uint64_t)old);    \
        old = __atomic_fetch_xor(&v, (T)0xffULL, __ATOMIC_RELAXED); mix((uint64_t)old);                 \
        old = __atomic_fetch_nand(&v, (T)0xf0f0f0f0f0f0f0f0ULL, __ATOMIC_SEQ_CST); mix((uint64_t)old);  \
        T nv = __atomic_add_fetch(&v, (T)1, __ATOMIC_SEQ_CST); mix((uint64_t)nv);                       \
        nv = __atomic_sub_fetch(&v, (T)3, __ATOMIC_SEQ_CST); mix((uint64_t)nv);                         \
        old = __atomic_exchange_n(&v, (T)0x7766554433221100ULL, __ATOMIC_SEQ_CST); mix((uint64_t)old); \
        expected = (T)0x7766554433221100ULL;                                                            \
        ok = __atomic_compare_exchange_n(&v, &expected, (T)42, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
        mix(ok); mix((uint64_t)v);                                                                      \
        expected = (T)7;                                                                                \
        ok = __atomic_compare_exchange_n(&v, &expected, (T)99, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); \
        mix(ok); mix((uint64_t)expected); mix((uint64_t)v);                                             \
        int spins = 0;                                                                                  \
        expected = __atomic_load_n(&v, __ATOMIC_RELAXED);                                               \
        while (!__atomic_compare_exchange_n(&v, &expected, (T)(expected * 3 + 1), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) \
            spins++;                                                                                    \
        mix((uint64_t)v);                                                                               \
        __atomic_store_n(&v, (T)-1, __ATOMIC_RELEASE);                                                  \
        old = __atomic_fetch_add(&v, (T)1, __ATOMIC_SEQ_CST);                                           \
        printf("%-8s builtins: final=%llu old=%llx wrapped=%d spins_ok=%d\n", NAME,                     \
               (unsigned long long)__atomic_load_n(&v, __ATOMIC_SEQ_CST), (unsigned long long)old,     \
               v == 0, spins < 100);                                                                    \
    } while (0)

#define TEST_C11(AT, T, NAME)                                                                           \
    do {                                                                                                \
        AT a;                                                                                           \
        atomic_init(&a, (T)100);                                                                        \
        T r = atomic_fetch_add(&a, (T)5); mix((uint64_t)r);                                             \
        r = atomic_fetch_sub_explicit(&a, (T)200, memory_order_relaxed); mix((uint64_t)r);             \
        r = atomic_fetch_or(&a, (T)0x30); mix((uint64_t)r);                                             \
        r = atomic_fetch_and(&a, (T)0x7f); mix((uint64_t)r);                                            \
        r = atomic_fetch_xor(&a, (T)0x55); mix((uint64_t)r);                                            \
        r = atomic_exchange(&a, (T)1234567); mix((uint64_t)r);                                          \
        T e = (T)1234567;                                                                               \
        bool s1 = atomic_compare_exchange_strong(&a, &e, (T)-5);                                        \
        e = 0;                                                                                          \
        bool s2 = atomic_compare_exchange_strong(&a, &e, (T)1);                                         \
        T loaded = atomic_load(&a);                                                                     \
        int n = 0;                                                                                      \
        for (int i = 0; i < 1000; i++) { atomic_fetch_add_explicit(&a, (T)i, memory_order_acq_rel); n++; } \
        atomic_store(&a, atomic_load(&a) + 1);                                                          \
        printf("%-8s c11: s1=%d s2=%d e=%lld loaded=%lld after_loop=%llu lockfree=%d\n", NAME, s1, s2, \
               (long long)e, (long long)loaded, (unsigned long long)atomic_load(&a),                    \
               (int)atomic_is_lock_free(&a));                                                           \
    } while (0)

int main(void)
{
    TEST_BUILTINS(uint8_t, "u8", 0xf0);
    TEST_BUILTINS(uint16_t, "u16", 0xfff0);
    TEST_BUILTINS(uint32_t, "u32", 0xfffffff0u);
    TEST_BUILTINS(uint64_t, "u64", 0xfffffffffffffff0ULL);
    TEST_BUILTINS(int8_t, "i8", -100);
    TEST_BUILTINS(int64_t, "i64", -1000);
    TEST_C11(atomic_schar, signed char, "schar");
    TEST_C11(atomic_short, short, "short");
    TEST_C11(atomic_int, int, "int");
    TEST_C11(atomic_llong, long long, "llong");
    TEST_C11(atomic_uint, unsigned, "uint");

    atomic_flag fl = ATOMIC_FLAG_INIT;
    int t1 = atomic_flag_test_and_set(&fl), t2 = atomic_flag_test_and_set(&fl);
    atomic_flag_clear(&fl);
    int t3 = atomic_flag_test_and_set(&fl);
    printf("flag: %d %d %d\n", t1, t2, t3);

    // Atomic array updated in a loop: a counter table like a histogram.
    static _Atomic uint32_t hist[16];
    uint32_t x = 1;
    for (int i = 0; i < 100000; i++) {
        x = x * 1664525u + 1013904223u;
        atomic_fetch_add_explicit(&hist[x >> 28], 1, memory_order_relaxed);
    }
    printf("hist:");
    for (int i = 0; i < 16; i++) printf(" %u", atomic_load(&hist[i]));
    printf("\n");
    atomic_thread_fence(memory_order_seq_cst);
    printf("hash=%016llx\n", (unsigned long long)h);
    return 0;
}
