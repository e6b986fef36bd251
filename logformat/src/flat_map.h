// FlatMap: uint64 -> uint32 open-addressing hash map for the writer's per-chunk lookups
// (address -> allocation ordinal, AllocInfo hash -> dictionary index). Linear probing with
// backward-shift erase (no tombstones); clear() is O(1) by bumping a generation stamp, since
// the writer clears it at every chunk.
//
// Keys are hashed (kHashed: keys that are hashes already, or anything) or placed by address
// (kByAddress: heap addresses). By address, a key's home slot is its 16-byte granule within a
// window of the table's span (capacity x 16 bytes), the window shifted by a hash of its number:
// blocks a heap hands out near each other land in neighbouring slots, so an allocator that reuses
// a few lines of addresses (glibc's tcache, a collector's free lists) keeps the probes in a few
// cache lines, where a hashed home made every insert and find a miss in a 1 MiB table (in perf,
// a quarter of writeAlloc's samples and of the free's on a malloc churn). Windows that overlap
// only share slots; probing stays linear and the load at most one half.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace heapman::log::detail {

enum class FlatKeys { kHashed, kByAddress };

template <FlatKeys kKeys = FlatKeys::kHashed>
class FlatMap {
 public:
  explicit FlatMap(unsigned log2Capacity = 16) { resize(log2Capacity); }

  const uint32_t* find(uint64_t key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.gen != gen_) return nullptr;
      if (e.key == key) return &e.value;
    }
  }
  void insert(uint64_t key, uint32_t value) {
    if ((count_ + 1) * 2 > table_.size()) grow();
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (e.gen != gen_) {
        e = Entry{key, value, gen_};
        ++count_;
        return;
      }
      if (e.key == key) {
        e.value = value;
        return;
      }
    }
  }
  void erase(uint64_t key) {
    size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (table_[i].gen != gen_) return;
      if (table_[i].key == key) break;
    }
    // Backward shift: pull later entries of the probe run into the hole when their home
    // position allows it.
    for (size_t j = (i + 1) & mask_; table_[j].gen == gen_; j = (j + 1) & mask_) {
      size_t h = home(table_[j].key);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        table_[i] = table_[j];
        i = j;
      }
    }
    table_[i].gen = 0;
    --count_;
  }
  void clear() {
    count_ = 0;
    if (++gen_ == 0) {  // stamps wrapped: really clear once every 4 G chunks
      std::memset(static_cast<void*>(table_.data()), 0, table_.size() * sizeof(Entry));
      gen_ = 1;
    }
  }

 private:
  struct Entry {
    uint64_t key;
    uint32_t value;
    uint32_t gen;  // valid iff == gen_
  };
  size_t home(uint64_t key) const {
    if constexpr (kKeys == FlatKeys::kByAddress) {
      const unsigned log2 = 64 - shift_;
      return ((key >> 4) + ((key >> (log2 + 4)) * 0x9E3779B97F4A7C15ull >> shift_)) & mask_;
    } else {
      return (key * 0x9E3779B97F4A7C15ull) >> shift_;
    }
  }
  void resize(unsigned log2) {
    table_.assign(size_t{1} << log2, Entry{0, 0, 0});
    mask_ = table_.size() - 1;
    shift_ = 64 - log2;
    count_ = 0;
    gen_ = 1;
  }
  void grow() {
    std::vector<Entry> old;
    old.swap(table_);
    uint32_t oldGen = gen_;
    unsigned log2 = 64 - shift_ + 1;
    resize(log2);
    for (const Entry& e : old)
      if (e.gen == oldGen) insert(e.key, e.value);
  }

  std::vector<Entry> table_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t count_ = 0;
  uint32_t gen_ = 1;
};

}  // namespace heapman::log::detail
