// The AllocInfo dictionary of a Replay (docs/DESIGN.md §3.2): every distinct (heap, thread,
// size, actual size, stack, type) gets a u32 id, in order of first use, through an open-addressing
// hash table; allocations reach it by their index in the chunk's dictionary. Private to replay/src.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "heapman/replay/replay.h"

namespace heapman::replay {

class Replay::InfoDict {
 public:
  explicit InfoDict(std::vector<AllocInfo>& infos) : infos_(infos) { rehash(1024); }

  void rebuildFromInfos() {
    size_t cap = 1024;
    while (cap < infos_.size() * 2) cap *= 2;
    rehash(cap);
  }

  // The chunk being applied starts: forget the chunk-local indices of the one before.
  void newChunk() {
    for (auto& t : local_) t.second.clear();
  }

  // The id of an allocation's AllocInfo, given its index in the chunk's dictionary
  // (log::AllocLocalVisitor): an array lookup per (thread, chunk-local index) after the first
  // allocation, which interns. Ids come out exactly as intern() would give them.
  [[gnu::always_inline]] uint32_t idOf(const log::Alloc& a, uint32_t local) {
    if (a.ev.thread == thread_) [[likely]] {
      const std::vector<uint32_t>& ids = local_[cur_].second;
      if (local < ids.size()) [[likely]] {
        uint32_t id = ids[local];
        if (id != kUnset) [[likely]]
          return id;
      }
    }
    return idOfFirst(a, local);
  }
  // idOf() for the first allocation of a (thread, chunk-local index), or of another thread.
  [[gnu::noinline]] uint32_t idOfFirst(const log::Alloc& a, uint32_t local) {
    if (a.ev.thread != thread_) selectThread(a.ev.thread);
    std::vector<uint32_t>& ids = local_[cur_].second;
    if (local < ids.size()) {
      uint32_t id = ids[local];
      if (id != kUnset) return id;
    } else {
      ids.resize(local + size_t{1}, kUnset);
    }
    uint32_t id = intern(AllocInfo{a.heap, a.ev.thread, a.size, a.actualSize, a.stackId, a.typeId});
    ids[local] = id;
    return id;
  }

  uint32_t intern(const AllocInfo& a) {
    uint64_t h = hash(a);
    size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      uint32_t v = table_[i];
      if (v == 0) break;
      if (infos_[v - 1] == a) return v - 1;
    }
    if (infos_.size() >= kMaxInfos)
      throw DataError("the log has more than " + std::to_string(kMaxInfos) +
                      " distinct (heap, size, stack, type, thread) combinations, more than this "
                      "heapman can replay (a corrupt log? `heapman verify LOG` checks it)");
    infos_.push_back(a);
    if (infos_.size() * 2 > table_.size()) {
      rehash(table_.size() * 2);
    } else {
      place(h, static_cast<uint32_t>(infos_.size()));
    }
    return static_cast<uint32_t>(infos_.size() - 1);
  }

 private:
  static uint64_t hash(const AllocInfo& a) {
    uint64_t h = a.size * 0x9E3779B97F4A7C15ull;
    h ^= (a.actualSize - a.size) + (uint64_t{a.stackId} << 20) + 0x632BE59BD9B4E019ull;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= uint64_t{a.typeId} << 32 | (uint64_t{a.thread} << 3) | static_cast<uint64_t>(a.heap);
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
  }
  void place(uint64_t h, uint32_t v) {
    size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
      if (table_[i] == 0) {
        table_[i] = v;
        return;
      }
  }
  void rehash(size_t cap) {
    table_.assign(cap, 0);
    for (size_t i = 0; i < infos_.size(); ++i) place(hash(infos_[i]), static_cast<uint32_t>(i + 1));
  }

  void selectThread(uint32_t thread) {
    auto [it, added] = threadSlot_.try_emplace(thread, local_.size());
    if (added) local_.emplace_back(thread, std::vector<uint32_t>());
    thread_ = thread;
    cur_ = it->second;
  }

  static constexpr uint32_t kUnset = 0xFFFFFFFF;
  std::vector<AllocInfo>& infos_;
  std::vector<uint32_t> table_;  // id + 1; 0 empty
  // Per thread: chunk-local dictionary index -> id (kUnset: not seen in this chunk yet).
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> local_{{0u, {}}};
  std::unordered_map<uint32_t, size_t> threadSlot_{{0u, 0}};
  uint32_t thread_ = 0;  // the thread of local_[cur_]
  size_t cur_ = 0;
};

}  // namespace heapman::replay
