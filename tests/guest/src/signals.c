// Signal delivery within one process: sigaction handlers for raise()d signals, SA_SIGINFO
// fields, sigprocmask blocking/pending, SIGSEGV handler recovering via siglongjmp,
// SIGFPE-free integer division, kill(getpid()), signal handler using the alternate stack.
#define _GNU_SOURCE
#include <stdio.h>
#include <signal.h>
#include <setjmp.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdint.h>

static volatile sig_atomic_t got_usr1, got_usr2, last_code, order[8], norder;
static sigjmp_buf recover;
static volatile int fault_addr_ok;

static void h_usr1(int sig) { got_usr1++; order[norder++] = sig; }
static void h_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    got_usr2++;
    last_code = si->si_code;
    order[norder++] = sig;
    if (si->si_signo != sig) abort();
}
static void h_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig; (void)uc;
    fault_addr_ok = si->si_addr == (void *)0x10;
    siglongjmp(recover, 1);
}
static volatile int on_altstack;
static void h_alt(int sig)
{
    (void)sig;
    stack_t cur;
    sigaltstack(NULL, &cur);
    on_altstack = (cur.ss_flags & SS_ONSTACK) != 0;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = NULL;
    sa.sa_sigaction = h_info;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &sa, NULL);

    raise(SIGUSR1);
    printf("after raise(SIGUSR1): got_usr1=%d\n", got_usr1);
    kill(getpid(), SIGUSR2);
    printf("after kill(SIGUSR2): got_usr2=%d si_code_is_user=%d\n", got_usr2, last_code == SI_USER || last_code == SI_TKILL);

    sigset_t set, old, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    raise(SIGUSR2);
    raise(SIGUSR1);
    sigpending(&pend);
    printf("blocked: usr1 pending=%d usr2 pending=%d handled so far=%d/%d\n", sigismember(&pend, SIGUSR1),
           sigismember(&pend, SIGUSR2), got_usr1, got_usr2);
    sigprocmask(SIG_SETMASK, &old, NULL);
    // Delivery order of the two pending signals is not printed: Linux delivers the lower
    // numbered one first, qemu-user 7.2 does not.
    printf("unblocked: handled=%d/%d first two:", got_usr1, got_usr2);
    for (int i = 0; i < norder && i < 2; i++) printf(" %s", order[i] == SIGUSR1 ? "USR1" : order[i] == SIGUSR2 ? "USR2" : "?");
    printf(" total=%d\n", norder);

    // Ignored signal
    signal(SIGUSR1, SIG_IGN);
    raise(SIGUSR1);
    printf("ignored SIGUSR1 survived, count still %d\n", got_usr1);

    // SIGSEGV handler + siglongjmp
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    volatile int recovered = 0;
    for (int i = 0; i < 3; i++) {
        if (sigsetjmp(recover, 1) == 0) {
            volatile uintptr_t addr = 0x10;
            *(volatile int *)addr = 5;
        } else {
            recovered++;
        }
    }
    printf("recovered from SIGSEGV %d times, si_addr ok=%d\n", recovered, fault_addr_ok);

    // Alternate signal stack
    stack_t ss;
    ss.ss_sp = malloc(SIGSTKSZ * 4);
    ss.ss_size = SIGSTKSZ * 4;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_alt;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    printf("handler ran on alternate stack=%d\n", on_altstack);

    // Default action of SIGTERM is to terminate: status 143
    printf("raising SIGTERM\n");
    fflush(stdout);
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
    printf("not reached\n");
    return 0;
}
