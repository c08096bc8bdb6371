/* Datagram sockets: UDP over IPv4 and IPv6 loopback (sendto/recvfrom with the sender's
 * address, connect, MSG_TRUNC, MSG_PEEK, recvmsg with msg_name, sendmmsg/recvmmsg, poll,
 * a non-blocking recv with nothing queued), AF_UNIX SOCK_DGRAM with a path and abstract
 * names (an unnamed sender, ECONNREFUSED, ENOENT), a datagram exchange with a forked
 * child, and getaddrinfo("localhost"). No port numbers are printed. */
#define _GNU_SOURCE
#include "../processes/proc.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static int udp4(struct sockaddr_in *a)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(s >= 0);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(s, (struct sockaddr *)a, sizeof *a) == 0);
    socklen_t len = sizeof *a;
    CHECK(getsockname(s, (struct sockaddr *)a, &len) == 0);
    return s;
}

static void udp_v4(void)
{
    struct sockaddr_in sa;
    int srv = udp4(&sa);
    int cli = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(sendto(cli, "hello udp", 9, 0, (struct sockaddr *)&sa, sizeof sa) == 9);
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    CHECK(getsockname(cli, (struct sockaddr *)&me, &ml) == 0);
    printf("unbound sender got a port: %d, address 0.0.0.0: %d\n", ntohs(me.sin_port) > 0, me.sin_addr.s_addr == 0);
    struct pollfd p = {.fd = srv, .events = POLLIN};
    printf("poll: %d revents POLLIN %d\n", poll(&p, 1, 1000), (p.revents & POLLIN) != 0);
    char buf[64] = {0};
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(srv, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    printf("recvfrom: %zd \"%s\", from 127.0.0.1: %d, the sender's port: %d\n", n, buf,
           from.sin_addr.s_addr == htonl(INADDR_LOOPBACK), from.sin_port == me.sin_port);
    /* reply to the sender's address */
    CHECK(sendto(srv, "reply", 5, 0, (struct sockaddr *)&from, fl) == 5);
    memset(buf, 0, sizeof buf);
    printf("reply: %zd \"%s\"\n", recv(cli, buf, sizeof buf, 0), buf);
    /* two datagrams keep their boundaries; a short buffer truncates */
    CHECK(sendto(cli, "first datagram", 14, 0, (struct sockaddr *)&sa, sizeof sa) == 14);
    CHECK(sendto(cli, "second", 6, 0, (struct sockaddr *)&sa, sizeof sa) == 6);
    memset(buf, 0, sizeof buf);
    n = recv(srv, buf, 5, MSG_PEEK);
    printf("MSG_PEEK 5: %zd \"%.5s\"\n", n, buf);
    n = recv(srv, buf, 5, MSG_TRUNC);
    printf("MSG_TRUNC into 5 bytes: %zd \"%.5s\"\n", n, buf);
    memset(buf, 0, sizeof buf);
    struct iovec iov[2] = {{buf, 3}, {buf + 10, 10}};
    struct sockaddr_in name;
    struct msghdr m = {.msg_name = &name, .msg_namelen = sizeof name, .msg_iov = iov, .msg_iovlen = 2};
    n = recvmsg(srv, &m, 0);
    printf("recvmsg: %zd \"%.3s\"+\"%.3s\", name length %d, flags %d\n", n, buf, buf + 10, (int)m.msg_namelen, m.msg_flags);
    /* connected: send and recv, and sendto elsewhere refused by neither */
    CHECK(connect(cli, (struct sockaddr *)&sa, sizeof sa) == 0);
    ml = sizeof me;
    CHECK(getsockname(cli, (struct sockaddr *)&me, &ml) == 0);
    printf("connected: own address 127.0.0.1: %d\n", me.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
    CHECK(send(cli, "via connect", 11, 0) == 11);
    memset(buf, 0, sizeof buf);
    printf("server got: %zd \"%s\"\n", recv(srv, buf, sizeof buf, 0), buf);
    /* batches */
    struct mmsghdr mm[3];
    char texts[3][8] = {"one", "two", "three"};
    struct iovec iv[3];
    memset(mm, 0, sizeof mm);
    for (int k = 0; k < 3; k++) {
        iv[k].iov_base = texts[k];
        iv[k].iov_len = strlen(texts[k]);
        mm[k].msg_hdr.msg_iov = &iv[k];
        mm[k].msg_hdr.msg_iovlen = 1;
    }
    printf("sendmmsg: %d\n", sendmmsg(cli, mm, 3, 0));
    char rb[3][16];
    struct iovec ri[3];
    struct mmsghdr rm[3];
    memset(rm, 0, sizeof rm);
    memset(rb, 0, sizeof rb);
    for (int k = 0; k < 3; k++) {
        ri[k].iov_base = rb[k];
        ri[k].iov_len = sizeof rb[k];
        rm[k].msg_hdr.msg_iov = &ri[k];
        rm[k].msg_hdr.msg_iovlen = 1;
    }
    int got = recvmmsg(srv, rm, 3, MSG_DONTWAIT, NULL);
    printf("recvmmsg: %d: %s %s %s (%u %u %u bytes)\n", got, rb[0], rb[1], rb[2], rm[0].msg_len, rm[1].msg_len, rm[2].msg_len);
    errno = 0;
    printf("recv with nothing queued (MSG_DONTWAIT): %zd %s\n", recv(srv, buf, sizeof buf, MSG_DONTWAIT), errname(errno));
    /* a datagram to a port nobody holds is dropped, and the send succeeds */
    int lone = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in gone;
    int tmp = udp4(&gone);
    close(tmp);
    printf("sendto a port nobody holds: %zd\n", sendto(lone, "lost", 4, 0, (struct sockaddr *)&gone, sizeof gone));
    close(lone);
    close(cli);
    close(srv);
}

static void udp_v6(void)
{
    int s = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
    int c = socket(AF_INET6, SOCK_DGRAM, 0);
    CHECK(sendto(c, "v6 datagram", 11, 0, (struct sockaddr *)&a, sizeof a) == 11);
    char buf[32] = {0};
    struct sockaddr_in6 from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    char text[64];
    inet_ntop(AF_INET6, &from.sin6_addr, text, sizeof text);
    printf("udp6: %zd \"%s\" from %s, length %d\n", n, buf, text, (int)fl);
    close(c);
    close(s);
}

static socklen_t un_addr(struct sockaddr_un *a, const char *name, int abstract)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strcpy(a->sun_path + (abstract ? 1 : 0), name);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name) + 1);
}

