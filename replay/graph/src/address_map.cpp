// AddressMap (address_map.h): page entries created while building.
#include "heapman/graph/address_map.h"

#include <cstring>

namespace heapman::graph {

uint32_t AddressMap::touch(uint64_t pageAddress) {
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
    starts_.push_back(Starts{});
    base_.resize(base_.size() + 8, 0);
    base_[base_.size() - 8] = kNone;
    Cold c;
    std::memset(&c, 0, sizeof c);
    c.carry = kNone;
    cold_.push_back(c);
    s = static_cast<uint32_t>(starts_.size());
  }
  return s - 1;
}

}  // namespace heapman::graph
