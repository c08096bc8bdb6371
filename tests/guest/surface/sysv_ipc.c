/* System V IPC and shared memory between processes: shmget/shmat/shmdt/shmctl with a
 * forked child writing what the parent reads, a counter two processes increment under a
 * semaphore, MAP_SHARED|MAP_ANONYMOUS across fork, semaphores (SETVAL/GETVAL, IPC_NOWAIT,
 * semtimedop's timeout, SEM_UNDO at exit, SETALL/GETALL, EIDRM for a waiter of a removed
 * set), message queues (types, MSG_EXCEPT, MSG_NOERROR, E2BIG, ENOMSG, a ping-pong with a
 * child), keys (EEXIST, ENOENT), memfd_create, and the errors. Ids are never printed. */
#include "../processes/proc.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <time.h>

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};

static void sem_add(int id, int n, int op)
{
    struct sembuf b = {(unsigned short)n, (short)op, 0};
    while (semop(id, &b, 1) < 0) CHECK(errno == EINTR);
}

/* Waits until `n` processes wait for semaphore `k` of set `id` (GETNCNT), a millisecond at a
 * time for up to 10 s: a child that must be blocked before the parent goes on is blocked, on
 * a loaded machine too (a plain 10 ms nap once let qemu's child reach its semop only after
 * the set was removed: EINVAL, not EIDRM). */
static void wait_waiters(int id, int k, int n)
{
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && semctl(id, k, GETNCNT) != n; i++)
        nanosleep(&ms, NULL);
}

static void shm_between_processes(void)
{
    int id = shmget(IPC_PRIVATE, 10000, IPC_CREAT | 0600);
    CHECK(id >= 0);
    char *p = shmat(id, NULL, 0);
    CHECK(p != (void *)-1);
    strcpy(p, "parent wrote this");
    struct shmid_ds ds;
    CHECK(shmctl(id, IPC_STAT, &ds) == 0);
    printf("shm: size %zu, attached %lu, mode %o\n", ds.shm_segsz, (unsigned long)ds.shm_nattch, ds.shm_perm.mode & 0777);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        struct shmid_ds d2;
        CHECK(shmctl(id, IPC_STAT, &d2) == 0);
        printf("child: attached %lu, sees \"%s\"\n", (unsigned long)d2.shm_nattch, p);
        fflush(stdout);
        strcpy(p + 5000, "child wrote this across a page");
        p[9999] = 42;
        _exit(0);
    }
    reap(pid);
    printf("parent sees: \"%s\", last byte %d\n", p + 5000, p[9999]);
    /* a second attachment of the same segment, read-only */
    const char *q = shmat(id, NULL, SHM_RDONLY);
    CHECK(q != (void *)-1);
    printf("second attachment sees the same: %d\n", strcmp(q + 5000, p + 5000) == 0);
    CHECK(shmdt(q) == 0);
    CHECK(shmctl(id, IPC_RMID, NULL) == 0);
    CHECK(shmctl(id, IPC_STAT, &ds) == 0);
    printf("after IPC_RMID while attached: dest %d, attached %lu\n", (ds.shm_perm.mode & 01000) != 0, (unsigned long)ds.shm_nattch);
    CHECK(shmdt(p) == 0);
    errno = 0;
    printf("shmat of the removed segment: %p %s\n", shmat(id, NULL, 0) == (void *)-1 ? NULL : (void *)1, errname(errno));
    errno = 0;
    printf("shmdt of an address not attached: %d %s\n", shmdt(p), errname(errno));
}

