// fork in a process with threads: only the forking thread exists in the child (it can still
// use malloc and stdio, and a mutex another thread held is handled by pthread_atfork), the
// atfork handlers run in order (prepare in reverse, parent and child in registration
// order), and the parent's threads keep running; a thread (not main) forks and waits.
#include "proc.h"
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char trail[64];
static void add(char c)
{
    size_t n = strlen(trail);
    trail[n] = c;
    trail[n + 1] = 0;
}
static void prep1(void) { add('P'); }
static void prep2(void) { add('p'); pthread_mutex_lock(&lock); }
static void par1(void) { add('A'); }
static void par2(void) { add('a'); pthread_mutex_unlock(&lock); }
static void chi1(void) { add('C'); }
static void chi2(void) { add('c'); pthread_mutex_unlock(&lock); }

static volatile int stop;
static volatile long counter;
static void *worker(void *arg)
{
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
        sched_yield();
    }
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    pid_t p = fork();
    if (p == 0) {
        char *m = malloc(100);
        snprintf(m, 100, "child of a thread");
        _exit(strlen(m) == 17 ? 21 : 1);
    }
    int st = reap(p);
    return (void *)(long)WEXITSTATUS(st);
}

int main(void)
{
    CHECK(pthread_atfork(prep1, par1, chi1) == 0);
    CHECK(pthread_atfork(prep2, par2, chi2) == 0);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    int rep[2];
    CHECK(pipe(rep) == 0);
    for (int round = 0; round < 5; round++) {
        trail[0] = 0;
        pid_t p = fork_flushed();
        if (p == 0) {
            char msg[128];
            pthread_mutex_lock(&lock); // free in the child (chi2 unlocked it)
            pthread_mutex_unlock(&lock);
            char *m = malloc(1000);
            CHECK(m != NULL);
            free(m);
            int len = snprintf(msg, sizeof msg, "%s", trail);
            write_full(rep[1], msg, (size_t)len + 1);
            _exit(0);
        }
        char msg[128];
        size_t i = 0;
        while (i < sizeof msg - 1) {
            CHECK(read_full(rep[0], msg + i, 1) == 1);
            if (msg[i++] == 0) break;
        }
        reap(p);
        if (round == 0) printf("atfork order: parent %s, child %s\n", trail, msg);
    }
    long before = counter;
    while (counter == before) sched_yield();
    printf("the parent's threads still run after 5 forks: yes\n");
    pthread_t f;
    void *r;
    CHECK(pthread_create(&f, NULL, forker, NULL) == 0);
    CHECK(pthread_join(f, &r) == 0);
    printf("a thread forked and waited: child exited %ld\n", (long)r);
    stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
