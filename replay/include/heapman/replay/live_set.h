// LiveSet: the objects alive at one point of a replay, keyed by address.
//
// Layout: one open-addressing table of 16-byte slots {distance << 48 | address,
// birthSeq << 24 | info}, Robin Hood ordered with backward-shift deletion, so it stays fast at a
// load factor of up to 7/8. It grows by 5/4 (not 2) to a load of 0.7, and shrinkToFit() rebuilds
// it at 0.8 when the load has fallen below 2/3, so at rest, once it holds more than a few thousand
// slots, it costs 18.3-24 bytes per live object. Everything else an object has (heap kind, sizes, stack, type, thread)
// lives once per distinct combination in the replay's AllocInfo dictionary; the GC epoch of
// birth is derived from birthSeq.
//
// Limits: addresses are never 0 (0 marks an empty slot) and below 2^48; info ids < 2^24, birth
// seq < 2^40 (checked by the engine). Not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

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
  // Addresses are user-space pointers: below 2^48 (checked by the engine).
  static constexpr uint64_t kAddressLimit = uint64_t{1} << 48;

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

  // Inserts or replaces (precondition: 0 < obj.address < kAddressLimit). Returns true when an
  // object at that address was already live (overwritten, and returned in *replaced).
  bool insert(LiveObject obj, LiveObject* replaced) {
    if ((size_ + 1) * 8 > capacity_ * 7) regrow(capacity_ + capacity_ / 4 + 1);
    uint64_t want = obj.address;
    size_t i = home(want);
    uint64_t dist = 0;
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) {
        s = {want | dist << kDistShift, obj.packed};
        ++size_;
        return false;
      }
      if ((s.address & kAddressMask) == want) {
        *replaced = {want, s.packed};
        s.packed = obj.packed;
        return true;
      }
      uint64_t sd = s.address >> kDistShift;
      if (sd < dist) break;  // Robin Hood: the richer element moves on
      i = next(i);
      ++dist;
    }
    // obj takes slot i; carry the displaced ones forward (none of them equals obj).
    LiveObject carry = {want | dist << kDistShift, obj.packed};
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) {
        s = carry;
        ++size_;
        return false;
      }
      uint64_t sd = s.address >> kDistShift;
      if (sd < (carry.address >> kDistShift)) std::swap(s, carry);
      i = next(i);
      if ((carry.address >> kDistShift) + 1 >= kMaxDist) {  // pathological: grow and retry
        LiveObject dummy;
        regrow(capacity_ * 2);
        insert({carry.address & kAddressMask, carry.packed}, &dummy);
        return false;
      }
      carry.address += uint64_t{1} << kDistShift;
    }
  }

  // Removes the object at address; false when none is live there.
  bool erase(uint64_t address, LiveObject* out) {
    size_t i = home(address);
    uint64_t dist = 0;
    for (;;) {
      const LiveObject& s = slots_[i];
      if (s.address == 0 || (s.address >> kDistShift) < dist) return false;
      if ((s.address & kAddressMask) == address) break;
      i = next(i);
      ++dist;
    }
    *out = {address, slots_[i].packed};
    // Backward shift: pull the following displaced elements one slot closer to home.
    for (;;) {
      size_t j = next(i);
      const LiveObject& n = slots_[j];
      if (n.address >> kDistShift == 0) break;  // empty (0) or at home
      slots_[i] = {n.address - (uint64_t{1} << kDistShift), n.packed};
      i = j;
    }
    slots_[i] = LiveObject{};
    --size_;
    return true;
  }

  // Below a load of 2/3 (more than 24 bytes per object), rebuilds at 0.8. Not done on erase:
  // a live set that swings by a few percent would be rebuilt over and over (40% slower replay
  // on the churn log); the engine calls it when a seek hands the state to a query.
  void shrinkToFit() {
    if (size_ * 3 < capacity_ * 2 && capacity_ > kShrinkAbove) regrow(size_ + size_ / 4 + 1);
  }

  // The live object at address, if any.
  std::optional<LiveObject> find(uint64_t address) const {
    size_t i = home(address);
    uint64_t dist = 0;
    for (;;) {
      const LiveObject& s = slots_[i];
      if (s.address == 0 || (s.address >> kDistShift) < dist) return std::nullopt;
      if ((s.address & kAddressMask) == address) return LiveObject{address, s.packed};
      i = next(i);
      ++dist;
    }
  }

  template <class F>
  void forEach(F&& f) const {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].address) f(LiveObject{slots_[i].address & kAddressMask, slots_[i].packed});
  }

 private:
  __extension__ typedef unsigned __int128 U128;
  static constexpr size_t kMinCapacity = 64;
  static constexpr size_t kShrinkAbove = 4096;  // small tables keep their slack
  // A slot's address word holds the address in its low 48 bits and the slot's distance from the
  // address's home slot in the high 16, so probing never rehashes the residents.
  static constexpr unsigned kDistShift = 48;
  static constexpr uint64_t kAddressMask = kAddressLimit - 1;
  static constexpr uint64_t kMaxDist = 0xFFFF;

  static uint64_t mix(uint64_t a) {
    a ^= a >> 29;
    a *= 0xBF58476D1CE4E5B9ull;
    a ^= a >> 32;
    return a;
  }
  // Multiply-shift range reduction: works for any capacity.
  size_t home(uint64_t address) const {
    return static_cast<size_t>((static_cast<U128>(mix(address)) * capacity_) >> 64);
  }
  size_t next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }
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
      if (old[i].address) insert({old[i].address & kAddressMask, old[i].packed}, &dummy);
  }

  std::unique_ptr<LiveObject[]> slots_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace heapman::replay
