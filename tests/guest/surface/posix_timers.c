/* POSIX timers: timer_create with SIGEV_SIGNAL (si_code, si_value, si_timerid), SIGEV_NONE,
 * SIGEV_THREAD (glibc's helper thread), SIGEV_THREAD_ID to each of many threads,
 * timer_gettime, timer_getoverrun while the signal is blocked, TIMER_ABSTIME, timer_delete,
 * clock_nanosleep(TIMER_ABSTIME), sigtimedwait's timeout, and the errors. */
#include "../processes/proc.h"
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>

static volatile sig_atomic_t got, bad_info;
static volatile int last_value;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (sig != SIGRTMIN || si->si_code != SI_TIMER) bad_info = 1;
    last_value = si->si_value.sival_int;
    got++;
}

static void spin(volatile sig_atomic_t *counter, int n)
{
    volatile unsigned long x = 1;
    for (long r = 0; *counter < n && r < 4000000000L; r++)
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1;
}

static void signal_timer(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    CHECK(sigaction(SIGRTMIN, &sa, NULL) == 0);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN;
    sev.sigev_value.sival_int = 4242;
    timer_t t;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0);
    struct itimerspec its = {{0, 1000000}, {0, 2000000}}, cur;
    CHECK(timer_settime(t, 0, &its, NULL) == 0);
    CHECK(timer_gettime(t, &cur) == 0);
    printf("signal timer: interval %ld ns, armed: %d\n", cur.it_interval.tv_nsec,
           cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 && cur.it_value.tv_nsec <= 2000000);
    spin(&got, 4);
    struct itimerspec off = {{0, 0}, {0, 0}}, old;
    CHECK(timer_settime(t, 0, &off, &old) == 0);
    printf("signal timer: 4 signals: %d, si_code SI_TIMER: %d, si_value %d, old interval %ld\n", got >= 4,
           !bad_info, last_value, old.it_interval.tv_nsec);
    CHECK(timer_delete(t) == 0);
    errno = 0;
    printf("timer_gettime after delete: %d %s\n", timer_gettime(t, &cur), errname(errno));
}

static void none_timer(void)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_NONE;
    timer_t t;
    CHECK(timer_create(CLOCK_REALTIME, &sev, &t) == 0);
    struct itimerspec its = {{0, 0}, {100, 0}}, cur;
    CHECK(timer_settime(t, 0, &its, NULL) == 0);
    CHECK(timer_gettime(t, &cur) == 0);
    printf("SIGEV_NONE: 99..100 s left: %d\n", cur.it_value.tv_sec >= 99 && cur.it_value.tv_sec <= 100);
    /* absolute: 200 ms from now on CLOCK_REALTIME */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    its.it_value = now;
    its.it_value.tv_nsec += 200000000;
    if (its.it_value.tv_nsec >= 1000000000) its.it_value.tv_sec++, its.it_value.tv_nsec -= 1000000000;
    CHECK(timer_settime(t, TIMER_ABSTIME, &its, NULL) == 0);
    CHECK(timer_gettime(t, &cur) == 0);
    printf("SIGEV_NONE abstime: under 200 ms left: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec <= 200000000 && cur.it_value.tv_nsec > 0);
    /* an absolute time in the past expires at once */
    its.it_value.tv_sec = 1;
    its.it_value.tv_nsec = 0;
    CHECK(timer_settime(t, TIMER_ABSTIME, &its, NULL) == 0);
    CHECK(timer_gettime(t, &cur) == 0);
    printf("SIGEV_NONE past abstime: expired: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    CHECK(timer_delete(t) == 0);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int thread_calls;

static void on_thread(union sigval v)
{
    pthread_mutex_lock(&mu);
    thread_calls += v.sival_int;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static void thread_timer(void)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = on_thread;
    sev.sigev_value.sival_int = 10;
    timer_t t;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0);
    struct itimerspec its = {{0, 3000000}, {0, 3000000}};
    CHECK(timer_settime(t, 0, &its, NULL) == 0);
    pthread_mutex_lock(&mu);
    while (thread_calls < 30) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    CHECK(timer_delete(t) == 0);
    printf("SIGEV_THREAD: callback ran 3 times: %d\n", thread_calls >= 30);
}

#define NTHREADS 8
static timer_t per_thread[NTHREADS];
static int thread_ticks[NTHREADS];

static void *worker(void *arg)
{
    int k = (int)(long)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMIN + 1;
    sev.sigev_value.sival_int = k;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &per_thread[k]) == 0);
    struct itimerspec its = {{0, 1000000 * (k + 1)}, {0, 1000000 * (k + 1)}};
    CHECK(timer_settime(per_thread[k], 0, &its, NULL) == 0);
    int mine = 0;
    while (thread_ticks[k] < 5) {
        siginfo_t si;
        int s = sigwaitinfo(&set, &si);
        CHECK(s == SIGRTMIN + 1);
        if (si.si_value.sival_int == k && si.si_code == SI_TIMER) mine++;
        thread_ticks[k]++;
    }
    CHECK(timer_delete(per_thread[k]) == 0);
    return (void *)(long)(mine == thread_ticks[k]);
}

