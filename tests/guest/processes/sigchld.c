// SIGCHLD:
//   sigchld count      an SA_SIGINFO handler counts 10 children (one at a time, SIGCHLD blocked
//                      and taken in sigsuspend, so none coalesce): si_code, si_status, si_pid
//   sigchld ign        SIGCHLD set to SIG_IGN: children are reaped at once, wait() -> ECHILD
//   sigchld nocldwait  SA_NOCLDWAIT: no zombies (wait -> ECHILD) but the handler still runs
//   sigchld default    default disposition: no signal seen, zombies stay until waited for
//   sigchld eintr      a blocking read in the parent is interrupted by SIGCHLD (EINTR without
//                      SA_RESTART) and restarted with SA_RESTART
#include "proc.h"

static volatile sig_atomic_t count, last_code, last_status, last_pid_ok, bad;
static volatile pid_t expect_pid;

static void on_chld(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (sig != SIGCHLD) bad = 1;
    count++;
    last_code = si->si_code;
    last_status = si->si_status;
    last_pid_ok = si->si_pid == expect_pid;
}

static void on_chld_plain(int sig) { (void)sig; count++; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "count";
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (!strcmp(mode, "count")) {
        sa.sa_sigaction = on_chld;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        CHECK(sigaction(SIGCHLD, &sa, NULL) == 0);
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGCHLD);
        CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
        for (int i = 0; i < 10; i++) {
            int before = count;
            pid_t p = fork_flushed();
            if (p == 0) _exit(i);
            expect_pid = p;
            while (count == before) sigsuspend(&old);
            int st = reap(p);
            if (i < 3 || i == 9)
                printf("child %d: handler saw si_code=%s si_status=%d si_pid ok=%d; waitpid: %s\n", i,
                       last_code == CLD_EXITED ? "CLD_EXITED" : "?", (int)last_status, (int)last_pid_ok,
                       status_text(st));
        }
        // a killed child
        int before = count;
        pid_t p = fork_flushed();
        if (p == 0) {
            for (;;) pause();
        }
        expect_pid = p;
        CHECK(kill(p, SIGKILL) == 0);
        while (count == before) sigsuspend(&old);
        printf("killed child: si_code=%s si_status=%d\n", last_code == CLD_KILLED ? "CLD_KILLED" : "?",
               (int)last_status);
        reap(p);
        printf("handler ran %d times, bad=%d\n", (int)count, (int)bad);
    } else if (!strcmp(mode, "ign")) {
        signal(SIGCHLD, SIG_IGN);
        for (int i = 0; i < 5; i++) {
            pid_t p = fork_flushed();
            if (p == 0) _exit(i);
        }
        int st;
        errno = 0;
        pid_t r = wait(&st); // blocks until all five are gone, then ECHILD
        printf("wait with SIGCHLD ignored: %d %s\n", (int)r, errname(errno));
        pid_t p = fork_flushed();
        if (p == 0) _exit(3);
        errno = 0;
        r = waitpid(p, &st, 0);
        printf("waitpid(that child): %d %s\n", (int)r, errname(errno));
        // back to the default: children are waitable again
        signal(SIGCHLD, SIG_DFL);
        p = fork_flushed();
        if (p == 0) _exit(4);
        printf("after SIG_DFL: %s\n", status_text(reap(p)));
    } else if (!strcmp(mode, "nocldwait")) {
        sa.sa_handler = on_chld_plain;
        sa.sa_flags = SA_NOCLDWAIT;
        CHECK(sigaction(SIGCHLD, &sa, NULL) == 0);
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGCHLD);
        CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
        pid_t p = fork_flushed();
        if (p == 0) _exit(1);
        while (count == 0) sigsuspend(&old);
        int st;
        errno = 0;
        pid_t r = waitpid(p, &st, 0);
        printf("SA_NOCLDWAIT: handler ran %d, waitpid: %s %s\n", (int)count, r > 0 ? "a pid" : r == 0 ? "0" : "-1",
               errname(errno));
    } else if (!strcmp(mode, "default")) {
        pid_t kids[4];
        int go[2];
        CHECK(pipe(go) == 0);
        for (int i = 0; i < 4; i++) {
            kids[i] = fork_flushed();
            if (kids[i] == 0) {
                close(go[0]);
                CHECK(write(go[1], "x", 1) == 1);
                _exit(20 + i);
            }
        }
        close(go[1]);
        char buf[8];
        printf("children started: %zu\n", read_full(go[0], buf, sizeof buf));
        // all four are zombies now (EOF means every write end is closed: they exited)
        siginfo_t si;
        int zombies = 0;
        for (int i = 0; i < 4; i++) {
            memset(&si, 0, sizeof si);
            CHECK(waitid(P_PID, kids[i], &si, WEXITED | WNOWAIT) == 0);
            zombies += si.si_pid == kids[i];
        }
        printf("zombies waitable: %d\n", zombies);
        for (int i = 3; i >= 0; i--) printf("child %d: %s\n", i, status_text(reap(kids[i])));
    } else if (!strcmp(mode, "eintr")) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        sa.sa_handler = on_chld_plain;
        sa.sa_flags = 0;
        CHECK(sigaction(SIGCHLD, &sa, NULL) == 0);
        pid_t p = fork_flushed();
        if (p == 0) {
            usleep(200000); // the parent is in read() by then
            _exit(0);
        }
        char c;
        errno = 0;
        ssize_t r = read(fds[0], &c, 1); // only SIGCHLD can end this (fds[1] stays open)
        printf("read without SA_RESTART: %zd %s (handler ran %d)\n", r, errname(errno), (int)count);
        reap(p);
        sa.sa_flags = SA_RESTART;
        CHECK(sigaction(SIGCHLD, &sa, NULL) == 0);
        p = fork_flushed();
        if (p == 0) {
            // the parent's read restarts after our SIGCHLD; our grandchild feeds it later
            pid_t g = fork();
            if (g == 0) {
                usleep(100000);
                CHECK(write(fds[1], "z", 1) == 1);
                _exit(0);
            }
            _exit(0);
        }
        r = read(fds[0], &c, 1);
        // (not the exact count: the orphaned grandchild's exit is not ours to see, and
        // getppid orphan checks the re-parenting)
        printf("read with SA_RESTART: %zd '%c' (handler ran again: %d)\n", r, c, count >= 2);
        reap(p);
    }
    return 0;
}
