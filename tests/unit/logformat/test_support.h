// Helpers shared by the logformat unit tests: building logs in memory, decoding everything back,
// catching FormatError, and a tiny independent encoder for hand-built records chunks (format.h).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "heapman/logformat/error.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/reader.h"
#include "heapman/logformat/records.h"
#include "heapman/logformat/summary.h"
#include "heapman/logformat/writer.h"

namespace hmtest {

using namespace heapman::log;
using Bytes = std::vector<uint8_t>;

inline EventCommon ev(uint64_t seq, uint64_t timeNs = 0, uint32_t thread = 0) {
  return EventCommon{seq, timeNs, thread};
}

inline Header testHeader() {
  Header h;
  h.recorderVersion = "heapman-tests 1.2.3";
  h.pid = 4242;
  h.parentPid = 77;
  h.executable = "/usr/games/example";
  h.commandLine = {"/usr/games/example", "--level", "3", ""};
  h.startWallTimeNs = 1'700'000'000'123'456'789;
  h.startClockNs = 987'654'321;
  h.clock = "monotonic";
  h.pointerSize = 8;
  h.runtimes = {{Runtime::Kind::kNativeMalloc, "glibc 2.36"}, {Runtime::Kind::kBdwgc, "8.2.4"},
                {Runtime::Kind::kMono, ""}};
  h.options = {{"stack_depth", "32"}, {"heaps", "native,gc"}, {"empty", ""}};
  h.hostname = "testhost";
  return h;
}

// Writes a log into memory: body(writer) writes the records, then the log is finished (or only
// flushed when finish is false, leaving a log without footer).
template <class Body>
Bytes writeLog(const Header& header, const WriterOptions& options, Body&& body,
               bool finish = true) {
  MemorySink sink;
  {
    LogWriter w(sink, header, options);
    body(w);
    if (finish)
      w.finish();
    else
      w.flush();
    REQUIRE(w.ok());
    REQUIRE(w.error().empty());
    REQUIRE(w.bytesWritten() == sink.bytes.size());
  }
  return sink.bytes;
}

inline std::vector<Record> decodeAll(const LogReader& r) {
  std::vector<Record> out;
  r.forEachRecord([&](const auto& x) { out.emplace_back(x); });
  return out;
}

// Records of one chunk.
inline std::vector<Record> decodeChunk(const LogReader& r, const ChunkRef& c) {
  std::vector<Record> out;
  std::vector<uint8_t> buf;
  r.decodeChunk(c, buf, [&](const auto& x) { out.emplace_back(x); });
  return out;
}

inline std::vector<RamSegment> allSegments(const LogReader& r) {
  std::vector<RamSegment> out;
  for (const ChunkRef& c : r.chunks()) {
    if (c.header.type != static_cast<uint16_t>(ChunkType::kRamDump)) continue;
    for (RamSegment& s : r.ramSegments(c)) out.push_back(std::move(s));
  }
  return out;
}

inline uint64_t firstChunkOffset(const Bytes& log) { return kPrefixSize + loadLe(log.data() + 12, 4); }

// Runs f and returns the FormatError it throws, or nullopt when it throws none.
template <class F>
std::optional<FormatError> formatErrorOf(F&& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e;
  }
  return std::nullopt;
}

// Reads and fully checks a log the way `heapman verify` does.
inline void readAndSummarize(Bytes bytes) {
  LogReader r = LogReader::fromBytes(std::move(bytes));
  (void)summarize(r);
}

inline std::string describe(const FormatError& e) {
  return std::string(errorCodeName(e.code())) + " chunk " + std::to_string(e.chunk()) +
         " offset " + std::to_string(e.offset()) + ": " + e.what();
}

// Short description of a record for failure messages.
inline std::string describe(const Record& r) {
  std::ostringstream o;
  o << recordKindName(r.index());
  std::visit(
      [&](const auto& x) {
        if constexpr (requires { x.ev; })
          o << " seq=" << x.ev.seq << " t=" << x.ev.timeNs << " thread=" << x.ev.thread;
        if constexpr (requires { x.address; }) o << " address=" << x.address;
        if constexpr (requires { x.size; }) o << " size=" << x.size;
        if constexpr (requires { x.addresses; }) o << " gc=" << x.gcNumber << " n=" << x.addresses.size();
        if constexpr (requires { x.id; }) o << " id=" << x.id;
      },
      r);
  return o.str();
}

