// SIGPIPE and EPIPE: writing to a pipe whose reader (another process) has exited kills the
// writer with SIGPIPE; with SIGPIPE ignored the write fails with EPIPE; with a handler the
// handler runs and write fails with EPIPE; a short write when the reader leaves mid-way;
// socketpair peers get EPIPE too (MSG_NOSIGNAL).
#include "proc.h"
#include <sys/socket.h>

static volatile sig_atomic_t caught;
static void on_pipe(int s) { (void)s; caught++; }

// A child writes into a pipe whose reader is gone; how it ends.
static void writer(const char *what, int disposition)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t r = fork_flushed();
    if (r == 0) _exit(0); // the reader, gone at once
    close(p[0]);          // ... and our own read end
    reap(r);
    int o[2];
    CHECK(pipe(o) == 0);
    pid_t w = fork_flushed();
    if (w == 0) {
        close(o[0]);
        if (disposition == 1) signal(SIGPIPE, SIG_IGN);
        if (disposition == 2) signal(SIGPIPE, on_pipe);
        errno = 0;
        ssize_t n = write(p[1], "data", 4);
        char msg[64];
        int len = snprintf(msg, sizeof msg, "write returned %zd %s, handler ran %d", n, errname(errno), (int)caught);
        write_full(o[1], msg, (size_t)len);
        _exit(0);
    }
    close(o[1]);
    close(p[1]);
    char buf[128];
    size_t n = read_full(o[0], buf, sizeof buf - 1);
    buf[n] = 0;
    close(o[0]);
    printf("%-18s %s%s%s\n", what, status_text(reap(w)), n ? ": " : "", buf);
}

int main(void)
{
    writer("default", 0);
    writer("SIG_IGN", 1);
    writer("handler", 2);

    // the reader takes 10 bytes then leaves; a big write is cut short or fails
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t r = fork_flushed();
    if (r == 0) {
        close(p[1]);
        char b[10];
        read_full(p[0], b, 10);
        _exit(0);
    }
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    static char big[1 << 20];
    ssize_t total = 0, n;
    while ((n = write(p[1], big, sizeof big)) > 0) total += n;
    printf("writing 1 MiB chunks until the reader left: ended with %s, wrote more than 10 bytes: %d\n",
           errname(errno), total > 10);
    reap(r);
    close(p[1]);

    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    r = fork_flushed();
    if (r == 0) _exit(0);
    close(sv[1]);
    reap(r);
    errno = 0;
    n = send(sv[0], "x", 1, MSG_NOSIGNAL);
    printf("send to a socket whose peer exited: %zd %s\n", n, errname(errno));
    return 0;
}
