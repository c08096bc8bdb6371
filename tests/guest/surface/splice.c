// splice, tee, vmsplice, sendfile and preadv2/pwritev2: bytes moved between pipes, files and
// loopback TCP sockets, and the errors Linux gives for the wrong descriptors. Prints totals,
// contents and errno names only (never how one call split a transfer, which depends on
// buffer sizes), so qemu-aarch64 on the host's kernel and armada print the same.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(int e) {
    switch (e) {
    case 0: return "ok";
    case EINVAL: return "EINVAL";
    case ESPIPE: return "ESPIPE";
    case EAGAIN: return "EAGAIN";
    case EBADF: return "EBADF";
    case EPIPE: return "EPIPE";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return strerror(e);
    }
}

#define SHOW(what, call)                                                          \
    do {                                                                          \
        errno = 0;                                                                \
        long r_ = (long)(call);                                                   \
        printf("%-44s %ld %s\n", what, r_, r_ < 0 ? err(errno) : "");             \
    } while (0)

static char big[300000];

static void fill_big(void) {
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof big; i++) {
        x = x * 1103515245 + 12345;
        big[i] = (char)(x >> 16);
    }
}

static uint32_t sum(const char *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

// A connected pair of loopback TCP sockets.
static void tcp_pair(int fds[2]) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &al)) {
        perror("listen");
        exit(1);
    }
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fds[0], (void *)&a, sizeof a)) {
        perror("connect");
        exit(1);
    }
    fds[1] = accept(l, NULL, NULL);
    close(l);
}

// Reads exactly n bytes (or to EOF) from fd.
static size_t read_all(int fd, char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            break;
        got += r;
    }
    return got;
}

static void pipes_and_files(void) {
    int p[2], q[2];
    char buf[64];
    pipe(p);
    pipe(q);
    char path[] = "/tmp/armada-splice-XXXXXX";
    int f = mkstemp(path);
    unlink(path);
    write(f, "0123456789abcdefghij", 20);

    // file (at an offset, position unmoved) -> pipe -> pipe -> file
    loff_t off = 5;
    SHOW("splice file@5 -> pipe, 8", splice(f, &off, p[1], NULL, 8, 0));
    printf("  offset now %lld, position %ld\n", (long long)off, (long)lseek(f, 0, SEEK_CUR));
    lseek(f, 2, SEEK_SET);
    SHOW("splice file@pos 2 -> pipe, 3", splice(f, NULL, p[1], NULL, 3, 0));
    printf("  position %ld\n", (long)lseek(f, 0, SEEK_CUR));
    SHOW("tee pipe -> pipe, 100", tee(p[0], q[1], 100, 0));
    SHOW("splice pipe -> pipe, 4", splice(p[0], NULL, q[1], NULL, 4, 0));
    memset(buf, 0, sizeof buf);
    SHOW("read the first pipe", read(p[0], buf, sizeof buf));
    printf("  \"%s\"\n", buf);
    memset(buf, 0, sizeof buf);
    SHOW("read the second pipe", read(q[0], buf, sizeof buf));
    printf("  \"%s\"\n", buf);

    // pipe -> file at an offset
    write(p[1], "XYZ", 3);
    off = 17;
    SHOW("splice pipe -> file@17", splice(p[0], NULL, f, &off, 10, 0));
    memset(buf, 0, sizeof buf);
    pread(f, buf, 30, 0);
    printf("  file \"%s\", offset %lld\n", buf, (long long)off);

    // errors
    SHOW("splice file -> file", splice(f, NULL, f, NULL, 4, 0));
    off = 0;
    SHOW("splice pipe with an offset", splice(p[0], &off, f, NULL, 4, 0));
    SHOW("splice a pipe into itself", splice(p[0], NULL, p[1], NULL, 4, 0));
    SHOW("splice from a write end", splice(p[1], NULL, q[1], NULL, 4, 0));
    SHOW("splice bad flags", splice(p[0], NULL, q[1], NULL, 4, 0x100));
    SHOW("splice empty pipe, SPLICE_F_NONBLOCK", splice(p[0], NULL, f, NULL, 4, SPLICE_F_NONBLOCK));
    SHOW("tee file -> pipe", tee(f, q[1], 4, 0));
    SHOW("tee empty pipe, SPLICE_F_NONBLOCK", tee(p[0], q[1], 4, SPLICE_F_NONBLOCK));
    SHOW("splice nothing", splice(p[0], NULL, q[1], NULL, 0, 0));
    close(p[1]);
    SHOW("splice at end of file (no writer)", splice(p[0], NULL, f, NULL, 4, 0));
    SHOW("sendfile from a pipe", sendfile(q[1], p[0], NULL, 4));
    close(p[0]);

    // a pipe with no reader: EPIPE (SIGPIPE ignored)
    signal(SIGPIPE, SIG_IGN);
    int r[2];
    pipe(r);
    close(r[0]);
    off = 0;
    SHOW("splice into a pipe with no reader", splice(f, &off, r[1], NULL, 4, 0));
    close(r[1]);

    // vmsplice both ways
    struct iovec v[2] = {{"hello ", 6}, {"world", 5}};
    SHOW("vmsplice into a pipe", vmsplice(q[1], v, 2, 0));
    char a[8] = {0}, b[32] = {0};
    read(q[0], b, 7); // what the tee and splice left
    struct iovec w[2] = {{a, 3}, {b, 20}};
    memset(b, 0, sizeof b);
    SHOW("vmsplice out of a pipe", vmsplice(q[0], w, 2, 0));
    printf("  \"%s\" \"%s\"\n", a, b);
    SHOW("vmsplice on a file", vmsplice(f, v, 1, 0));
    SHOW("vmsplice empty, SPLICE_F_NONBLOCK", vmsplice(q[0], w, 2, SPLICE_F_NONBLOCK));
    close(q[0]);
    close(q[1]);

    // preadv2 / pwritev2
    char c[4] = {0}, d[4] = {0};
    struct iovec pv[2] = {{c, 3}, {d, 3}};
    SHOW("preadv2 at 1", preadv2(f, pv, 2, 1, 0));
    printf("  \"%s\" \"%s\"\n", c, d);
    lseek(f, 10, SEEK_SET);
    SHOW("preadv2 at the position (-1)", preadv2(f, pv, 2, -1, 0));
    printf("  \"%s\" \"%s\", position %ld\n", c, d, (long)lseek(f, 0, SEEK_CUR));
    struct iovec wv[1] = {{"__", 2}};
    // (no RWF_* flags: qemu-aarch64 answers EOPNOTSUPP to any, where Linux takes RWF_DSYNC)
    SHOW("pwritev2 at 0", pwritev2(f, wv, 1, 0, 0));
    SHOW("preadv2 bad flags", preadv2(f, pv, 2, 0, 0x4000));
    memset(buf, 0, sizeof buf);
    pread(f, buf, 30, 0);
    printf("  file \"%s\"\n", buf);
    close(f);
}