static void counter_under_semaphore(void)
{
    int shm = shmget(IPC_PRIVATE, sizeof(long), IPC_CREAT | 0600);
    int sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    CHECK(shm >= 0 && sem >= 0);
    union semun u = {.val = 1};
    CHECK(semctl(sem, 0, SETVAL, u) == 0);
    volatile long *counter = shmat(shm, NULL, 0);
    CHECK(counter != (void *)-1);
    *counter = 0;
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        kids[k] = fork_flushed();
        if (kids[k] == 0) {
            for (int i = 0; i < 2000; i++) {
                sem_add(sem, 0, -1);
                long v = *counter;
                for (volatile int spin = 0; spin < 50; spin++) {}
                *counter = v + 1;
                sem_add(sem, 0, 1);
            }
            _exit(0);
        }
    }
    for (int k = 0; k < 3; k++) reap(kids[k]);
    printf("3 processes x 2000 increments under a semaphore: %ld\n", *counter);
    CHECK(shmdt((void *)counter) == 0);
    CHECK(shmctl(shm, IPC_RMID, NULL) == 0);
    CHECK(semctl(sem, 0, IPC_RMID) == 0);
}

/* A process killed while others wrote after its last turn leaves the shared memory as they
 * left it. */
static void killed_while_waiting(void)
{
    volatile int *x = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(x != MAP_FAILED);
    *x = 0;
    pid_t sleeper = fork_flushed();
    if (sleeper == 0) {
        *x = 1;
        for (;;) pause();
    }
    while (*x != 1) sched_yield();
    *x = 2;
    pid_t killer = fork_flushed();
    if (killer == 0) {
        /* (the killer does not map it itself) */
        CHECK(munmap((void *)x, 4096) == 0);
        CHECK(kill(sleeper, SIGKILL) == 0);
        _exit(0);
    }
    reap(killer);
    printf("after killing a waiting writer: %d (%s)\n", *x, status_text(reap(sleeper)));
    munmap((void *)x, 4096);
}

static void shared_anonymous(void)
{
    int *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    int *priv = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[0] = 1;
    priv[0] = 1;
    pid_t pid = fork_flushed();
    if (pid == 0) {
        m[0] = 2;
        m[2048] = 7;
        priv[0] = 2;
        _exit(0);
    }
    reap(pid);
    printf("MAP_SHARED|MAP_ANONYMOUS after the child wrote: %d %d; MAP_PRIVATE: %d\n", m[0], m[2048], priv[0]);
    CHECK(munmap(m, 3 * 4096) == 0);
}

static void semaphores(void)
{
    int id = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
    CHECK(id >= 0);
    unsigned short init[3] = {5, 0, 2}, got[3];
    union semun u = {.array = init};
    CHECK(semctl(id, 0, SETALL, u) == 0);
    u.array = got;
    CHECK(semctl(id, 0, GETALL, u) == 0);
    printf("sem GETALL: %d %d %d\n", got[0], got[1], got[2]);
    struct sembuf take2 = {0, -2, IPC_NOWAIT};
    CHECK(semop(id, &take2, 1) == 0);
    printf("sem after taking 2: %d\n", semctl(id, 0, GETVAL));
    struct sembuf none = {1, -1, IPC_NOWAIT};
    errno = 0;
    printf("semop IPC_NOWAIT on 0: %d %s\n", semop(id, &none, 1), errname(errno));
    struct sembuf wait1 = {1, -1, 0};
    struct timespec ts = {0, 20000000};
    errno = 0;
    printf("semtimedop 20 ms: %d %s\n", semtimedop(id, &wait1, 1, &ts), errname(errno));
    /* all or nothing: the first op would pass, the second not */
    struct sembuf two[2] = {{0, -1, 0}, {1, -1, IPC_NOWAIT}};
    errno = 0;
    printf("semop two ops, second blocks: %d %s, first untouched: %d\n", semop(id, two, 2), errname(errno), semctl(id, 0, GETVAL));
    /* SEM_UNDO: the child's decrement is undone when it exits */
    pid_t pid = fork_flushed();
    if (pid == 0) {
        struct sembuf undo = {2, -2, SEM_UNDO};
        CHECK(semop(id, &undo, 1) == 0);
        printf("child took sem 2 with SEM_UNDO: %d\n", semctl(id, 2, GETVAL));
        fflush(stdout);
        _exit(0);
    }
    reap(pid);
    printf("after the child exits: sem 2 = %d\n", semctl(id, 2, GETVAL));
    /* a child blocked on a semaphore, woken by the parent */
    pid = fork_flushed();
    if (pid == 0) {
        struct sembuf w = {1, -1, 0};
        int r = semop(id, &w, 1);
        printf("child's semop woke: %d\n", r);
        fflush(stdout);
        _exit(0);
    }
    wait_waiters(id, 1, 1);
    printf("waiting for sem 1 (GETNCNT): %d\n", semctl(id, 1, GETNCNT));
    fflush(stdout);
    sem_add(id, 1, 1);
    reap(pid);
    /* a waiter of a set that is removed gets EIDRM */
    pid = fork_flushed();
    if (pid == 0) {
        struct sembuf w = {1, -1, 0};
        int r = semop(id, &w, 1);
        printf("child's semop on a removed set: %d %s\n", r, errname(errno));
        fflush(stdout);
        _exit(0);
    }
    wait_waiters(id, 1, 1);
    CHECK(semctl(id, 0, IPC_RMID) == 0);
    reap(pid);
    errno = 0;
    printf("semctl on the removed set: %d %s\n", semctl(id, 0, GETVAL), errname(errno));
    errno = 0;
    printf("semget(nsems 0) for a new set: %d %s\n", semget(IPC_PRIVATE, 0, IPC_CREAT | 0600), errname(errno));
}

