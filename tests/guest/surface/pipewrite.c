/* Blocking writes to a pipe go in whole: a 1 MiB write() to a pipe of 64 KiB returns
 * 1 MiB once a slow reader has taken it all, and writev the same; a signal that comes while it waits ends it
 * with the count put in so far (not EINTR); a non-blocking one takes what fits; a reader
 * that goes away mid-write leaves the count put in so far, and SIGPIPE. */
#include "../processes/proc.h"
#include <fcntl.h>
#include <sys/time.h>
#include <sys/uio.h>

static volatile int alarms, pipes;
static void on_alarm(int s) { (void)s; alarms++; }
static void on_pipe(int s) { (void)s; pipes++; }

static char big[1 << 20];

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(big, 'z', sizeof big);
    int p[2];

    /* a slow reader */
    CHECK(pipe(p) == 0);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        close(p[1]);
        char b[1000];
        long got = 0;
        ssize_t r;
        while ((r = read(p[0], b, sizeof b)) > 0)
            got += r;
        printf("reader got %ld\n", got);
        _exit(0);
    }
    close(p[0]);
    printf("write of 1 MiB: %zd\n", write(p[1], big, sizeof big));
    struct iovec v[2] = {{big, 100000}, {big, 200000}};
    printf("writev of 300000: %zd\n", writev(p[1], v, 2));
    close(p[1]);
    int st;
    waitpid(pid, &st, 0);

    /* a signal while it waits: the count so far */
    CHECK(pipe(p) == 0);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL);
    errno = 0;
    ssize_t w = write(p[1], big, 200000);
    printf("write of 200000 into an unread pipe, alarm after 50 ms: %zd %s, alarms %d\n", w,
           errname(errno), alarms);

    /* non-blocking: what fits */
    int fl = fcntl(p[1], F_GETFL);
    fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
    /* (a whole page read: Linux frees pipe room a page at a time) */
    char c[4096];
    read(p[0], c, sizeof c);
    errno = 0;
    printf("non-blocking write of 200000 with 4096 free: %zd\n", write(p[1], big, 200000));
    errno = 0;
    printf("and again: %zd %s\n", write(p[1], big, 200000), errname(errno));
    close(p[0]);
    close(p[1]);

    /* the reader goes away mid-write */
    CHECK(pipe(p) == 0);
    sa.sa_handler = on_pipe;
    sigaction(SIGPIPE, &sa, NULL);
    pid = fork_flushed();
    if (pid == 0) {
        close(p[1]);
        usleep(50000);
        read(p[0], c, 1000);
        _exit(0);
    }
    close(p[0]);
    errno = 0;
    w = write(p[1], big, sizeof big);
    printf("write of 1 MiB, reader gone after 1000 bytes: some went in %d, all %d, SIGPIPE %d\n",
           w >= 65536, w == (ssize_t)sizeof big, pipes);
    waitpid(pid, &st, 0);
    return 0;
}
