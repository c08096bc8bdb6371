// FEAT_DotProd (SDOT, UDOT; vector and by element) through ACLE intrinsics, as int8 kernels
// use them: an int8 matrix product checked against plain C, and what a program looks at
// before choosing such a kernel (AT_HWCAP's ASIMDDP bit, ID_AA64ISAR0_EL1's DP field,
// which Linux lets EL0 read with MRS).
// armada-cflags: -O2 -march=armv8.2-a+dotprod
#include <arm_neon.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#define N 48

static int8_t a[N][N], b[N][N];
static uint8_t ua[N][N], ub[N][N];

static uint32_t next(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

// c = a * b^T, four columns of c a time. SDOT (vector): the bytes of a row of a against
// those of a row of b, 16 at once, summed across. SDOT (by element): four rows of b's words
// at k (one word a row) against a's word at k broadcast, each lane of the sum one column.
static int64_t sdot_matmul(int by_element)
{
    int64_t sum = 0;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j += 4) {
            int32_t out[4];
            if (by_element) {
                int32x4_t acc = vdupq_n_s32(0);
                for (int k = 0; k < N; k += 16) {
                    int8x16_t x = vld1q_s8(&a[i][k]);
                    for (int w = 0; w < 4; w++) {
                        int32_t words[4];
                        for (int t = 0; t < 4; t++) memcpy(&words[t], &b[j + t][k + 4 * w], 4);
                        int8x16_t y = vreinterpretq_s8_s32(vld1q_s32(words));
                        switch (w) {
                        case 0: acc = vdotq_laneq_s32(acc, y, x, 0); break;
                        case 1: acc = vdotq_laneq_s32(acc, y, x, 1); break;
                        case 2: acc = vdotq_laneq_s32(acc, y, x, 2); break;
                        default: acc = vdotq_laneq_s32(acc, y, x, 3); break;
                        }
                    }
                }
                vst1q_s32(out, acc);
            } else {
                for (int t = 0; t < 4; t++) {
                    int32x4_t acc = vdupq_n_s32(0);
                    for (int k = 0; k < N; k += 16)
                        acc = vdotq_s32(acc, vld1q_s8(&a[i][k]), vld1q_s8(&b[j + t][k]));
                    out[t] = vaddvq_s32(acc);
                }
            }
            for (int t = 0; t < 4; t++) {
                int32_t want = 0;
                for (int k = 0; k < N; k++) want += a[i][k] * b[j + t][k];
                if (out[t] != want) {
                    printf("sdot%s: c[%d][%d] = %d, want %d\n", by_element ? " (by element)" : "",
                           i, j + t, out[t], want);
                    return -1;
                }
                sum = sum * 31 + out[t];
            }
        }
    }
    return sum;
}

static int64_t udot_rows(void)
{
    int64_t sum = 0;
    for (int i = 0; i < N; i++) {
        uint32x4_t acc = vdupq_n_u32(0);
        uint32x2_t half = vdup_n_u32(0);
        for (int k = 0; k < N; k += 16) {
            uint8x16_t x = vld1q_u8(&ua[i][k]), y = vld1q_u8(&ub[i][k]);
            acc = vdotq_u32(acc, x, y);
            half = vdot_u32(half, vget_low_u8(x), vget_high_u8(y));
            half = vdot_lane_u32(half, vget_high_u8(x), vget_low_u8(y), 1);
        }
        uint32_t got = vaddvq_u32(acc), want = 0;
        for (int k = 0; k < N; k++) want += ua[i][k] * ub[i][k];
        if (got != want) {
            printf("udot: row %d = %u, want %u\n", i, got, want);
            return -1;
        }
        sum = sum * 131 + got + vget_lane_u32(half, 0) * 3 + vget_lane_u32(half, 1);
    }
    return sum;
}

int main(void)
{
    uint32_t s = 2024;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            a[i][k] = (int8_t)next(&s);
            b[i][k] = (int8_t)next(&s);
            ua[i][k] = (uint8_t)next(&s);
            ub[i][k] = (uint8_t)next(&s);
        }
    // the extremes: -128 * -128 four times is the largest sum a word gets from one SDOT
    for (int k = 0; k < 16; k++) a[0][k] = b[0][k] = -128, ua[1][k] = ub[1][k] = 255;

    uint64_t isar0;
    __asm__ volatile("mrs %0, id_aa64isar0_el1" : "=r"(isar0));
    printf("hwcap asimddp: %d, id_aa64isar0_el1.dp: %d\n",
           (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0, (int)((isar0 >> 44) & 15));
    int64_t v = sdot_matmul(0), e = sdot_matmul(1), u = udot_rows();
    printf("sdot %lld, sdot by element %lld, udot %lld\n", (long long)v, (long long)e, (long long)u);
    return v == -1 || e == -1 || u == -1;
}
