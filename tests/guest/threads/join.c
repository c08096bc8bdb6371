// pthread_join's return values: from return, from pthread_exit deep in a call chain, a
// heap-allocated result, a thread that ended long before its join; pthread_tryjoin_np (EBUSY
// while running), pthread_timedjoin_np (ETIMEDOUT), joining oneself (EDEADLK), and
// pthread_self/pthread_equal.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void *square(void *arg)
{
    intptr_t v = (intptr_t)arg;
    return (void *)(v * v);
}

__attribute__((noinline)) static void deep(int depth, intptr_t acc)
{
    if (depth < 0) return;
    if (depth == 0) pthread_exit((void *)acc);
    deep(depth - 1, acc * 2 + depth);
}

static void *exits_deep(void *arg)
{
    deep((int)(intptr_t)arg, 1);
    return (void *)-1; // not reached
}

struct result {
    char text[32];
    long fib;
};

static void *heap_result(void *arg)
{
    (void)arg;
    struct result *r = malloc(sizeof *r);
    long a = 0, b = 1;
    for (int i = 0; i < 50; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    r->fib = a;
    snprintf(r->text, sizeof r->text, "fib(50)");
    return r;
}

static sem_t release;

static void *held(void *arg)
{
    (void)arg;
    CHECK(sem_wait(&release) == 0);
    return (void *)77;
}

static pthread_t main_thread;

static void *self_checks(void *arg)
{
    (void)arg;
    intptr_t r = 0;
    if (pthread_join(pthread_self(), NULL) == EDEADLK) r |= 1;
    if (!pthread_equal(pthread_self(), main_thread)) r |= 2;
    return (void *)r;
}

int main(void)
{
    main_thread = pthread_self();
    pthread_t t[10];
    for (intptr_t i = 0; i < 10; i++) CHECK(pthread_create(&t[i], NULL, square, (void *)i) == 0);
    printf("squares:");
    for (int i = 0; i < 10; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0);
        printf(" %ld", (long)(intptr_t)r);
    }
    printf("\n");

    pthread_t d;
    void *r;
    CHECK(pthread_create(&d, NULL, exits_deep, (void *)(intptr_t)20) == 0);
    CHECK(pthread_join(d, &r) == 0);
    printf("pthread_exit from depth 20: %ld\n", (long)(intptr_t)r);

    pthread_t h;
    CHECK(pthread_create(&h, NULL, heap_result, NULL) == 0);
    usleep(20000); // most likely finished by now; the join must work either way
    CHECK(pthread_join(h, &r) == 0);
    struct result *res = r;
    printf("heap result: %s = %ld\n", res->text, res->fib);
    free(res);

    CHECK(sem_init(&release, 0, 0) == 0);
    pthread_t w;
    CHECK(pthread_create(&w, NULL, held, NULL) == 0);
    int busy = pthread_tryjoin_np(w, &r);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int timed = pthread_timedjoin_np(w, &r, &ts);
    CHECK(sem_post(&release) == 0);
    CHECK(pthread_join(w, &r) == 0);
    printf("tryjoin=%s timedjoin=%s then join=%ld\n", busy == EBUSY ? "EBUSY" : "?",
           timed == ETIMEDOUT ? "ETIMEDOUT" : "?", (long)(intptr_t)r);
    CHECK(busy == EBUSY && timed == ETIMEDOUT && r == (void *)77);

    pthread_t s;
    CHECK(pthread_create(&s, NULL, self_checks, NULL) == 0);
    CHECK(pthread_join(s, &r) == 0);
    printf("self join=EDEADLK:%d differs from main:%d main==self:%d\n", (int)((intptr_t)r & 1),
           (int)((intptr_t)r >> 1 & 1), pthread_equal(main_thread, pthread_self()) != 0);
    CHECK(r == (void *)3);
    puts("join: ok");
    return 0;
}
