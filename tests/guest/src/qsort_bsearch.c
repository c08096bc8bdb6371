// qsort/bsearch on ints, doubles, strings and structs; output checksums and samples.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static uint32_t rng = 4242;
static uint32_t rnd(void) { rng = rng * 1103515245u + 12345u; return (rng >> 8) & 0xffffff; }

static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
static int cmp_int_desc(const void *a, const void *b) { return cmp_int(b, a); }
static int cmp_dbl(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

struct rec { int key; char name[12]; double w; };
static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return strcmp(x->name, y->name);
}

int main(void)
{
    enum { N = 20000 };
    static int a[N];
    for (int i = 0; i < N; i++) a[i] = (int)(rnd() % 100000) - 50000;
    qsort(a, N, sizeof a[0], cmp_int);
    int sorted = 1;
    uint64_t h = 0;
    for (int i = 0; i < N; i++) {
        if (i && a[i - 1] > a[i]) sorted = 0;
        h = h * 31 + (uint32_t)a[i];
    }
    printf("ints sorted=%d min=%d max=%d median=%d hash=%016llx\n", sorted, a[0], a[N - 1], a[N / 2], (unsigned long long)h);
    int found = 0, missing = 0;
    for (int k = -50000; k < 50000; k += 7) {
        int *p = bsearch(&k, a, N, sizeof a[0], cmp_int);
        if (p) { found++; if (*p != k) printf("bsearch wrong\n"); } else missing++;
    }
    printf("bsearch found=%d missing=%d\n", found, missing);
    qsort(a, N, sizeof a[0], cmp_int_desc);
    printf("desc first=%d last=%d\n", a[0], a[N - 1]);

    static double d[5000];
    for (int i = 0; i < 5000; i++) d[i] = (double)rnd() / 1024.0 - 8000.0;
    qsort(d, 5000, sizeof d[0], cmp_dbl);
    double sum = 0;
    for (int i = 0; i < 5000; i++) sum += d[i] * (i % 7);
    printf("doubles min=%.17g max=%.17g weighted=%.17g\n", d[0], d[4999], sum);

    static char words[3000][16];
    static char *wp[3000];
    for (int i = 0; i < 3000; i++) {
        int len = 1 + (int)(rnd() % 12);
        for (int k = 0; k < len; k++) words[i][k] = (char)('a' + rnd() % 26);
        words[i][len] = 0;
        wp[i] = words[i];
    }
    qsort(wp, 3000, sizeof wp[0], cmp_str);
    printf("strings first=%s second=%s last=%s\n", wp[0], wp[1], wp[2999]);
    char *key = words[1234];
    char **fp = bsearch(&key, wp, 3000, sizeof wp[0], cmp_str);
    printf("bsearch string %s -> %s\n", key, fp ? *fp : "(none)");

    static struct rec recs[4000];
    for (int i = 0; i < 4000; i++) {
        recs[i].key = (int)(rnd() % 50);
        snprintf(recs[i].name, sizeof recs[i].name, "n%07u", rnd() % 10000000);
        recs[i].w = i * 0.5;
    }
    qsort(recs, 4000, sizeof recs[0], cmp_rec);
    h = 0;
    for (int i = 0; i < 4000; i++) h = h * 131 + (uint64_t)recs[i].key * 7 + (uint64_t)(recs[i].w * 2) + (unsigned char)recs[i].name[7];
    printf("structs first=%d/%s last=%d/%s hash=%016llx\n", recs[0].key, recs[0].name, recs[3999].key, recs[3999].name, (unsigned long long)h);
    // Tiny and degenerate sizes.
    int small[3] = {3, 1, 2};
    qsort(small, 3, sizeof small[0], cmp_int);
    qsort(small, 0, sizeof small[0], cmp_int);
    qsort(small, 1, sizeof small[0], cmp_int);
    printf("small: %d %d %d\n", small[0], small[1], small[2]);
    return 0;
}
