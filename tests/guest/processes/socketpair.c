// socketpair(AF_UNIX) between parent and child: SOCK_STREAM request/response, shutdown(SHUT_WR)
// as EOF, SOCK_DGRAM message boundaries, SOCK_SEQPACKET, and passing a file descriptor with
// SCM_RIGHTS (the child reads the file the parent opened).
#include "proc.h"
#include <fcntl.h>
#include <sys/socket.h>

int main(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        close(sv[0]);
        char buf[128];
        ssize_t n;
        while ((n = read(sv[1], buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; i++)
                if (buf[i] >= 'a' && buf[i] <= 'z') buf[i] -= 32;
            write_full(sv[1], buf, (size_t)n);
        }
        write_full(sv[1], "<eof>", 5);
        _exit(0);
    }
    close(sv[1]);
    const char *words[] = {"alpha", "bravo", "charlie"};
    for (int i = 0; i < 3; i++) {
        char buf[64];
        write_full(sv[0], words[i], strlen(words[i]));
        size_t n = read_full(sv[0], buf, strlen(words[i]));
        printf("stream: sent %s, got %.*s\n", words[i], (int)n, buf);
    }
    CHECK(shutdown(sv[0], SHUT_WR) == 0);
    char buf[64];
    size_t n = read_full(sv[0], buf, sizeof buf);
    printf("after shutdown(SHUT_WR): %.*s\n", (int)n, buf);
    printf("child: %s\n", status_text(reap(p)));
    close(sv[0]);

    int types[2] = {SOCK_DGRAM, SOCK_SEQPACKET};
    for (int t = 0; t < 2; t++) {
        CHECK(socketpair(AF_UNIX, types[t], 0, sv) == 0);
        p = fork_flushed();
        if (p == 0) {
            close(sv[0]);
            write_full(sv[1], "one", 3);
            write_full(sv[1], "two-two", 7);
            write_full(sv[1], "three-three-three", 17);
            _exit(0);
        }
        close(sv[1]);
        reap(p);
        printf("%s:", t == 0 ? "dgram" : "seqpacket");
        for (int i = 0; i < 3; i++) {
            ssize_t k = recv(sv[0], buf, sizeof buf, 0);
            printf(" %zd", k);
        }
        printf("\n");
        close(sv[0]);
    }

    // SCM_RIGHTS: the parent sends an fd of a file to the child
    int f = open("passed.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(f >= 0);
    write_full(f, "contents of passed.txt\n", 23);
    lseek(f, 9, SEEK_SET);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    p = fork_flushed();
    if (p == 0) {
        close(sv[0]);
        char c;
        char ctrl[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {&c, 1};
        struct msghdr m = {0};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl;
        m.msg_controllen = sizeof ctrl;
        CHECK(recvmsg(sv[1], &m, 0) == 1);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        CHECK(cm && cm->cmsg_type == SCM_RIGHTS);
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        char b[64];
        ssize_t k = read(fd, b, sizeof b);
        printf("child read through the passed fd (shared offset 9): %.*s", (int)k, b);
        fflush(stdout);
        _exit(0);
    }
    close(sv[1]);
    char c = 'F';
    char ctrl[CMSG_SPACE(sizeof(int))];
    memset(ctrl, 0, sizeof ctrl);
    struct iovec iov = {&c, 1};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &f, sizeof f);
    fflush(stdout);
    CHECK(sendmsg(sv[0], &m, 0) == 1);
    printf("child: %s\n", status_text(reap(p)));
    printf("parent's offset after the child read: %ld\n", (long)lseek(f, 0, SEEK_CUR));
    return 0;
}
