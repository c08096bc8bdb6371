// pthread_key_create destructors: 8 threads set a heap value on a key whose destructor sums
// and frees it at thread exit; a key left NULL gets no destructor call; a destructor that sets
// a new value is called again (a second round); pthread_exit runs them too; main's value is
// not destroyed by exit; pthread_key_delete stops destructor calls for later threads.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { THREADS = 8 };

static pthread_key_t k_sum, k_null, k_again, k_deleted;
static long dtor_sum;
static int dtor_sum_calls, dtor_null_calls, dtor_again_calls, dtor_deleted_calls;

static void sum_dtor(void *v)
{
    __atomic_fetch_add(&dtor_sum, *(long *)v, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&dtor_sum_calls, 1, __ATOMIC_SEQ_CST);
    free(v);
}

static void null_dtor(void *v)
{
    (void)v;
    __atomic_fetch_add(&dtor_null_calls, 1, __ATOMIC_SEQ_CST);
}

static void again_dtor(void *v)
{
    __atomic_fetch_add(&dtor_again_calls, 1, __ATOMIC_SEQ_CST);
    if ((intptr_t)v == 1) pthread_setspecific(k_again, (void *)2); // one more round
}

static void deleted_dtor(void *v)
{
    (void)v;
    __atomic_fetch_add(&dtor_deleted_calls, 1, __ATOMIC_SEQ_CST);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    long *v = malloc(sizeof *v);
    *v = (id + 1) * 100;
    CHECK(pthread_getspecific(k_sum) == NULL);
    CHECK(pthread_setspecific(k_sum, v) == 0);
    CHECK(pthread_getspecific(k_sum) == v);
    CHECK(pthread_setspecific(k_again, (void *)1) == 0);
    if (id % 2) pthread_exit(NULL); // destructors run on pthread_exit as on return
    return NULL;
}

static void *late_worker(void *arg)
{
    (void)arg;
    return NULL;
}

int main(void)
{
    CHECK(pthread_key_create(&k_sum, sum_dtor) == 0);
    CHECK(pthread_key_create(&k_null, null_dtor) == 0);
    CHECK(pthread_key_create(&k_again, again_dtor) == 0);
    CHECK(pthread_key_create(&k_deleted, deleted_dtor) == 0);
    long *mine = malloc(sizeof *mine);
    *mine = 1;
    CHECK(pthread_setspecific(k_sum, mine) == 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    printf("destructors: sum=%ld calls=%d null-key calls=%d re-set key calls=%d\n", dtor_sum,
           dtor_sum_calls, dtor_null_calls, dtor_again_calls);
    CHECK(dtor_sum == 100L * THREADS * (THREADS + 1) / 2 && dtor_sum_calls == THREADS);
    CHECK(dtor_null_calls == 0 && dtor_again_calls == 2 * THREADS);
    CHECK(pthread_getspecific(k_sum) == mine);

    CHECK(pthread_key_delete(k_deleted) == 0);
    pthread_t late;
    CHECK(pthread_create(&late, NULL, late_worker, NULL) == 0);
    CHECK(pthread_join(late, NULL) == 0);
    printf("deleted key: destructor calls=%d; main's value kept=%ld\n", dtor_deleted_calls,
           *(long *)pthread_getspecific(k_sum));
    CHECK(dtor_deleted_calls == 0);
    puts("keys: ok");
    return 0;
}