inline void requireSameRecords(const std::vector<Record>& got, const std::vector<Record>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("record " << i << ": got " << describe(got[i]) << ", want " << describe(want[i]));
    REQUIRE(got[i].index() == want[i].index());
    REQUIRE(got[i] == want[i]);
  }
}

// An independent, minimal encoder of records-chunk payloads, written from format.h (not from the
// writer), for hand-built chunks. It only builds records whose layout does not depend on the
// allocation model (TIME, THREAD, STACK NODE, COLLECTED, EXTENDED); tag values come from format.h.
struct HandChunk {
  Bytes t, a, s, m;

  static void varint(Bytes& b, uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<uint8_t>(v));
  }
  static void zz(Bytes& b, int64_t v) {
    varint(b, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void time(int64_t delta) {
    t.push_back(tag::kTime);
    zz(m, delta);
  }
  void thread(uint32_t index) {
    t.push_back(tag::kThread);
    varint(m, index);
  }
  // Deltas as stored: id - lastNodeId, id - parent, frame - lastFrame.
  void stackNode(bool managed, int64_t idDelta, int64_t parentDelta, int64_t frameDelta) {
    t.push_back(managed ? tag::kStackManaged : tag::kStackNative);
    zz(m, idDelta);
    zz(m, parentDelta);
    zz(m, frameDelta);
  }
  void collected(uint32_t gc, const std::vector<uint64_t>& ascending) {
    t.push_back(tag::kCollected);
    varint(m, gc);
    varint(m, ascending.size());
    uint64_t prev = 0;
    for (uint64_t x : ascending) {
      varint(m, x - prev);
      prev = x;
    }
  }
  // EXTENDED without explicit sequence: flags bit 1 = event.
  void extended(uint32_t kind, bool event, const Bytes& body) {
    t.push_back(tag::kExtended);
    varint(m, kind);
    varint(m, event ? 2 : 0);
    varint(m, body.size());
    m.insert(m.end(), body.begin(), body.end());
  }
  Bytes payload() const {
    Bytes out;
    varint(out, t.size());
    varint(out, a.size());
    varint(out, s.size());
    for (const Bytes* b : {&t, &a, &s, &m}) out.insert(out.end(), b->begin(), b->end());
    return out;
  }
  // Splits a records payload into its four streams (the inverse of payload()).
  static HandChunk parse(const Bytes& raw) {
    size_t p = 0;
    auto get = [&] {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        REQUIRE(p < raw.size());
        uint8_t b = raw[p++];
        v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (b < 0x80) return v;
      }
    };
    uint64_t lt = get(), la = get(), ls = get();
    REQUIRE(p + lt + la + ls <= raw.size());
    HandChunk h;
    auto at = [&](size_t off) { return raw.begin() + static_cast<ptrdiff_t>(off); };
    h.t.assign(at(p), at(p + lt));
    h.a.assign(at(p + lt), at(p + lt + la));
    h.s.assign(at(p + lt + la), at(p + lt + la + ls));
    h.m.assign(at(p + lt + la + ls), raw.end());
    return h;
  }
};

// The packed Cap'n Proto message of a FrameMark body (one data word, no pointers), built by
// hand: segment table (1 segment of 2 words), root struct pointer (1 data word), the frame.
inline Bytes packedFrameMark(uint8_t frame) {
  Bytes b = {0x10, 0x02, 0x10, 0x01};
  if (frame)
    b.insert(b.end(), {0x01, frame});
  else
    b.insert(b.end(), {0x00, 0x00});
  return b;
}

