// Varint (unsigned LEB128) and zigzag helpers for the record streams (format.h). Header-only:
// the replay engine's decode loop inlines them.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace heapman::log {

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Append-only byte buffer for the writer's streams: raw storage grown by doubling, so that the
// common append is a bounds check and a store (no std::vector::insert call per byte).
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint8_t* data() const { return data_.get(); }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }

  void putByte(uint8_t b) {
    if (size_ == capacity_) grow(size_ + 1);
    data_[size_++] = b;
  }
  void putVarint(uint64_t v) {
    if (capacity_ - size_ < 10) grow(size_ + 10);
    size_ = static_cast<size_t>(storeVarint(data_.get() + size_, v) - data_.get());
  }
  // Writing in place, for loops (a byte store may alias the buffer's own fields, so per-value
  // calls reload them): room for n bytes at the end, then the end the caller wrote up to.
  uint8_t* tail(size_t n) {
    if (capacity_ - size_ < n) grow(size_ + n);
    return data_.get() + size_;
  }
  void setTail(const uint8_t* end) { size_ = static_cast<size_t>(end - data_.get()); }
  // A varint at p (10 bytes of room at most); returns the byte after it.
  static uint8_t* storeVarint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  void putZigzag(int64_t v) { putVarint(zigzag(v)); }
  void putU64(uint64_t v) {
    if (capacity_ - size_ < 8) grow(size_ + 8);
    for (int i = 0; i < 8; ++i) data_[size_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void putBytes(const void* p, size_t n) {
    if (capacity_ - size_ < n) grow(size_ + n);
    if (n) std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }

 private:
  void grow(size_t need) {
    size_t cap = capacity_ ? capacity_ : 4096;
    while (cap < need) cap *= 2;
    std::unique_ptr<uint8_t[]> d(new uint8_t[cap]);
    if (size_) std::memcpy(d.get(), data_.get(), size_);
    data_ = std::move(d);
    capacity_ = cap;
  }

  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
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
