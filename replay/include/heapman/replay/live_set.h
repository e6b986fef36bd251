// LiveSet: the objects alive at one point of a replay, keyed by address.
//
// Layout: one open-addressing table of 16-byte slots {address, birthSeq << 24 | info}, Robin Hood
// ordered with backward-shift deletion, so it stays fast at a load factor of up to 7/8. It grows
// by 5/4 (not 2), which keeps the load between 0.7 and 0.875 once it holds more than a few
// thousand objects: 18.3-22.9 bytes per live object. Everything else an object has (heap kind,
// sizes, stack, type, thread) lives once per distinct combination in the replay's AllocInfo
// dictionary; the GC epoch of birth is derived from birthSeq.
//
// Limits: addresses are never 0 (0 marks an empty slot); info ids < 2^24, birth seq < 2^40
// (checked by the engine). Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

namespace heapman::replay {

inline constexpr unsigned kInfoBits = 24;
inline constexpr uint32_t kMaxInfos = 1u << kInfoBits;
inline constexpr uint64_t kMaxSeq = (uint64_t{1} << (64 - kInfoBits)) - 1;

struct LiveObject {
  uint64_t address = 0;
  uint64_t packed = 0;  // birthSeq << kInfoBits | info
  uint32_t info() const { return static_cast<uint32_t>(packed & (kMaxInfos - 1)); }
  uint64_t birthSeq() const { return packed >> kInfoBits; }
  static uint64_t pack(uint64_t birthSeq, uint32_t info) { return birthSeq << kInfoBits | info; }
};
static_assert(sizeof(LiveObject) == 16);

class LiveSet {
 public:
  LiveSet() { rebuild(kMinCapacity); }
  LiveSet(const LiveSet& o) { *this = o; }
  LiveSet& operator=(const LiveSet& o) {
    if (this == &o) return *this;
    capacity_ = o.capacity_;
    size_ = o.size_;
    slots_.reset(new LiveObject[capacity_]);
    std::memcpy(slots_.get(), o.slots_.get(), capacity_ * sizeof(LiveObject));
    return *this;
  }
  LiveSet(LiveSet&&) noexcept = default;
  LiveSet& operator=(LiveSet&&) noexcept = default;

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t memoryBytes() const { return capacity_ * sizeof(LiveObject); }

  void clear() { rebuild(kMinCapacity); }
  // Capacity for n objects without growing.
  void reserve(size_t n) {
    if (n * 8 > capacity_ * 7) regrow(n * 8 / 7 + 1);
  }

  // Inserts or replaces. Returns true when an object at that address was already live (the old
  // one is overwritten and returned in *replaced).
  bool insert(LiveObject obj, LiveObject* replaced) {
    if ((size_ + 1) * 8 > capacity_ * 7) regrow(capacity_ + capacity_ / 4 + 1);
    size_t i = home(obj.address);
    size_t dist = 0;
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) {
        s = obj;
        ++size_;
        return false;
      }
      if (s.address == obj.address) {
        *replaced = s;
        s = obj;
        return true;
      }
      size_t sd = distance(s.address, i);
      if (sd < dist) {  // Robin Hood: the richer element moves on
        LiveObject t = s;
        s = obj;
        obj = t;
        dist = sd;
        // From here the displaced element is unique: no further equality possible.
        for (;;) {
          i = next(i);
          ++dist;
          LiveObject& u = slots_[i];
          if (u.address == 0) {
            u = obj;
            ++size_;
            return false;
          }
          size_t ud = distance(u.address, i);
          if (ud < dist) {
            LiveObject t2 = u;
            u = obj;
            obj = t2;
            dist = ud;
          }
        }
      }
      i = next(i);
      ++dist;
    }
  }

  // Removes the object at address; false when none is live there.
  bool erase(uint64_t address, LiveObject* out) {
    size_t i = home(address);
    size_t dist = 0;
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) return false;
      if (s.address == address) break;
      if (distance(s.address, i) < dist) return false;
      i = next(i);
      ++dist;
    }
    *out = slots_[i];
    // Backward shift: pull the following displaced elements one slot closer to home.
    for (;;) {
      size_t j = next(i);
      LiveObject& n = slots_[j];
      if (n.address == 0 || distance(n.address, j) == 0) break;
      slots_[i] = n;
      i = j;
    }
    slots_[i] = LiveObject{};
    --size_;
    return true;
  }

  const LiveObject* find(uint64_t address) const {
    size_t i = home(address);
    size_t dist = 0;
    for (;;) {
      const LiveObject& s = slots_[i];
      if (s.address == 0) return nullptr;
      if (s.address == address) return &s;
      if (distance(s.address, i) < dist) return nullptr;
      i = next(i);
      ++dist;
    }
  }

  template <class F>
  void forEach(F&& f) const {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].address) f(slots_[i]);
  }

 private:
  __extension__ typedef unsigned __int128 U128;
  static constexpr size_t kMinCapacity = 64;

  static uint64_t mix(uint64_t a) {
    a ^= a >> 29;
    a *= 0xBF58476D1CE4E5B9ull;
    a ^= a >> 32;
    return a;
  }
  // Multiply-shift range reduction: works for any capacity, keeps home() monotonic in the hash.
  size_t home(uint64_t address) const {
    return static_cast<size_t>((static_cast<U128>(mix(address)) * capacity_) >> 64);
  }
  size_t next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }
  size_t distance(uint64_t address, size_t at) const {
    size_t h = home(address);
    return at >= h ? at - h : at + capacity_ - h;
  }
  void rebuild(size_t cap) {
    capacity_ = cap;
    size_ = 0;
    slots_.reset(new LiveObject[cap]);
  }
  void regrow(size_t cap) {
    if (cap < kMinCapacity) cap = kMinCapacity;
    std::unique_ptr<LiveObject[]> old = std::move(slots_);
    size_t oldCap = capacity_;
    rebuild(cap);
    LiveObject dummy;
    for (size_t i = 0; i < oldCap; ++i)
      if (old[i].address) insert(old[i], &dummy);
  }

  std::unique_ptr<LiveObject[]> slots_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace heapman::replay
