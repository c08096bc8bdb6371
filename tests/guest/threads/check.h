/* CHECK(cond): the thread test programs' assertion. On failure it names the file, line
 * and condition on stderr and exits 1, so armada and qemu-aarch64 must both print the same
 * thing (and a broken program never passes silently). For C and C++ alike. */
#ifndef ARMADA_THREADS_CHECK_H
#define ARMADA_THREADS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#endif
