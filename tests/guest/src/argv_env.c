// argc/argv and environment. Environment entries are printed sorted (qemu-user reverses the
// order of the environment it was given, so raw order is not a stable contract).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    printf("argc=%d\n", argc);
    for (int i = 0; i < argc; i++) printf("argv[%d]=[%s] len=%zu\n", i, argv[i], strlen(argv[i]));
    printf("argv[argc]=%s\n", argv[argc] == NULL ? "NULL" : "non-NULL!");
    const char *v = getenv("ARMADA_TEST_VAR");
    printf("ARMADA_TEST_VAR=%s\n", v ? v : "(unset)");
    v = getenv("ARMADA_TEST_EMPTY");
    printf("ARMADA_TEST_EMPTY=%s\n", v ? (*v ? v : "(empty)") : "(unset)");
    v = getenv("ARMADA_DEFINITELY_UNSET");
    printf("ARMADA_DEFINITELY_UNSET=%s\n", v ? v : "(unset)");
    int n = 0;
    while (environ[n]) n++;
    char **copy = malloc((n + 1) * sizeof *copy);
    memcpy(copy, environ, (n + 1) * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp);
    printf("environ has %d entries:\n", n);
    for (int i = 0; i < n; i++) printf("  %s\n", copy[i]);
    setenv("ARMADA_SET_AT_RUNTIME", "yes", 1);
    unsetenv("ARMADA_TEST_VAR");
    printf("after setenv/unsetenv: %s %s\n", getenv("ARMADA_SET_AT_RUNTIME"), getenv("ARMADA_TEST_VAR") ? "still set" : "gone");
    free(copy);
    return argc > 1 ? (int)strlen(argv[1]) : 0;
}
