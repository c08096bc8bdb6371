/* Shared helpers of the process test programs (tests/guest/processes, built by
 * tests/guest/build-processes.sh; run by crates/armada-cli/tests/processes.rs under
 * qemu-aarch64 and armada). Programs print relations (a pid is > 0, getppid() equals the
 * parent's getpid()), never pid numbers, since those differ between runs.
 *
 * CHECK(cond): on failure names the file, line, condition and errno on stderr and exits 1. */
#ifndef ARMADA_PROC_H
#define ARMADA_PROC_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s (errno %s)\n", __FILE__, __LINE__, #c, \
                    errname(errno));                                                      \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static inline const char *errname(int e)
{
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ETXTBSY: return "ETXTBSY";
    case ESPIPE: return "ESPIPE";
    case EPIPE: return "EPIPE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ELOOP: return "ELOOP";
    case ENOTSOCK: return "ENOTSOCK";
    case ECONNRESET: return "ECONNRESET";
    case ENOTCONN: return "ENOTCONN";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "errno%d", e);
        return buf;
    }
    }
}

static inline const char *signame(int s)
{
    switch (s) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "signal%d", s);
        return buf;
    }
    }
}

/* "exited 3", "killed by SIGTERM", "stopped by SIGSTOP", "continued" */
static inline const char *status_text(int st)
{
    static char buf[64];
    if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exited %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "killed by %s", signame(WTERMSIG(st)));
    else if (WIFSTOPPED(st))
        snprintf(buf, sizeof buf, "stopped by %s", signame(WSTOPSIG(st)));
    else if (WIFCONTINUED(st))
        snprintf(buf, sizeof buf, "continued");
    else
        snprintf(buf, sizeof buf, "status 0x%x?", st);
    return buf;
}

/* Waits for pid and returns its status (CHECKs that waitpid succeeded). */
static inline int reap(pid_t pid)
{
    int st = 0;
    pid_t r;
    do r = waitpid(pid, &st, 0);
    while (r < 0 && errno == EINTR);
    CHECK(r == pid);
    return st;
}

/* Reads exactly n bytes unless EOF comes first; returns the count. */
static inline size_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        CHECK(r >= 0);
        if (r == 0) break;
        got += (size_t)r;
    }
    return got;
}

static inline void write_full(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = write(fd, (const char *)buf + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        CHECK(r > 0);
        done += (size_t)r;
    }
}

/* Every program's stdout is a pipe under the tests (fully buffered): flush before fork so
 * that buffered text is not printed twice (except where a program means to show that). */
static inline pid_t fork_flushed(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    CHECK(p >= 0);
    return p;
}

#endif
