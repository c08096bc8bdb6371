// kill between processes: kill(pid, SIGTERM) ends a child in pause(); a handled SIGUSR1 in
// the child (it answers through a pipe); kill(pid, 0) probes; setpgid puts three children in
// one new group and kill(-pgid, SIGTERM) ends all three (the parent, in another group, is
// untouched); killpg; getpgid/getpgrp; ESRCH for a reaped child's group; EINVAL for a bad
// signal number.
#include "proc.h"

static int ans[2];
static volatile sig_atomic_t got_usr1;
static void on_usr1(int s)
{
    (void)s;
    got_usr1++;
    write(ans[1], "U", 1);
}

int main(void)
{
    pid_t p = fork_flushed();
    if (p == 0) {
        for (;;) pause();
    }
    printf("kill(child, 0): %d\n", kill(p, 0));
    CHECK(kill(p, SIGTERM) == 0);
    printf("kill(child, SIGTERM): %s\n", status_text(reap(p)));

    CHECK(pipe(ans) == 0);
    int ready[2];
    CHECK(pipe(ready) == 0);
    p = fork_flushed();
    if (p == 0) {
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        sigprocmask(SIG_BLOCK, &block, &old);
        signal(SIGUSR1, on_usr1);
        CHECK(write(ready[1], "r", 1) == 1);
        while (got_usr1 < 3) sigsuspend(&old);
        _exit(8);
    }
    char c;
    CHECK(read_full(ready[0], &c, 1) == 1);
    int got = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(kill(p, SIGUSR1) == 0);
        CHECK(read_full(ans[0], &c, 1) == 1);
        got += c == 'U';
    }
    printf("handled SIGUSR1 three times: %d answers, child %s\n", got, status_text(reap(p)));

    // a process group of three
    pid_t kids[3];
    pid_t pgid = 0;
    for (int i = 0; i < 3; i++) {
        kids[i] = fork_flushed();
        if (kids[i] == 0) {
            CHECK(setpgid(0, pgid) == 0 || errno == EACCES || errno == EPERM);
            CHECK(write(ready[1], "r", 1) == 1);
            for (;;) pause();
        }
        if (i == 0) pgid = kids[0];
        int r = setpgid(kids[i], pgid);
        CHECK(r == 0 || errno == EACCES); // EACCES: the child got there first and... no exec, so 0
        CHECK(read_full(ready[0], &c, 1) == 1);
    }
    int same = 0;
    for (int i = 0; i < 3; i++) same += getpgid(kids[i]) == pgid;
    printf("children in the new group: %d; the parent is not: %d; leader is the first: %d\n", same,
           getpgrp() != pgid, pgid == kids[0]);
    CHECK(kill(-pgid, SIGTERM) == 0);
    for (int i = 0; i < 3; i++) printf("  member %d: %s\n", i, status_text(reap(kids[i])));
    errno = 0;
    int r = kill(-pgid, SIGTERM);
    printf("kill(-pgid) once the group is gone: %d %s\n", r, errname(errno));

    kids[0] = fork_flushed();
    if (kids[0] == 0) {
        setpgid(0, 0);
        CHECK(write(ready[1], "r", 1) == 1);
        for (;;) pause();
    }
    setpgid(kids[0], kids[0]);
    CHECK(read_full(ready[0], &c, 1) == 1);
    CHECK(killpg(kids[0], SIGKILL) == 0);
    printf("killpg(SIGKILL): %s\n", status_text(reap(kids[0])));

    errno = 0;
    r = kill(getpid(), 1000);
    printf("bad signal number: %d %s\n", r, errname(errno));
    errno = 0;
    r = setpgid(kids[0], 0);
    printf("setpgid of a reaped child: %d %s\n", r, errname(errno));
    // signal 0 to our own group, SIGCHLD (ignored by default) to our own group
    printf("kill(0, 0): %d, kill(0, SIGCHLD): %d\n", kill(0, 0), kill(0, SIGCHLD));
    return 0;
}
