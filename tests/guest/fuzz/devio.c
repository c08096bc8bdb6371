#define _GNU_SOURCE
/* The syscalls a GPU kernel answers for a fuzz target by itself (armada-gpu's
 * engine/devio.rs), and the ones around them it must leave to the host: short reads of
 * stdin, fstat of fds 0-2 (fstat and newfstatat with AT_EMPTY_PATH), writes to stdout and
 * stderr, a write from an unmapped buffer (EFAULT), a read into a read-only page (EFAULT),
 * then fd 1 made a copy of stderr and fd 0 closed. The path it takes (and so its coverage and
 * instruction count) depends on every answer, and it crashes on one input, so
 * `armada fuzz` on a GPU engine must make exactly the CPU engine's run. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int *volatile null_ptr;

int main(void) {
    unsigned char buf[64];
    unsigned sum = 0;
    struct stat st;
    if (fstat(0, &st) != 0 || !S_ISFIFO(st.st_mode))
        return 3;
    if (fstatat(1, "", &st, AT_EMPTY_PATH) != 0)
        return 4;
    sum += (unsigned)st.st_ino & 0xff;
    /* short reads: 3 bytes at a time */
    ssize_t n, total = 0;
    while ((n = read(0, buf + total, 3)) > 0 && total < 60)
        total += n;
    if (n < 0)
        return 5;
    for (ssize_t i = 0; i < total; i++)
        sum = sum * 31 + buf[i];
    /* the input steers the rest */
    if (total > 0 && buf[0] == 'W') {
        if (write(1, buf, (size_t)total) != total)
            return 6;
        if (write(2, "e", 1) != 1)
            return 7;
    }
    if (total > 1 && buf[1] == 'F') {
        /* a buffer that is not mapped: EFAULT from the host */
        char *volatile bad = (char *)16;
        errno = 0;
        if (write(1, bad, 4) != -1 || errno != EFAULT)
            return 8;
    }
    if (total > 2 && buf[2] == 'R') {
        void *ro = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ro == MAP_FAILED)
            return 9;
        errno = 0;
        if (read(0, ro, 4) != 0 && errno != EFAULT)
            return 10; /* at EOF: 0; else EFAULT */
    }
    if (total > 3 && buf[3] == 'D') {
        /* fd 1 becomes stderr's copy: its writes are the host's (captured stderr) */
        if (dup2(2, 1) != 1)
            return 11;
        if (write(1, "x", 1) != 1)
            return 12;
        if (fstat(1, &st) != 0)
            return 13;
    }
    if (total > 4 && buf[4] == 'C') {
        close(0);
        errno = 0;
        if (read(0, buf, 1) != -1 || errno != EBADF)
            return 14;
        if (fstat(0, &st) != -1)
            return 15;
    }
    if (total >= 6 && memcmp(buf, "WFRDC!", 6) == 0)
        *null_ptr = 1;
    return (int)(sum & 0x7f);
}
