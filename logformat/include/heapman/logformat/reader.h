// LogReader: opens a HeapMan log (file or memory), finds its chunks through the footer or by
// scanning, checks every chunk it reads, and decodes records in order.
//
// A log without a footer (its recorder died) is read up to its last intact chunk; end() says
// where it stops and why. Corruption (bad magic, bad checksum, undecodable payload) throws
// FormatError naming the chunk and file offset. Reading does not change the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "heapman/logformat/bytes.h"
#include "heapman/logformat/error.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/index.h"
#include "heapman/logformat/records.h"

namespace heapman::log {

struct ChunkHeader {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t storedLength = 0;
  uint32_t rawLength = 0;
  uint64_t firstSeq = 0;
  uint32_t recordCount = 0;
  uint32_t headerCheck = 0;
  uint64_t payloadChecksum = 0;
};

struct ChunkRef {
  uint32_t number = 0;   // position in the file, 0-based
  uint64_t offset = 0;   // of the chunk header
  ChunkHeader header;
  bool known() const { return header.type >= 1 && header.type <= 3; }
  uint64_t end() const { return offset + kChunkHeaderSize + header.storedLength; }
};

struct LogEnd {
  bool complete = false;     // footer present and consistent
  uint64_t intactBytes = 0;  // bytes of the file that hold intact data
  uint64_t fileBytes = 0;
  std::string reason;        // for a truncated log: where and why reading stops
};

// Decodes one records chunk's raw payload, calling visitor(const T&) for every record type T of
// `Record` in order. Returns the number of records (tags) decoded. Throws FormatError
// (kBadRecord) on malformed input; `where` and `chunk` name the chunk in that error.
template <class Visitor>
uint32_t decodeRecords(std::span<const uint8_t> raw, uint64_t firstSeq, Visitor&& visitor,
                       uint64_t where = 0, int64_t chunk = FormatError::kNoChunk);

class LogReader {
 public:
  // Opens and maps a file. Throws FormatError (kIo, kEmpty, kNotALog, kNewerVersion, ...).
  static LogReader open(const std::string& path);
  // Reads a log held in memory (tests, fuzzing). `name` appears in messages.
  static LogReader fromBytes(std::vector<uint8_t> bytes, std::string name = "<memory>");

  LogReader(LogReader&&) noexcept;
  LogReader& operator=(LogReader&&) noexcept;
  ~LogReader();

  const std::string& name() const;
  const Header& header() const { return header_; }
  uint16_t major() const { return major_; }
  uint16_t minor() const { return minor_; }
  uint64_t fileSize() const;
  std::span<const uint8_t> bytes() const;

  // Every chunk, in file order (the index chunk excluded). From the footer when it is intact,
  // else by scanning (then a torn tail ends the list; corruption before it throws).
  const std::vector<ChunkRef>& chunks() const { return chunks_; }
  const LogEnd& end() const { return end_; }
  // The footer's index when the log is complete.
  const std::optional<IndexData>& index() const { return index_; }

  // Checks the chunk's checksum and returns its raw payload (decompressed into `buffer` when
  // needed). Throws kBadChecksum / kBadPayload naming the chunk.
  std::span<const uint8_t> payload(const ChunkRef& c, std::vector<uint8_t>& buffer) const;

  // Decodes every records chunk in order.
  template <class Visitor>
  void forEachRecord(Visitor&& v) const {
    std::vector<uint8_t> buf;
    for (const ChunkRef& c : chunks_) {
      if (c.header.type != static_cast<uint16_t>(ChunkType::kRecords)) continue;
      decodeChunk(c, buf, v);
    }
  }
  template <class Visitor>
  uint32_t decodeChunk(const ChunkRef& c, std::vector<uint8_t>& buf, Visitor&& v) const {
    auto raw = payload(c, buf);
    uint32_t n = decodeRecords(raw, c.header.firstSeq, v, c.offset, c.number);
    checkCount(c, n);
    return n;
  }
  // Decodes the segments of a RAM dump chunk.
  std::vector<RamSegment> ramSegments(const ChunkRef& c) const;

 private:
  struct Storage;
  explicit LogReader(std::unique_ptr<Storage> s);
  void parsePrefix();
  bool tryFooter();
  void scan();
  ChunkHeader readChunkHeader(uint64_t offset, uint32_t number) const;
  void checkCount(const ChunkRef& c, uint32_t decoded) const;

