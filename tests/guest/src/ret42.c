// return 42 from main; stderr line too.
#include <stdio.h>

int main(void)
{
    printf("returning 42 from main\n");
    fprintf(stderr, "this line goes to stderr\n");
    return 42;
}
