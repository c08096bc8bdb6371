/* Raw IP sockets on loopback, as ping and Go's ip4:icmp connections use them: names of raw
 * sockets (the protocol where the port would be), ICMP and ICMPv6 echo requests answered by
 * the kernel, the IPv4 header a raw socket reads, ICMP_FILTER, connect, IP_HDRINCL sends,
 * and the errors of bad protocols. Without root, opening one is EPERM, which is all it
 * prints then. Everything received is matched on this program's own ICMP id or protocol,
 * so other traffic on the host's lo (under qemu) is skipped. */
#include "../processes/proc.h"
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/socket.h>

#define ID 0x4a17
#define ICMP_FILTER 1 /* linux/icmp.h, which glibc does not carry */
#define PROTO_EXP 253 /* RFC 3692's experimental protocol */

static unsigned short csum(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long s = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (b[i] << 8) | b[i + 1];
    if (n & 1)
        s += b[n - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return htons(~s);
}

/* The next datagram on fd within a second (-1: none). */
static ssize_t recv_wait(int fd, void *buf, size_t n, struct sockaddr *from, socklen_t *fl)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) != 1)
        return -1;
    return recvfrom(fd, buf, n, 0, from, fl);
}

static void echo_request(unsigned char *b, int type, int seq)
{
    memset(b, 0, 16);
    b[0] = type;
    b[4] = ID >> 8;
    b[5] = ID & 0xff;
    b[7] = seq;
    memcpy(b + 8, "armada!!", 8);
}

/* Reads IPv4 ICMP packets of our id until `want` of them were shown (or none comes). */
static void show_v4(int fd, int want)
{
    unsigned char b[256];
    for (int got = 0, tries = 0; got < want && tries < 50; tries++) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recv_wait(fd, b, sizeof b, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            printf("  nothing more\n");
            return;
        }
        struct iphdr *ip = (struct iphdr *)b;
        unsigned char *icmp = b + ip->ihl * 4;
        if (ip->protocol != IPPROTO_ICMP || n < ip->ihl * 4 + 8 ||
            ((icmp[4] << 8) | icmp[5]) != ID)
            continue;
        got++;
        printf("  %zd bytes from %s port %d: v%d ihl %d len %d df %d ttl %d proto %d "
               "header sum ok %d; icmp type %d code %d seq %d sum ok %d data %.8s\n",
               n, inet_ntoa(from.sin_addr), ntohs(from.sin_port), ip->version, ip->ihl,
               ntohs(ip->tot_len), !!(ntohs(ip->frag_off) & IP_DF), ip->ttl, ip->protocol,
               csum(b, ip->ihl * 4) == 0, icmp[0], icmp[1], icmp[7],
               csum(icmp, n - ip->ihl * 4) == 0, icmp + 8);
    }
}

