// Per-thread event rings: the only memory the hook path writes.
//
// Each recording thread owns one Ring (an mmap'd region, never the hooked heap). The thread is
// the single producer, the writer thread the single consumer. Records are variable-sized
// (header + frames + inline bytes), 8-byte aligned; a record that does not fit before the end of
// the buffer is preceded by a PAD record filling the rest.
//
// Ordering across threads (see docs/DESIGN.md, "Recorder"): every event but an allocation takes
// a global sequence number (a locked increment); an allocation only reads the next number, and
// goes after every event numbered below it and before that one (seqs = 0: "unnumbered"). While a
// thread is between taking its number and committing the record it keeps `busy` set; the writer
// computes a watermark below which no numbered event can still arrive and merges the rings up to
// it by (number, unnumbered first), so the log comes out in an order that keeps every thread's
// own order and everything that happened before an event before it, without a lock on the hook
// path. The log's sequence numbers are the writer's own, counted as it writes.
//
// Time: every numbered event reads the time stamp counter. An allocation reads it only when
// State::allocTimeEvery allocations of its thread have taken the last reading, or when the
// writer's State::timeEpoch moved since (once a round: a thread that paused reads it again);
// otherwise it takes its thread's last reading, so its time is never late and is early by at
// most what its thread spent on those few allocations, or one writer round. The `rdtsc` is the
// largest single cost of an allocation's record (~7.6 ns here; DESIGN §2.1).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace heapman::rec {

enum class Kind : uint8_t {
  kAlloc = 1,        // a = address, b = requested size, c = usable size
  kFree = 2,         // a = address
  kRealloc = 3,      // a = old address, b = new size, c = usable size, extra = new address
  kEvent = 4,        // a = name length, b = payload length; bytes follow the frames
  kFrame = 5,        // a = frame number
  kThreadStart = 6,  // a = os tid, b = stack low, c = stack high
  kThreadStop = 7,
  kLost = 8,         // a = events dropped before this one
  kNop = 9,          // a sequence number that ended up unused (a realloc that failed)
  kModules = 10,     // the module list after a dlopen/dlclose (modules.h blob in the extra bytes)
  // bdwgc (hooks/bdwgc/). GC events come from the collecting thread's ring.
  kGcBegin = 11,     // a = GC number, b = heap size
  kGcEnd = 12,       // a = GC number, b = heap size, c = free bytes, extra = pause ns
  kMarks = 13,       // a = MarkSnapshot* (gc_events.h; the writer derives the collected set
                     // from it and hands the block back), b = GC number
  kRootRange = 14,   // a = low, b = size, c = 1 added / 0 removed, heap = log::RootSource
  kRootSet = 15,     // a = GC number; extra bytes: RootSetEntry[]
  kRamDump = 16,     // a = RamDump* (the writer compresses and frees it); b = GC number
  // Mono (hooks/mono/). A managed allocation is a kAlloc with extra = its class's handle.
  kTypeDef = 17,     // a = class handle (MonoClass*), b = instance size, c = name length
                     // | log::TypeLayout << 16 | array data offset << 24 | element size << 32;
                     // extra bytes: the name, then u32 reference offsets (log::TypeDef)
  kMethodDef = 18,   // a = method handle (MonoMethod*), b = code start, c = code size (0: not
                     // compiled code, a definition only); extra bytes: the full name
  kGcHandle = 19,    // a = handle, b = object address, c = 1 created / 0 deleted,
                     // heap = log::GcHandleType
  kFinalize = 20,    // a = object address (its finalizer is about to run)
  kPad = 0xFF,       // filler to the end of the buffer
};

