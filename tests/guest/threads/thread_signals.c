// Signals and threads: pthread_kill sends SIGUSR1 to each of 4 threads in turn and the
// handler runs on exactly that thread (it checks gettid() against the thread's own, kept in
// TLS), waking it from sigsuspend; a process-directed kill(getpid(), SIGUSR2), blocked in
// every thread, is taken by the one thread that sigwaits for it; per-thread masks are
// inherited at pthread_create and changed with pthread_sigmask; a signal a thread sends
// itself while blocking it stays pending until it unblocks it.
//
//   thread_signals [pthread_kill|sigwait|pending]...     (default: all three, in that order)
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

enum { THREADS = 4 };

static __thread volatile sig_atomic_t got;
static __thread pid_t my_tid;
static volatile sig_atomic_t wrong_thread;
static pthread_barrier_t ready;

static void on_usr1(int sig)
{
    (void)sig;
    if ((pid_t)syscall(SYS_gettid) != my_tid) wrong_thread = 1;
    got++;
}

static void *target(void *arg)
{
    (void)arg;
    my_tid = (pid_t)syscall(SYS_gettid);
    sigset_t now, wait_mask;
    CHECK(pthread_sigmask(SIG_BLOCK, NULL, &now) == 0);
    long inherited = sigismember(&now, SIGUSR1) && sigismember(&now, SIGUSR2);
    wait_mask = now;
    sigdelset(&wait_mask, SIGUSR1); // SIGUSR2 stays blocked here
    pthread_barrier_wait(&ready);
    while (!got) sigsuspend(&wait_mask);
    return (void *)(inherited + 2 * (long)got);
}

static void *waiter(void *arg)
{
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    int sig = 0;
    CHECK(sigwait(&set, &sig) == 0);
    return (void *)(long)sig;
}

static sigset_t block;

static void run_pthread_kill(void)
{
    CHECK(pthread_barrier_init(&ready, NULL, THREADS + 1) == 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, target, NULL) == 0);
    pthread_barrier_wait(&ready);
    int results[THREADS];
    for (int i = 0; i < THREADS; i++) {
        void *r;
        CHECK(pthread_kill(t[i], SIGUSR1) == 0);
        CHECK(pthread_join(t[i], &r) == 0);
        results[i] = (int)(long)r;
    }
    printf("pthread_kill:");
    for (int i = 0; i < THREADS; i++)
        printf(" thread%d(inherited mask=%d, handled=%d)", i, results[i] & 1, results[i] >> 1);
    printf(" wrong thread=%d main handled=%d\n", (int)wrong_thread, (int)got);
    for (int i = 0; i < THREADS; i++) CHECK(results[i] == 3);
    CHECK(!wrong_thread && got == 0);
    CHECK(pthread_barrier_destroy(&ready) == 0);
}

static void run_sigwait(void)
{
    pthread_t w;
    CHECK(pthread_create(&w, NULL, waiter, NULL) == 0);
    CHECK(kill(getpid(), SIGUSR2) == 0);
    void *r;
    CHECK(pthread_join(w, &r) == 0);
    printf("sigwait in a thread got %s\n", (long)r == SIGUSR2 ? "SIGUSR2" : "something else");
    CHECK((long)r == SIGUSR2);
}

static void run_pending(void)
{
    // SIGUSR1 sent to main while it is blocked stays pending until main unblocks it.
    got = 0;
    CHECK(pthread_kill(pthread_self(), SIGUSR1) == 0);
    sigset_t pending, usr1;
    CHECK(sigpending(&pending) == 0);
    int was_pending = sigismember(&pending, SIGUSR1);
    my_tid = (pid_t)syscall(SYS_gettid);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    CHECK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0);
    printf("main: pending while blocked=%d, handled after unblock=%d\n", was_pending, (int)got);
    CHECK(was_pending == 1 && got == 1 && !wrong_thread);
    CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0);
}

static void run(const char *mode)
{
    if (strcmp(mode, "pthread_kill") == 0)
        run_pthread_kill();
    else if (strcmp(mode, "sigwait") == 0)
        run_sigwait();
    else if (strcmp(mode, "pending") == 0)
        run_pending();
    else {
        fprintf(stderr, "thread_signals: unknown mode %s (pthread_kill, sigwait, pending)\n", mode);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    CHECK(pthread_sigmask(SIG_BLOCK, &block, NULL) == 0);

    if (argc > 1)
        for (int i = 1; i < argc; i++) run(argv[i]);
    else {
        run("pthread_kill");
        run("sigwait");
        run("pending");
    }
    puts("thread_signals: ok");
    return 0;
}
