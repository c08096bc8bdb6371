// A file descriptor inherited across fork shares its file offset (and O_APPEND, flags) with
// the parent: the child writes, the parent waits, then writes after it; lseek in the child
// moves the parent's offset too; a dup'ed fd shares it as well; separately opened fds do not.
#include "proc.h"
#include <fcntl.h>

int main(void)
{
    int fd = open("shared.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    write_full(fd, "parent-1\n", 9);
    pid_t p = fork_flushed();
    if (p == 0) {
        write_full(fd, "child-1\n", 8);
        write_full(fd, "child-2\n", 8);
        _exit(0);
    }
    reap(p);
    printf("offset in the parent after the child wrote: %ld\n", (long)lseek(fd, 0, SEEK_CUR));
    write_full(fd, "parent-2\n", 9);
    p = fork_flushed();
    if (p == 0) {
        CHECK(lseek(fd, 0, SEEK_SET) == 0);
        _exit(0);
    }
    reap(p);
    printf("offset after the child's lseek(0): %ld\n", (long)lseek(fd, 0, SEEK_CUR));
    char buf[256];
    size_t n = read_full(fd, buf, sizeof buf - 1);
    buf[n] = 0;
    printf("file:\n%s", buf);

    // O_NONBLOCK/O_APPEND set by the child via F_SETFL is seen by the parent (shared description)
    p = fork_flushed();
    if (p == 0) {
        CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND) == 0);
        _exit(0);
    }
    reap(p);
    printf("O_APPEND set by the child, seen by the parent: %d\n", (fcntl(fd, F_GETFL) & O_APPEND) != 0);
    lseek(fd, 0, SEEK_SET);
    write_full(fd, "appended\n", 9);
    printf("offset after an O_APPEND write: %ld\n", (long)lseek(fd, 0, SEEK_CUR));

    // a second open() has its own offset, in parent and child
    int other = open("shared.txt", O_RDONLY);
    CHECK(other >= 0);
    p = fork_flushed();
    if (p == 0) {
        char c[5];
        CHECK(read_full(other, c, 5) == 5);
        _exit(0);
    }
    reap(p);
    printf("separately opened fd: offset %ld (moved by the child), shared fd: %ld\n",
           (long)lseek(other, 0, SEEK_CUR), (long)lseek(fd, 0, SEEK_CUR));

    // both write alternately, synchronised through pipes: lines interleave in order
    int a[2], b[2];
    CHECK(pipe(a) == 0 && pipe(b) == 0);
    int log = open("pingpong.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(log >= 0);
    p = fork_flushed();
    if (p == 0) {
        char t;
        for (int i = 0; i < 5; i++) {
            CHECK(read_full(a[0], &t, 1) == 1);
            dprintf(log, "child %d\n", i);
            CHECK(write(b[1], "t", 1) == 1);
        }
        _exit(0);
    }
    for (int i = 0; i < 5; i++) {
        dprintf(log, "parent %d\n", i);
        CHECK(write(a[1], "t", 1) == 1);
        char t;
        CHECK(read_full(b[0], &t, 1) == 1);
    }
    reap(p);
    printf("pingpong.txt ends at %ld\n", (long)lseek(log, 0, SEEK_CUR));
    return 0;
}
