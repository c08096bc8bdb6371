/* Built by crates/armada-cuda/tests/sim.rs (reserve_frames_the_host_takes_leave_the_kernels_count):
 * each round the host writes a page new to the lane (a read into a fresh page: the GPU
 * engines give it a frame of the lane's reserve on the servicing thread) and the kernel
 * writes another (a lazy page: a frame from the same reserve's end). Under a memory cap
 * that leaves the reserve its size after the host's take, the record's count must still go
 * up, or the kernel hands out the frame the host took. */
#include <stdio.h>
#include <unistd.h>
#define N 160
static unsigned char a[N][4096];
static unsigned char b[N][4096];
int main(void) {
    unsigned long sum = 0;
    for (int i = 0; i < N; i++) {
        if (read(0, a[i], 8) != 8)
            return 3;
        b[i][0] = (unsigned char)(i * 7);
        b[i][100] = a[i][3];
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 8; j++)
            sum = sum * 31 + a[i][j] + b[i][0] + b[i][100];
    printf("%lu\n", sum);
    return 0;
}
