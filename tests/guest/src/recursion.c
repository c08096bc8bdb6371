// Recursion: fib, ackermann, mutual recursion, deep recursion, tower of hanoi, permutations.
#include <stdio.h>
#include <stdint.h>

__attribute__((noinline)) static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) static long ack(long m, long n)
{
    if (m == 0) return n + 1;
    if (n == 0) return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}
static int is_odd(unsigned n);
__attribute__((noinline)) static int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
__attribute__((noinline)) static int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

__attribute__((noinline)) static uint64_t deep(int n, uint64_t acc)
{
    volatile char frame[48];
    frame[n % 48] = (char)n;
    if (n == 0) return acc;
    uint64_t r = deep(n - 1, acc * 31 + (uint64_t)n);
    return r + (uint64_t)frame[n % 48];
}

static long moves;
static void hanoi(int n, int from, int to, int via)
{
    if (!n) return;
    hanoi(n - 1, from, via, to);
    moves++;
    hanoi(n - 1, via, to, from);
}

static int perm_count;
static uint64_t perm_hash;
static void permute(char *s, int k, int n)
{
    if (k == n) {
        perm_count++;
        for (int i = 0; i < n; i++) perm_hash = perm_hash * 131 + (unsigned char)s[i];
        return;
    }
    for (int i = k; i < n; i++) {
        char t = s[k]; s[k] = s[i]; s[i] = t;
        permute(s, k + 1, n);
        t = s[k]; s[k] = s[i]; s[i] = t;
    }
}

static double dfact(int n) { return n <= 1 ? 1.0 : n * dfact(n - 1); }

int main(void)
{
    for (int i = 0; i <= 27; i += 3) printf("fib(%d)=%ld\n", i, fib(i));
    for (int m = 0; m <= 3; m++)
        for (int n = 0; n <= 4; n++) printf("ack(%d,%d)=%ld%s", m, n, ack(m, n), n == 4 ? "\n" : " ");
    printf("ack(2,100)=%ld ack(3,6)=%ld\n", ack(2, 100), ack(3, 6));
    printf("is_even(10001)=%d is_odd(7777)=%d\n", is_even(10001), is_odd(7777));
    printf("deep(20000)=%llu\n", (unsigned long long)deep(20000, 1));
    hanoi(18, 1, 3, 2);
    printf("hanoi(18) moves=%ld\n", moves);
    char s[] = "abcdefgh";
    permute(s, 0, 8);
    printf("permutations=%d hash=%016llx\n", perm_count, (unsigned long long)perm_hash);
    printf("170!=%.17g\n", dfact(170));
    return 0;
}
