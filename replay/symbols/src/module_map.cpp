#include "module_map.h"

namespace heapman::replay::detail {

void ModuleMap::add(const log::ModuleLoad& module, int32_t index) {
  for (const log::ModuleSegment& seg : module.segments) {
    uint64_t start = module.base + seg.vaddr;
    uint64_t end = start + seg.memSize;
    if (seg.memSize == 0 || end < start) continue;
    // Cut [start, end) out of the ranges already there, keeping what sticks out on either side.
    auto it = ranges_.lower_bound(start);
    if (it != ranges_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > start) {
        Range old = prev->second;
        prev->second.end = start;
        if (old.end > end) ranges_.emplace(end, Range{old.end, old.module});
      }
    }
    it = ranges_.lower_bound(start);
    while (it != ranges_.end() && it->first < end) {
      Range old = it->second;
      it = ranges_.erase(it);
      if (old.end > end) {
        ranges_.emplace(end, old);
        break;
      }
    }
    ranges_.emplace(start, Range{end, index});
  }
}

int32_t ModuleMap::find(uint64_t address) const {
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return -1;
  --it;
  return address < it->second.end ? it->second.module : -1;
}

}  // namespace heapman::replay::detail
