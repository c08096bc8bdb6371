// vfork: the child execs busybox (argv[1]) or _exits; the parent resumes after that, with the
// child's exit status; a vfork child whose execve fails reports it through _exit(127). Also
// fork+execve of busybox many times in a row (20), and an execve from a process with a
// second thread (the other thread is gone in the new program).
//   vfork_exec BUSYBOX
#include "proc.h"
#include <pthread.h>

static void *spin(void *arg)
{
    (void)arg;
    for (;;) pause();
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    const char *bb = argv[1];
    if (argc > 2 && !strcmp(argv[2], "threaded")) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, spin, NULL) == 0);
        fflush(stdout);
        execl(bb, "echo", "exec from a threaded process: the new program runs", (char *)NULL);
        _exit(127);
    }
    int out[2];
    CHECK(pipe(out) == 0);
    fflush(stdout);
    pid_t p = vfork();
    if (p == 0) {
        dup2(out[1], 1);
        execl(bb, "echo", "hello from vfork+execve", (char *)NULL);
        _exit(127);
    }
    CHECK(p > 0);
    close(out[1]);
    char buf[256];
    size_t n = read_full(out[0], buf, sizeof buf - 1);
    buf[n] = 0;
    printf("vfork+execve: [%s] %s\n", buf, status_text(reap(p)));

    fflush(stdout);
    p = vfork();
    if (p == 0) _exit(33);
    printf("vfork+_exit(33): %s\n", status_text(reap(p)));

    fflush(stdout);
    p = vfork();
    if (p == 0) {
        execl("/nonexistent/program", "x", (char *)NULL);
        _exit(errno == ENOENT ? 127 : 126);
    }
    printf("vfork+execve of a missing file: %s\n", status_text(reap(p)));

    fflush(stdout);
    p = vfork();
    if (p == 0) {
        execl(bb, "sh", "-c", "exit 44", (char *)NULL);
        _exit(127);
    }
    printf("vfork+execve sh -c 'exit 44': %s\n", status_text(reap(p)));

    int ok = 0;
    for (int i = 0; i < 20; i++) {
        char code[8];
        snprintf(code, sizeof code, "%d", i);
        p = fork_flushed();
        if (p == 0) {
            execl(bb, "sh", "-c", "exit $1", "sh", code, (char *)NULL);
            _exit(127);
        }
        int st = reap(p);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == i;
    }
    printf("20 fork+execve in a row, right statuses: %d\n", ok);

    p = fork_flushed();
    if (p == 0) {
        execl("/proc/self/exe", "vfork_exec", bb, "threaded", (char *)NULL);
        _exit(127);
    }
    printf("threaded exec: %s\n", status_text(reap(p)));
    return 0;
}
