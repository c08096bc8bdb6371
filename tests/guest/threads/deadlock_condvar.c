// A thread waits forever on a condition variable nobody signals, and main waits forever in
// pthread_join for that thread: every thread is blocked with no timeout. Under armada this
// must end with a deadlock report and status 137. (A real kernel, or qemu, just hangs.)
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int signalled;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!signalled) pthread_cond_wait(&never, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t t;
    printf("deadlock_condvar: starting\n");
    fflush(stdout);
    pthread_create(&t, NULL, waiter, NULL);
    pthread_join(t, NULL);
    printf("deadlock_condvar: not reached\n");
    return 1;
}
