// libFuzzer target for the log reader: LogReader::fromBytes, summarize(), and every chunk decoded
// on its own (records through decodeChunk, RAM dumps through ramSegments, other types through
// payload).
//
// FormatError is the reader's documented answer to a bad log and is caught here. Any other
// exception (std::bad_alloc, std::length_error, kj::Exception, CursorOverrun, ...) is a reader
// bug: it is left to escape, std::terminate aborts, and libFuzzer records the input. So do the
// sanitizers, the leak checker, -malloc_limit_mb (one allocation driven by the input) and the
// invariants checked below.
//
// Round trip: a log the reader fully accepts (summarize() succeeds) is written again with
// LogWriter from its decoded header and records, and must read back to the same header and
// records. That checks the predictive record coding from both ends: any input that makes
// encoder and decoder disagree is a bug in one of them.
//
// Checksums: every input is read twice, once as it is (the checksum and chunk-header checks get
// fuzzed) and, when they differ, once with the header checksum, each chunk's header check and
// each payload checksum recomputed, so that mutated lengths, records and Cap'n Proto bodies
// reach the decoders instead of stopping at a checksum mismatch.
//
// Read mode: every input is also opened as the queries open it (ReadMode::kIntactPrefix), which
// must agree with the strict reader (checkIntactPrefix).
//
// Run: tests/fuzz/run_fuzz.sh BUILD/tests/fuzz/reader_fuzz [SEED_DIR | DEMO_LOG] [SECONDS]
// Reproduce: BUILD/tests/fuzz/reader_fuzz CRASH_FILE
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"
#include "heapman/logformat/writer.h"

namespace hl = heapman::log;

namespace {

volatile uint64_t gKeep;  // keeps the reads of readLog() from being optimized away

[[noreturn]] void invariantFailed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "reader_fuzz: invariant violated at %s:%d: %s\n", file, line, what);
  std::abort();
}
#define FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : invariantFailed(#cond, __FILE__, __LINE__))

// Recomputes what the reader verifies with XXH3 (format.h): the header checksum, each chunk's
// header check and payload checksum, following the chunks from the front the way scan() does.
// Returns whether it changed anything.
bool repairChecksums(std::vector<uint8_t>& b) {
  using hl::loadLe;
  using hl::storeLe;
  const size_t size = b.size();
  if (size < hl::kPrefixSize || std::memcmp(b.data(), hl::kMagic, sizeof hl::kMagic) != 0)
    return false;
  bool changed = false;
  auto put = [&](size_t at, uint64_t v, int n) {
    if (loadLe(b.data() + at, n) == (v & (n == 8 ? ~0ull : (1ull << (8 * n)) - 1))) return;
    storeLe(b.data() + at, v, n);
    changed = true;
  };
  uint64_t hlen = loadLe(b.data() + 12, 4);
  if (hlen > size - hl::kPrefixSize) return changed;
  put(16, XXH3_64bits(b.data() + hl::kPrefixSize, hlen), 8);
  uint64_t off = hl::kPrefixSize + hlen;
  while (size - off >= hl::kChunkHeaderSize &&
         std::memcmp(b.data() + off, hl::kChunkMagic, sizeof hl::kChunkMagic) == 0) {
    uint8_t* h = b.data() + off;
    put(off + 28, XXH3_64bits(h, 28), 4);
    uint64_t stored = loadLe(h + 8, 4);
    if (stored > size - off - hl::kChunkHeaderSize) break;
    put(off + 32, XXH3_64bits(h + hl::kChunkHeaderSize, stored), 8);
    off += hl::kChunkHeaderSize + stored;
  }
  return changed;
}

// Touches every field of every record (so nothing is optimized away and uninitialized or
// dangling data would show up under the sanitizers) and checks what decoding guarantees.
struct Visitor {
  uint64_t sink = 0;
  uint32_t visited = 0;

