// AddressMap (address_map.h): the tables' set-up, page entries created while building, and the
// lookup's rare path.
#include "heapman/graph/address_map.h"

#include <cstring>

namespace heapman::graph {

namespace {
// The slots of every 1 GiB region without objects: zeros, in .bss (never written, so the pages
// the lookups of wild pointers read are the kernel's zero page).
alignas(4096) uint32_t noSlots[uint32_t{1} << 18];
}  // namespace

void AddressMap::reset(uint32_t n, uint64_t low, uint64_t span, size_t pages) {
  static_assert(sizeof noSlots == kRegionPages * 4);
  low_ = low;
  span_ = span;
  pages_.clear();
  covers_.clear();
  regionTables_.clear();
  pages_.reserve(pages + 1);
  covers_.reserve(pages + 1);
  Page empty;
  std::memset(&empty, 0, sizeof empty);
  empty.half[0].carry = empty.half[1].carry = kNone;
  pages_.push_back(empty);
  covers_.push_back(Cover{});
  regions_.assign(n ? ((span - 1) >> kRegionShift) + 1 : 1, noSlots);
}

uint32_t AddressMap::touch(uint64_t pageAddress) {
  uint64_t off = pageAddress - low_;
  uint32_t*& r = regions_[off >> kRegionShift];
  if (r == noSlots) {
    regionTables_.push_back(std::make_unique<uint32_t[]>(kRegionPages));
    r = regionTables_.back().get();
  }
  uint32_t& s = r[(off >> 12) & (kRegionPages - 1)];
  if (!s) {
    Page p;
    std::memset(&p, 0, sizeof p);
    p.half[0].first = kNone;
    p.half[0].carry = kNone;
    pages_.push_back(p);
    covers_.push_back(Cover{});
    s = static_cast<uint32_t>(pages_.size() - 1);
  }
  return s;
}

uint64_t AddressMap::lastStartBefore(uint32_t k, uint64_t p) const {
  uint32_t g = static_cast<uint32_t>((p & 4095) >> 3);
  for (int w = static_cast<int>(g >> 6); w >= 0; --w) {
    uint64_t bits = pages_[k].half[w >> 2].bits[w & 3];
    if (w == static_cast<int>(g >> 6)) bits &= ~uint64_t{0} >> (63 - (g & 63));
    if (bits)
      return (p & ~uint64_t{4095}) + 8 * (64 * w + 63 - static_cast<uint32_t>(__builtin_clzll(bits)));
  }
  return pages_[k].half[0].carryStart;  // not reached: the caller knows a start precedes p
}

}  // namespace heapman::graph
