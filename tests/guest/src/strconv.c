// strtol/strtoul/strtoll/strtod/strtof/atof/atoi: bases, signs, overflow (ERANGE), endptr, round-trips.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <math.h>

int main(void)
{
    const char *ints[] = {"0", "42", "-42", "+17", "  \t 99xyz", "0x1F", "0X7fffffff", "017", "0b101", "z", "",
                          "2147483647", "2147483648", "-9223372036854775808", "9223372036854775808",
                          "-9223372036854775809", "18446744073709551615", "18446744073709551616", "-1", "12abc", "0x",
                          "   -0", "1e5"};
    int bases[] = {0, 10, 16, 8, 2, 36};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
            char *end;
            errno = 0;
            long v = strtol(ints[i], &end, bases[b]);
            int e1 = errno;
            errno = 0;
            unsigned long u = strtoul(ints[i], NULL, bases[b]);
            int e2 = errno;
            printf("[%s] base %d: strtol=%ld end=%ld%s strtoul=%lu%s\n", ints[i], bases[b], v, (long)(end - ints[i]),
                   e1 == ERANGE ? " ERANGE" : e1 == EINVAL ? " EINVAL" : "", u, e2 == ERANGE ? " ERANGE" : "");
        }
    }
    printf("atoi: %d %d %d %ld %lld\n", atoi("123"), atoi("-77x"), atoi("junk"), atol("9999999999"), atoll("-123456789012"));

    const char *dbls[] = {"0", "-0", "1", "3.14159", "  2.5e10", "1e-320", "4.9e-324", "2e-324", "1.7976931348623157e308",
                          "1.8e308", "-1e309", "inf", "-Infinity", "nan", "NAN(123)", "0x1.8p1", "0x1p-1074", ".5", "5.",
                          "1e", "1e+", "+.e1", "123abc", "0.1", "0.30000000000000004", "123456789012345678901234567890",
                          "2.2250738585072011e-308", "9007199254740993", "1.00000000000000011102230246251565404236316680908203125"};
    for (size_t i = 0; i < sizeof dbls / sizeof dbls[0]; i++) {
        char *end;
        errno = 0;
        double d = strtod(dbls[i], &end);
        int e = errno;
        errno = 0;
        float f = strtof(dbls[i], NULL);
        int ef = errno;
        long double ld = strtold(dbls[i], NULL);
        printf("strtod[%s] = %.17g (%a) end=%ld%s strtof=%.9g%s strtold=%.21Lg atof=%.17g\n", dbls[i], d, d,
               (long)(end - dbls[i]), e == ERANGE ? " ERANGE" : "", (double)f, ef == ERANGE ? " ERANGE" : "", ld, atof(dbls[i]));
    }
    // Round-trip many doubles through %.17g and %a.
    uint64_t state = 88172645463325252ULL;
    int bad17 = 0, bada = 0, badshort = 0;
    for (int i = 0; i < 6000; i++) {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17;
        uint64_t bitsv = state;
        double d;
        memcpy(&d, &bitsv, sizeof d);
        if (isnan(d) || isinf(d)) continue;
        char buf[64];
        snprintf(buf, sizeof buf, "%.17g", d);
        if (strtod(buf, NULL) != d) bad17++;
        snprintf(buf, sizeof buf, "%a", d);
        if (strtod(buf, NULL) != d) bada++;
        snprintf(buf, sizeof buf, "%.15g", d);
        double back = strtod(buf, NULL);
        snprintf(buf + 32, 32, "%.15g", back);
        if (strcmp(buf, buf + 32) != 0) badshort++;
    }
    printf("round trips: bad17=%d bada=%d badshort=%d\n", bad17, bada, badshort);
    // Integer round trips.
    int badint = 0;
    for (int64_t i = -5000000; i < 5000000; i += 9973) {
        char buf[32];
        int64_t v = i * 1844674407370LL;
        snprintf(buf, sizeof buf, "%lld", (long long)v);
        if (strtoll(buf, NULL, 10) != v) badint++;
        snprintf(buf, sizeof buf, "%llx", (unsigned long long)v);
        if ((int64_t)strtoull(buf, NULL, 16) != v) badint++;
    }
    printf("int round trips bad=%d\n", badint);
    return 0;
}
