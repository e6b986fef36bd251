// AddressMap: which object contains an address, in O(1), through a table of 4 KiB pages.
//
// Objects are given as ascending, non-overlapping (address, length) ranges, numbered 0..n-1 in
// that order. Every page an object touches has an entry in three arrays, by how often a lookup
// reads them: the bitmap of the 8-byte granules where objects start (512 bits: one cache line),
// the number of the last object starting before each 64-granule word (8 x 4 bytes), and, read
// only for a pointer past an object's start or into a page's first granules, the bitmap of the
// granules wholly inside an object and the object that covers the page's first byte while
// starting before it ("carry"). A lookup finds the page through a two-level table (1 GiB
// regions, then 2^18 page slots of 4 bytes), the last object start at or below the address in
// the bitmap (one word, a leading-zero count, and a popcount), or else the carry, then checks
// the object's end: a pointer to an object's start needs nothing more, a granule wholly inside
// an object is inside it, and only a pointer into an object's last, partial granule, or into no
// object, reads the object's length. No binary search.
//
// Why three arrays: on a heap of millions of objects a lookup of a random pointer misses the
// cache, and on this kind of machine the miss costs more the bigger the table it lands in (a
// dependent load: ~36 ns within 4 MiB, ~130 ns past 16 MiB; docs/PERFORMANCE.md). The start
// bitmaps are the only large table most lookups read: 64 bytes a page, where one 160-byte entry
// per page (and 32-byte units of all fields, tried) scanned slower.
//
// Memory: 4 bytes per object (its length), 176 per touched page, 1 MiB per touched 1 GiB region.
// Precondition: object addresses are multiples of 8 (collector objects are granule-aligned).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace heapman::graph {

class AddressMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // `address(i)` and `length(i)` of object i, ascending.
  template <class Address, class Length>
  void build(uint32_t n, Address&& address, Length&& length);

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
    if (p - low_ >= span_) return kNone;
    uint32_t k = pageIndex(p);
    if (k == kNone) return kNone;
    const uint64_t* starts = starts_[k].bits;
    uint32_t g = static_cast<uint32_t>((p & 4095) >> 3);
    uint32_t w = g >> 6;
    uint64_t bits = starts[w] & (~uint64_t{0} >> (63 - (g & 63)));
    uint32_t obj;
    uint64_t a;  // the object's start, from its bit: no load of a per-object table
    if (bits) {
      obj = base_[8 * k + w] + static_cast<uint32_t>(__builtin_popcountll(bits)) - 1;
      a = (p & ~uint64_t{4095}) + 8 * (64 * w + 63 - static_cast<uint32_t>(__builtin_clzll(bits)));
      if (p == a) return obj;
    } else {
      while (w > 0 && !starts[w - 1]) --w;
      if (w == 0) {
        obj = cold_[k].carry;
        if (obj == kNone) return kMiss;
        a = cold_[k].carryStart;
      } else {
        obj = base_[8 * k + w] - 1;  // the last start in an earlier word
        a = (p & ~uint64_t{4095}) +
            8 * (64 * (w - 1) + 63 - static_cast<uint32_t>(__builtin_clzll(starts[w - 1])));
      }
    }
    if (!interior) return p == a ? obj : kMiss;
    // A granule wholly inside an object is inside this one (objects do not overlap): no read of
    // its length, which would be a cache miss per pointer on a big heap.
    if ((cold_[k].cover[g >> 6] >> (g & 63)) & 1) return obj;
    return p - a < lengths_[obj] ? obj : kMiss;
  }
  // Starts loading what lookup(p) will read first (the scan calls it for a word some way ahead).
  __attribute__((always_inline)) void prefetch(uint64_t p) const {
    if (p - low_ >= span_) return;
    uint32_t k = pageIndex(p);
    if (k != kNone) prefetchPage(k);
  }
  // As prefetch(), without a branch (for a word that may be anything), when the objects lie in
  // one 1 GiB region (oneRegion()): an address outside them loads the first page's bitmap.
  bool oneRegion() const { return regions_.size() == 1; }
  size_t bitmapBytes() const { return starts_.size() * sizeof(Starts); }
  __attribute__((always_inline)) void prefetchInOneRegion(uint64_t p) const {
    uint64_t off = p - low_;
    off = off < span_ ? off : 0;
    uint32_t s = regions_[0].slots[((low_ + off) >> 12) & (kRegionPages - 1)];
    prefetchPage(s ? s - 1 : 0);
  }
  // Whether p falls in a page that holds part of an object (for "hits in no object").
  bool inObjectPage(uint64_t p) const { return p - low_ < span_ && pageIndex(p) != kNone; }

  size_t memoryBytes() const {
    return starts_.size() * sizeof(Starts) + base_.size() * 4 + cold_.size() * sizeof(Cold) +
           regions_.size() * kRegionPages * 4 +
           lengthCount_ * 4;
  }

 private:
  static constexpr unsigned kRegionShift = 30;
  static constexpr uint32_t kRegionPages = 1u << (kRegionShift - 12);
  struct alignas(64) Starts {
    uint64_t bits[8];  // granules where an object starts
  };
  struct Cold {
    uint64_t cover[8];    // granules wholly inside an object
    uint32_t carry;       // object covering the page start, started earlier, or kNone
    uint64_t carryStart;  // its address
  };
  struct Region {
    uint64_t base;  // address >> kRegionShift
    std::unique_ptr<uint32_t[]> slots;  // page index + 1, 0: no page
  };

  // What a lookup in page k reads first.
  __attribute__((always_inline)) void prefetchPage(uint32_t k) const {
    __builtin_prefetch(&starts_[k]);
    __builtin_prefetch(&base_[8 * k]);
  }
  // The page's index in the arrays, or kNone.
  __attribute__((always_inline)) uint32_t pageIndex(uint64_t p) const {
    uint64_t r = p >> kRegionShift;
    const Region* reg = nullptr;
    if (r == lastRegion_) {
      reg = &regions_[lastRegionIndex_];
    } else {
      for (size_t i = 0; i < regions_.size(); ++i)
        if (regions_[i].base == r) {
          reg = &regions_[i];
          lastRegion_ = r;
          lastRegionIndex_ = i;
          break;
        }
      if (!reg) return kNone;
    }
    return reg->slots[(p >> 12) & (kRegionPages - 1)] - 1;  // slot 0: no page
  }
  uint32_t touch(uint64_t pageAddress);  // the page's index, its entry made if new

  uint64_t low_ = 0, span_ = 0;
  std::vector<Starts> starts_;
  std::vector<uint32_t> base_;  // per page, per 64-granule word: objects starting before it + first
  std::vector<Cold> cold_;
  std::vector<Region> regions_;
  mutable uint64_t lastRegion_ = UINT64_MAX;
  mutable size_t lastRegionIndex_ = 0;
  std::unique_ptr<uint32_t[]> lengths_;  // clamped to 4 GiB - 1 (every one written: no zero fill)
  size_t lengthCount_ = 0;
};

