// printf/snprintf formatting: integer widths, flags, floats (%e %f %g %a), strings, chars.
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <string.h>

static void ints(void)
{
    signed char sc[] = {0, 1, -1, 127, -128};
    short ss[] = {0, 1, -1, 32767, -32768};
    int is[] = {0, 1, -1, 42, -42, 123456789, INT_MAX, INT_MIN};
    long ls[] = {0, 1, -1, LONG_MAX, LONG_MIN, 1234567890123L};
    long long lls[] = {0, -1, LLONG_MAX, LLONG_MIN, 99999999999LL};
    unsigned long long ulls[] = {0, 1, ULLONG_MAX, 0x8000000000000000ULL, 0xdeadbeefcafebabeULL};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++)
        printf("hhd:[%hhd] hhu:[%hhu] hhx:[%hhx] 5hhd:[%5hhd]\n", sc[i], (unsigned char)sc[i], (unsigned char)sc[i], sc[i]);
    for (size_t i = 0; i < sizeof ss / sizeof *ss; i++)
        printf("hd:[%hd] hu:[%hu] ho:[%ho] hX:[%hX] -8hd:[%-8hd]\n", ss[i], (unsigned short)ss[i], (unsigned short)ss[i], (unsigned short)ss[i], ss[i]);
    for (size_t i = 0; i < sizeof is / sizeof *is; i++)
        printf("d:[%d] i:[%i] +d:[%+d] sp:[% d] 012d:[%012d] -12d:[%-12d] .5d:[%.5d] 8.3d:[%8.3d] u:[%u] x:[%x] #x:[%#x] #o:[%#o] X:[%X]\n",
               is[i], is[i], is[i], is[i], is[i], is[i], is[i], is[i], (unsigned)is[i], (unsigned)is[i], (unsigned)is[i], (unsigned)is[i], (unsigned)is[i]);
    for (size_t i = 0; i < sizeof ls / sizeof *ls; i++)
        printf("ld:[%ld] lx:[%lx] lo:[%lo] 25ld:[%25ld] -+25ld:[%-+25ld]\n", ls[i], (unsigned long)ls[i], (unsigned long)ls[i], ls[i], ls[i]);
    for (size_t i = 0; i < sizeof lls / sizeof *lls; i++)
        printf("lld:[%lld] llx:[%llx] #llX:[%#llX]\n", lls[i], (unsigned long long)lls[i], (unsigned long long)lls[i]);
    for (size_t i = 0; i < sizeof ulls / sizeof *ulls; i++)
        printf("llu:[%llu] 020llx:[%020llx] llo:[%llo]\n", ulls[i], ulls[i], ulls[i]);
    printf("jd:[%jd] ju:[%ju] zu:[%zu] zd:[%zd] td:[%td]\n", (intmax_t)INT64_MIN, (uintmax_t)UINT64_MAX, (size_t)12345, (ptrdiff_t)-77, (ptrdiff_t)-1234567);
    printf("star:[%*d] [%-*d] [%.*d] [%*.*d]\n", 10, 42, 10, 42, 6, 42, 9, 4, -7);
    printf("zero precision zero value:[%.0d] [%.0x] [%#.0o]\n", 0, 0u, 0u);
    printf("p NULL:[%p]\n", (void *)0);
    printf("percent:[%%] [%%%%]\n");
}

static void floats(void)
{
    double ds[] = {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 2.5, 3.14159265358979323846, 1e-300, 4.9406564584124654e-324,
                   2.2250738585072014e-308, 1.7976931348623157e308, 123456789.125, 1e21, 1e22, 1e23, 0.000123456,
                   6.02214076e23, -2.718281828459045, 1.0 / 3.0, 2.0 / 3.0, 9.995, 0.05, 1e15 + 0.3};
    for (size_t i = 0; i < sizeof ds / sizeof *ds; i++) {
        double d = ds[i];
        printf("f:[%f] .0f:[%.0f] .3f:[%.3f] 12.4f:[%12.4f] -12.2f:[%-12.2f] +f:[%+f]\n", d, d, d, d, d, d);
        printf("e:[%e] .0e:[%.0e] .10e:[%.10e] E:[%E] 15.3e:[%15.3e]\n", d, d, d, d, d);
        printf("g:[%g] .0g:[%.0g] .10g:[%.10g] .17g:[%.17g] #g:[%#g] G:[%G]\n", d, d, d, d, d, d);
        printf("a:[%a] A:[%A] .3a:[%.3a] .0a:[%.0a]\n", d, d, d, d);
    }
    double sp[] = {INFINITY, -INFINITY, NAN, -NAN};
    for (size_t i = 0; i < 4; i++)
        printf("special f:[%f] e:[%e] g:[%g] a:[%a] F:[%F] 8f:[%8f] -8f:[%-8f]|\n", sp[i], sp[i], sp[i], sp[i], sp[i], sp[i], sp[i]);
    float fs[] = {0.1f, 1.0f / 3.0f, 16777217.0f, FLT_MAX, FLT_MIN, 1e-45f};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
        printf("float as double: %.9g %a %e\n", fs[i], fs[i], fs[i]);
    long double lds[] = {1.0L, 0.1L, 1.0L / 3.0L, LDBL_MAX, LDBL_MIN, -12345.6789L};
    for (size_t i = 0; i < sizeof lds / sizeof *lds; i++)
        printf("long double: Lf:[%Lf] .30Lg:[%.30Lg] Le:[%Le] La:[%La]\n", lds[i], lds[i], lds[i], lds[i]);
}

static void strs(void)
{
    const char *s = "armada";
    printf("s:[%s] 10s:[%10s] -10s:[%-10s] .3s:[%.3s] 10.2s:[%10.2s] *s:[%*s]\n", s, s, s, s, s, 8, s);
    printf("c:[%c] 5c:[%5c] -5c:[%-5c] c0-9:[", 'x', 'y', 'z');
    for (int c = '0'; c <= '9'; c++)
        printf("%c", c);
    printf("]\n");
    printf("empty:[%s] [%5s]\n", "", "");

    char buf[16];
    int n = snprintf(buf, sizeof buf, "%s-%d-%s", "truncate", 1234567, "this string");
    printf("snprintf ret=%d buf=[%s]\n", n, buf);
    n = snprintf(NULL, 0, "%.20f", 1.0 / 7.0);
    printf("snprintf(NULL,0) ret=%d\n", n);
    n = snprintf(buf, 1, "abc");
    printf("snprintf size 1 ret=%d len=%zu\n", n, strlen(buf));
    char big[512];
    n = snprintf(big, sizeof big, "%0300d|%s", 7, "end");
    printf("big ret=%d tail=[%s] head=[%.5s]\n", n, big + 295, big);
    n = sprintf(big, "%d %s %c %f %e %g %x", -5, "str", 'q', 2.5, 2.5, 2.5, 255);
    printf("sprintf ret=%d [%s]\n", n, big);
}

int main(void)
{
    ints();
    floats();
    strs();
    return 0;
}
