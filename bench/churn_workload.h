// A game-like allocation churn workload, shared by the logformat benchmark (which encodes its
// events straight into a log) and its plain mode (which a peer profiler such as heaptrack
// records). Allocations go to the real glibc malloc, so addresses, reuse patterns and usable
// sizes are the allocator's own.
//
// Shape: frames of `allocsPerFrame` allocations from 48 call sites (3-15 frames deep, Zipf-like
// popularity, 1-3 typical sizes each). 70% of objects die within a few allocations (temporary
// strings), 25% at the end of their frame, 5% at the end of their level (300 frames).
#pragma once

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

namespace heapman::bench {

struct Site {
  uint32_t id = 0;
  int depth = 0;
  size_t sizes[3] = {};
  int sizeCount = 0;
};

struct ChurnEvent {
  bool isAlloc;
  uint64_t address;
  size_t size;
  size_t usable;
  const Site* site;
};

class ChurnWorkload {
 public:
  static constexpr int kSites = 48;
  static constexpr int kFramesPerLevel = 300;

  explicit ChurnWorkload(uint64_t seed = 42, int allocsPerFrame = 2000)
      : rng_(seed), allocsPerFrame_(allocsPerFrame) {
    std::uniform_int_distribution<int> depth(3, 15), nsizes(1, 3);
    std::uniform_int_distribution<int> sz(0, 11);
    static const size_t kSizes[] = {8, 16, 24, 32, 40, 48, 64, 96, 128, 256, 512, 2048};
    for (int i = 0; i < kSites; ++i) {
      Site& s = sites_[i];
      s.id = static_cast<uint32_t>(i);
      s.depth = depth(rng_);
      s.sizeCount = nsizes(rng_);
      for (int k = 0; k < s.sizeCount; ++k) s.sizes[k] = kSizes[sz(rng_)];
    }
    // Zipf-like popularity: site i weighs 1/(i+1).
    std::vector<double> w;
    for (int i = 0; i < kSites; ++i) w.push_back(1.0 / (i + 1));
    pick_ = std::discrete_distribution<int>(w.begin(), w.end());
  }
  ~ChurnWorkload() { releaseAll(); }

  const Site* sites() const { return sites_; }

  // Runs frames until at least `events` allocation/free events have happened, calling
  // sink(const ChurnEvent&) for each (alloc after malloc returns, free before free).
  // `allocate(site, size)` performs the malloc (so callers can add real call depth).
  template <class Sink, class Allocate>
  uint64_t run(uint64_t events, Sink&& sink, Allocate&& allocate) {
    uint64_t n = 0;
    std::uniform_real_distribution<double> u(0, 1);
    std::uniform_int_distribution<int> shortLife(1, 24);
    while (n < events) {
      for (int i = 0; i < allocsPerFrame_; ++i) {
        const Site& s = sites_[pick_(rng_)];
        size_t size = s.sizes[rng_() % s.sizeCount];
        void* p = allocate(s, size);
        sink(ChurnEvent{true, reinterpret_cast<uint64_t>(p), size, malloc_usable_size(p), &s});
        ++n;
        double r = u(rng_);
        if (r < 0.70) {
          temp_.push_back({p, i + shortLife(rng_)});
        } else if (r < 0.95) {
          frame_.push_back(p);
        } else {
          level_.push_back(p);
        }
        // Temporaries whose time has come.
        for (size_t k = 0; k < temp_.size();) {
          if (temp_[k].dieAt <= i) {
            n += release(temp_[k].p, sink);
            temp_[k] = temp_.back();
            temp_.pop_back();
          } else {
            ++k;
          }
        }
      }
      for (auto& t : temp_) n += release(t.p, sink);
      temp_.clear();
      for (void* p : frame_) n += release(p, sink);
      frame_.clear();
      if (++frame_no_ % kFramesPerLevel == 0) {
        for (void* p : level_) n += release(p, sink);
        level_.clear();
      }
    }
    return n;
  }

 private:
  struct Temp {
    void* p;
    int dieAt;
  };
  template <class Sink>
  int release(void* p, Sink& sink) {
    sink(ChurnEvent{false, reinterpret_cast<uint64_t>(p), 0, 0, nullptr});
    std::free(p);
    return 1;
  }
  void releaseAll() {
    for (auto& t : temp_) std::free(t.p);
    for (void* p : frame_) std::free(p);
    for (void* p : level_) std::free(p);
  }

  std::mt19937_64 rng_;
  int allocsPerFrame_;
  Site sites_[kSites];
  std::discrete_distribution<int> pick_;
  std::vector<Temp> temp_;
  std::vector<void*> frame_, level_;
  uint64_t frame_no_ = 0;
};

}  // namespace heapman::bench