  void mix(uint64_t v) { sink = sink * 31 + v; }
  void mix(const std::string& s) {
    for (char c : s) mix(static_cast<uint8_t>(c));
  }
  void mix(const std::vector<uint8_t>& v) {
    for (uint8_t c : v) mix(c);
  }
  void mix(const hl::EventCommon& ev) {
    mix(ev.seq);
    mix(ev.timeNs);
    mix(ev.thread);
  }

  template <class T>
  void operator()(const T& r) {
    ++visited;
    if constexpr (requires { r.ev; }) mix(r.ev);
    if constexpr (std::is_same_v<T, hl::Alloc>) {
      FUZZ_CHECK((static_cast<unsigned>(r.heap) & ~7u) == 0);
      mix(r.address + r.size + r.actualSize + r.stackId + r.typeId);
    } else if constexpr (std::is_same_v<T, hl::Free>) {
      FUZZ_CHECK((static_cast<unsigned>(r.heap) & ~7u) == 0);
      mix(r.address);
    } else if constexpr (std::is_same_v<T, hl::Realloc>) {
      FUZZ_CHECK((static_cast<unsigned>(r.heap) & ~7u) == 0);
      mix(r.oldAddress + r.newAddress + r.size + r.actualSize + r.stackId + r.typeId);
    } else if constexpr (std::is_same_v<T, hl::StackNode>) {
      mix(r.id + r.parent + r.frame + r.managed);
    } else if constexpr (std::is_same_v<T, hl::Collected>) {
      mix(r.gcNumber);
      for (uint64_t a : r.addresses) mix(a);
    } else if constexpr (std::is_same_v<T, hl::LogString>) {
      mix(r.id);
      mix(r.text);
    } else if constexpr (std::is_same_v<T, hl::TypeDef>) {
      mix(r.id + r.instanceSize + r.descriptor);
      mix(r.name);
    } else if constexpr (std::is_same_v<T, hl::MethodDef>) {
      mix(r.id + r.handle);
      mix(r.name);
    } else if constexpr (std::is_same_v<T, hl::GcBegin>) {
      mix(r.gcNumber + r.heapSize + static_cast<uint64_t>(r.generation));
    } else if constexpr (std::is_same_v<T, hl::GcEnd>) {
      mix(r.gcNumber + r.heapSize + r.freeBytes + r.pauseNs);
    } else if constexpr (std::is_same_v<T, hl::RootRange>) {
      FUZZ_CHECK(r.source <= hl::kLastRootSource);
      mix(r.added + r.address + r.size + static_cast<uint64_t>(r.source));
      mix(r.label);
    } else if constexpr (std::is_same_v<T, hl::RootSet>) {
      mix(r.gcNumber);
      for (const hl::RootEntry& e : r.roots) {
        FUZZ_CHECK(e.source <= hl::kLastRootSource);
        mix(e.address + e.size + static_cast<uint64_t>(e.source) + e.thread);
      }
    } else if constexpr (std::is_same_v<T, hl::CustomEvent>) {
      mix(r.nameId + r.stackId);
      mix(r.payload);
    } else if constexpr (std::is_same_v<T, hl::FrameMark>) {
      mix(r.frame);
    } else if constexpr (std::is_same_v<T, hl::ThreadStart>) {
      mix(r.index + r.osTid + r.stackLow + r.stackHigh);
      mix(r.name);
    } else if constexpr (std::is_same_v<T, hl::ThreadStop>) {
      mix(r.index);
    } else if constexpr (std::is_same_v<T, hl::ModuleLoad>) {
      mix(r.base + r.size);
      mix(r.path);
      mix(r.buildId);
      for (const hl::ModuleSegment& s : r.segments) mix(s.vaddr + s.memSize + s.flags);
    } else if constexpr (std::is_same_v<T, hl::ModuleUnload>) {
      mix(r.base);
    } else if constexpr (std::is_same_v<T, hl::JitRange>) {
      mix(r.methodId + r.codeStart + r.codeSize);
    } else if constexpr (std::is_same_v<T, hl::Lost>) {
      mix(r.count + r.lostThread);
      mix(r.reason);
    } else if constexpr (std::is_same_v<T, hl::GcHandle>) {
      FUZZ_CHECK(r.type <= hl::GcHandleType::kOther);
      mix(r.handle + static_cast<uint64_t>(r.type) + r.address + r.created);
    } else if constexpr (std::is_same_v<T, hl::Finalize>) {
      mix(r.address);
    } else {
      static_assert(!sizeof(T), "a Record alternative the fuzzer does not know: add it here");
    }
  }
};

