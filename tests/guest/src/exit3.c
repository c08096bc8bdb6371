// exit(3) after buffered output: stdout must be flushed by exit().
#include <stdio.h>
#include <stdlib.h>

static void bye(void) { puts("atexit handler ran"); }

int main(void)
{
    atexit(bye);
    printf("about to exit(3)\n");
    exit(3);
}
