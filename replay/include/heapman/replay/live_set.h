// LiveSet: the objects alive at one point of a replay, keyed by address.
//
// Layout: one open-addressing table of 16-byte slots {dead << 63 | distance << 48 | address,
// birthSeq << 24 | info}, Robin Hood ordered, so it stays fast at a load factor of up to 13/16.
// Erase only marks the slot dead (it keeps its address and place): malloc mostly hands out a
// block freed a moment ago, and the insert that follows finds the dead slot and revives it.
// Both first compare the four slots from the home slot without branches (match4), so most
// operations of a churn replay end without a probing loop and its mispredicted exit (22 -> 16 ns
// per insert or erase on the churn log's address stream, in isolation). Inserts take dead
// slots over on their way; when live and dead slots fill 13/16 the table grows by 5/4 (not 2),
// to a load of 0.6-0.7, if the live ones fill 3/4, else it drops the dead ones in place (one
// linear pass; dropping them at 13/16 rather than 7/8 keeps probes short: +2-3% on the churn
// replay). shrinkToFit() rebuilds it at 0.8 when the live load has fallen below 2/3, so at rest,
// once it holds more than a few thousand slots, it costs 18.3-24 bytes per live object, plus
// 16 KiB of slot hints (recent_) per table. Everything else an object has
// (heap kind, sizes, stack, type, thread) lives once per distinct combination in the replay's
// AllocInfo dictionary; the GC epoch of birth is derived from birthSeq.
//
// Limits: addresses are never 0 (0 marks an empty slot) and below 2^48; info ids < 2^24, birth
// seq < 2^40 (checked by the engine). Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>
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
    dead_ = o.dead_;
    slots_.reset(new LiveObject[capacity_ + kPad]);
    std::memcpy(slots_.get(), o.slots_.get(), (capacity_ + kPad) * sizeof(LiveObject));
    std::memcpy(recent_, o.recent_, sizeof recent_);
    return *this;
  }
  LiveSet(LiveSet&&) noexcept = default;
  LiveSet& operator=(LiveSet&&) noexcept = default;

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t memoryBytes() const { return (capacity_ + kPad) * sizeof(LiveObject) + sizeof recent_; }

  void clear() { rebuild(kMinCapacity); }
  // Empty, at the same capacity: for a state about to be rebuilt as large (a checkpoint's load),
  // which would otherwise grow to it again in steps that each re-insert every object.
  void clearKeepingCapacity() {
    size_ = 0;
    dead_ = 0;
    std::fill(slots_.get(), slots_.get() + capacity_ + kPad, LiveObject{});
    std::memset(recent_, 0, sizeof recent_);
  }
  // Capacity for n objects without growing.
  void reserve(size_t n) {
    if ((n + dead_) * 16 > capacity_ * 13) regrow(std::max(n * 16 / 13 + 1, capacity_));
  }

  // Inserts or replaces (precondition: 0 < obj.address < kAddressLimit). Returns true when an
  // object at that address was already live (overwritten, and returned in *replaced).
  // The common case (the address is within 4 slots of its home: malloc reusing a block) is
  // inlined into the replay loop; the probing loop is not.
  // Only an insert that takes a new slot (insertProbing) can fill the table, so the fast path
  // does not check for room.
  [[gnu::always_inline]] bool insert(LiveObject obj, LiveObject* replaced) {
    uint32_t& hint = recent_[recentIndex(obj.address)];
    if ((slots_[hint].address & kAddressMask) == obj.address)  // its slot, live or dead
      return takeFound(slots_[hint], obj, replaced);
    size_t i = home(obj.address);
    if (unsigned m = match4(i, obj.address)) {  // present, live or dead, near its home
      hint = static_cast<uint32_t>(i + static_cast<unsigned>(__builtin_ctz(m)));
      return takeFound(slots_[hint], obj, replaced);
    }
    return insertProbing(i, obj, replaced);
  }

  // Removes the object at address; false when none is live there. The slot keeps the address,
  // marked dead, so that an allocation reusing the address soon (the common pattern of malloc)
  // finds its slot again without moving anything; insert() takes dead slots over and a rebuild
  // drops them.
  [[gnu::always_inline]] bool erase(uint64_t address, LiveObject* out) {
    if (address == 0) [[unlikely]]
      return false;  // never live (and an empty slot would look like its slot)
    uint32_t& hint = recent_[recentIndex(address)];
    if ((slots_[hint].address & kAddressMask) != address) {
      size_t i = home(address);
      unsigned m = match4(i, address);
      if (!m) return eraseProbing(i, address, out);
      hint = static_cast<uint32_t>(i + static_cast<unsigned>(__builtin_ctz(m)));
    }
    LiveObject& s = slots_[hint];
    if (s.address & kDead) [[unlikely]]
      return false;
    *out = {address, s.packed};
    s.address |= kDead;
    --size_;
    ++dead_;
    return true;
  }

 private:
  // insert() past match4(): probe from the home slot i (Robin Hood order).
  [[gnu::noinline]] bool insertProbing(size_t i, LiveObject obj, LiveObject* replaced) {
    if ((size_ + dead_ + 1) * 16 > capacity_ * 13) {
      makeRoom();
      i = home(obj.address);
    }
    uint64_t want = obj.address;
    uint64_t dist = 0;
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) {
        s = {want | dist << kDistShift, obj.packed};
        ++size_;
        recent_[recentIndex(want)] = static_cast<uint32_t>(i);
        return false;
      }
      if ((s.address & kAddressMask) == want) {
        recent_[recentIndex(want)] = static_cast<uint32_t>(i);
        return takeFound(s, obj, replaced);
      }
      uint64_t sd = (s.address & ~kDead) >> kDistShift;
      if (sd < dist) break;  // Robin Hood: the richer element moves on; `want` is not present
      i = next(i);
      if (++dist >= kMaxDist) {  // pathological: the distance would reach the dead bit
        regrow(capacity_ * 2);
        return insert(obj, replaced);
      }
    }
    // obj takes slot i; carry the displaced ones forward (none of them equals obj). A dead slot
    // met on the way is taken over when the carried element may stand there.
    // A dead slot the carried element would displace (or stands level with) is simply taken:
    // the carried element is never a dead one.
    LiveObject carry = {want | dist << kDistShift, obj.packed};
    ++size_;
    recent_[recentIndex(want)] = static_cast<uint32_t>(i);  // the first step below puts obj there
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0) {
        s = carry;
        return false;
      }
      uint64_t sd = (s.address & ~kDead) >> kDistShift;
      uint64_t cd = carry.address >> kDistShift;
      if (sd < cd || ((s.address & kDead) && sd == cd)) {
        if (s.address & kDead) {
          s = carry;
          --dead_;
          return false;
        }
        std::swap(s, carry);
      }
      i = next(i);
      if ((carry.address >> kDistShift) + 1 >= kMaxDist) {  // pathological: grow and retry
        LiveObject dummy;
        regrow(capacity_ * 2);  // recounts the live objects (all but `carry`)
        insert({carry.address & kAddressMask, carry.packed}, &dummy);
        return false;
      }
      carry.address += uint64_t{1} << kDistShift;
    }
  }

  // erase() past match4(): probe from the home slot i.
  [[gnu::noinline]] bool eraseProbing(size_t i, uint64_t address, LiveObject* out) {
    uint64_t dist = 0;
    for (;;) {
      LiveObject& s = slots_[i];
      if (s.address == 0 || ((s.address & ~kDead) >> kDistShift) < dist) return false;
      if ((s.address & kAddressMask) == address) {
        recent_[recentIndex(address)] = static_cast<uint32_t>(i);
        if (s.address & kDead) return false;
        *out = {address, s.packed};
        s.address |= kDead;
        --size_;
        ++dead_;
        return true;
      }
      i = next(i);
      ++dist;
    }
  }

 public:
  // Below a load of 2/3 (more than 24 bytes per object), rebuilds at 0.8, or with room for
  // `atLeast` objects when that is more (the engine passes what the replay just reserved: a
  // sequence of seeks that each need that much would otherwise shrink and grow the table at every
  // stop). Not done on erase: a live set that swings by a few percent would be rebuilt over and
  // over (40% slower replay on the churn log); the engine calls it when a seek hands the state to
  // a query.
  void shrinkToFit(size_t atLeast = 0) {
    if (size_ * 3 >= capacity_ * 2 || capacity_ <= kShrinkAbove) return;
    size_t want = std::max(size_ + size_ / 4 + 1, atLeast * 16 / 13 + 1);
    if (want * 4 <= capacity_ * 3) regrow(want);
  }

  // Starts loading the slots an insert or erase of address reads first (the slot its hint names,
  // its home and the three after it), for a caller that knows the addresses a few operations
  // ahead (a collection's set, a block of decoded records): the table is far larger than the
  // caches, and a replay that waits for one slot at a time spends most of its time waiting.
  [[gnu::always_inline]] void prefetch(uint64_t address) const {
    __builtin_prefetch(&slots_[recent_[recentIndex(address)]]);
    const LiveObject* s = &slots_[home(address)];
    __builtin_prefetch(s);
    __builtin_prefetch(s + 3);
  }

  // The live object at address, if any.
  std::optional<LiveObject> find(uint64_t address) const {
    size_t i = home(address);
    uint64_t dist = 0;
    for (;;) {
      const LiveObject& s = slots_[i];
      if (s.address == 0 || ((s.address & ~kDead) >> kDistShift) < dist) return std::nullopt;
      if ((s.address & kAddressMask) == address) {
        if (s.address & kDead) return std::nullopt;
        return LiveObject{address, s.packed};
      }
      i = next(i);
      ++dist;
    }
  }

  template <class F>
  void forEach(F&& f) const {
    for (size_t i = 0; i < capacity_; ++i)
      if (slots_[i].address && !(slots_[i].address & kDead))
        f(LiveObject{slots_[i].address & kAddressMask, slots_[i].packed});
  }

 private:
  // insert() found obj's address in slot s: a dead slot comes back to life (the churn case: a
  // block freed a moment ago is reused), a live one is overwritten and returned in *replaced.
  [[gnu::always_inline]] bool takeFound(LiveObject& s, LiveObject obj, LiveObject* replaced) {
    if (s.address & kDead) {
      s = {s.address & ~kDead, obj.packed};
      --dead_;
      ++size_;
      return false;
    }
    *replaced = {obj.address, s.packed};
    s.packed = obj.packed;
    return true;
  }

  __extension__ typedef unsigned __int128 U128;
  static constexpr size_t kMinCapacity = 64;
  static constexpr size_t kShrinkAbove = 4096;  // small tables keep their slack
  static constexpr size_t kPad = 3;             // empty slots after the table, for match4()
  // A slot's address word holds the address in its low 48 bits, the slot's distance from the
  // address's home slot in bits 48-62, so probing never rehashes the residents, and in bit 63
  // the dead mark (the object was erased; the slot keeps its place in the probe order).
  static constexpr unsigned kDistShift = 48;
  static constexpr uint64_t kAddressMask = kAddressLimit - 1;
  static constexpr uint64_t kDead = uint64_t{1} << 63;
  static constexpr uint64_t kMaxDist = 0x7FFF;

  [[gnu::always_inline]] static uint64_t mix(uint64_t a) {
    a ^= a >> 29;
    a *= 0xBF58476D1CE4E5B9ull;
    a ^= a >> 32;
    return a;
  }
  // Multiply-shift range reduction: works for any capacity.
  [[gnu::always_inline]] size_t home(uint64_t address) const {
    return static_cast<size_t>((static_cast<U128>(mix(address)) * capacity_) >> 64);
  }
  size_t next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }
  // Bit k set when slot i + k (k < 4, not wrapping: the kPad slots after the table stay empty)
  // holds `address`, live or dead. Addresses are unique among slots, so at most one bit is set;
  // none when the address is absent or lies further away (the probing loops then decide).
  // Branch-free: most lookups of the churn pattern end here without a mispredicted loop exit.
  [[gnu::always_inline]] unsigned match4(size_t i, uint64_t address) const {
    const LiveObject* s = &slots_[i];
    return unsigned((s[0].address & kAddressMask) == address) |
           unsigned((s[1].address & kAddressMask) == address) << 1 |
           unsigned((s[2].address & kAddressMask) == address) << 2 |
           unsigned((s[3].address & kAddressMask) == address) << 3;
  }
  void rebuild(size_t cap) {
    capacity_ = cap;
    size_ = 0;
    dead_ = 0;
    slots_.reset(new LiveObject[cap + kPad]);
    std::memset(recent_, 0, sizeof recent_);  // slot 0 exists in every table
  }
  // Live and dead slots fill 13/16 of the table: grow by 5/4 when the live ones alone fill more
  // than 3/4, else drop the dead ones at the same capacity (at least 1/16 of it comes free).
  [[gnu::noinline]] void makeRoom() {
    if (size_ * 4 > capacity_ * 3)
      regrow(capacity_ + capacity_ / 4 + 1);
    else
      dropDead();
  }
  // Empties the dead slots in one pass, moving each live object back towards its home as far
  // as the objects before it allow (the Robin Hood order is kept: objects stay sorted by home).
  // Does what regrow(capacity_) did, without re-inserting every live object (which probed
  // through the new table: 60% of the rebuild work on the churn log was these drops).
  void dropDead() {
    size_t start = 0;  // an empty slot (one exists: live and dead slots fill at most 13/16)
    while (slots_[start].address != 0) ++start;
    // Positions count from `start` on without wrapping (u, homePos, last); a position's slot is
    // the position mod capacity.
    size_t last = start;  // position of the last object kept (or of an empty slot)
    for (size_t u = start + 1; u <= start + capacity_; ++u) {
      size_t i = u < capacity_ ? u : u - capacity_;
      LiveObject s = slots_[i];
      if (s.address == 0) {
        last = u;
        continue;
      }
      if (s.address & kDead) {
        slots_[i] = LiveObject{};
        continue;
      }
      size_t homePos = u - (s.address >> kDistShift);
      size_t p = std::max(homePos, last + 1);
      last = p;
      if (p != u) {
        slots_[i] = LiveObject{};
        slots_[p < capacity_ ? p : p - capacity_] = {
            (s.address & kAddressMask) | uint64_t(p - homePos) << kDistShift, s.packed};
      }
    }
    dead_ = 0;
  }
  void regrow(size_t cap) {
    if (cap < kMinCapacity) cap = kMinCapacity;
    std::unique_ptr<LiveObject[]> old = std::move(slots_);
    size_t oldCap = capacity_;
    rebuild(cap);
    LiveObject dummy;
    for (size_t i = 0; i < oldCap; ++i)
      if (old[i].address && !(old[i].address & kDead))
        insert({old[i].address & kAddressMask, old[i].packed}, &dummy);
  }

  // The slot where an address with these bits was last found or placed: a hint, checked before
  // use (the slot must hold the address; addresses are unique among slots, so then it is that
  // address's slot whatever moved since). malloc hands back a block freed a moment ago and most
  // objects die young, so 85% of the churn log's inserts and 92% of its erases hit it and skip
  // the hash and the 4-slot compare (setting it in the probing paths too: +10% on the churn
  // replay). Values are slot indices below capacity_ (reset when the table is rebuilt;
  // dropDead() keeps capacity_).
  static constexpr unsigned kRecentBits = 12;
  static size_t recentIndex(uint64_t address) {
    return static_cast<size_t>(address >> 4) & ((size_t{1} << kRecentBits) - 1);
  }
  uint32_t recent_[size_t{1} << kRecentBits];

  std::unique_ptr<LiveObject[]> slots_;
  size_t capacity_ = 0;
  size_t size_ = 0;  // live objects
  size_t dead_ = 0;  // slots marked dead
};

// Sorts objects by address (unique, below kAddressLimit): a radix sort on the address bits that
// differ between them, 11 at a time (10 M objects: about 0.2 s, where std::sort took 0.7 s).
void sortByAddress(std::vector<LiveObject>& objects);

}  // namespace heapman::replay
