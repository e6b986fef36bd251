// Reading a RAM DUMP CHUNK's raw payload (format.h "RAM DUMP CHUNK"): its segments, in order.
// Shared by the heap graph's DumpStore (a GC's dump) and the replay's index (the first stored
// copy of each content hash), so that both read the layout one way.
#pragma once

#include <cstdint>
#include <span>

#include "heapman/logformat/bytes.h"
#include "heapman/logformat/format.h"

namespace heapman::log {

struct RamSegmentHeader {
  SegmentKind kind = SegmentKind::kObject;
  bool stored = false;  // its bytes follow; else they are an earlier segment's with this hash
  uint32_t gc = 0;
  uint64_t address = 0, length = 0, hash = 0;
  uint32_t bytesAt = 0;  // offset of the bytes in the raw payload (when stored)
};

// Calls f(header) for each segment of a dump chunk's raw payload. Throws CursorOverrun when the
// payload ends inside a segment (callers name the chunk in a FormatError).
template <class F>
void forEachRamSegment(std::span<const uint8_t> raw, F&& f) {
  ByteCursor in(raw.data(), raw.data() + raw.size());
  while (!in.atEnd()) {
    RamSegmentHeader h;
    h.kind = static_cast<SegmentKind>(in.byte());
    h.stored = in.byte() & 1;
    h.gc = static_cast<uint32_t>(in.varint());
    h.address = in.varint();
    h.length = in.varint();
    h.hash = in.u64();
    h.bytesAt = static_cast<uint32_t>(in.position() - raw.data());
    if (h.stored) in.take(h.length);
    f(h);
  }
}

}  // namespace heapman::log
