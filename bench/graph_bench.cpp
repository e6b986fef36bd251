// The heap graph's speed on generated heaps (docs/PERFORMANCE.md, "Heap graph"; its history in docs/PERFORMANCE_HISTORY.md).
//
//   graph_bench scan OBJECTS        a dump laid out as bdwgc lays out small objects (4 KiB blocks
//                                   of one size: 16, 32, 48 or 64 bytes), 3/4 of the words
//                                   pointing into random objects (1 in 8 of those inside one),
//                                   the rest small integers; one 64 KiB static root. Times the
//                                   address map plus the scan into CSR (HeapGraph); reach_s:
//                                   the count of unreachable objects (on the first stats()).
//   graph_bench dominators OBJECTS  the same graph, then the dominator tree and retained sizes.
//   graph_bench log LOG GC          a recorded dump: load, build, scan, dominators.
//   graph_bench query LOG GC ADDR   `object` and `refs` on a built graph (milliseconds each).
//   --local                         7 in 8 pointers to one of the 4096 objects around the
//                                   pointing word (locality as in a real heap), else anywhere.
// One thread; times are its CPU time. Prints one line of key=value pairs per run (best of --runs N, default 3).
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "heapman/graph/dominators.h"
#include "heapman/graph/graph_queries.h"
#include "heapman/graph/heap_graph.h"
#include "heapman/replay/replay.h"

using namespace heapman;
using namespace heapman::graph;

namespace {

// CPU time of this thread: the machine is shared, so wall time would count other processes.
double now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Dump generate(uint64_t objects, uint64_t seed, bool local) {
  std::mt19937_64 rng(seed);
  Dump d;
  d.gc = 1;
  const uint64_t base = 0x7f0000000000;
  uint64_t page = base, total = 0;
  const uint64_t sizes[] = {16, 32, 48, 64};
  while (d.objects.size() < objects) {
    uint64_t size = sizes[rng() % 4];
    for (uint64_t a = page; a + size <= page + 4096 && d.objects.size() < objects; a += size) {
      if (rng() % 8 == 0) continue;  // a free slot
      d.objects.push_back({a, size, total, log::SegmentKind::kObject});
      total += size;
    }
    page += 4096;
  }
  const uint64_t rootBytes = 65536;
  d.roots.push_back({0x600000, rootBytes, total, log::SegmentKind::kStaticRoot});
  total += rootBytes;
  d.byteCount = total;
  d.bytes.resize(total);
  uint64_t* w = reinterpret_cast<uint64_t*>(d.bytes.data());
  for (uint64_t i = 0; i < total / 8; ++i) {
    uint64_t r = rng();
    if (r % 4 == 0) {
      w[i] = r >> 40;  // a small integer
    } else {
      // local: 7 in 8 pointers go to one of the 4096 objects around the word's own (objects
      // allocated together point to each other); else anywhere.
      uint64_t n = d.objects.size(), j;
      if (local && (r >> 61) != 0) {
        uint64_t here = std::min<uint64_t>(i * 8 * n / total, n - 1);
        j = (here + n - 2048 + (r >> 8) % 4096) % n;
      } else {
        j = (r >> 8) % n;
      }
      const DumpSegment& o = d.objects[j];
      w[i] = o.address + ((r >> 4) % 8 == 0 ? 8 * ((r >> 60) % (o.length / 8)) : 0);
    }
  }
  return d;
}

}  // namespace

