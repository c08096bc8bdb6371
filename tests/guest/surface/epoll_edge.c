/*
 * Edge-triggered epoll, as event loops (Go's netpoller, libuv, tokio) use it: an fd is
 * reported after each wakeup that finds it ready, not only when it turns from not ready to
 * ready. The case that loses wakeups when only readiness changes are watched: data read to
 * EAGAIN and written again before the next epoll_wait. Pipes, a socketpair, loopback TCP
 * (a listener's second connection, a connection's data), an eventfd, and EPOLLONESHOT.
 * Every wait has timeout 0: what is reported must be pending already.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            printf("CHECK failed line %d: %s (errno %d)\n", __LINE__, #c, errno);  \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* What one wait with timeout 0 reports: the number of events, and the first one's mask. */
static void wait_now(int ep, const char *what)
{
    struct epoll_event ev[4];
    int n = epoll_wait(ep, ev, 4, 0);
    unsigned mask = n > 0 ? ev[0].events & (EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLRDHUP) : 0;
    printf("%-44s events %d mask %#x\n", what, n, mask);
}

static void drain(int fd)
{
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    CHECK(errno == EAGAIN);
}

static void reader_edges(const char *name, int r, int w, unsigned extra)
{
    char line[96];
    int ep = epoll_create1(0);
    CHECK(ep >= 0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET | extra, .data.fd = r};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev) == 0);
    snprintf(line, sizeof line, "%s: nothing yet", name);
    wait_now(ep, line);
    CHECK(write(w, "a", 1) == 1);
    snprintf(line, sizeof line, "%s: written", name);
    wait_now(ep, line);
    snprintf(line, sizeof line, "%s: not again", name);
    wait_now(ep, line);
    CHECK(write(w, "b", 1) == 1);
    snprintf(line, sizeof line, "%s: more while unread", name);
    wait_now(ep, line);
    drain(r);
    CHECK(write(w, "c", 1) == 1);
    snprintf(line, sizeof line, "%s: drained, then written", name);
    wait_now(ep, line);
    drain(r);
    snprintf(line, sizeof line, "%s: drained", name);
    wait_now(ep, line);
    close(w);
    snprintf(line, sizeof line, "%s: writer closed", name);
    wait_now(ep, line);
    close(ep);
    close(r);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int p[2];
    CHECK(pipe2(p, O_NONBLOCK) == 0);
    reader_edges("pipe", p[0], p[1], 0);

    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    reader_edges("socketpair", sv[0], sv[1], EPOLLRDHUP);

    /* eventfd: each write is a wakeup */
    int efd = eventfd(0, EFD_NONBLOCK);
    CHECK(efd >= 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = efd};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
    unsigned long long one = 1, got;
    CHECK(write(efd, &one, 8) == 8);
    wait_now(ep, "eventfd: written");
    CHECK(read(efd, &got, 8) == 8);
    CHECK(write(efd, &one, 8) == 8);
    wait_now(ep, "eventfd: read, then written");
    CHECK(write(efd, &one, 8) == 8);
    wait_now(ep, "eventfd: written while unread");
    wait_now(ep, "eventfd: not again");
    close(ep);
    close(efd);

    /* loopback TCP: a listener's connections, one connection's data both ways */
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t alen = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &alen) == 0);
    CHECK(listen(l, 8) == 0);
    ep = epoll_create1(0);
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLET, .data.fd = l};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) == 0);
    int c1 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c1, (struct sockaddr *)&a, sizeof a) == 0);
    usleep(20000);
    wait_now(ep, "listener: one connection");
    int s1 = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    CHECK(s1 >= 0);
    CHECK(accept4(l, NULL, NULL, SOCK_NONBLOCK) < 0 && errno == EAGAIN);
    int c2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c2, (struct sockaddr *)&a, sizeof a) == 0);
    usleep(20000);
    wait_now(ep, "listener: accepted, then another");
    int c3 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c3, (struct sockaddr *)&a, sizeof a) == 0);
    usleep(20000);
    wait_now(ep, "listener: a third while one waits");
    close(ep);

    ep = epoll_create1(0);
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = s1};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, s1, &ev) == 0);
    wait_now(ep, "tcp: nothing yet");
    CHECK(write(c1, "request", 7) == 7);
    usleep(20000);
    wait_now(ep, "tcp: request");
    drain(s1);
    CHECK(write(c1, "again", 5) == 5);
    usleep(20000);
    wait_now(ep, "tcp: drained, then written");
    drain(s1);
    wait_now(ep, "tcp: drained");

    /* EPOLLONESHOT: one report, then none until re-armed with EPOLL_CTL_MOD */
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLET | EPOLLONESHOT, .data.fd = s1};
    CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, s1, &ev) == 0);
    CHECK(write(c1, "x", 1) == 1);
    usleep(20000);
    wait_now(ep, "oneshot: written");
    drain(s1);
    CHECK(write(c1, "y", 1) == 1);
    usleep(20000);
    wait_now(ep, "oneshot: written, not re-armed");
    CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, s1, &ev) == 0);
    wait_now(ep, "oneshot: re-armed");
    close(c1);
    usleep(20000);
    CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, s1, &ev) == 0);
    wait_now(ep, "tcp: peer closed");
    close(ep);
    close(s1);
    close(c2);
    close(c3);
    close(l);
    printf("done\n");
    return 0;
}
