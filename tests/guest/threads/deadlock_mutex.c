// A real deadlock, on purpose: thread 1 holds mutex A and wants B, thread 2 holds B and
// wants A (a barrier makes sure both hold their first lock before asking for the second),
// and main waits in pthread_join. Nothing can ever wake anyone: under armada this must end
// with a deadlock report and status 137. (A real kernel, or qemu, just hangs.)
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;

static void *one(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&b);
    return NULL;
}

static void *two(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&a);
    return NULL;
}

int main(void)
{
    pthread_t t1, t2;
    pthread_barrier_init(&both_hold_one, NULL, 2);
    printf("deadlock_mutex: starting\n");
    fflush(stdout);
    pthread_create(&t1, NULL, one, NULL);
    pthread_create(&t2, NULL, two, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("deadlock_mutex: not reached\n");
    return 1;
}
