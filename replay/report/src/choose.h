// Choosing a few of many (points, marks, frames) for the report.
#pragma once

#include <cstddef>
#include <vector>

namespace heapman::report {

// n indices out of [0, size), evenly spread, the last always in.
inline std::vector<size_t> evenly(size_t size, size_t n) {
  std::vector<size_t> out;
  if (size == 0 || n == 0) return out;
  if (size <= n) {
    for (size_t i = 0; i < size; ++i) out.push_back(i);
    return out;
  }
  for (size_t k = 1; k <= n; ++k) out.push_back(k * size / n - 1);
  return out;
}

}  // namespace heapman::report
