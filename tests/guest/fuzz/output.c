/* Output a GPU kernel keeps for its lanes (armada-gpu's engine/devio.rs): many writes to
 * stdout and stderr of every size from 0 bytes to 12 KiB, through write(2) and through stdio,
 * steered by the input, so that a batch's output list fills mid-launch and some writes go
 * to the host between the kernel's. Each stream's bytes must come out in the order written,
 * as on the CPU engine. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char big[12288];

int main(void) {
    unsigned char in[64];
    ssize_t n = read(0, in, sizeof in);
    if (n < 0)
        return 2;
    unsigned seed = 7;
    for (ssize_t i = 0; i < n; i++)
        seed = seed * 31 + in[i];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + (i * 7 + seed) % 26);
    int rounds = 8 + (int)(seed % 24);
    for (int r = 0; r < rounds; r++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = (seed >> 8) % (r % 5 == 4 ? sizeof big : 300);
        char head[32];
        int h = snprintf(head, sizeof head, "[%d:%zu]", r, len);
        if (write(1, head, (size_t)h) != h || write(1, big + r, len) != (ssize_t)len)
            return 3;
        if (r % 3 == 0 && write(2, head, (size_t)h) != h)
            return 4;
        if (write(2, "", 0) != 0)
            return 5;
    }
    /* stdio: buffered, flushed in 4 KiB blocks and at exit */
    for (int r = 0; r < 200; r++)
        printf("line %d of lane input %.*s\n", r, (int)n, (const char *)in);
    fputs("stderr line\n", stderr);
    return (int)(seed % 3);
}
