/* A fuzz target linked against Debian's arm64 zlib (libz.so.1 from the sysroot that
 * scripts/sysroot.sh builds): the input, read from stdin, is inflated with zlib's
 * `uncompress`. A planted bug sits behind the inflated bytes "BUG!": reachable from a
 * stored (level 0) stream of "BUGx" by one byte's change, which also breaks the stream's
 * Adler-32 check (uncompress reports Z_DATA_ERROR, having inflated the bytes all the same).
 * Huffman-coded seeds take the fuzzer through inflate's table code.
 *
 * zlib's headers are not in the cross sysroot: the one function used is declared here with
 * zlib's own prototype (zlib.h: `int uncompress(Bytef *dest, uLongf *destLen, const Bytef
 * *source, uLong sourceLen)`). */
#include <stdio.h>
#include <unistd.h>

int uncompress(unsigned char *dest, unsigned long *dest_len, const unsigned char *source,
               unsigned long source_len);

static unsigned char in[4096], out[16384];
static int *volatile null_ptr;

int main(void) {
    size_t n = 0;
    ssize_t r;
    while (n < sizeof in && (r = read(0, in + n, sizeof in - n)) > 0)
        n += (size_t)r;
    unsigned long len = sizeof out;
    int status = uncompress(out, &len, in, n);
    printf("uncompress: %d, %lu bytes\n", status, len);
    if (len >= 4 && out[0] == 'B' && out[1] == 'U' && out[2] == 'G' && out[3] == '!')
        *null_ptr = 1;
    return 0;
}
