// The per-chunk model that writer and reader both keep while coding a records chunk: what lets
// a free cost one byte and most allocation addresses cost none (format.h, "Prediction model").
// Encoder and decoder drive it with the same calls in the same order, so its state is identical
// on both sides; it is reset at every chunk start so each chunk decodes on its own.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "heapman/logformat/format.h"

namespace heapman::log {

// Allocation attributes, interned per chunk: an allocation names one by its dictionary index.
struct AllocInfo {
  HeapKind heap = HeapKind::kNative;
  uint64_t size = 0;
  uint64_t actualSize = 0;
  uint32_t stackId = 0;
  uint32_t typeId = 0;
  bool operator==(const AllocInfo&) const = default;
};

class ChunkModel {
 public:
  static constexpr unsigned kSlots = 256;    // size-class table entries (direct mapped)
  static constexpr unsigned kLifoDepth = 128;  // freed addresses remembered per size class

  struct SizeClass {
    uint64_t key = 0;       // actualSize this slot currently models
    uint64_t last = 0;      // last address allocated in the class
    uint64_t stride = 0;    // last - the address allocated before it
    uint32_t lastInfo = UINT32_MAX;  // encoder only: the dictionary entry last allocated here
                                     // (a hint: reset() zeroes it)
    uint64_t lifo[kLifoDepth] = {};
    uint32_t top = 0;       // lifo[(top - 1) % depth] is the most recently freed address
    uint32_t depth = 0;     // valid entries, <= kLifoDepth
  };

  ChunkModel() { reset(); }

  void reset() {
    addrs_.clear();
    infoOf_.clear();
    infos.clear();
    std::memset(static_cast<void*>(slots_), 0, sizeof slots_);
    std::memset(freeRing_, 0, sizeof freeRing_);
    freeHead_ = 0;
    lastAddress = 0;
    lastFreeOrdinal = -1;
    bumpEnd = 0;
    bumpGap = 0;
  }

  std::vector<AllocInfo> infos;  // the chunk's dictionary, in order of first use
  uint64_t lastAddress = 0;
  int64_t lastFreeOrdinal = -1;
  uint64_t bumpEnd = 0;  // end (address + actual size) of the previous allocation
  uint64_t bumpGap = 0;  // address of the previous allocation - the bumpEnd before it

  uint64_t allocCount() const { return addrs_.size(); }
  uint64_t addressOf(uint64_t ordinal) const { return addrs_[ordinal]; }
  uint32_t infoOf(uint64_t ordinal) const { return infoOf_[ordinal]; }

  [[gnu::always_inline]] SizeClass& sizeClass(uint64_t actualSize) {
    SizeClass& s = slots_[(actualSize * 0x9E3779B97F4A7C15ull) >> 56];
    if (s.key != actualSize) {
      s = SizeClass{};
      s.key = actualSize;
    }
    return s;
  }
  static bool lifoHas(const SizeClass& s) { return s.depth > 0; }
  static uint64_t lifoTop(const SizeClass& s) { return lifoAt(s, 0); }
  // The j-th most recently freed address of the class (j < depth).
  static uint64_t lifoAt(const SizeClass& s, uint32_t j) {
    return s.lifo[(s.top - 1 - j) % kLifoDepth];
  }
  // The smallest j in [1, depth) with lifoAt(s, j) == address, or -1; the same for the ring of
  // recent frees: the smallest k < ringFilled() with ringAt(k) == address. The encoder's
  // searches (most allocations that miss the LIFO top are in neither, and ordered scans, up to
  // 127 + 64 steps, were a third of its time on a malloc churn): every slot is compared, eight
  // at a time, in or out of the valid range, and only the blocks of eight that hold the address
  // are looked at one slot at a time, the slots outside the range skipped there. A stale slot
  // costs that look only: the encoder clears the slot an allocation from the LIFO leaves
  // (LogWriter::writeAlloc; a full LIFO's push overwrites its oldest), and a ring slot not
  // written in this chunk is 0.
  static int lifoFind(const SizeClass& s, uint64_t address) {
    return nearestEqual(s.lifo, kLifoDepth, s.top, 1, s.depth, address);
  }
  int ringFind(uint64_t address) const {
    return nearestEqual(freeRing_, kRingSize, freeHead_, 0, ringFilled(), address);
  }
  uint64_t sequentialGuess(const SizeClass& s) const { return s.last + s.stride; }
  uint64_t bumpGuess() const { return bumpEnd + bumpGap; }
  // Entries of the ring written in this chunk (the rest are zero: no address matches them).
  uint32_t ringFilled() const { return freeHead_ < kRingSize ? freeHead_ : kRingSize; }
  uint64_t ringAt(uint32_t distance) const {
    return freeRing_[(freeHead_ - 1 - distance) % kRingSize];
  }

