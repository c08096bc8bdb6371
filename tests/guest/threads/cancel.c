// pthread_cancel of a thread blocked in pthread_cond_wait (its cleanup handler runs and the
// mutex is free afterwards), blocked in sleep(), with cancellation disabled until it enables
// it and calls pthread_testcancel, and spinning with asynchronous cancellation. Every
// canceled thread's join gives PTHREAD_CANCELED.
//
//   cancel [condvar|sleep|disabled|async]...      (default: all four, in that order)
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting, cleanups, reached_end;
static sem_t started;

static void unlock_mutex(void *m)
{
    cleanups++;
    pthread_mutex_unlock(m);
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    pthread_cleanup_push(unlock_mutex, &mu);
    waiting = 1;
    for (;;) pthread_cond_wait(&cv, &mu); // nobody signals
    pthread_cleanup_pop(1);
    return NULL;
}

static void count_cleanup(void *arg)
{
    (void)arg;
    cleanups++;
}

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    sem_post(&started);
    sleep(1000);
    reached_end = 1;
    pthread_cleanup_pop(0);
    return NULL;
}

static volatile int may_enable;

static void *disabled(void *arg)
{
    (void)arg;
    int old;
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0);
    sem_post(&started);
    while (!may_enable) usleep(1000); // a cancellation point, but cancellation is disabled
    reached_end = 1;
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
    pthread_testcancel();
    reached_end = 2;
    return NULL;
}

static volatile unsigned long spins;

static void *spinner(void *arg)
{
    (void)arg;
    int old;
    CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old) == 0);
    sem_post(&started);
    for (;;) spins++;
    return NULL;
}

static const char *joined(pthread_t t)
{
    void *ret = NULL;
    CHECK(pthread_join(t, &ret) == 0);
    return ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "not canceled";
}

static void run(const char *mode)
{
    pthread_t t;
    cleanups = reached_end = 0;
    if (strcmp(mode, "condvar") == 0) {
        waiting = 0;
        CHECK(pthread_create(&t, NULL, cond_waiter, NULL) == 0);
        for (;;) { // once we hold the mutex with waiting set, the thread is in the wait
            pthread_mutex_lock(&mu);
            if (waiting) break;
            pthread_mutex_unlock(&mu);
            usleep(1000);
        }
        pthread_mutex_unlock(&mu);
        CHECK(pthread_cancel(t) == 0);
        const char *r = joined(t);
        int relock = pthread_mutex_trylock(&mu);
        if (relock == 0) pthread_mutex_unlock(&mu);
        printf("condvar: join=%s cleanups=%d mutex free after=%s\n", r, cleanups,
               relock == 0 ? "yes" : "no");
    } else if (strcmp(mode, "sleep") == 0) {
        CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
        CHECK(sem_wait(&started) == 0);
        usleep(10000);
        CHECK(pthread_cancel(t) == 0);
        const char *r = joined(t);
        printf("sleep: join=%s cleanups=%d reached end=%d\n", r, cleanups, reached_end);
    } else if (strcmp(mode, "disabled") == 0) {
        may_enable = 0;
        CHECK(pthread_create(&t, NULL, disabled, NULL) == 0);
        CHECK(sem_wait(&started) == 0);
        CHECK(pthread_cancel(t) == 0);
        usleep(10000);
        may_enable = 1;
        const char *r = joined(t);
        printf("disabled: join=%s reached testcancel=%d passed it=%d\n", r, reached_end >= 1,
               reached_end == 2);
    } else if (strcmp(mode, "async") == 0) {
        CHECK(pthread_create(&t, NULL, spinner, NULL) == 0);
        CHECK(sem_wait(&started) == 0);
        usleep(10000);
        CHECK(pthread_cancel(t) == 0);
        const char *r = joined(t);
        printf("async: join=%s\n", r);
    } else {
        fprintf(stderr, "cancel: unknown mode %s (condvar, sleep, disabled, async)\n", mode);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    static const char *all[] = {"condvar", "sleep", "disabled", "async"};
    CHECK(sem_init(&started, 0, 0) == 0);
    if (argc > 1)
        for (int i = 1; i < argc; i++) run(argv[i]);
    else
        for (int i = 0; i < 4; i++) run(all[i]);
    return 0;
}
