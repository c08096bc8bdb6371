/* An input that starts with "LOOP" (byte by byte) spins forever: a hang the fuzzer must
 * report (the per-exec instruction limit), not wait on. Other inputs exit. */
#include "input.h"

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    volatile unsigned long spins = 0;
    if (n >= 4 && input_buf[0] == 'L')
        if (input_buf[1] == 'O')
            if (input_buf[2] == 'O')
                if (input_buf[3] == 'P')
                    for (;;)
                        spins++;
    puts("ok");
    return 0;
}