void checkChunkList(const hl::LogReader& reader) {
  const auto& chunks = reader.chunks();
  const hl::LogEnd& end = reader.end();
  FUZZ_CHECK(end.fileBytes == reader.fileSize());
  FUZZ_CHECK(end.intactBytes <= end.fileBytes);
  uint64_t expect = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const hl::ChunkRef& c = chunks[i];
    FUZZ_CHECK(c.number == i);
    FUZZ_CHECK(c.offset >= hl::kPrefixSize);
    FUZZ_CHECK(i == 0 || c.offset == expect);  // back to back
    FUZZ_CHECK(c.header.type != static_cast<uint16_t>(hl::ChunkType::kIndex));
    FUZZ_CHECK(c.header.rawLength <= hl::kMaxChunkRaw && c.header.storedLength <= hl::kMaxChunkRaw);
    FUZZ_CHECK(c.end() <= reader.fileSize());
    FUZZ_CHECK(end.complete || c.end() <= end.intactBytes);
    expect = c.end();
  }
  if (end.complete) {
    FUZZ_CHECK(end.intactBytes == end.fileBytes);
    FUZZ_CHECK(reader.index().has_value());
    FUZZ_CHECK(reader.index()->chunks.size() == chunks.size());
  }
}

// Every record of the log's records chunks, in order.
struct Collector {
  std::vector<hl::Record> records;
  template <class T>
  void operator()(const T& r) {
    records.emplace_back(r);
  }
};

// What writing changes: the writer sorts collected addresses (on purpose).
hl::Record normalized(hl::Record r) {
  if (auto* c = std::get_if<hl::Collected>(&r)) std::sort(c->addresses.begin(), c->addresses.end());
  return r;
}

// Writes the accepted log's header and records again and reads them back.
void roundTrip(const hl::LogReader& reader) {
  Collector original;
  reader.forEachRecord(original);

  hl::MemorySink sink;
  {
    hl::LogWriter w(sink, reader.header());
    for (const hl::Record& r : original.records) w.write(r);
    w.finish();
    FUZZ_CHECK(w.ok());
  }
  std::optional<hl::LogReader> again;
  try {
    again.emplace(hl::LogReader::fromBytes(std::move(sink.bytes), "<rewritten>"));
  } catch (const hl::FormatError& e) {
    std::fprintf(stderr, "reader_fuzz: the rewritten log does not open: %s\n", e.what());
    FUZZ_CHECK(!"a log the writer wrote from accepted records opens");
  }
  FUZZ_CHECK(again->end().complete);
  FUZZ_CHECK(again->header() == reader.header());
  Collector back;
  try {
    hl::summarize(*again);
    again->forEachRecord(back);
  } catch (const hl::FormatError& e) {
    std::fprintf(stderr, "reader_fuzz: the rewritten log does not read: %s\n", e.what());
    FUZZ_CHECK(!"a log the writer wrote from accepted records reads");
  }
  FUZZ_CHECK(back.records.size() == original.records.size());
  for (size_t i = 0; i < back.records.size(); ++i) {
    if (!(normalized(back.records[i]) == normalized(original.records[i]))) {
      std::fprintf(stderr, "reader_fuzz: record %zu (%s) reads back as %s, or with other fields\n",
                   i, hl::recordKindName(original.records[i].index()),
                   hl::recordKindName(back.records[i].index()));
      FUZZ_CHECK(!"records read back as written");
    }
  }
}