static void sockets(void) {
    int s[2], t[2], p[2];
    tcp_pair(s);
    tcp_pair(t);
    pipe(p);
    fill_big();

    // sendfile a file larger than any socket buffer into a TCP connection, read by a child
    char path[] = "/tmp/armada-sendfile-XXXXXX";
    int f = mkstemp(path);
    unlink(path);
    write(f, big, sizeof big);
    lseek(f, 1000, SEEK_SET);
    pid_t c = fork();
    if (c == 0) {
        static char got[sizeof big];
        size_t n = read_all(s[1], got, sizeof got);
        // the part from 1000 on, then the 5 bytes from 10
        int ok = n == sizeof big - 1000 + 5 && !memcmp(got, big + 1000, sizeof big - 1000) &&
                 !memcmp(got + sizeof big - 1000, big + 10, 5);
        printf("child read %zu bytes, %s\n", n, ok ? "as sent" : "NOT as sent");
        fflush(stdout);
        _exit(0);
    }
    size_t sent = 0;
    for (;;) {
        ssize_t r = sendfile(s[0], f, NULL, sizeof big);
        if (r <= 0) {
            printf("sendfile ended with %zd %s\n", r, r < 0 ? err(errno) : "");
            break;
        }
        sent += r;
    }
    printf("sendfile sent %zu, file position %ld\n", sent, (long)lseek(f, 0, SEEK_CUR));
    off_t o = 10;
    SHOW("sendfile at 10, 5 bytes", sendfile(s[0], f, &o, 5));
    printf("  offset %ld\n", (long)o);
    shutdown(s[0], SHUT_WR);
    waitpid(c, NULL, 0);

    // socket -> pipe -> socket, as Go's TCPConn.ReadFrom does, with a child writing
    c = fork();
    if (c == 0) {
        size_t at = 0;
        while (at < sizeof big) {
            ssize_t r = write(t[0], big + at, sizeof big - at);
            if (r <= 0)
                break;
            at += r;
        }
        shutdown(t[0], SHUT_WR);
        _exit(0);
    }
    int u[2];
    tcp_pair(u);
    size_t moved = 0;
    pid_t reader = fork();
    if (reader == 0) {
        static char got[sizeof big];
        close(u[0]);
        size_t n = read_all(u[1], got, sizeof got);
        printf("relay reader got %zu bytes, sum %08x (want %08x)\n", n, sum(got, n),
               sum(big, sizeof big));
        fflush(stdout);
        _exit(0);
    }
    for (;;) {
        ssize_t r = splice(t[1], NULL, p[1], NULL, 65536, SPLICE_F_MOVE);
        if (r < 0) {
            printf("splice socket -> pipe: %s\n", err(errno));
            break;
        }
        if (r == 0)
            break;
        while (r > 0) {
            ssize_t w = splice(p[0], NULL, u[0], NULL, r, SPLICE_F_MOVE);
            if (w <= 0) {
                printf("splice pipe -> socket: %s\n", err(errno));
                exit(1);
            }
            r -= w;
            moved += w;
        }
    }
    close(u[0]);
    waitpid(c, NULL, 0);
    waitpid(reader, NULL, 0);
    // after the reader's line: it may have all the bytes, and print, before this process
    // leaves the loop (seen under load in qemu-aarch64), so printing earlier raced it
    printf("relayed %zu bytes through a pipe\n", moved);

    // an empty nonblocking socket: EAGAIN
    fcntl(t[1], F_SETFL, O_NONBLOCK);
    int s2[2];
    tcp_pair(s2);
    fcntl(s2[1], F_SETFL, O_NONBLOCK);
    SHOW("splice empty nonblocking socket -> pipe", splice(s2[1], NULL, p[1], NULL, 10, 0));
    SHOW("sendfile socket -> socket", (write(s2[0], "abc", 3), sendfile(t[1], s2[1], NULL, 3)));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pipes_and_files();
    sockets();
    return 0;
}
