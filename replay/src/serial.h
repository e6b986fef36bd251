// Byte helpers for the index file (little-endian fixed words, LEB128 varints, strings) and its
// LZ4 blocks. Reading is bounds-checked (log::ByteCursor throws CursorOverrun).
#pragma once

#include <lz4.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "heapman/logformat/bytes.h"

namespace heapman::replay::detail {

class Out {
 public:
  void u8(uint8_t v) { b_.push_back(v); }
  void u32(uint32_t v) { fixed(v, 4); }
  void u64(uint64_t v) { fixed(v, 8); }
  void var(uint64_t v) {
    while (v >= 0x80) {
      b_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    b_.push_back(static_cast<uint8_t>(v));
  }
  void str(const std::string& s) {
    var(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void bytes(const std::vector<uint8_t>& v) {
    var(v.size());
    b_.insert(b_.end(), v.begin(), v.end());
  }
  std::vector<uint8_t>& data() { return b_; }

 private:
  void fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> b_;
};

class In {
 public:
  explicit In(std::span<const uint8_t> s) : c_(s.data(), s.data() + s.size()) {}
  uint8_t u8() { return c_.byte(); }
  uint32_t u32() { return static_cast<uint32_t>(fixed(4)); }
  uint64_t u64() { return c_.u64(); }
  uint64_t var() { return c_.varint(); }
  uint32_t var32() { return static_cast<uint32_t>(c_.varint()); }
  std::string str() {
    uint64_t n = c_.varint();
    const uint8_t* p = c_.take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  std::vector<uint8_t> bytes() {
    uint64_t n = c_.varint();
    const uint8_t* p = c_.take(n);
    return std::vector<uint8_t>(p, p + n);
  }
  // A count of items that each take at least one byte: refuses counts the input cannot hold.
  uint64_t count() {
    uint64_t n = c_.varint();
    if (n > c_.remaining()) throw log::CursorOverrun("count larger than the data");
    return n;
  }
  bool atEnd() const { return c_.atEnd(); }

 private:
  uint64_t fixed(int n) {
    const uint8_t* p = c_.take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
  }
  log::ByteCursor c_;
};

inline std::vector<uint8_t> lz4Compress(const std::vector<uint8_t>& raw) {
  std::vector<uint8_t> out(static_cast<size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
  int n = LZ4_compress_default(reinterpret_cast<const char*>(raw.data()),
                               reinterpret_cast<char*>(out.data()), static_cast<int>(raw.size()),
                               static_cast<int>(out.size()));
  out.resize(static_cast<size_t>(n > 0 ? n : 0));
  return out;
}

// False when the block does not decompress to exactly rawSize bytes.
inline bool lz4Decompress(std::span<const uint8_t> stored, uint64_t rawSize,
                          std::vector<uint8_t>& out) {
  if (rawSize > (uint64_t{1} << 34) || rawSize > stored.size() * uint64_t{255} + 16) return false;
  out.resize(rawSize);
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()),
                              reinterpret_cast<char*>(out.data()), static_cast<int>(stored.size()),
                              static_cast<int>(rawSize));
  return n >= 0 && static_cast<uint64_t>(n) == rawSize;
}

}  // namespace heapman::replay::detail
