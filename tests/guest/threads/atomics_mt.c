// Contended atomics from 8 threads (__atomic builtins): fetch_add on 32- and 64-bit counters,
// a 16-bit counter that wraps, a compare-exchange loop keeping a maximum, fetch_or bits, an
// exchange-based spinlock guarding a plain counter, and an acquire/release handoff chain.
// The default build uses gcc's outline atomics (LSE or LL/SC chosen at run time); the "llsc"
// variant forces load/store-exclusive loops and the "lse" variant inlines ARMv8.1 LSE atomics.
// armada-variants: llsc=-mno-outline-atomics lse=-march=armv8.1-a
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { THREADS = 8, ITERS = 50000 };

static uint32_t c32;
static uint64_t c64;
static uint16_t c16;
static uint64_t maximum;
static uint64_t bits;
static int spin;
static long guarded;
static int baton; // thread i waits for baton == i, then passes it on
static long chain[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
    for (int i = 0; i < ITERS; i++) {
        __atomic_fetch_add(&c32, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&c64, (uint64_t)id + 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c16, 3, __ATOMIC_ACQ_REL);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> 8, cur = __atomic_load_n(&maximum, __ATOMIC_RELAXED);
        while (v > cur &&
               !__atomic_compare_exchange_n(&maximum, &cur, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        }
        if (i % 64 == 0) __atomic_fetch_or(&bits, 1ULL << ((id * 8 + i / 64) % 64), __ATOMIC_RELEASE);
        if (i % 8 == 0) {
            while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE)) {
                while (__atomic_load_n(&spin, __ATOMIC_RELAXED)) {
                }
            }
            guarded += 1;
            __atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
        }
    }
    while (__atomic_load_n(&baton, __ATOMIC_ACQUIRE) != id) {
    }
    chain[id] = id == 0 ? 1 : chain[id - 1] * 3 + id;
    __atomic_store_n(&baton, (int)id + 1, __ATOMIC_RELEASE);
    return (void *)(uintptr_t)x;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    uint64_t want_max = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        for (int k = 0; k < ITERS; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x >> 8 > want_max) want_max = x >> 8;
        }
    }
    printf("c32=%u c64=%llu c16=%u\n", c32, (unsigned long long)c64, c16);
    printf("max=%016llx (want %016llx) bits=%016llx guarded=%ld chain=%ld\n",
           (unsigned long long)maximum, (unsigned long long)want_max, (unsigned long long)bits,
           guarded, chain[THREADS - 1]);
    CHECK(c32 == THREADS * ITERS);
    CHECK(c64 == (uint64_t)ITERS * THREADS * (THREADS + 1) / 2);
    CHECK(c16 == (uint16_t)(3u * THREADS * ITERS));
    CHECK(maximum == want_max && bits == ~0ULL);
    CHECK(guarded == THREADS * ((ITERS + 7) / 8));
    puts("atomics_mt: ok");
    return 0;
}
