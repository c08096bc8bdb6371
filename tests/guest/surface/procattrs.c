// A process's own settings, as programs set and read them back: the umask applied to new
// files, directories and FIFOs (umask 0 gives 0666/0777, whatever armada's own umask);
// prctl's keep-caps, no-new-privs, timer slack and capability bounding set; CPU-time clocks
// of the process and of a thread (clock_getcpuclockid, pthread_getcpuclockid);
// /proc/self/cwd; and the working directory after chdir("/"). Nothing here needs
// privileges, so qemu-aarch64 run as root or not prints the same.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void mode_of(const char *what, const char *path) {
    struct stat st;
    if (lstat(path, &st)) {
        printf("%s: %s\n", what, strerror(errno));
        return;
    }
    printf("%-28s %04o\n", what, st.st_mode & 07777);
}

static int hold[2];

// Spins, then stays alive until main has read its clock.
static void *spin(void *arg) {
    volatile unsigned long x = 0;
    for (int i = 0; i < 100000; i++)
        x += i;
    char c;
    if (read(hold[0], &c, 1) != 1)
        return NULL;
    return arg;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char dir[] = "/tmp/armada-procattrs-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    if (chdir(dir))
        return 1;

    // umask
    umask(0);
    close(open("f0666", O_CREAT | O_WRONLY, 0666));
    mode_of("umask 0, open 0666", "f0666");
    mkdir("d0777", 0777);
    mode_of("umask 0, mkdir 0777", "d0777");
    mkfifo("p0666", 0666);
    mode_of("umask 0, mkfifo 0666", "p0666");
    close(open("x", O_CREAT | O_EXCL | O_WRONLY, 0777));
    mode_of("umask 0, O_EXCL 0777", "x");
    int fd = open("f0666", O_CREAT | O_WRONLY, 0600);
    mode_of("existing file keeps its mode", "f0666");
    close(fd);
    printf("umask(027) was %03o\n", umask(027));
    close(open("f027", O_CREAT | O_WRONLY, 0666));
    mode_of("umask 027, open 0666", "f027");
    mkdir("d027", 0777);
    mode_of("umask 027, mkdir 0777", "d027");
    umask(022);

    // prctl
    printf("keepcaps %d", prctl(PR_GET_KEEPCAPS));
    printf(", set %d", prctl(PR_SET_KEEPCAPS, 1));
    printf(", now %d", prctl(PR_GET_KEEPCAPS));
    errno = 0;
    printf(", set 2: %d %s\n", prctl(PR_SET_KEEPCAPS, 2), errno == EINVAL ? "EINVAL" : "");
    printf("no_new_privs %d", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    printf(", set %d", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    printf(", now %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    printf("timerslack default %d", prctl(PR_GET_TIMERSLACK));
    prctl(PR_SET_TIMERSLACK, 1000);
    printf(", set 1000: %d\n", prctl(PR_GET_TIMERSLACK));
    errno = 0;
    printf("capbset_read 0: %d, 1000: %d %s\n", prctl(PR_CAPBSET_READ, 0),
           prctl(PR_CAPBSET_READ, 1000), errno == EINVAL ? "EINVAL" : "");

    // CPU-time clocks
    clockid_t pc, tc;
    struct timespec ts;
    printf("clock_getcpuclockid(self) %d", clock_getcpuclockid(getpid(), &pc));
    printf(", read %d\n", clock_gettime(pc, &ts));
    pthread_t t;
    if (pipe(hold))
        return 1;
    pthread_create(&t, NULL, spin, NULL);
    printf("pthread_getcpuclockid(thread) %d", pthread_getcpuclockid(t, &tc));
    printf(", read %d", clock_gettime(tc, &ts));
    printf(", res %d\n", clock_getres(tc, &ts));
    if (write(hold[1], "", 1) != 1)
        return 1;
    pthread_join(t, NULL);
    printf("pthread_getcpuclockid(self) %d", pthread_getcpuclockid(pthread_self(), &tc));
    printf(", read %d\n", clock_gettime(tc, &ts));
    errno = 0;
    printf("a clock of no such thread: %d %s\n", clock_gettime(((~(clockid_t)999999) << 3) | 6, &ts),
           errno == EINVAL ? "EINVAL" : strerror(errno));

    // the working directory
    char buf[4096] = "";
    ssize_t n = readlink("/proc/self/cwd", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("/proc/self/cwd is the cwd: %d\n", !strcmp(buf, dir));
    mode_of("/proc/self/cwd/d0777", "/proc/self/cwd/d0777");

    // a cwd deeper than PATH_MAX: relative paths still work from it (Linux walks from the
    // cwd it holds); getcwd says ERANGE/ENAMETOOLONG and the way back is by ".."
    char name[101];
    memset(name, 'a', 100);
    name[100] = 0;
    int depth = 0, ok = 1;
    for (; depth < 45 && ok; depth++)
        ok = mkdir(name, 0755) == 0 && chdir(name) == 0;
    printf("nested %d directories of 100 bytes: %s\n", depth, ok ? "ok" : strerror(errno));
    int lf = open("deep", O_CREAT | O_WRONLY, 0644);
    struct stat st;
    printf("file at the bottom: open %d, write %zd, stat %d", lf >= 0, write(lf, "x", 1),
           stat("deep", &st));
    printf(", size %lld, fstatat(..) %d\n", (long long)st.st_size,
           fstatat(AT_FDCWD, "../", &st, 0));
    close(lf);
    errno = 0;
    char small[64];
    printf("getcwd: %s %s\n", getcwd(small, sizeof small) ? "?" : "NULL", strerror(errno));
    printf("unlink %d", unlink("deep"));
    int removed = 0;
    for (; depth > 0; depth--)
        removed += chdir("..") == 0 && rmdir(name) == 0;
    printf(", removed %d, back: %d\n", removed,
           readlink("/proc/self/cwd", buf, sizeof buf - 1) == (ssize_t)strlen(dir));
    // nice values: set, read back, inherited; the errors
    int base = getpriority(PRIO_PROCESS, 0);
    printf("nice: setpriority +3 %d", setpriority(PRIO_PROCESS, 0, base + 3));
    printf(", now base+%d", getpriority(PRIO_PROCESS, 0) - base);
    printf(", by pid base+%d", getpriority(PRIO_PROCESS, getpid()) - base);
    // (not PRIO_PGRP: the first process's group is the host's, with host processes in it)
    fflush(stdout);
    pid_t kid = fork();
    if (kid == 0) {
        printf(", child inherits base+%d", getpriority(PRIO_PROCESS, 0) - base);
        fflush(stdout);
        _exit(0);
    }
    waitpid(kid, NULL, 0);
    errno = 0;
    printf(", which 9: %d %s", setpriority(9, 0, 0), errno == EINVAL ? "EINVAL" : strerror(errno));
    errno = 0;
    printf(", no such pid: %d %s", getpriority(PRIO_PROCESS, 999999),
           errno == ESRCH ? "ESRCH" : strerror(errno));
    printf(", back %d\n", setpriority(PRIO_PROCESS, 0, base));

    // pipe sizes: F_SETPIPE_SZ rounds to a power of two of pages and bounds writes
    int pp[2];
    pipe(pp);
    fcntl(pp[1], F_SETFL, O_NONBLOCK);
    printf("pipe size %d", fcntl(pp[0], F_GETPIPE_SZ));
    printf(", set 100000: %d", fcntl(pp[1], F_SETPIPE_SZ, 100000));
    printf(", set 1: %d", fcntl(pp[1], F_SETPIPE_SZ, 1));
    printf(", set 8192: %d", fcntl(pp[1], F_SETPIPE_SZ, 8192));
    char chunk[1000] = {0};
    int filled = 0;
    for (ssize_t w; (w = write(pp[1], chunk, sizeof chunk)) > 0;)
        filled += w;
    printf(", holds %d", filled);
    errno = 0;
    printf(", set 4096 when full: %d %s\n", fcntl(pp[1], F_SETPIPE_SZ, 4096),
           errno == EBUSY ? "EBUSY" : strerror(errno));
    close(pp[0]);
    close(pp[1]);

    // /proc/self/fd lists this process's fds (not the emulator's), rewinddir included.
    // Only fds 0-5 and 40 are shown: others may have been inherited from whatever ran
    // the test (qemu passes those on; armada gives a guest only 0-2).
    int d40 = dup2(0, 40);
    DIR *dir_fds = opendir("/proc/self/fd");
    for (int pass = 0; pass < 2 && dir_fds; pass++) {
        printf("/proc/self/fd:");
        struct dirent *e;
        while ((e = readdir(dir_fds)))
            if (e->d_name[0] == '.' || atoi(e->d_name) < 6 || atoi(e->d_name) == 40)
                printf(" %s", e->d_name);
        printf("\n");
        rewinddir(dir_fds);
    }
    if (dir_fds)
        closedir(dir_fds);
    close(d40);

    chdir("/");
    printf("after chdir(\"/\"): getcwd %s", getcwd(buf, sizeof buf));
    n = readlink("/proc/self/cwd", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf(", /proc/self/cwd %s\n", buf);

    const char *made[] = {"f0666", "p0666", "x", "f027"};
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%s/%s", dir, made[i]);
        unlink(buf);
    }
    snprintf(buf, sizeof buf, "%s/d0777", dir);
    rmdir(buf);
    snprintf(buf, sizeof buf, "%s/d027", dir);
    rmdir(buf);
    rmdir(dir);
    return 0;
}
