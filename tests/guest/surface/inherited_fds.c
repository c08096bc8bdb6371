// The host fds beyond stdio that the emulator was started with reach the guest at their own
// numbers, as a shell's `3>out 4<in` gives them (run by surface.rs's
// host_fds_beyond_stdio_reach_the_guest, which opens 3 and 4 and leaves 5 closed).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    ssize_t w = write(3, "three\n", 6);
    char b[32] = {0};
    ssize_t r = read(4, b, sizeof b - 1);
    printf("write(3): %zd%s\n", w, w < 0 ? strerror(errno) : "");
    printf("read(4): %zd %s", r, r > 0 ? b : "\n");
    printf("fd 4 read-only: %s\n", (fcntl(4, F_GETFL) & O_ACCMODE) == O_RDONLY ? "yes" : "no");
    printf("fd 5 open: %s\n", fcntl(5, F_GETFD) >= 0 ? "yes" : "no");
    // closing one is the guest's own business: the next open takes the number again
    close(3);
    int fd = open("/dev/null", O_WRONLY);
    printf("reopened: %d\n", fd);
    return 0;
}
