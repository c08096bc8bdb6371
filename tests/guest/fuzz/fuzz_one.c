/* A libFuzzer-style target: LLVMFuzzerTestOneInput(data, size), and a main that reads the
 * input (argv[1] or stdin) and calls it once, so it also runs as a plain program. "BUG!"
 * (byte by byte) writes through a null pointer. Every call reads the instruction at its return
 * address, as libgcc's unwinder does when a C++ exception leaves the function: a harness's
 * caller is code, and reading it must not fault. */
#include "input.h"
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    volatile uint32_t at_return = *(const uint32_t *)__builtin_return_address(0);
    (void)at_return;
    if (size >= 4 && data[0] == 'B') {
        if (data[1] == 'U') {
            if (data[2] == 'G') {
                if (data[3] == '!')
                    crash_segv();
            }
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, input_buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    puts("done");
    return 0;
}
