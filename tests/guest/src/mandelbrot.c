// A Mandelbrot set of n x n points (argv[1], default 200), up to 50 iterations each:
// doubles, compares and conversions from the loop counters; prints a hash of the
// iteration counts.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    if (n < 1) n = 1;
    unsigned long hash = 0;
    for (int y = 0; y < n; y++) {
        double ci = 2.0 * y / n - 1.0;
        for (int x = 0; x < n; x++) {
            double cr = 2.0 * x / n - 1.5, zr = 0, zi = 0;
            int i = 0;
            for (; i < 50 && zr * zr + zi * zi <= 4.0; i++) {
                double t = zr * zr - zi * zi + cr;
                zi = 2 * zr * zi + ci;
                zr = t;
            }
            hash = hash * 31 + i;
        }
    }
    printf("%lu\n", hash);
    return 0;
}
