// Credentials over AF_UNIX sockets: SO_PASSCRED and SCM_CREDENTIALS (explicit and by
// default), zero-length datagrams that carry them, stream reads that stop where the
// sender's credentials change, SO_PEERCRED of a socketpair and of a connection, and
// recvmsg's msg_flags. Values that differ between runs (pids, ids) are printed as how they
// compare with the caller's own.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void say_creds(const char *what, const struct ucred *c) {
    printf("%s: pid %s, uid %s, gid %s\n", what,
           c->pid == getpid() ? "self" : c->pid == 0 ? "0" : "other",
           c->uid == getuid() ? "self" : c->uid == 65534 ? "nobody" : "other",
           c->gid == getgid() ? "self" : c->gid == 65534 ? "nogroup" : "other");
}

// sendmsg of `len` bytes with credentials `c` (none when NULL)
static ssize_t send_creds(int fd, const char *data, size_t len, const struct ucred *c) {
    struct iovec iov = {(void *)data, len};
    union {
        char buf[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1; // one iovec even when empty, as Go sends
    if (c) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.buf;
        m.msg_controllen = sizeof u.buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_CREDENTIALS;
        h->cmsg_len = CMSG_LEN(sizeof(struct ucred));
        memcpy(CMSG_DATA(h), c, sizeof *c);
    }
    return sendmsg(fd, &m, 0);
}

// recvmsg into a buffer of `cap` bytes; prints what came
static void recv_show(int fd, size_t cap, int flags) {
    char data[64] = {0};
    struct iovec iov = {data, cap};
    char control[256];
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    ssize_t n = recvmsg(fd, &m, flags);
    if (n < 0) {
        printf("  recvmsg: %s\n", strerror(errno));
        return;
    }
    printf("  recvmsg: %zd bytes \"%.*s\", controllen %zu, flags%s%s\n", n, (int)n, data,
           (size_t)m.msg_controllen, m.msg_flags & MSG_CMSG_CLOEXEC ? " CMSG_CLOEXEC" : "",
           m.msg_flags & MSG_CTRUNC ? " CTRUNC" : "");
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS) {
            struct ucred c;
            memcpy(&c, CMSG_DATA(h), sizeof c);
            printf("  cmsg len %zu: ", (size_t)h->cmsg_len);
            say_creds("SCM_CREDENTIALS", &c);
        } else {
            printf("  cmsg level %d type %d\n", h->cmsg_level, h->cmsg_type);
        }
    }
}

static void pair_tests(int type, const char *name) {
    int sv[2];
    if (socketpair(AF_UNIX, type, 0, sv) < 0) {
        perror("socketpair");
        return;
    }
    printf("%s:\n", name);
    int on = 1, got = -1;
    socklen_t len = sizeof got;
    getsockopt(sv[1], SOL_SOCKET, SO_TYPE, &got, &len);
    printf("  SO_TYPE %s\n", got == type ? "as made" : "differs");
    len = sizeof got;
    getsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &got, &len);
    printf("  SO_PASSCRED before: %d\n", got);
    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    len = sizeof got;
    getsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &got, &len);
    printf("  SO_PASSCRED after: %d (len %u)\n", got, len);

    struct ucred me = {getpid(), getuid(), getgid()};
    // explicit credentials, one byte
    printf("  send explicit: %zd\n", send_creds(sv[1], "x", 1, &me));
    recv_show(sv[0], 64, MSG_CMSG_CLOEXEC);
    // someone else's pid: EPERM (unless privileged)
    struct ucred other = {getpid() + 1000, getuid(), getgid()};
    ssize_t r = send_creds(sv[1], "y", 1, &other);
    printf("  send another pid: %s\n", r < 0 ? strerror(errno) : "sent");
    if (r > 0)
        recv_show(sv[0], 64, 0);
    // by default: write() carries the writer's own
    write(sv[1], "def", 3);
    recv_show(sv[0], 64, 0);
    if (type == SOCK_DGRAM) {
        // a zero-length datagram carries credentials too; recvmsg with no buffer takes it
        printf("  send empty: %zd\n", send_creds(sv[1], "", 0, &me));
        recv_show(sv[0], 0, MSG_CMSG_CLOEXEC);
        // read() of zero bytes takes nothing
        send_creds(sv[1], "", 0, NULL);
        printf("  read(0): %zd\n", read(sv[0], NULL, 0));
        recv_show(sv[0], 64, 0);
    }
    // no room for the control message
    write(sv[1], "tr", 2);
    {
        char d[8];
        struct iovec iov = {d, sizeof d};
        struct msghdr m = {0};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        ssize_t n = recvmsg(sv[0], &m, 0);
        printf("  recvmsg without control: %zd, flags%s\n", n,
               m.msg_flags & MSG_CTRUNC ? " CTRUNC" : "");
    }
    struct ucred peer;
    len = sizeof peer;
    if (getsockopt(sv[1], SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0)
        say_creds("  SO_PEERCRED", &peer);
    close(sv[0]);
    close(sv[1]);
}

// bytes sent before the receiver asked for credentials carry none; a stream read stops
// where they change
static void stream_boundaries(void) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    printf("stream boundaries:\n");
    write(sv[1], "before", 6);
    int on = 1;
    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    write(sv[1], "after", 5);
    recv_show(sv[0], 64, 0);
    recv_show(sv[0], 64, 0);
    close(sv[0]);
    close(sv[1]);
}

// SO_PEERCRED and SO_PASSCRED over a connection to a listening socket, across a fork
static void connection(void) {
    printf("connection:\n");
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path + 1, "armada-passcred");
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen("armada-passcred");
    if (bind(l, (struct sockaddr *)&a, alen) < 0 || listen(l, 4) < 0) {
        perror("bind/listen");
        return;
    }
    int on = 1;
    setsockopt(l, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    pid_t child = fork();
    if (child == 0) {
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&a, alen) < 0)
            _exit(1);
        struct ucred peer;
        socklen_t len = sizeof peer;
        getsockopt(c, SOL_SOCKET, SO_PEERCRED, &peer, &len);
        // the parent listened: its pid is our parent's
        write(c, peer.pid == getppid() ? "P" : "?", 1);
        close(c);
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    struct ucred peer;
    socklen_t len = sizeof peer;
    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &len);
    printf("  accepted: peer is the child: %s\n", peer.pid == child ? "yes" : "no");
    // the accepted socket inherited SO_PASSCRED: the child's byte carries its pid
    char d[8];
    char control[64];
    struct iovec iov = {d, sizeof d};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    ssize_t n = recvmsg(s, &m, 0);
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    struct ucred c = {0};
    if (h && h->cmsg_type == SCM_CREDENTIALS)
        memcpy(&c, CMSG_DATA(h), sizeof c);
    printf("  got %zd \"%.*s\", sender is the child: %s\n", n, (int)(n > 0 ? n : 0), d,
           c.pid == child ? "yes" : "no");
    int st;
    waitpid(child, &st, 0);
    printf("  child status %d\n", WEXITSTATUS(st));
    close(s);
    close(l);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pair_tests(SOCK_STREAM, "stream pair");
    pair_tests(SOCK_DGRAM, "datagram pair");
    pair_tests(SOCK_SEQPACKET, "seqpacket pair");
    stream_boundaries();
    connection();
    return 0;
}
