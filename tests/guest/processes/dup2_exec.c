// dup2 onto stdin/stdout/stderr, then execve of busybox (argv[1]): the parent feeds a child
// `tr` through one pipe and reads its output from another; argv[0] chooses busybox's applet
// (the exec'd path stays busybox); an explicit envp is all the new program sees (in any
// order); stderr redirected into the same pipe; execvp through PATH; an exec'd program's exit
// status; stdin and stdout from files opened before the exec.
//   dup2_exec BUSYBOX
#include "proc.h"
#include <fcntl.h>
#include <libgen.h>

static char *bb;

// Runs BB with argv, stdin from `in` (NULL: /dev/null), returns stdout+stderr in out.
static int run(char *const argv[], char *const envp[], const char *in, char *out, size_t cap)
{
    int i[2], o[2];
    CHECK(pipe(i) == 0 && pipe(o) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        CHECK(dup2(i[0], 0) == 0);
        CHECK(dup2(o[1], 1) == 1);
        CHECK(dup2(o[1], 2) == 2);
        close(i[0]); close(i[1]); close(o[0]); close(o[1]);
        if (envp) execve(bb, argv, envp);
        else execv(bb, argv);
        _exit(126);
    }
    close(i[0]);
    close(o[1]);
    if (in) write_full(i[1], in, strlen(in));
    close(i[1]);
    size_t n = read_full(o[0], out, cap - 1);
    out[n] = 0;
    close(o[0]);
    return reap(p);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Sorts the lines of s in place (qemu-user hands its guests the environment in reverse order,
// Linux and armada in the order given: `env` output is compared sorted).
static void sort_lines(char *s)
{
    char *lines[64], copy[4096];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", s);
    for (char *t = strtok(copy, "\n"); t && n < 64; t = strtok(NULL, "\n")) lines[n++] = t;
    qsort(lines, (size_t)n, sizeof lines[0], cmp_str);
    s[0] = 0;
    for (int i = 0; i < n; i++) {
        strcat(s, lines[i]);
        strcat(s, "\n");
    }
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    bb = argv[1];
    char out[4096];
    int st;
    st = run((char *[]){"tr", "a-z", "A-Z", NULL}, NULL, "hello from the parent\nsecond line\n", out, sizeof out);
    printf("tr: [%s] %s\n", out, status_text(st));
    st = run((char *[]){"busybox", "wc", "-l", NULL}, NULL, "1\n2\n3\n4\n", out, sizeof out);
    printf("busybox wc -l: [%s] %s\n", out, status_text(st));
    st = run((char *[]){"env", NULL}, (char *[]){"ALPHA=1", "BETA=two words", "GAMMA=", NULL}, NULL, out, sizeof out);
    sort_lines(out);
    printf("env with envp {ALPHA, BETA, GAMMA} (sorted): [%s] %s\n", out, status_text(st));
    st = run((char *[]){"env", NULL}, (char *[]){NULL}, NULL, out, sizeof out);
    printf("env with an empty envp: [%s] %s\n", out, status_text(st));
    st = run((char *[]){"sh", "-c", "echo to-out; echo to-err >&2; exit 6", NULL}, NULL, NULL, out, sizeof out);
    printf("sh -c with 2>&1: [%s] %s\n", out, status_text(st));
    st = run((char *[]){"sh", "-c", "read a; read b; echo \"$b/$a\"", NULL}, NULL, "first\nsecond\n", out, sizeof out);
    printf("sh reads stdin: [%s] %s\n", out, status_text(st));
    st = run((char *[]){"cat", "/nonexistent/file", NULL}, NULL, NULL, out, sizeof out);
    printf("cat missing: [%s] %s\n", out, status_text(st));

    // execvp: PATH holds busybox's directory; argv[0] is "busybox"
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", bb);
    char path[4200];
    snprintf(path, sizeof path, "/nonexistent-dir:%s", dirname(dir));
    int o[2];
    CHECK(pipe(o) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        setenv("PATH", path, 1);
        dup2(o[1], 1);
        close(o[0]);
        close(o[1]);
        execvp("busybox", (char *[]){"busybox", "echo", "found through PATH", NULL});
        _exit(127);
    }
    close(o[1]);
    size_t n = read_full(o[0], out, sizeof out - 1);
    out[n] = 0;
    printf("execvp: [%s] %s\n", out, status_text(reap(p)));

    // stdin from a file opened before exec, stdout appended to a file
    int f = open("input.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(f >= 0);
    write_full(f, "zeta\nalpha\nmu\n", 14);
    close(f);
    p = fork_flushed();
    if (p == 0) {
        int in = open("input.txt", O_RDONLY);
        int outf = open("sorted.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
        CHECK(in >= 0 && outf >= 0);
        dup2(in, 0);
        dup2(outf, 1);
        close(in);
        close(outf);
        execl(bb, "sort", "-r", (char *)NULL);
        _exit(127);
    }
    printf("sort < input.txt >> sorted.txt: %s\n", status_text(reap(p)));
    f = open("sorted.txt", O_RDONLY);
    n = read_full(f, out, sizeof out - 1);
    out[n] = 0;
    close(f);
    printf("sorted.txt: [%s]\n", out);
    return 0;
}
