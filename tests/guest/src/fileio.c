// File I/O in the current directory: stdio (fopen/fwrite/fread/fseek/ftell), raw fds
// (open/read/write/lseek/pread/pwrite), stat/fstat, mkdir, opendir/readdir (sorted), rename, unlink.
// Every file it creates is named armada_test_fileio* and removed at the end.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stdint.h>

#define F1 "armada_test_fileio.tmp"
#define F2 "armada_test_fileio_renamed.tmp"
#define D1 "armada_test_fileio_dir"

static int failures;
#define CHECK(cond) do { if (!(cond)) { printf("CHECK FAILED line %d: %s (errno=%d %s)\n", __LINE__, #cond, errno, strerror(errno)); failures++; } } while (0)

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_dir(const char *path)
{
    DIR *d = opendir(path);
    CHECK(d != NULL);
    if (!d) return;
    char *names[64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmpstr);
    printf("listing %s (%d entries):", path, n);
    for (int i = 0; i < n; i++) {
        struct stat sb;
        char full[512];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        int r = lstat(full, &sb);
        printf(" %s%s", names[i], r == 0 && S_ISDIR(sb.st_mode) ? "/" : "");
        if (r == 0 && S_ISREG(sb.st_mode)) printf("(%lld)", (long long)sb.st_size);
        free(names[i]);
    }
    printf("\n");
}

