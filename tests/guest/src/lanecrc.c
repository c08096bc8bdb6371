// CRC-32 over a 4 KiB buffer generated from a seed, repeated ROUNDS times. argv[1] = seed (a
// batch passes {lane}), argv[2] = rounds (default 100), argv[3] = method: "table" (default;
// two dependent loads per byte, one of them a random index into a per-lane 1 KiB table: memory
// latency bound) or "bit" (bitwise, eight shift-and-xor steps per byte: compute bound). Used by
// armada batch benchmarks: many lanes, little memory each, different inputs.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char buf[4096];
static uint32_t table[256];

int main(int argc, char **argv)
{
    uint32_t seed = argc > 1 ? (uint32_t)strtoul(argv[1], 0, 10) : 0;
    long rounds = argc > 2 ? atol(argv[2]) : 100;
    uint32_t x = seed * 2654435761u + 12345u;
    for (int i = 0; i < 4096; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)(x >> 11);
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        table[i] = c;
    }
    int bitwise = argc > 3 && strcmp(argv[3], "bit") == 0;
    uint32_t crc = 0;
    for (long r = 0; r < rounds; r++) {
        uint32_t c = ~crc;
        if (bitwise) {
            for (int i = 0; i < 4096; i++) {
                c ^= buf[i];
                for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & -(c & 1));
            }
        } else {
            for (int i = 0; i < 4096; i++) c = (c >> 8) ^ table[(c ^ buf[i]) & 0xff];
        }
        crc = ~c;
        buf[r & 4095] ^= (unsigned char)crc;
    }
    printf("seed %u rounds %ld crc %08x%s\n", seed, rounds, crc, bitwise ? " (bitwise)" : "");
    return 0;
}
