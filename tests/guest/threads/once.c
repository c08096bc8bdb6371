// pthread_once: 16 threads released together by a barrier race for one once_control; the
// init routine (which sleeps, so the others must wait for it) runs exactly once and every
// thread sees its result. A second once_control used from main and then a thread also runs
// its routine once.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

enum { THREADS = 16 };

static pthread_once_t once = PTHREAD_ONCE_INIT, once2 = PTHREAD_ONCE_INIT;
static pthread_barrier_t barrier;
static int init_runs, init2_runs;
static long table[64];

static void init(void)
{
    __atomic_fetch_add(&init_runs, 1, __ATOMIC_SEQ_CST);
    usleep(20000);
    for (int i = 0; i < 64; i++) table[i] = (long)i * i + 1;
}

static void init2(void)
{
    init2_runs++;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    CHECK(pthread_once(&once, init) == 0);
    long sum = 0;
    for (int i = 0; i < 64; i++) sum += table[i];
    CHECK(pthread_once(&once2, init2) == 0);
    return (void *)sum;
}

int main(void)
{
    CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
    CHECK(pthread_once(&once2, init2) == 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    int all_saw_table = 1;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0);
        all_saw_table &= (long)r == 85408; // sum of i*i+1 for i < 64
    }
    printf("once: init ran %d time(s), every thread saw its result: %s; second once ran %d time(s)\n",
           init_runs, all_saw_table ? "yes" : "no", init2_runs);
    CHECK(init_runs == 1 && all_saw_table && init2_runs == 1);
    puts("once: ok");
    return 0;
}
