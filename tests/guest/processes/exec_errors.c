// execve failures seen by the caller (the process stays, errno tells why):
//   exec_errors BUSYBOX           ENOENT, EACCES (directory, no x bit), ENOTDIR, ENOEXEC
//                                 (empty file, bad ELF header), ENAMETOOLONG, EFAULT; a failed
//                                 execve leaves the process intact; fexecve of busybox
//   exec_errors execveat BUSYBOX  execveat with a dirfd, and its ENOENT/EACCES (qemu 7.2 has
//                                 no execveat: the tests check this one under armada only)
//   exec_errors host PATH         execve of a host (x86-64) program: armada answers ENOEXEC.
//                                 Not compared with qemu (with binfmt_misc the host program
//                                 really runs).
#include "proc.h"
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static void try(const char *what, const char *path)
{
    errno = 0;
    int r = execv(path, (char *[]){"x", NULL});
    printf("%-34s %d %s\n", what, r, errname(errno));
}

static int execveat_checks(const char *bb)
{
    char d[4096], b[4096];
    snprintf(d, sizeof d, "%s", bb);
    snprintf(b, sizeof b, "%s", bb);
    int dirfd = open(dirname(d), O_RDONLY | O_DIRECTORY);
    CHECK(dirfd >= 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        syscall(SYS_execveat, dirfd, basename(b), (char *[]){"echo", "execveat with a dirfd", NULL},
                (char *[]){NULL}, 0);
        printf("execveat failed: %s\n", errname(errno));
        fflush(stdout);
        _exit(127);
    }
    printf("execveat(dirfd): %s\n", status_text(reap(p)));
    CHECK(mkdir("dir", 0755) == 0);
    errno = 0;
    long r = syscall(SYS_execveat, dirfd, "no-such-file", (char *[]){"x", NULL}, (char *[]){NULL}, 0);
    printf("execveat of a missing file: %ld %s\n", r, errname(errno));
    errno = 0;
    r = syscall(SYS_execveat, AT_FDCWD, "dir", (char *[]){"x", NULL}, (char *[]){NULL}, 0);
    printf("execveat of a directory: %ld %s\n", r, errname(errno));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "host")) {
        try("host program", argv[2]);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "execveat")) return execveat_checks(argv[2]);
    CHECK(argc == 2);
    int f = open("file.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(f >= 0);
    close(f);
    CHECK(mkdir("dir", 0755) == 0);
    f = open("exe-empty", O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECK(f >= 0);
    close(f);
    f = open("garbage", O_WRONLY | O_CREAT | O_TRUNC, 0755);
    CHECK(f >= 0);
    write_full(f, "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0 not really an ELF file", 41);
    close(f);
    try("missing file", "./no-such-file");
    try("missing directory", "/no/such/dir/prog");
    try("a directory", "dir");
    try("no x permission", "file.txt");
    try("path through a file", "file.txt/x");
    try("empty executable file", "./exe-empty");
    try("truncated ELF header", "./garbage");
    char longname[5000];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    try("path too long", longname);
    errno = 0;
    long r = syscall(SYS_execve, (char *)8, (char *[]){"x", NULL}, (char *[]){NULL});
    printf("%-34s %ld %s\n", "bad path pointer", r, errname(errno));
    printf("still running after all of these: yes\n");
    const char *bb = argv[1];
    int fd = open(bb, O_RDONLY);
    CHECK(fd >= 0);
    pid_t p = fork_flushed();
    if (p == 0) {
        fexecve(fd, (char *[]){"echo", "fexecve of busybox", NULL}, (char *[]){NULL});
        printf("fexecve failed: %s\n", errname(errno));
        fflush(stdout);
        _exit(127);
    }
    printf("fexecve: %s\n", status_text(reap(p)));
    return 0;
}
