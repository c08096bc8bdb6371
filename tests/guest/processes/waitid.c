// waitid: P_PID, P_ALL, P_PGID, WEXITED, WNOWAIT (the child stays waitable), WNOHANG (si_pid
// 0), si_code CLD_EXITED / CLD_KILLED, si_status, si_pid; ECHILD; EINVAL without WEXITED etc.
#include "proc.h"

static const char *code_name(int c)
{
    switch (c) {
    case CLD_EXITED: return "CLD_EXITED";
    case CLD_KILLED: return "CLD_KILLED";
    case CLD_DUMPED: return "CLD_DUMPED";
    case CLD_STOPPED: return "CLD_STOPPED";
    case CLD_CONTINUED: return "CLD_CONTINUED";
    default: return "?";
    }
}

int main(void)
{
    siginfo_t si;
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        close(go[1]);
        char c;
        read_full(go[0], &c, 1);
        _exit(7);
    }
    close(go[0]);
    memset(&si, 0x55, sizeof si);
    CHECK(waitid(P_PID, p, &si, WEXITED | WNOHANG) == 0);
    printf("WNOHANG, child running: si_pid=%d si_signo=%d\n", (int)si.si_pid, si.si_signo);
    CHECK(write(go[1], "x", 1) == 1);
    memset(&si, 0, sizeof si);
    CHECK(waitid(P_PID, p, &si, WEXITED | WNOWAIT) == 0);
    printf("WNOWAIT: si_signo=%s si_code=%s si_status=%d si_pid is child: %d\n", signame(si.si_signo),
           code_name(si.si_code), si.si_status, si.si_pid == p);
    memset(&si, 0, sizeof si);
    CHECK(waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) == 0);
    printf("again P_ALL WNOWAIT: si_code=%s si_status=%d same child: %d\n", code_name(si.si_code),
           si.si_status, si.si_pid == p);
    memset(&si, 0, sizeof si);
    CHECK(waitid(P_PID, p, &si, WEXITED) == 0);
    printf("P_PID WEXITED: si_code=%s si_status=%d\n", code_name(si.si_code), si.si_status);
    errno = 0;
    int r = waitid(P_PID, p, &si, WEXITED);
    printf("after reaping: %d %s\n", r, errname(errno));

    // killed child
    p = fork_flushed();
    if (p == 0) {
        for (;;) pause();
    }
    CHECK(kill(p, SIGTERM) == 0);
    memset(&si, 0, sizeof si);
    CHECK(waitid(P_ALL, 0, &si, WEXITED) == 0);
    printf("killed: si_code=%s si_status=%s same child: %d\n", code_name(si.si_code),
           signame(si.si_status), si.si_pid == p);

    // P_PGID: a child in its own process group
    p = fork_flushed();
    if (p == 0) {
        setpgid(0, 0);
        _exit(12);
    }
    setpgid(p, p); // both sides, as shells do (one of them may fail with EACCES/ESRCH)
    memset(&si, 0, sizeof si);
    CHECK(waitid(P_PGID, p, &si, WEXITED) == 0);
    printf("P_PGID: si_code=%s si_status=%d same child: %d\n", code_name(si.si_code), si.si_status,
           si.si_pid == p);

    errno = 0;
    r = waitid(P_ALL, 0, &si, WEXITED | WNOHANG);
    printf("no children, WNOHANG: %d %s\n", r, errname(errno));
    p = fork_flushed();
    if (p == 0) _exit(0);
    errno = 0;
    r = waitid(P_ALL, 0, &si, WNOHANG); // no WEXITED/WSTOPPED/WCONTINUED
    printf("no event flags: %d %s\n", r, errname(errno));
    errno = 0;
    r = waitid(7, 0, &si, WEXITED); // bad idtype
    printf("bad idtype: %d %s\n", r, errname(errno));
    reap(p);
    return 0;
}
