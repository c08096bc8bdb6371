// Assorted syscalls with deterministic results: mmap/munmap/mprotect/mremap, brk/sbrk,
// uname, getcwd/chdir, pipe (within one process), dup, clock monotonicity, nanosleep,
// getpid consistency, rlimits, sysconf, ioctl on non-tty, readlink /proc/self/exe presence.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>

int main(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    printf("pagesize=%ld\n", pg);

    unsigned char *m = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap ok=%d page_aligned=%d zeroed=%d\n", m != MAP_FAILED, ((uintptr_t)m % pg) == 0, m[0] == 0 && m[16 * pg - 1] == 0);
    for (long i = 0; i < 16 * pg; i++) m[i] = (unsigned char)(i / pg);
    printf("mprotect ro=%d\n", mprotect(m, pg, PROT_READ));
    printf("munmap middle=%d\n", munmap(m + 4 * pg, 4 * pg));
    unsigned char *m2 = mremap(m + 8 * pg, 8 * pg, 32 * pg, MREMAP_MAYMOVE);
    printf("mremap ok=%d kept=%d %d\n", m2 != MAP_FAILED, m2[0], m2[8 * pg - 1]);
    m2[32 * pg - 1] = 9;
    printf("fixed mmap over hole: %d\n", mmap(m + 4 * pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == m + 4 * pg);
    munmap(m, 8 * pg);
    munmap(m2, 32 * pg);
    errno = 0;
    void *bad = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap len 0: failed=%d errno=%s\n", bad == MAP_FAILED, errno == EINVAL ? "EINVAL" : strerror(errno));

    // File-backed mmap.
    const char *fname = "armada_test_syscalls.tmp";
    int fd = open(fname, O_RDWR | O_CREAT | O_TRUNC, 0600);
    char text[100];
    for (int i = 0; i < 100; i++) text[i] = (char)('A' + i % 26);
    write(fd, text, 100);
    char *fm = mmap(NULL, 100, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("file mmap: %.10s ... %c\n", fm, fm[99]);
    munmap(fm, 100);
    char *sm = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    memcpy(sm, "SHARED", 6);
    msync(sm, pg, MS_SYNC);
    munmap(sm, pg);
    char back[8] = {0};
    pread(fd, back, 6, 0);
    printf("shared mapping wrote back: %s\n", back);
    close(fd);
    unlink(fname);

    // brk / sbrk
    void *b0 = sbrk(0);
    void *b1 = sbrk(100000);
    void *b2 = sbrk(0);
    memset(b1, 1, 100000);
    printf("sbrk grew by %ld, returned old break=%d\n", (long)((char *)b2 - (char *)b0), b1 == b0);
    sbrk(-100000);
    printf("sbrk shrink back=%d\n", sbrk(0) == b0);

    struct utsname u;
    uname(&u);
    printf("uname sysname=%s machine=%s\n", u.sysname, u.machine);

    char cwd[4096], cwd2[4096];
    getcwd(cwd, sizeof cwd);
    mkdir("armada_test_syscalls_dir", 0755);
    printf("chdir=%d\n", chdir("armada_test_syscalls_dir"));
    getcwd(cwd2, sizeof cwd2);
    size_t l = strlen(cwd);
    printf("cwd extended correctly=%d tail=%s\n", strncmp(cwd, cwd2, l) == 0, cwd2 + l);
    chdir("..");
    rmdir("armada_test_syscalls_dir");

    int p[2];
    printf("pipe=%d\n", pipe(p));
    write(p[1], "through a pipe", 14);
    close(p[1]);
    char pb[32] = {0};
    ssize_t n = read(p[0], pb, sizeof pb - 1);
    ssize_t n2 = read(p[0], pb + 20, 5);
    printf("pipe read %zd [%s] then %zd\n", n, pb, n2);
    close(p[0]);

    struct timespec t1, t2, res;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct timespec d = {0, 2000000};
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    long long ns = (t2.tv_sec - t1.tv_sec) * 1000000000LL + (t2.tv_nsec - t1.tv_nsec);
    printf("monotonic advanced >=2ms: %d\n", ns >= 2000000);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("realtime after 2020: %d  clock_getres ok=%d\n", tv.tv_sec > 1577836800, clock_getres(CLOCK_MONOTONIC, &res) == 0);
    printf("time() consistent: %d\n", time(NULL) - tv.tv_sec <= 2);

    printf("getpid stable=%d gettid==pid=%d ppid>0=%d\n", getpid() == getpid(), (pid_t)syscall(SYS_gettid) == getpid(), getppid() > 0);
    printf("uid==euid=%d gid==egid=%d\n", getuid() == geteuid(), getgid() == getegid());
    struct rlimit rl;
    printf("getrlimit(NOFILE)=%d cur>=64=%d\n", getrlimit(RLIMIT_NOFILE, &rl), rl.rlim_cur >= 64);
    struct termios tio;
    errno = 0;
    int fd2 = open("armada_test_syscalls.tmp2", O_RDWR | O_CREAT, 0600);
    printf("tcgetattr on file=%d errno=%s isatty=%d\n", tcgetattr(fd2, &tio), errno == ENOTTY ? "ENOTTY" : strerror(errno), isatty(fd2));
    close(fd2);
    unlink("armada_test_syscalls.tmp2");
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    printf("readlink /proc/self/exe ok=%d\n", el > 0);
    struct stat st;
    printf("fstat stdout ok=%d\n", fstat(1, &st) == 0);
    return 0;
}