struct msg {
    long type;
    char text[64];
};

static void queues(void)
{
    int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    CHECK(id >= 0);
    struct msg m;
    const char *texts[] = {"three", "one", "two", "one again"};
    long types[] = {3, 1, 2, 1};
    for (int k = 0; k < 4; k++) {
        m.type = types[k];
        strcpy(m.text, texts[k]);
        CHECK(msgsnd(id, &m, strlen(m.text) + 1, 0) == 0);
    }
    struct msqid_ds ds;
    CHECK(msgctl(id, IPC_STAT, &ds) == 0);
    printf("msg queue: %lu messages, %lu bytes\n", (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes);
    ssize_t n = msgrcv(id, &m, sizeof m.text, 2, 0);
    printf("type 2: %zd %s\n", n, m.text);
    n = msgrcv(id, &m, sizeof m.text, -2, 0);
    printf("lowest type <= 2: %ld %s\n", m.type, m.text);
    n = msgrcv(id, &m, sizeof m.text, 1, MSG_EXCEPT);
    printf("first not of type 1: %ld %s\n", m.type, m.text);
    errno = 0;
    printf("too small a buffer: %zd %s\n", msgrcv(id, &m, 3, 0, 0), errname(errno));
    n = msgrcv(id, &m, 3, 0, MSG_NOERROR);
    printf("MSG_NOERROR: %zd %.3s\n", n, m.text);
    errno = 0;
    printf("empty queue, IPC_NOWAIT: %zd %s\n", msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT), errno == ENOMSG ? "ENOMSG" : errname(errno));
    m.type = 0;
    errno = 0;
    printf("msgsnd type 0: %d %s\n", msgsnd(id, &m, 4, 0), errname(errno));
    /* ping-pong with a child: type 1 to the child, type 2 back */
    pid_t pid = fork_flushed();
    if (pid == 0) {
        for (int i = 0; i < 100; i++) {
            struct msg r;
            CHECK(msgrcv(id, &r, sizeof r.text, 1, 0) >= 0);
            r.type = 2;
            int v = atoi(r.text);
            snprintf(r.text, sizeof r.text, "%d", v * 2);
            CHECK(msgsnd(id, &r, strlen(r.text) + 1, 0) == 0);
        }
        _exit(0);
    }
    long sum = 0;
    for (int i = 0; i < 100; i++) {
        m.type = 1;
        snprintf(m.text, sizeof m.text, "%d", i);
        CHECK(msgsnd(id, &m, strlen(m.text) + 1, 0) == 0);
        CHECK(msgrcv(id, &m, sizeof m.text, 2, 0) >= 0);
        sum += atol(m.text);
    }
    printf("100 round trips with a child: sum %ld, child %s\n", sum, status_text(reap(pid)));
    /* a full queue: IPC_NOWAIT says EAGAIN */
    struct msqid_ds small;
    CHECK(msgctl(id, IPC_STAT, &small) == 0);
    small.msg_qbytes = 100;
    CHECK(msgctl(id, IPC_SET, &small) == 0);
    m.type = 5;
    memset(m.text, 'x', sizeof m.text);
    int sent = 0;
    while (msgsnd(id, &m, sizeof m.text, IPC_NOWAIT) == 0) sent++;
    printf("queue of 100 bytes took %d messages of 64, then %s\n", sent, errname(errno));
    CHECK(msgctl(id, IPC_RMID, NULL) == 0);
    errno = 0;
    printf("msgsnd to a removed queue: %d %s\n", msgsnd(id, &m, 4, 0), errname(errno));
}

