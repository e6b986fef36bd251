// Replaces the global operator new/delete of the test binary to record the largest single
// request while tracking is on (alloc_tracker.h). In a file of its own: GCC warns about
// malloc/free pairs in replaced operators when it can see callers in the same file.
#include "alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> gTrack{false};
std::atomic<size_t> gLargest{0};
}  // namespace

namespace hmtest {
void allocTrackStart() {
  gLargest = 0;
  gTrack = true;
}
void allocTrackStop() { gTrack = false; }
size_t allocTrackLargest() { return gLargest.load(); }
}  // namespace hmtest

void* operator new(size_t n) {
  if (gTrack.load(std::memory_order_relaxed)) {
    size_t seen = gLargest.load();
    while (n > seen && !gLargest.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
