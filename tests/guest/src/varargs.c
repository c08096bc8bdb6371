// Variadic functions: mixed int/long/double/pointer arguments, more than 8 (stack-passed)
// arguments, va_copy, vsnprintf wrappers, float promotion.
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <stdint.h>

static long sum_ints(int count, ...)
{
    va_list ap;
    va_start(ap, count);
    long s = 0;
    for (int i = 0; i < count; i++) s += va_arg(ap, int);
    va_end(ap);
    return s;
}

static double mixed(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    double acc = 0;
    for (const char *p = fmt; *p; p++) {
        switch (*p) {
        case 'i': acc += va_arg(ap, int); break;
        case 'l': acc += (double)va_arg(ap, long long); break;
        case 'd': acc += va_arg(ap, double); break;
        case 's': acc += (double)strlen(va_arg(ap, const char *)); break;
        case 'c': acc += va_arg(ap, int) * 0.5; break;
        }
    }
    va_end(ap);
    // Second pass through the copy: print the values.
    printf("mixed(%s):", fmt);
    for (const char *p = fmt; *p; p++) {
        switch (*p) {
        case 'i': printf(" i%d", va_arg(ap2, int)); break;
        case 'l': printf(" l%lld", va_arg(ap2, long long)); break;
        case 'd': printf(" d%.17g", va_arg(ap2, double)); break;
        case 's': printf(" s'%s'", va_arg(ap2, const char *)); break;
        case 'c': printf(" c%c", (char)va_arg(ap2, int)); break;
        }
    }
    va_end(ap2);
    printf(" => %.17g\n", acc);
    return acc;
}

static int my_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int my_printf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("<%d>%s", n, buf);
    return n;
}

// Many non-variadic args: the 9th+ integer and 9th+ FP args go on the stack.
__attribute__((noinline)) static double many(int a, double b, long c, float d, int e, double f, short g, double h, long i,
                                             double j, int k, double l, char m, double n, long o, double p, int q, float r,
                                             double s, unsigned long long t)
{
    return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p + q + r + s + (double)t;
}

struct big { long x[5]; };
struct hfa { double a, b, c; };
static long struct_va(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    long s = 0;
    for (int i = 0; i < n; i++) {
        struct big b = va_arg(ap, struct big);
        struct hfa h = va_arg(ap, struct hfa);
        s += b.x[0] + b.x[4] + (long)(h.a * 10 + h.b * 100 + h.c * 1000);
    }
    va_end(ap);
    return s;
}

int main(void)
{
    printf("sum0=%ld\n", sum_ints(0));
    printf("sum3=%ld\n", sum_ints(3, 1, 2, 3));
    printf("sum20=%ld\n", sum_ints(20, 1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 17, -18, 19, 1000000));
    mixed("idlsc", 7, 2.5, 1234567890123LL, "hello", 'A');
    mixed("dddddddddddi", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.5, 10.25, 11.125, 99);
    mixed("iiiiiiiiiiid", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0.001);
    float f = 1.25f;
    mixed("dd", f, (double)-f);  // float promoted to double
    my_printf("%s=%d, %.3f, %c, %lx, %5s|\n", "x", 42, 3.14159, 'z', 0xabcdefUL, "ab");
    my_printf("%d %d %d %d %d %d %d %d %d %d %f %f %f %f %f %f %f %f %f\n", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1.5, 2.5, 3.5,
              4.5, 5.5, 6.5, 7.5, 8.5, 9.5);
    printf("many=%.17g\n", many(1, 2.5, 3, 4.25f, 5, 6.5, 7, 8.5, 9, 10.5, 11, 12.5, 13, 14.5, 15, 16.5, 17, 18.25f, 19.5, 20));
    struct big b1 = {{1, 2, 3, 4, 5}}, b2 = {{10, 20, 30, 40, 50}};
    struct hfa h1 = {0.5, 0.25, 0.125}, h2 = {1, 2, 3};
    printf("struct_va=%ld\n", struct_va(2, b1, h1, b2, h2));
    return 0;
}
