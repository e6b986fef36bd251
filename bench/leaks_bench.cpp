// Leak search benchmark: `heapman leaks`'s steps on a recorded log (bench/leaks_bench_heap,
// recorded with `heaprec run --ram-dumps event:level_end`), timed one by one in CPU time of the
// process (run with HEAPMAN_REPLAY_THREADS=1 and taskset -c 0 for one core).
//
//   leaks_bench LOG
#include <time.h>

#include <cstdio>
#include <string>

#include "heapman/graph/graph_queries.h"
#include "heapman/leaks/leaks.h"

using namespace heapman;

namespace {

double cpu() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double wall() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: leaks_bench LOG [EXCLUSIONS]\n");
    return 2;
  }
  double c0 = cpu(), w0 = wall();
  replay::ReplayOptions o;
  o.notes = nullptr;
  replay::Replay r(argv[1], o);
  double c1 = cpu();
  replay::FrameNamer namer(r.tables(), false);
  // The verb's leaf exclusions (the runtime's own statics are no holders), when given.
  replay::Exclusions ex = argc == 3 ? replay::Exclusions::fromFile(argv[2]) : replay::Exclusions();
  replay::Attribution a(r.tables(), namer, ex);
  leaks::LeaksRequest req;
  leaks::LeaksResult out;
  graph::GraphSession s(r);
  out.points = leaks::leakPoints(r, s.store(), req, &out.event, &out.chosenBecause);
  leaks::growthBySite(r, a, out.points, out, req.top);
  double c2 = cpu();
  leaks::growingContainers(s, a, out.points, req, out);
  double c3 = cpu(), w3 = wall();
  // The graph library's part alone: each dumped point's graph and dominator tree, in a fresh
  // session (what steps 2-4 cost beyond it is the leak search's own).
  double g0 = cpu();
  {
    graph::GraphSession fresh(r);
    for (const leaks::LeakPoint& p : out.points)
      if (p.dumped) {
        fresh.at(p.limit);
        fresh.dominatorTree();
      }
  }
  double graphOnly = cpu() - g0;
  uint64_t objects = out.points.empty() ? 0 : out.points.back().liveObjects;
  std::printf("points %zu (dumped %zu) at each '%s', live objects at the last %llu\n",
              out.points.size(), out.dumpedPoints, out.event.c_str(),
              static_cast<unsigned long long>(objects));
  std::printf("open (index) %.2f s, step 1 (live sets) %.2f s, steps 2-4 (graphs) %.2f s, "
              "all %.2f s CPU, %.2f s wall\n",
              c1 - c0, c2 - c1, c3 - c2, c3 - c0, w3 - w0);
  std::printf("of steps 2-4: graphs and dominator trees alone %.2f s, the leak search %.2f s\n",
              graphOnly, (c3 - c2) - graphOnly);
  for (const leaks::Suspect& sp : out.suspects) std::printf("suspect: %s\n", sp.sentence.c_str());
  return out.suspects.empty() ? 1 : 0;
}