// A deterministic allocator-like workload: allocations that reuse freed blocks LIFO per size
// (like malloc bins) or carve new ones, frees of recent, old and unknown blocks, reallocs,
// heap-kind mismatches, sequence gaps, time jitter (also backwards), thread switches, GCs,
// stack nodes, strings and frame marks. Sequence numbers increase strictly.
struct Rng {
  uint64_t x;
  uint64_t next() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

inline std::vector<Record> churn(uint64_t seed, size_t ops, uint64_t firstSeq = 0) {
  Rng rng{seed * 0x9E3779B97F4A7C15ull + 1};
  struct Live {
    uint64_t address, size, actual;
    HeapKind heap;
  };
  std::vector<Live> live;
  std::vector<std::pair<uint64_t, std::vector<uint64_t>>> bins;  // actual size -> freed LIFO
  auto bin = [&](uint64_t actual) -> std::vector<uint64_t>& {
    for (auto& b : bins)
      if (b.first == actual) return b.second;
    bins.push_back({actual, {}});
    return bins.back().second;
  };
  uint64_t bump = 0x5555'0000'0000ull;
  uint64_t seq = firstSeq, t = 1000;
  uint32_t thread = 0, gc = 0, nodes = 0;
  std::vector<Record> out;
  auto e = [&] {
    if (rng.below(20) == 0) seq += 1 + rng.below(rng.below(4) == 0 ? 1u << 30 : 100);
    if (rng.below(3) == 0) t += rng.below(5000);
    if (rng.below(200) == 0) t -= std::min<uint64_t>(t, rng.below(3000));  // clock step back
    if (rng.below(30) == 0) thread = static_cast<uint32_t>(rng.below(6));
    return EventCommon{seq++, t, thread};
  };
  auto pickSize = [&]() -> std::pair<uint64_t, uint64_t> {
    uint64_t r = rng.below(100);
    uint64_t size;
    if (r < 70) size = 8 + 8 * rng.below(24);              // small bins
    else if (r < 95) size = 1 + rng.below(4096);           // anything (many distinct sizes)
    else if (r < 99) size = rng.below(1u << 20);
    else size = rng.below(2) ? 0 : (1ull << 40) + rng.below(100);
    uint64_t actual = (size + 15) / 16 * 16 + (rng.below(8) == 0 ? 8 : 0);
    return {size, actual};
  };
  auto heapOf = [&] {
    uint64_t r = rng.below(10);
    return static_cast<HeapKind>(r < 6 ? 0 : rng.below(kHeapKindCount));
  };
  for (size_t i = 0; i < ops; ++i) {
    uint64_t r = rng.below(100);
    if (r < 45 || live.empty()) {
      auto [size, actual] = pickSize();
      HeapKind heap = heapOf();
      uint64_t address;
      auto& b = bin(actual);
      if (!b.empty() && rng.below(5) != 0) {
        address = b.back();
        b.pop_back();
      } else if (!live.empty() && rng.below(200) == 0) {
        address = live[rng.below(live.size())].address;  // a free the recorder missed
      } else {
        address = bump;
        bump += actual + 16 * rng.below(3);
      }
      uint32_t stack = static_cast<uint32_t>(rng.below(400));
      uint32_t type = rng.below(3) == 0 ? static_cast<uint32_t>(1 + rng.below(300)) : 0;
      out.push_back(Alloc{e(), heap, address, size, actual, stack, type});
      live.push_back({address, size, actual, heap});
    } else if (r < 85) {
      uint64_t back = rng.below(4) == 0 ? rng.below(live.size()) : rng.below(std::min<size_t>(live.size(), 8));
      if (rng.below(10) == 0) back = live.size() - 1;  // the oldest
      size_t idx = live.size() - 1 - back;
      Live l = live[idx];
      live.erase(live.begin() + static_cast<ptrdiff_t>(idx));
      HeapKind heap = rng.below(50) == 0 ? static_cast<HeapKind>((static_cast<int>(l.heap) + 1) % 8)
                                         : l.heap;
      out.push_back(Free{e(), heap, l.address});
      bin(l.actual).push_back(l.address);
    } else if (r < 88) {
      out.push_back(Free{e(), heapOf(), 0x7777'0000'0000ull + 16 * rng.below(1000)});
    } else if (r < 93) {
      size_t idx = rng.below(live.size());
      auto [size, actual] = pickSize();
      uint64_t to = rng.below(3) == 0 ? live[idx].address : bump;
      if (to == bump) bump += actual + 16;
      uint32_t type = rng.below(2) ? static_cast<uint32_t>(rng.below(300)) : 0;
      out.push_back(Realloc{e(), live[idx].heap, live[idx].address, to, size, actual,
                            static_cast<uint32_t>(rng.below(400)), type});
      live[idx] = {to, size, actual, live[idx].heap};
    } else if (r < 95) {
      ++nodes;
      out.push_back(StackNode{nodes, static_cast<uint32_t>(rng.below(nodes)),
                              0x40'0000 + rng.below(1u << 20), rng.below(4) == 0});
    } else if (r < 97) {
      out.push_back(FrameMark{e(), i});
    } else if (r < 98) {
      out.push_back(CustomEvent{e(), static_cast<uint32_t>(rng.below(3)), {static_cast<uint8_t>(i)}});
    } else if (r < 99) {
      out.push_back(LogString{static_cast<uint32_t>(i), "s" + std::to_string(i)});
    } else {
      ++gc;
      out.push_back(GcBegin{e(), gc, 1u << 20, -1});
      std::vector<uint64_t> dead;
      for (size_t k = 0; k < live.size() && dead.size() < 20; k += 3) dead.push_back(live[k].address);
      std::sort(dead.begin(), dead.end());
      out.push_back(Collected{gc, dead});
      out.push_back(GcEnd{e(), gc, 1u << 20, 1u << 19, rng.below(100000)});
    }
  }
  return out;
}

inline Bytes noise(size_t n, uint64_t seed) {
  Rng rng{seed * 0x9E3779B97F4A7C15ull + 7};
  Bytes b(n);
  for (auto& v : b) v = static_cast<uint8_t>(rng.next() >> 56);
  return b;
}

// A small log of many small chunks (records and RAM dumps), a few KB in all, for the tests
// that damage logs at every byte.
inline Bytes smallMultiChunkLog(bool finish = true, size_t ops = 160) {
  WriterOptions o;
  o.recordsChunkBytes = 256;
  o.ramChunkBytes = 256;
  o.maxSegmentBytes = 200;
  const std::vector<Record> recs = churn(7, ops, 1);
  return writeLog(testHeader(), o, [&](LogWriter& w) {
    for (size_t i = 0; i < recs.size(); ++i) {
      w.write(recs[i]);
      if (i == recs.size() / 2) {
        w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 300, 0, true, noise(300, 5)});
        w.write(RamSegment{SegmentKind::kStaticRoot, 1, 0x8000, 300, 0, true, noise(300, 5)});
      }
    }
  }, finish);
}

}  // namespace hmtest

