/* Crashes on every input, the empty one too. */
#include "input.h"

int main(int argc, char **argv) {
    read_input(argc, argv);
    crash_segv();
    return 0;
}
