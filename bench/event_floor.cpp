// The floor of a recorded event on this machine: what the recorder's begin() cannot avoid per
// event. Times, per operation, a loop of rdtsc (every event's time stamp), of a locked increment
// of a shared counter (a numbered event's sequence number), of both (a numbered event), and of a
// plain load of the counter with rdtsc (an allocation, which reads the counter: DESIGN §2.1).
//
//   event_floor [ITERATIONS]
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<uint64_t> g_counter{0};

template <class Fn>
double nsPer(uint64_t n, Fn&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t sink = 0;
  for (uint64_t i = 0; i < n; ++i) sink += fn();
  auto t1 = std::chrono::steady_clock::now();
  __asm__ volatile("" ::"r"(sink));
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000000;
  double best[4] = {1e9, 1e9, 1e9, 1e9};
  for (int run = 0; run < 5; ++run) {
    double t[4] = {
        nsPer(n, [] { return __rdtsc(); }),
        nsPer(n, [] { return g_counter.fetch_add(1, std::memory_order_acq_rel); }),
        nsPer(n, [] { return g_counter.fetch_add(1, std::memory_order_acq_rel) + __rdtsc(); }),
        nsPer(n, [] { return g_counter.load(std::memory_order_acquire) + __rdtsc(); }),
    };
    for (int k = 0; k < 4; ++k)
      if (t[k] < best[k]) best[k] = t[k];
  }
  std::printf("rdtsc_ns %.2f\n", best[0]);
  std::printf("locked_increment_ns %.2f\n", best[1]);
  std::printf("numbered_event_floor_ns %.2f\n", best[2]);
  std::printf("allocation_floor_ns %.2f\n", best[3]);
  return 0;
}
