// Integer division edge cases. AArch64 SDIV/UDIV never trap: x/0 == 0 and INT_MIN/-1 == INT_MIN.
// (Undefined in C, so operands come through volatile to force the hardware instruction.)
#include <stdio.h>
#include <stdint.h>
#include <limits.h>

int main(void)
{
    volatile int32_t imin = INT32_MIN, m1 = -1, zero = 0, seven = 7, neg7 = -7, two = 2;
    volatile int64_t lmin = INT64_MIN, lm1 = -1, lzero = 0, l7 = 7;
    volatile uint32_t u7 = 7, uzero = 0, umax = UINT32_MAX;
    volatile uint64_t ul7 = 7, ulzero = 0, ulmax = UINT64_MAX;

    printf("INT32_MIN / -1 = %d\n", imin / m1);
    printf("INT32_MIN %% -1 = %d\n", imin % m1);
    printf("INT64_MIN / -1 = %lld\n", (long long)(lmin / lm1));
    printf("INT64_MIN %% -1 = %lld\n", (long long)(lmin % lm1));
    printf("7 / 0 = %d\n", seven / zero);
    printf("7 %% 0 = %d\n", seven % zero);
    printf("-7 / 0 = %d\n", neg7 / zero);
    printf("INT32_MIN / 0 = %d\n", imin / zero);
    printf("7L / 0 = %lld, 7L %% 0 = %lld\n", (long long)(l7 / lzero), (long long)(l7 % lzero));
    printf("7u / 0 = %u, 7u %% 0 = %u, UINT32_MAX / 0 = %u\n", u7 / uzero, u7 % uzero, umax / uzero);
    printf("7ul / 0 = %llu, UINT64_MAX / 0 = %llu, UINT64_MAX %% 0 = %llu\n", (unsigned long long)(ul7 / ulzero),
           (unsigned long long)(ulmax / ulzero), (unsigned long long)(ulmax % ulzero));
    printf("-7 / 2 = %d, -7 %% 2 = %d, 7 / -2 = %d, 7 %% -2 = %d\n", neg7 / two, neg7 % two, seven / -two, seven % -two);
    printf("UINT32_MAX / 7 = %u, UINT64_MAX / 7 = %llu\n", umax / u7, (unsigned long long)(ulmax / ul7));
    // Division by constants (compiled to multiply-high sequences) vs. by variables.
    long long bad = 0, sum = 0;
    for (int64_t i = -100000; i <= 100000; i += 37) {
        volatile int64_t d3 = 3, d10 = 10, d1000 = 1000, d7 = 7;
        if (i / 3 != i / d3 || i % 10 != i % d10 || i / 1000 != i / d1000 || i % 7 != i % d7) bad++;
        sum += i / 3 + i % 10 + i / 1000 + i % 7;
        uint32_t u = (uint32_t)(i * 2654435761u);
        volatile uint32_t v3 = 3, v10 = 10;
        if (u / 3 != u / v3 || u % 10 != u % v10) bad++;
        sum += u / 3 + u % 10;
    }
    printf("const-vs-variable divisions: bad=%lld sum=%lld\n", bad, sum);
    // Float -> int conversions saturate on AArch64 (FCVTZS), NaN -> 0. Done via inline asm.
    volatile double dv[] = {1e20, -1e20, 3.99, -3.99, __builtin_nan(""), 2147483648.0, -2147483649.0};
    for (int i = 0; i < 7; i++) {
        int32_t r32; int64_t r64; uint32_t ru32; uint64_t ru64;
        double d = dv[i];
        __asm__("fcvtzs %w0, %d1" : "=r"(r32) : "w"(d));
        __asm__("fcvtzs %0, %d1" : "=r"(r64) : "w"(d));
        __asm__("fcvtzu %w0, %d1" : "=r"(ru32) : "w"(d));
        __asm__("fcvtzu %0, %d1" : "=r"(ru64) : "w"(d));
        printf("fcvtz(%g): s32=%d s64=%lld u32=%u u64=%llu\n", d, r32, (long long)r64, ru32, (unsigned long long)ru64);
    }
    return 0;
}
