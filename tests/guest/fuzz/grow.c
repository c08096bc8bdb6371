/* Every run must start from the snapshot's memory, whatever the run before it on the same
 * lane did (persistent GPU lanes are taken back to their start between runs):
 * - a counter in .bss is 0 when the input has been read (the snapshot point), and
 * - the bytes of the input buffer just past the input are still zero;
 * a leak from an earlier run exits with status 3 or 4. An input that starts with 'G' also
 * maps and writes (input[1] % 8 + 1) * 64 pages of its own: many new pages, so the GPU
 * engine's page table grows while lanes are in flight. */
#include "input.h"
#include <sys/mman.h>

static int runs;

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    if (runs++ != 0)
        return 3;
    for (size_t i = n; i < n + 512 && i < sizeof input_buf; i++)
        if (input_buf[i])
            return 4;
    if (n >= 2 && input_buf[0] == 'G') {
        size_t pages = (size_t)(input_buf[1] % 8 + 1) * 64;
        unsigned char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 5;
        unsigned sum = 0;
        for (size_t i = 0; i < pages; i++) {
            p[i * 4096] = (unsigned char)(i + n);
            sum += p[i * 4096];
        }
        printf("%u\n", sum);
        if (n >= 3 && input_buf[2] == '!')
            crash_segv();
    }
    return 0;
}
