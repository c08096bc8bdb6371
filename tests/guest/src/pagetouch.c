// Memory that is new to the process, round after round: each round mallocs MB MiB
// (argv[1], default 64; glibc maps blocks this large with mmap and unmaps them on free),
// writes a word on every page in a scattered order, reads every page back, and frees it.
// What an emulator pays for each page the guest touches first (a host page fault, a
// mapping, a page of its own) is most of the time here. ROUNDS: argv[2], default 4.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long mb = argc > 1 ? atol(argv[1]) : 64;
    long rounds = argc > 2 ? atol(argv[2]) : 4;
    if (mb < 1) mb = 1;
    long pages = mb * 256;
    unsigned long long total = 0;
    for (long r = 0; r < rounds; r++) {
        unsigned char *p = malloc(pages * 4096);
        if (!p) {
            puts("malloc failed");
            return 1;
        }
        // a stride coprime with the page count visits every page once, out of order
        long stride = 7919, at = 0;
        while (pages % stride == 0) stride += 2;
        for (long i = 0; i < pages; i++) {
            *(unsigned long *)(p + at * 4096 + (at % 509) * 8) = (unsigned long)(at * 2654435761u + r);
            at = (at + stride) % pages;
        }
        unsigned long long sum = 0;
        for (long i = 0; i < pages; i++) sum += *(unsigned long *)(p + i * 4096 + (i % 509) * 8) ^ (unsigned long)i;
        total = total * 31 + sum;
        free(p);
    }
    printf("pagetouch %ld MiB x %ld: %llu\n", mb, rounds, total);
    return 0;
}
