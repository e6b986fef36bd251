// Reading DWARF's byte encodings (little-endian): LEB128 numbers and fixed-size unsigned values,
// each bounded by the end of what may be read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace heapman::replay::detail {

// An unsigned LEB128 number at `p` (bits past the 64th dropped); false when it runs past `end`.
inline bool uleb(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; p < end; shift += 7) {
    uint8_t b = *p++;
    if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// A signed LEB128 number at `p`; false when it runs past `end`.
inline bool sleb(const uint8_t*& p, const uint8_t* end, int64_t& v) {
  uint64_t u = 0;
  unsigned shift = 0;
  uint8_t b = 0x80;
  while (p < end && (b & 0x80)) {
    b = *p++;
    if (shift < 64) u |= uint64_t{b & 0x7fu} << shift;
    shift += 7;
  }
  if (b & 0x80) return false;
  if (shift < 64 && (b & 0x40)) u |= ~uint64_t{0} << shift;
  v = static_cast<int64_t>(u);
  return true;
}

// A little-endian unsigned of `n` bytes (n <= 8); false past the end.
inline bool fixed(const uint8_t*& p, const uint8_t* end, unsigned n, uint64_t& v) {
  if (end - p < static_cast<ptrdiff_t>(n)) return false;
  v = 0;
  std::memcpy(&v, p, n);
  p += n;
  return true;
}

}  // namespace heapman::replay::detail
