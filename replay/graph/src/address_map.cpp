// AddressMap (address_map.h): page entries created while building.
#include "heapman/graph/address_map.h"

#include <cstring>

namespace heapman::graph {

AddressMap::Page& AddressMap::touch(uint64_t pageAddress) {
  uint64_t r = pageAddress >> kRegionShift;
  Region* reg = nullptr;
  if (r == lastRegion_) {
    reg = &regions_[lastRegionIndex_];
  } else {
    for (size_t i = 0; i < regions_.size(); ++i)
      if (regions_[i].base == r) reg = &regions_[i], lastRegionIndex_ = i;
    if (!reg) {
      regions_.push_back({r, std::make_unique<uint32_t[]>(kRegionPages)});
      lastRegionIndex_ = regions_.size() - 1;
      reg = &regions_.back();
    }
    lastRegion_ = r;
  }
  uint32_t& s = reg->slots[(pageAddress >> 12) & (kRegionPages - 1)];
  if (!s) {
    Page p;
    std::memset(&p, 0, sizeof p);
    p.first = kNone;
    p.carry = kNone;
    pages_.push_back(p);
    s = static_cast<uint32_t>(pages_.size());
  }
  return pages_[s - 1];
}

}  // namespace heapman::graph
