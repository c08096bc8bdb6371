// Loops gcc -O3 vectorizes into AdvSIMD FP and shift code: a fused multiply-add over
// floats (FMUL, FMLA on 4S), a division by converted integers (SCVTF, FDIV), doubles
// (2D), and integer lanes shifted left and right (SHL, SSHR, USHR). Rounds from argv[1]
// (default 20).
// armada-cflags: -O3
#include <stdio.h>
#include <stdlib.h>

#define N 4096

static float a[N], b[N], r[N];
static double da[N], db[N];
static int ia[N], ib[N];
static unsigned ua[N];

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    for (int i = 0; i < N; i++) {
        a[i] = i * 0.5f;
        b[i] = 1.0f / (i + 1);
        da[i] = i * 0.25;
        db[i] = 1.0 / (i + 3);
        ia[i] = i * 7;
        ib[i] = i ^ 0x55;
        ua[i] = i * 2654435761u;
    }
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < N; i++)
            r[i] = a[i] * b[i] + r[i] * 0.5f;
        for (int i = 0; i < N; i++)
            da[i] = da[i] * 0.75 + db[i] / (i + 1);
        for (int i = 0; i < N; i++)
            ia[i] = (ia[i] * 3 + ib[i]) >> 1;
        for (int i = 0; i < N; i++)
            ua[i] = (ua[i] << 3) ^ (ua[i] >> 5);
    }
    double s = 0, d = 0;
    long t = 0;
    unsigned long u = 0;
    for (int i = 0; i < N; i++) {
        s += r[i];
        d += da[i];
        t += ia[i];
        u += ua[i];
    }
    printf("%.6f %.9f %ld %lu\n", s, d, t, u);
    return 0;
}