namespace Catch {
template <>
struct StringMaker<heapman::log::IndexEntry> {
  static std::string convert(const heapman::log::IndexEntry& e) {
    std::ostringstream o;
    o << "{offset " << e.offset << ", type " << e.type << ", seq " << e.firstSeq << ".."
      << e.lastSeq << ", records " << e.recordCount << ", gcs [";
    for (uint32_t g : e.gcNumbers) o << g << " ";
    o << "], events [";
    for (uint32_t n : e.eventNameIds) o << n << " ";
    o << "], time " << e.firstTimeNs << ".." << e.lastTimeNs << (e.namesCode ? ", code" : "")
      << "}";
    return o.str();
  }
};
template <>
struct StringMaker<heapman::log::IndexData> {
  static std::string convert(const heapman::log::IndexData& d) {
    std::ostringstream o;
    o << "{complete " << d.complete << ", endSeq " << d.endSeq << ", endTime " << d.endTimeNs
      << ", records " << d.recordCount << ", lost " << d.lostEvents << ", events "
      << d.eventCount << ", code marked " << d.codeMarked << ", chunks:";
    for (const auto& e : d.chunks) o << "\n  " << StringMaker<heapman::log::IndexEntry>::convert(e);
    return o.str() + "}";
  }
};
}  // namespace Catch
