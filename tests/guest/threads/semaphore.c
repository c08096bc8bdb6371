// POSIX semaphores (unnamed): a counting semaphore of 3 admits at most 3 of 10 workers at
// once (each does 200 rounds inside), two semaphores pass a token back and forth 1000 times
// between two threads, and sem_trywait (EAGAIN), sem_timedwait (ETIMEDOUT) and sem_getvalue
// behave.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

enum { WORKERS = 10, LIMIT = 3, ROUNDS = 200, PINGS = 1000 };

static sem_t slots;
static int inside, max_inside;
static long done;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        while (sem_wait(&slots) != 0) CHECK(errno == EINTR);
        int now = __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        int m = __atomic_load_n(&max_inside, __ATOMIC_SEQ_CST);
        while (now > m && !__atomic_compare_exchange_n(&max_inside, &m, now, 0, __ATOMIC_SEQ_CST,
                                                       __ATOMIC_SEQ_CST)) {
        }
        if (i % 16 == 0) sched_yield();
        __atomic_fetch_add(&done, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        CHECK(sem_post(&slots) == 0);
    }
    return NULL;
}

static sem_t ping, pong;
static long ball;

static void *ponger(void *arg)
{
    (void)arg;
    for (int i = 0; i < PINGS; i++) {
        CHECK(sem_wait(&ping) == 0);
        ball = ball * 3 + 1; // odd after every pong
        CHECK(sem_post(&pong) == 0);
    }
    return NULL;
}

int main(void)
{
    CHECK(sem_init(&slots, 0, LIMIT) == 0);
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < WORKERS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    int value;
    CHECK(sem_getvalue(&slots, &value) == 0);
    printf("limit: rounds=%ld at most %d inside: %s, value after=%d\n", done, LIMIT,
           max_inside >= 1 && max_inside <= LIMIT ? "yes" : "NO", value);
    CHECK(done == WORKERS * ROUNDS && max_inside >= 1 && max_inside <= LIMIT && value == LIMIT);

    CHECK(sem_init(&ping, 0, 0) == 0 && sem_init(&pong, 0, 0) == 0);
    pthread_t p;
    CHECK(pthread_create(&p, NULL, ponger, NULL) == 0);
    long odd_seen = 0;
    for (int i = 0; i < PINGS; i++) {
        ball = (ball * 7) % 1000003;
        ball -= ball % 2; // even before every ping
        CHECK(sem_post(&ping) == 0);
        CHECK(sem_wait(&pong) == 0);
        odd_seen += ball % 2;
    }
    CHECK(pthread_join(p, NULL) == 0);
    printf("ping-pong: %d rounds, every pong seen=%s, ball=%ld\n", PINGS,
           odd_seen == PINGS ? "yes" : "NO", ball);
    CHECK(odd_seen == PINGS);

    sem_t empty;
    CHECK(sem_init(&empty, 0, 0) == 0);
    int r = sem_trywait(&empty);
    int e1 = errno;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int r2 = sem_timedwait(&empty, &ts);
    int e2 = errno;
    CHECK(sem_post(&empty) == 0 && sem_post(&empty) == 0);
    CHECK(sem_getvalue(&empty, &value) == 0);
    printf("trywait=%s timedwait=%s value after two posts=%d\n",
           r == -1 && e1 == EAGAIN ? "EAGAIN" : "?", r2 == -1 && e2 == ETIMEDOUT ? "ETIMEDOUT" : "?",
           value);
    CHECK(r == -1 && e1 == EAGAIN && r2 == -1 && e2 == ETIMEDOUT && value == 2);
    puts("semaphore: ok");
    return 0;
}