template <class Address, class Length>
void AddressMap::build(uint32_t n, Address&& address, Length&& length) {
  starts_.clear();
  base_.clear();
  cold_.clear();
  regions_.clear();
  lastRegion_ = UINT64_MAX;
  lengths_.reset(new uint32_t[n]);
  lengthCount_ = n;
  if (n == 0) {
    low_ = 1, span_ = 0;
    return;
  }
  low_ = address(0);
  span_ = address(n - 1) + length(n - 1) - low_;
  // A dense heap's pages, at most (a sparse one's arrays grow as its pages come).
  size_t pages = static_cast<size_t>(std::min<uint64_t>((span_ >> 12) + 2, n));
  starts_.reserve(pages);
  base_.reserve(8 * pages);
  cold_.reserve(pages);
  uint64_t lastPage = UINT64_MAX;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t a = address(i), len = length(i);
    lengths_[i] = static_cast<uint32_t>(std::min<uint64_t>(len, UINT32_MAX));
    if (len - 1 < 512 && (a >> 9) == ((a + len - 1) >> 9)) {
      // Most objects: within one 64-granule word of one page, no loop.
      if ((a & ~uint64_t{4095}) != lastPage)
        k = touch(a & ~uint64_t{4095}), lastPage = a & ~uint64_t{4095};
      uint32_t g = static_cast<uint32_t>((a & 4095) >> 3), w = g >> 6, bit = g & 63;
      if (base_[8 * k] == kNone) base_[8 * k] = i;
      starts_[k].bits[w] |= uint64_t{1} << bit;
      uint64_t whole = len >> 3;  // granules wholly inside (a is granule-aligned)
      if (whole)
        cold_[k].cover[w] |= (whole == 64 ? ~uint64_t{0} : ((uint64_t{1} << whole) - 1)) << bit;
      continue;
    }
    uint64_t end = a + std::max<uint64_t>(len, 1);
    // Granules [g0, g1) (of the address space) lie wholly inside the object.
    uint64_t g0 = (a + 7) >> 3, g1 = (a + len) >> 3;
    for (uint64_t pa = a & ~uint64_t{4095}; pa < end; pa += 4096) {
      if (pa != lastPage) k = touch(pa), lastPage = pa;  // ascending: mostly the page before
      if (pa <= a) {
        uint32_t g = static_cast<uint32_t>((a & 4095) >> 3);
        if (base_[8 * k] == kNone) base_[8 * k] = i;  // the page's first start, for now
        starts_[k].bits[g >> 6] |= uint64_t{1} << (g & 63);
      } else {
        cold_[k].carry = i;
        cold_[k].carryStart = a;
      }
      uint64_t lo = std::max(g0, pa >> 3), hi = std::min(g1, (pa + 4096) >> 3);
      for (uint64_t g = lo; g < hi;) {
        uint32_t r = static_cast<uint32_t>(g - (pa >> 3)), bit = r & 63;
        uint64_t take = std::min<uint64_t>(64 - bit, hi - g);
        cold_[k].cover[r >> 6] |= (take == 64 ? ~uint64_t{0} : ((uint64_t{1} << take) - 1)) << bit;
        g += take;
      }
    }
  }
  for (size_t p = 0; p < starts_.size(); ++p) {
    uint32_t c = base_[8 * p] == kNone ? 0 : base_[8 * p];
    for (int w = 0; w < 8; ++w) {
      base_[8 * p + w] = c;
      c += static_cast<uint32_t>(__builtin_popcountll(starts_[p].bits[w]));
    }
  }
}

}  // namespace heapman::graph
