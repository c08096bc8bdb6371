// A nonblocking pipe read across processes (EAGAIN while the child has not written), poll()
// on a pipe waiting for another process (POLLIN, then POLLHUP once every writer exited),
// poll on a write end whose reader exited (POLLERR), select() on a pipe, and O_NONBLOCK
// writes filling a pipe (EAGAIN) that another process drains.
#include "proc.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/select.h>

static const char *revents(short r)
{
    static char buf[64];
    buf[0] = 0;
    if (r & POLLIN) strcat(buf, "IN ");
    if (r & POLLOUT) strcat(buf, "OUT ");
    if (r & POLLHUP) strcat(buf, "HUP ");
    if (r & POLLERR) strcat(buf, "ERR ");
    if (r & POLLNVAL) strcat(buf, "NVAL ");
    if (!buf[0]) strcpy(buf, "none ");
    buf[strlen(buf) - 1] = 0;
    return buf;
}

int main(void)
{
    int p[2], go[2];
    CHECK(pipe2(p, O_NONBLOCK) == 0 && pipe(go) == 0);
    pid_t c = fork_flushed();
    if (c == 0) {
        close(p[0]);
        close(go[1]);
        char x;
        read_full(go[0], &x, 1);
        CHECK(write(p[1], "ping", 4) == 4);
        read_full(go[0], &x, 1); // keep the write end open until told
        _exit(0);
    }
    close(p[1]);
    close(go[0]);
    char buf[64];
    errno = 0;
    ssize_t n = read(p[0], buf, sizeof buf);
    printf("nonblocking read before the child wrote: %zd %s\n", n, errname(errno));
    struct pollfd pf = {p[0], POLLIN, 0};
    printf("poll, timeout 0: %d [%s]\n", poll(&pf, 1, 0), revents(pf.revents));
    CHECK(write(go[1], "1", 1) == 1);
    pf.revents = 0;
    int r = poll(&pf, 1, 10000);
    printf("poll until the child wrote: %d [%s]\n", r, revents(pf.revents));
    n = read(p[0], buf, sizeof buf);
    printf("read: %zd '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    CHECK(write(go[1], "2", 1) == 1); // the child exits: no writer left
    pf.revents = 0;
    r = poll(&pf, 1, 10000);
    printf("poll after the writer exited: %d [%s]\n", r, revents(pf.revents));
    printf("read at EOF: %zd\n", read(p[0], buf, sizeof buf));
    reap(c);
    close(p[0]);

    // write end, reader gone
    CHECK(pipe(p) == 0);
    c = fork_flushed();
    if (c == 0) _exit(0);
    close(p[0]);
    reap(c);
    struct pollfd wf = {p[1], POLLOUT, 0};
    r = poll(&wf, 1, 0);
    printf("poll on a write end without readers: %d [%s]\n", r, revents(wf.revents));
    close(p[1]);

    // select: readable once a grandchild writes
    CHECK(pipe(p) == 0);
    c = fork_flushed();
    if (c == 0) {
        close(p[0]);
        usleep(50000);
        CHECK(write(p[1], "s", 1) == 1);
        _exit(0);
    }
    close(p[1]);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    struct timeval tv = {10, 0};
    r = select(p[0] + 1, &rs, NULL, NULL, &tv);
    printf("select: %d, readable %d\n", r, FD_ISSET(p[0], &rs) != 0);
    reap(c);
    close(p[0]);

    // fill a nonblocking pipe, let a child drain it, write again
    CHECK(pipe(p) == 0);
    CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
    static char chunk[4096];
    long filled = 0;
    while ((n = write(p[1], chunk, sizeof chunk)) > 0) filled += n;
    printf("nonblocking writes until full: %s, filled at least 4096: %d\n", errname(errno), filled >= 4096);
    c = fork_flushed();
    if (c == 0) {
        close(p[1]);
        static char sink[1 << 16];
        long got = 0;
        ssize_t k;
        while ((k = read(p[0], sink, sizeof sink)) > 0) got += k;
        _exit(got == filled + 4096 ? 0 : 1);
    }
    close(p[0]);
    wf.fd = p[1];
    wf.revents = 0;
    r = poll(&wf, 1, 10000);
    printf("poll for POLLOUT while the child drains: %d [%s]\n", r, revents(wf.revents));
    CHECK(write(p[1], chunk, sizeof chunk) == (ssize_t)sizeof chunk);
    close(p[1]);
    printf("child read everything: %s\n", status_text(reap(c)));
    return 0;
}
