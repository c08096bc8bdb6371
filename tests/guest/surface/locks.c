/* Advisory file locks between processes: POSIX record locks (F_GETLK shows the holder's
 * pid, range and type; a close of any fd of the file drops the process's locks; F_SETLKW
 * waits for the holder; a cycle of waiters is EDEADLK), OFD locks (owned by the open file
 * description, l_pid -1), flock (shared by dup and fork, separate from record locks), and
 * the errors of bad requests. Pids are printed as relations. */
#include "../processes/proc.h"
#include <fcntl.h>
#include <sys/file.h>

static char path[] = "/tmp/armada-locks-XXXXXX";

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
    struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fcntl(fd, cmd, &f);
}

/* F_GETLK (or F_OFD_GETLK) for a write lock on start..+len, printed. */
static void getlk(const char *who, int fd, int cmd, off_t start, off_t len, pid_t expect)
{
    struct flock f = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    if (cmd == F_OFD_GETLK)
        f.l_pid = 0;
    int r = fcntl(fd, cmd, &f);
    printf("%s: getlk %lld+%lld: %d %s", who, (long long)start, (long long)len, r,
           f.l_type == F_UNLCK ? "unlocked" : f.l_type == F_WRLCK ? "write" : "read");
    if (f.l_type != F_UNLCK)
        printf(" at %lld+%lld by %s", (long long)f.l_start, (long long)f.l_len,
               f.l_pid == expect ? "the expected pid" : f.l_pid == -1 ? "-1" : "another pid");
    printf("\n");
}

