// String/memory routines over many lengths (0..300) and alignments (0..15), checked against
// byte-at-a-time reference implementations. Exercises glibc's SIMD/ifunc string routines.
// armada-cflags: -O2 -fno-tree-loop-distribute-patterns -fno-builtin
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MAXLEN 300
#define NALIGN 16
#define BUFSZ (MAXLEN + 2 * NALIGN + 64)

static uint32_t rng = 12345;
static uint32_t rnd(void) { rng = rng * 1103515245u + 12345u; return rng >> 8; }

struct stat_s { const char *name; unsigned long checks, fails; uint64_t hash; };
enum { S_STRLEN, S_STRNLEN, S_MEMCHR, S_STRCHR, S_STRRCHR, S_MEMRCHR, S_STRCMP, S_STRNCMP, S_MEMCMP, S_MEMCPY,
       S_MEMMOVE, S_MEMSET, S_STRCPY, S_STPCPY, S_STRNCPY, S_STRCAT, S_STRSTR, S_STRSPN, S_STRCSPN, S_STRTOK, S_COUNT };
static struct stat_s st[S_COUNT] = {
    {"strlen"}, {"strnlen"}, {"memchr"}, {"strchr"}, {"strrchr"}, {"memrchr"}, {"strcmp"}, {"strncmp"}, {"memcmp"},
    {"memcpy"}, {"memmove"}, {"memset"}, {"strcpy"}, {"stpcpy"}, {"strncpy"}, {"strcat"}, {"strstr"}, {"strspn"},
    {"strcspn"}, {"strtok"},
};

static void check(int which, int ok, long value, const char *fmt, long a, long b, long c)
{
    struct stat_s *s = &st[which];
    s->checks++;
    s->hash = (s->hash ^ (uint64_t)value) * 0x100000001b3ULL;
    if (!ok) {
        if (s->fails < 5)
            printf("FAIL %s: %s (%ld,%ld,%ld) value=%ld\n", s->name, fmt, a, b, c, value);
        s->fails++;
    }
}

static int sgn(int x) { return (x > 0) - (x < 0); }

__attribute__((noinline)) static size_t ref_strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
__attribute__((noinline)) static int ref_memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}
__attribute__((noinline)) static int ref_strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = a[i], y = b[i];
        if (x != y) return x < y ? -1 : 1;
        if (!x) return 0;
    }
    return 0;
}

static unsigned char srcbuf[BUFSZ] __attribute__((aligned(64))), dstbuf[BUFSZ] __attribute__((aligned(64))),
    cmpbuf[BUFSZ] __attribute__((aligned(64))), expect[BUFSZ] __attribute__((aligned(64)));

static void fill_nonzero(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rnd();
        p[i] = c ? c : 1;
    }
}

static void test_len_chr(void)
{
    for (int a = 0; a < NALIGN; a++)
        for (int n = 0; n <= MAXLEN; n++) {
            fill_nonzero(srcbuf, BUFSZ);
            char *s = (char *)srcbuf + a;
            s[n] = 0;
            size_t l = strlen(s);
            check(S_STRLEN, l == (size_t)n, (long)l, "align,len", a, n, 0);
            size_t lim = (size_t)(n / 2);
            l = strnlen(s, lim);
            check(S_STRNLEN, l == lim, (long)l, "align,len,lim", a, n, (long)lim);
            l = strnlen(s, n + 10);
            check(S_STRNLEN, l == (size_t)n, (long)l, "align,len,lim", a, n, n + 10);
            // Make sure a distinctive char appears exactly at chosen positions.
            for (int k = 0; k < 3 && n > 0; k++) {
                int pos = k == 0 ? 0 : k == 1 ? n / 2 : n - 1;
                unsigned char c = (unsigned char)(0xa5 + k);
                for (int i = 0; i < n; i++) if ((unsigned char)s[i] == c) s[i] = 0x11;
                s[pos] = (char)c;
                char *r = memchr(s, c, n);
                check(S_MEMCHR, r == s + pos, r ? (long)(r - s) : -1, "align,len,pos", a, n, pos);
                r = strchr(s, c);
                check(S_STRCHR, r == s + pos, r ? (long)(r - s) : -1, "align,len,pos", a, n, pos);
                r = strrchr(s, c);
                check(S_STRRCHR, r == s + pos, r ? (long)(r - s) : -1, "align,len,pos", a, n, pos);
                r = memrchr(s, c, n);
                check(S_MEMRCHR, r == s + pos, r ? (long)(r - s) : -1, "align,len,pos", a, n, pos);
                s[pos] = 0x11;
            }
            char *r = strchr(s, 0);
            check(S_STRCHR, r == s + n, (long)(r - s), "nul align,len", a, n, 0);
            r = strchr(s, 0xfe);
            int expectpos = -1;
            for (int i = 0; i < n; i++) if ((unsigned char)s[i] == 0xfe) { expectpos = i; break; }
            check(S_STRCHR, expectpos < 0 ? r == NULL : r == s + expectpos, r ? (long)(r - s) : -1, "0xfe align,len", a, n, 0);
            r = memchr(s, 0x7f, n);
            expectpos = -1;
            for (int i = 0; i < n; i++) if ((unsigned char)s[i] == 0x7f) { expectpos = i; break; }
            check(S_MEMCHR, expectpos < 0 ? r == NULL : r == s + expectpos, r ? (long)(r - s) : -1, "0x7f align,len", a, n, 0);
        }
}

