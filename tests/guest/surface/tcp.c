/* Loopback TCP (IPv4 and IPv6) between processes and threads: socket, bind (a fixed port
 * and port 0), listen, accept4, connect, getsockname/getpeername, an echo server in a
 * forked child, a non-blocking connect/accept with poll and epoll, shutdown, and the
 * errors: a port in use, a connect to a closed port, a non-loopback connect, a read of an
 * unconnected socket, accept on a non-listener. Ports are printed only when fixed. */
#include "../processes/proc.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int listener4(int port, struct sockaddr_in *out)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    int one = 1;
    CHECK(setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(s, 16) == 0);
    socklen_t len = sizeof *out;
    CHECK(getsockname(s, (struct sockaddr *)out, &len) == 0);
    return s;
}

static void echo_across_fork(void)
{
    struct sockaddr_in a;
    int l = listener4(0, &a);
    printf("bound to an ephemeral port: %d, family AF_INET: %d, len %d\n", ntohs(a.sin_port) >= 1024,
           a.sin_family == AF_INET, (int)sizeof a);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        /* the server: echo upper-cased lines to two clients, one after the other */
        for (int k = 0; k < 2; k++) {
            struct sockaddr_in peer;
            socklen_t plen = sizeof peer;
            int c = accept(l, (struct sockaddr *)&peer, &plen);
            CHECK(c >= 0);
            char buf[256];
            ssize_t n;
            while ((n = read(c, buf, sizeof buf)) > 0) {
                for (ssize_t i = 0; i < n; i++)
                    if (buf[i] >= 'a' && buf[i] <= 'z') buf[i] -= 32;
                write_full(c, buf, (size_t)n);
            }
            CHECK(n == 0);
            close(c);
        }
        _exit(0);
    }
    for (int k = 0; k < 2; k++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(c >= 0);
        CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
        struct sockaddr_in me, peer;
        socklen_t ml = sizeof me, pl = sizeof peer;
        CHECK(getsockname(c, (struct sockaddr *)&me, &ml) == 0);
        CHECK(getpeername(c, (struct sockaddr *)&peer, &pl) == 0);
        printf("client %d: peer is the server's port: %d, own address 127.0.0.1: %d\n", k,
               peer.sin_port == a.sin_port, me.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
        const char *msg = k == 0 ? "hello over tcp\n" : "second client\n";
        write_full(c, msg, strlen(msg));
        CHECK(shutdown(c, SHUT_WR) == 0);
        char buf[256];
        size_t n = read_full(c, buf, sizeof buf - 1);
        buf[n] = 0;
        printf("client %d got: %s", k, buf);
        close(c);
    }
    printf("server: %s\n", status_text(reap(pid)));
    close(l);
}

static void big_transfer(void)
{
    struct sockaddr_in a;
    int l = listener4(0, &a);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
        static char blk[65536];
        for (int i = 0; i < 64; i++) {
            memset(blk, 'a' + i % 26, sizeof blk);
            write_full(c, blk, sizeof blk);
        }
        close(c);
        _exit(0);
    }
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    CHECK(c >= 0);
    unsigned long sum = 0, total = 0;
    char buf[10000];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) sum = sum * 31 + (unsigned char)buf[i];
        total += (unsigned long)n;
    }
    printf("4 MiB through one connection: %lu bytes, checksum %lx, child %s\n", total, sum,
           status_text(reap(pid)));
    close(c);
    close(l);
}