static void unix_dgram(void)
{
    unlink("dgram.sock");
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a;
    socklen_t len = un_addr(&a, "dgram.sock", 0);
    CHECK(bind(s, (struct sockaddr *)&a, len) == 0);
    int c = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(sendto(c, "unix datagram", 13, 0, (struct sockaddr *)&a, len) == 13);
    char buf[32] = {0};
    struct sockaddr_un from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    printf("unix dgram: %zd \"%s\", unnamed sender (length %d)\n", n, buf, (int)fl);
    /* a named sender, connected */
    struct sockaddr_un ca;
    socklen_t cl = un_addr(&ca, "armada-dgram-client", 1);
    int d = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(bind(d, (struct sockaddr *)&ca, cl) == 0);
    CHECK(connect(d, (struct sockaddr *)&a, len) == 0);
    CHECK(send(d, "named", 5, 0) == 5);
    memset(&from, 0, sizeof from);
    fl = sizeof from;
    memset(buf, 0, sizeof buf);
    n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    printf("from an abstract name: %zd \"%s\", name \"%s\"\n", n, buf, from.sun_path + 1);
    /* the exchange with a forked child */
    pid_t pid = fork_flushed();
    if (pid == 0) {
        char b[16] = {0};
        struct sockaddr_un peer;
        socklen_t pl = sizeof peer;
        CHECK(recvfrom(s, b, sizeof b, 0, (struct sockaddr *)&peer, &pl) > 0);
        CHECK(sendto(s, "child reply", 11, 0, (struct sockaddr *)&peer, pl) == 11);
        _exit(0);
    }
    CHECK(send(d, "to the child", 12, 0) == 12);
    memset(buf, 0, sizeof buf);
    n = recv(d, buf, sizeof buf, 0);
    printf("child replied: %zd \"%s\", %s\n", n, buf, status_text(reap(pid)));
    struct sockaddr_un none;
    socklen_t nl = un_addr(&none, "armada-nobody-here", 1);
    errno = 0;
    printf("sendto an abstract name nobody holds: %zd %s\n", sendto(c, "x", 1, 0, (struct sockaddr *)&none, nl),
           errno == ECONNREFUSED ? "ECONNREFUSED" : errname(errno));
    nl = un_addr(&none, "no-such-socket-file", 0);
    errno = 0;
    printf("sendto a missing path: %zd %s\n", sendto(c, "x", 1, 0, (struct sockaddr *)&none, nl), errname(errno));
    errno = 0;
    printf("send on an unconnected unix socket: %zd %s\n", send(c, "x", 1, 0), errno == ENOTCONN ? "ENOTCONN" : errname(errno));
    close(d);
    close(c);
    close(s);
    unlink("dgram.sock");
}

static void resolve(void)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    int r = getaddrinfo("localhost", "80", &hints, &res);
    char text[64] = "?";
    if (r == 0) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, text, sizeof text);
        freeaddrinfo(res);
    }
    printf("getaddrinfo(localhost): %d %s\n", r, text);
}

/* UDP-Lite: datagrams as UDP's, on ports of its own (a UDP socket binds the same port) */
static void udplite(void)
{
    int l = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);
    if (l < 0) {
        printf("udplite: %s\n", errname(errno));
        return;
    }
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    printf("udplite: a UDP socket on its port: %s\n",
           bind(u, (struct sockaddr *)&a, sizeof a) == 0 ? "bound" : errname(errno));
    /* (qemu-user answers UDP-Lite's own options with ENOPROTOOPT, so they are not
     * compared here) */
    int c = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE);
    CHECK(sendto(c, "lite", 4, 0, (struct sockaddr *)&a, sizeof a) == 4);
    char b[8] = {0};
    printf("udplite: received %zd \"%s\"; the UDP socket has none: %zd\n", recv(l, b, sizeof b, 0), b,
           recv(u, b, sizeof b, MSG_DONTWAIT));
    close(c);
    close(u);
    close(l);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    udplite();
    udp_v4();
    udp_v6();
    unix_dgram();
    resolve();
    return 0;
}
