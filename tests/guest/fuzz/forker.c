/* A target that forks for every input (a harness calling system() or a checker process): the
 * child looks at the input and says through its exit status; the parent crashes when the
 * child found the planted bytes. Every run has two processes, so a GPU lane forks and
 * waits as on the CPU engine. */
#include <sys/wait.h>
#include <unistd.h>

#include "input.h"

__attribute__((noinline)) static int check(const unsigned char *d, size_t n) {
    if (n >= 3 && d[0] == 'F')
        if (d[1] == 'O')
            if (d[2] == 'K')
                return 3;
    return n > 0 && d[0] == 'F' ? 1 : 0;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    pid_t c = fork();
    if (c < 0)
        return 2;
    if (c == 0)
        _exit(check(input_buf, n));
    int st = 0;
    waitpid(c, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
        crash_segv();
    puts(WEXITSTATUS(st) ? "f" : "ok");
    return 0;
}
