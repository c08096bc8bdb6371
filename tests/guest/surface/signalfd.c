/* signalfd: signals read as records (kill to self, a POSIX timer's, a child's SIGCHLD),
 * poll and epoll readiness, a non-blocking read with nothing pending, a new mask for an
 * existing signalfd, and a blocking read woken by a child's signal. */
#include "../processes/proc.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGRTMIN);
    sigaddset(&set, SIGCHLD);
    CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    CHECK(fd >= 0);
    struct signalfd_siginfo si;
    errno = 0;
    printf("read with nothing pending: %zd %s\n", read(fd, &si, sizeof si), errname(errno));
    errno = 0;
    printf("read into a short buffer: %zd %s\n", read(fd, &si, 10), errname(errno));
    CHECK(kill(getpid(), SIGUSR1) == 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    printf("poll after kill: %d revents %d\n", poll(&p, 1, 0), p.revents);
    CHECK(read(fd, &si, sizeof si) == sizeof si);
    printf("kill: signo %s, code SI_USER %d, pid is mine %d\n", signame((int)si.ssi_signo), si.ssi_code == SI_USER,
           si.ssi_pid == (unsigned)getpid());

    /* a POSIX timer's signal */
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN;
    sev.sigev_value.sival_int = 77;
    timer_t t;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0);
    struct itimerspec its = {{0, 0}, {0, 5000000}};
    CHECK(timer_settime(t, 0, &its, NULL) == 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, out;
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
    printf("epoll_wait for the timer: %d\n", epoll_wait(ep, &out, 1, 5000));
    CHECK(read(fd, &si, sizeof si) == sizeof si);
    printf("timer: signo SIGRTMIN %d, code SI_TIMER %d, int %d, overrun %u\n", (int)si.ssi_signo == SIGRTMIN,
           si.ssi_code == SI_TIMER, si.ssi_int, si.ssi_overrun);
    timer_delete(t);

    /* a child's exit, read blocking (the signalfd made blocking again) */
    int fl = fcntl(fd, F_GETFL);
    CHECK(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0);
    pid_t pid = fork_flushed();
    if (pid == 0) _exit(9);
    CHECK(read(fd, &si, sizeof si) == sizeof si);
    printf("SIGCHLD: code CLD_EXITED %d, pid is the child's %d, status %d\n", si.ssi_code == CLD_EXITED,
           si.ssi_pid == (unsigned)pid, si.ssi_status);
    reap(pid);

    /* a new mask: SIGUSR1 only; SIGUSR2 stays pending, unread */
    sigaddset(&set, SIGUSR2);
    CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, SIGUSR1);
    CHECK(signalfd(fd, &only, 0) == fd);
    raise(SIGUSR2);
    raise(SIGUSR1);
    struct signalfd_siginfo two[2];
    ssize_t n = read(fd, two, sizeof two);
    printf("with the new mask: %zd bytes, signo %s\n", n, signame((int)two[0].ssi_signo));
    sigset_t pend;
    sigpending(&pend);
    printf("SIGUSR2 still pending: %d\n", sigismember(&pend, SIGUSR2));
    errno = 0;
    printf("signalfd on a pipe: %d %s\n", signalfd(0, &only, 0), errname(errno));
    close(ep);
    close(fd);
    return 0;
}
