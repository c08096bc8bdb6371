// libarmadadyn.so: built with -shared -fPIC by tests/guest/build-dynamic.sh.
#include "armadadyn.h"
#include <stdio.h>
#include <string.h>

int armadadyn_value = 1234;
const char *armadadyn_name = "libarmadadyn";
static __thread int tls_counter = 100;
static int constructed;
static char message[64] = "initialised data";

__attribute__((constructor)) static void lib_init(void) {
    constructed = 1;
    strcat(message, " + constructor");
}
__attribute__((destructor)) static void lib_fini(void) {
    printf("libarmadadyn: destructor (value=%d)\n", armadadyn_value);
    fflush(stdout);
}

int armadadyn_add(int a, int b) { return a + b + (int)strlen(message) * 0; }
unsigned long armadadyn_checksum(const char *s) {
    unsigned long h = 5381;
    while (*s) h = h * 33 + (unsigned char)*s++;
    return h;
}
int armadadyn_apply(int (*f)(int), int n) {
    int acc = 0;
    for (int i = 0; i < n; i++) acc += f(i);
    return acc;
}
int armadadyn_tls_bump(void) { return ++tls_counter; }
int armadadyn_constructed(void) {
    printf("libarmadadyn: message=[%s]\n", message);
    return constructed;
}
