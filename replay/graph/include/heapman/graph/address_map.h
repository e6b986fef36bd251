// AddressMap: which object contains an address, in O(1), through a table of 4 KiB pages.
//
// Objects are given as ascending, non-overlapping (address, length) ranges, numbered 0..n-1 in
// that order. Every page an object touches has an entry of two cache lines, one per 2 KiB half,
// and a lookup reads the one line of its half: the bitmap of the half's 8-byte granules where
// objects start (256 bits), the number of the first object starting at or after each of its
// four 64-granule words, the page's first object, and the object that covers the page's first
// byte while starting before it ("carry"). Apart, read only for a pointer past an object's start,
// the bitmap of the granules wholly inside an object, and each object's length (in the caller's
// table of objects, which the map keeps a pointer to: no copy). A lookup finds
// the page through a two-level table (1 GiB regions from the lowest object, then 2^18 page slots
// of 4 bytes; a region with no object shares one table of zeros, so no branch), takes the last
// object start at or below the address in its word (a mask, a leading-zero count and a
// popcount), or else the carry, then checks the object's end: a pointer to an object's start
// needs nothing more, a granule wholly inside an object is inside it, and only a pointer into an
// object's last, partial granule, or into no object, reads the object's length. No binary search.
//
// Why one line per half page: on a heap of millions of objects a lookup of a random pointer
// misses the cache, and on this kind of machine the miss costs more the bigger the table it lands
// in (a dependent load: ~36 ns within 4 MiB, ~130 ns past 16 MiB; docs/PERFORMANCE.md). With the
// start bitmap and the object numbers in one line, such a lookup waits for one miss, not two
// (one 160-byte entry per page, and 32-byte units of all fields, both tried, scanned slower).
//
// Memory: 192 bytes per touched page, 1 MiB per 1 GiB region that holds objects, 8 bytes per
// 1 GiB of the span between the lowest and the highest; nothing per object.
// Precondition: object addresses are multiples of 8 (collector objects are granule-aligned).
// Lookups are const and share no state: threads may query one map together.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <memory>
#include <vector>

namespace heapman::graph {

class AddressMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // objects[0..n): ascending `uint64_t address, length` members, not overlapping. The map reads
  // the lengths there later: `objects` must outlive it (or the next build).
  template <class Object>
  void build(const Object* objects, uint32_t n);

  // lookup()'s answer for an address in a page that holds objects, but in none of them.
  static constexpr uint32_t kMiss = UINT32_MAX - 1;

  // The object containing p (interior: anywhere in it; else only its first byte), or kNone.
  uint32_t find(uint64_t p, bool interior) const {
    uint32_t o = lookup(p, interior);
    return o == kMiss ? kNone : o;
  }
  // As find(), but kMiss (not kNone) when p lies in a page that holds part of an object: the
  // scan's "hit in no object" without a second lookup. Precondition: fewer than 2^32 - 2 objects.
  __attribute__((always_inline)) uint32_t lookup(uint64_t p, bool interior) const {
    uint64_t off = p - low_;
    if (off >= span_) return kNone;
    uint32_t k = slot(off);
    if (!k) return kNone;
    const Half& h = pages_[k].half[(p >> 11) & 1];
    uint32_t g = static_cast<uint32_t>((p & 2047) >> 3), w = g >> 6;
    uint64_t bits = h.bits[w] & (~uint64_t{0} >> (63 - (g & 63)));
    uint32_t obj;
    uint64_t a = 0;  // the object's start when known: from its bit, no load of a per-object table
    if (bits) {
      obj = h.base[w] + static_cast<uint32_t>(__builtin_popcountll(bits)) - 1;
      a = (p & ~uint64_t{511}) + 8 * (63 - static_cast<uint32_t>(__builtin_clzll(bits)));
      if (p == a) return obj;
      if (!interior) return kMiss;
    } else {
      if (!interior) return kMiss;
      if (h.base[w] != h.first) {
        obj = h.base[w] - 1;  // the last start before this word, in the page
      } else {
        obj = h.carry;
        if (obj == kNone) return kMiss;
        a = h.carryStart;
      }
    }
    // A granule wholly inside an object is inside this one (objects do not overlap): no read of
    // its length, which would be a cache miss per pointer on a big heap.
    uint32_t pg = static_cast<uint32_t>((p & 4095) >> 3);
    if ((covers_[k].bits[pg >> 6] >> (pg & 63)) & 1) return obj;
    if (!a) a = lastStartBefore(k, p);
    return p - a < length(obj) ? obj : kMiss;
  }
  // Starts loading the line lookup(p) will read first (the scan calls it for words some way
  // ahead). No branch: an address outside the objects loads the empty entry's line.
  __attribute__((always_inline)) void prefetch(uint64_t p) const {
    uint64_t off = p - low_;
    off = off < span_ ? off : 0;
    __builtin_prefetch(&pages_[slot(off)].half[(p >> 11) & 1]);
  }
  // Bytes of the page entries a lookup reads: the scan prefetches once they outgrow the caches.
  size_t tableBytes() const { return pages_.size() * sizeof(Page); }
  // Whether p falls in a page that holds part of an object (for "hits in no object").
  bool inObjectPage(uint64_t p) const { return p - low_ < span_ && slot(p - low_) != 0; }

  size_t memoryBytes() const {
    return pages_.size() * sizeof(Page) + covers_.size() * sizeof(Cover) +
           regionTables_.size() * kRegionPages * 4 + regions_.size() * sizeof(uint32_t*);
  }

