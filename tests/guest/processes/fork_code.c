/* Decoded code across a lane's processes: armada hands the decoded code of a process that
 * ended to the next child the lane forks (runner.rs, `Lane::code_for_child`), keeping only
 * the pages the child shares with it. Each child here changes a function in a writable and
 * executable page it shares with its parent (a copy-on-write page: the child's write gives
 * it its own), runs it, and ends; the next child must still run the parent's bytes, and the
 * parent too, at the end. Children also run the program's own code (its text, shared by all)
 * before and after, and a vfork child runs the page between two forks. */
#include "proc.h"
#include <stdint.h>
#include <sys/mman.h>

typedef int (*fn_t)(void);

/* mov w0, #imm ; ret */
static void put_ret(uint32_t *code, int imm) {
    code[0] = 0x52800000u | ((uint32_t)imm << 5);
    code[1] = 0xd65f03c0u;
    __builtin___clear_cache((char *)code, (char *)(code + 2));
}

__attribute__((noinline)) static int twice(int x) { return 2 * x + 1; }

int main(void) {
    uint32_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    put_ret(code, 7);
    fn_t f = (fn_t)code;
    printf("parent runs %d\n", f());
    for (int round = 0; round < 4; round++) {
        fflush(stdout);
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) {
            int before = f();
            put_ret(code, 100 + round);
            int after = f();
            printf("child %d: %d then %d, twice %d\n", round, before, after, twice(round));
            fflush(stdout);
            _exit(0);
        }
        int st;
        CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (round == 1) {
            pid_t v = vfork();
            CHECK(v >= 0);
            if (v == 0)
                _exit(f() == 7 ? 0 : 3);
            CHECK(waitpid(v, &st, 0) == v && WIFEXITED(st));
            printf("vfork child exits %d\n", WEXITSTATUS(st));
        }
    }
    printf("parent runs %d, twice %d\n", f(), twice(9));
    /* and the parent changes it last: a child forked after runs the new bytes */
    put_ret(code, 42);
    fflush(stdout);
    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        printf("last child runs %d\n", f());
        fflush(stdout);
        _exit(0);
    }
    int st;
    CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st));
    return 0;
}
