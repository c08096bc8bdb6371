// Uses libarmadadyn.so, a shared library of our own, found through the executable's
// rpath ($ORIGIN, or an absolute directory for the sysroot tests).
#include "armadadyn.h"
#include <stdio.h>

static int square(int x) { return x * x; }

int main(int argc, char **argv) {
    (void)argv;
    printf("constructed=%d\n", armadadyn_constructed());
    printf("name=%s value=%d\n", armadadyn_name, armadadyn_value);
    armadadyn_value += argc; // the program writes the library's data (copy relocation)
    printf("add=%d checksum=%lu\n", armadadyn_add(40, 2), armadadyn_checksum("armada dynamic"));
    printf("apply(square, 10)=%d\n", armadadyn_apply(square, 10));
    int t = 0;
    for (int i = 0; i < 5; i++) t = armadadyn_tls_bump();
    printf("tls counter=%d\n", t);
    printf("value now=%d\n", armadadyn_value);
    return 0;
}
