// The interface of libarmadadyn.so, a shared library of our own (armadadyn.c).
#ifndef ARMADADYN_H
#define ARMADADYN_H
extern int armadadyn_value;       // data defined in the library, used by the program
extern const char *armadadyn_name; // a pointer needing a relocation in the library
int armadadyn_add(int a, int b);
unsigned long armadadyn_checksum(const char *s);
int armadadyn_apply(int (*f)(int), int n); // calls back into the program
int armadadyn_tls_bump(void);              // a thread-local counter in the library
int armadadyn_constructed(void);
#endif
