// The program the gdb stub's tests debug (crates/armada-cli/tests/gdb.rs): a call to break
// at, stores to watch, a vector register, threads, a fork, a SIGTERM from its child, and a
// fault, abort() and a signal to a handler, each chosen by argv[1].
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

long watched;
volatile long counter;

__attribute__((noinline)) long add(long a, long b) {
    return a + b;
}

__attribute__((noinline)) void after_stores(void) {
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void in_thread(long id) {
    __atomic_fetch_add(&counter, id, __ATOMIC_SEQ_CST);
}

__attribute__((noinline)) void after_fork(int status) {
    counter = status;
}

volatile int usr1_seen;

static void on_usr1(int sig) {
    usr1_seen = sig;
}

static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 100; i++)
        __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    in_thread(id);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    __asm__ volatile("movi v5.16b, #0x2a" ::: "v5");
    long s = add(2, 3);
    watched = s;
    watched = s * 7;
    after_stores();
    if (strcmp(mode, "threads") == 0) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, worker, (void *)(i + 1));
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    if (strcmp(mode, "fork") == 0) {
        pid_t c = fork();
        if (c == 0) {
            add(40, 2); // a breakpoint here stops only the followed process, the parent
            _exit(7);
        }
        int st = 0;
        waitpid(c, &st, 0);
        after_fork(WEXITSTATUS(st));
    }
    if (strcmp(mode, "term") == 0) {
        // its child ends it with SIGTERM while it waits for the child
        pid_t c = fork();
        if (c == 0) {
            kill(getppid(), SIGTERM);
            _exit(0);
        }
        int st = 0;
        waitpid(c, &st, 0);
        counter = 1;
    }
    if (strcmp(mode, "segv") == 0)
        *(volatile int *)16 = 1;
    if (strcmp(mode, "abort") == 0)
        abort();
    if (strcmp(mode, "usr1") == 0) {
        signal(SIGUSR1, on_usr1);
        raise(SIGUSR1);
        counter = usr1_seen;
    }
    printf("sum %ld watched %ld counter %ld\n", s, watched, counter);
    return 0;
}