static void test_cmp(void)
{
    for (int a = 0; a < NALIGN; a++)
        for (int n = 0; n <= MAXLEN; n++) {
            int b = (a * 7 + 3) % NALIGN;
            fill_nonzero(srcbuf, BUFSZ);
            char *x = (char *)srcbuf + a, *y = (char *)cmpbuf + b;
            memcpy(y, x, n + 1);
            x[n] = 0; y[n] = 0;
            int r = strcmp(x, y);
            check(S_STRCMP, r == 0, r, "equal align,len", a, n, 0);
            r = memcmp(x, y, n);
            check(S_MEMCMP, r == 0, r, "equal align,len", a, n, 0);
            if (n == 0) continue;
            int positions[3] = {0, n / 2, n - 1};
            for (int k = 0; k < 3; k++) {
                int p = positions[k];
                unsigned char save = (unsigned char)y[p];
                y[p] = (char)(save ^ (k == 1 ? 0x80 : 0x01));
                if (!y[p]) y[p] = 2;
                int want = ref_memcmp(x, y, n);
                r = memcmp(x, y, n);
                check(S_MEMCMP, sgn(r) == want, sgn(r), "diff align,len,pos", a, n, p);
                r = strcmp(x, y);
                check(S_STRCMP, sgn(r) == want, sgn(r), "diff align,len,pos", a, n, p);
                r = strncmp(x, y, p);
                check(S_STRNCMP, r == 0, r, "prefix align,len,pos", a, n, p);
                r = strncmp(x, y, n);
                check(S_STRNCMP, sgn(r) == ref_strncmp(x, y, n), sgn(r), "full align,len,pos", a, n, p);
                y[p] = (char)save;
            }
            // Shorter string compares less.
            y[n - 1] = 0;
            r = strcmp(x, y);
            check(S_STRCMP, r > 0, sgn(r), "shorter align,len", a, n, 0);
            r = strncmp(x, y, n + 5);
            check(S_STRNCMP, r > 0, sgn(r), "shorter align,len", a, n, 0);
        }
}

static int guard_ok(const unsigned char *buf, size_t start, size_t len)
{
    for (size_t i = 0; i < BUFSZ; i++) {
        if (i >= start && i < start + len) continue;
        if (buf[i] != 0xcc) return 0;
    }
    return 1;
}

