// pthread barriers: 6 threads through 50 phases. In each phase every thread writes its slot,
// waits, checks every other thread's slot for this phase's value, and waits again; exactly
// one thread per barrier wait gets PTHREAD_BARRIER_SERIAL_THREAD.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { THREADS = 6, PHASES = 50 };

static pthread_barrier_t barrier;
static long slots[THREADS];
static int serial[2 * PHASES];

static void *worker(void *arg)
{
    long id = (long)arg, errors = 0;
    for (int p = 0; p < PHASES; p++) {
        slots[id] = p * 100 + id;
        int r = pthread_barrier_wait(&barrier);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD)
            __atomic_fetch_add(&serial[2 * p], 1, __ATOMIC_RELAXED);
        else if (r != 0)
            errors++;
        for (int j = 0; j < THREADS; j++)
            if (slots[j] != p * 100 + j) errors++;
        r = pthread_barrier_wait(&barrier);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD)
            __atomic_fetch_add(&serial[2 * p + 1], 1, __ATOMIC_RELAXED);
        else if (r != 0)
            errors++;
    }
    return (void *)errors;
}

int main(void)
{
    CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    long errors = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0);
        errors += (long)r;
    }
    int waits_with_one_serial = 0;
    for (int i = 0; i < 2 * PHASES; i++) waits_with_one_serial += serial[i] == 1;
    printf("barrier: %d threads, %d phases, errors=%ld, waits with one serial thread=%d of %d\n",
           THREADS, PHASES, errors, waits_with_one_serial, 2 * PHASES);
    CHECK(errors == 0 && waits_with_one_serial == 2 * PHASES);
    CHECK(pthread_barrier_destroy(&barrier) == 0);
    puts("barrier: ok");
    return 0;
}
