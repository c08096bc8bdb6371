/* Credentials: the set*id calls by Linux's rules (as root, then after giving root up),
 * setgroups/getgroups, capget/capset and what /proc/self/status shows of them. Run as a
 * non-root user, every change is EPERM, which it prints as such. The program ends as root
 * again only where the saved uid allows; it changes nothing outside itself. */
#include "../processes/proc.h"
#include <grp.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>

static void status(const char *what)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    printf("%s:", what);
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) ||
            !strncmp(line, "Groups:", 7) || !strncmp(line, "SigIgn:", 7) ||
            !strncmp(line, "CapEff:", 7)) {
            line[strcspn(line, "\n")] = 0;
            /* SigIgn: signals 1-31 only (what ran the test may ignore real-time ones,
             * which both inherit) */
            if (!strncmp(line, "SigIgn:", 7))
                snprintf(line, sizeof line, "SigIgn: %08llx",
                         strtoull(line + 8, NULL, 16) & 0x7fffffffull);
            for (char *c = line; *c; c++)
                if (*c == '\t')
                    *c = ' ';
            printf(" [%s]", line);
        }
    }
    printf("\n");
    if (f)
        fclose(f);
}

static void ids(const char *what)
{
    uid_t r, e, s;
    gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    printf("%-28s uid %u %u %u fsuid %d  gid %u %u %u  getuid %u geteuid %u\n", what, r, e, s,
           setfsuid(-1), gr, ge, gs, getuid(), geteuid());
}

#define TRY(call)                                                                          \
    do {                                                                                   \
        errno = 0;                                                                         \
        long r_ = syscall call;                                                            \
        printf("%-28s = %ld %s\n", #call, r_, r_ < 0 ? errname(errno) : "");               \
    } while (0)

static void caps(const char *what)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    long r = syscall(SYS_capget, &h, d);
    printf("%s: capget %ld eff %08x%08x prm %08x%08x inh %08x%08x\n", what, r, d[1].effective,
           d[0].effective, d[1].permitted, d[0].permitted, d[1].inheritable, d[0].inheritable);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int root = getuid() == 0;
    ids("start");
    status("start");
    caps("start");
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    status("SIGPIPE and SIGUSR2 ignored");
    signal(SIGUSR2, SIG_DFL);

    /* capget's ways of being asked */
    struct __user_cap_header_struct h = {0x12345678, 0};
    errno = 0;
    printf("capget bad version: %ld %s, version now %#x\n", syscall(SYS_capget, &h, NULL),
           errname(errno), h.version);
    h.version = _LINUX_CAPABILITY_VERSION_3;
    printf("capget NULL data: %ld\n", syscall(SYS_capget, &h, NULL));
    errno = 0;
    printf("capget NULL header: %ld %s\n", syscall(SYS_capget, NULL, NULL), errname(errno));
    h.pid = 999999;
    errno = 0;
    printf("capget no such pid: %ld %s\n", syscall(SYS_capget, &h, NULL), errname(errno));

    /* groups */
    gid_t g4[] = {3, 1, 2, 0};
    TRY((SYS_setgroups, 4, g4));
    gid_t got[8];
    int n = getgroups(0, NULL);
    printf("getgroups(0) %d, getgroups(2): %d %s", n, getgroups(2, got), errname(errno));
    n = getgroups(8, got);
    printf(", getgroups(8): %d:", n);
    for (int i = 0; i < n; i++)
        printf(" %u", got[i]);
    printf("\n");
    status("groups 3 1 2 0");
    TRY((SYS_setgroups, 0, NULL));
    status("no groups");

    /* gids: setregid, setresgid, setgid, setfsgid */
    TRY((SYS_setregid, 101, 0));
    TRY((SYS_setregid, 0, 102));
    status("after setregid(0,102)");
    TRY((SYS_setresgid, 101, 0, 102));
    TRY((SYS_setresgid, -1, -1, -1));
    status("after setresgid(101,0,102)");
    TRY((SYS_setfsgid, 55));
    TRY((SYS_setfsgid, -1));
    TRY((SYS_setgid, 0));
    status("after setgid(0)");

    /* uids: effective only, so root comes back */
    TRY((SYS_setresuid, -1, 1, -1));
    ids("seteuid(1)");
    caps("seteuid(1)");
    TRY((SYS_setuid, 2));
    TRY((SYS_setresuid, 0, 0, 0));
    TRY((SYS_setreuid, -1, 0));
    ids("seteuid(0) again");
    caps("seteuid(0) again");
    TRY((SYS_setreuid, 1, 0));
    ids("setreuid(1,0)");
    TRY((SYS_setreuid, 0, 2));
    ids("setreuid(0,2)");
    status("setreuid(0,2)");
    TRY((SYS_setresuid, 0, 0, 0));
    TRY((SYS_setuid, -1));

    /* capset: dropping one capability from the effective set, then taking it back */
    struct __user_cap_data_struct d[2];
    h.pid = 0;
    syscall(SYS_capget, &h, d);
    d[0].effective &= ~(1u << CAP_SETUID);
    TRY((SYS_capset, &h, d));
    caps("without CAP_SETUID");
    TRY((SYS_setuid, 3));
    d[0].effective |= 1u << CAP_SETUID;
    TRY((SYS_capset, &h, d));
    d[0].permitted = d[0].effective = 0;
    d[1].permitted = d[1].effective = 0;

    /* a child gives root up for good with setuid: capabilities go, and it cannot return */
    pid_t pid = fork_flushed();
    if (pid == 0) {
        TRY((SYS_setuid, 4));
        ids("child after setuid(4)");
        caps("child after setuid(4)");
        TRY((SYS_setuid, 0));
        TRY((SYS_setgroups, 0, NULL));
        errno = 0;
        int raw = socket(AF_INET, 3 /* SOCK_RAW */, 1);
        printf("raw socket without root: %d %s\n", raw < 0 ? -1 : 0, errname(errno));
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child: %s\n", status_text(st));
    (void)root;
    ids("end");

    /* what the processes see of each other once one has given its user up: kill's
     * permission both ways, and the other's /proc/PID/status */
    int down[2], up[2];
    if (pipe(down) || pipe(up))
        return 1;
    pid = fork_flushed();
    if (pid == 0) {
        errno = 0;
        long r = syscall(SYS_setresuid, 5, 5, 5);
        errno = 0;
        int k = kill(getppid(), 0);
        char m = r < 0 ? 'n' : k == 0 ? 'y' : errno == EPERM ? 'p' : '?';
        write(up[1], &m, 1);
        char b;
        read(down[0], &b, 1);
        _exit(0);
    }
    char m = 0;
    read(up[0], &m, 1);
    printf("child's kill(parent, 0): %c\n", m);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Umask:", 6)) {
            for (char *c = line; *c; c++)
                if (*c == '\t')
                    *c = ' ';
            printf("child's %s", line);
        }
    if (f)
        fclose(f);
    errno = 0;
    int k = kill(pid, 0);
    printf("kill(child, 0): %d %s\n", k, k < 0 ? errname(errno) : "");
    write(down[1], "x", 1);
    waitpid(pid, &st, 0);
    printf("child: %s\n", status_text(st));
    return 0;
}
