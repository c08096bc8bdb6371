// Thread-local storage in the main thread (TPIDR_EL0 based): __thread variables with and
// without initializers, TLS arrays, errno (itself TLS), addresses consistent across calls.
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static __thread int counter = 41;
static __thread long zeroed;
static __thread char name[32] = "initial-tls";
__thread double tls_array[100];
static _Thread_local struct { int a; short b; char c[5]; } tstruct = {7, -3, "abcd"};

__attribute__((noinline)) static int *counter_addr(void) { return &counter; }
__attribute__((noinline)) static void bump(void) { counter++; zeroed += 10; }

int main(void)
{
    printf("initial: counter=%d zeroed=%ld name=%s tstruct=%d/%d/%s\n", counter, zeroed, name, tstruct.a, tstruct.b, tstruct.c);
    for (int i = 0; i < 5; i++) bump();
    printf("after bump: counter=%d zeroed=%ld same_addr=%d\n", counter, zeroed, counter_addr() == &counter);
    strcpy(name, "changed");
    for (int i = 0; i < 100; i++) tls_array[i] = i * 0.5;
    double s = 0;
    for (int i = 0; i < 100; i++) s += tls_array[i];
    printf("name=%s array sum=%g\n", name, s);
    uintptr_t tp;
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    printf("tpidr nonzero=%d aligned16=%d counter within 64K of tp=%d\n", tp != 0, (tp & 15) == 0,
           (uintptr_t)&counter - tp < 65536 || tp - (uintptr_t)&counter < 65536);
    errno = 0;
    int r = close(-1);
    printf("close(-1)=%d errno=%d (EBADF=%d)\n", r, errno, EBADF);
    errno = 0;
    r = (int)write(1, "", 0);
    printf("write(1,\"\",0)=%d errno=%d\n", r, errno);
    return 0;
}
