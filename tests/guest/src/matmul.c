// Double-precision matrix multiply (naive ijk and blocked ikj), N from argv[1] (default 96).
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 96;
    if (n < 1) n = 1;
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    double *c = calloc((size_t)n * n, sizeof(double)), *d = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            a[i * n + j] = (double)((i * 7 + j * 3) % 17) / 8.0 - 1.0 + i * 1e-3;
            b[i * n + j] = (double)((i * 5 + j * 11) % 13) / 3.0 - 2.0 + j * 1e-4;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
    const int bs = 16;
    for (int ii = 0; ii < n; ii += bs)
        for (int kk = 0; kk < n; kk += bs)
            for (int i = ii; i < ii + bs && i < n; i++)
                for (int k = kk; k < kk + bs && k < n; k++) {
                    double aik = a[i * n + k];
                    for (int j = 0; j < n; j++) d[i * n + j] += aik * b[k * n + j];
                }
    double trace = 0, sum = 0, maxdiff = 0, frob = 0;
    for (int i = 0; i < n; i++) trace += c[i * n + i];
    for (int i = 0; i < n * n; i++) {
        sum += c[i] * ((i % 3) - 1);
        frob += d[i] * d[i];
        double diff = c[i] - d[i];
        if (diff < 0) diff = -diff;
        if (diff > maxdiff) maxdiff = diff;
    }
    printf("n=%d trace=%.17g weighted=%.17g frob2=%.17g maxdiff=%.3g\n", n, trace, sum, frob, maxdiff);
    printf("c[0][0]=%.17g c[n-1][n-1]=%.17g d[1][2]=%.17g\n", c[0], c[n * n - 1], n > 2 ? d[n + 2] : 0.0);
    free(a); free(b); free(c); free(d);
    return 0;
}
