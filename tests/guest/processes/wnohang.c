// waitpid(WNOHANG) polling: 0 while the child runs (it waits on a pipe), its pid once it
// exited; ECHILD with no children left; waitpid(-1) collects any child; wait3/wait4 rusage.
#include "proc.h"
#include <sys/resource.h>
#include <time.h>

int main(void)
{
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        close(go[1]);
        char c;
        read_full(go[0], &c, 1);
        _exit(c);
    }
    close(go[0]);
    int st = -1;
    int zeros = 0;
    for (int i = 0; i < 3; i++) {
        pid_t r = waitpid(p, &st, WNOHANG);
        if (r == 0) zeros++;
    }
    printf("WNOHANG while the child blocks: returned 0 %d of 3 times\n", zeros);
    CHECK(write(go[1], "\x05", 1) == 1);
    long polls = 0;
    pid_t r;
    while ((r = waitpid(p, &st, WNOHANG)) == 0) {
        polls++;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        CHECK(polls < 20000);
    }
    printf("then WNOHANG returned the child: %s, %s\n", r == p ? "yes" : "no", status_text(st));
    errno = 0;
    r = waitpid(-1, &st, WNOHANG);
    printf("WNOHANG with no children: %d %s\n", (int)r, errname(errno));

    // waitpid(-1): three children, exit codes summed whatever order they are collected in
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork_flushed();
        if (kids[i] == 0) _exit(10 * (i + 1));
    }
    int sum = 0, mask = 0;
    for (int i = 0; i < 3; i++) {
        r = waitpid(-1, &st, 0);
        CHECK(r > 0);
        for (int k = 0; k < 3; k++)
            if (kids[k] == r) mask |= 1 << k;
        sum += WEXITSTATUS(st);
    }
    printf("waitpid(-1) x3: sum %d, every child once: %s\n", sum, mask == 7 ? "yes" : "no");

    // wait4 with rusage
    p = fork_flushed();
    if (p == 0) {
        volatile unsigned long x = 0;
        for (unsigned long i = 0; i < 2000000; i++) x += i;
        _exit(3);
    }
    struct rusage ru;
    memset(&ru, 0xff, sizeof ru);
    CHECK(wait4(p, &st, 0, &ru) == p);
    printf("wait4: %s, rusage filled: %s\n", status_text(st),
           ru.ru_utime.tv_sec >= 0 && ru.ru_utime.tv_usec >= 0 && ru.ru_utime.tv_usec < 1000000 ? "yes" : "no");
    p = fork_flushed();
    if (p == 0) _exit(4);
    CHECK(wait3(&st, 0, NULL) == p);
    printf("wait3: %s\n", status_text(st));
    return 0;
}
