// Pages unmapped and mapped again at the same address between two stops for the host, the
// mapping's bytes different each time: a translation a GPU kernel kept from an earlier
// launch (the CUDA kernel's second-level cache, `Params::tlb2`) would show the old bytes.
// ROUNDS: argv[1] (default 40). Prints a sum over what each mapping held when it was read.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 40;
    char *at = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) {
        puts("mmap failed");
        return 1;
    }
    unsigned long long sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (int k = 0; k < 4; k++) {
            // a fresh page reads as zeros; the last round's bytes are gone
            sum = sum * 3 + (unsigned char)at[k * 4096 + 100];
            at[k * 4096 + 100] = (char)(r * 7 + k + 1);
            sum += (unsigned char)at[k * 4096 + 100];
        }
        // a syscall the host answers (a stop), then the pages replaced
        sum += getppid() > 0;
        munmap(at, 4 * 4096);
        char *again = mmap(at, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (again != at) {
            puts("mmap again failed");
            return 1;
        }
        if (r % 3 == 0) {
            // and a read-only mapping there now and then
            munmap(at, 4096);
            if (mmap(at, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != at) {
                puts("mmap read-only failed");
                return 1;
            }
            sum += (unsigned char)at[100];
            munmap(at, 4096);
            if (mmap(at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != at) {
                puts("mmap failed");
                return 1;
            }
        }
    }
    printf("%llu\n", sum);
    return 0;
}
