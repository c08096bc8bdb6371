// execve of #! scripts (interpreter: busybox, argv[1]): arguments as the kernel passes them
// ("#!INTERP ARG" gives INTERP, ARG, SCRIPT, then the execve's argv[1..]), a script whose
// interpreter is itself a script, CRLF-free trailing spaces, and the errors: a missing
// interpreter (ENOENT), a script without x permission (EACCES), a text file without #!
// (ENOEXEC), an interpreter that is a directory (EACCES).
//   script_exec BUSYBOX
#include "proc.h"
#include <fcntl.h>
#include <sys/stat.h>

static void put(const char *name, const char *text, int mode)
{
    int f = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(f >= 0);
    write_full(f, text, strlen(text));
    close(f);
    CHECK(chmod(name, mode) == 0);
}

static void run(const char *what, const char *path, char *const argv[])
{
    int o[2];
    CHECK(pipe(o) == 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        dup2(o[1], 1);
        dup2(o[1], 2);
        close(o[0]);
        close(o[1]);
        execv(path, argv);
        printf("execve failed: %s\n", errname(errno));
        fflush(stdout);
        _exit(127);
    }
    close(o[1]);
    char buf[2048];
    size_t n = read_full(o[0], buf, sizeof buf - 1);
    close(o[0]);
    buf[n] = 0;
    printf("%s: %s\n%s", what, status_text(reap(p)), buf);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    const char *bb = argv[1];
    char text[8192];
    snprintf(text, sizeof text,
             "#!%s sh\n"
             "echo \"script: \\$0=$0 \\$#=$#\"\n"
             "for a in \"$@\"; do echo \"  arg [$a]\"; done\n"
             "exit 5\n",
             bb);
    put("script.sh", text, 0755);
    run("#!busybox sh, 3 args", "./script.sh", (char *[]){"ignored-argv0", "one", "two words", "", NULL});

    // no optional argument: the interpreter gets the script path as its first argument; the
    // interpreter is busybox's sh applet through "sh" as the script's own interpreter
    snprintf(text, sizeof text, "#!%s   \n", bb); // trailing blanks are dropped
    put("noarg", text, 0755);
    run("#!busybox (no argument): busybox runs the applet named by the script path", "./noarg",
        (char *[]){"noarg", NULL});

    // a script as the interpreter of a script
    snprintf(text, sizeof text, "#!%s sh\necho \"inner interpreter got: $*\"\n", bb);
    put("interp.sh", text, 0755);
    put("outer.sh", "#!./interp.sh extra-arg\nnot run as shell code\n", 0755);
    run("script interpreted by a script", "./outer.sh", (char *[]){"outer.sh", "x", NULL});

    put("nointerp.sh", "#!/nonexistent/interpreter\necho no\n", 0755);
    run("missing interpreter", "./nointerp.sh", (char *[]){"nointerp.sh", NULL});
    snprintf(text, sizeof text, "#!%s sh\necho no\n", bb);
    put("notexec.sh", text, 0644);
    run("no x permission", "./notexec.sh", (char *[]){"notexec.sh", NULL});
    put("plain.txt", "echo this has no #! line\n", 0755);
    run("no #! line", "./plain.txt", (char *[]){"plain.txt", NULL});
    put("dirinterp.sh", "#!/\necho no\n", 0755);
    run("interpreter is a directory", "./dirinterp.sh", (char *[]){"dirinterp.sh", NULL});
    put("empty", "", 0755);
    run("empty file", "./empty", (char *[]){"empty", NULL});
    return 0;
}
