// Minimal smoke test: one line to stdout, exit status 0.
// armada-variants: pie=-static-pie
#include <stdio.h>

int main(void)
{
    puts("Hello, world!");
    return 0;
}
