// abort(): SIGABRT (status 134). glibc raises it with tgkill on itself.
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    printf("before abort\n");
    fflush(stdout);
    abort();
}