// The queries' reading mode (ReadMode::kIntactPrefix) against the strict one: it fails only where
// the strict reader fails the same way (before any chunk), and where it stops at a corrupt chunk,
// the strict reader throws exactly that error; a log the strict reader opens, it opens alike.
void checkIntactPrefix(const std::vector<uint8_t>& bytes, const hl::LogReader* strict,
                       const std::optional<hl::FormatError>& strictError) {
  std::optional<hl::LogReader> prefix;
  try {
    prefix.emplace(hl::LogReader::fromBytes(bytes, "<fuzz>", hl::ReadMode::kIntactPrefix));
  } catch (const hl::FormatError& e) {
    FUZZ_CHECK(strictError && strictError->code() == e.code() &&
               strictError->offset() == e.offset());
    return;
  }
  const auto& corruption = prefix->end().corruption;
  if (strict) {
    FUZZ_CHECK(!corruption);
    FUZZ_CHECK(prefix->chunks().size() == strict->chunks().size());
    return;
  }
  FUZZ_CHECK(strictError);
  FUZZ_CHECK(corruption);
  FUZZ_CHECK(corruption->code() == strictError->code());
  FUZZ_CHECK(corruption->offset() == strictError->offset());
  FUZZ_CHECK(!prefix->end().complete);
  for (const hl::ChunkRef& c : prefix->chunks()) FUZZ_CHECK(c.end() <= prefix->end().intactBytes);
}

void readLog(std::vector<uint8_t> bytes) {
  std::optional<hl::LogReader> opened;
  std::optional<hl::FormatError> openError;
  try {
    opened.emplace(hl::LogReader::fromBytes(bytes, "<fuzz>"));
  } catch (const hl::FormatError& e) {
    FUZZ_CHECK(e.what() != nullptr && e.what()[0] != '\0');
    openError = e;
  }
  checkIntactPrefix(bytes, opened ? &*opened : nullptr, openError);
  if (!opened) return;
  const hl::LogReader& reader = *opened;
  checkChunkList(reader);

  uint64_t sink = reader.header().executable.size() + reader.header().commandLine.size();
  bool accepted = false;
  try {
    hl::LogSummary s = hl::summarize(reader);
    FUZZ_CHECK(s.chunks == reader.chunks().size());
    FUZZ_CHECK(s.recordChunks + s.ramChunks + s.unknownChunks == s.chunks);
    FUZZ_CHECK(s.ramDedupedSegments <= s.ramSegments);
    sink += s.events + s.customEvents.size();
    accepted = true;
  } catch (const hl::FormatError&) {
  }
  if (accepted) roundTrip(reader);

  // Each chunk on its own: summarize() stops at the first bad chunk, this reaches the rest.
  std::vector<uint8_t> buf;
  for (const hl::ChunkRef& c : reader.chunks()) {
    try {
      switch (static_cast<hl::ChunkType>(c.header.type)) {
        case hl::ChunkType::kRecords: {
          Visitor v;
          uint32_t n = reader.decodeChunk(c, buf, v);
          FUZZ_CHECK(n == c.header.recordCount);
          FUZZ_CHECK(v.visited <= n);  // TIME and THREAD count but are not visited
          sink += v.sink;
          break;
        }
        case hl::ChunkType::kRamDump: {
          std::vector<hl::RamSegment> segs = reader.ramSegments(c);
          FUZZ_CHECK(segs.size() == c.header.recordCount);
          for (const hl::RamSegment& seg : segs) {
            FUZZ_CHECK(seg.hasBytes ? seg.bytes.size() == seg.length : seg.bytes.empty());
            for (uint8_t x : seg.bytes) sink += x;
          }
          break;
        }
        default: {
          std::span<const uint8_t> raw = reader.payload(c, buf);
          FUZZ_CHECK(raw.size() == c.header.rawLength);
          for (uint8_t x : raw) sink += x;
          break;
        }
      }
    } catch (const hl::FormatError&) {
    }
  }
  gKeep = sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  std::vector<uint8_t> repaired = bytes;
  bool differs = repairChecksums(repaired);
  readLog(std::move(bytes));
  if (differs) readLog(std::move(repaired));
  return 0;
}
