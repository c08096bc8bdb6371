// sprintf of doubles in a loop (%.17g %e %f %g %a and widths), checksum of all produced text.
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    uint64_t h = 1469598103934665603ULL, s = 0x853c49e6748fea9bULL;
    size_t chars = 0;
    char buf[512];
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double mant = (double)(s >> 11) / 9007199254740992.0;  // [0,1)
        int ex = (int)((s >> 3) % 80) - 40;
        double d = ldexp(mant + 0.5, ex * 3) * ((s & 1) ? -1 : 1);
        if (i % 97 == 0) d = (double)(i / 97) * 0.25;  // exactly representable values
        int len;
        switch (i % 8) {
        case 0: len = sprintf(buf, "%.17g", d); break;
        case 1: len = sprintf(buf, "%e", d); break;
        case 2: len = sprintf(buf, "%.3f", d); break;
        case 3: len = sprintf(buf, "%g", d); break;
        case 4: len = sprintf(buf, "%a", d); break;
        case 5: len = sprintf(buf, "%+025.10e", d); break;
        case 6: len = sprintf(buf, "%-20.5g|", d); break;
        default: len = sprintf(buf, "%.0f", d); break;
        }
        chars += (size_t)len;
        for (int k = 0; k < len; k++) h = (h ^ (unsigned char)buf[k]) * 1099511628211ULL;
        if (i < 16 || i % 2500 == 0) printf("%6d: %s\n", i, buf);
    }
    printf("n=%d chars=%zu hash=%016llx\n", n, chars, (unsigned long long)h);
    return 0;
}