 private:
  static constexpr unsigned kRegionShift = 30;
  static constexpr uint32_t kRegionPages = 1u << (kRegionShift - 12);
  struct alignas(64) Half {
    uint64_t bits[4];     // granules where an object starts
    uint32_t base[4];     // per word: the number of the first object starting at or after it
    uint32_t first;       // the page's first object (base[0] of the first half)
    uint32_t carry;       // object covering the page start, started earlier, or kNone
    uint64_t carryStart;  // its address
  };
  struct Page {
    Half half[2];
  };
  struct Cover {
    uint64_t bits[8];  // granules wholly inside an object
  };

  // The page entry of an offset below span_: 0 (the empty entry) if no object touches the page.
  __attribute__((always_inline)) uint32_t slot(uint64_t off) const {
    return regions_[off >> kRegionShift][(off >> 12) & (kRegionPages - 1)];
  }
  uint32_t touch(uint64_t pageAddress);  // the page's entry, made if new
  uint64_t lastStartBefore(uint32_t k, uint64_t p) const;  // in page k, at or below p

  uint64_t low_ = 0, span_ = 0;
  std::vector<Page> pages_;    // [0]: the empty entry (no start, no carry)
  std::vector<Cover> covers_;  // per page entry
  std::vector<uint32_t*> regions_;          // per 1 GiB from low_: its slots, or the zero table
  std::vector<std::unique_ptr<uint32_t[]>> regionTables_;
  const uint8_t* lengths_ = nullptr;  // the first object's length member; then every stride_
  size_t stride_ = 0;
  uint64_t length(uint32_t obj) const {
    uint64_t len;
    std::memcpy(&len, lengths_ + size_t{obj} * stride_, 8);
    return len;
  }
  void reset(uint32_t n, uint64_t low, uint64_t span, size_t pages);
};

template <class Object>
void AddressMap::build(const Object* objects, uint32_t n) {
  static_assert(std::is_same_v<decltype(objects->length), uint64_t>);
  lengths_ = n ? reinterpret_cast<const uint8_t*>(&objects[0].length) : nullptr;
  stride_ = sizeof(Object);
  uint64_t low = n ? objects[0].address & ~uint64_t{4095} : 0;
  uint64_t span = n ? objects[n - 1].address + std::max<uint64_t>(objects[n - 1].length, 1) - low : 0;
  // A dense heap's pages, at most (a sparse one's arrays grow as its pages come).
  reset(n, low, span, static_cast<size_t>(std::min<uint64_t>((span >> 12) + 2, n)));
  uint64_t lastPage = UINT64_MAX;
  uint32_t k = 0;
  auto start = [&](uint32_t i, uint64_t a) {
    uint32_t g = static_cast<uint32_t>((a & 4095) >> 3);
    Half& h = pages_[k].half[g >> 8];
    if (pages_[k].half[0].first == kNone) pages_[k].half[0].first = i;
    h.bits[(g >> 6) & 3] |= uint64_t{1} << (g & 63);
  };
  for (uint32_t i = 0; i < n; ++i) {
    // The objects are read once, in order; the hardware's own prefetch of that stream left the
    // build waiting on nearly every line (measured 2026-11-26): start loading 32 ahead.
    __builtin_prefetch(objects + i + 32);  // past the end too: a prefetch does not fault
    uint64_t a = objects[i].address, len = objects[i].length;
    if (len - 1 < 512 && (a >> 9) == ((a + len - 1) >> 9)) {
      // Most objects: within one 64-granule word of one page, no loop.
      if ((a & ~uint64_t{4095}) != lastPage)
        k = touch(a & ~uint64_t{4095}), lastPage = a & ~uint64_t{4095};
      start(i, a);
      uint64_t whole = len >> 3;  // granules wholly inside (a is granule-aligned)
      uint32_t g = static_cast<uint32_t>((a & 4095) >> 3);
      if (whole)
        covers_[k].bits[g >> 6] |= (whole == 64 ? ~uint64_t{0} : ((uint64_t{1} << whole) - 1))
                                   << (g & 63);
      continue;
    }
    uint64_t end = a + std::max<uint64_t>(len, 1);
    // Granules [g0, g1) (of the address space) lie wholly inside the object.
    uint64_t g0 = (a + 7) >> 3, g1 = (a + len) >> 3;
    for (uint64_t pa = a & ~uint64_t{4095}; pa < end; pa += 4096) {
      if (pa != lastPage) k = touch(pa), lastPage = pa;  // ascending: mostly the page before
      if (pa <= a) {
        start(i, a);
      } else {
        pages_[k].half[0].carry = i;
        pages_[k].half[0].carryStart = a;
      }
      uint64_t lo = std::max(g0, pa >> 3), hi = std::min(g1, (pa + 4096) >> 3);
      for (uint64_t g = lo; g < hi;) {
        uint32_t r = static_cast<uint32_t>(g - (pa >> 3)), bit = r & 63;
        uint64_t take = std::min<uint64_t>(64 - bit, hi - g);
        covers_[k].bits[r >> 6] |= (take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1)) << bit;
        g += take;
      }
    }
  }
  for (size_t p = 1; p < pages_.size(); ++p) {
    Half* h = pages_[p].half;
    uint32_t first = h[0].first == kNone ? 0 : h[0].first, c = first;
    for (int half = 0; half < 2; ++half) {
      h[half].first = first;
      h[half].carry = h[0].carry;
      h[half].carryStart = h[0].carryStart;
      for (int w = 0; w < 4; ++w) {
        h[half].base[w] = c;
        c += static_cast<uint32_t>(__builtin_popcountll(h[half].bits[w]));
      }
    }
  }
}

}  // namespace heapman::graph
