// ARMv8 CRC32 instructions (CRC32B/H/W/X and CRC32C*) through ACLE intrinsics, checked against
// a bitwise software implementation.
// armada-cflags: -O2 -march=armv8-a+crc
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <arm_acle.h>

static uint32_t sw(uint32_t crc, const unsigned char *p, size_t n, uint32_t poly)
{
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (poly & (0u - (crc & 1)));
    }
    return crc;
}

static uint32_t hw(uint32_t crc, const unsigned char *p, size_t n, int castagnoli)
{
    while (n >= 8) { uint64_t v; memcpy(&v, p, 8); crc = castagnoli ? __crc32cd(crc, v) : __crc32d(crc, v); p += 8; n -= 8; }
    if (n >= 4) { uint32_t v; memcpy(&v, p, 4); crc = castagnoli ? __crc32cw(crc, v) : __crc32w(crc, v); p += 4; n -= 4; }
    if (n >= 2) { uint16_t v; memcpy(&v, p, 2); crc = castagnoli ? __crc32ch(crc, v) : __crc32h(crc, v); p += 2; n -= 2; }
    if (n) crc = castagnoli ? __crc32cb(crc, *p) : __crc32b(crc, *p);
    return crc;
}

int main(void)
{
    static unsigned char buf[65536 + 7];
    uint32_t x = 1;
    for (size_t i = 0; i < sizeof buf; i++) { x = x * 1103515245u + 12345u; buf[i] = (unsigned char)(x >> 16); }
    int bad = 0;
    uint32_t hh = 0;
    for (size_t len = 0; len < 64; len++)
        for (size_t off = 0; off < 8; off++) {
            uint32_t a = hw(~0u, buf + off, len, 0), b = sw(~0u, buf + off, len, 0xEDB88320u);
            uint32_t c = hw(~0u, buf + off, len, 1), d = sw(~0u, buf + off, len, 0x82F63B78u);
            if (a != b || c != d) { if (bad < 5) printf("mismatch len=%zu off=%zu: %08x %08x %08x %08x\n", len, off, a, b, c, d); bad++; }
            hh = hh * 31 + a + c;
        }
    printf("small mismatches=%d hash=%08x\n", bad, hh);
    printf("crc32(\"123456789\")=%08x crc32c=%08x\n", ~hw(~0u, (const unsigned char *)"123456789", 9, 0),
           ~hw(~0u, (const unsigned char *)"123456789", 9, 1));
    printf("64K: crc32=%08x crc32c=%08x\n", ~hw(~0u, buf, 65536, 0), ~hw(~0u, buf + 3, 65536, 1));
    return bad != 0;
}
