// The fork benchmark (armada bench): a process with MIB MiB of written memory forks
// FORKS times; each child exits at once and the parent waits for it. Copy-on-write means
// no page is copied, so a fork costs the same whatever the process's size.
//   fork_big [MIB] [FORKS]   (default 100 20)
#include "proc.h"

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 100;
    int forks = argc > 2 ? atoi(argv[2]) : 20;
    size_t len = (size_t)mib << 20;
    unsigned char *p = malloc(len);
    CHECK(p != NULL);
    for (size_t i = 0; i < len; i += 4096)
        p[i] = (unsigned char)(i >> 12);
    for (int k = 0; k < forks; k++) {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0)
            _exit(p[4096 * (size_t)k] == (unsigned char)k ? 0 : 1);
        int st;
        CHECK(waitpid(c, &st, 0) == c);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    printf("%d forks of a %ld MiB process\n", forks, mib);
    return 0;
}