  // An allocation of dictionary entry `info` at `address`; `lifoIndex` >= 0 when the address
  // was the class's lifoAt(lifoIndex): it leaves the LIFO, the entries above it move down.
  void onAlloc(uint64_t address, uint32_t info, int lifoIndex) {
    SizeClass& s = sizeClass(infos[info].actualSize);
    if (lifoIndex >= 0) {
      for (uint32_t j = static_cast<uint32_t>(lifoIndex); j > 0; --j)
        s.lifo[(s.top - 1 - j) % kLifoDepth] = s.lifo[(s.top - j) % kLifoDepth];
      --s.top;
      --s.depth;
    }
    s.stride = address - s.last;
    s.last = address;
    if (lifoIndex < 0) {  // carved, not reused: the next carve likely follows it
      bumpGap = address - bumpEnd;
      bumpEnd = address + infos[info].actualSize;
    }
    addrs_.push_back(address);
    infoOf_.push_back(info);
    lastAddress = address;
  }
  // onAlloc() for a caller (the decoder, the encoder) that has the size class at hand: the same
  // model change, given the size class the caller already
  // looked up (sizeClass(infos[info].actualSize), not reset since) and with the LIFO entries
  // above `lifoIndex` moved by memmove instead of one modulo step at a time.
  [[gnu::always_inline]] void onAllocIn(SizeClass& s, uint64_t address, uint32_t info,
                                         int lifoIndex) {
    if (lifoIndex > 0) {
      // Entries at ring positions p+1 .. top-1 (mod depth) move down one; p = top-1-lifoIndex.
      uint32_t p = (s.top - 1 - static_cast<uint32_t>(lifoIndex)) % kLifoDepth;
      uint32_t n = static_cast<uint32_t>(lifoIndex);
      uint32_t tail = kLifoDepth - 1 - p;  // entries after p before the ring wraps
      if (n <= tail) {
        std::memmove(&s.lifo[p], &s.lifo[p + 1], n * sizeof(uint64_t));
      } else {
        std::memmove(&s.lifo[p], &s.lifo[p + 1], tail * sizeof(uint64_t));
        s.lifo[kLifoDepth - 1] = s.lifo[0];
        std::memmove(&s.lifo[0], &s.lifo[1], (n - tail - 1) * sizeof(uint64_t));
      }
    }
    if (lifoIndex >= 0) {
      --s.top;
      --s.depth;
    }
    s.stride = address - s.last;
    s.last = address;
    if (lifoIndex < 0) {
      bumpGap = address - bumpEnd;
      bumpEnd = address + s.key;
    }
    addrs_.push_back(address);
    infoOf_.push_back(info);
    lastAddress = address;
  }
  // A free of this chunk's allocation number `ordinal`.
  [[gnu::always_inline]] void onFreeOrdinal(uint64_t ordinal) {
    uint64_t address = addrs_[ordinal];
    SizeClass& s = sizeClass(infos[infoOf_[ordinal]].actualSize);
    s.lifo[s.top % kLifoDepth] = address;
    ++s.top;
    if (s.depth < kLifoDepth) ++s.depth;
    pushRing(address);
    lastFreeOrdinal = static_cast<int64_t>(ordinal);
    lastAddress = address;
  }
  // A free of an address this chunk did not allocate (or with another heap kind).
  void onFreeAddress(uint64_t address) {
    pushRing(address);
    lastAddress = address;
  }
  // A realloc: the old block is gone, the new one is this chunk's next allocation.
  void onRealloc(uint64_t oldAddress, uint64_t newAddress, uint32_t info) {
    pushRing(oldAddress);
    onAlloc(newAddress, info, -1);
  }

 private:
  // Bit b set when one of v[8b .. 8b + 8) equals x; n a multiple of 8, at most 256. Two 64-bit
  // lanes a compare (SSE2 has no 64-bit compare: both 32-bit halves equal), no early exit.
  static uint32_t blocksEqual(const uint64_t* v, uint32_t n, uint64_t x) {
    uint32_t blocks = 0;
#if defined(__SSE2__)
    const __m128i key = _mm_set1_epi64x(static_cast<long long>(x));
    auto at = [&](uint32_t i) {
      return _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)), key);
    };
    for (uint32_t i = 0; i < n; i += 8) {
      __m128i c0 = at(i), c1 = at(i + 2), c2 = at(i + 4), c3 = at(i + 6);
      c0 = _mm_and_si128(c0, _mm_shuffle_epi32(c0, _MM_SHUFFLE(2, 3, 0, 1)));
      c1 = _mm_and_si128(c1, _mm_shuffle_epi32(c1, _MM_SHUFFLE(2, 3, 0, 1)));
      c2 = _mm_and_si128(c2, _mm_shuffle_epi32(c2, _MM_SHUFFLE(2, 3, 0, 1)));
      c3 = _mm_and_si128(c3, _mm_shuffle_epi32(c3, _MM_SHUFFLE(2, 3, 0, 1)));
      const __m128i any = _mm_or_si128(_mm_or_si128(c0, c1), _mm_or_si128(c2, c3));
      blocks |= static_cast<uint32_t>(_mm_movemask_epi8(any) != 0) << (i / 8);
    }
#else
    for (uint32_t i = 0; i < n; ++i) blocks |= static_cast<uint32_t>(v[i] == x) << (i / 8);
#endif
    return blocks;
  }
  // The smallest distance d in [from, valid) with v[(head - 1 - d) % n] == x, or -1: v is a ring
  // of n slots (a power of two) whose next write goes to head % n.
  static int nearestEqual(const uint64_t* v, uint32_t n, uint32_t head, uint32_t from,
                          uint32_t valid, uint64_t x) {
    if (from >= valid) return -1;
    uint32_t nearest = valid;
    for (uint32_t blocks = blocksEqual(v, n, x); blocks; blocks &= blocks - 1) {
      const uint32_t first = 8 * static_cast<uint32_t>(__builtin_ctz(blocks));
      for (uint32_t p = first; p < first + 8; ++p) {
        const uint32_t d = (head - 1 - p) % n;
        if (v[p] == x && d >= from && d < nearest) nearest = d;
      }
    }
    return nearest < valid ? static_cast<int>(nearest) : -1;
  }
  void pushRing(uint64_t address) {
    freeRing_[freeHead_ % kRingSize] = address;
    ++freeHead_;
  }

  std::vector<uint64_t> addrs_;    // address of allocation number i of this chunk
  std::vector<uint32_t> infoOf_;   // its dictionary entry
  SizeClass slots_[kSlots];
  uint64_t freeRing_[kRingSize];   // recently freed addresses
  uint32_t freeHead_ = 0;
};

}  // namespace heapman::log
