// Close-on-exec: fds made with O_CLOEXEC, pipe2(O_CLOEXEC), dup3(O_CLOEXEC),
// fcntl(F_DUPFD_CLOEXEC), F_SETFD FD_CLOEXEC are closed in the exec'd program; the others
// stay open (same offset, same flags), and a cleared FD_CLOEXEC keeps its fd. The program
// re-executes itself through /proc/self/exe (mode "check FD...") to look. The fds are moved
// to 40..49 first, so that numbers an emulator uses for itself never collide with them.
#include "proc.h"
#include <fcntl.h>

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "check")) {
        for (int i = 2; i + 1 < argc; i += 2) {
            int fd = atoi(argv[i + 1]);
            int fl = fcntl(fd, F_GETFD);
            printf("  %-26s fd %d: %s", argv[i], fd, fl < 0 ? "closed" : "open");
            if (fl >= 0) printf(", FD_CLOEXEC=%d, offset %ld", (fl & FD_CLOEXEC) != 0, (long)lseek(fd, 0, SEEK_CUR));
            printf("\n");
        }
        return 0;
    }
    int f = open("data.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(f >= 0);
    write_full(f, "0123456789", 10);
    int fds[16];
    const char *names[16];
    int n = 0;
#define ADD(name, expr)                       \
    do {                                      \
        int _fd = (expr);                     \
        CHECK(_fd >= 0);                      \
        names[n] = name;                      \
        fds[n++] = _fd;                       \
    } while (0)
    ADD("plain open", open("data.txt", O_RDONLY));
    ADD("open O_CLOEXEC", open("data.txt", O_RDONLY | O_CLOEXEC));
    int pp[2];
    CHECK(pipe2(pp, O_CLOEXEC) == 0);
    ADD("pipe2 O_CLOEXEC (read)", pp[0]);
    ADD("pipe2 O_CLOEXEC (write)", pp[1]);
    int q[2];
    CHECK(pipe(q) == 0);
    ADD("pipe (read)", q[0]);
    ADD("dup3 O_CLOEXEC", dup3(f, 60, O_CLOEXEC));
    ADD("F_DUPFD_CLOEXEC", fcntl(f, F_DUPFD_CLOEXEC, 61));
    int s = open("data.txt", O_RDONLY);
    CHECK(fcntl(s, F_SETFD, FD_CLOEXEC) == 0);
    ADD("F_SETFD FD_CLOEXEC", s);
    int u = open("data.txt", O_RDONLY | O_CLOEXEC);
    CHECK(fcntl(u, F_SETFD, 0) == 0);
    ADD("cloexec cleared", u);
    ADD("dup of a cloexec fd", dup(fds[1]));
    ADD("shared offset (at 10)", dup(f));
    // move to 40.. keeping the flags: dup3/dup2 drop FD_CLOEXEC, so put it back by hand
    char *args[64];
    int k = 0;
    char nums[16][8];
    args[k++] = "cloexec";
    args[k++] = "check";
    for (int i = 0; i < n; i++) {
        int fl = fcntl(fds[i], F_GETFD);
        CHECK(fl >= 0);
        int to = 40 + i;
        CHECK(dup3(fds[i], to, (fl & FD_CLOEXEC) ? O_CLOEXEC : 0) == to);
        close(fds[i]);
        snprintf(nums[i], sizeof nums[i], "%d", to);
        args[k++] = (char *)names[i];
        args[k++] = nums[i];
    }
    args[k] = NULL;
    close(f);
    printf("before exec:\n");
    fflush(stdout);
    pid_t p = fork_flushed();
    if (p == 0) {
        execv("/proc/self/exe", args);
        _exit(127);
    }
    printf("exec'd child: %s\n", status_text(reap(p)));
    // the parent still has all of them
    int open_count = 0;
    for (int i = 0; i < n; i++) open_count += fcntl(40 + i, F_GETFD) >= 0;
    printf("still open in the parent: %d of %d\n", open_count, n);
    return 0;
}