static void test_copy(void)
{
    for (int a = 0; a < NALIGN; a++)
        for (int n = 0; n <= MAXLEN; n++) {
            int b = (a * 5 + n) % NALIGN;
            fill_nonzero(srcbuf, BUFSZ);
            memset(dstbuf, 0xcc, BUFSZ);
            void *r = memcpy(dstbuf + b, srcbuf + a, n);
            int ok = r == dstbuf + b && ref_memcmp(dstbuf + b, srcbuf + a, n) == 0 && guard_ok(dstbuf, b, n);
            check(S_MEMCPY, ok, n, "align,dalign,len", a, b, n);

            memset(dstbuf, 0xcc, BUFSZ);
            unsigned char v = (unsigned char)(n * 31 + a);
            if (v == 0xcc) v = 0;
            r = memset(dstbuf + b, v, n);
            ok = r == dstbuf + b && guard_ok(dstbuf, b, n);
            for (int i = 0; i < n; i++) if (dstbuf[b + i] != v) ok = 0;
            check(S_MEMSET, ok, v, "dalign,len,val", b, n, v);

            // memmove with overlap in both directions.
            for (int dir = 0; dir < 2; dir++) {
                int shift = 1 + (n + a) % 37;
                unsigned char *base = srcbuf + NALIGN;
                fill_nonzero(srcbuf, BUFSZ);
                unsigned char *from = dir ? base + shift : base;
                unsigned char *to = dir ? base : base + shift;
                if ((size_t)(to - srcbuf) + n > BUFSZ || (size_t)(from - srcbuf) + n > BUFSZ) continue;
                memcpy(expect, from, n);
                memmove(to, from, n);
                check(S_MEMMOVE, ref_memcmp(to, expect, n) == 0, shift, "dir,shift,len", dir, shift, n);
            }

            // strcpy / stpcpy / strncpy / strcat
            fill_nonzero(srcbuf, BUFSZ);
            char *s = (char *)srcbuf + a;
            s[n] = 0;
            memset(dstbuf, 0xcc, BUFSZ);
            char *d = (char *)dstbuf + b;
            r = strcpy(d, s);
            check(S_STRCPY, r == d && ref_memcmp(d, s, n + 1) == 0 && guard_ok(dstbuf, b, n + 1), n, "align,dalign,len", a, b, n);
            memset(dstbuf, 0xcc, BUFSZ);
            char *e = stpcpy(d, s);
            check(S_STPCPY, e == d + n && ref_memcmp(d, s, n + 1) == 0 && guard_ok(dstbuf, b, n + 1), (long)(e - d), "align,dalign,len", a, b, n);
            memset(dstbuf, 0xcc, BUFSZ);
            size_t lim = (size_t)(n + (n % 3 == 0 ? 7 : 0)) - (size_t)(n % 3 == 1 ? (n / 2) : 0);
            strncpy(d, s, lim);
            ok = guard_ok(dstbuf, b, lim);
            for (size_t i = 0; i < lim; i++) {
                unsigned char want = i < (size_t)n ? (unsigned char)s[i] : 0;
                if ((unsigned char)d[i] != want) ok = 0;
            }
            check(S_STRNCPY, ok, (long)lim, "align,len,lim", a, n, (long)lim);
            memset(dstbuf, 0xcc, BUFSZ);
            int pre = (a * 3) % 20;
            for (int i = 0; i < pre; i++) d[i] = 'A' + i;
            d[pre] = 0;
            if (pre + n + 1 + b <= BUFSZ) {
                strcat(d, s);
                check(S_STRCAT, ref_strlen(d) == (size_t)(pre + n) && ref_memcmp(d + pre, s, n + 1) == 0, pre + n, "pre,len", pre, n, 0);
            }
        }
}

static void test_search(void)
{
    static char hay[MAXLEN + 1];
    const char alpha[] = "abcab";
    for (int n = 0; n <= MAXLEN; n++) {
        for (int i = 0; i < n; i++) hay[i] = alpha[rnd() % 5];
        hay[n] = 0;
        for (int nl = 1; nl <= 40 && nl <= n; nl += (nl < 8 ? 1 : 7)) {
            int p = (int)(rnd() % (unsigned)(n - nl + 1));
            char needle[48];
            memcpy(needle, hay + p, nl);
            needle[nl] = 0;
            char *r = strstr(hay, needle);
            // reference: first occurrence
            int want = -1;
            for (int i = 0; i + nl <= n; i++) if (ref_memcmp(hay + i, needle, nl) == 0) { want = i; break; }
            check(S_STRSTR, r ? r - hay == want : want < 0, r ? (long)(r - hay) : -1, "len,nlen,pos", n, nl, p);
            needle[nl - 1] = 'z';
            r = strstr(hay, needle);
            check(S_STRSTR, r == NULL, r ? (long)(r - hay) : -1, "absent len,nlen", n, nl, 0);
        }
        size_t sp = strspn(hay, "ab");
        size_t want = 0;
        while (hay[want] == 'a' || hay[want] == 'b') want++;
        check(S_STRSPN, sp == want, (long)sp, "len", n, 0, 0);
        size_t cs = strcspn(hay, "c");
        want = 0;
        while (hay[want] && hay[want] != 'c') want++;
        check(S_STRCSPN, cs == want, (long)cs, "len", n, 0, 0);
    }
    char *r = strstr("", "");
    check(S_STRSTR, r != NULL, 0, "empty", 0, 0, 0);
}

