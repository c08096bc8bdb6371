// __thread TLS in 8 threads alive at once: each starts with the initial values (not main's
// changes), owns distinct addresses, runs its own counter and buffer without interference,
// and main's TLS is untouched at the end. errno is per thread too.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { THREADS = 8, STEPS = 10000 };

static __thread long counter = 5;
static __thread char name[24] = "initial";
static __thread long zeroed[16];
static _Thread_local struct {
    int a;
    short b;
} pair = {7, -3};

static pthread_barrier_t barrier;
static long *addrs[THREADS];
static long results[THREADS];
static int bad_init[THREADS], bad_errno[THREADS];

__attribute__((noinline)) static void bump(long by)
{
    counter += by;
    zeroed[by % 16] += 1;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    bad_init[id] = counter != 5 || strcmp(name, "initial") != 0 || pair.a != 7 || pair.b != -3;
    for (int i = 0; i < 16; i++) bad_init[id] |= zeroed[i] != 0;
    addrs[id] = &counter;
    snprintf(name, sizeof name, "thread-%ld", id);
    errno = 1000 + (int)id;
    pthread_barrier_wait(&barrier); // all alive: the addresses must differ
    for (int i = 0; i < STEPS; i++) bump(id + 1);
    pthread_barrier_wait(&barrier);
    bad_errno[id] = errno != 1000 + (int)id;
    char want[24];
    snprintf(want, sizeof want, "thread-%ld", id);
    results[id] = counter + zeroed[(id + 1) % 16] + (strcmp(name, want) == 0 ? 0 : 1000000);
    return NULL;
}

int main(void)
{
    counter = 99;
    strcpy(name, "main");
    pair.a = 1;
    errno = 0;
    CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    int distinct = 1, inits = 0, errnos = 0;
    for (int i = 0; i < THREADS; i++) {
        inits += bad_init[i];
        errnos += bad_errno[i];
        distinct &= addrs[i] != &counter;
        for (int j = 0; j < i; j++) distinct &= addrs[i] != addrs[j];
    }
    for (int i = 0; i < THREADS; i++)
        printf("thread %d: counter+hits=%ld\n", i, results[i]);
    printf("distinct addresses=%s bad initial values=%d bad errno=%d\n", distinct ? "yes" : "no",
           inits, errnos);
    printf("main: counter=%ld name=%s pair.a=%d\n", counter, name, pair.a);
    for (int i = 0; i < THREADS; i++) CHECK(results[i] == 5 + (long)(i + 1) * STEPS + STEPS);
    CHECK(distinct && inits == 0 && errnos == 0);
    CHECK(counter == 99 && strcmp(name, "main") == 0 && pair.a == 1);
    puts("tls_threads: ok");
    return 0;
}
