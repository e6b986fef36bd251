// The footer index (Cap'n Proto `Index`) as C++ values.
#pragma once

#include <cstdint>
#include <vector>

namespace heapman::log {

struct IndexEntry {
  uint64_t offset = 0;
  uint16_t type = 0;
  uint64_t firstSeq = 0;
  uint64_t lastSeq = 0;  // firstSeq - 1 when the chunk holds no event
  uint32_t recordCount = 0;
  std::vector<uint32_t> gcNumbers;
  std::vector<uint32_t> eventNameIds;
  uint64_t firstTimeNs = 0;
  uint64_t lastTimeNs = 0;
  bool namesCode = false;  // holds ModuleLoad, JitRange or MethodDef records (when codeMarked)
  bool operator==(const IndexEntry&) const = default;
};

struct IndexData {
  bool complete = false;
  std::vector<IndexEntry> chunks;
  uint64_t endSeq = 0;
  uint64_t endTimeNs = 0;
  uint64_t recordCount = 0;
  uint64_t lostEvents = 0;
  uint64_t eventCount = 0;
  bool codeMarked = false;  // the entries' namesCode is exact (format minor 2)
  bool operator==(const IndexData&) const = default;
};

}  // namespace heapman::log