static void say(int fd, char c) { CHECK(write(fd, &c, 1) == 1); }
static char hear(int fd)
{
    char c = 0;
    CHECK(read(fd, &c, 1) == 1);
    return c;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "0123456789abcdefghij", 20) == 20);
    pid_t me = getpid();

    /* record locks seen from another process */
    CHECK(lk(fd, F_SETLK, F_WRLCK, 0, 10) == 0);
    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        int cfd = open(path, O_RDWR);
        getlk("child", cfd, F_GETLK, 0, 0, me);
        getlk("child", cfd, F_GETLK, 5, 2, me);
        getlk("child", cfd, F_GETLK, 10, 5, me);
        errno = 0;
        printf("child: setlk write 0+10: %d %s\n", lk(cfd, F_SETLK, F_WRLCK, 0, 10), errname(errno));
        printf("child: setlk read 10+10: %d\n", lk(cfd, F_SETLK, F_RDLCK, 10, 10));
        say(to_parent[1], 'a');
        hear(to_child[0]); /* the parent closed another fd of the file */
        getlk("child", cfd, F_GETLK, 0, 10, me);
        /* the parent locks again; this child waits for it */
        hear(to_child[0]);
        say(to_parent[1], 'w');
        int r = lk(cfd, F_SETLKW, F_WRLCK, 0, 5);
        printf("child: setlkw 0+5 after the parent unlocked: %d\n", r);
        lk(cfd, F_SETLK, F_UNLCK, 0, 0);
        say(to_parent[1], 'g');
        /* deadlock: this child holds 10+1 and waits for 0+1, the parent's */
        hear(to_child[0]);
        CHECK(lk(cfd, F_SETLK, F_WRLCK, 10, 1) == 0);
        say(to_parent[1], 'd');
        r = lk(cfd, F_SETLKW, F_WRLCK, 0, 1);
        printf("child: setlkw 0+1 after the parent gave up: %d\n", r);
        printf("child: its own 10+1 still held: %d\n", lk(cfd, F_SETLK, F_WRLCK, 10, 1));
        _exit(0);
    }
    CHECK(hear(to_parent[0]) == 'a');
    getlk("parent", fd, F_GETLK, 10, 10, pid);
    getlk("parent", fd, F_GETLK, 0, 10, pid);
    int other = open(path, O_RDONLY);
    close(other);
    say(to_child[1], 'c');
    usleep(20000);
    CHECK(lk(fd, F_SETLK, F_WRLCK, 0, 10) == 0);
    say(to_child[1], 'l');
    CHECK(hear(to_parent[0]) == 'w');
    usleep(50000);
    printf("parent: unlocking\n");
    lk(fd, F_SETLK, F_UNLCK, 0, 10);
    CHECK(hear(to_parent[0]) == 'g');
    CHECK(lk(fd, F_SETLK, F_WRLCK, 0, 1) == 0);
    say(to_child[1], 'L');
    CHECK(hear(to_parent[0]) == 'd');
    usleep(50000);
    errno = 0;
    printf("parent: setlkw 10+1 held by the waiting child: %d %s\n", lk(fd, F_SETLKW, F_WRLCK, 10, 1),
           errname(errno));
    lk(fd, F_SETLK, F_UNLCK, 0, 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("child %s\n", status_text(st));
    getlk("parent after the child ended", fd, F_GETLK, 0, 0, pid);

    /* OFD locks: per description, even in one process */
    int a = open(path, O_RDWR), b = open(path, O_RDWR);
    struct flock f = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 4};
    printf("ofd a: %d\n", fcntl(a, F_OFD_SETLK, &f));
    errno = 0;
    printf("ofd b: %d %s\n", fcntl(b, F_OFD_SETLK, &f), errname(errno));
    getlk("ofd b", b, F_OFD_GETLK, 0, 4, -1);
    getlk("posix, same process", fd, F_GETLK, 0, 4, -1);
    f.l_pid = 1;
    errno = 0;
    printf("ofd with l_pid set: %d %s\n", fcntl(b, F_OFD_SETLK, &f), errname(errno));
    close(a);
    f.l_pid = 0;
    printf("ofd b after a closed: %d\n", fcntl(b, F_OFD_SETLK, &f));
    close(b);

    /* flock */
    a = open(path, O_RDONLY);
    b = open(path, O_RDONLY);
    printf("flock a ex: %d\n", flock(a, LOCK_EX));
    errno = 0;
    printf("flock b ex nb: %d %s\n", flock(b, LOCK_EX | LOCK_NB), errname(errno));
    printf("flock b sh nb: %d %s\n", flock(b, LOCK_SH | LOCK_NB), errname(errno));
    int d = dup(a);
    printf("flock dup of a: %d\n", flock(d, LOCK_EX | LOCK_NB));
    printf("record lock beside it: %d\n", lk(fd, F_SETLK, F_WRLCK, 0, 0));
    pid = fork_flushed();
    if (pid == 0) {
        printf("child flock of inherited a: %d\n", flock(a, LOCK_EX | LOCK_NB));
        errno = 0;
        int c = open(path, O_RDONLY);
        printf("child flock of its own open: %d %s\n", flock(c, LOCK_SH | LOCK_NB), errname(errno));
        _exit(0);
    }
    waitpid(pid, &st, 0);
    close(a);
    printf("flock b after a closed (dup still open): %d %s\n", flock(b, LOCK_SH | LOCK_NB),
           errname(errno));
    close(d);
    printf("flock b after the dup closed: %d\n", flock(b, LOCK_EX | LOCK_NB));
    close(b);

    /* bad requests */
    int wo = open(path, O_WRONLY);
    errno = 0;
    printf("read lock on O_WRONLY: %d %s\n", lk(wo, F_SETLK, F_RDLCK, 0, 1), errname(errno));
    struct flock bad = {.l_type = F_WRLCK, .l_whence = 7};
    errno = 0;
    printf("whence 7: %d %s\n", fcntl(wo, F_SETLK, &bad), errname(errno));
    bad.l_whence = SEEK_SET;
    bad.l_start = -5;
    errno = 0;
    printf("start -5: %d %s\n", fcntl(wo, F_SETLK, &bad), errname(errno));
    bad.l_type = 9;
    bad.l_start = 0;
    errno = 0;
    printf("type 9: %d %s\n", fcntl(wo, F_SETLK, &bad), errname(errno));
    errno = 0;
    printf("flock op 0: %d %s\n", flock(wo, 0), errname(errno));
    /* a negative length locks what comes before l_start; SEEK_END counts from the size */
    struct flock neg = {.l_type = F_WRLCK, .l_whence = SEEK_END, .l_start = -4, .l_len = -6};
    printf("SEEK_END -4, len -6: %d\n", fcntl(wo, F_SETLK, &neg));
    pid = fork_flushed();
    if (pid == 0) {
        int c = open(path, O_RDWR);
        getlk("child", c, F_GETLK, 0, 0, getppid());
        _exit(0);
    }
    waitpid(pid, &st, 0);
    close(wo);
    unlink(path);
    return 0;
}
