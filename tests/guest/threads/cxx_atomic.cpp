// std::atomic from 8 threads: fetch_add on int and int64, compare_exchange_weak loops
// (a running maximum and a multiply that has no fetch_ form), std::atomic_flag as a
// spinlock guarding a plain counter, exchange, and release/acquire message passing (a
// payload written before a release store is seen after the acquire load).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "check.h"

int main()
{
    constexpr int kThreads = 8, kIters = 40000;
    std::atomic<int> hits{0};
    std::atomic<int64_t> weighted{0};
    std::atomic<uint64_t> maximum{0};
    std::atomic<uint64_t> product{1};
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    long guarded = 0;
    std::atomic<int> swaps{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            uint64_t x = 0x2545f4914f6cdd1dULL * (t + 1);
            for (int i = 0; i < kIters; i++) {
                hits.fetch_add(1);
                weighted.fetch_add(t + 1, std::memory_order_relaxed);
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                uint64_t cur = maximum.load(std::memory_order_relaxed);
                while (x > cur && !maximum.compare_exchange_weak(cur, x)) {
                }
                if (i % 100 == 0) {
                    uint64_t p = product.load();
                    while (!product.compare_exchange_weak(p, p * 3 + 1)) {
                    }
                    while (lock.test_and_set(std::memory_order_acquire)) {
                    }
                    guarded++;
                    lock.clear(std::memory_order_release);
                    swaps.exchange(t, std::memory_order_acq_rel);
                }
            }
        });
    for (auto &t : ts) t.join();
    uint64_t want_max = 0;
    for (int t = 0; t < kThreads; t++) {
        uint64_t x = 0x2545f4914f6cdd1dULL * (t + 1);
        for (int i = 0; i < kIters; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x > want_max) want_max = x;
        }
    }
    // The product is p -> 3p+1 applied kThreads*kIters/100 times: order does not matter.
    uint64_t want_product = 1;
    for (int i = 0; i < kThreads * kIters / 100; i++) want_product = want_product * 3 + 1;
    std::printf("hits=%d weighted=%lld max=%016llx (want %016llx)\n", hits.load(),
                (long long)weighted.load(), (unsigned long long)maximum.load(),
                (unsigned long long)want_max);
    std::printf("product=%016llx (want %016llx) guarded=%ld\n", (unsigned long long)product.load(),
                (unsigned long long)want_product, guarded);
    CHECK(hits == kThreads * kIters && weighted == (int64_t)kIters * kThreads * (kThreads + 1) / 2);
    CHECK(maximum == want_max && product == want_product && guarded == kThreads * kIters / 100);

    // Message passing, 1000 rounds: the payload is always visible once the flag is.
    int payload = 0;
    std::atomic<int> flag{0};
    int mismatches = 0;
    std::thread consumer([&] {
        for (int round = 1; round <= 1000; round++) {
            while (flag.load(std::memory_order_acquire) != round) {
            }
            if (payload != round * 7) mismatches++;
            flag.store(-round, std::memory_order_release);
        }
    });
    for (int round = 1; round <= 1000; round++) {
        payload = round * 7;
        flag.store(round, std::memory_order_release);
        while (flag.load(std::memory_order_acquire) != -round) {
        }
    }
    consumer.join();
    std::printf("message passing: 1000 rounds, mismatches=%d\n", mismatches);
    CHECK(mismatches == 0);
    std::puts("cxx_atomic: ok");
    return 0;
}
