// unsigned/signed __int128 arithmetic: mul, div, mod (libgcc __udivti3/__divti3), shifts, compare;
// printed via manual decimal/hex conversion.
#include <stdio.h>
#include <stdint.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

static void u128_str(u128 v, char *out)
{
    char tmp[64];
    int n = 0;
    do { tmp[n++] = (char)('0' + (int)(v % 10)); v /= 10; } while (v);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}
static void i128_str(i128 v, char *out)
{
    if (v < 0) { *out++ = '-'; u128_str((u128)0 - (u128)v, out); }
    else u128_str((u128)v, out);
}
static void put_u(const char *label, u128 v)
{
    char s[64];
    u128_str(v, s);
    printf("%s = %s (0x%016llx%016llx)\n", label, s, (unsigned long long)(v >> 64), (unsigned long long)v);
}
static void put_i(const char *label, i128 v)
{
    char s[64];
    i128_str(v, s);
    printf("%s = %s\n", label, s);
}

static u128 isqrt(u128 x)
{
    u128 r = 0, bit = (u128)1 << 126;
    while (bit > x) bit >>= 2;
    while (bit) {
        if (x >= r + bit) { x -= r + bit; r = (r >> 1) + bit; }
        else r >>= 1;
        bit >>= 2;
    }
    return r;
}

int main(void)
{
    volatile uint64_t a64 = 0xfedcba9876543210ULL, b64 = 0x0123456789abcdefULL;
    u128 a = a64, b = b64;
    u128 p = a * b;
    put_u("a*b", p);
    put_u("(a*b)/b", p / b);
    put_u("(a*b)%a", p % a);
    put_u("max", ~(u128)0);
    put_u("max/3", ~(u128)0 / 3);
    put_u("max%1000000007", ~(u128)0 % 1000000007u);
    put_u("max/(2^64+1)", ~(u128)0 / (((u128)1 << 64) + 1));
    put_u("2^100", (u128)1 << 100);
    put_u("2^127>>61", ((u128)1 << 127) >> 61);
    put_u("isqrt(2^126)", isqrt((u128)1 << 126));
    put_u("isqrt(max)", isqrt(~(u128)0));

    i128 s = -(i128)a * (i128)b;
    put_i("-(a*b)", s);
    put_i("-(a*b)/7", s / 7);
    put_i("-(a*b)%7", s % 7);
    put_i("-(a*b)>>3 (arith)", s >> 3);
    put_i("min", (i128)((u128)1 << 127));
    put_i("min/-3", (i128)((u128)1 << 127) / -3);
    put_i("-12345678901234567890123 % 1000", ((i128)-1234567890123456789LL * 10000 - 7890123) % 1000);
    printf("compare: %d %d %d %d\n", s < 0, (u128)s > a, (i128)a > s, (u128)1 << 64 > a);

    // Factorials up to 34! fit in u128.
    u128 f = 1;
    for (int i = 1; i <= 34; i++) {
        f *= (u128)i;
        if (i % 6 == 0 || i == 34) {
            char label[16];
            snprintf(label, sizeof label, "%d!", i);
            put_u(label, f);
        }
    }
    // Fibonacci up to F(186) (largest fitting in u128).
    u128 x = 0, y = 1;
    for (int i = 0; i < 186; i++) { u128 t = x + y; x = y; y = t; }
    put_u("F(186)", x);

    // Mixed shifts by variable amounts.
    uint64_t acc = 0;
    u128 v = ((u128)0x0123456789abcdefULL << 64) | 0xfedcba9876543210ULL;
    for (volatile int sh = 0; sh < 128; sh++) {
        u128 l = v << sh, r = v >> sh;
        i128 ar = (i128)v >> sh;
        acc = acc * 31 + (uint64_t)(l >> 64) + (uint64_t)l * 3 + (uint64_t)(r >> 32) + (uint64_t)(ar >> 60);
    }
    printf("shift hash = %016llx\n", (unsigned long long)acc);

    // Modular exponentiation with 128-bit intermediates (64-bit modulus).
    uint64_t m = 0xffffffffffffffc5ULL, base = 0x123456789ULL, result = 1;
    for (volatile uint64_t e = 0xdeadbeefcafeULL; e; e >>= 1) {
        if (e & 1) result = (uint64_t)(((u128)result * base) % m);
        base = (uint64_t)(((u128)base * base) % m);
    }
    printf("powmod = %llu\n", (unsigned long long)result);
    // Division by many divisors (exercises all paths of __udivti3).
    uint64_t dh = 0;
    u128 num = ~(u128)0 - 12345;
    for (int i = 1; i < 300; i++) {
        u128 d = ((u128)(i * 7919u) << (i % 100)) + (u128)i;
        u128 q = num / d, r = num % d;
        if (q * d + r != num || r >= d) printf("div identity broken at %d\n", i);
        dh = dh * 1000003 + (uint64_t)q + (uint64_t)(q >> 64) + (uint64_t)r;
    }
    printf("div hash = %016llx\n", (unsigned long long)dh);
    return 0;
}
