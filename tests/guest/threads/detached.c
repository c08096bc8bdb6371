// Detached threads: 16 created detached (attribute) and 4 detached after creation with
// pthread_detach, each storing its result and posting a semaphore as its last act; main
// waits for all 20 posts (the final "join") and sums the results.
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { BY_ATTR = 16, BY_CALL = 4, ALL = BY_ATTR + BY_CALL };

static sem_t done;
static long results[ALL];

static void *worker(void *arg)
{
    long id = (long)arg, v = 0;
    for (long i = 0; i <= 1000 * (id + 1); i++) v += i % 7;
    results[id] = v;
    CHECK(sem_post(&done) == 0);
    return NULL;
}

int main(void)
{
    CHECK(sem_init(&done, 0, 0) == 0);
    pthread_attr_t attr;
    int state;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0);
    CHECK(pthread_attr_getdetachstate(&attr, &state) == 0 && state == PTHREAD_CREATE_DETACHED);
    for (long i = 0; i < BY_ATTR; i++) {
        pthread_t t;
        CHECK(pthread_create(&t, &attr, worker, (void *)i) == 0);
    }
    pthread_attr_destroy(&attr);
    for (long i = BY_ATTR; i < ALL; i++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, worker, (void *)i) == 0);
        CHECK(pthread_detach(t) == 0);
    }
    for (int i = 0; i < ALL; i++)
        while (sem_wait(&done) != 0) {
        }
    long sum = 0, want = 0;
    for (long id = 0; id < ALL; id++) {
        sum += results[id];
        for (long i = 0; i <= 1000 * (id + 1); i++) want += i % 7;
    }
    printf("detached: %d threads finished, sum=%ld (want %ld)\n", ALL, sum, want);
    CHECK(sum == want);
    puts("detached: ok");
    return 0;
}
