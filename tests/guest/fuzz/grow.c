/* Every run must start from the snapshot's memory, whatever the run before it on the same
 * lane did (persistent GPU lanes are taken back to their start between runs):
 * - a counter in .bss is 0 when the input has been read (the snapshot point), and
 * - the bytes of the input buffer just past the input are still zero;
 * a leak from an earlier run exits with status 3 or 4. An input that starts with 'G' also
 * maps and writes (input[1] % 8 + 1) * 64 pages of its own: many new pages, so the GPU
 * engine's page table grows while lanes are in flight. One that starts with 'S' runs each
 * byte through two chains of 256 compares (ascending, descending): "S\xff\x00" hits over
 * 512 distinct edges in one run (the CUDA kernel's list of hit map slots runs over). */
#include "input.h"
#include <sys/mman.h>

static int runs;

/* noinline: every compare is a branch of its own, with an edge of its own */
__attribute__((noinline)) static int eq(unsigned char a, int b) {
    return a == b;
}
#define T(k) if (eq(b, k)) return k;
#define T4(k) T(k) T((k) + 1) T((k) + 2) T((k) + 3)
#define T16(k) T4(k) T4((k) + 4) T4((k) + 8) T4((k) + 12)
#define T64(k) T16(k) T16((k) + 16) T16((k) + 32) T16((k) + 48)
#define D(k) if (eq(b, 255 - (k))) return k;
#define D4(k) D(k) D((k) + 1) D((k) + 2) D((k) + 3)
#define D16(k) D4(k) D4((k) + 4) D4((k) + 8) D4((k) + 12)
#define D64(k) D16(k) D16((k) + 16) D16((k) + 32) D16((k) + 48)
__attribute__((noinline)) static int up(unsigned char b) {
    T64(0) T64(64) T64(128) T64(192) return -1;
}
__attribute__((noinline)) static int down(unsigned char b) {
    D64(0) D64(64) D64(128) D64(192) return -1;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    if (runs++ != 0)
        return 3;
    for (size_t i = n; i < n + 512 && i < sizeof input_buf; i++)
        if (input_buf[i])
            return 4;
    if (n >= 2 && input_buf[0] == 'S') {
        int s = 0;
        for (size_t i = 1; i < n && i < 64; i++)
            s += up(input_buf[i]) ^ down(input_buf[i]);
        printf("%d\n", s);
    }
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
