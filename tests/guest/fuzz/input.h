/* The fuzz targets' input: the file named by argv[1] (AFL's @@), or stdin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char input_buf[1 << 16];

/* Reads the whole input; returns its length. */
static size_t read_input(int argc, char **argv) {
    FILE *f = stdin;
    if (argc > 1) {
        f = fopen(argv[1], "rb");
        if (!f) {
            perror(argv[1]);
            exit(2);
        }
    }
    size_t n = fread(input_buf, 1, sizeof input_buf, f);
    if (f != stdin)
        fclose(f);
    return n;
}

/* A crash the fuzzer must find: a write through a null pointer (SIGSEGV). The pointer is
 * read from a volatile, so the compiler cannot prove it null and drop the path. */
static int *volatile null_ptr;
__attribute__((noinline)) static void crash_segv(void) {
    *null_ptr = 1;
}
