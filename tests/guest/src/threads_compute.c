// Compute-bound work split over N threads (pthreads): each thread runs a bitwise CRC-32
// over its own buffer, and main prints the combined result after joining them all. The
// output does not depend on how the threads interleave. `armada bench` runs it with 1 and
// 4 threads to compare the instruction rate of a threaded program with a single thread's.
//
//   threads_compute [THREADS [ROUNDS]]     (default: 4 threads, 2 rounds)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF 4096

struct job {
    int id;
    int rounds;
    uint32_t crc;
};

static void *work(void *arg) {
    struct job *j = arg;
    unsigned char buf[BUF];
    for (int i = 0; i < BUF; i++) buf[i] = (unsigned char)(i * 31 + j->id * 7);
    uint32_t crc = 0xffffffffu;
    for (int r = 0; r < j->rounds; r++) {
        for (int i = 0; i < BUF; i++) {
            crc ^= buf[i];
            for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    j->crc = ~crc;
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    if (n < 1 || n > 256 || rounds < 0) {
        fprintf(stderr, "usage: threads_compute [THREADS (1-256) [ROUNDS]]\n");
        return 2;
    }
    pthread_t t[256];
    struct job jobs[256];
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){.id = i, .rounds = rounds};
        if (pthread_create(&t[i], NULL, work, &jobs[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    uint32_t all = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        all = all * 33 + jobs[i].crc;
    }
    printf("%d threads x %d rounds: %08x\n", n, rounds, all);
    return 0;
}
