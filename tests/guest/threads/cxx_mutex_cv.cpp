// std::mutex, std::condition_variable and friends: a work queue (std::queue under a mutex,
// notify_one/notify_all, a shutdown flag) processed by 4 workers; std::lock_guard and
// std::scoped_lock over two mutexes from threads locking them in opposite orders (no
// deadlock); std::unique_lock with try_lock; std::timed_mutex::try_lock_for and
// condition_variable::wait_for timing out; std::call_once.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "check.h"

class WorkQueue {
  public:
    void push(long v)
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            q_.push(v);
        }
        cv_.notify_one();
    }
    void close()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            closed_ = true;
        }
        cv_.notify_all();
    }
    bool pop(long &v)
    {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [this] { return !q_.empty() || closed_; });
        if (q_.empty()) return false;
        v = q_.front();
        q_.pop();
        return true;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::queue<long> q_;
    bool closed_ = false;
};

int main()
{
    WorkQueue wq;
    std::vector<long> sums(4), counts(4);
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; w++)
        workers.emplace_back([&, w] {
            long v;
            while (wq.pop(v)) {
                sums[w] += v * v;
                counts[w]++;
            }
        });
    for (long i = 1; i <= 3000; i++) wq.push(i);
    wq.close();
    for (auto &t : workers) t.join();
    long sum = 0, count = 0;
    for (int w = 0; w < 4; w++) {
        sum += sums[w];
        count += counts[w];
    }
    std::printf("queue: %ld items, sum of squares=%ld\n", count, sum);
    CHECK(count == 3000 && sum == 3000L * 3001 * 6001 / 6);

    std::mutex m1, m2;
    long shared_a = 0, shared_b = 0;
    std::thread x([&] {
        for (int i = 0; i < 5000; i++) {
            std::scoped_lock both(m1, m2);
            shared_a++;
            shared_b += 2;
        }
    });
    std::thread y([&] {
        for (int i = 0; i < 5000; i++) {
            std::scoped_lock both(m2, m1);
            shared_a++;
            shared_b += 2;
        }
    });
    x.join();
    y.join();

    std::unique_lock<std::mutex> held(m1);
    bool other_got_it = true;
    std::thread probe([&] {
        std::unique_lock<std::mutex> lk(m1, std::try_to_lock);
        other_got_it = lk.owns_lock();
    });
    probe.join();
    held.unlock();
    std::printf("scoped_lock: a=%ld b=%ld; try_to_lock while held: %s\n", shared_a, shared_b,
                other_got_it ? "got it?" : "refused");
    CHECK(shared_a == 10000 && shared_b == 20000 && !other_got_it);

    std::timed_mutex tm;
    tm.lock();
    bool timed_got = true;
    std::thread tprobe([&] { timed_got = tm.try_lock_for(std::chrono::milliseconds(20)); });
    tprobe.join();
    tm.unlock();
    std::mutex cm;
    std::condition_variable cv;
    std::unique_lock<std::mutex> lk(cm);
    bool woke = cv.wait_for(lk, std::chrono::milliseconds(20), [] { return false; });
    lk.unlock();

    std::once_flag once;
    int once_runs = 0;
    std::vector<std::thread> callers;
    for (int i = 0; i < 8; i++) callers.emplace_back([&] { std::call_once(once, [&] { once_runs++; }); });
    for (auto &t : callers) t.join();
    std::printf("try_lock_for while held: %s; wait_for: %s; call_once ran %d time(s)\n",
                timed_got ? "got it?" : "timed out", woke ? "woke?" : "timed out", once_runs);
    CHECK(!timed_got && !woke && once_runs == 1);
    std::puts("cxx_mutex_cv: ok");
    return 0;
}
