// malloc/calloc/realloc/free: many small blocks, growth by realloc, big (> 256 KiB, mmap-backed) blocks.
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng = 777;
static uint32_t rnd(void) { rng = rng * 1664525u + 1013904223u; return rng >> 7; }

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}
static int verify(const unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7 + (i >> 8))) return 0;
    return 1;
}

#define NSMALL 4000

int main(void)
{
    static unsigned char *blk[NSMALL];
    static size_t sz[NSMALL];
    unsigned long errors = 0, allocs = 0, frees = 0;
    uint64_t total = 0;

    // Many small blocks, random sizes 1..512, interleaved frees.
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < NSMALL; i++) {
            if (blk[i] && rnd() % 3 == 0) {
                if (!verify(blk[i], sz[i], (uint32_t)i)) errors++;
                free(blk[i]);
                blk[i] = NULL;
                frees++;
            }
            if (!blk[i]) {
                sz[i] = 1 + rnd() % 512;
                blk[i] = malloc(sz[i]);
                if (!blk[i]) { errors++; continue; }
                if (((uintptr_t)blk[i] & 15) != 0) errors++;  // glibc guarantees 16-byte alignment
                fill(blk[i], sz[i], (uint32_t)i);
                allocs++;
                total += sz[i];
            }
        }
    }
    for (int i = 0; i < NSMALL; i++) {
        if (blk[i]) {
            if (!verify(blk[i], sz[i], (uint32_t)i)) errors++;
            free(blk[i]);
            frees++;
        }
    }
    printf("small: allocs=%lu frees=%lu bytes=%llu errors=%lu\n", allocs, frees, (unsigned long long)total, errors);

    // calloc must return zeroed memory, also after reuse of freed dirty memory.
    unsigned long calloc_bad = 0;
    for (int i = 0; i < 200; i++) {
        size_t n = 1 + (size_t)(rnd() % 3000);
        unsigned char *p = malloc(n);
        memset(p, 0xab, n);
        free(p);
        unsigned char *q = calloc(n, 1);
        for (size_t k = 0; k < n; k++) if (q[k]) { calloc_bad++; break; }
        free(q);
    }
    size_t big_calloc = 3u << 20;
    unsigned char *bc = calloc(big_calloc / 8, 8);
    for (size_t k = 0; k < big_calloc; k += 4093) if (bc[k]) calloc_bad++;
    free(bc);
    volatile size_t huge = SIZE_MAX / 2;
    void *overflow = calloc(huge, 4);
    printf("calloc: bad=%lu overflow_returns_null=%d\n", calloc_bad, overflow == NULL);

    // realloc growth and shrink keeps contents.
    size_t n = 1;
    unsigned char *p = malloc(n);
    fill(p, n, 99);
    unsigned long realloc_bad = 0;
    int steps = 0;
    while (n < (4u << 20)) {
        size_t nn = n * 3 / 2 + 17;
        p = realloc(p, nn);
        if (!p || !verify(p, n, 99)) { realloc_bad++; break; }
        fill(p, nn, 99);
        n = nn;
        steps++;
    }
    while (n > 10) {
        n /= 3;
        p = realloc(p, n);
        if (!p || !verify(p, n, 99)) { realloc_bad++; break; }
        steps++;
    }
    free(p);
    printf("realloc: steps=%d final=%zu bad=%lu\n", steps, n, realloc_bad);

    // Big blocks: 300 KiB .. 8 MiB, mmap-backed. Touch every page.
    unsigned long big_bad = 0;
    uint64_t sum = 0;
    size_t sizes[] = {300u << 10, 1u << 20, (1u << 20) + 1, 5u << 20, 8u << 20, 257u << 10};
    unsigned char *bigs[6];
    for (int i = 0; i < 6; i++) {
        bigs[i] = malloc(sizes[i]);
        if (!bigs[i]) { big_bad++; continue; }
        for (size_t k = 0; k < sizes[i]; k += 512) bigs[i][k] = (unsigned char)(k >> 9);
        bigs[i][sizes[i] - 1] = 0x5a;
    }
    for (int i = 0; i < 6; i++) {
        if (!bigs[i]) continue;
        for (size_t k = 0; k < sizes[i]; k += 512) {
            if (bigs[i][k] != (unsigned char)(k >> 9) && k != sizes[i] - 1) big_bad++;
            sum += bigs[i][k];
        }
        if (bigs[i][sizes[i] - 1] != 0x5a) big_bad++;
    }
    // realloc of a big (mmap) block up and down (mremap path).
    bigs[1] = realloc(bigs[1], 12u << 20);
    for (size_t k = 0; k < (1u << 20); k += 512) if (bigs[1][k] != (unsigned char)(k >> 9)) { big_bad++; break; }
    bigs[1][(12u << 20) - 1] = 1;
    bigs[1] = realloc(bigs[1], 100);
    if (!bigs[1] || bigs[1][0] != 0) big_bad++;
    for (int i = 0; i < 6; i++) free(bigs[i]);
    printf("big: bad=%lu sum=%llu\n", big_bad, (unsigned long long)sum);

    // posix_memalign / aligned_alloc
    unsigned long align_bad = 0;
    for (size_t al = 16; al <= 65536; al *= 4) {
        void *q = NULL;
        if (posix_memalign(&q, al, 1000) != 0 || ((uintptr_t)q % al) != 0) align_bad++;
        memset(q, 1, 1000);
        free(q);
        q = aligned_alloc(al, al * 2);
        if (!q || ((uintptr_t)q % al) != 0) align_bad++;
        free(q);
    }
    printf("align: bad=%lu\n", align_bad);

    // A linked list of 100000 nodes.
    struct node { struct node *next; long v; } *head = NULL;
    for (long i = 0; i < 100000; i++) {
        struct node *nd = malloc(sizeof *nd);
        nd->v = i * i % 1000003;
        nd->next = head;
        head = nd;
    }
    long long lsum = 0;
    long cnt = 0;
    while (head) {
        struct node *nx = head->next;
        lsum += head->v;
        cnt++;
        free(head);
        head = nx;
    }
    printf("list: count=%ld sum=%lld\n", cnt, lsum);
    int bad = errors || calloc_bad || realloc_bad || big_bad || align_bad;
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad;
}
