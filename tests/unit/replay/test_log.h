// Logs for the replay tests, written with the real LogWriter, and an independent reference model
// (a std::map replay of the decoded records) to check the engine against.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/writer.h"
#include "heapman/replay/replay.h"

namespace rtest {

using namespace heapman::log;
using heapman::replay::AllocInfo;

inline EventCommon ev(uint64_t seq, uint64_t t = 0, uint32_t thread = 0) {
  return EventCommon{seq, t, thread};
}

// Writes records into a log in memory; small chunks so that logs have many of them.
struct LogBuilder {
  MemorySink sink;
  LogWriter writer;
  uint64_t seq = 0;
  uint64_t time = 0;
  explicit LogBuilder(uint32_t chunkBytes = 2048, Runtime::Kind rt = Runtime::Kind::kBdwgc)
      : writer(sink, header(rt), options(chunkBytes)) {}
  static Header header(Runtime::Kind rt) {
    Header h;
    h.recorderVersion = "replay_tests";
    h.executable = "/bin/game";
    h.runtimes = {Runtime{rt, "test"}};
    return h;
  }
  static WriterOptions options(uint32_t chunkBytes) {
    WriterOptions o;
    o.recordsChunkBytes = chunkBytes;
    o.maxCollectedPerRecord = 7;  // many records per collected set
    return o;
  }
  EventCommon next(uint32_t thread = 0) {
    time += 1000;
    return ev(seq++, time, thread);
  }
  template <class R>
  void put(const R& r) {
    writer.write(r);
  }
  std::vector<uint8_t> finish() {
    writer.finish();
    return std::move(sink.bytes);
  }
};

// A game-like GC workload with every record kind: native malloc/free/realloc, bdwgc heaps with
// collected sets, unknown frees, replaced allocations, custom events level_start/level_end, frame
// marks, threads, modules, types, methods, managed stacks, root sets and (unless `lost` is
// false) a Lost record.
std::vector<uint8_t> makeWorkload(uint32_t seed, uint32_t gcs, uint32_t allocsPerGc,
                                  uint32_t chunkBytes = 2048, bool lost = true);

struct RefObject {
  AllocInfo info;
  uint64_t birthSeq = 0;
  bool operator==(const RefObject&) const = default;
};
using RefState = std::map<uint64_t, RefObject>;

// The live set after every event with seq < limit, by a straightforward map replay.
RefState referenceState(const LogReader& reader, uint64_t limit);

// The engine's live set in the same shape.
RefState engineState(const heapman::replay::Replay& r);

// Writes a log's bytes to a file (a failure fails the test).
void writeFile(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace rtest
