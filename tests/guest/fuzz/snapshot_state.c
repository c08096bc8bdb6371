/* State a snapshot has to carry, made before the program reads its input: a host file opened
 * and partly read (every restored lane must go on from the same offset, on its own), a pipe
 * holding bytes, heap memory, a thread waiting on a futex, and a forked child waiting on a
 * pipe. Then it reads stdin (the input), and every part of that state must work as in a run
 * without a snapshot. */
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static char shared_word[64];

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!go)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    for (char *c = shared_word; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: snapshot_state FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    char head[6] = {0};
    if (read(fd, head, 5) != 5)
        return 3;
    int p[2], to_child[2], from_child[2];
    if (pipe(p) || pipe(to_child) || pipe(from_child))
        return 4;
    if (write(p[1], "piped", 5) != 5)
        return 5;
    char *heap = malloc(64);
    strcpy(heap, "heap");
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pid_t child = fork();
    if (child == 0) {
        char buf[256];
        ssize_t n = read(to_child[0], buf, sizeof buf);
        if (n < 0)
            _exit(100);
        for (ssize_t i = 0; i < n; i++)
            buf[i] = (char)toupper((unsigned char)buf[i]);
        if (write(from_child[1], buf, (size_t)n) != n)
            _exit(101);
        _exit((int)n);
    }

    /* the input */
    char in[200];
    ssize_t n = read(0, in, sizeof in - 1);
    if (n < 0)
        return 6;
    in[n] = 0;

    char rest[64] = {0};
    ssize_t r = read(fd, rest, sizeof rest - 1);
    char piped[6] = {0};
    if (read(p[0], piped, 5) != 5)
        return 7;
    strncpy(shared_word, in, sizeof shared_word - 1);
    pthread_mutex_lock(&lock);
    go = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    if (write(to_child[1], in, (size_t)n) != n)
        return 8;
    char back[256] = {0};
    ssize_t b = read(from_child[0], back, sizeof back - 1);
    int status = 0;
    waitpid(child, &status, 0);
    printf("head=%s rest=%zd:%s piped=%s heap=%s thread=%s child=%zd:%s status=%d\n", head, r,
           rest, piped, heap, shared_word, b, back, WEXITSTATUS(status));
    return 0;
}