// Flags of RawEvent. Each ring keeps its last kStackSlots distinct stacks, producer and writer
// alike (the writer as stack ids): an event whose stack is in slot k carries no frames, only
// kSameStack and k; an event with frames says in which slot both sides keep them. Call sites
// that alternate (two allocation sites in a loop) cost no frame copies and no re-interning.
inline constexpr uint16_t kSameStack = 1;
inline constexpr uint16_t kStackSlotShift = 1;
inline constexpr uint32_t kStackSlots = 8;
inline constexpr uint16_t stackSlotOf(uint16_t flags) {
  return (flags >> kStackSlotShift) & (kStackSlots - 1);
}
// The frames are managed methods (kMethodDef handles), not return addresses.
inline constexpr uint16_t kManagedFrames = 1 << 4;
// A kAlloc/kFree of a GC_debug_* object: its address lies State::gcDebugOffset bytes past the
// object's start, where the collector keeps its mark bit.
inline constexpr uint16_t kDebugObject = 1 << 5;

struct RawEvent {
  uint32_t size;     // bytes of the record, header included, multiple of 8
  Kind kind;
  uint8_t heap;      // heapman::log::HeapKind
  uint16_t flags;
  uint16_t nframes;  // return addresses following the header, leaf first
  uint16_t seqs;     // sequence numbers this event holds: 1, or 0 for kAlloc (`seq` is then the
                     // number it goes before)
  uint32_t extraLen; // bytes after the frames (event name + payload)
  uint64_t seq;
  uint64_t tsc;      // time stamp counter; the writer converts it to ns
  uint64_t a, b, c, extra;
};
static_assert(sizeof(RawEvent) == 64);

inline constexpr uint32_t kMaxFrames = 256;

// What a frame-pointer walk read (captureStack), so that a later walk from the same frame can be
// replayed instead of followed: the walk is a function of its start, of constants (the thread's
// stack bounds, the depth, the recorder's and libc's code ranges, the frameless modules, whose
// count is kept) and of the two words it read at each frame. When every one of those words is
// unchanged, the walk would return the same frames; checking them takes independent loads, where
// the walk is a chain of dependent ones, and a match names the stack-cache slot directly (no
// frames copied or compared). Walks that read more than kMemoFrames frames are not kept.
inline constexpr uint32_t kMemoFrames = 64;  // a multiple of 4 (replaySlot compares 4 at a time)
struct StackMemo {
  uint64_t start = 0;       // the frame the walk started at
  uint32_t count = 0;       // frames read; 0: nothing to replay
  uint32_t frameless = 0;   // walkConstants() at the time (stacks.cpp)
  uint64_t fp[kMemoFrames];  // the frames' addresses
  struct alignas(16) Words {
    uint64_t next, ret;      // the two words at fp (saved frame pointer, return address)
  } words[kMemoFrames];
  // The walk's state after the step whose last read is entry i (captureStack resumes a later
  // walk that reaches the same state from here): stack pointer (0: no step ends at i, or still
  // in the recorder's frames), frame pointer, the return address about to be taken, and the
  // frames taken before it (bit 15: a rule step came before).
  uint64_t stateSp[kMemoFrames], stateFp[kMemoFrames], stateRet[kMemoFrames];
  uint16_t stateN[kMemoFrames];
};
inline constexpr uint32_t kMaxEventBytes = 16384 + 256;  // payload + name

// Growth: a ring is mapped at its largest (State::ringBytes) but used at `capacity`, a power of
// two that starts smaller (kFirstRingBytes; the first thread's kMainRingBytes) and doubles while
// the writer falls more than half a ring behind it, so that threads that record little keep
// little resident (a ring's pages stay resident once written). The producer doubles it only
// where it wraps to offset 0 at a position P that is an odd multiple of C, the old capacity:
// from P on, positions map to offsets by the new mask, so the new records fill [C, 2C) first
// (pages never used) and reach [0, C) again only 2C after the consumer's tail, when the old
// records there have been read. The consumer maps a position below P by the old mask: `layout`
// holds P and log2 of the capacity in one word (P is a multiple of 64 KiB), stored before the
// head that publishes anything at P, and one switch at a time (the producer grows again only
// once the tail has passed the last P). ringOffset() is the consumer's side.
inline constexpr uint64_t kFirstRingBytes = 1u << 20;
inline constexpr uint64_t kMainRingBytes = 4u << 20;  // the first thread's (threads.cpp)

