// Pages a program writes before it reads its input and again after. Lanes started from a
// snapshot at that read (`--snapshot-at input`) copy each page on their first write to it
// (copy-on-write snapshot pages): hundreds a lane, more than a lane's frame reserve holds,
// so the GPU kernel takes them from the batch's frame pool (armada-gpu's engine/pool.rs).
// PAGES: argv[1] (default 200); EXTRA: argv[2] (default 0), pages new to the process that it
// writes after the read (a lane's memory cap may stop it there). Prints a sum over the pages
// that depends on the input.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 200;
    if (pages < 1) pages = 1;
    unsigned char *p = malloc(pages * 4096);
    if (!p) {
        puts("malloc failed");
        return 1;
    }
    for (long i = 0; i < pages; i++) p[i * 4096] = (unsigned char)i;
    unsigned char in[64];
    long n = read(0, in, sizeof in);
    unsigned seed = 0;
    for (long i = 0; i < n; i++) seed = seed * 31 + in[i];
    unsigned long long sum = 0;
    for (long i = 0; i < pages; i++) {
        p[i * 4096 + 8] = (unsigned char)(seed + i);
        sum += p[i * 4096] + p[i * 4096 + 8] * (unsigned long long)i;
    }
    long extra = argc > 2 ? atol(argv[2]) : 0;
    if (extra > 0) {
        unsigned char *q = malloc(extra * 4096);
        if (!q) {
            puts("malloc failed");
            return 1;
        }
        for (long i = 0; i < extra; i++) {
            q[i * 4096] = (unsigned char)(seed ^ i);
            sum += q[i * 4096];
        }
    }
    printf("cowpages %ld %ld: %llu\n", pages, extra, sum);
    return 0;
}