int main(void)
{
    // --- stdio ---
    FILE *f = fopen(F1, "wb");
    CHECK(f != NULL);
    unsigned char block[1000];
    for (int i = 0; i < 1000; i++) block[i] = (unsigned char)(i * 13 + 7);
    for (int i = 0; i < 50; i++) CHECK(fwrite(block, 1, sizeof block, f) == sizeof block);
    fprintf(f, "trailer line %d\n", 12345);
    CHECK(ftell(f) == 50000 + 19);
    CHECK(fclose(f) == 0);

    f = fopen(F1, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long size = ftell(f);
    printf("stdio size=%ld\n", size);
    CHECK(fseek(f, 12345, SEEK_SET) == 0);
    unsigned char buf[4096];
    size_t got = fread(buf, 1, 10, f);
    printf("read at 12345: got=%zu bytes:", got);
    for (size_t i = 0; i < got; i++) printf(" %02x", buf[i]);
    printf("\n");
    CHECK(fseek(f, -19, SEEK_END) == 0);
    char line[64];
    CHECK(fgets(line, sizeof line, f) != NULL);
    printf("last line: %s", line);
    CHECK(fgets(line, sizeof line, f) == NULL && feof(f));
    rewind(f);
    uint32_t sum = 0;
    size_t total = 0;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < got; i++) sum = sum * 33 + buf[i];
        total += got;
    }
    printf("stdio reread total=%zu sum=%08x\n", total, sum);
    fclose(f);

    f = fopen(F1, "a+");
    CHECK(f != NULL);
    fputs("appended\n", f);
    fseek(f, 0, SEEK_SET);
    int c0 = fgetc(f);
    printf("a+ first byte=%d ftell-after-getc=%ld\n", c0, ftell(f));
    fclose(f);

    // --- raw fds ---
    int fd = open(F1, O_RDWR);
    CHECK(fd >= 0);
    struct stat sb;
    CHECK(fstat(fd, &sb) == 0);
    printf("fstat size=%lld regular=%d mode=%o\n", (long long)sb.st_size, S_ISREG(sb.st_mode), (unsigned)(sb.st_mode & 0777) & ~0022u);
    off_t off = lseek(fd, 100, SEEK_SET);
    printf("lseek set=%lld\n", (long long)off);
    CHECK(write(fd, "HELLO", 5) == 5);
    printf("lseek cur=%lld\n", (long long)lseek(fd, 0, SEEK_CUR));
    printf("lseek end=%lld\n", (long long)lseek(fd, 0, SEEK_END));
    CHECK(pwrite(fd, "PW", 2, 2) == 2);
    char small[16] = {0};
    CHECK(pread(fd, small, 8, 98) == 8);
    printf("pread at 98: %02x %02x %.5s %02x\n", (unsigned char)small[0], (unsigned char)small[1], small + 2, (unsigned char)small[7]);
    CHECK(pread(fd, small, 4, 0) == 4);
    printf("pread at 0: %02x %02x %02x %02x\n", (unsigned char)small[0], (unsigned char)small[1], (unsigned char)small[2], (unsigned char)small[3]);
    // Sparse extension beyond EOF.
    CHECK(lseek(fd, 200000, SEEK_SET) == 200000);
    CHECK(write(fd, "Z", 1) == 1);
    CHECK(fstat(fd, &sb) == 0);
    printf("after sparse write size=%lld\n", (long long)sb.st_size);
    CHECK(pread(fd, small, 4, 150000) == 4);
    printf("hole bytes: %d %d %d %d\n", small[0], small[1], small[2], small[3]);
    CHECK(ftruncate(fd, 777) == 0);
    CHECK(fstat(fd, &sb) == 0);
    printf("after ftruncate size=%lld\n", (long long)sb.st_size);
    ssize_t rr = read(fd, small, 4);
    printf("read at EOF returned %zd\n", rr);
    CHECK(close(fd) == 0);
    errno = 0;
    printf("close again: %d errno=%s\n", close(fd), errno == EBADF ? "EBADF" : "other");

    // dup / dup2 / fcntl
    fd = open(F1, O_RDONLY);
    int fd2 = dup(fd);
    CHECK(fd2 > fd);
    lseek(fd, 10, SEEK_SET);
    printf("dup shares offset: %lld\n", (long long)lseek(fd2, 0, SEEK_CUR));
    int fd3 = dup2(fd, 50);
    printf("dup2 -> %d, cloexec=%d\n", fd3, fcntl(fd3, F_GETFD) & FD_CLOEXEC);
    int fd4 = fcntl(fd, F_DUPFD_CLOEXEC, 60);
    printf("F_DUPFD_CLOEXEC -> %d cloexec=%d flags_rdonly=%d\n", fd4, fcntl(fd4, F_GETFD) & FD_CLOEXEC,
           (fcntl(fd4, F_GETFL) & O_ACCMODE) == O_RDONLY);
    close(fd); close(fd2); close(fd3); close(fd4);

    // errors
    errno = 0;
    fd = open("armada_test_fileio_does_not_exist", O_RDONLY);
    printf("open missing: %d errno=%s\n", fd, errno == ENOENT ? "ENOENT" : strerror(errno));
    fd = open(F1, O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("open O_EXCL existing: %d errno=%s\n", fd, errno == EEXIST ? "EEXIST" : strerror(errno));

    // --- directories ---
    CHECK(mkdir(D1, 0755) == 0);
    errno = 0;
    printf("mkdir again: %d errno=%s\n", mkdir(D1, 0755), errno == EEXIST ? "EEXIST" : strerror(errno));
    const char *inner[] = {"zeta", "alpha", "mid", "Beta", "0num"};
    for (int i = 0; i < 5; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", D1, inner[i]);
        FILE *g = fopen(p, "w");
        CHECK(g != NULL);
        for (int k = 0; k <= i; k++) fputs(inner[i], g);
        fclose(g);
    }
    CHECK(mkdir(D1 "/subdir", 0700) == 0);
    list_dir(D1);
    CHECK(stat(D1 "/subdir", &sb) == 0 && S_ISDIR(sb.st_mode));

    // rename (file and across directories), unlink, rmdir
    CHECK(rename(F1, F2) == 0);
    errno = 0;
    printf("stat old name: %d errno=%s\n", stat(F1, &sb), errno == ENOENT ? "ENOENT" : strerror(errno));
    CHECK(stat(F2, &sb) == 0);
    printf("renamed size=%lld\n", (long long)sb.st_size);
    CHECK(rename(D1 "/mid", D1 "/subdir/moved") == 0);
    list_dir(D1);
    list_dir(D1 "/subdir");
    CHECK(access(F2, R_OK | W_OK) == 0);
    errno = 0;
    printf("rmdir non-empty: %d errno=%s\n", rmdir(D1), errno == ENOTEMPTY ? "ENOTEMPTY" : strerror(errno));

    // cleanup
    CHECK(unlink(F2) == 0);
    CHECK(unlink(D1 "/subdir/moved") == 0);
    CHECK(rmdir(D1 "/subdir") == 0);
    for (int i = 0; i < 5; i++) {
        if (strcmp(inner[i], "mid") == 0) continue;
        char p[256];
        snprintf(p, sizeof p, "%s/%s", D1, inner[i]);
        CHECK(unlink(p) == 0);
    }
    CHECK(rmdir(D1) == 0);
    errno = 0;
    printf("unlink missing: %d errno=%s\n", unlink(F2), errno == ENOENT ? "ENOENT" : strerror(errno));

    // getcwd works and is absolute (value itself is not printed: it differs per run)
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL && cwd[0] == '/');
    printf("failures=%d\n", failures);
    return failures != 0;
}
