/* Never reads its input: `armada fuzz --snapshot-at input` must say so. */
#include <stdio.h>

int main(void) {
    puts("hello");
    return 0;
}
