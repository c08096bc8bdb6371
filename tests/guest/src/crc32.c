// Compute-bound CRC-32 (IEEE, reflected 0xEDB88320): bitwise and table-driven (1- and 8-table)
// over a generated 1 MiB buffer, repeated N times (argv[1], default 1).
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#define SIZE (1u << 20)

static uint32_t crc_bitwise(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint32_t table[8][256];
static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}
static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
static uint32_t crc_slice8(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
              table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    unsigned char *buf = malloc(SIZE);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < SIZE; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        buf[i] = (unsigned char)(x >> 11);
    }
    make_tables();
    printf("check \"123456789\": bitwise=%08x table=%08x slice8=%08x\n", crc_bitwise(0, (const unsigned char *)"123456789", 9),
           crc_table(0, (const unsigned char *)"123456789", 9), crc_slice8(0, (const unsigned char *)"123456789", 9));
    uint32_t a = 0, b = 0, c = 0;
    for (int r = 0; r < reps; r++) {
        a = crc_bitwise(a, buf, SIZE);
        b = crc_table(b, buf, SIZE);
        c = crc_slice8(c, buf + (r & 7), SIZE - 8);
        buf[r % SIZE] ^= (unsigned char)a;
    }
    printf("reps=%d bitwise=%08x table=%08x slice8=%08x\n", reps, a, b, c);
    free(buf);
    return 0;
}
