// __builtin_trap(): on AArch64 this is BRK #0x3e8 -> SIGTRAP (status 133).
#include <stdio.h>

int main(void)
{
    printf("before trap\n");
    fflush(stdout);
    __builtin_trap();
}
