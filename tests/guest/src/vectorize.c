// Loops that gcc -O3 auto-vectorizes into AdvSIMD (NEON) code: integer sums, byte histogram,
// saxpy/dot in float, min/max, widening multiply-accumulate, byte ops, conditional selects.
// armada-cflags: -O3
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N 4099  /* odd size: exercises the scalar epilogue too */

static int32_t ia[N], ib[N], ic[N];
static int16_t sa[N], sb[N];
static uint8_t u8a[N], u8b[N], u8c[N];
static float fx[N], fy[N], fo[N];
static double dx[N], dy[N];
static int64_t la[N];

__attribute__((noinline)) static int64_t sum_i32(const int32_t *a, int n) { int64_t s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
__attribute__((noinline)) static uint32_t sum_u8(const uint8_t *a, int n) { uint32_t s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
__attribute__((noinline)) static void add_i32(int32_t *c, const int32_t *a, const int32_t *b, int n) { for (int i = 0; i < n; i++) c[i] = a[i] + b[i] * 3 - (a[i] >> 2); }
__attribute__((noinline)) static void saxpy(float *y, const float *x, float a, int n) { for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i]; }
__attribute__((noinline)) static void daxpy(double *y, const double *x, double a, int n) { for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i]; }
__attribute__((noinline)) static float dot_f(const float *a, const float *b, int n) { float s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
__attribute__((noinline)) static int64_t dot_i16(const int16_t *a, const int16_t *b, int n) { int64_t s = 0; for (int i = 0; i < n; i++) s += (int32_t)a[i] * b[i]; return s; }
__attribute__((noinline)) static void hist(uint32_t *h, const uint8_t *a, int n) { for (int i = 0; i < n; i++) h[a[i]]++; }
__attribute__((noinline)) static int32_t max_i32(const int32_t *a, int n) { int32_t m = a[0]; for (int i = 1; i < n; i++) m = a[i] > m ? a[i] : m; return m; }
__attribute__((noinline)) static int32_t min_i32(const int32_t *a, int n) { int32_t m = a[0]; for (int i = 1; i < n; i++) m = a[i] < m ? a[i] : m; return m; }
__attribute__((noinline)) static float max_f(const float *a, int n) { float m = a[0]; for (int i = 1; i < n; i++) m = a[i] > m ? a[i] : m; return m; }
__attribute__((noinline)) static void avg_u8(uint8_t *c, const uint8_t *a, const uint8_t *b, int n) { for (int i = 0; i < n; i++) c[i] = (uint8_t)((a[i] + b[i] + 1) >> 1); }
__attribute__((noinline)) static void sat_add_u8(uint8_t *c, const uint8_t *a, const uint8_t *b, int n) { for (int i = 0; i < n; i++) { unsigned s = a[i] + b[i]; c[i] = s > 255 ? 255 : (uint8_t)s; } }
__attribute__((noinline)) static void absdiff(uint8_t *c, const uint8_t *a, const uint8_t *b, int n) { for (int i = 0; i < n; i++) c[i] = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i]; }
__attribute__((noinline)) static void select_i32(int32_t *c, const int32_t *a, const int32_t *b, int n) { for (int i = 0; i < n; i++) c[i] = a[i] < b[i] ? a[i] * 2 : b[i] - 7; }
__attribute__((noinline)) static void widen(int64_t *d, const int32_t *a, int n) { for (int i = 0; i < n; i++) d[i] = (int64_t)a[i] * a[i]; }
__attribute__((noinline)) static void i2f(float *f, const int32_t *a, int n) { for (int i = 0; i < n; i++) f[i] = (float)a[i] * 0.5f; }
__attribute__((noinline)) static void f2i(int32_t *a, const float *f, int n) { for (int i = 0; i < n; i++) a[i] = (int32_t)f[i]; }
__attribute__((noinline)) static void shifts(uint8_t *c, const uint8_t *a, int n) { for (int i = 0; i < n; i++) c[i] = (uint8_t)((a[i] << 3) ^ (a[i] >> 2)); }
__attribute__((noinline)) static void reverse_u8(uint8_t *c, const uint8_t *a, int n) { for (int i = 0; i < n; i++) c[i] = a[n - 1 - i]; }
__attribute__((noinline)) static void interleave(float *out, const float *re, const float *im, int n) { for (int i = 0; i < n / 2; i++) { out[2 * i] = re[i] - im[i]; out[2 * i + 1] = re[i] * im[i]; } }
__attribute__((noinline)) static int count_eq(const uint8_t *a, const uint8_t *b, int n) { int c = 0; for (int i = 0; i < n; i++) c += a[i] == b[i]; return c; }

