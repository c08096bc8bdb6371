// 64 threads, each summing its own slice of 1..N (N = 3,200,000 by default, or argv[1]):
// sums of i and of i*i mod 2^64 (checked against the closed forms) and an xor of a hash of i
// (checked against main's own serial loop), combined after the joins.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { THREADS = 64 };

struct slice {
    uint64_t from, to; // [from, to)
    uint64_t sum, squares, hash;
};

static uint64_t mix(uint64_t i)
{
    uint64_t h = i * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29) ^ (i << 7);
}

static void *work(void *arg)
{
    struct slice *s = arg;
    uint64_t sum = 0, sq = 0, h = 0;
    for (uint64_t i = s->from; i < s->to; i++) {
        sum += i;
        sq += i * i;
        h ^= mix(i);
    }
    s->sum = sum;
    s->squares = sq;
    s->hash = h;
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 3200000;
    pthread_t t[THREADS];
    struct slice s[THREADS];
    for (int i = 0; i < THREADS; i++) {
        s[i] = (struct slice){.from = 1 + n * i / THREADS, .to = 1 + n * (i + 1) / THREADS};
        CHECK(pthread_create(&t[i], NULL, work, &s[i]) == 0);
    }
    uint64_t sum = 0, sq = 0, h = 0, want_h = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        sum += s[i].sum;
        sq += s[i].squares;
        h ^= s[i].hash;
    }
    for (uint64_t i = 1; i <= n; i++) want_h ^= mix(i);
    unsigned __int128 N = n;
    uint64_t want_sum = (uint64_t)(N * (N + 1) / 2);
    uint64_t want_sq = (uint64_t)(N * (N + 1) * (2 * N + 1) / 6);
    printf("%d threads, n=%llu: sum=%llu squares=%llu hash=%016llx\n", THREADS,
           (unsigned long long)n, (unsigned long long)sum, (unsigned long long)sq,
           (unsigned long long)h);
    CHECK(sum == want_sum && sq == want_sq && h == want_h);
    puts("sum64: ok");
    return 0;
}
