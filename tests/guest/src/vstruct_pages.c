// AdvSIMD structure loads and stores (LD1-LD4 and ST1-ST4 of multiple structures, of one
// lane, LD1R-LD4R) at every byte offset across a page boundary, where the GPU engines reach
// two frames for one access, and at the page's start and middle. Prints a hash of every
// value loaded and of the memory after the stores.
#include <arm_neon.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

static uint32_t h = 2166136261u;

static void mix(const void *p, unsigned long n) {
    const uint8_t *b = p;
    for (unsigned long i = 0; i < n; i++) {
        h ^= b[i];
        h *= 16777619u;
    }
}

int main(void) {
    uint8_t *m = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    for (int i = 0; i < 3 * 4096; i++) m[i] = (uint8_t)(i * 7 + (i >> 8));
    int offs[70];
    int n = 0;
    for (int off = 4096 - 66; off <= 4096; off++) offs[n++] = off;
    offs[n++] = 0;
    offs[n++] = 2048 + 3;
    for (int k = 0; k < n; k++) {
        uint8_t *p = m + offs[k];
        uint8x16x3_t a = vld3q_u8(p);
        uint16x8x4_t b = vld4q_u16((const uint16_t *)p);
        uint32x2x2_t c = vld2_u32((const uint32_t *)p);
        uint64x2x2_t d = vld2q_u64((const uint64_t *)p);
        uint8x16x4_t e = vld1q_u8_x4(p);
        uint8x8x4_t r = vld4_dup_u8(p);
        uint64x2x2_t rd = vld2q_dup_u64((const uint64_t *)p);
        uint32x4x3_t l = vld3q_lane_u32((const uint32_t *)p, (uint32x4x3_t){{vdupq_n_u32(1), vdupq_n_u32(2), vdupq_n_u32(3)}}, 2);
        uint16x4x2_t l2 = vld2_lane_u16((const uint16_t *)p, (uint16x4x2_t){{vdup_n_u16(5), vdup_n_u16(6)}}, 3);
        mix(&a, sizeof a);
        mix(&b, sizeof b);
        mix(&c, sizeof c);
        mix(&d, sizeof d);
        mix(&e, sizeof e);
        mix(&r, sizeof r);
        mix(&rd, sizeof rd);
        mix(&l, sizeof l);
        mix(&l2, sizeof l2);
        // stores of what was loaded, turned, at the same place
        a.val[0] = vextq_u8(a.val[0], a.val[1], 5);
        vst3q_u8(p, a);
        b.val[2] = vaddq_u16(b.val[2], b.val[3]);
        vst4q_u16((uint16_t *)p, b);
        vst2_u32((uint32_t *)p, c);
        d.val[1] = vaddq_u64(d.val[1], d.val[0]);
        vst2q_u64((uint64_t *)p, d);
        vst4_lane_u8(p + 1, r, 6);
        vst3q_lane_u32((uint32_t *)p, l, 1);
        vst2_lane_u16((uint16_t *)p, l2, 0);
        mix(m + 4096 - 128, 256);
    }
    mix(m, 3 * 4096);
    printf("vstruct_pages %08x\n", h);
    return 0;
}
