// A text scan of the kind text tools make: a generated buffer (argv[1] KiB, default 256) of
// lower-case words, spaces, new lines and capitals, scanned argv[2] times (default 2) for
// lines, words and capitals with <ctype.h>'s isspace/isupper (glibc's table lookups) and a
// running hash, then searched with strstr. A compute-bound benchmark (`armada bench`: 4096 5).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long kib = argc > 1 ? atol(argv[1]) : 256;
    int rounds = argc > 2 ? atoi(argv[2]) : 2;
    if (kib < 1 || rounds < 0) {
        fprintf(stderr, "usage: textscan [KiB [rounds]]\n");
        return 2;
    }
    size_t n = (size_t)kib << 10;
    char *buf = malloc(n);
    if (!buf) return 1;
    unsigned x = 7;
    for (size_t i = 0; i + 1 < n; i++) {
        x = x * 1664525u + 1013904223u;
        int c = (x >> 24) % 40;
        buf[i] = c < 26 ? 'a' + c : c < 30 ? ' ' : c < 35 ? '\n' : 'A' + c - 30;
    }
    buf[n - 1] = 0;
    long words = 0, lines = 0, upper = 0, found = 0;
    unsigned long hash = 0;
    for (int r = 0; r < rounds; r++) {
        int inword = 0;
        for (const char *p = buf; *p; p++) {
            unsigned char c = *p;
            if (c == '\n') lines++;
            if (isspace(c)) inword = 0;
            else if (!inword) {
                inword = 1;
                words++;
            }
            if (isupper(c)) upper++;
            hash = hash * 31 + c;
        }
        for (const char *q = buf; (q = strstr(q, "abc")); q++) found++;
    }
    printf("%ld lines, %ld words, %ld capitals, %ld \"abc\", hash %lx\n", lines, words, upper,
           found, hash);
    free(buf);
    return 0;
}