static void v4(void)
{
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (fd < 0) {
        printf("raw socket: %s\n", errname(errno));
        exit(0);
    }
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    printf("unbound: %s port %d len %d\n", inet_ntoa(a.sin_addr), ntohs(a.sin_port), al);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(999);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    al = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    printf("bound: %s port %d\n", inet_ntoa(a.sin_addr), ntohs(a.sin_port));
    printf("getpeername unconnected: %d %s\n",
           getpeername(fd, (struct sockaddr *)&a, &al), errname(errno));
    printf("listen: %d %s\n", listen(fd, 1), errname(errno));

    unsigned char req[16];
    echo_request(req, ICMP_ECHO, 1);
    *(unsigned short *)(req + 2) = csum(req, sizeof req);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    printf("echo request sent: %zd\n",
           sendto(fd, req, sizeof req, 0, (struct sockaddr *)&to, sizeof to));
    printf("ICMP echo, request and reply:\n");
    show_v4(fd, 2);

    /* a bad checksum: the raw socket still sees it, the kernel does not answer */
    echo_request(req, ICMP_ECHO, 2);
    sendto(fd, req, sizeof req, 0, (struct sockaddr *)&to, sizeof to);
    printf("bad checksum:\n");
    show_v4(fd, 2);

    /* ICMP_FILTER drops echo requests: only the reply arrives */
    unsigned int mask = 1u << ICMP_ECHO;
    CHECK(setsockopt(fd, SOL_RAW, ICMP_FILTER, &mask, sizeof mask) == 0);
    echo_request(req, ICMP_ECHO, 3);
    *(unsigned short *)(req + 2) = csum(req, sizeof req);
    sendto(fd, req, sizeof req, 0, (struct sockaddr *)&to, sizeof to);
    printf("filtered:\n");
    show_v4(fd, 2);
    close(fd);

    /* connect: getpeername, the route's source as the name, sends without an address */
    fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&to, sizeof to) == 0);
    al = sizeof a;
    /* Linux: a peer of port 0 is no peer for getpeername */
    printf("connected: getpeername %d %s;", getpeername(fd, (struct sockaddr *)&a, &al),
           errname(errno));
    al = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    printf(" name %s port %d\n", inet_ntoa(a.sin_addr), ntohs(a.sin_port));
    echo_request(req, ICMP_ECHO, 4);
    *(unsigned short *)(req + 2) = csum(req, sizeof req);
    printf("send on connected: %zd\n", send(fd, req, sizeof req, 0));
    show_v4(fd, 2);
    close(fd);

    /* IP_HDRINCL: a packet of an experimental protocol, header written by the sender
     * (length, checksum and id left 0 for the kernel), to a raw socket of that protocol */
    int rx = socket(AF_INET, SOCK_RAW, PROTO_EXP);
    int tx = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    CHECK(rx >= 0 && tx >= 0);
    unsigned char pkt[20 + 6] = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 9, PROTO_EXP, 0, 0,
                                 127, 0, 0, 1, 127, 0, 0, 1};
    memcpy(pkt + 20, "hdrinc", 6);
    printf("hdrincl send: %zd\n", sendto(tx, pkt, sizeof pkt, 0, (struct sockaddr *)&to, sizeof to));
    unsigned char b[128];
    ssize_t n = recv_wait(rx, b, sizeof b, NULL, NULL);
    struct iphdr *ip = (struct iphdr *)b;
    if (n >= 20)
        printf("  got %zd: len %d ttl %d proto %d sum ok %d id set %d data %.6s\n", n,
               ntohs(ip->tot_len), ip->ttl, ip->protocol, csum(b, 20) == 0, ip->id != 0,
               b + 20);
    else
        printf("  got nothing: %zd\n", n);
    int on = 1;
    CHECK(setsockopt(rx, IPPROTO_IP, IP_HDRINCL, &on, sizeof on) == 0);
    al = sizeof on;
    CHECK(getsockopt(rx, IPPROTO_IP, IP_HDRINCL, &on, &al) == 0);
    printf("IP_HDRINCL reads back %d\n", on);
    close(rx);
    close(tx);

    /* raw TCP: connect and names */
    fd = socket(AF_INET, SOCK_RAW, IPPROTO_TCP);
    CHECK(fd >= 0);
    to.sin_port = htons(7);
    CHECK(connect(fd, (struct sockaddr *)&to, sizeof to) == 0);
    al = sizeof a;
    CHECK(getpeername(fd, (struct sockaddr *)&a, &al) == 0);
    printf("raw tcp peer %s port %d\n", inet_ntoa(a.sin_addr), ntohs(a.sin_port));
    int ty, proto;
    al = sizeof ty;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &ty, &al);
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &al);
    printf("SO_TYPE %d SO_PROTOCOL %d\n", ty, proto);
    close(fd);

    printf("protocol 0: %d %s\n", socket(AF_INET, SOCK_RAW, 0), errname(errno));
    printf("protocol 300: %d %s\n", socket(AF_INET, SOCK_RAW, 300), errname(errno));
}

static void v6(void)
{
    int fd = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
    CHECK(fd >= 0);
    struct sockaddr_in6 a = {0};
    socklen_t al = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    char s[64];
    printf("v6 unbound: %s port %d\n", inet_ntop(AF_INET6, &a.sin6_addr, s, sizeof s),
           ntohs(a.sin6_port));
    struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    unsigned char req[16];
    echo_request(req, ICMP6_ECHO_REQUEST, 5);
    printf("v6 echo request sent: %zd\n",
           sendto(fd, req, sizeof req, 0, (struct sockaddr *)&to, sizeof to));
    unsigned char b[256];
    for (int got = 0, tries = 0; got < 2 && tries < 50; tries++) {
        struct sockaddr_in6 from;
        socklen_t fl = sizeof from;
        ssize_t n = recv_wait(fd, b, sizeof b, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            printf("  nothing more\n");
            break;
        }
        if (n < 8 || ((b[4] << 8) | b[5]) != ID)
            continue;
        got++;
        printf("  %zd bytes from %s port %d: type %d code %d seq %d sum nonzero %d data %.8s\n",
               n, inet_ntop(AF_INET6, &from.sin6_addr, s, sizeof s), ntohs(from.sin6_port),
               b[0], b[1], b[7], b[2] | b[3], b + 8);
    }
    close(fd);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    v4();
    v6();
    return 0;
}
