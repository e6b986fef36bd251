// sortByAddress (live_set.h): least-significant-digit radix sort of live objects by address.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "heapman/replay/live_set.h"

namespace heapman::replay {

void sortByAddress(std::vector<LiveObject>& objects) {
  constexpr unsigned kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  const size_t n = objects.size();
  if (n < 4096) {  // a radix pass costs more than the comparisons on a small vector
    std::sort(objects.begin(), objects.end(),
              [](const LiveObject& a, const LiveObject& b) { return a.address < b.address; });
    return;
  }
  // Only the bits that differ: heap addresses share their high bits, and granules their low.
  uint64_t any = 0, all = ~uint64_t{0};
  for (const LiveObject& o : objects) any |= o.address, all &= o.address;
  uint64_t differ = any ^ all;
  if (!differ) return;
  unsigned low = static_cast<unsigned>(__builtin_ctzll(differ));
  unsigned high = 64 - static_cast<unsigned>(__builtin_clzll(differ));
  const unsigned passes = (high - low + kDigitBits - 1) / kDigitBits;
  // Every pass's counts in one read of the objects.
  std::vector<std::array<size_t, kBuckets>> count(passes);
  for (auto& c : count) c.fill(0);
  for (const LiveObject& o : objects)
    for (unsigned p = 0; p < passes; ++p)
      ++count[p][(o.address >> (low + p * kDigitBits)) & (kBuckets - 1)];
  std::vector<LiveObject> other(n);
  std::vector<LiveObject>* from = &objects;
  std::vector<LiveObject>* to = &other;
  for (unsigned p = 0; p < passes; ++p) {
    unsigned shift = low + p * kDigitBits;
    size_t at = 0;
    for (size_t& c : count[p]) {
      size_t k = c;
      c = at;
      at += k;
    }
    std::array<size_t, kBuckets>& next = count[p];
    for (const LiveObject& o : *from) (*to)[next[(o.address >> shift) & (kBuckets - 1)]++] = o;
    std::swap(from, to);
  }
  if (from != &objects) objects.swap(other);
}

}  // namespace heapman::replay