static void ipv6_and_nonblocking(void)
{
    int l = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(l >= 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l, 4) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    errno = 0;
    printf("accept with nothing queued (non-blocking): %d %s\n", accept(l, NULL, NULL), errname(errno));
    int c = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(c, (struct sockaddr *)&a, sizeof a);
    printf("non-blocking connect: %d %s\n", r, r < 0 ? (errno == EINPROGRESS ? "EINPROGRESS" : errname(errno)) : "");
    struct pollfd p = {.fd = c, .events = POLLOUT};
    CHECK(poll(&p, 1, 5000) == 1);
    int err = -1;
    socklen_t el = sizeof err;
    CHECK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el) == 0);
    printf("writable after connect: %d, SO_ERROR %d\n", (p.revents & POLLOUT) != 0, err);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) == 0);
    struct epoll_event out;
    printf("epoll: listener readable: %d\n", epoll_wait(ep, &out, 1, 5000) == 1 && out.data.fd == l);
    struct sockaddr_in6 peer;
    socklen_t pl = sizeof peer;
    int s = accept4(l, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK);
    CHECK(s >= 0);
    printf("accepted: peer family AF_INET6: %d, peer ::1: %d\n", peer.sin6_family == AF_INET6,
           memcmp(&peer.sin6_addr, &in6addr_loopback, 16) == 0);
    char buf[16];
    errno = 0;
    printf("read with nothing sent (non-blocking): %zd %s\n", read(s, buf, sizeof buf), errname(errno));
    CHECK(write(c, "ping", 4) == 4);
    ev.events = EPOLLIN;
    ev.data.fd = s;
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) == 0);
    printf("epoll: accepted socket readable: %d\n", epoll_wait(ep, &out, 1, 5000) == 1 && out.data.fd == s);
    printf("read: %zd\n", read(s, buf, sizeof buf));
    errno = 0;
    r = connect(c, (struct sockaddr *)&a, sizeof a);
    printf("connect again: %d %s\n", r, errno == EISCONN ? "EISCONN" : errname(errno));
    errno = 0;
    r = connect(c, (struct sockaddr *)&a, sizeof a);
    printf("and again: %d %s\n", r, errno == EISCONN ? "EISCONN" : errname(errno));
    int one = 1, v = 0;
    socklen_t vl = sizeof v;
    CHECK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    CHECK(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0);
    printf("TCP_NODELAY set: %d\n", v != 0);
    vl = sizeof v;
    CHECK(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) == 0);
    printf("SO_ACCEPTCONN on the listener: %d\n", v);
    vl = sizeof v;
    CHECK(getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &vl) == 0);
    printf("SO_TYPE: %d\n", v);
    close(s);
    close(c);
    close(l);
    close(ep);
}

/* A v4 client reaches a dual-stack v6 listener on :: */
static void dual_stack(void)
{
    int l = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l, 4) == 0);
    socklen_t al = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = a.sin6_port};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(c, (struct sockaddr *)&to, sizeof to) == 0);
    struct sockaddr_in6 peer;
    socklen_t pl = sizeof peer;
    int s = accept(l, (struct sockaddr *)&peer, &pl);
    CHECK(s >= 0);
    char text[64];
    inet_ntop(AF_INET6, &peer.sin6_addr, text, sizeof text);
    printf("v4 client on a v6 listener: peer %s\n", text);
    close(s);
    close(c);
    close(l);
}

/* A v6 client bound to [::] reaches a v4 listener on 127.0.0.1 at ::ffff:127.0.0.1 (Go's
 * dial from [::]:0); each side sees the other's address in its own family. */
static void v6_client_v4_listener(void)
{
    struct sockaddr_in la;
    int l = listener4(0, &la);
    int c = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 any = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    CHECK(bind(c, (struct sockaddr *)&any, sizeof any) == 0);
    struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_port = la.sin_port};
    CHECK(inet_pton(AF_INET6, "::ffff:127.0.0.1", &to.sin6_addr) == 1);
    CHECK(connect(c, (struct sockaddr *)&to, sizeof to) == 0);
    struct sockaddr_in6 me;
    socklen_t ml = sizeof me;
    CHECK(getsockname(c, (struct sockaddr *)&me, &ml) == 0);
    char text[64];
    inet_ntop(AF_INET6, &me.sin6_addr, text, sizeof text);
    printf("v6 client on a v4 listener: its own name %s\n", text);
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    int s = accept(l, (struct sockaddr *)&peer, &pl);
    CHECK(s >= 0);
    inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
    printf("  the server sees family AF_INET %d, peer %s, same port %d\n",
           peer.sin_family == AF_INET, text, peer.sin_port == me.sin6_port);
    struct sockaddr_in mine;
    socklen_t mnl = sizeof mine;
    CHECK(getsockname(s, (struct sockaddr *)&mine, &mnl) == 0);
    inet_ntop(AF_INET, &mine.sin_addr, text, sizeof text);
    printf("  the server's own name %s\n", text);

    /* SO_LINGER of 0: close resets the connection; the peer reads what was sent, then
     * ECONNRESET once, then end of file */
    CHECK(write(s, "last", 4) == 4);
    struct linger lg = {1, 0};
    CHECK(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
    int avail = -1;
    CHECK(ioctl(c, FIONREAD, &avail) == 0);
    printf("  FIONREAD before the reset: %d\n", avail);
    close(s);
    char buf[16];
    ssize_t n = read(c, buf, sizeof buf);
    printf("  after a reset: read %zd\n", n);
    errno = 0;
    n = read(c, buf, sizeof buf);
    printf("  then %zd %s\n", n, n < 0 ? errname(errno) : "");
    n = read(c, buf, sizeof buf);
    printf("  then %zd\n", n);
    close(c);
    close(l);
}

