/* Planted bug behind a length field and a header: byte 0 must equal the length of the rest,
 * the rest must start with "HDR", and a record longer than 24 bytes whose last byte is '!'
 * aborts (SIGABRT). */
#include "input.h"

__attribute__((noinline)) static int header_ok(const unsigned char *p) {
    if (p[0] != 'H')
        return 0;
    if (p[1] != 'D')
        return 0;
    if (p[2] != 'R')
        return 0;
    return 1;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    if (n < 4) {
        puts("short");
        return 0;
    }
    size_t len = input_buf[0];
    if (len != n - 1) {
        printf("length %zu, have %zu\n", len, n - 1);
        return 1;
    }
    const unsigned char *p = input_buf + 1;
    if (!header_ok(p)) {
        puts("bad header");
        return 1;
    }
    if (len > 24) {
        if (p[len - 1] == '!')
            abort();
        puts("long record");
    }
    puts("ok");
    return 0;
}
