// The tight integer loop of the design notes' GPU measurements: MUL, EOR (shifted), ADD, ADD,
// CMP, B.NE, run argv[1] times (default 100000000). Prints the result so nothing is dead code.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000ul;
    unsigned long x = 0x9e3779b97f4a7c15ul, y = 3, i = 0;
    if (n == 0) n = 1;
    __asm__ volatile("1:\n\t"
                     "mul %[x], %[x], %[y]\n\t"
                     "eor %[x], %[x], %[x], lsr #7\n\t"
                     "add %[x], %[x], #1\n\t"
                     "add %[i], %[i], #1\n\t"
                     "cmp %[i], %[n]\n\t"
                     "b.ne 1b\n\t"
                     : [x] "+r"(x), [i] "+r"(i)
                     : [y] "r"(y), [n] "r"(n));
    printf("%lu iterations, x=%016lx\n", i, x);
    return 0;
}