  std::unique_ptr<Storage> storage_;
  uint16_t major_ = 0, minor_ = 0;
  uint64_t firstChunkOffset_ = 0;
  Header header_;
  std::vector<ChunkRef> chunks_;
  LogEnd end_;
  std::optional<IndexData> index_;
};

namespace detail {
// Decodes an EXTENDED body; nullopt for a kind this reader does not know.
std::optional<Record> decodeExtended(uint32_t kind, const EventCommon& ev,
                                     std::span<const uint8_t> body, uint64_t where, int64_t chunk);
[[noreturn]] void throwBadRecord(uint64_t where, int64_t chunk, const std::string& what);
}  // namespace detail

template <class Visitor>
uint32_t decodeRecords(std::span<const uint8_t> raw, uint64_t firstSeq, Visitor&& visitor,
                       uint64_t where, int64_t chunk) {
  uint32_t count = 0;
  try {
    ByteCursor hdr(raw.data(), raw.data() + raw.size());
    uint64_t lt = hdr.varint(), la = hdr.varint(), ls = hdr.varint();
    if (lt > hdr.remaining() || la > hdr.remaining() - lt || ls > hdr.remaining() - lt - la)
      detail::throwBadRecord(where, chunk, "stream lengths exceed the payload");
    const uint8_t* p = hdr.position();
    ByteCursor T(p, p + lt), A(p + lt, p + lt + la), S(p + lt + la, p + lt + la + ls),
        M(p + lt + la + ls, raw.data() + raw.size());

    EventCommon ev;
    uint64_t nextSeq = firstSeq;
    uint64_t lastAddress = 0, lastFrame = 0;
    uint32_t lastNodeId = 0;
    uint64_t allocRing[kRingSize] = {}, freeRing[kRingSize] = {};
    uint32_t allocHead = 0, freeHead = 0;
    constexpr uint32_t kMask = kRingSize - 1;
    auto takeSeq = [&](bool explicitSeq) {
      if (explicitSeq) nextSeq += static_cast<uint64_t>(M.zz());
      ev.seq = nextSeq++;
    };
    auto address = [&](bool ring, const uint64_t* r, uint32_t head) {
      if (ring) {
        uint8_t d = A.byte();
        if (d >= kRingSize) detail::throwBadRecord(where, chunk, "ring distance out of range");
        lastAddress = r[(head - 1 - d) & kMask];
      } else {
        lastAddress += static_cast<uint64_t>(A.zz());
      }
      return lastAddress;
    };

    while (!T.atEnd()) {
      uint8_t t = T.byte();
      ++count;
      if (t < tag::kFree) {
        Alloc r;
        takeSeq(t & tag::kAllocExplicitSeq);
        r.ev = ev;
        r.heap = static_cast<HeapKind>(t & 7);
        r.address = address(t & tag::kAllocRing, freeRing, freeHead);
        allocRing[allocHead++ & kMask] = r.address;
        r.size = S.varint();
        r.actualSize = r.size + S.varint();
        r.stackId = static_cast<uint32_t>(S.varint());
        if (t & tag::kAllocHasType) r.typeId = static_cast<uint32_t>(S.varint());
        visitor(r);
      } else if (t < tag::kRealloc) {
        Free r;
        takeSeq(t & tag::kFreeExplicitSeq);
        r.ev = ev;
        r.heap = static_cast<HeapKind>(t & 7);
        r.address = address(t & tag::kFreeRing, allocRing, allocHead);
        freeRing[freeHead++ & kMask] = r.address;
        visitor(r);
      } else if (t < tag::kTime) {
        Realloc r;
        uint64_t flags = M.varint();
        takeSeq(flags & 1);
        r.ev = ev;
        r.heap = static_cast<HeapKind>(t & 7);
        r.oldAddress = lastAddress + static_cast<uint64_t>(A.zz());
        r.newAddress = r.oldAddress + static_cast<uint64_t>(A.zz());
        lastAddress = r.newAddress;
        freeRing[freeHead++ & kMask] = r.oldAddress;
        allocRing[allocHead++ & kMask] = r.newAddress;
        r.size = S.varint();
        r.actualSize = r.size + S.varint();
        r.stackId = static_cast<uint32_t>(S.varint());
        if (flags & 2) r.typeId = static_cast<uint32_t>(S.varint());
        visitor(r);
      } else {
        switch (t) {
          case tag::kTime:
            ev.timeNs += static_cast<uint64_t>(M.zz());
            break;
          case tag::kThread:
            ev.thread = static_cast<uint32_t>(M.varint());
            break;
          case tag::kStackNative:
          case tag::kStackManaged: {
            StackNode r;
            r.id = static_cast<uint32_t>(lastNodeId + static_cast<uint64_t>(M.zz()));
            r.parent = static_cast<uint32_t>(r.id - static_cast<uint64_t>(M.zz()));
            r.frame = lastFrame + static_cast<uint64_t>(M.zz());
            r.managed = t == tag::kStackManaged;
            lastNodeId = r.id;
            lastFrame = r.frame;
            visitor(r);
            break;
          }
          case tag::kCollected: {
            Collected r;
            r.gcNumber = static_cast<uint32_t>(M.varint());
            uint64_t n = M.varint();
            if (n > M.remaining()) detail::throwBadRecord(where, chunk, "collected count too large");
            r.addresses.resize(n);
            uint64_t a = 0;
            for (uint64_t i = 0; i < n; ++i) r.addresses[i] = a += M.varint();
            visitor(r);
            break;
          }
          case tag::kExtended: {
            uint32_t kind = static_cast<uint32_t>(M.varint());
            uint64_t flags = M.varint();
            bool isEvent = flags & 2;  // lets a reader keep sequence numbers for unknown kinds
            bool known = kind >= 1 && kind <= kExtKindMax;
            if (known && isEvent != extKindIsEvent(static_cast<ExtKind>(kind)))
              detail::throwBadRecord(where, chunk, "extended record's event flag contradicts its kind");
            if (isEvent) takeSeq(flags & 1);
            uint64_t len = M.varint();
            const uint8_t* body = M.take(len);
            EventCommon common = isEvent ? ev : EventCommon{};
            auto rec = detail::decodeExtended(kind, common, {body, static_cast<size_t>(len)},
                                              where, chunk);
            if (rec) std::visit(visitor, *rec);
            break;
          }
          default:
            detail::throwBadRecord(where, chunk,
                                   "unknown record tag " + std::to_string(t) +
                                       " (written by a newer HeapMan? upgrade heapman)");
        }
      }
    }
    if (!A.atEnd() || !S.atEnd() || !M.atEnd())
      detail::throwBadRecord(where, chunk, "streams hold bytes after the last record");
  } catch (const CursorOverrun& e) {
    detail::throwBadRecord(where, chunk, e.what());
  }
  return count;
}

}  // namespace heapman::log
