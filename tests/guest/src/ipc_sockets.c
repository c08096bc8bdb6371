/* Sockets and System V IPC inside one single-threaded process (so every engine runs it,
 * the GPU ones included): a TCP listener and a non-blocking client connected to it, an
 * AF_UNIX abstract listener, a socketpair, a shared memory segment, a semaphore, a
 * message queue and a MAP_SHARED mapping. With an argument, the TCP listener binds that
 * port: under `armada batch` every lane binds the same port, which works because each
 * run (lane) has a network of its own. Prints no ids or ephemeral ports. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            printf("check failed at line %d: %s (errno %d)\n", __LINE__, #c, errno); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static void tcp(int port)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    int one = 1;
    CHECK(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l, 4) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    if (port) printf("tcp: listening on port %d\n", ntohs(a.sin_port));
    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(c, (struct sockaddr *)&a, sizeof a);
    CHECK(r == 0 || errno == EINPROGRESS);
    struct pollfd p = {.fd = l, .events = POLLIN};
    CHECK(poll(&p, 1, 1000) == 1);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    p.fd = c;
    p.events = POLLOUT;
    CHECK(poll(&p, 1, 1000) == 1);
    CHECK(write(c, "ping over tcp", 13) == 13);
    char buf[64] = {0};
    CHECK(read(s, buf, sizeof buf) == 13);
    CHECK(write(s, "pong", 4) == 4);
    close(s);
    char back[8] = {0};
    CHECK(read(c, back, sizeof back) == 4);
    printf("tcp: server read \"%s\", client read \"%s\", then %zd (end of file)\n", buf, back, read(c, back, 1));
    close(c);
    close(l);
}

static void unix_abstract(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path + 1, "ipc_sockets");
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen("ipc_sockets"));
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(bind(l, (struct sockaddr *)&a, len) == 0);
    CHECK(listen(l, 1) == 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&a, len) == 0);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    CHECK(send(c, "unix", 4, 0) == 4);
    char buf[8] = {0};
    CHECK(recv(s, buf, sizeof buf, 0) == 4);
    printf("unix: abstract socket carried \"%s\"\n", buf);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(write(sv[0], "pair", 4) == 4);
    memset(buf, 0, sizeof buf);
    CHECK(read(sv[1], buf, sizeof buf) == 4);
    printf("unix: socketpair carried \"%s\"\n", buf);
    close(sv[0]);
    close(sv[1]);
    close(s);
    close(c);
    close(l);
}

static void sysv(void)
{
    int shm = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
    CHECK(shm >= 0);
    char *p = shmat(shm, NULL, 0);
    CHECK(p != (void *)-1);
    strcpy(p + 4100, "in a shared segment");
    char *q = shmat(shm, NULL, SHM_RDONLY);
    CHECK(q != (void *)-1);
    printf("shm: second attachment reads \"%s\"\n", q + 4100);
    CHECK(shmdt(q) == 0 && shmdt(p) == 0);
    CHECK(shmctl(shm, IPC_RMID, NULL) == 0);

    int sem = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
    CHECK(sem >= 0);
    struct sembuf up = {1, 3, 0}, down = {1, -2, 0}, nowait = {0, -1, IPC_NOWAIT};
    CHECK(semop(sem, &up, 1) == 0 && semop(sem, &down, 1) == 0);
    int r = semop(sem, &nowait, 1);
    printf("sem: value %d, a wait on 0 with IPC_NOWAIT: %d %s\n", semctl(sem, 1, GETVAL), r, errno == EAGAIN ? "EAGAIN" : "?");
    CHECK(semctl(sem, 0, IPC_RMID) == 0);

    int mq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    CHECK(mq >= 0);
    struct {
        long type;
        char text[32];
    } m = {7, "queued message"}, got;
    CHECK(msgsnd(mq, &m, sizeof m.text, 0) == 0);
    CHECK(msgrcv(mq, &got, sizeof got.text, 7, 0) == (ssize_t)sizeof got.text);
    printf("msg: type %ld \"%s\"\n", got.type, got.text);
    CHECK(msgctl(mq, IPC_RMID, NULL) == 0);

    int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    shared[100] = 12345;
    printf("mmap MAP_SHARED|MAP_ANONYMOUS: %d\n", shared[100]);
    CHECK(munmap(shared, 4096) == 0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcp(argc > 1 ? atoi(argv[1]) : 0);
    unix_abstract();
    sysv();
    return 0;
}