struct alignas(64) Ring {
  // Fixed: written before the ring is published, read by both sides. A line of its own: the
  // producer reads capacity and data on every event, and a line the writer also writes would be
  // taken from it each time (writerSlotStack changes with every new stack). capacity and layout
  // change only as the ring grows (a few times in its life).
  uint64_t capacity = 0;    // bytes of data in use, a power of two (the producer's; see Growth)
  uint8_t* data = nullptr;
  uint64_t maxCapacity = 0;  // bytes of data mapped: what capacity may grow to
  std::atomic<uint64_t> layout{0};  // the last switch position | log2(capacity) (see Growth)
  uint32_t index = 0;       // recorder thread index
  size_t mapLength = 0;
  pthread_t thread{};       // the producing thread, and its stack bounds (0 when unknown)
  uint64_t stackLow = 0, stackHigh = 0;
  Ring* next = nullptr;     // registry list (see Recorder::rings); rarely changed
  // Producer side.
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever committed
  std::atomic<uint32_t> busy{0};      // 1 while an event holds a sequence number, uncommitted
  std::atomic<uint64_t> nextSeq{0};   // one past the last committed event's sequence number
  std::atomic<uint32_t> closed{0};    // the thread exited; no more records
  uint64_t lostPending = 0;           // events dropped, to be reported by a kLost record
  uint64_t cachedTail = 0;            // producer's copy of tail, refreshed only when short of room
  bool wantGrow = false;              // the writer fell half a ring behind: double at a wrap
  // Allocation time stamps (begin()): the thread's last reading of the time stamp counter, the
  // allocations that may still take it, and State::timeEpoch when it was read.
  uint64_t lastTsc = 0;
  uint32_t tscLeft = 0;
  uint32_t tscEpoch = 0;
  uint64_t slotFrames[kStackSlots][kMaxFrames];  // recent distinct stacks (kSameStack test)
  uint32_t slotCount[kStackSlots] = {};
  bool slotUsed[kStackSlots] = {};
  uint8_t lastSlot = 0;               // the slot of the previous event's stack: tested first
  uint8_t nextSlot = 0;               // round robin for new stacks
  uint32_t slotChanges = 0;           // counts every change of a slot's contents or validity
  // The walk that produced each slot's frames (StackMemo; count 0 when none, e.g. managed frames
  // or a DWARF unwind), and a spare for the next walk: slotMemo[k] and memoSpare index memos.
  StackMemo memos[kStackSlots + 1];
  uint8_t slotMemo[kStackSlots] = {0, 1, 2, 3, 4, 5, 6, 7};
  static_assert(kStackSlots == 8 && (kStackSlots - 1) << kStackSlotShift < kManagedFrames);
  uint8_t memoSpare = kStackSlots;
  // Consumer side (the writer thread only).
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever consumed
  uint32_t writerSlotStack[kStackSlots] = {};  // stack id in each slot (see kSameStack)
  uint64_t populated = 0;  // bytes of data the writer has faulted in ahead of the producer
};

// Where the record at position `pos` (a byte count, as head and tail) lies in data: the
// consumer's side of Growth, for a position below the head it read.
inline uint64_t ringOffset(const Ring* r, uint64_t pos) {
  const uint64_t layout = r->layout.load(std::memory_order_acquire);
  const uint64_t capacity = uint64_t{1} << (layout & 63), switchAt = layout & ~uint64_t{63};
  return pos & ((pos < switchAt ? capacity / 2 : capacity) - 1);
}

// Allocates a ring with mmap (not the hooked heap), `maxCapacity` bytes of data mapped and
// `capacity` in use (both powers of two, capacity at least 64 KiB). Returns null on failure.
Ring* ringCreate(uint32_t index, uint64_t capacity, uint64_t maxCapacity);
void ringDestroy(Ring* r);

}  // namespace heapman::rec
