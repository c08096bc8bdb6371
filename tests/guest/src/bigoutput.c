// Large stdout volume (about 1.3 MB) through stdio and raw write(2), interleaved with stderr lines.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    for (int i = 0; i < 20000; i++) printf("line %6d: %08x %s\n", i, (unsigned)i * 2654435761u, i % 3 ? "fizz" : "buzz");
    fflush(stdout);
    fprintf(stderr, "stderr: after stdio part\n");
    static char block[65536];
    for (size_t i = 0; i < sizeof block; i++) block[i] = (char)('a' + i % 26);
    for (size_t i = 63; i < sizeof block; i += 64) block[i] = '\n';
    for (int r = 0; r < 12; r++) {
        size_t off = 0;
        while (off < sizeof block) {
            ssize_t n = write(1, block + off, sizeof block - off);
            if (n <= 0) return 1;
            off += (size_t)n;
        }
    }
    fprintf(stderr, "stderr: done\n");
    printf("end\n");
    return 0;
}
