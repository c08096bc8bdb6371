/* Three planted bugs in a recursive-descent parser, each reachable at any nesting depth,
 * for the fuzzer's buckets (one crash file a bug, however deep it was found):
 *   value  := '[' value* ']' | '"' LEN BYTES | '#' DIGITS | '@' WORD
 *   - a string longer than its 16-byte slot is stored past it: past 16 bytes the store
 *     lands a MiB a byte further on, where nothing is mapped (SIGSEGV at one place);
 *   - the number 666 aborts (SIGABRT);
 *   - the word "spin" loops forever (a hang).
 * Anything else ends the parse. */
#include "input.h"

static const unsigned char *cur, *end;

static int value(int depth);

static char slots[4][16];

__attribute__((noinline)) static int string(int depth) {
    if (cur >= end)
        return -1;
    size_t n = *cur++;
    if (n > (size_t)(end - cur))
        n = end - cur;
    char *slot = slots[depth & 3];
    for (size_t i = 0; i < n; i++) {
        /* the planted overflow: no bound on i */
        size_t at = i < 16 ? i : 16 + ((i - 15) << 20);
        ((volatile char *)slot)[at] = cur[i];
    }
    cur += n;
    return slot[0] == 'x';
}

__attribute__((noinline)) static int number(void) {
    long v = 0;
    while (cur < end && *cur >= '0' && *cur <= '9')
        v = v * 10 + (*cur++ - '0');
    if (v == 666)
        abort();
    return v & 1;
}

__attribute__((noinline)) static int word(void) {
    const unsigned char *w = cur;
    while (cur < end && *cur >= 'a' && *cur <= 'z')
        cur++;
    if (cur - w == 4 && memcmp(w, "spin", 4) == 0) {
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    return (int)(cur - w);
}

static int list(int depth) {
    int n = 0;
    while (cur < end && *cur != ']') {
        if (value(depth + 1) < 0)
            return -1;
        n++;
    }
    if (cur < end)
        cur++;
    return n;
}

__attribute__((noinline)) static int value(int depth) {
    if (cur >= end || depth > 64)
        return -1;
    switch (*cur++) {
    case '[':
        return list(depth);
    case '"':
        return string(depth);
    case '#':
        return number();
    case '@':
        return word();
    default:
        return -1;
    }
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    cur = input_buf;
    end = input_buf + n;
    int values = 0;
    while (cur < end && value(0) >= 0)
        values++;
    printf("values: %d\n", values);
    return 0;
}
