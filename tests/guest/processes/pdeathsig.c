// PR_SET_PDEATHSIG: a child asks for SIGUSR1 when its parent ends; its parent ends, and
// the child's handler reports through a pipe to the grandparent. Also PR_GET_PDEATHSIG,
// and that a fork does not inherit the setting.
#include "proc.h"
#include <sys/prctl.h>

static int out_fd = -1;

static void on_usr1(int s)
{
    (void)s;
    const char msg[] = "child: SIGUSR1 after its parent ended\n";
    write(out_fd, msg, sizeof msg - 1);
    _exit(0);
}

int main(void)
{
    int p[2], ready[2];
    CHECK(pipe(p) == 0 && pipe(ready) == 0);
    pid_t a = fork_flushed();
    if (a == 0) {
        close(p[0]);
        pid_t b = fork();
        CHECK(b >= 0);
        if (b == 0) {
            out_fd = p[1];
            signal(SIGUSR1, on_usr1);
            CHECK(prctl(PR_SET_PDEATHSIG, SIGUSR1) == 0);
            int got = -1;
            CHECK(prctl(PR_GET_PDEATHSIG, &got) == 0);
            char line[64];
            int n = snprintf(line, sizeof line, "child: PR_GET_PDEATHSIG %s\n", got == SIGUSR1 ? "SIGUSR1" : "other");
            write(p[1], line, n);
            pid_t c = fork();
            CHECK(c >= 0);
            if (c == 0) {
                int g = -1;
                prctl(PR_GET_PDEATHSIG, &g);
                n = snprintf(line, sizeof line, "grandchild: inherited %d\n", g);
                write(p[1], line, n);
                _exit(0);
            }
            waitpid(c, NULL, 0);
            close(ready[0]);
            write(ready[1], "r", 1); // now the parent may end
            for (;;)
                pause();
        }
        close(ready[1]);
        char r;
        CHECK(read(ready[0], &r, 1) == 1);
        _exit(0); // the parent ends; the child gets SIGUSR1
    }
    close(p[1]);
    close(ready[0]);
    close(ready[1]);
    int st;
    CHECK(waitpid(a, &st, 0) == a);
    char buf[512];
    size_t len = 0;
    ssize_t k;
    while ((k = read(p[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += k;
    buf[len] = 0;
    fputs(buf, stdout);
    return 0;
}
