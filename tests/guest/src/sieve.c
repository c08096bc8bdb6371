// Sieve of Eratosthenes up to N (argv[1], default 2000000): count, sum, last primes, twin primes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    if (n < 2) n = 2;
    unsigned char *comp = calloc(n + 1, 1);
    for (long i = 2; i * i <= n; i++)
        if (!comp[i])
            for (long j = i * i; j <= n; j += i) comp[j] = 1;
    long count = 0, twins = 0, last[5] = {0};
    unsigned long long sum = 0;
    for (long i = 2; i <= n; i++)
        if (!comp[i]) {
            count++;
            sum += (unsigned long long)i;
            memmove(last, last + 1, 4 * sizeof last[0]);
            last[4] = i;
            if (i >= 5 && !comp[i - 2]) twins++;
        }
    printf("primes<=%ld: count=%ld sum=%llu twins=%ld last=%ld %ld %ld %ld %ld\n", n, count, sum, twins, last[0], last[1],
           last[2], last[3], last[4]);
    // Bit-packed sieve of odd numbers as a second algorithm.
    long m = (n - 1) / 2;
    unsigned long *bits = calloc(m / 64 + 1, sizeof *bits);
    for (long i = 1; (2 * i + 1) * (2 * i + 1) <= n; i++)
        if (!(bits[i / 64] >> (i % 64) & 1))
            for (long j = (2 * i + 1) * (2 * i + 1) / 2; j <= m; j += 2 * i + 1) bits[j / 64] |= 1UL << (j % 64);
    long count2 = 1;
    for (long i = 1; i <= m; i++) count2 += !(bits[i / 64] >> (i % 64) & 1);
    printf("bit sieve count=%ld %s\n", count2, count2 == count ? "agrees" : "DISAGREES");
    free(comp);
    free(bits);
    return count2 != count;
}
