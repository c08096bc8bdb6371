/* A threaded fuzz target, dynamically linked: the input, read from stdin, is split between
 * two worker threads that each count its byte classes into a table behind a mutex; main
 * joins them and branches on the totals. A planted bug (a null write in a worker) sits
 * behind a four-byte tag at the start of the second half, compared a byte at a time so that
 * coverage leads to it. So each execution clones twice, locks, and joins (futex waits)
 * between the snapshot and its exit. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static unsigned char in[4096];
static size_t n;
static unsigned long classes[4];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int *volatile null_ptr;

struct part {
    size_t from, to;
};

__attribute__((noinline)) static int at(size_t i, unsigned char c) {
    return i < n && in[i] == c;
}

static void *worker(void *arg) {
    const struct part *p = arg;
    unsigned long mine[4] = {0};
    for (size_t i = p->from; i < p->to; i++) {
        unsigned char c = in[i];
        mine[c < '0' ? 0 : c <= '9' ? 1 : c < 'a' ? 2 : 3]++;
    }
    if (p->from > 0 && at(p->from, 'T') && at(p->from + 1, 'H') && at(p->from + 2, 'R') &&
        at(p->from + 3, 'D'))
        *null_ptr = 1;
    pthread_mutex_lock(&lock);
    for (int k = 0; k < 4; k++)
        classes[k] += mine[k];
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    ssize_t r;
    while (n < sizeof in && (r = read(0, in + n, sizeof in - n)) > 0)
        n += (size_t)r;
    struct part parts[2] = {{0, n / 2}, {n / 2, n}};
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        if (pthread_create(&t[k], NULL, worker, &parts[k]) != 0) {
            perror("pthread_create");
            return 2;
        }
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    if (classes[1] > classes[3])
        puts("digits");
    else if (classes[3] > 0)
        puts("letters");
    else
        puts("other");
    return 0;
}
