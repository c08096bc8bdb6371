/* Interval timers: setitimer/getitimer (ITIMER_REAL, VIRTUAL, PROF), alarm, pause, and a
 * sleep or a read interrupted by SIGALRM. Prints counts and relations, never times. */
#include "../processes/proc.h"
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks[32];

static void on_signal(int sig) { ticks[sig]++; }

static void handle(int sig, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = flags;
    CHECK(sigaction(sig, &sa, NULL) == 0);
}

static long long ns_now(clockid_t c)
{
    struct timespec ts;
    CHECK(clock_gettime(c, &ts) == 0);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy work until sig has been seen n times (or a generous bound of work). */
static long spin_until(int sig, int n)
{
    volatile unsigned long x = 1;
    long rounds = 0;
    while (ticks[sig] < n && rounds < 4000000000L) {
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1;
        rounds++;
    }
    return rounds;
}

static void real_timer(void)
{
    handle(SIGALRM, SA_RESTART);
    struct itimerval it = {{0, 2000}, {0, 5000}}, cur;
    long long t0 = ns_now(CLOCK_MONOTONIC);
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    CHECK(getitimer(ITIMER_REAL, &cur) == 0);
    printf("real: interval %ld us, first expiry within 5 ms: %d\n", (long)cur.it_interval.tv_usec,
           cur.it_value.tv_sec == 0 && cur.it_value.tv_usec > 0 && cur.it_value.tv_usec <= 5000);
    spin_until(SIGALRM, 5);
    long long dt = ns_now(CLOCK_MONOTONIC) - t0;
    struct itimerval off = {{0, 0}, {0, 0}}, old;
    CHECK(setitimer(ITIMER_REAL, &off, &old) == 0);
    printf("real: 5 ticks seen: %d, after at least 13 ms: %d, old interval %ld us\n", ticks[SIGALRM] >= 5,
           dt >= 13000000, (long)old.it_interval.tv_usec);
    CHECK(getitimer(ITIMER_REAL, &cur) == 0);
    printf("real: disarmed reads zero: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_usec == 0);
}

static void cpu_timers(void)
{
    handle(SIGVTALRM, 0);
    handle(SIGPROF, 0);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    CHECK(setitimer(ITIMER_VIRTUAL, &it, NULL) == 0);
    CHECK(setitimer(ITIMER_PROF, &it, NULL) == 0);
    spin_until(SIGVTALRM, 3);
    spin_until(SIGPROF, 3);
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK(setitimer(ITIMER_VIRTUAL, &off, NULL) == 0);
    CHECK(setitimer(ITIMER_PROF, &off, NULL) == 0);
    printf("virtual: 3 ticks: %d; prof: 3 ticks: %d\n", ticks[SIGVTALRM] >= 3, ticks[SIGPROF] >= 3);
}

static void alarms(void)
{
    handle(SIGALRM, 0);
    ticks[SIGALRM] = 0;
    printf("alarm(5) first: %u\n", alarm(5));
    unsigned left = alarm(0);
    printf("alarm(0) after it returns 4 or 5: %d\n", left >= 4 && left <= 5);
    /* sleep interrupted by an alarm: nanosleep returns EINTR with time left */
    alarm(1);
    struct timespec req = {30, 0}, rem = {0, 0};
    int r = nanosleep(&req, &rem);
    printf("nanosleep: %d %s, alarm ran: %d, remaining 25..30 s: %d\n", r, errname(errno),
           ticks[SIGALRM] == 1, rem.tv_sec >= 25 && rem.tv_sec <= 30);
    /* a sleep that ends by itself leaves `rem` alone (Linux writes it only on EINTR) */
    struct timespec short_nap = {0, 1000000}, untouched = {7, 7};
    CHECK(nanosleep(&short_nap, &untouched) == 0);
    printf("completed nanosleep leaves rem: %d\n", untouched.tv_sec == 7 && untouched.tv_nsec == 7);
    /* pause until the alarm */
    alarm(1);
    r = pause();
    printf("pause: %d %s, ticks %d\n", r, errname(errno), ticks[SIGALRM]);
    /* a read of an empty pipe, interrupted (no SA_RESTART) */
    int p[2];
    CHECK(pipe(p) == 0);
    struct itimerval it = {{0, 0}, {0, 20000}};
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    char c;
    r = (int)read(p[0], &c, 1);
    printf("read interrupted: %d %s, ticks %d\n", r, errname(errno), ticks[SIGALRM]);
    close(p[0]);
    close(p[1]);
}

static void alarm_kills(void)
{
    pid_t pid = fork_flushed();
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(1);
        for (;;) pause();
    }
    printf("child with alarm(1) and no handler: %s\n", status_text(reap(pid)));
    /* timers are not inherited by fork */
    struct itimerval it = {{0, 0}, {1, 0}};
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    pid = fork_flushed();
    if (pid == 0) {
        struct itimerval c;
        CHECK(getitimer(ITIMER_REAL, &c) == 0);
        printf("child's inherited timer is off: %d\n", c.it_value.tv_sec == 0 && c.it_value.tv_usec == 0);
        fflush(stdout);
        _exit(0);
    }
    reap(pid);
    alarm(0);
}

static void errors(void)
{
    struct itimerval bad = {{0, 0}, {0, 1000000}};
    errno = 0;
    printf("setitimer usec 1000000: %d %s\n", setitimer(ITIMER_REAL, &bad, NULL), errname(errno));
    errno = 0;
    struct itimerval cur;
    printf("getitimer(7): %d %s\n", getitimer(7, &cur), errname(errno));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "ignored") == 0) {
        /* a periodic timer whose signal nobody takes, and a wait it cannot end (armada
         * reports this under --deterministic; run by armada only) */
        signal(SIGALRM, SIG_IGN);
        struct itimerval it = {{0, 1000}, {0, 1000}};
        CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
        printf("waiting forever\n");
        pause();
        return 0;
    }
    real_timer();
    cpu_timers();
    alarms();
    alarm_kills();
    errors();
    return 0;
}
