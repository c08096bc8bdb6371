/* A table format behind a checksum, about 10,000 instructions an execution whatever the
 * input: the speed benchmark of the fuzz targets (docs/performance.md), with a planted bug.
 *
 * The reader first takes the CRC-32 (bit by bit, as small decoders do) of the input's first
 * 160 bytes, zero-padded: that is most of an execution. Then, for an input that starts with
 * "TB", a count byte and 4-byte entries: an entry of type 'X' at index 5 or later whose next
 * two bytes are "!!" hits a null pointer (SIGSEGV). Each byte of the way is its own branch,
 * so coverage guidance leads there. */
#include "input.h"

__attribute__((noinline)) static unsigned crc32_block(const unsigned char *d, size_t n) {
    unsigned c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= d[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & -(c & 1));
    }
    return ~c;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    unsigned char block[160] = {0};
    memcpy(block, input_buf, n < sizeof block ? n : sizeof block);
    unsigned crc = crc32_block(block, sizeof block);
    int entries = 0;
    if (n >= 3 && input_buf[0] == 'T') {
        if (input_buf[1] == 'B') {
            size_t count = input_buf[2];
            for (size_t i = 0; i < count && 3 + 4 * i + 4 <= n; i++) {
                const unsigned char *e = input_buf + 3 + 4 * i;
                if (e[0] == 'X' && i >= 5) {
                    if (e[1] == '!')
                        if (e[2] == '!')
                            crash_segv();
                }
                entries++;
            }
        }
    }
    printf("%d entries, crc %08x\n", entries, crc);
    return 0;
}
