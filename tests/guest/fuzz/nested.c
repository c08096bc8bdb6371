/* Planted bug in a nested format: records are [type][len][value]; an 'L' record's value is
 * a list of records, and a length past the end is cut to what is there (as many parsers
 * do). A 'K' record of length 2 holding "ok" inside an 'L' inside an 'L' hits a null
 * pointer (SIGSEGV). Going one level deeper shows only as the parser's hit counts. */
#include "input.h"

static int parse(const unsigned char *d, size_t n, int depth);

__attribute__((noinline)) static int leaf(const unsigned char *v, size_t len, int depth) {
    if (depth >= 2 && len == 2) {
        if (v[0] == 'o') {
            if (v[1] == 'k')
                crash_segv();
        }
    }
    return 0;
}

static int parse(const unsigned char *d, size_t n, int depth) {
    size_t i = 0;
    int records = 0;
    while (i + 2 <= n) {
        unsigned char type = d[i];
        size_t len = d[i + 1];
        if (i + 2 + len > n)
            len = n - i - 2;
        const unsigned char *v = d + i + 2;
        switch (type) {
        case 'L':
            if (depth < 4 && parse(v, len, depth + 1) < 0)
                return -1;
            break;
        case 'K':
            leaf(v, len, depth);
            break;
        case 'N':
            break;
        default:
            return -1;
        }
        records++;
        i += 2 + len;
    }
    return records;
}

int main(int argc, char **argv) {
    size_t n = read_input(argc, argv);
    int r = parse(input_buf, n, 0);
    printf("records: %d\n", r);
    return r < 0;
}
