// inotify on the files a guest changes: create, write, close, rename, attributes, delete,
// a watch removed (IN_IGNORED), a blocking read woken by poll, and the errors of a bad fd
// or path. Names and masks are printed; watch descriptors as which watch they are.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    unsigned bit;
    const char *name;
} names[] = {
    {IN_ACCESS, "ACCESS"},     {IN_MODIFY, "MODIFY"},        {IN_ATTRIB, "ATTRIB"},
    {IN_CLOSE_WRITE, "CLOSE_WRITE"}, {IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"}, {IN_OPEN, "OPEN"},
    {IN_MOVED_FROM, "MOVED_FROM"}, {IN_MOVED_TO, "MOVED_TO"}, {IN_CREATE, "CREATE"},
    {IN_DELETE, "DELETE"},     {IN_DELETE_SELF, "DELETE_SELF"}, {IN_IGNORED, "IGNORED"},
    {IN_ISDIR, "ISDIR"},
};

static int wd_dir, wd_file;

static void drain(int fd, const char *what) {
    char buf[4096] __attribute__((aligned(8)));
    printf("%s:", what);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            printf(" (%s)\n", n < 0 ? strerror(errno) : "eof");
            return;
        }
        int moves = 0;
        uint32_t cookie = 0;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            printf(" [%s", e->wd == wd_dir ? "dir" : e->wd == wd_file ? "file" : "?");
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (e->mask & names[i].bit)
                    printf(" %s", names[i].name);
            if (e->len)
                printf(" %s", e->name);
            if (e->cookie) {
                moves += cookie == 0 || cookie == e->cookie;
                cookie = e->cookie;
            }
            printf("]");
            p += sizeof *e + e->len;
        }
        if (moves)
            printf(" (a move's two halves share a cookie: %s)", moves == 2 ? "yes" : "no");
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char dir[] = "/tmp/armada-inotify-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    printf("inotify_init1: %s, cloexec %d\n", fd < 0 ? strerror(errno) : "ok",
           fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    printf("bad flags: %s\n", inotify_init1(0x1) < 0 ? strerror(errno) : "accepted");
    wd_dir = inotify_add_watch(fd, dir, IN_ALL_EVENTS & ~(IN_ACCESS | IN_OPEN | IN_CLOSE_NOWRITE));
    printf("watch dir: %s\n", wd_dir < 0 ? strerror(errno) : "ok");
    errno = 0;
    printf("watch missing: %s\n",
           inotify_add_watch(fd, "/nonexistent/x", IN_CREATE) < 0 ? strerror(errno) : "ok");
    printf("watch on a pipe fd: %s\n", inotify_add_watch(1, dir, IN_CREATE) < 0 ? strerror(errno) : "ok");
    drain(fd, "nothing yet");

    char path[128], path2[128];
    snprintf(path, sizeof path, "%s/a", dir);
    snprintf(path2, sizeof path2, "%s/b", dir);
    int f = open(path, O_CREAT | O_WRONLY, 0644);
    write(f, "x", 1);
    close(f);
    wd_file = inotify_add_watch(fd, path, IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF);
    chmod(path, 0600);
    rename(path, path2);
    mkdir(path, 0755);
    rmdir(path);
    drain(fd, "changes");
    unlink(path2);
    drain(fd, "unlink");
    printf("rm_watch dir: %d\n", inotify_rm_watch(fd, wd_dir));
    printf("rm_watch again: %s\n", inotify_rm_watch(fd, wd_dir) < 0 ? strerror(errno) : "ok");
    drain(fd, "after rm_watch");

    // a blocking instance: poll says when there is something to read
    int b = inotify_init1(0);
    wd_dir = inotify_add_watch(b, dir, IN_CREATE);
    struct pollfd p = {b, POLLIN, 0};
    printf("poll before: %d\n", poll(&p, 1, 0));
    close(open(path, O_CREAT | O_WRONLY, 0644));
    printf("poll after: %d revents %#x\n", poll(&p, 1, 1000), p.revents);
    char buf[256] __attribute__((aligned(8)));
    ssize_t n = read(b, buf, sizeof buf);
    struct inotify_event *e = (struct inotify_event *)buf;
    printf("blocking read: %zd bytes, CREATE %d, name %s\n", n, (e->mask & IN_CREATE) != 0,
           e->len ? e->name : "");
    unlink(path);
    rmdir(dir);
    close(b);
    close(fd);
    return 0;
}
