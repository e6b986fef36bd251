#include "heapman/logformat/summary.h"

#include <memory>
#include <unordered_map>

#include "heapman/logformat/check.h"

namespace heapman::log {

namespace {

struct Counter {
  LogSummary& s;
  LogCheck& check;
  std::unordered_map<uint32_t, std::string> names;
  std::unordered_map<uint32_t, uint64_t> eventCounts;
  uint64_t lastSeq = 0;
  bool anySeq = false;

  void seen(const EventCommon& ev) {
    if (!anySeq) s.firstSeq = ev.seq;
    anySeq = true;
    lastSeq = ev.seq;
    ++s.events;
    if (ev.timeNs > s.durationNs) s.durationNs = ev.timeNs;
  }

  // An event of an extended kind this reader does not know: not counted, but its sequence
  // number is the log's.
  void skippedEvent(const EventCommon& ev) { check.event(ev.seq); }

  template <class T>
  void operator()(const T& r) {
    check.record(r);
    s.records[Record(std::in_place_type<T>).index()]++;
    if constexpr (requires { r.ev; }) seen(r.ev);
    if constexpr (std::is_same_v<T, Alloc>) {
      HeapStats& h = s.heaps[static_cast<uint8_t>(r.heap) & 7];
      h.allocs++;
      h.bytes += r.size;
      h.actualBytes += r.actualSize;
    } else if constexpr (std::is_same_v<T, Free>) {
      s.heaps[static_cast<uint8_t>(r.heap) & 7].frees++;
    } else if constexpr (std::is_same_v<T, Realloc>) {
      s.heaps[static_cast<uint8_t>(r.heap) & 7].reallocs++;
    } else if constexpr (std::is_same_v<T, Collected>) {
      s.collectedObjects += r.addresses.size();
    } else if constexpr (std::is_same_v<T, GcEnd>) {
      s.gcs++;
    } else if constexpr (std::is_same_v<T, Lost>) {
      s.lostEvents += r.count;
    } else if constexpr (std::is_same_v<T, LogString>) {
      names[r.id] = r.text;
    } else if constexpr (std::is_same_v<T, CustomEvent>) {
      eventCounts[r.nameId]++;
    }
  }
};

}  // namespace

LogSummary summarize(const LogReader& reader) {
  LogSummary s;
  LogCheck check(reader);
  Counter counter{s, check, {}, {}};
  std::vector<uint8_t> buf;
  auto model = std::make_unique<ChunkModel>();  // 270 KiB: not on the stack
  for (const ChunkRef& c : reader.chunks()) {
    s.chunks++;
    s.storedBytes += c.header.storedLength;
    s.rawBytes += c.header.rawLength;
    switch (static_cast<ChunkType>(c.header.type)) {
      case ChunkType::kRecords: {
        s.recordChunks++;
        uint64_t before = 0;
        for (uint64_t n : s.records) before += n;
        check.beginRecords(c);
        uint32_t n = reader.decodeChunk(c, buf, counter, model.get());
        check.endRecords();
        uint64_t after = 0;
        for (uint64_t k : s.records) after += k;
        s.stateRecords += n - (after - before);
        break;
      }
      case ChunkType::kRamDump:
        s.ramChunks++;
        reader.forEachSegment(c, [&](const RamSegment& seg) {
          check.ramSegment(c, seg);
          s.ramSegments++;
          s.ramBytes += seg.length;
          if (!seg.hasBytes) s.ramDedupedSegments++;
        });
        break;
      default:
        s.unknownChunks++;  // a newer minor version's chunk type: skipped by length
        break;
    }
  }
  check.finish();
  s.lastSeq = counter.lastSeq;
  for (auto& [id, n] : counter.eventCounts) {
    auto it = counter.names.find(id);
    s.customEvents[it != counter.names.end() ? it->second : "#" + std::to_string(id)] += n;
  }
  return s;
}

}  // namespace heapman::log
