// Bit operations: popcount, clz, ctz, clrsb, parity, bswap, rotates, bit reversal, extracts.
#include <stdio.h>
#include <stdint.h>

static inline uint32_t rotl32(uint32_t x, unsigned r) { return (x << (r & 31)) | (x >> ((32 - r) & 31)); }
static inline uint64_t rotr64(uint64_t x, unsigned r) { return (x >> (r & 63)) | (x << ((64 - r) & 63)); }
static uint32_t rev32(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}

struct bf { unsigned a : 3; signed b : 5; unsigned c : 11; signed d : 13; };

int main(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL, h = 0;
    static const uint64_t samples[] = {0, 1, 2, 3, 0x80, 0xff, 0x8000, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL,
                                       0x8000000000000000ULL, 0xffffffffffffffffULL, 0x0123456789abcdefULL, 0xf0f0f0f0f0f0f0f0ULL};
    for (unsigned i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        uint64_t v = samples[i];
        uint32_t w = (uint32_t)v;
        printf("%016llx: pop=%d pop32=%d clz=%d ctz=%d clz32=%d ctz32=%d clrsb=%d parity=%d bswap=%016llx bswap32=%08x bswap16=%04x rev32=%08x\n",
               (unsigned long long)v, __builtin_popcountll(v), __builtin_popcount(w), v ? __builtin_clzll(v) : 64,
               v ? __builtin_ctzll(v) : 64, w ? __builtin_clz(w) : 32, w ? __builtin_ctz(w) : 32,
               __builtin_clrsbll((long long)v), __builtin_parityll(v), (unsigned long long)__builtin_bswap64(v),
               __builtin_bswap32(w), __builtin_bswap16((uint16_t)w), rev32(w));
    }
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        uint64_t v = s;
        uint32_t w = (uint32_t)(v >> 17);
        unsigned r = (unsigned)(v >> 58);
        h = h * 0x100000001b3ULL + (uint64_t)__builtin_popcountll(v);
        h ^= (uint64_t)__builtin_clzll(v | 1) << 8;
        h ^= (uint64_t)__builtin_ctzll(v | (1ULL << 63)) << 16;
        h += __builtin_bswap64(v) ^ rotr64(v, r) ^ rotl32(w, r);
        h += (uint64_t)__builtin_clrsb((int)w) + (uint64_t)__builtin_ffsll((long long)(v & 0xfff000)) + rev32(w);
        h ^= ((v >> 7) & 0x1fff) << 3;        // ubfx
        h += (uint64_t)((int64_t)(v << 20) >> 44); // sbfx
        h ^= (v & ~0xff00ULL) | ((uint64_t)(w & 0xff) << 8); // bfi
    }
    printf("xorshift hash = %016llx\n", (unsigned long long)h);
    struct bf b = {0};
    uint64_t bh = 0;
    for (int i = 0; i < 1000; i++) {
        b.a += (unsigned)i; b.b -= i * 3; b.c ^= (unsigned)(i * 77); b.d += i * 1001;
        bh = bh * 31 + (uint64_t)(b.a + (int64_t)b.b * 7 + b.c * 13 + (int64_t)b.d * 17);
    }
    printf("bitfields a=%u b=%d c=%u d=%d hash=%016llx\n", b.a, b.b, b.c, b.d, (unsigned long long)bh);
    // Shifts by amounts >= width are masked by hardware when computed at run time (AArch64 uses modulo width).
    volatile unsigned sh = 33;
    volatile uint32_t one32 = 1;
    volatile uint64_t one64 = 1;
    uint32_t r32;
    uint64_t r64;
    __asm__("lsl %w0, %w1, %w2" : "=r"(r32) : "r"(one32), "r"(sh));
    __asm__("lsl %0, %1, %2" : "=r"(r64) : "r"(one64), "r"((uint64_t)sh + 64));
    printf("lsl w by 33 = %u, lsl x by 97 = %llu\n", r32, (unsigned long long)r64);
    return 0;
}