static void keys(void)
{
    key_t key = (key_t)(0x5a000000 | (getpid() & 0xffffff));
    int a = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600);
    CHECK(a >= 0);
    int b = shmget(key, 4096, 0);
    printf("same key, same segment: %d\n", a == b);
    errno = 0;
    printf("IPC_CREAT|IPC_EXCL on it: %d %s\n", shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600), errname(errno));
    errno = 0;
    printf("asking for more than its size: %d %s\n", shmget(key, 8192, 0), errname(errno));
    CHECK(shmctl(a, IPC_RMID, NULL) == 0);
    errno = 0;
    printf("the key after IPC_RMID: %d %s\n", shmget(key, 4096, 0), errname(errno));
    errno = 0;
    printf("msgget of a missing key: %d %s\n", msgget(key, 0), errname(errno));
}

/* POSIX shared memory: shm_open (a file under /dev/shm), mmap MAP_SHARED, then fork: the
 * child's writes are the parent's, and they reach the file. */
static void posix_shm(void)
{
    char name[64];
    snprintf(name, sizeof name, "/armada-test-%d", (int)getpid());
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, 8192) == 0);
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    strcpy(p, "parent");
    pid_t pid = fork_flushed();
    if (pid == 0) {
        printf("child sees: %s\n", p);
        fflush(stdout);
        strcpy(p + 4096, "written by the child");
        _exit(0);
    }
    reap(pid);
    printf("parent sees: %s\n", p + 4096);
    CHECK(munmap(p, 8192) == 0);
    char buf[32] = {0};
    CHECK(pread(fd, buf, 20, 4096) == 20);
    printf("the file holds: %s\n", buf);
    close(fd);
    CHECK(shm_unlink(name) == 0);
}

static void memfd(void)
{
    int fd = memfd_create("armada-test", MFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, 8192) == 0);
    CHECK(pwrite(fd, "memfd data", 10, 4096) == 10);
    char *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    printf("memfd through mmap: %.10s\n", p + 4096);
    char link[128] = {0}, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    CHECK(readlink(path, link, sizeof link - 1) > 0);
    printf("memfd link: %s\n", link);
    munmap(p, 8192);
    close(fd);
}

/* A semop nothing will ever release (armada reports the deadlock; run by armada only). */
static void deadlock(void)
{
    int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    CHECK(id >= 0);
    printf("waiting forever\n");
    fflush(stdout);
    sem_add(id, 0, -1);
    printf("unreachable\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "deadlock") == 0) {
        deadlock();
        return 0;
    }
    shm_between_processes();
    counter_under_semaphore();
    shared_anonymous();
    killed_while_waiting();
    semaphores();
    queues();
    keys();
    posix_shm();
    memfd();
    return 0;
}
