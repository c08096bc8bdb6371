// How a process with threads ends, one mode per run:
//   exit       a second thread calls exit(3) while main waits in pthread_join: status 3,
//              stdio flushed, atexit handler run once
//   main-exit  main calls pthread_exit; the last thread's return ends the process with
//              status 0 (the worker prints after main is gone)
//   segv       a second thread writes through a null pointer: the process dies by SIGSEGV
//   abort      a second thread calls abort(): SIGABRT
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void at_exit(void)
{
    printf("atexit handler ran\n");
}

static void *exiter(void *arg)
{
    (void)arg;
    printf("worker: calling exit(3)\n");
    exit(3);
}

static pthread_t main_thread;

static void *survivor(void *arg)
{
    (void)arg;
    void *r = NULL;
    int e = pthread_join(main_thread, &r); // main's pthread_exit value
    printf("worker: joined main (%d), main returned %ld, now the last thread\n", e, (long)r);
    return NULL;
}

static void *segv(void *arg)
{
    volatile int *p = arg;
    *p = 1;
    return NULL;
}

static void *aborter(void *arg)
{
    (void)arg;
    abort();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    pthread_t t;
    main_thread = pthread_self();
    atexit(at_exit);
    printf("main: mode %s\n", mode);
    if (strcmp(mode, "exit") == 0) {
        pthread_create(&t, NULL, exiter, NULL);
        pthread_join(t, NULL);
        printf("main: not reached\n");
        return 1;
    } else if (strcmp(mode, "main-exit") == 0) {
        pthread_create(&t, NULL, survivor, NULL);
        fflush(stdout);
        pthread_exit((void *)42);
    } else if (strcmp(mode, "segv") == 0) {
        fflush(stdout);
        pthread_create(&t, NULL, segv, NULL);
        pthread_join(t, NULL);
        printf("main: not reached\n");
        return 1;
    } else if (strcmp(mode, "abort") == 0) {
        fflush(stdout);
        pthread_create(&t, NULL, aborter, NULL);
        pthread_join(t, NULL);
        printf("main: not reached\n");
        return 1;
    }
    fprintf(stderr, "usage: thread_exit exit|main-exit|segv|abort\n");
    return 2;
}
