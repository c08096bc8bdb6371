// Pipes between processes: both directions (the child squares what the parent sends), 1 MiB
// through a pipe in 4 KiB to 60 KiB writes (blocking when full) with a checksum, EOF once
// every write end is closed, and a three-process pipeline (parent -> child -> grandchild).
#include "proc.h"
#include <stdint.h>

static uint32_t fnv(uint32_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

int main(void)
{
    int down[2], up[2];
    CHECK(pipe(down) == 0 && pipe(up) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        close(down[1]);
        close(up[0]);
        long v;
        while (read_full(down[0], &v, sizeof v) == sizeof v) {
            long sq = v * v;
            write_full(up[1], &sq, sizeof sq);
        }
        _exit(0); // EOF on down: the parent closed its end
    }
    close(down[0]);
    close(up[1]);
    long total = 0;
    for (long i = 1; i <= 100; i++) {
        write_full(down[1], &i, sizeof i);
        long sq;
        CHECK(read_full(up[0], &sq, sizeof sq) == sizeof sq);
        total += sq;
    }
    close(down[1]);
    char extra;
    printf("sum of squares 1..100 from the child: %ld; then EOF: %zu\n", total, read_full(up[0], &extra, 1));
    printf("child: %s\n", status_text(reap(p)));
    close(up[0]);

    // 1 MiB parent -> child, checksum back
    CHECK(pipe(down) == 0 && pipe(up) == 0);
    p = fork_flushed();
    if (p == 0) {
        close(down[1]);
        close(up[0]);
        unsigned char buf[8192];
        uint32_t h = 2166136261u;
        size_t n = 0;
        ssize_t r;
        while ((r = read(down[0], buf, sizeof buf)) > 0) {
            h = fnv(h, buf, (size_t)r);
            n += (size_t)r;
        }
        CHECK(r == 0);
        char line[64];
        int len = snprintf(line, sizeof line, "%zu %08x", n, h);
        write_full(up[1], line, (size_t)len);
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    static unsigned char data[1 << 20];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof data; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    uint32_t h = fnv(2166136261u, data, sizeof data);
    size_t off = 0, chunk = 4096;
    while (off < sizeof data) {
        size_t n = sizeof data - off < chunk ? sizeof data - off : chunk;
        write_full(down[1], data + off, n);
        off += n;
        chunk = chunk * 3 % 61440 + 4096;
    }
    close(down[1]);
    char line[64] = {0};
    read_full(up[0], line, sizeof line - 1);
    char want[64];
    snprintf(want, sizeof want, "%zu %08x", sizeof data, h);
    printf("1 MiB through a pipe: child counted \"%s\", matches: %d\n", line, strcmp(line, want) == 0);
    printf("child: %s\n", status_text(reap(p)));
    close(up[0]);

    // parent -> child (adds 1) -> grandchild (doubles) -> parent
    int a[2], b[2], c[2];
    CHECK(pipe(a) == 0 && pipe(b) == 0 && pipe(c) == 0);
    p = fork_flushed();
    if (p == 0) {
        pid_t g = fork();
        CHECK(g >= 0);
        if (g == 0) {
            close(a[0]); close(a[1]); close(b[1]); close(c[0]);
            int v;
            while (read_full(b[0], &v, sizeof v) == sizeof v) {
                v *= 2;
                write_full(c[1], &v, sizeof v);
            }
            _exit(0);
        }
        close(a[1]); close(b[0]); close(c[0]); close(c[1]);
        int v;
        while (read_full(a[0], &v, sizeof v) == sizeof v) {
            v += 1;
            write_full(b[1], &v, sizeof v);
        }
        close(b[1]);
        reap(g);
        _exit(0);
    }
    close(a[0]); close(b[0]); close(b[1]); close(c[1]);
    for (int i = 0; i < 5; i++) write_full(a[1], &i, sizeof i);
    close(a[1]);
    int v;
    printf("pipeline:");
    while (read_full(c[0], &v, sizeof v) == sizeof v) printf(" %d", v);
    printf("\n");
    printf("middle: %s\n", status_text(reap(p)));
    return 0;
}
