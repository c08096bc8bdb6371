// std::async (launch::async and deferred), std::future/shared_future, std::promise (a value
// and an exception), std::packaged_task run on a thread, and future::wait_for timing out.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

static long count_primes(long from, long to)
{
    long n = 0;
    for (long i = from < 2 ? 2 : from; i < to; i++) {
        bool prime = true;
        for (long d = 2; d * d <= i; d++)
            if (i % d == 0) {
                prime = false;
                break;
            }
        n += prime;
    }
    return n;
}

int main()
{
    std::vector<std::future<long>> parts;
    for (int i = 0; i < 8; i++)
        parts.push_back(std::async(std::launch::async, count_primes, i * 25000L, (i + 1) * 25000L));
    long primes = 0;
    for (auto &f : parts) primes += f.get();
    auto deferred = std::async(std::launch::deferred, [] { return std::string("deferred ran"); });
    std::printf("async: primes below 200000=%ld; %s\n", primes, deferred.get().c_str());
    CHECK(primes == 17984);

    std::promise<int> p;
    std::shared_future<int> shared = p.get_future().share();
    std::vector<std::future<int>> readers;
    for (int i = 0; i < 4; i++)
        readers.push_back(std::async(std::launch::async, [shared, i] { return shared.get() * (i + 1); }));
    std::thread setter([&p] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        p.set_value(11);
    });
    int readers_sum = 0;
    for (auto &r : readers) readers_sum += r.get();
    setter.join();

    std::promise<int> failing;
    auto failed = failing.get_future();
    std::thread thrower([&failing] {
        try {
            throw std::out_of_range("from a promise");
        } catch (...) {
            failing.set_exception(std::current_exception());
        }
    });
    std::string what;
    try {
        failed.get();
    } catch (const std::out_of_range &e) {
        what = e.what();
    }
    thrower.join();
    auto async_throw = std::async(std::launch::async, []() -> int { throw std::runtime_error("from async"); });
    std::string what2;
    try {
        async_throw.get();
    } catch (const std::runtime_error &e) {
        what2 = e.what();
    }
    std::printf("promise: shared value to 4 readers sum=%d; exceptions: '%s', '%s'\n", readers_sum,
                what.c_str(), what2.c_str());
    CHECK(readers_sum == 110 && what == "from a promise" && what2 == "from async");

    std::packaged_task<long(long)> task([](long n) {
        long s = 0;
        for (long i = 1; i <= n; i++) s += i * i;
        return s;
    });
    auto task_result = task.get_future();
    std::thread runner(std::move(task), 1000L);
    long squares = task_result.get();
    runner.join();

    std::promise<void> never;
    auto pending = never.get_future();
    auto status = pending.wait_for(std::chrono::milliseconds(20));
    std::printf("packaged_task: %ld; wait_for on an unset future: %s\n", squares,
                status == std::future_status::timeout ? "timeout" : "ready?");
    CHECK(squares == 333833500L && status == std::future_status::timeout);
    std::puts("cxx_async: ok");
    return 0;
}
