// eventfd, timerfd, epoll and pipes across threads: 4 threads each add 1..250 to one eventfd
// while main sums what epoll_wait + read hand it (the total is exact whatever the batching);
// an EFD_SEMAPHORE eventfd hands out one unit per read; a one-shot timerfd wakes epoll_wait
// with one expiration; a thread writes 256 KiB through a pipe that main reads and checksums.
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "check.h"

enum { WRITERS = 4, ADDS = 250, PIPE_BYTES = 256 * 1024 };

static int efd, pipe_w;

static void *adder(void *arg)
{
    (void)arg;
    for (uint64_t i = 1; i <= ADDS; i++) CHECK(write(efd, &i, 8) == 8);
    return NULL;
}

static void *pipe_writer(void *arg)
{
    (void)arg;
    unsigned char buf[4096];
    for (int off = 0; off < PIPE_BYTES; off += (int)sizeof buf) {
        for (int i = 0; i < (int)sizeof buf; i++) buf[i] = (unsigned char)((off + i) * 7 + 3);
        for (size_t done = 0; done < sizeof buf;) {
            ssize_t n = write(pipe_w, buf + done, sizeof buf - done);
            CHECK(n > 0);
            done += (size_t)n;
        }
    }
    close(pipe_w);
    return NULL;
}

int main(void)
{
    efd = eventfd(0, EFD_CLOEXEC);
    CHECK(efd >= 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
    pthread_t t[WRITERS];
    for (int i = 0; i < WRITERS; i++) CHECK(pthread_create(&t[i], NULL, adder, NULL) == 0);
    uint64_t total = 0, want = (uint64_t)WRITERS * ADDS * (ADDS + 1) / 2;
    while (total < want) {
        struct epoll_event out[4];
        int n = epoll_wait(ep, out, 4, -1);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n == 1 && out[0].data.u32 == 1 && (out[0].events & EPOLLIN));
        uint64_t v;
        CHECK(read(efd, &v, 8) == 8);
        total += v;
    }
    for (int i = 0; i < WRITERS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    printf("eventfd: total=%llu (want %llu)\n", (unsigned long long)total,
           (unsigned long long)want);
    CHECK(total == want);

    int sfd = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
    CHECK(sfd >= 0);
    int units = 0;
    uint64_t v;
    while (read(sfd, &v, 8) == 8) units += (int)v;
    int again = errno == EAGAIN;
    printf("eventfd semaphore: %d reads of 1, then EAGAIN=%d\n", units, again);
    CHECK(units == 3 && again);

    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    CHECK(tfd >= 0);
    ev.data.u32 = 2;
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) == 0);
    struct itimerspec its = {.it_value = {.tv_sec = 0, .tv_nsec = 30 * 1000000}};
    CHECK(timerfd_settime(tfd, 0, &its, NULL) == 0);
    struct epoll_event out[4];
    int n = epoll_wait(ep, out, 4, -1);
    CHECK(n == 1 && out[0].data.u32 == 2);
    uint64_t expirations = 0;
    CHECK(read(tfd, &expirations, 8) == 8);
    n = epoll_wait(ep, out, 4, 0);
    printf("timerfd: woke epoll_wait, expirations=%llu, ready after read=%d\n",
           (unsigned long long)expirations, n);
    CHECK(expirations == 1 && n == 0);

    int p[2];
    CHECK(pipe(p) == 0);
    pipe_w = p[1];
    pthread_t w;
    CHECK(pthread_create(&w, NULL, pipe_writer, NULL) == 0);
    unsigned char buf[3000];
    uint64_t bytes = 0, bad = 0, h = 1469598103934665603ULL;
    for (;;) {
        ssize_t r = read(p[0], buf, sizeof buf);
        CHECK(r >= 0);
        if (r == 0) break;
        for (ssize_t i = 0; i < r; i++) {
            bad += buf[i] != (unsigned char)((bytes + (uint64_t)i) * 7 + 3);
            h = (h ^ buf[i]) * 1099511628211ULL;
        }
        bytes += (uint64_t)r;
    }
    CHECK(pthread_join(w, NULL) == 0);
    printf("pipe: %llu bytes, %llu wrong, fnv %016llx\n", (unsigned long long)bytes,
           (unsigned long long)bad, (unsigned long long)h);
    CHECK(bytes == PIPE_BYTES && bad == 0);
    puts("epoll_threads: ok");
    return 0;
}
