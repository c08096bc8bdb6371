// fork + waitpid: how children end, as WIFEXITED/WEXITSTATUS/WIFSIGNALED/WTERMSIG see it.
//   wait_status exits    _exit/exit/return codes (0, 1, 42, 255, 256 -> 0, exit from a nested
//                        fork), clone(SIGCHLD) through the raw syscall
//   wait_status signals  SIGKILL, SIGTERM, SIGUSR1 (default: terminate), SIGCHLD/SIGCONT
//                        (default: ignore), a blocked SIGTERM delivered at sigprocmask
//   wait_status faults   children that die by SIGSEGV, SIGABRT, SIGILL, SIGFPE-free division
//                        (stderr not compared: armada names the faulting PC there)
//   wait_status stop     WUNTRACED/WCONTINUED: SIGSTOP, SIGCONT, then exit
//   wait_status stdio    text buffered before fork is flushed by both processes (twice)
#include "proc.h"
#include <sched.h>
#include <sys/syscall.h>

static int run(const char *what, void (*child)(int), int arg)
{
    pid_t p = fork_flushed();
    if (p == 0) {
        child(arg);
        _exit(99);
    }
    int st = reap(p);
    printf("%-28s %s (WIFEXITED=%d WIFSIGNALED=%d)\n", what, status_text(st), WIFEXITED(st) != 0,
           WIFSIGNALED(st) != 0);
    return st;
}

static void do_exit_(int c) { _exit(c); }
static void do_exit(int c) { exit(c); }
static void do_kill(int s) { kill(getpid(), s); for (;;) pause(); }
static void do_raise(int s) { raise(s); }
static void do_nested(int c)
{
    pid_t p = fork();
    if (p == 0) _exit(c);
    int st = reap(p);
    _exit(WEXITSTATUS(st) + 1);
}
static void do_blocked(int s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, s);
    sigprocmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), s);
    write(1, "", 0);
    sigprocmask(SIG_UNBLOCK, &set, NULL); // dies here
    _exit(50);
}
static void do_segv(int x)
{
    volatile int *volatile bad = (int *)(long)(16 + x);
    *bad = 1;
}
static void do_abort(int x) { (void)x; abort(); }
static void do_ill(int x) { (void)x; __asm__ volatile(".inst 0x00000000"); }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exits";
    if (!strcmp(mode, "exits")) {
        run("_exit(0)", do_exit_, 0);
        run("_exit(1)", do_exit_, 1);
        run("_exit(42)", do_exit_, 42);
        run("exit(255)", do_exit, 255);
        run("exit(256)", do_exit, 256);
        run("exit(-1)", do_exit, -1);
        run("grandchild 6, child +1", do_nested, 6);
        // clone(SIGCHLD) is fork
        fflush(stdout);
        long p = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        CHECK(p >= 0);
        if (p == 0) _exit(17);
        printf("%-28s %s\n", "clone(SIGCHLD)", status_text(reap((pid_t)p)));
        // return from main of a child
        pid_t c = fork_flushed();
        if (c == 0) return 23;
        printf("%-28s %s\n", "return 23 from main", status_text(reap(c)));
    } else if (!strcmp(mode, "signals")) {
        run("kill(self, SIGKILL)", do_kill, SIGKILL);
        run("kill(self, SIGTERM)", do_kill, SIGTERM);
        run("raise(SIGUSR1)", do_raise, SIGUSR1);
        run("raise(SIGHUP)", do_raise, SIGHUP);
        run("raise(SIGCHLD) ignored", do_raise, SIGCHLD);
        run("raise(SIGCONT) ignored", do_raise, SIGCONT);
        run("blocked SIGTERM, unblocked", do_blocked, SIGTERM);
        // the parent kills a child that waits in pause()
        pid_t p = fork_flushed();
        if (p == 0) {
            for (;;) pause();
        }
        CHECK(kill(p, SIGINT) == 0);
        printf("%-28s %s\n", "parent's SIGINT", status_text(reap(p)));
    } else if (!strcmp(mode, "faults")) {
        run("SIGSEGV (store to 16)", do_segv, 0);
        run("abort()", do_abort, 0);
        run("udf (SIGILL)", do_ill, 0);
    } else if (!strcmp(mode, "stop")) {
        int go[2];
        CHECK(pipe(go) == 0);
        pid_t p = fork_flushed();
        if (p == 0) {
            close(go[1]);
            raise(SIGSTOP);
            char c;
            read_full(go[0], &c, 1); // continues after SIGCONT
            _exit(9);
        }
        close(go[0]);
        int st;
        CHECK(waitpid(p, &st, WUNTRACED) == p);
        printf("WUNTRACED: %s\n", status_text(st));
        CHECK(kill(p, SIGCONT) == 0);
        CHECK(waitpid(p, &st, WCONTINUED) == p);
        printf("WCONTINUED: %s\n", status_text(st));
        CHECK(write(go[1], "x", 1) == 1);
        CHECK(waitpid(p, &st, WUNTRACED | WCONTINUED) == p);
        printf("then: %s\n", status_text(st));
    } else if (!strcmp(mode, "stdio")) {
        printf("printed once before fork, buffered; ");
        pid_t p = fork();
        CHECK(p >= 0);
        if (p == 0) {
            printf("child\n");
            exit(0); // flushes its copy of the buffer
        }
        reap(p);
        printf("parent\n");
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    puts("done");
    return 0;
}
