// A zombie pile-up: 200 children exit at once (status i % 256); only then does the parent
// reap them all with wait(), counting and summing their statuses; then wait() -> ECHILD.
// The children are all dead before the first wait: each writes one byte to a pipe before it
// exits and the parent waits for EOF on it.
#include "proc.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int p[2];
    CHECK(pipe(p) == 0);
    int forked = 0;
    for (int i = 0; i < n; i++) {
        pid_t c = fork_flushed();
        if (c == 0) {
            close(p[0]);
            CHECK(write(p[1], "z", 1) == 1);
            _exit(i % 256);
        }
        forked++;
    }
    close(p[1]);
    char buf[512];
    size_t got = read_full(p[0], buf, sizeof buf);
    printf("forked %d, bytes from children before EOF: %zu\n", forked, got);
    long sum = 0;
    int reaped = 0, st;
    pid_t r;
    while ((r = wait(&st)) > 0) {
        reaped++;
        CHECK(WIFEXITED(st));
        sum += WEXITSTATUS(st);
    }
    printf("reaped %d, sum of exit codes %ld, then wait() -> %s\n", reaped, sum, errname(errno));
    return 0;
}
