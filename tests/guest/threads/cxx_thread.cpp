// std::thread: a vector of 12 threads filling disjoint parts of a result vector (lambdas
// capturing by reference, a member function, std::ref arguments), thread ids distinct and
// different from main's while they run, joinable()/detach(), std::this_thread::sleep_for
// and yield, and an exception caught inside a thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

struct Accumulator {
    long total = 0;
    void add_range(long from, long to)
    {
        for (long i = from; i < to; i++) total += i * 3;
    }
};

static void scale(std::vector<long> &v, long factor)
{
    for (auto &x : v) x *= factor;
}

int main()
{
    constexpr int kThreads = 12, kChunk = 1000;
    std::vector<long> data(kThreads * kChunk);
    std::vector<std::thread::id> ids(kThreads);
    std::atomic<int> running{0};
    std::atomic<bool> release{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; t++) {
        pool.emplace_back([&, t] {
            ids[t] = std::this_thread::get_id();
            running++;
            while (!release) std::this_thread::yield(); // all alive at once: ids must differ
            for (int i = 0; i < kChunk; i++) data[t * kChunk + i] = (long)t * kChunk + i;
        });
    }
    while (running != kThreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    release = true;
    for (auto &th : pool) {
        CHECK(th.joinable());
        th.join();
        CHECK(!th.joinable());
    }
    std::set<std::thread::id> distinct(ids.begin(), ids.end());
    bool main_differs = std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end();
    long sum = std::accumulate(data.begin(), data.end(), 0L);
    std::printf("lambdas: %d threads, sum=%ld, distinct ids=%zu, main id differs=%d\n", kThreads,
                sum, distinct.size(), main_differs);
    CHECK(sum == (long)kThreads * kChunk * (kThreads * kChunk - 1) / 2);
    CHECK(distinct.size() == (size_t)kThreads && main_differs);

    Accumulator acc[4];
    std::vector<std::thread> members;
    for (int t = 0; t < 4; t++)
        members.emplace_back(&Accumulator::add_range, &acc[t], t * 100L, (t + 1) * 100L);
    for (auto &th : members) th.join();
    long total = 0;
    for (auto &a : acc) total += a.total;
    std::vector<long> v{1, 2, 3, 4};
    std::thread s(scale, std::ref(v), 10L);
    s.join();
    std::printf("member functions: total=%ld; std::ref: %ld %ld %ld %ld\n", total, v[0], v[1],
                v[2], v[3]);
    CHECK(total == 3L * 399 * 400 / 2 && v[3] == 40);

    std::atomic<int> caught{0};
    std::thread thrower([&] {
        try {
            throw std::runtime_error("inside a thread");
        } catch (const std::exception &e) {
            if (std::string(e.what()) == "inside a thread") caught++;
        }
    });
    thrower.join();

    std::atomic<bool> detached_done{false};
    std::thread d([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        detached_done = true;
    });
    d.detach();
    CHECK(!d.joinable());
    while (!detached_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bool slept = std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20);
    std::printf("exception caught in thread=%d, detached thread finished=%d, slept>=20ms=%d\n",
                caught.load(), detached_done.load(), slept);
    CHECK(caught == 1 && slept);
    std::puts("cxx_thread: ok");
    return 0;
}
