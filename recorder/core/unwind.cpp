// The rule cache of unwind.h: frameRule's slow path and clearFrameRules. The rules themselves
// are read by unwind_cfi.cpp.
#include "unwind.h"

#include "recorder.h"

namespace heapman::rec {

namespace {

std::atomic<bool> rulesUsed{false};  // clearFrameRules leaves an untouched table untouched

FrameRule unknown() {
  FrameRule r;
  r.kind = FrameRule::kUnknown;
  return r;
}

inline uint64_t encode(uintptr_t ret, uint64_t way, const FrameRule& r) {
  return (uint64_t{ret >> 14} << 31) | (way << 30) | (uint64_t{r.kind} << 27) |
         (uint64_t{r.rbpSlot} << 21) | (r.cfaOffset / 8);
}

}  // namespace

namespace rules {
std::atomic<uint64_t> table[uint64_t{1} << kBits];

FrameRule miss(uintptr_t ret, uint64_t h, uint64_t w0, uint64_t w1) {
  if (ret >> 47) return unknown();
  // A miss: which module, then its call-frame information.
  g.ruleMisses.fetch_add(1, std::memory_order_relaxed);
  FrameRule r;
  r.kind = FrameRule::kFramePointer;
  uint32_t count = g.framelessCount.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < count; ++k)
    if (ret >= g.frameless[k].low && ret < g.frameless[k].high) {
      uintptr_t eh = g.framelessEh[k].load(std::memory_order_relaxed);
      r = eh ? parseFrameRule(eh, ret - 1) : unknown();
      break;
    }
  if (!rulesUsed.load(std::memory_order_relaxed)) rulesUsed.store(true, std::memory_order_relaxed);
  if (w0 == 0 || w1 != 0)
    table[h].store(encode(ret, 0, r), std::memory_order_relaxed);
  else
    table[h ^ 1].store(encode(ret, 1, r), std::memory_order_relaxed);
  return r;
}
}  // namespace rules

void clearFrameRules() {
  if (!rulesUsed.load(std::memory_order_relaxed)) return;
  for (auto& w : rules::table) w.store(0, std::memory_order_relaxed);
}

}  // namespace heapman::rec
