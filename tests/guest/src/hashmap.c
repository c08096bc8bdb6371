// String hashing (FNV-1a, djb2, murmur-style mix) and an open-addressing hash map with
// insert/lookup/delete over generated words; prints statistics.
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *s) { uint64_t h = 1469598103934665603ULL; while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ULL; return h; }
static uint32_t djb2(const char *s) { uint32_t h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }
static uint64_t mix64(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33; return x; }

struct entry { char *key; long value; int used; int deleted; };
struct map { struct entry *e; size_t cap, len, probes; };

static struct entry *find_slot(struct map *m, const char *k, int for_insert)
{
    size_t i = mix64(fnv1a(k)) & (m->cap - 1);
    struct entry *tomb = NULL;
    for (;;) {
        m->probes++;
        struct entry *e = &m->e[i];
        if (!e->used) return for_insert && tomb ? tomb : e;
        if (e->deleted) { if (!tomb) tomb = e; }
        else if (strcmp(e->key, k) == 0) return e;
        i = (i + 1) & (m->cap - 1);
    }
}
static void put(struct map *m, const char *k, long v);
static void grow(struct map *m)
{
    struct entry *old = m->e;
    size_t oc = m->cap;
    m->cap = oc ? oc * 2 : 16;
    m->e = calloc(m->cap, sizeof *m->e);
    m->len = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].used && !old[i].deleted) { put(m, old[i].key, old[i].value); free(old[i].key); }
    free(old);
}
static void put(struct map *m, const char *k, long v)
{
    if ((m->len + 1) * 4 > m->cap * 3) grow(m);
    struct entry *e = find_slot(m, k, 0);
    if (e->used && !e->deleted) { e->value = v; return; }
    e = find_slot(m, k, 1);
    if (e->used && e->deleted) { free(e->key); }
    e->key = strdup(k); e->value = v; e->used = 1; e->deleted = 0;
    m->len++;
}
static struct entry *get(struct map *m, const char *k) { struct entry *e = find_slot(m, k, 0); return e->used && !e->deleted ? e : NULL; }
static int del(struct map *m, const char *k) { struct entry *e = get(m, k); if (!e) return 0; e->deleted = 1; m->len--; return 1; }

int main(void)
{
    struct map m = {0};
    grow(&m);
    char w[32];
    uint32_t x = 99991;
    printf("fnv1a(\"\")=%016llx fnv1a(\"armada\")=%016llx djb2(\"armada\")=%08x\n", (unsigned long long)fnv1a(""),
           (unsigned long long)fnv1a("armada"), djb2("armada"));
    long inserted = 0;
    for (int i = 0; i < 60000; i++) {
        x = x * 1103515245u + 12345u;
        int len = 2 + (int)((x >> 16) % 6);
        for (int k = 0; k < len; k++) { x = x * 1103515245u + 12345u; w[k] = (char)('a' + (x >> 16) % 8); }
        w[len] = 0;
        struct entry *e = get(&m, w);
        if (e) e->value++;
        else { put(&m, w, 1); inserted++; }
    }
    printf("distinct=%zu inserted=%ld cap=%zu\n", m.len, inserted, m.cap);
    long deleted = 0;
    for (size_t i = 0; i < m.cap; i++)
        if (m.e[i].used && !m.e[i].deleted && (m.e[i].value % 3 == 0)) { char *k = strdup(m.e[i].key); deleted += del(&m, k); free(k); }
    printf("deleted=%ld remaining=%zu\n", deleted, m.len);
    uint64_t h = 0;
    long total = 0, maxv = 0;
    const char *maxk = "";
    for (size_t i = 0; i < m.cap; i++) {
        struct entry *e = &m.e[i];
        if (!e->used || e->deleted) continue;
        h += mix64(fnv1a(e->key) + (uint64_t)e->value);  // order independent
        total += e->value;
        if (e->value > maxv || (e->value == maxv && strcmp(e->key, maxk) < 0)) { maxv = e->value; maxk = e->key; }
    }
    printf("total=%ld most_frequent=%s (%ld) content_hash=%016llx\n", total, maxk, maxv, (unsigned long long)h);
    const char *probe[] = {"ab", "abc", "hhhhhhh", "zz", "a"};
    for (int i = 0; i < 5; i++) {
        struct entry *e = get(&m, probe[i]);
        printf("get(%s)=%ld djb2=%08x\n", probe[i], e ? e->value : -1L, djb2(probe[i]));
    }
    printf("probes=%zu\n", m.probes);
    return 0;
}
