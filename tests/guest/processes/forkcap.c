// Forks until fork fails (run by the tests only under `armada run --max-processes N`, not
// under qemu): every child blocks reading a pipe; the parent reports fork's errno and how
// many children it made, then closes the pipe so that they all exit, and reaps them.
#include "proc.h"

int main(int argc, char **argv)
{
    int limit = argc > 1 ? atoi(argv[1]) : 100000;
    int p[2];
    CHECK(pipe(p) == 0);
    int made = 0, err = 0;
    while (made < limit) {
        fflush(stdout);
        pid_t c = fork();
        if (c < 0) {
            err = errno;
            break;
        }
        if (c == 0) {
            close(p[1]);
            char x;
            read(p[0], &x, 1);
            _exit(0);
        }
        made++;
    }
    close(p[1]);
    printf("fork failed with %s after %d children\n", err ? errname(err) : "nothing", made);
    int reaped = 0, st;
    while (wait(&st) > 0) reaped += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("reaped %d\n", reaped);
    return 0;
}
