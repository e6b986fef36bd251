// Transparent huge pages for the graph's big arrays that are read at random (the address map's
// page entries, the dominators' temporaries). With 4 KiB pages each first touch is a page fault
// and each random read past a few MiB a TLB miss as well as a cache miss (3 M nodes: about 10%
// faster with them). A hint only: without THP (or with "never") the pages are ordinary ones.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heapman::graph {

// Asks for huge pages on the 2 MiB-aligned part of [data, data + bytes), before anything
// touches it.
inline void adviseHuge(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  uintptr_t at = reinterpret_cast<uintptr_t>(data);
  uintptr_t begin = (at + kHuge - 1) & ~(kHuge - 1), end = (at + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Reserves n elements of v (empty) on huge pages.
template <class T>
void reserveHuge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  adviseHuge(v.data(), n * sizeof(T));
}

template <class T>
std::vector<T> hugeVector(size_t n, T fill) {
  std::vector<T> v;
  reserveHuge(v, n);
  v.assign(n, fill);
  return v;
}

}  // namespace heapman::graph
