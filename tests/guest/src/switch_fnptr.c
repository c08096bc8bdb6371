// Dense switch (jump table), sparse switch, function-pointer tables, "vtables", computed goto.
#include <stdio.h>
#include <stdint.h>

__attribute__((noinline)) static int dense(int x)
{
    switch (x) {
    case 0: return 11;
    case 1: return 22;
    case 2: return x * 7;
    case 3: return 44;
    case 4: return -5;
    case 5: return 66;
    case 6: return x ^ 0x55;
    case 7: return 88;
    case 8: return 99;
    case 9: return 1000;
    case 10: return 1;
    case 11: return 2;
    case 12: return 3;
    case 13: return 4;
    case 14: return x << 3;
    case 15: return 6;
    default: return -1;
    }
}

__attribute__((noinline)) static const char *sparse(long x)
{
    switch (x) {
    case -1000000: return "neg-million";
    case -1: return "minus-one";
    case 0: return "zero";
    case 17: return "seventeen";
    case 1000: return "thousand";
    case 65536: return "2^16";
    case 1L << 40: return "2^40";
    case 123456789: return "digits";
    default: return "other";
    }
}

__attribute__((noinline)) static int charclass(unsigned char c)
{
    switch (c) {
    case 'a' ... 'z': return 1;
    case 'A' ... 'Z': return 2;
    case '0' ... '9': return 3;
    case ' ': case '\t': case '\n': return 4;
    case '!': case '?': case '.': case ',': return 5;
    default: return 0;
    }
}

static long add(long a, long b) { return a + b; }
static long sub(long a, long b) { return a - b; }
static long mul(long a, long b) { return a * b; }
static long divi(long a, long b) { return b ? a / b : 0; }
static long mod(long a, long b) { return b ? a % b : 0; }
static long band(long a, long b) { return a & b; }
static long bor(long a, long b) { return a | b; }
static long bxor(long a, long b) { return a ^ b; }

struct shape;
struct shape_ops { double (*area)(const struct shape *); const char *(*name)(void); };
struct shape { const struct shape_ops *ops; double a, b; };
static double rect_area(const struct shape *s) { return s->a * s->b; }
static double tri_area(const struct shape *s) { return 0.5 * s->a * s->b; }
static double circ_area(const struct shape *s) { return 3.141592653589793 * s->a * s->a; }
static const char *rect_name(void) { return "rect"; }
static const char *tri_name(void) { return "tri"; }
static const char *circ_name(void) { return "circle"; }
static const struct shape_ops rect_ops = {rect_area, rect_name}, tri_ops = {tri_area, tri_name}, circ_ops = {circ_area, circ_name};

static int interp(const unsigned char *code, int n)
{
    static void *labels[] = {&&op_push1, &&op_dup, &&op_add, &&op_mul, &&op_neg, &&op_end};
    int stack[64], sp = 0, pc = 0;
#define NEXT goto *labels[code[pc++]]
    NEXT;
op_push1: stack[sp++] = 1; NEXT;
op_dup: stack[sp] = stack[sp - 1]; sp++; NEXT;
op_add: sp--; stack[sp - 1] += stack[sp]; NEXT;
op_mul: sp--; stack[sp - 1] *= stack[sp]; NEXT;
op_neg: stack[sp - 1] = -stack[sp - 1]; NEXT;
op_end:
    (void)n;
    return sp ? stack[sp - 1] : 0;
}

int main(void)
{
    long sum = 0;
    for (int i = -3; i < 20; i++) {
        printf("dense(%d)=%d ", i, dense(i));
        sum += dense(i);
    }
    printf("\nsum=%ld\n", sum);
    long sp[] = {-1000000, -1, 0, 17, 1000, 65536, 1L << 40, 123456789, 5, -2};
    for (int i = 0; i < 10; i++) printf("sparse(%ld)=%s\n", sp[i], sparse(sp[i]));
    int classes[6] = {0};
    const char *text = "Hello, World! 123 testing\tswitch tables?\n";
    for (const char *p = text; *p; p++) classes[charclass((unsigned char)*p)]++;
    printf("classes: other=%d lower=%d upper=%d digit=%d space=%d punct=%d\n", classes[0], classes[1], classes[2], classes[3], classes[4], classes[5]);

    long (*ops[])(long, long) = {add, sub, mul, divi, mod, band, bor, bxor};
    const char *names[] = {"add", "sub", "mul", "div", "mod", "and", "or", "xor"};
    long acc = 1;
    for (int i = 0; i < 64; i++) {
        long r = ops[i % 8](acc, i + 3);
        if (i < 8) printf("%s(%ld,%d)=%ld\n", names[i], acc, i + 3, r);
        acc = r % 1000003 + i;
    }
    printf("fnptr acc=%ld\n", acc);

    struct shape shapes[] = {{&rect_ops, 3, 4}, {&tri_ops, 3, 4}, {&circ_ops, 2, 0}, {&rect_ops, 0.5, 0.25}};
    double total = 0;
    for (int i = 0; i < 4; i++) {
        double ar = shapes[i].ops->area(&shapes[i]);
        printf("%s area=%.17g\n", shapes[i].ops->name(), ar);
        total += ar;
    }
    printf("total area=%.17g\n", total);
    // ((1+1)*(1+1)+1) negated -> -5 ; then dup/mul -> 25
    unsigned char prog[] = {0, 0, 2, 1, 3, 0, 2, 4, 1, 3, 5};
    printf("computed goto result=%d\n", interp(prog, sizeof prog));
    return 0;
}
