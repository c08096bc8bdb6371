// pthread rwlocks: 2 writers (2000 updates each of the pair x, y = 3x, written apart) and
// 4 readers (3000 reads each) that never see a torn pair; the final x is exact. A held read
// lock admits another reader (tryrdlock 0) and refuses a writer (trywrlock EBUSY); a held
// write lock refuses both.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { WRITERS = 2, READERS = 4, WRITES = 2000, READS = 3000 };

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile long x, y;

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WRITES; i++) {
        pthread_rwlock_wrlock(&rw);
        long v = x + 1;
        x = v;
        sched_yield();
        y = 3 * v;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void *reader(void *arg)
{
    (void)arg;
    long torn = 0;
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&rw);
        long a = x, b = y;
        if (b != 3 * a) torn++;
        pthread_rwlock_unlock(&rw);
    }
    return (void *)torn;
}

static void *try_both(void *arg)
{
    int *out = arg;
    out[0] = pthread_rwlock_tryrdlock(&rw);
    if (out[0] == 0) pthread_rwlock_unlock(&rw);
    out[1] = pthread_rwlock_trywrlock(&rw);
    if (out[1] == 0) pthread_rwlock_unlock(&rw);
    return NULL;
}

static void probe(int *out)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, try_both, out) == 0);
    CHECK(pthread_join(t, NULL) == 0);
}

static const char *err(int e)
{
    return e == 0 ? "0" : e == EBUSY ? "EBUSY" : "?";
}

int main(void)
{
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < READERS; i++) CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);
    for (int i = 0; i < WRITERS; i++) CHECK(pthread_create(&w[i], NULL, writer, NULL) == 0);
    long torn = 0;
    for (int i = 0; i < WRITERS; i++) CHECK(pthread_join(w[i], NULL) == 0);
    for (int i = 0; i < READERS; i++) {
        void *ret;
        CHECK(pthread_join(r[i], &ret) == 0);
        torn += (long)ret;
    }
    printf("rwlock: x=%ld y=%ld torn reads=%ld\n", x, y, torn);
    CHECK(x == WRITERS * WRITES && y == 3 * x && torn == 0);

    int held_rd[2], held_wr[2], free_[2];
    CHECK(pthread_rwlock_rdlock(&rw) == 0);
    probe(held_rd);
    CHECK(pthread_rwlock_unlock(&rw) == 0);
    CHECK(pthread_rwlock_wrlock(&rw) == 0);
    probe(held_wr);
    CHECK(pthread_rwlock_unlock(&rw) == 0);
    probe(free_);
    printf("read-locked: tryrdlock=%s trywrlock=%s\n", err(held_rd[0]), err(held_rd[1]));
    printf("write-locked: tryrdlock=%s trywrlock=%s\n", err(held_wr[0]), err(held_wr[1]));
    printf("unlocked: tryrdlock=%s trywrlock=%s\n", err(free_[0]), err(free_[1]));
    CHECK(held_rd[0] == 0 && held_rd[1] == EBUSY);
    CHECK(held_wr[0] == EBUSY && held_wr[1] == EBUSY);
    CHECK(free_[0] == 0 && free_[1] == 0);
    puts("rwlock: ok");
    return 0;
}
