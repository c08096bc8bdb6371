/* Exec of host programs (armada run --host-exec; qemu-aarch64 runs them through binfmt_misc
 * as the kernel does): a host `echo` writing into the guest's pipe, a host `tr` reading the
 * guest's pipe and writing another, a host shell's exit status and its death by a signal
 * seen by waitpid, posix_spawn (vfork) of a host program, a signal sent to a host program,
 * and a host program inheriting an fd other than 0-2. HOST_SH names a host shell (default
 * /bin/sh) and HOST_BIN a folder of host coreutils (default /bin). */
#include "../processes/proc.h"
#include <spawn.h>

extern char **environ;

static const char *bin(const char *name)
{
    static char buf[8][256];
    static int k;
    const char *dir = getenv("HOST_BIN") ? getenv("HOST_BIN") : "/bin";
    char *b = buf[k++ & 7];
    snprintf(b, 256, "%s/%s", dir, name);
    return b;
}

static const char *sh(void) { return getenv("HOST_SH") ? getenv("HOST_SH") : "/bin/sh"; }

/* Runs argv with stdin from `in` (NULL: none) and returns what it wrote on stdout. */
static void run_with_pipes(const char *const *argv, const char *in, char *out, size_t cap)
{
    int to[2], from[2];
    CHECK(pipe(to) == 0 && pipe(from) == 0);
    pid_t pid = fork_flushed();
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execve(argv[0], (char *const *)argv, environ);
        printf("execve %s: %s\n", argv[0], errname(errno));
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    if (in)
        write_full(to[1], in, strlen(in));
    close(to[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(from[0], out + n, cap - 1 - n)) > 0)
        n += r;
    out[n] = 0;
    close(from[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("  %s: %s\n", argv[0][0] ? strrchr(argv[0], '/') + 1 : "?", status_text(st));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char out[4096];

    const char *echo[] = {bin("echo"), "hello", "from", "the", "host", NULL};
    run_with_pipes(echo, NULL, out, sizeof out);
    printf("echo wrote: %s", out);

    const char *tr[] = {bin("tr"), "a-z", "A-Z", NULL};
    run_with_pipes(tr, "through a host tr\nand back\n", out, sizeof out);
    printf("tr wrote: %s", out);

    /* a large stream both ways */
    static char big[200001];
    for (int i = 0; i < 200000; i++)
        big[i] = "abcdefghij\n"[i % 11];
    const char *wc[] = {bin("wc"), "-c", NULL};
    run_with_pipes(wc, big, out, sizeof out);
    printf("wc -c of 200000 bytes: %s", out);

    /* exit statuses and a death by signal */
    const char *ex[] = {sh(), "-c", "exit 3", NULL};
    run_with_pipes(ex, NULL, out, sizeof out);
    const char *killed[] = {sh(), "-c", "kill -TERM $$", NULL};
    run_with_pipes(killed, NULL, out, sizeof out);

    /* posix_spawn (vfork and exec) */
    pid_t pid;
    char *const t[] = {(char *)bin("true"), NULL};
    int r = posix_spawn(&pid, t[0], NULL, NULL, t, environ);
    int st = 0;
    CHECK(r == 0 && waitpid(pid, &st, 0) == pid);
    printf("posix_spawn true: %s\n", status_text(st));

    /* a signal to a host program */
    pid = fork_flushed();
    if (pid == 0) {
        char *const s[] = {(char *)bin("sleep"), "30", NULL};
        execve(s[0], s, environ);
        _exit(127);
    }
    usleep(100000);
    CHECK(kill(pid, SIGKILL) == 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("sleep after SIGKILL: %s\n", status_text(st));

    /* an fd other than 0-2 is passed: the shell writes to fd 5 */
    int p[2];
    CHECK(pipe(p) == 0);
    pid = fork_flushed();
    if (pid == 0) {
        dup2(p[1], 5);
        close(p[0]);
        close(p[1]);
        char *const s[] = {(char *)sh(), "-c", "echo on fd 5 >&5", NULL};
        execve(s[0], s, environ);
        _exit(127);
    }
    close(p[1]);
    ssize_t n = read(p[0], out, sizeof out - 1);
    out[n > 0 ? n : 0] = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("fd 5: %s", out);
    close(p[0]);
    return 0;
}