static void test_strtok(void)
{
    static char line[MAXLEN + 2];
    for (int n = 0; n <= MAXLEN; n += 3) {
        for (int i = 0; i < n; i++) {
            uint32_t v = rnd() % 10;
            line[i] = v < 2 ? ' ' : v < 3 ? ',' : (char)('a' + v);
        }
        line[n] = 0;
        // reference token count
        int want = 0, in = 0;
        for (int i = 0; i < n; i++) {
            int delim = line[i] == ' ' || line[i] == ',';
            if (!delim && !in) want++;
            in = !delim;
        }
        int got = 0;
        uint64_t h = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) {
            got++;
            for (char *q = t; *q; q++) h = h * 31 + (unsigned char)*q;
        }
        check(S_STRTOK, got == want, (long)(h ^ (uint64_t)got), "len,want,got", n, want, got);
    }
    char text[] = "the quick,,brown fox ,jumps";
    printf("strtok tokens:");
    for (char *t = strtok(text, " ,"); t; t = strtok(NULL, " ,"))
        printf(" [%s]", t);
    printf("\n");
}

// Strings that end exactly at a page boundary followed by a PROT_NONE page: the SIMD
// routines must never touch the next page.
static void test_page_edge(void)
{
    long pg = 4096;
    unsigned char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { printf("mmap failed\n"); return; }
    if (mprotect(m + pg, pg, PROT_NONE) != 0) { printf("mprotect failed\n"); return; }
    unsigned long ok = 0, total = 0;
    for (int n = 0; n < 100; n++) {
        memset(m, 'x', pg);
        char *s = (char *)m + pg - n - 1;
        s[n] = 0;
        total++; ok += strlen(s) == (size_t)n;
        total++; ok += strchr(s, 'y') == NULL;
        total++; ok += strrchr(s, 'x') == (n ? s + n - 1 : NULL);
        total++; ok += strnlen(s, 1000) == (size_t)n;
        total++; ok += memchr(s, 'y', n + 1) == NULL;
        char *t = (char *)m + pg - n - 1 - 200;
        memset(t, 'x', n);
        t[n] = 0;
        total++; ok += strcmp(s, t) == 0;
        total++; ok += strncmp(s, t, 500) == 0;
        total++; ok += memcmp(s, t, n + 1) == 0;
        unsigned char *e = m + pg - n;
        memset(e, 'q', n);
        memcpy(dstbuf, e, n);
        total++; ok += ref_memcmp(dstbuf, e, n) == 0;
        total++; ok += memchr(e, 'z', n) == NULL;
    }
    printf("page edge: %lu/%lu ok\n", ok, total);
    if (ok != total) st[S_STRLEN].fails++;
    munmap(m, 2 * pg);
}

int main(void)
{
    test_page_edge();
    test_len_chr();
    test_cmp();
    test_copy();
    test_search();
    test_strtok();
    unsigned long total_fail = 0;
    for (int i = 0; i < S_COUNT; i++) {
        printf("%-8s checks=%lu fails=%lu hash=%016llx\n", st[i].name, st[i].checks, st[i].fails, (unsigned long long)st[i].hash);
        total_fail += st[i].fails;
    }
    printf("total failures: %lu\n", total_fail);
    return total_fail ? 1 : 0;
}
