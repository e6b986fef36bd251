// Varint (unsigned LEB128) and zigzag helpers for the record streams (format.h). Header-only:
// the replay engine's decode loop inlines them.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace heapman::log {

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Append-only byte buffer with unchecked writes after ensure(); used by the writer.
class ByteBuffer {
 public:
  size_t size() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  const uint8_t* data() const { return data_.data(); }
  void clear() { data_.clear(); }
  void reserve(size_t n) { data_.reserve(n); }

  void putByte(uint8_t b) { data_.push_back(b); }
  void putVarint(uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
      tmp[n++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    tmp[n++] = static_cast<uint8_t>(v);
    data_.insert(data_.end(), tmp, tmp + n);
  }
  void putZigzag(int64_t v) { putVarint(zigzag(v)); }
  void putU64(uint64_t v) {
    uint8_t tmp[8];
    for (int i = 0; i < 8; ++i) tmp[i] = static_cast<uint8_t>(v >> (8 * i));
    data_.insert(data_.end(), tmp, tmp + 8);
  }
  void putBytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    data_.insert(data_.end(), b, b + n);
  }
  std::vector<uint8_t>& vector() { return data_; }

 private:
  std::vector<uint8_t> data_;
};

// Thrown by ByteCursor when a read runs past its end or a varint is malformed; readers turn it
// into a FormatError naming the chunk.
struct CursorOverrun : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bounds-checked reader over one stream of a chunk.
class ByteCursor {
 public:
  ByteCursor() = default;
  ByteCursor(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}

  bool atEnd() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* position() const { return p_; }

  uint8_t byte() {
    if (p_ == end_) throw CursorOverrun("read past end of stream");
    return *p_++;
  }
  uint64_t varint() {
    if (p_ != end_ && *p_ < 0x80) return *p_++;
    return varintSlow();
  }
  int64_t zz() { return unzigzag(varint()); }
  uint64_t u64() {
    if (remaining() < 8) throw CursorOverrun("read past end of stream");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p_[i]) << (8 * i);
    p_ += 8;
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > remaining()) throw CursorOverrun("length runs past end of stream");
    const uint8_t* r = p_;
    p_ += n;
    return r;
  }

 private:
  uint64_t varintSlow() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw CursorOverrun("varint runs past end of stream");
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    throw CursorOverrun("varint longer than 10 bytes");
  }

  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
};

inline void storeLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint64_t loadLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace heapman::log
