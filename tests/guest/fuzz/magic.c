/* Planted bug behind an 8-byte magic value compared one byte at a time: random inputs never
 * reach it (2^-64), coverage guidance reaches it one byte at a time. */
#include "input.h"

/* noinline: each byte's compare stays its own branch (no merged word compare). */
__attribute__((noinline)) static int at(const unsigned char *d, size_t i, unsigned char c) {
    return d[i] == c;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    const unsigned char *d = input_buf;
    if (n < 8) {
        puts("short");
        return 0;
    }
    if (at(d, 0, 'A'))
        if (at(d, 1, 'R'))
            if (at(d, 2, 'M'))
                if (at(d, 3, '6'))
                    if (at(d, 4, '4'))
                        if (at(d, 5, 'F'))
                            if (at(d, 6, 'U'))
                                if (at(d, 7, 'Z'))
                                    crash_segv();
    puts("ok");
    return 0;
}
