// Whole-log statistics for `heapman info` and the full check behind `heapman verify`.
// summarize() reads every chunk: checksums, decompression, record decoding, record counts, and
// the rules of LogCheck (check.h: the chunk sequence, sequence order, addresses, stack node ids,
// RAM dump references). It throws FormatError at the first problem, naming the chunk.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "heapman/logformat/reader.h"

namespace heapman::log {

struct HeapStats {
  uint64_t allocs = 0;
  uint64_t bytes = 0;        // requested
  uint64_t actualBytes = 0;  // as the allocator reported
  uint64_t frees = 0;
  uint64_t reallocs = 0;
};

struct LogSummary {
  std::array<uint64_t, kRecordKindCount> records{};  // by Record alternative (recordKindName)
  std::array<HeapStats, kHeapKindCount> heaps{};
  uint64_t chunks = 0, recordChunks = 0, ramChunks = 0, unknownChunks = 0;
  uint64_t stateRecords = 0;  // TIME, THREAD and SEQ records and skipped unknown extended kinds
  uint64_t firstSeq = 0, lastSeq = 0, events = 0;
  uint64_t durationNs = 0;    // largest event time
  uint64_t gcs = 0;           // GcEnd records
  uint64_t collectedObjects = 0;
  uint64_t lostEvents = 0;
  uint64_t ramSegments = 0, ramBytes = 0, ramDedupedSegments = 0;
  std::map<std::string, uint64_t> customEvents;  // event name -> occurrences
  uint64_t storedBytes = 0, rawBytes = 0;         // of all chunk payloads
};

LogSummary summarize(const LogReader& reader);

}  // namespace heapman::log