static uint64_t hash_bytes(const void *p, size_t n) { const unsigned char *c = p; uint64_t h = 1469598103934665603ULL; for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL; return h; }

int main(void)
{
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        ia[i] = (int32_t)(x >> 4) - (1 << 27);
        ib[i] = (int32_t)(x % 20001) - 10000;
        sa[i] = (int16_t)(x >> 16);
        sb[i] = (int16_t)(x >> 7);
        u8a[i] = (uint8_t)(x >> 24);
        u8b[i] = (uint8_t)(x >> 9);
        fx[i] = (float)((int32_t)(x % 2001) - 1000) / 64.0f;
        fy[i] = (float)(i % 37) * 0.125f;
        dx[i] = fx[i] * 1.000001;
        dy[i] = (double)i / 7.0;
    }
    printf("sum_i32=%lld sum_u8=%u\n", (long long)sum_i32(ia, N), sum_u8(u8a, N));
    add_i32(ic, ia, ib, N);
    printf("add_i32 hash=%016llx\n", (unsigned long long)hash_bytes(ic, sizeof ic));
    saxpy(fy, fx, 1.5f, N);
    printf("saxpy hash=%016llx y[7]=%a\n", (unsigned long long)hash_bytes(fy, sizeof fy), (double)fy[7]);
    daxpy(dy, dx, -0.75, N);
    printf("daxpy hash=%016llx y[N-1]=%.17g\n", (unsigned long long)hash_bytes(dy, sizeof dy), dy[N - 1]);
    printf("dot_f=%a dot_i16=%lld\n", (double)dot_f(fx, fy, N), (long long)dot_i16(sa, sb, N));
    uint32_t h[256] = {0};
    for (int r = 0; r < 20; r++) hist(h, u8a, N);
    uint64_t hh = 0;
    for (int i = 0; i < 256; i++) hh = hh * 31 + h[i];
    printf("hist h[0]=%u h[128]=%u h[255]=%u hash=%016llx\n", h[0], h[128], h[255], (unsigned long long)hh);
    printf("max=%d min=%d maxf=%g\n", max_i32(ia, N), min_i32(ib, N), max_f(fx, N));
    avg_u8(u8c, u8a, u8b, N);
    printf("avg hash=%016llx\n", (unsigned long long)hash_bytes(u8c, N));
    sat_add_u8(u8c, u8a, u8b, N);
    printf("satadd hash=%016llx\n", (unsigned long long)hash_bytes(u8c, N));
    absdiff(u8c, u8a, u8b, N);
    printf("absdiff hash=%016llx\n", (unsigned long long)hash_bytes(u8c, N));
    select_i32(ic, ia, ib, N);
    printf("select hash=%016llx\n", (unsigned long long)hash_bytes(ic, sizeof ic));
    widen(la, ib, N);
    printf("widen hash=%016llx\n", (unsigned long long)hash_bytes(la, sizeof la));
    i2f(fx, ib, N);
    f2i(ic, fy, N);
    printf("i2f hash=%016llx f2i hash=%016llx\n", (unsigned long long)hash_bytes(fx, sizeof fx), (unsigned long long)hash_bytes(ic, sizeof ic));
    shifts(u8c, u8a, N);
    printf("shifts hash=%016llx\n", (unsigned long long)hash_bytes(u8c, N));
    reverse_u8(u8c, u8a, N);
    printf("reverse hash=%016llx\n", (unsigned long long)hash_bytes(u8c, N));
    interleave(fo, fx, fy, N);
    printf("interleave hash=%016llx\n", (unsigned long long)hash_bytes(fo, sizeof fo));
    printf("count_eq=%d\n", count_eq(u8a, u8b, N) + count_eq(u8a, u8a, N));
    return 0;
}
