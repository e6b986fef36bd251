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
  // Whether `address` may be in the class's LIFO or in the ring of recent frees: false means in
  // neither, so the encoder need not look for its position (most allocations that miss the LIFO
  // top are in neither, and the two ordered scans, up to 127 + 64 steps, were a third of the
  // encoder's time on a malloc churn). Every slot is compared, in the LIFO or not: the encoder
  // clears the slot an allocation from the LIFO leaves (LogWriter::writeAlloc; a full LIFO's push
  // overwrites its oldest), so a slot outside it is 0, as is a ring slot not written in this
  // chunk. Elsewhere (the decoder) a stale slot only makes this answer true needlessly.
  static bool lifoMayHold(const SizeClass& s, uint64_t address) {
    return anyEqual(s.lifo, kLifoDepth, address);
  }
  bool ringMayHold(uint64_t address) const { return anyEqual(freeRing_, kRingSize, address); }
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
  // Whether any of v[0..n) equals x; n a multiple of 8. Two 64-bit lanes a compare (SSE2 has no
  // 64-bit compare: both 32-bit halves equal), 8 slots an iteration and no early exit.
  static bool anyEqual(const uint64_t* v, size_t n, uint64_t x) {
#if defined(__SSE2__)
    const __m128i key = _mm_set1_epi64x(static_cast<long long>(x));
    __m128i any = _mm_setzero_si128();
    auto at = [&](size_t i) {
      return _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)), key);
    };
    for (size_t i = 0; i < n; i += 8) {
      __m128i c0 = at(i), c1 = at(i + 2), c2 = at(i + 4), c3 = at(i + 6);
      c0 = _mm_and_si128(c0, _mm_shuffle_epi32(c0, _MM_SHUFFLE(2, 3, 0, 1)));
      c1 = _mm_and_si128(c1, _mm_shuffle_epi32(c1, _MM_SHUFFLE(2, 3, 0, 1)));
      c2 = _mm_and_si128(c2, _mm_shuffle_epi32(c2, _MM_SHUFFLE(2, 3, 0, 1)));
      c3 = _mm_and_si128(c3, _mm_shuffle_epi32(c3, _MM_SHUFFLE(2, 3, 0, 1)));
      any = _mm_or_si128(any, _mm_or_si128(_mm_or_si128(c0, c1), _mm_or_si128(c2, c3)));
    }
    return _mm_movemask_epi8(any) != 0;
#else
    uint64_t any = 0;
    for (size_t i = 0; i < n; ++i) any |= v[i] == x;
    return any != 0;
#endif
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
