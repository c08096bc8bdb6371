// posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK)) of busybox (argv[1]) with file actions
// (stdout to a file, dup2, close) and attributes (setpgroup, sigdefault/sigmask), posix_spawnp
// through PATH; `spawn BUSYBOX missing` spawns a file that does not exist (the result is
// printed: Linux returns ENOENT from posix_spawn itself).
#include "proc.h"
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>

extern char **environ;

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    char *bb = argv[1];
    pid_t p;
    int r;
    if (argc > 2 && !strcmp(argv[2], "missing")) {
        p = -1;
        r = posix_spawn(&p, "/nonexistent/program", NULL, NULL, (char *[]){"x", NULL}, environ);
        printf("posix_spawn of a missing file: %s\n", errname(r));
        if (r == 0) printf("  (child: %s)\n", status_text(reap(p)));
        r = posix_spawnp(&p, "no-such-program-anywhere", NULL, NULL, (char *[]){"x", NULL}, environ);
        printf("posix_spawnp of a missing name: %s\n", errname(r));
        if (r == 0) printf("  (child: %s)\n", status_text(reap(p)));
        r = posix_spawn(&p, ".", NULL, NULL, (char *[]){"x", NULL}, environ);
        printf("posix_spawn of a directory: %s\n", errname(r));
        if (r == 0) printf("  (child: %s)\n", status_text(reap(p)));
        return 0;
    }
    fflush(stdout);
    r = posix_spawn(&p, bb, NULL, NULL, (char *[]){"echo", "spawned echo", NULL}, environ);
    CHECK(r == 0 && p > 0);
    printf("plain: %s\n", status_text(reap(p)));
    fflush(stdout);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "spawn-out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    r = posix_spawn(&p, bb, &fa, NULL, (char *[]){"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, environ);
    CHECK(r == 0);
    printf("stdout+stderr to a file: %s\n", status_text(reap(p)));
    posix_spawn_file_actions_destroy(&fa);

    int pp[2];
    CHECK(pipe(pp) == 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    posix_spawn_file_actions_addclose(&fa, pp[0]);
    posix_spawn_file_actions_addclose(&fa, pp[1]);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t def, mask;
    sigemptyset(&def);
    sigaddset(&def, SIGTERM);
    posix_spawnattr_setsigdefault(&at, &def);
    sigemptyset(&mask);
    posix_spawnattr_setsigmask(&at, &mask);
    signal(SIGTERM, SIG_IGN); // reset to default in the child by SETSIGDEF
    r = posix_spawn(&p, bb, &fa, &at,
                    (char *[]){"sh", "-c", "echo in the pipe; kill -TERM $$; echo not reached", NULL}, environ);
    CHECK(r == 0);
    close(pp[1]);
    char buf[256];
    size_t n = read_full(pp[0], buf, sizeof buf - 1);
    buf[n] = 0;
    printf("piped, own process group: [%s] group leader: %d\n", buf, getpgid(p) == p);
    printf("  SIGTERM back to default in the child: %s\n", status_text(reap(p)));
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s", bb);
    setenv("PATH", dirname(dir), 1);
    fflush(stdout);
    r = posix_spawnp(&p, "busybox", NULL, NULL, (char *[]){"busybox", "echo", "spawnp through PATH", NULL}, environ);
    CHECK(r == 0);
    printf("spawnp: %s\n", status_text(reap(p)));

    int f = open("spawn-out.txt", O_RDONLY);
    CHECK(f >= 0);
    n = read_full(f, buf, sizeof buf - 1);
    buf[n] = 0;
    printf("spawn-out.txt: [%s]\n", buf);
    return 0;
}
