// report_log: writes a synthetic game log for the report benchmark (run_report_bench.sh): a
// collected heap with GCs, custom events and frame marks, which logformat_bench's malloc churn
// does not have.
//
//   report_log OUT.hml [EVENTS]     (default 100 M events)
//
// Shape: frames of 2000 allocations (a FrameMark each), levels of 300 frames (level_start#K and
// level_end#K custom events); 400 call sites 4-14 frames deep with 64 types, Zipf-like
// popularity; 85% of objects on the collected heap (gc, gc_atomic), 15% native (freed
// explicitly). Of the collected ones 75% die within their frame, 22% at the end of their level,
// 3% stay (the heap grows); a GC every 100 000 events collects the dead (Collected set) and its
// addresses are reused. "Events" counts records with a sequence number (allocations, frees, GC
// begin/end, custom events, frame marks).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "heapman/logformat/writer.h"

using namespace heapman::log;

namespace {

constexpr int kSites = 400, kTypes = 64, kAllocsPerFrame = 2000, kFramesPerLevel = 300;
constexpr uint64_t kGcEvery = 100'000;

struct Obj {
  uint64_t address, size;
  int heap;  // 0 gc, 1 gc_atomic, 2 native
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_log OUT.hml [EVENTS]\n");
    return 2;
  }
  uint64_t events = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100'000'000;
  FILE* f = std::fopen(argv[1], "wb");
  if (!f) {
    std::perror(argv[1]);
    return 1;
  }
  Header h;
  h.recorderVersion = "report_log";
  h.runtimes = {{Runtime::Kind::kBdwgc, "synthetic"}, {Runtime::Kind::kNativeMalloc, "glibc"}};
  FdSink sink(fileno(f));
  LogWriter w(sink, h);
  std::mt19937_64 rng(7);
  uint64_t seq = 0;
  auto ev = [&] {
    EventCommon e{seq, seq * 40, 0};
    ++seq;
    return e;
  };
  // Stacks: main -> loop -> update, then each site's own chain.
  w.write(StackNode{1, 0, 0x401000, false});
  w.write(StackNode{2, 1, 0x401400, false});
  w.write(StackNode{3, 2, 0x401800, false});
  uint32_t node = 4;
  std::vector<uint32_t> leaf(kSites);
  std::vector<uint64_t> siteSize(kSites);
  std::vector<uint32_t> siteType(kSites);
  for (int s = 0; s < kSites; ++s) {
    uint32_t parent = 3;
    int depth = 4 + static_cast<int>(rng() % 11);
    for (int d = 0; d < depth; ++d) {
      // Sites share their first frames in groups (a tree, not 400 separate chains).
      uint64_t frame = d < 2 ? 0x410000 + (s % (d == 0 ? 8 : 40)) * 0x40 + d * 0x8
                             : 0x500000 + s * 0x400 + d * 0x10;
      w.write(StackNode{node, parent, frame, false});
      parent = node++;
    }
    leaf[s] = parent;
    siteSize[s] = 16u << (rng() % 7);
    siteType[s] = 1 + static_cast<uint32_t>(rng() % kTypes);
  }
  for (uint32_t t = 1; t <= kTypes; ++t) w.write(TypeDef{t, "Game.Type" + std::to_string(t)});
  w.write(LogString{1, "level_start"});
  w.write(LogString{2, "level_end"});
  std::vector<double> cdf(kSites);
  double sum = 0;
  for (int s = 0; s < kSites; ++s) cdf[s] = (sum += 1.0 / (s + 1));
  std::uniform_real_distribution<double> u(0, sum);

  std::vector<Obj> frameObjs, levelObjs, dead;
  std::vector<std::vector<uint64_t>> freeAddrs(3);
  uint64_t bump[3] = {0x7f0000000000, 0x7f4000000000, 0x560000000000};
  uint32_t gcs = 0, level = 0, frame = 0;
  uint64_t nextGc = kGcEvery, allocs = 0;
  auto gc = [&] {
    ++gcs;
    w.write(GcBegin{ev(), gcs, 0, -1});
    std::vector<uint64_t> addrs;
    for (const Obj& o : dead) {
      addrs.push_back(o.address);
      freeAddrs[o.heap].push_back(o.address);
    }
    std::sort(addrs.begin(), addrs.end());
    for (size_t i = 0; i < addrs.size(); i += 65536)
      w.write(Collected{gcs, std::vector<uint64_t>(addrs.begin() + i,
                                                    addrs.begin() + std::min(addrs.size(), i + 65536))});
    dead.clear();
    w.write(GcEnd{ev(), gcs, 0, 0, 200'000 + rng() % 800'000});
  };
  auto die = [&](const Obj& o) {
    if (o.heap == 2) {
      w.write(Free{ev(), HeapKind::kNative, o.address});
      freeAddrs[2].push_back(o.address);
    } else {
      dead.push_back(o);
    }
  };
  while (seq < events) {
    if (frame % kFramesPerLevel == 0) w.write(CustomEvent{ev(), 1, {}, 0});
    for (int i = 0; i < kAllocsPerFrame && seq < events; ++i) {
      int s = static_cast<int>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
      s = std::min(s, kSites - 1);
      uint64_t r = rng() % 100;
      int heap = r < 70 ? 0 : r < 85 ? 1 : 2;
      Obj o{0, siteSize[s] + (rng() % 4) * 8, heap};
      if (!freeAddrs[heap].empty()) {
        o.address = freeAddrs[heap].back();
        freeAddrs[heap].pop_back();
      } else {
        o.address = bump[heap];
        bump[heap] += 1024;  // room for the largest size
      }
      HeapKind k = heap == 0 ? HeapKind::kGcNormal : heap == 1 ? HeapKind::kGcAtomic : HeapKind::kNative;
      w.write(Alloc{ev(), k, o.address, o.size, o.size, leaf[s], heap == 2 ? 0 : siteType[s]});
      ++allocs;
      uint64_t life = rng() % 100;
      if (life < 75) frameObjs.push_back(o);
      else if (life < 97) levelObjs.push_back(o);
      // else: stays alive to the end
      if (seq >= nextGc) {
        gc();
        nextGc += kGcEvery;
      }
    }
    for (const Obj& o : frameObjs) die(o);
    frameObjs.clear();
    w.write(FrameMark{ev(), ++frame});
    if (frame % kFramesPerLevel == 0) {
      for (const Obj& o : levelObjs) die(o);
      levelObjs.clear();
      w.write(CustomEvent{ev(), 2, {}, 0});
      ++level;
    }
  }
  gc();
  w.finish();
  std::fflush(f);
  bool ok = w.ok();
  std::fclose(f);
  if (!ok) {
    std::fprintf(stderr, "write failed: %s\n", w.error().c_str());
    return 1;
  }
  std::printf("report_log: %" PRIu64 " events (%" PRIu64 " allocations), %u GCs, %u frames, %u "
              "levels, %" PRIu64 " bytes\n",
              seq, allocs, gcs, frame, level, w.bytesWritten());
  return 0;
}
