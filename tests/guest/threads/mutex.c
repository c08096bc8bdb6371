// pthread mutexes: 8 threads x 20000 locked increments of a shared counter (an exact total,
// and the pair a/b, updated apart inside the lock, never seen unequal), trylock's EBUSY while
// another thread holds the lock, a recursive mutex taken three deep, and an error-checking
// mutex's EDEADLK (relock by the owner) and EPERM (unlock by another thread).
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { THREADS = 8, ITERS = 20000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter, a, b;

static void *adder(void *arg)
{
    long id = (long)arg, torn = 0;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        if (a != b) torn++;
        a++;
        counter += id + 1;
        b++;
        pthread_mutex_unlock(&lock);
    }
    return (void *)torn;
}

static pthread_mutex_t *target;

static void *try_lock(void *arg)
{
    (void)arg;
    long r = pthread_mutex_trylock(target);
    if (r == 0) pthread_mutex_unlock(target);
    return (void *)r;
}

static void *try_unlock(void *arg)
{
    (void)arg;
    return (void *)(long)pthread_mutex_unlock(target);
}

static long in_thread(void *(*fn)(void *), pthread_mutex_t *m)
{
    pthread_t t;
    void *ret;
    target = m;
    CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
    CHECK(pthread_join(t, &ret) == 0);
    return (long)ret;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, adder, (void *)i) == 0);
    long torn = 0;
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        CHECK(pthread_join(t[i], &ret) == 0);
        torn += (long)ret;
    }
    printf("counter=%ld (want %ld) a=%ld b=%ld torn=%ld\n", counter,
           (long)ITERS * THREADS * (THREADS + 1) / 2, a, b, torn);
    CHECK(counter == (long)ITERS * THREADS * (THREADS + 1) / 2);
    CHECK(a == (long)ITERS * THREADS && b == a && torn == 0);

    // trylock from another thread: EBUSY while held, 0 once released.
    pthread_mutex_lock(&lock);
    long busy = in_thread(try_lock, &lock);
    pthread_mutex_unlock(&lock);
    long free_ = in_thread(try_lock, &lock);
    printf("trylock: held=%s released=%s\n", busy == EBUSY ? "EBUSY" : "?",
           free_ == 0 ? "0" : "?");
    CHECK(busy == EBUSY && free_ == 0);

    // A recursive mutex: three locks by the owner, busy for others until the third unlock.
    pthread_mutexattr_t attr;
    pthread_mutex_t rec;
    pthread_mutexattr_init(&attr);
    CHECK(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) == 0);
    CHECK(pthread_mutex_init(&rec, &attr) == 0);
    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_trylock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    long rec_busy = in_thread(try_lock, &rec);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    long rec_free = in_thread(try_lock, &rec);
    printf("recursive: busy after 2 of 3 unlocks=%d, free after 3=%d\n", rec_busy == EBUSY,
           rec_free == 0);
    CHECK(rec_busy == EBUSY && rec_free == 0);
    pthread_mutex_destroy(&rec);

    // An error-checking mutex.
    pthread_mutex_t ec;
    CHECK(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK) == 0);
    CHECK(pthread_mutex_init(&ec, &attr) == 0);
    CHECK(pthread_mutex_lock(&ec) == 0);
    int relock = pthread_mutex_lock(&ec);
    long foreign = in_thread(try_unlock, &ec);
    CHECK(pthread_mutex_unlock(&ec) == 0);
    int unowned = pthread_mutex_unlock(&ec);
    printf("errorcheck: relock=%s foreign unlock=%s unlock unlocked=%s\n",
           relock == EDEADLK ? "EDEADLK" : "?", foreign == EPERM ? "EPERM" : "?",
           unowned == EPERM ? "EPERM" : "?");
    CHECK(relock == EDEADLK && foreign == EPERM && unowned == EPERM);
    pthread_mutex_destroy(&ec);
    pthread_mutexattr_destroy(&attr);
    puts("mutex: ok");
    return 0;
}
