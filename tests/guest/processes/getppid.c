// getppid:
//   getppid child       the child's getppid() is the parent's getpid(); pids differ; the
//                       grandchild's parent is the child
//   getppid orphan      the child exits while the grandchild runs: the grandchild's getppid()
//                       changes (to init or a subreaper), and the grandchild keeps running
//   getppid subreaper   PR_SET_CHILD_SUBREAPER: the orphan is re-parented to us and we reap it
#include "proc.h"
#include <sys/prctl.h>
#include <time.h>

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "child";
    pid_t me = getpid();
    int rep[2];
    CHECK(pipe(rep) == 0);
    if (!strcmp(mode, "child")) {
        pid_t p = fork_flushed();
        if (p == 0) {
            int r[4] = {getppid() == me, getpid() != me, getpid() > 0, 0};
            pid_t c = getpid();
            pid_t g = fork();
            if (g == 0) {
                char ok = getppid() == c;
                write_full(rep[1], &ok, 1);
                _exit(0);
            }
            reap(g);
            char ok;
            read_full(rep[0], &ok, 1);
            r[3] = ok;
            printf("child: getppid()==parent %d, own pid differs %d, pid>0 %d, grandchild's parent is child %d\n",
                   r[0], r[1], r[2], r[3]);
            fflush(stdout);
            _exit(0);
        }
        printf("parent: fork returned a pid > 0: %d\n", p > 0);
        reap(p);
        return 0;
    }
    int sub = !strcmp(mode, "subreaper");
    if (sub) CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t c = fork_flushed();
    if (c == 0) {
        pid_t cp = getpid();
        pid_t g = fork();
        if (g == 0) {
            close(go[1]);
            char x;
            read_full(go[0], &x, 1); // the parent says go once our parent is dead
            pid_t np = -1;
            for (int i = 0; i < 5000; i++) {
                np = getppid();
                if (np != cp) break;
                nap_ms(1);
            }
            char res[3] = {np != cp, np == me, np > 0};
            write_full(rep[1], res, 3);
            _exit(5);
        }
        _exit(0);
    }
    close(go[0]);
    printf("middle child: %s\n", status_text(reap(c)));
    CHECK(write(go[1], "g", 1) == 1);
    char res[3];
    CHECK(read_full(rep[0], res, 3) == 3);
    printf("orphan's getppid changed: %d; positive: %d\n", res[0], res[2]);
    if (sub) {
        printf("re-parented to the subreaper: %d\n", res[1]);
        int st;
        pid_t r = waitpid(-1, &st, 0);
        printf("subreaper reaped the orphan: %d, %s\n", r > 0, status_text(st));
    } else {
        printf("re-parented to the grandparent (must not be): %d\n", res[1]);
        int st;
        errno = 0;
        pid_t r = waitpid(-1, &st, WNOHANG);
        printf("grandparent's waitpid(-1): %s %s\n", r > 0 ? "a pid" : r == 0 ? "0" : "-1", errname(errno));
    }
    return 0;
}
