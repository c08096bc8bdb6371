// Sessions and process groups: a child's setsid() returns its pid and makes it session and
// group leader (getsid, getpgrp); a second setsid fails with EPERM; setsid in a group leader
// fails with EPERM; setpgid into a group of another session fails with EPERM; the parent
// sees the child's new sid/pgid through getsid/getpgid.
#include "proc.h"

int main(void)
{
    pid_t me = getpid();
    pid_t mysid = getsid(0);
    printf("parent: getsid(0) > 0: %d, getpgrp()==getpid() (started as a group leader): %d\n", mysid > 0,
           getpgrp() == me);
    errno = 0;
    int r = setsid();
    printf("setsid in a group leader: %s %s\n", r == me ? "own pid (was not a group leader)" : r == -1 ? "-1" : "?",
           errname(errno));
    int rep[2], go[2];
    CHECK(pipe(rep) == 0 && pipe(go) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        char res[8];
        res[0] = getsid(0) == mysid;
        res[1] = getpgrp() == getpgid(me);
        pid_t s = setsid();
        res[2] = s == getpid();
        res[3] = getsid(0) == getpid();
        res[4] = getpgrp() == getpid();
        errno = 0;
        res[5] = setsid() == -1 && errno == EPERM;
        errno = 0;
        res[6] = setpgid(0, getpgid(me)) == -1 && errno == EPERM;
        res[7] = getsid(me) == mysid;
        write_full(rep[1], res, 8);
        char c;
        read_full(go[0], &c, 1);
        _exit(0);
    }
    char res[8];
    CHECK(read_full(rep[0], res, 8) == 8);
    printf("child before setsid: same session %d, same group %d\n", res[0], res[1]);
    printf("child: setsid()==getpid() %d, getsid(0)==getpid() %d, getpgrp()==getpid() %d\n", res[2], res[3], res[4]);
    printf("child: second setsid EPERM %d, setpgid into the parent's group EPERM %d, getsid(parent) %d\n", res[5],
           res[6], res[7]);
    printf("parent sees: getsid(child)==child %d, getpgid(child)==child %d\n", getsid(p) == p, getpgid(p) == p);
    errno = 0;
    r = setpgid(p, 0);
    printf("parent's setpgid of a child in another session: %d %s\n", r, errname(errno));
    CHECK(write(go[1], "g", 1) == 1);
    printf("child: %s\n", status_text(reap(p)));
    errno = 0;
    r = getsid(p);
    printf("getsid of a reaped child: %d %s\n", r, errname(errno));
    return 0;
}
