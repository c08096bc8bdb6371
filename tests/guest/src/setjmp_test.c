// setjmp/longjmp: simple, nested, from deep recursion, value 0 -> 1, volatile locals; sigsetjmp.
#include <stdio.h>
#include <setjmp.h>
#include <string.h>

static jmp_buf env, env2;
static int depth_reached;

static void deep(int n)
{
    char pad[64];
    memset(pad, n, sizeof pad);
    depth_reached = n;
    if (n == 500) longjmp(env, n + pad[3]);
    if (n < 100000) deep(n + 1);
    __asm__ volatile("" ::"r"(pad) : "memory");
}

static void jump_zero(void) { longjmp(env2, 0); }

static int counter;
static void inner(jmp_buf *b) { counter++; if (counter < 5) longjmp(*b, counter); }

int main(void)
{
    volatile int v = 10;
    int r = setjmp(env);
    if (r == 0) {
        v = 20;
        deep(0);
        printf("not reached\n");
    } else {
        printf("longjmp from depth %d returned %d, v=%d\n", depth_reached, r, v);
    }

    r = setjmp(env2);
    if (r == 0) {
        jump_zero();
    }
    printf("longjmp(env, 0) made setjmp return %d\n", r);

    jmp_buf loop;
    volatile int iterations = 0;
    r = setjmp(loop);
    iterations++;
    if (r < 4) inner(&loop);
    printf("loop via longjmp: r=%d iterations=%d counter=%d\n", r, iterations, counter);

    // Nested setjmp buffers.
    jmp_buf outer, innerb;
    volatile int trace = 0;
    if (setjmp(outer) == 0) {
        trace = trace * 10 + 1;
        if (setjmp(innerb) == 0) {
            trace = trace * 10 + 2;
            longjmp(innerb, 7);
        } else {
            trace = trace * 10 + 3;
            longjmp(outer, 9);
        }
    } else {
        trace = trace * 10 + 4;
    }
    printf("nested trace=%d\n", trace);

    sigjmp_buf sj;
    volatile double dv = 1.5;
    if ((r = sigsetjmp(sj, 1)) == 0) {
        dv *= 3.0;
        siglongjmp(sj, 77);
    }
    printf("sigsetjmp returned %d dv=%g\n", r, dv);
    return 0;
}
