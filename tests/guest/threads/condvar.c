// Condition variables: a bounded buffer (8 slots) filled by 3 producers and drained by 2
// consumers (pthread_cond_wait/signal; every item arrives exactly once: count, sum and
// per-producer tallies), a broadcast that wakes 5 waiters at once, and timed waits that
// time out (ETIMEDOUT) on CLOCK_REALTIME and on a CLOCK_MONOTONIC condattr.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

enum { SLOTS = 8, PRODUCERS = 3, CONSUMERS = 2, ITEMS = 5000, WAITERS = 5 };
#define STOP (-1L)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long ring[SLOTS];
static int head, count;

static void put(long v)
{
    pthread_mutex_lock(&mu);
    while (count == SLOTS) pthread_cond_wait(&not_full, &mu);
    ring[(head + count) % SLOTS] = v;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&mu);
}

static long take(void)
{
    pthread_mutex_lock(&mu);
    while (count == 0) pthread_cond_wait(&not_empty, &mu);
    long v = ring[head];
    head = (head + 1) % SLOTS;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&mu);
    return v;
}

static void *producer(void *arg)
{
    long id = (long)arg;
    for (long i = 1; i <= ITEMS; i++) put(id * 1000000 + i);
    return NULL;
}

struct tally {
    long items, sum, per_producer[PRODUCERS];
};

static void *consumer(void *arg)
{
    struct tally *t = arg;
    for (;;) {
        long v = take();
        if (v == STOP) break;
        t->items++;
        t->sum += v % 1000000;
        t->per_producer[v / 1000000]++;
    }
    return NULL;
}

static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static int go_flag, waiting, woke;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    waiting++;
    while (!go_flag) pthread_cond_wait(&go, &mu);
    woke++;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void deadline_in(clockid_t clock, long ms, struct timespec *ts)
{
    clock_gettime(clock, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    struct tally tallies[CONSUMERS] = {0};
    for (long i = 0; i < CONSUMERS; i++)
        CHECK(pthread_create(&c[i], NULL, consumer, &tallies[i]) == 0);
    for (long i = 0; i < PRODUCERS; i++)
        CHECK(pthread_create(&p[i], NULL, producer, (void *)i) == 0);
    for (int i = 0; i < PRODUCERS; i++) CHECK(pthread_join(p[i], NULL) == 0);
    for (int i = 0; i < CONSUMERS; i++) put(STOP);
    struct tally all = {0};
    for (int i = 0; i < CONSUMERS; i++) {
        CHECK(pthread_join(c[i], NULL) == 0);
        all.items += tallies[i].items;
        all.sum += tallies[i].sum;
        for (int j = 0; j < PRODUCERS; j++) all.per_producer[j] += tallies[i].per_producer[j];
    }
    printf("buffer: items=%ld sum=%ld per producer=%ld/%ld/%ld\n", all.items, all.sum,
           all.per_producer[0], all.per_producer[1], all.per_producer[2]);
    CHECK(all.items == PRODUCERS * ITEMS);
    CHECK(all.sum == (long)PRODUCERS * ITEMS * (ITEMS + 1) / 2);
    for (int j = 0; j < PRODUCERS; j++) CHECK(all.per_producer[j] == ITEMS);

    // Broadcast: wait until all waiters are inside pthread_cond_wait (they count themselves
    // under the mutex, and the wait releases it), then wake them all at once.
    pthread_t w[WAITERS];
    for (int i = 0; i < WAITERS; i++) CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);
    for (;;) {
        pthread_mutex_lock(&mu);
        int n = waiting;
        if (n == WAITERS) break;
        pthread_mutex_unlock(&mu);
        sched_yield();
    }
    go_flag = 1;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < WAITERS; i++) CHECK(pthread_join(w[i], NULL) == 0);
    printf("broadcast: woke %d of %d\n", woke, WAITERS);
    CHECK(woke == WAITERS);

    // Timed waits nobody signals.
    struct timespec ts;
    pthread_mutex_lock(&mu);
    deadline_in(CLOCK_REALTIME, 20, &ts);
    int r1 = pthread_cond_timedwait(&go, &mu, &ts);
    pthread_condattr_t ca;
    pthread_cond_t mono;
    pthread_condattr_init(&ca);
    CHECK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
    CHECK(pthread_cond_init(&mono, &ca) == 0);
    deadline_in(CLOCK_MONOTONIC, 20, &ts);
    int r2 = pthread_cond_timedwait(&mono, &mu, &ts);
    pthread_mutex_unlock(&mu);
    printf("timedwait: realtime=%s monotonic=%s\n", r1 == ETIMEDOUT ? "ETIMEDOUT" : "?",
           r2 == ETIMEDOUT ? "ETIMEDOUT" : "?");
    CHECK(r1 == ETIMEDOUT && r2 == ETIMEDOUT);
    puts("condvar: ok");
    return 0;
}
