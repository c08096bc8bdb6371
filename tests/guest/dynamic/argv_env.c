// Dynamically linked: prints its arguments, its environment (in order), a few facts the
// kernel's (or the emulator's) ELF loader hands a dynamically linked program through the
// auxiliary vector, and exits with status argc (so that the exit status travels too).
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;
extern void _start(void);

static int count_phdrs(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') { // the program itself
        *(int *)data = info->dlpi_phnum;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    printf("argc=%d\n", argc);
    for (int i = 0; i < argc; i++) {
        // argv[0] is the path as given; print only its last component
        const char *a = argv[i];
        if (i == 0 && strrchr(a, '/')) a = strrchr(a, '/') + 1;
        printf("argv[%d]=[%s]\n", i, a);
    }
    printf("argv[argc] is %s\n", argv[argc] == NULL ? "NULL" : "not NULL");
    int n = 0;
    for (char **e = environ; *e; e++, n++) printf("env[%d]=[%s]\n", n, *e);
    printf("environ has %d entries\n", n);
    const char *home = getenv("HOME");
    printf("getenv(HOME) %s\n", home ? "set" : "unset");
    const char *extra = getenv("ARMADA_DYN_EXTRA");
    printf("getenv(ARMADA_DYN_EXTRA)=[%s]\n", extra ? extra : "(null)");

    // What the loader put in the auxiliary vector for a program with an interpreter.
    unsigned long base = getauxval(AT_BASE), entry = getauxval(AT_ENTRY);
    unsigned long phdr = getauxval(AT_PHDR), phnum = getauxval(AT_PHNUM);
    printf("AT_BASE (interpreter) is %s\n", base ? "nonzero" : "zero");
    printf("AT_ENTRY == &_start: %s\n", entry == (unsigned long)&_start ? "yes" : "no");
    printf("AT_PHENT == sizeof(Elf64_Phdr): %s\n", getauxval(AT_PHENT) == sizeof(Elf64_Phdr) ? "yes" : "no");
    int seen = -1;
    dl_iterate_phdr(count_phdrs, &seen);
    printf("AT_PHNUM == the program's phnum: %s (%lu)\n", (long)phnum == seen ? "yes" : "no", phnum);
    int has_interp = 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)phdr;
    for (unsigned long i = 0; ph && i < phnum; i++)
        if (ph[i].p_type == PT_INTERP) has_interp = 1;
    printf("AT_PHDR shows a PT_INTERP: %s\n", has_interp ? "yes" : "no");
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    printf("AT_EXECFN ends like argv[0]: %s\n",
           execfn && strrchr(execfn, '/') && strrchr(argv[0], '/') &&
                   strcmp(strrchr(execfn, '/'), strrchr(argv[0], '/')) == 0
               ? "yes"
               : "no");
    fflush(stdout);
    fprintf(stderr, "argv_env: done, exiting with %d\n", argc);
    return argc;
}