static void errors(void)
{
    struct sockaddr_in a;
    /* (ports are the host's under qemu, and other tests run beside this one: no fixed
     * port is sure to be free there) */
    int l = listener4(0, &a);
    int d = socket(AF_INET, SOCK_STREAM, 0);
    errno = 0;
    printf("bind to a port in use: %d %s\n", bind(d, (struct sockaddr *)&a, sizeof a),
           errno == EADDRINUSE ? "EADDRINUSE" : errname(errno));
    close(d);
    close(l);
    d = socket(AF_INET, SOCK_STREAM, 0);
    errno = 0;
    printf("connect to a closed port: %d %s\n", connect(d, (struct sockaddr *)&a, sizeof a),
           errno == ECONNREFUSED ? "ECONNREFUSED" : errname(errno));
    close(d);
    d = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in far = {.sin_family = AF_INET, .sin_port = htons(80)};
    inet_pton(AF_INET, "192.0.2.1", &far.sin_addr); /* TEST-NET-1: never routed */
    int fl = fcntl(d, F_GETFL);
    fcntl(d, F_SETFL, fl | O_NONBLOCK);
    errno = 0;
    int r = connect(d, (struct sockaddr *)&far, sizeof far);
    printf("connect to 192.0.2.1 fails: %d\n", r < 0);
    close(d);
    d = socket(AF_INET, SOCK_STREAM, 0);
    char c;
    errno = 0;
    printf("read of an unconnected socket: %zd %s\n", read(d, &c, 1), errno == ENOTCONN ? "ENOTCONN" : errname(errno));
    errno = 0;
    printf("accept on a socket not listening: %d %s\n", accept(d, NULL, NULL), errname(errno));
    errno = 0;
    printf("listen on a pipe: %d %s\n", listen(0, 1) == 0 ? 0 : -1, errno == ENOTSOCK || errno == EBADF ? "ENOTSOCK or EBADF" : errname(errno));
    struct sockaddr_in bad = {.sin_family = AF_INET};
    inet_pton(AF_INET, "192.0.2.7", &bad.sin_addr);
    errno = 0;
    printf("bind to an address not ours: %d %s\n", bind(d, (struct sockaddr *)&bad, sizeof bad),
           errno == EADDRNOTAVAIL ? "EADDRNOTAVAIL" : errname(errno));
    errno = 0;
    printf("socket(AF_INET, SOCK_STREAM, IPPROTO_UDP): %d %s\n", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP),
           errno == EPROTONOSUPPORT ? "EPROTONOSUPPORT" : errname(errno));
    close(d);
}

static void many_sockets(void)
{
    /* 10,000 at once when the fd limit allows it; past the limit, EMFILE */
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 10100) rl.rlim_cur = 10100;
    else rl.rlim_cur = rl.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    static int fds[10000];
    int made = 0, err = 0;
    for (int i = 0; i < 10000; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] >= 0) made++;
        else if (!err) err = errno;
    }
    for (int i = 0; i < 10000; i++)
        if (fds[i] >= 0) close(fds[i]);
    printf("10000 sockets: all made, or EMFILE at the fd limit: %d\n", made == 10000 || err == EMFILE);
    int again = socket(AF_INET, SOCK_STREAM, 0);
    printf("after closing them a socket gets a low fd: %d\n", again >= 0 && again < 10);
    close(again);
}

/* The server closes an accepted connection: the client reads end of file, its first
 * write goes nowhere (the closed end answers it with a reset), and the next fails with
 * EPIPE; an AF_UNIX stream's first write fails at once. */
static void peer_closed(void)
{
    struct sockaddr_in a;
    int l = listener4(0, &a);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    /* a connected TCP socket ignores sendto's address (unix_sockets has AF_UNIX's EISCONN) */
    char b[4];
    printf("tcp sendto with an address: %zd", sendto(c, "z", 1, 0, (struct sockaddr *)&a, sizeof a));
    printf(", received %zd\n", read(s, b, 1));
    close(s);
    printf("tcp peer closed: read %zd", read(c, b, sizeof b));
    signal(SIGPIPE, SIG_IGN);
    ssize_t w1 = write(c, "x", 1);
    usleep(100000); /* (the reset reaches the client) */
    errno = 0;
    ssize_t w2 = write(c, "y", 1);
    printf(", first write %zd, second write %zd %s\n", w1, w2, w2 < 0 ? errname(errno) : "");
    close(c);
    close(l);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    close(sv[1]);
    errno = 0;
    w1 = write(sv[0], "x", 1);
    printf("unix peer closed: first write %zd %s\n", w1, w1 < 0 ? errname(errno) : "");
    close(sv[0]);
    signal(SIGPIPE, SIG_DFL);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    echo_across_fork();
    big_transfer();
    ipv6_and_nonblocking();
    dual_stack();
    v6_client_v4_listener();
    errors();
    many_sockets();
    peer_closed();
    return 0;
}
