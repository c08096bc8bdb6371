/* AF_UNIX stream sockets with names: a path name (bind makes the socket file; a second
 * bind says EADDRINUSE; connect after unlink says ENOENT, to a plain file ECONNREFUSED),
 * an abstract name, autobind, SCM_RIGHTS between a client and a forked server, and a
 * SOCK_SEQPACKET server keeping message boundaries. */
#include "../processes/proc.h"
#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

static socklen_t make_addr(struct sockaddr_un *a, const char *path, int abstract)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (abstract) {
        strcpy(a->sun_path + 1, path);
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
    }
    strcpy(a->sun_path, path);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static void send_fd(int s, int fd, const char *text)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {(void *)text, strlen(text)};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    CHECK(sendmsg(s, &m, 0) == (ssize_t)strlen(text));
}

static int recv_fd(int s, char *text, size_t n)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {text, n - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t r = recvmsg(s, &m, 0);
    CHECK(r >= 0);
    text[r] = 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

static void path_socket(void)
{
    unlink("sock.path");
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    socklen_t len = make_addr(&a, "sock.path", 0);
    CHECK(bind(l, (struct sockaddr *)&a, len) == 0);
    struct stat st;
    CHECK(stat("sock.path", &st) == 0);
    printf("bind made a socket file: %d\n", S_ISSOCK(st.st_mode));
    int d = socket(AF_UNIX, SOCK_STREAM, 0);
    errno = 0;
    printf("second bind to the path: %d %s\n", bind(d, (struct sockaddr *)&a, len), errno == EADDRINUSE ? "EADDRINUSE" : errname(errno));
    errno = 0;
    printf("connect before listen: %d %s\n", connect(d, (struct sockaddr *)&a, len), errno == ECONNREFUSED ? "ECONNREFUSED" : errname(errno));
    close(d);
    CHECK(listen(l, 8) == 0);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        /* the server: receives a pipe's write end and writes through it */
        int c = accept(l, NULL, NULL);
        CHECK(c >= 0);
        char text[64];
        int fd = recv_fd(c, text, sizeof text);
        CHECK(fd >= 0);
        dprintf(fd, "written by the server through a passed fd (%s)\n", text);
        close(fd);
        struct sockaddr_un me;
        socklen_t ml = sizeof me;
        CHECK(getsockname(c, (struct sockaddr *)&me, &ml) == 0);
        dprintf(c, "server end named %s\n", me.sun_path);
        close(c);
        _exit(0);
    }
    int p[2];
    CHECK(pipe(p) == 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&a, len) == 0);
    struct sockaddr_un peer;
    socklen_t pl = sizeof peer;
    CHECK(getpeername(c, (struct sockaddr *)&peer, &pl) == 0);
    printf("client's peer: %s\n", peer.sun_path);
    send_fd(c, p[1], "a pipe");
    close(p[1]);
    char buf[200];
    size_t n = read_full(p[0], buf, sizeof buf - 1);
    buf[n] = 0;
    printf("pipe got: %s", buf);
    n = read_full(c, buf, sizeof buf - 1);
    buf[n] = 0;
    printf("socket got: %s", buf);
    printf("server: %s\n", status_text(reap(pid)));
    close(c);
    close(l);
    CHECK(unlink("sock.path") == 0);
    d = socket(AF_UNIX, SOCK_STREAM, 0);
    errno = 0;
    printf("connect after unlink: %d %s\n", connect(d, (struct sockaddr *)&a, len), errname(errno));
    int f = open("plain.file", O_CREAT | O_WRONLY, 0644);
    close(f);
    len = make_addr(&a, "plain.file", 0);
    errno = 0;
    printf("connect to a plain file: %d %s\n", connect(d, (struct sockaddr *)&a, len), errno == ECONNREFUSED ? "ECONNREFUSED" : errname(errno));
    unlink("plain.file");
    close(d);
}

static void abstract_socket(void)
{
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    socklen_t len = make_addr(&a, "armada-test-abstract", 1);
    CHECK(bind(l, (struct sockaddr *)&a, len) == 0);
    CHECK(listen(l, 1) == 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&a, len) == 0);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    CHECK(write(c, "abstract", 8) == 8);
    char buf[16] = {0};
    CHECK(read(s, buf, sizeof buf) == 8);
    struct sockaddr_un me;
    socklen_t ml = sizeof me;
    CHECK(getsockname(l, (struct sockaddr *)&me, &ml) == 0);
    printf("abstract: read %s, name length %d, leading NUL %d\n", buf, (int)(ml - offsetof(struct sockaddr_un, sun_path)), me.sun_path[0] == 0);
    int d = socket(AF_UNIX, SOCK_STREAM, 0);
    errno = 0;
    printf("bind the same abstract name: %d %s\n", bind(d, (struct sockaddr *)&a, len), errno == EADDRINUSE ? "EADDRINUSE" : errname(errno));
    /* autobind: an empty name */
    socklen_t fam = sizeof(sa_family_t);
    CHECK(bind(d, (struct sockaddr *)&a, fam) == 0);
    ml = sizeof me;
    CHECK(getsockname(d, (struct sockaddr *)&me, &ml) == 0);
    printf("autobind: name length %d, leading NUL %d\n", (int)(ml - offsetof(struct sockaddr_un, sun_path)), me.sun_path[0] == 0);
    close(d);
    close(s);
    close(c);
    close(l);
}

static void seqpacket(void)
{
    int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a;
    socklen_t len = make_addr(&a, "armada-seqpacket", 1);
    CHECK(bind(l, (struct sockaddr *)&a, len) == 0);
    CHECK(listen(l, 1) == 0);
    int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    CHECK(connect(c, (struct sockaddr *)&a, len) == 0);
    int s = accept(l, NULL, NULL);
    CHECK(write(c, "one", 3) == 3);
    CHECK(write(c, "two two", 7) == 7);
    char buf[64];
    ssize_t n1 = read(s, buf, sizeof buf);
    ssize_t n2 = read(s, buf, sizeof buf);
    printf("seqpacket: messages of %zd and %zd bytes\n", n1, n2);
    close(s);
    close(c);
    close(l);
}

/* MSG_PEEK on a stream: the bytes stay for the next receive */
static void peek(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(write(sv[1], "peekaboo", 8) == 8);
    char a[16] = {0}, b[16] = {0};
    ssize_t n1 = recv(sv[0], a, 4, MSG_PEEK);
    ssize_t n2 = recv(sv[0], b, sizeof b - 1, 0);
    printf("peek: %zd \"%s\", then recv %zd \"%s\"\n", n1, a, n2, b);
    /* a connected stream: sendto with an address is EISCONN for AF_UNIX */
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    errno = 0;
    ssize_t w = sendto(sv[1], "x", 1, 0, (struct sockaddr *)&u, sizeof u);
    printf("sendto with an address: %zd %s\n", w, w < 0 ? errname(errno) : "");
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    peek();
    path_socket();
    abstract_socket();
    seqpacket();
    return 0;
}
