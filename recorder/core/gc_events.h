// What the collector layers (hooks/bdwgc/, hooks/mono/) hand to the writer thread besides
// plain ring events: root-set entries, mark-bit snapshots and RAM dumps. All are built under the
// collector's lock with no allocation from any heap (ring bytes, or one mmap'd block); the writer
// turns them into log records.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heapman::rec {

// One root range of a kRootSet event's extra bytes.
struct RootSetEntry {
  uint64_t address;
  uint64_t size;
  uint32_t thread;  // recorder thread index of a stack, else 0
  uint8_t source;   // log::RootSource
  uint8_t pad[3];
};
static_assert(sizeof(RootSetEntry) == 24);

// A RAM dump: one mmap'd block holding this header, the objects (address and size, in the order
// the collector listed them), the roots and stacks (ranges), then the objects' bytes back to back
// in list order (an object's offset is the sum of the sizes before it: no per-object offset to
// write under the lock) and the ranges' bytes. The hooks fill it under the collector's lock: the
// object list while the collector lists its marked objects, the bytes with one memcpy per run of
// adjacent objects. The writer thread hashes, deduplicates and compresses the segments off that
// lock, then hands the block back through State::spareDump for a later dump.
struct RamDump {
  struct Object {
    uint64_t address;
    uint64_t size;
  };
  struct Range {
    uint64_t address;
    uint64_t length;
    uint64_t offset;  // of the bytes, from the start of the block
    uint8_t kind;     // log::SegmentKind
    uint8_t pad[7];
  };
  size_t mapLength;
  uint32_t gcNumber;
  uint32_t objectCount;
  uint32_t rangeCount;
  uint64_t objectBytesOffset;  // from the start of the block
  uint64_t copyNs;     // time spent copying under the lock
  uint64_t copyBytes;  // bytes copied
  Object* objects() { return reinterpret_cast<Object*>(this + 1); }
  const Object* objects() const { return reinterpret_cast<const Object*>(this + 1); }
  Range* ranges() { return reinterpret_cast<Range*>(objects() + objectCount); }
  const Range* ranges() const { return reinterpret_cast<const Range*>(objects() + objectCount); }
  const uint8_t* base() const { return reinterpret_cast<const uint8_t*>(this); }
};

// The collector's mark bits at the end of a collection (allocation lock held, marking done,
// finalizable objects resurrected): for every 4 KiB page where a marked object starts, a bit per
// 8 bytes of the page, set where a marked object starts. The hooks fill it under the lock (one
// mmap'd block, grown with mremap); the writer thread tests its own set of tracked live objects
// against it off the lock (collected = tracked and not marked) and hands the block back through
// State::spareMarks. Pages appear in any order, each at most once.
struct MarkSnapshot {
  static constexpr uint64_t kPageBytes = 4096;
  struct Page {
    uint64_t page;     // address, a multiple of kPageBytes
    uint64_t bits[8];  // bit i: a marked object starts at page + 8 * i
  };
  size_t mapLength;
  uint32_t gcNumber;
  uint32_t count;      // pages
  Page* pages() { return reinterpret_cast<Page*>(this + 1); }
  const Page* pages() const { return reinterpret_cast<const Page*>(this + 1); }
  static size_t bytesFor(size_t pages) { return sizeof(MarkSnapshot) + pages * sizeof(Page); }
};

}  // namespace heapman::rec
