#include "heapman/logformat/summary.h"

#include <memory>
#include <unordered_map>

namespace heapman::log {

namespace {

struct Counter {
  LogSummary& s;
  std::unordered_map<uint32_t, std::string> names;
  std::unordered_map<uint32_t, uint64_t> eventCounts;
  uint64_t lastSeq = 0;
  bool anySeq = false;
  uint64_t where = 0;
  int64_t chunk = 0;

  void seen(const EventCommon& ev) {
    if (anySeq && ev.seq <= lastSeq) {
      throw FormatError(ErrorCode::kBadSequence, where, chunk,
                        "sequence number " + std::to_string(ev.seq) + " does not follow " +
                            std::to_string(lastSeq));
    }
    if (!anySeq) s.firstSeq = ev.seq;
    anySeq = true;
    lastSeq = ev.seq;
    ++s.events;
    if (ev.timeNs > s.durationNs) s.durationNs = ev.timeNs;
  }

  template <class T>
  void operator()(const T& r) {
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
  Counter counter{s, {}, {}};
  std::vector<uint8_t> buf;
  auto model = std::make_unique<ChunkModel>();  // 270 KiB: not on the stack
  for (const ChunkRef& c : reader.chunks()) {
    s.chunks++;
    s.storedBytes += c.header.storedLength;
    s.rawBytes += c.header.rawLength;
    counter.where = c.offset;
    counter.chunk = c.number;
    switch (static_cast<ChunkType>(c.header.type)) {
      case ChunkType::kRecords: {
        s.recordChunks++;
        uint64_t before = 0;
        for (uint64_t n : s.records) before += n;
        uint32_t n = reader.decodeChunk(c, buf, counter, model.get());
        uint64_t after = 0;
        for (uint64_t k : s.records) after += k;
        s.stateRecords += n - (after - before);
        break;
      }
      case ChunkType::kRamDump:
        s.ramChunks++;
        reader.forEachSegment(c, [&](const RamSegment& seg) {
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
  s.lastSeq = counter.lastSeq;
  for (auto& [id, n] : counter.eventCounts) {
    auto it = counter.names.find(id);
    s.customEvents[it != counter.names.end() ? it->second : "#" + std::to_string(id)] += n;
  }
  return s;
}

}  // namespace heapman::log