static void thread_id_timers(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    pthread_t th[NTHREADS];
    for (long k = 0; k < NTHREADS; k++) CHECK(pthread_create(&th[k], NULL, worker, (void *)k) == 0);
    int all = 1;
    for (int k = 0; k < NTHREADS; k++) {
        void *r;
        CHECK(pthread_join(th[k], &r) == 0);
        all &= r == (void *)1L;
    }
    printf("SIGEV_THREAD_ID: %d threads each took 5 of their own timer's signals: %d\n", NTHREADS, all);
}

static void overrun(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 2);
    CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN + 2;
    timer_t t;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0);
    struct itimerspec its = {{0, 1000000}, {0, 1000000}};
    CHECK(timer_settime(t, 0, &its, NULL) == 0);
    struct timespec nap = {0, 30000000};
    nanosleep(&nap, NULL);
    siginfo_t si;
    CHECK(sigwaitinfo(&set, &si) == SIGRTMIN + 2);
    int ov = timer_getoverrun(t);
    printf("overrun: blocked 30 ms at 1 ms: si_overrun >= 10: %d, timer_getoverrun matches: %d\n",
           si.si_overrun >= 10, ov == si.si_overrun);
    struct timespec zero = {0, 0};
    CHECK(timer_delete(t) == 0);
    /* the timer may have expired again since sigwaitinfo (the run was slow): drop that */
    while (sigtimedwait(&set, &si, &zero) == SIGRTMIN + 2) {
    }
    errno = 0;
    printf("sigtimedwait with nothing pending: %d %s\n", sigtimedwait(&set, &si, &zero), errname(errno));
    struct timespec tenms = {0, 10000000};
    errno = 0;
    printf("sigtimedwait 10 ms: %d %s\n", sigtimedwait(&set, &si, &tenms), errname(errno));
}

static void abstime_sleep(void)
{
    struct timespec t0, t1, target;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    target = t0;
    target.tv_nsec += 50000000;
    if (target.tv_nsec >= 1000000000) target.tv_sec++, target.tv_nsec -= 1000000000;
    int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int after = t1.tv_sec > target.tv_sec || (t1.tv_sec == target.tv_sec && t1.tv_nsec >= target.tv_nsec);
    printf("clock_nanosleep abstime: %d, woke at or after the target: %d\n", r, after);
    target.tv_sec = 0;
    printf("clock_nanosleep abstime in the past: %d\n", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, NULL));
}

static void errors(void)
{
    timer_t t;
    errno = 0;
    printf("timer_create(clock 99): %d %s\n", timer_create((clockid_t)99, NULL, &t), errname(errno));
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = 200;
    errno = 0;
    printf("timer_create(signal 200): %d %s\n", timer_create(CLOCK_MONOTONIC, &sev, &t), errname(errno));
    sev.sigev_signo = SIGUSR1;
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev._sigev_un._tid = 999999;
    errno = 0;
    printf("timer_create(SIGEV_THREAD_ID, no such thread): %d %s\n", timer_create(CLOCK_MONOTONIC, &sev, &t), errname(errno));
    errno = 0;
    printf("timer_delete(bad id): %ld %s\n", syscall(SYS_timer_delete, 12345), errname(errno));
    errno = 0;
    printf("timer_getoverrun(bad id): %ld %s\n", syscall(SYS_timer_getoverrun, 12345), errname(errno));
    CHECK(timer_create(CLOCK_MONOTONIC, NULL, &t) == 0);
    struct itimerspec bad = {{0, 0}, {0, 1000000000}};
    errno = 0;
    printf("timer_settime(nsec 1e9): %d %s\n", timer_settime(t, 0, &bad, NULL), errname(errno));
    CHECK(timer_delete(t) == 0);
}

static void default_kills(void)
{
    pid_t pid = fork_flushed();
    if (pid == 0) {
        timer_t t;
        CHECK(timer_create(CLOCK_MONOTONIC, NULL, &t) == 0); /* SIGALRM by default */
        struct itimerspec its = {{0, 0}, {0, 5000000}};
        CHECK(timer_settime(t, 0, &its, NULL) == 0);
        for (;;) pause();
    }
    printf("child's timer with the default sigevent: %s\n", status_text(reap(pid)));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal_timer();
    none_timer();
    thread_timer();
    thread_id_timers();
    overrun();
    abstime_sleep();
    errors();
    default_kills();
    return 0;
}
