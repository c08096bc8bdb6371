// Read stdin to EOF; print byte count, line count, longest line, byte histogram summary and checksums.
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int use_read = argc > 1;  // "raw" argument: use read(2) directly instead of stdio
    unsigned char buf[3000];
    uint64_t bytes = 0, lines = 0, longest = 0, cur = 0;
    uint32_t adler_a = 1, adler_b = 0;
    uint64_t fnv = 1469598103934665603ULL;
    uint64_t hist[256] = {0};
    for (;;) {
        ssize_t n;
        if (use_read) n = read(0, buf, sizeof buf);
        else n = (ssize_t)fread(buf, 1, sizeof buf, stdin);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) {
            unsigned char c = buf[i];
            adler_a = (adler_a + c) % 65521;
            adler_b = (adler_b + adler_a) % 65521;
            fnv = (fnv ^ c) * 1099511628211ULL;
            hist[c]++;
            if (c == '\n') { lines++; if (cur > longest) longest = cur; cur = 0; }
            else cur++;
        }
        bytes += (uint64_t)n;
    }
    if (cur > longest) longest = cur;
    int distinct = 0, most = 0;
    for (int i = 0; i < 256; i++) { if (hist[i]) distinct++; if (hist[i] > hist[most]) most = i; }
    printf("bytes=%llu lines=%llu longest=%llu\n", (unsigned long long)bytes, (unsigned long long)lines, (unsigned long long)longest);
    printf("adler32=%08x fnv1a=%016llx distinct=%d most_common=%d (x%llu)\n", (adler_b << 16) | adler_a,
           (unsigned long long)fnv, distinct, most, (unsigned long long)hist[most]);
    printf("eof again: %s\n", use_read ? (read(0, buf, 1) == 0 ? "0" : "?") : (fgetc(stdin) == EOF ? "EOF" : "?"));
    return 0;
}
