// 1000 threads created and joined one at a time (thread stacks are reused from glibc's
// cache or mapped afresh; the kernel side must free each exited thread), each returning a
// value derived from its index. Prints how many were made and a checksum.
//
//   create1000 [COUNT]      (default 1000)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static void *child(void *arg)
{
    intptr_t i = (intptr_t)arg;
    return (void *)(i * 2 + 1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    long made = 0, sum = 0;
    for (long i = 0; i < n; i++) {
        pthread_t t;
        void *r;
        int e = pthread_create(&t, NULL, child, (void *)(intptr_t)i);
        if (e != 0) {
            printf("pthread_create failed after %ld threads (error %d)\n", made, e);
            return 1;
        }
        made++;
        CHECK(pthread_join(t, &r) == 0);
        sum += (long)(intptr_t)r;
    }
    printf("created and joined %ld threads one at a time, sum of results=%ld\n", made, sum);
    CHECK(sum == n * n);
    return 0;
}
