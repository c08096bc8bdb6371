// Waiting for what is not our child: wait() with no children, waitpid(getppid()), waitpid(1),
// waitpid of a grandchild, waitpid of a sibling, waitpid of an already reaped child: ECHILD;
// bad options: EINVAL; waitpid(0) (our process group) with no children.
#include "proc.h"

static void show(const char *what, pid_t r)
{
    printf("%-36s %d %s\n", what, (int)r, r < 0 ? errname(errno) : "");
    errno = 0;
}

int main(void)
{
    int st;
    errno = 0;
    show("wait() with no children", wait(&st));
    show("waitpid(getppid())", waitpid(getppid(), &st, 0));
    show("waitpid(1)", waitpid(1, &st, 0));
    show("waitpid(0) with no children", waitpid(0, &st, 0));
    show("waitpid(-1, WNOHANG), no children", waitpid(-1, &st, WNOHANG));
    pid_t c = fork_flushed();
    if (c == 0) _exit(0);
    show("waitpid(child, bad options 0x100)", waitpid(c, &st, 0x100));
    reap(c);
    show("waitpid(reaped child)", waitpid(c, &st, 0));

    int rep[2];
    CHECK(pipe(rep) == 0);
    c = fork_flushed();
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) _exit(1);
        write_full(rep[1], &g, sizeof g);
        reap(g);
        _exit(0);
    }
    pid_t g;
    CHECK(read_full(rep[0], &g, sizeof g) == sizeof g);
    show("waitpid(grandchild)", waitpid(g, &st, 0));
    reap(c);

    // a child tries to wait for its sibling
    pid_t a = fork_flushed();
    if (a == 0) {
        char x;
        read_full(rep[0], &x, 1);
        _exit(0);
    }
    pid_t b = fork_flushed();
    if (b == 0) {
        errno = 0;
        pid_t r = waitpid(a, &st, 0);
        printf("%-36s %d %s\n", "sibling's waitpid(other sibling)", (int)r, errname(errno));
        fflush(stdout);
        _exit(0);
    }
    reap(b);
    CHECK(write(rep[1], "x", 1) == 1);
    reap(a);
    return 0;
}