// graph_bench log LOG GC: the graph of a recorded collection (graph_bench_heap on the real
// collector): dump load, graph build (live-set join, scan), dominators. CPU time.
int benchLog(const char* path, uint32_t gc) {
  replay::ReplayOptions o;
  o.notes = nullptr;
  replay::Replay r(path, o);
  DumpStore store(r.reader());
  // As GraphSession does: the index's table of first copies, when it has one (environment
  // GRAPH_BENCH_NO_INDEX_COPIES set: without, to compare).
  bool indexed = r.tables().dumpCopiesIndexed && !std::getenv("GRAPH_BENCH_NO_INDEX_COPIES");
  if (indexed) store.useIndexedCopies(r.tables().dumpCopies);
  double t0 = now();
  Dump probe = store.load(gc);
  double t1 = now();
  uint64_t dumpBytes = probe.byteCount;
  // Objects whose bytes do not follow the previous object's in the dump (a scan in address order
  // reads there out of sequence): logs recorded before the writer sorted its runs have one per run.
  uint64_t outOfOrder = 0;
  for (size_t i = 1; i < probe.objects.size(); ++i)
    outOfOrder += probe.objects[i].offset < probe.objects[i - 1].offset;
  probe = Dump();
  double t2 = now();
  auto g = HeapGraph::atGc(r, store, gc);
  double t3 = now();
  // The scan alone in CPU time (the graph's own scanSeconds is wall time, which the other
  // processes on a shared machine inflate): the same dump and tables built into a second graph.
  double scanCpu = 0, scanSys = 0;
  long scanFaults = 0;
  {
    Dump copy = g->dump();
    std::vector<uint32_t> info;
    std::vector<uint8_t> flags;
    for (uint32_t v = g->firstObject(); v < g->nodeCount(); ++v) {
      info.push_back(g->objectInfo(v));
      flags.push_back(g->objectFlags(v));
    }
    std::vector<RootNode> roots;
    for (uint32_t n = 1; n <= g->rootCount(); ++n) roots.push_back(g->root(n));
    rusage r0{};
    getrusage(RUSAGE_THREAD, &r0);
    double s0 = now();
    HeapGraph again(std::move(copy), std::move(info), std::move(flags), std::move(roots),
                    g->options());
    scanCpu = now() - s0;
    // Of that CPU time, the kernel's (first touch of the graph's new arrays) and its page faults.
    rusage r1{};
    getrusage(RUSAGE_THREAD, &r1);
    scanSys = static_cast<double>(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
              static_cast<double>(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    scanFaults = r1.ru_minflt - r0.ru_minflt;
    if (again.stats().edges != g->stats().edges) std::fprintf(stderr, "rebuilt graph differs\n");
  }
  std::vector<uint64_t> sizes(g->nodeCount());
  for (uint32_t v = g->firstObject(); v < g->nodeCount(); ++v) sizes[v] = g->size(v);
  double t4 = now();
  DominatorTree t = dominators(g->offsets(), g->targets(), 0, sizes);
  double t5 = now();
  const GraphStats& s = g->stats();
  for (uint32_t n = 1; n <= g->rootCount(); ++n)
    std::printf("root %u %s 0x%llx %llu bytes, %zu edges\n", n, g->root(n).label.c_str(),
                static_cast<unsigned long long>(g->address(n)),
                static_cast<unsigned long long>(g->size(n)), g->out(n).size());
  std::printf("mode=log objects=%llu edges=%llu dump_bytes=%llu load_s=%.3f build_s=%.3f "
              "scan_s=%.3f scan_cpu_s=%.3f scan_sys_s=%.3f scan_page_faults=%ld "
              "scan_objects_per_s=%.1fM dominators_s=%.3f unreachable=%llu "
              "graph_bytes_per_object=%.1f reachable=%u indexed_copies=%d bytes_out_of_order=%llu\n",
              static_cast<unsigned long long>(s.objects), static_cast<unsigned long long>(s.edges),
              static_cast<unsigned long long>(dumpBytes), t1 - t0, t3 - t2, s.scanSeconds, scanCpu,
              scanSys, scanFaults,
              static_cast<double>(s.objects) / scanCpu / 1e6, t5 - t4,
              static_cast<unsigned long long>(s.unreachable),
              static_cast<double>(s.graphBytes - s.edges * 4) / static_cast<double>(s.objects),
              t.reachable, indexed ? 1 : 0, static_cast<unsigned long long>(outOfOrder));
  return 0;
}

// graph_bench query LOG GC ADDR: what the shell's `object` and `refs` cost once the graph is
// built: the verbs' own library calls (describeObject, references) on one GraphSession, each
// timed (wall, milliseconds; the first `object` builds the graph and is shown apart).
int benchQuery(const char* path, uint32_t gc, const char* address) {
  replay::ReplayOptions o;
  o.notes = nullptr;
  replay::Replay r(path, o);
  replay::FrameNamer namer(r.tables(), true);
  replay::Exclusions ex;  // Attribution keeps a reference
  replay::Attribution a(r.tables(), namer, ex);
  GraphSession& s = graphSessionFor(r);
  uint64_t limit = r.resolve("gc:" + std::to_string(gc));
  uint64_t addr = parseAddress(address);
  auto ms = [](auto f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  size_t in = 0, out = 0, rows = 0;
  double first = ms([&] { in = describeObject(s, a, limit, addr, 100).inTotal; });
  std::printf("object (builds the graph): %.1f ms\n", first);
  for (int i = 0; i < 3; ++i)
    std::printf("object: %.2f ms\n", ms([&] { out = describeObject(s, a, limit, addr, 100).outTotal; }));
  for (int i = 0; i < 2; ++i)
    std::printf("refs --in: %.2f ms\n", ms([&] { rows = references(s, a, limit, addr, true, 1, 1000).size(); }));
  for (int i = 0; i < 2; ++i)
    std::printf("refs: %.2f ms\n", ms([&] { rows = references(s, a, limit, addr, false, 1, 1000).size(); }));
  for (int i = 0; i < 2; ++i)
    std::printf("refs --depth 3: %.2f ms\n", ms([&] { rows = references(s, a, limit, addr, false, 3, 1000).size(); }));
  std::printf("mode=query objects=%u in=%zu out=%zu depth3_rows=%zu\n", s.graph().nodeCount(), in, out, rows);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "query") == 0)
    return benchQuery(argv[2], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)), argv[4]);
  if (argc >= 4 && std::strcmp(argv[1], "log") == 0)
    return benchLog(argv[2], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  if (argc < 3) {
    std::fprintf(stderr, "usage: graph_bench scan|dominators OBJECTS [--runs N] [--local]\n       graph_bench log LOG GC\n       graph_bench query LOG GC ADDR\n");
    return 2;
  }
  std::string mode = argv[1];
  uint64_t n = std::strtoull(argv[2], nullptr, 10);
  int runs = 3;
  bool local = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--local") == 0) local = true;
  }
  double bestScan = 1e9, bestDom = 1e9, bestReach = 1e9;
  uint64_t edges = 0, graphBytes = 0, dumpBytes = 0, reachable = 0, retained = 0;
  for (int run = 0; run < runs; ++run) {
    Dump d = generate(n, 14, local);
    dumpBytes = d.memoryBytes();
    size_t objs = d.objects.size();
    std::vector<uint32_t> info(objs, 0);
    std::vector<uint8_t> flags(objs, kScan);
    std::vector<RootNode> roots(1);
    double t0 = now();
    HeapGraph g(std::move(d), std::move(info), std::move(flags), std::move(roots),
                HeapGraph::Options{true});
    double t1 = now();
    bestScan = std::min(bestScan, t1 - t0);
    (void)g.stats();  // counts the objects no root reaches: one traversal, on first use
    bestReach = std::min(bestReach, now() - t1);
    edges = g.stats().edges;
    graphBytes = g.stats().graphBytes;
    if (mode == "dominators") {
      std::vector<uint64_t> sizes(g.nodeCount());
      for (uint32_t v = g.firstObject(); v < g.nodeCount(); ++v) sizes[v] = g.size(v);
      double t2 = now();
      DominatorTree t = dominators(g.offsets(), g.targets(), 0, sizes);
      bestDom = std::min(bestDom, now() - t2);
      reachable = t.reachable;
      retained = t.retained[0];
    }
  }
  std::printf("mode=%s%s objects=%llu edges=%llu scan_s=%.3f scan_objects_per_s=%.1fM "
              "graph_bytes_per_object=%.1f dump_bytes=%llu reach_s=%.3f",
              mode.c_str(), local ? " local" : " random", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(edges), bestScan, n / bestScan / 1e6,
              static_cast<double>(graphBytes - edges * 4) / static_cast<double>(n),
              static_cast<unsigned long long>(dumpBytes), bestReach);
  if (mode == "dominators")
    std::printf(" dominators_s=%.3f reachable=%llu retained_root=%llu", bestDom,
                static_cast<unsigned long long>(reachable), static_cast<unsigned long long>(retained));
  std::printf("\n");
  return 0;
}
