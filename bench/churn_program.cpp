// churn_program: the churn workload (churn_workload.h) on the real glibc malloc with real call
// depth 3-15, and nothing else: the program the recorder and peer profilers (heaptrack) record
// in the benchmarks. It links no HeapMan library, so the whole module is built one way (frame
// pointers on), as a game's own code would be.
//
//   churn_program [EVENTS]      (default 10 000 000 alloc/free events)
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "churn_workload.h"

namespace {

// Real call depth, so a profiler unwinds stacks as deep as the logformat benchmark's log claims.
__attribute__((noinline)) void* deepAlloc(int depth, size_t size) {
  if (depth <= 1) return std::malloc(size);
  void* p = deepAlloc(depth - 1, size);
  asm volatile("" ::"r"(p) : "memory");  // keep the frame (no tail call)
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  heapman::bench::ChurnWorkload w;
  uint64_t n = w.run(events, [](const heapman::bench::ChurnEvent&) {},
                     [](const heapman::bench::Site& s, size_t size) { return deepAlloc(s.depth, size); });
  std::printf("plain: %" PRIu64 " alloc/free events\n", n);
  return 0;
}
