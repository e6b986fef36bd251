// logformat_bench: write and read throughput and bytes per event of the HeapMan log format on
// a game-like churn stream (churn_workload.h).
//
//   logformat_bench write OUT.hml [EVENTS]   encode EVENTS alloc/free events (default 10 M),
//                                            report bytes/event and write throughput
//   logformat_bench read LOG                 decode every record, report read throughput
//   (churn_program runs the same workload with real call depth and no logging: the program
//   the recorder and peer profilers record.)
//
// Timing model for `write`: the recorder stamps events with a microsecond clock; the workload
// is replayed with 50 ns between events (what the recorder costs per event on this machine per
// shared/FINDINGS.md), two threads alternating in runs of 512 events (the writer thread merges
// per-thread buffers of that size). Stacks: every call site shares main -> loop -> update and
// then adds its own frames, 3-15 deep in all.
#include <time.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "churn_workload.h"
#include "heapman/logformat/reader.h"
#include "heapman/logformat/writer.h"

using namespace heapman;
using namespace heapman::log;

namespace {

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int write(const char* path, uint64_t events) {
  std::vector<bench::ChurnEvent> stream;
  stream.reserve(events + 4096);
  bench::ChurnWorkload w;
  w.run(events, [&](const bench::ChurnEvent& e) { stream.push_back(e); },
        [](const bench::Site&, size_t size) { return std::malloc(size); });

  FILE* f = std::fopen(path, "wb");
  if (!f) {
    std::perror(path);
    return 1;
  }
  Header h;
  h.recorderVersion = "logformat_bench";
  h.runtimes = {{Runtime::Kind::kNativeMalloc, "glibc"}};
  FdSink sink(fileno(f));
  auto t0 = std::chrono::steady_clock::now();
  LogWriter lw(sink, h);
  // Stack trie: nodes 1-3 are main/loop/update; site s adds depth-3 frames of its own.
  lw.write(StackNode{1, 0, 0x555555560100, false});
  lw.write(StackNode{2, 1, 0x555555560420, false});
  lw.write(StackNode{3, 2, 0x5555555608a0, false});
  uint32_t nextNode = 4;
  std::vector<uint32_t> leaf(bench::ChurnWorkload::kSites, 0);
  uint64_t seq = 0, allocs = 0, frees = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    const bench::ChurnEvent& e = stream[i];
    EventCommon ev{seq, seq * 50 / 1000 * 1000, static_cast<uint32_t>((i / 512) & 1)};
    ++seq;
    if (e.isAlloc) {
      uint32_t& l = leaf[e.site->id];
      if (!l) {
        uint32_t parent = 3;
        for (int d = 3; d < e.site->depth; ++d) {
          uint64_t frame = 0x555555561000ull + e.site->id * 0x400ull + static_cast<uint64_t>(d) * 0x24;
          lw.write(StackNode{nextNode, parent, frame, false});
          parent = nextNode++;
        }
        l = parent;
      }
      lw.write(Alloc{ev, HeapKind::kNative, e.address, e.size, e.usable, l, 0});
      ++allocs;
    } else {
      lw.write(Free{ev, HeapKind::kNative, e.address});
      ++frees;
    }
  }
  lw.finish();
  std::fflush(f);
  auto t1 = std::chrono::steady_clock::now();
  std::fclose(f);
  if (!lw.ok()) {
    std::fprintf(stderr, "write failed: %s\n", lw.error().c_str());
    return 1;
  }
  double s = seconds(t0, t1);
  uint64_t n = allocs + frees;
  std::printf("write: %" PRIu64 " events (%" PRIu64 " allocs, %" PRIu64 " frees), %" PRIu64
              " bytes, %.3f bytes/event, %.1f M events/s, %.3f s\n",
              n, allocs, frees, lw.bytesWritten(), static_cast<double>(lw.bytesWritten()) / n,
              n / s / 1e6, s);
  return 0;
}

int read(const char* path) {
  auto t0 = std::chrono::steady_clock::now();
  LogReader r = LogReader::open(path);
  uint64_t allocs = 0, frees = 0, other = 0, bytes = 0;
  auto c = [&](const auto& rec) {
    using T = std::decay_t<decltype(rec)>;
    if constexpr (std::is_same_v<T, Alloc>) {
      ++allocs;
      bytes += rec.size;
    } else if constexpr (std::is_same_v<T, Free>) {
      ++frees;
    } else {
      ++other;
    }
  };
  r.forEachRecord(c);
  auto t1 = std::chrono::steady_clock::now();
  double s = seconds(t0, t1);
  std::printf("read: %" PRIu64 " events (%" PRIu64 " allocs, %" PRIu64 " bytes, %" PRIu64
              " frees, %" PRIu64 " other), %.1f M events/s, %.3f s\n",
              allocs + frees, allocs, bytes, frees, other, (allocs + frees) / s / 1e6, s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: logformat_bench write OUT [EVENTS] | read LOG\n");
    return 2;
  }
  std::string mode = argv[1];
  try {
    if (mode == "write" && argc >= 3)
      return write(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10000000);
    if (mode == "read" && argc >= 3) return read(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logformat_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: logformat_bench write OUT [EVENTS] | read LOG\n");
  return 2;
}
