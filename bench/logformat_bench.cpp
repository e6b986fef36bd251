// logformat_bench: write and read throughput and bytes per event of the HeapMan log format on
// a game-like churn stream (churn_workload.h).
//
//   logformat_bench write OUT.hml [EVENTS]   encode EVENTS alloc/free events (default 10 M),
//                                            report bytes/event and write throughput
//   logformat_bench read LOG                 decode every record, report read throughput
//   logformat_bench reencode LOG [REPS]      decode LOG's records into memory, then encode them
//                                            again REPS times (default 5) into a sink that only
//                                            counts and hashes: the encoder's time per record on
//                                            a recorded stream, alone on one core (the recorder's
//                                            writer runs it next to the program, where timings
//                                            swing by ±10%); the hash shows an encoder change
//                                            kept the bytes
//   (churn_program runs the same workload with real call depth and no logging: the program
//   the recorder and peer profilers record.)
//
// Timing model for `write`: the recorder stamps events with a microsecond clock; the workload
// is replayed with 50 ns between events (what the recorder costs per event on this machine per
// docs/DESIGN.md §2.0), two threads alternating in runs of 512 events (the writer thread merges
// per-thread buffers of that size). Stacks: every call site shares main -> loop -> update and
// then adds its own frames, 3-15 deep in all.
#include <time.h>
#include <xxhash.h>

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

// Counts and hashes what the writer emits.
class HashSink : public Sink {
 public:
  bool write(const void* data, size_t n) override {
    bytes += n;
    hash = XXH3_64bits_withSeed(data, n, hash);
    return true;
  }
  uint64_t bytes = 0, hash = 0;
};

int reencode(const char* path, int reps) {
  LogReader r = LogReader::open(path);
  // Allocations kept as the recorder hands them to the encoder (writeAlloc's arguments); the
  // few other records as they are, by position.
  struct Item {
    EventCommon ev;
    uint64_t address;
    AllocInfo info;
    uint32_t other;  // 1 + index into others, 0 for an allocation
  };
  std::vector<Item> items;
  std::vector<Record> others;
  r.forEachRecord([&](const Record& rec) {
    if (const auto* a = std::get_if<Alloc>(&rec)) {
      AllocInfo info{a->heap, a->size, a->actualSize, a->stackId, a->typeId};
      items.push_back({a->ev, a->address, info, 0});
    } else {
      others.push_back(rec);
      items.push_back({{}, 0, {}, static_cast<uint32_t>(others.size())});
    }
  });
  double best = 0;
  HashSink sink;
  for (int rep = 0; rep < reps; ++rep) {
    sink = HashSink{};
    auto t0 = std::chrono::steady_clock::now();
    LogWriter lw(sink, r.header());
    for (const Item& it : items) {
      if (!it.other)
        lw.writeAlloc(it.ev, it.address, it.info);
      else
        std::visit([&](const auto& x) { lw.write(x); }, others[it.other - 1]);
    }
    lw.finish();
    double s = seconds(t0, std::chrono::steady_clock::now());
    if (rep == 0 || s < best) best = s;
  }
  std::printf("reencode: %zu records (%zu allocations), best of %d: %.2f ns/record, %.1f ms; "
              "%" PRIu64 " bytes, hash %016" PRIx64 "\n",
              items.size(), items.size() - others.size(), reps, best * 1e9 / items.size(),
              best * 1e3, sink.bytes, sink.hash);
  return 0;
}

}  // namespace

constexpr const char* kUsage =
    "usage: logformat_bench write OUT [EVENTS] | read LOG | reencode LOG [REPS]\n";

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  std::string mode = argv[1];
  try {
    if (mode == "write" && argc >= 3)
      return write(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10000000);
    if (mode == "read" && argc >= 3) return read(argv[2]);
    if (mode == "reencode" && argc >= 3)
      return reencode(argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logformat_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "%s", kUsage);
  return 2;
}
