// Built with -DHEAPMAN_GRAPH_PHASES, the graph's build and dominators() print each phase's CPU
// time to stderr (the per-phase figures of docs/PERFORMANCE.md); otherwise this is nothing.
//   HEAPMAN_PHASE_START;   ...   HEAPMAN_PHASE("scan");   ...   HEAPMAN_PHASE("copy");
#pragma once

#ifdef HEAPMAN_GRAPH_PHASES
#include <time.h>

#include <cstdio>

namespace heapman::graph {
inline double phaseCpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace heapman::graph

#define HEAPMAN_PHASE_START double heapmanPhaseStart = ::heapman::graph::phaseCpuNow()
#define HEAPMAN_PHASE(name)                                                 \
  do {                                                                      \
    double t_ = ::heapman::graph::phaseCpuNow();                            \
    std::fprintf(stderr, "  %-10s %.3f s\n", name, t_ - heapmanPhaseStart); \
    heapmanPhaseStart = t_;                                                 \
  } while (0)
#else
#define HEAPMAN_PHASE_START \
  do {                      \
  } while (0)
#define HEAPMAN_PHASE(name) \
  do {                      \
  } while (0)
#endif
