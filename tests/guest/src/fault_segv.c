// NULL store: expect SIGSEGV (status 139). Output before the fault is flushed.
#include <stdio.h>

int main(void)
{
    printf("before NULL store\n");
    fflush(stdout);
    *(volatile int *)0 = 1;
    printf("after NULL store (should not be printed)\n");
    return 0;
}
