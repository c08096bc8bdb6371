// Struct copies of odd sizes (assignment and memcpy), pass/return by value (small, HFA, large),
// packed and unaligned members, memcpy of every size 0..130 at odd offsets.
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#define DEF(N) struct s##N { unsigned char b[N]; };
DEF(1) DEF(2) DEF(3) DEF(5) DEF(7) DEF(9) DEF(13) DEF(15) DEF(17) DEF(23) DEF(31) DEF(33) DEF(47) DEF(63) DEF(65) DEF(100) DEF(129)

static uint64_t h = 14695981039346656037ULL;
static void mixb(const void *p, size_t n) { const unsigned char *c = p; for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL; }

#define TEST(N)                                                                                 \
    do {                                                                                        \
        struct s##N a, b;                                                                       \
        for (int i = 0; i < N; i++) a.b[i] = (unsigned char)(i * 37 + N);                      \
        b = a;                                                                                  \
        b.b[N / 2] ^= 0xff;                                                                     \
        struct s##N c = pass##N(b);                                                             \
        mixb(&c, sizeof c);                                                                     \
        printf("s%-3d changed=%d last=%02x mid=%02x\n", N, memcmp(&a, &c, N) != 0, c.b[N - 1], c.b[N / 2]); \
    } while (0)
#define PASS(N) __attribute__((noinline)) static struct s##N pass##N(struct s##N x) { x.b[0]++; return x; }
PASS(1) PASS(2) PASS(3) PASS(5) PASS(7) PASS(9) PASS(13) PASS(15) PASS(17) PASS(23) PASS(31) PASS(33) PASS(47) PASS(63) PASS(65) PASS(100) PASS(129)

struct hfa4 { float a, b, c, d; };
struct hfa2d { double x, y; };
struct mixed { char c; double d; short s; int i; char tail[3]; };
struct __attribute__((packed)) packed { char c; uint32_t u; uint64_t q; uint16_t s; };

__attribute__((noinline)) static struct hfa4 scale4(struct hfa4 v, float k) { v.a *= k; v.b *= k; v.c *= k; v.d *= k; return v; }
__attribute__((noinline)) static struct hfa2d rot(struct hfa2d v) { struct hfa2d r = {-v.y, v.x}; return r; }
__attribute__((noinline)) static struct mixed bump(struct mixed m) { m.c++; m.d *= 2; m.s--; m.i += 1000; m.tail[2] = 'z'; return m; }

int main(void)
{
    TEST(1); TEST(2); TEST(3); TEST(5); TEST(7); TEST(9); TEST(13); TEST(15); TEST(17); TEST(23); TEST(31);
    TEST(33); TEST(47); TEST(63); TEST(65); TEST(100); TEST(129);
    struct hfa4 v = scale4((struct hfa4){1.5f, -2.0f, 0.25f, 8.0f}, 3.0f);
    printf("hfa4: %g %g %g %g\n", v.a, v.b, v.c, v.d);
    struct hfa2d r = rot((struct hfa2d){3.0, 4.0});
    printf("hfa2d: %g %g\n", r.x, r.y);
    struct mixed m = {'a', 1.5, 10, 20, {'x', 'y', 0}};
    m = bump(m);
    printf("mixed: %c %g %d %d %.3s sizeof=%zu\n", m.c, m.d, m.s, m.i, m.tail, sizeof m);
    static unsigned char raw[64];
    struct packed p = {'p', 0xdeadbeef, 0x0102030405060708ULL, 0xbeef};
    memcpy(raw + 3, &p, sizeof p);
    struct packed *pp = (struct packed *)(raw + 3);
    pp->u += 1;
    pp->q = pp->q * 3;
    printf("packed: sizeof=%zu u=%08x q=%016llx s=%04x\n", sizeof p, pp->u, (unsigned long long)pp->q, pp->s);
    mixb(raw, sizeof raw);

    // memcpy every size at every offset within a cache line, check with byte loop.
    static unsigned char src[300], dst[300];
    for (int i = 0; i < 300; i++) src[i] = (unsigned char)(i * 7 + 1);
    int bad = 0;
    for (int n = 0; n <= 130; n++)
        for (int so = 0; so < 8; so++)
            for (int dof = 0; dof < 8; dof++) {
                memset(dst, 0, sizeof dst);
                memcpy(dst + dof, src + so, (size_t)n);
                for (int i = 0; i < 300; i++) {
                    unsigned char want = (i >= dof && i < dof + n) ? src[so + i - dof] : 0;
                    if (dst[i] != want) { bad++; break; }
                }
            }
    printf("memcpy sizes bad=%d\n", bad);
    // Unaligned scalar accesses.
    uint64_t acc = 0;
    for (int off = 0; off < 16; off++) {
        uint64_t q; uint32_t w; uint16_t s;
        memcpy(&q, src + off, 8); memcpy(&w, src + off + 1, 4); memcpy(&s, src + off + 3, 2);
        acc = acc * 31 + q + w + s;
    }
    printf("unaligned acc=%016llx hash=%016llx\n", (unsigned long long)acc, (unsigned long long)h);
    return 0;
}
