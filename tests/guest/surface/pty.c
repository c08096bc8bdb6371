// Pseudo-terminals, which a guest opens on the host as under qemu-user: posix_openpt,
// grantpt, unlockpt, ptsname, the slave's termios and window size, bytes both ways, and
// openpty (TIOCGPTPEER). A host without /dev/ptmx gives the same line under both.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    printf("posix_openpt: %s\n", m < 0 ? strerror(errno) : "ok");
    if (m < 0)
        return 0;
    printf("grantpt: %d\n", grantpt(m));
    printf("unlockpt: %d\n", unlockpt(m));
    char *name = ptsname(m);
    printf("ptsname: %s\n", name ? (strncmp(name, "/dev/pts/", 9) == 0 ? "/dev/pts/N" : name) : strerror(errno));
    int s = open(name, O_RDWR | O_NOCTTY);
    printf("open slave: %s\n", s < 0 ? strerror(errno) : "ok");
    printf("isatty: %d %d\n", isatty(m), isatty(s));
    struct termios t;
    printf("tcgetattr: %d\n", tcgetattr(s, &t));
    cfmakeraw(&t);
    printf("tcsetattr: %d\n", tcsetattr(s, TCSANOW, &t));
    struct winsize w = {24, 80, 0, 0};
    printf("TIOCSWINSZ: %d\n", ioctl(m, TIOCSWINSZ, &w));
    memset(&w, 0, sizeof w);
    printf("TIOCGWINSZ: %d %dx%d\n", ioctl(s, TIOCGWINSZ, &w), w.ws_row, w.ws_col);
    write(s, "hello", 5);
    char buf[16] = {0};
    printf("read master: %zd %s\n", read(m, buf, sizeof buf), buf);
    write(m, "world", 5);
    memset(buf, 0, sizeof buf);
    printf("read slave: %zd %s\n", read(s, buf, sizeof buf), buf);
    int a, b;
    char nm[64];
    printf("openpty: %d\n", openpty(&a, &b, nm, NULL, NULL));
    printf("ttyname slave: %s\n", ttyname(b) && strncmp(ttyname(b), "/dev/pts/", 9) == 0 ? "/dev/pts/N" : "?");
    return 0;
}
