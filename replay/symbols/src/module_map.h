// Address -> module index over the PT_LOAD segments of the recorded modules.
#pragma once

#include <cstdint>
#include <map>

#include "heapman/logformat/records.h"

namespace heapman::replay::detail {

class ModuleMap {
 public:
  // Segments of a later module replace whatever earlier ones covered (address reuse after an
  // unload). Segments of zero size or that wrap around the address space are ignored.
  void add(const log::ModuleLoad& module, int32_t index);
  // The module whose segment holds `address`; -1 when none does.
  int32_t find(uint64_t address) const;

 private:
  struct Range {
    uint64_t end;  // exclusive
    int32_t module;
  };
  std::map<uint64_t, Range> ranges_;  // start -> range; never overlapping
};

}  // namespace heapman::replay::detail
