// Compute-bound sort: LCG-generated array of N ints (argv[1], default 100000), sorted by a
// hand-written quicksort (with insertion sort for small ranges) and by qsort; prints checksums.
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void insertion(int64_t *a, long lo, long hi)
{
    for (long i = lo + 1; i <= hi; i++) {
        int64_t v = a[i];
        long j = i - 1;
        while (j >= lo && a[j] > v) { a[j + 1] = a[j]; j--; }
        a[j + 1] = v;
    }
}

static void quicksort(int64_t *a, long lo, long hi)
{
    while (hi - lo > 16) {
        long mid = lo + (hi - lo) / 2;
        // median of three
        if (a[mid] < a[lo]) { int64_t t = a[mid]; a[mid] = a[lo]; a[lo] = t; }
        if (a[hi] < a[lo]) { int64_t t = a[hi]; a[hi] = a[lo]; a[lo] = t; }
        if (a[hi] < a[mid]) { int64_t t = a[hi]; a[hi] = a[mid]; a[mid] = t; }
        int64_t pivot = a[mid];
        long i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) { int64_t t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
        }
        if (j - lo < hi - i) { quicksort(a, lo, j); lo = i; }
        else { quicksort(a, i, hi); hi = j; }
    }
    insertion(a, lo, hi);
}

static int cmp64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (n < 1) n = 1;
    int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (int64_t)(x >> 20) - (int64_t)(1LL << 43);
        if (i % 10 == 0) a[i] = (int64_t)(i % 97);  // some duplicates
    }
    memcpy(b, a, n * sizeof *a);
    quicksort(a, 0, n - 1);
    qsort(b, n, sizeof *b, cmp64);
    uint64_t h = 0;
    long unsorted = 0, differ = 0;
    for (long i = 0; i < n; i++) {
        if (i && a[i - 1] > a[i]) unsorted++;
        if (a[i] != b[i]) differ++;
        h = (h ^ (uint64_t)a[i]) * 0x100000001b3ULL;
    }
    printf("n=%ld min=%lld max=%lld median=%lld\n", n, (long long)a[0], (long long)a[n - 1], (long long)a[n / 2]);
    printf("unsorted=%ld quicksort_vs_qsort_differ=%ld hash=%016llx\n", unsorted, differ, (unsigned long long)h);
    free(a);
    free(b);
    return unsorted || differ;
}
