// The writer's tables that turn what the rings carry into the log's ids: stacks interned as a
// trie of StackNode records, runtime handles (MonoClass*, MonoMethod*) mapped to TypeDef and
// MethodDef ids. Writer thread only.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "heapman/logformat/writer.h"

namespace heapman::rec::writer {

using namespace heapman::log;

// A managed frame as the stack table keys it: its MethodDef id with this bit set.
constexpr uint64_t kManagedFrame = uint64_t{1} << 63;

// Stacks as a trie of (parent, frame) nodes, with a cache from whole-stack hash to leaf. A frame
// with kManagedFrame set is a managed one (a MethodDef id).
class StackTable {
 public:
  uint32_t intern(const uint64_t* frames, uint32_t n, LogWriter& log) {
    if (n == 0) return 0;
    if (n > kRecentFrames) return internHashed(frames, n, log);
    // The recent stacks with their frames: a hit costs a few multiplies and a memcmp, where the
    // hashed cache below hashes every frame and then confirms its entry by walking the trie
    // from the leaf, one dependent load a frame (on a malloc churn whose 13 stacks come back
    // to the writer 1.8 M times, a third of what the writer spent outside the encoder).
    RecentEntry& recent = recent_[recentSlot(frames, n)];
    if (recent.n == n && std::memcmp(recent.frames, frames, n * sizeof(uint64_t)) == 0)
      return ++stats.cached, recent.leaf;
    uint32_t leaf = internHashed(frames, n, log);
    recent.n = n;
    recent.leaf = leaf;
    std::memcpy(recent.frames, frames, n * sizeof(uint64_t));
    return leaf;
  }

 public:
  struct {
    uint64_t cached = 0, byHash = 0, walked = 0, nodes = 0;
  } stats;

 private:
  [[gnu::noinline]] uint32_t internHashed(const uint64_t* frames, uint32_t n, LogWriter& log) {
    uint64_t h = XXH3_64bits(frames, n * sizeof(uint64_t));
    CacheEntry& slot = cache_[h & (kCacheSize - 1)];
    if (slot.hash == h && matches(slot.leaf, frames, n)) return ++stats.cached, slot.leaf;
    auto it = byHash_.find(h);
    if (it != byHash_.end() && matches(it->second, frames, n)) {
      ++stats.byHash;
      slot = {h, it->second};
      return it->second;
    }
    ++stats.walked;
    uint32_t parent = 0;
    for (uint32_t i = n; i-- > 0;) {  // from the outermost frame to the leaf
      Key k{parent, frames[i]};
      auto c = children_.find(k);
      if (c == children_.end()) {
        auto id = static_cast<uint32_t>(nodes_.size());
        nodes_.push_back({parent, frames[i]});
        ++stats.nodes;
        children_.emplace(k, id);
        log.write(StackNode{id, parent, frames[i] & ~kManagedFrame, (frames[i] & kManagedFrame) != 0});
        parent = id;
      } else {
        parent = c->second;
      }
    }
    byHash_[h] = parent;
    slot = {h, parent};
    return parent;
  }

  struct Node {
    uint32_t parent;
    uint64_t frame;
  };
  struct Key {
    uint32_t parent;
    uint64_t frame;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (k.frame * 0x9E3779B97F4A7C15ull) ^ (uint64_t{k.parent} * 0xC2B2AE3D27D4EB4Full);
    }
  };
  bool matches(uint32_t id, const uint64_t* frames, uint32_t n) const {
    for (uint32_t i = 0; i < n; ++i) {
      if (id == 0 || nodes_[id].frame != frames[i]) return false;
      id = nodes_[id].parent;
    }
    return id == 0;
  }

  // Direct mapped by the leaf's two frames, the outermost one and the depth; stacks of up to
  // kRecentFrames frames (256 entries: 66 KiB). n == 0: empty (intern never looks up n == 0).
  static constexpr uint32_t kRecentFrames = 32, kRecentSlots = 256;
  struct RecentEntry {
    uint32_t n = 0, leaf = 0;
    uint64_t frames[kRecentFrames];
  };
  static size_t recentSlot(const uint64_t* frames, uint32_t n) {
    uint64_t h = frames[0] * 0x9E3779B97F4A7C15ull ^ frames[n > 1] * 0xC2B2AE3D27D4EB4Full ^
                 (frames[n - 1] + n) * 0x165667B19E3779F9ull;
    return static_cast<size_t>(h >> 56);
  }
  std::vector<RecentEntry> recent_ = std::vector<RecentEntry>(kRecentSlots);

  // Most events hit a stack seen recently: a direct-mapped cache answers them without the map.
  struct CacheEntry {
    uint64_t hash = 0;
    uint32_t leaf = 0;
  };
  static constexpr size_t kCacheSize = 16384;
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(kCacheSize);
  std::vector<Node> nodes_{{0, 0}};  // id 0: the empty stack
  std::unordered_map<Key, uint32_t, KeyHash> children_;
  std::unordered_map<uint64_t, uint32_t> byHash_;
};

// Runtime handles (MonoClass*, MonoMethod*) to log ids: a direct-mapped cache in front of a hash
// map, since nearly every managed allocation asks for one.
class HandleMap {
 public:
  uint32_t find(uint64_t handle) {
    Entry& c = cache_[(handle * 0x9E3779B97F4A7C15ull) >> 52];
    if (c.handle == handle && handle) return c.id;
    auto it = map_.find(handle);
    if (it == map_.end()) return 0;
    c = {handle, it->second};
    return it->second;
  }
  // The id of a new handle (ids count from 1); 0 if the handle is known already.
  uint32_t add(uint64_t handle) {
    auto [it, fresh] = map_.emplace(handle, static_cast<uint32_t>(map_.size() + 1));
    return fresh ? it->second : 0;
  }

 private:
  struct Entry {
    uint64_t handle = 0;
    uint32_t id = 0;
  };
  std::vector<Entry> cache_ = std::vector<Entry>(4096);
  std::unordered_map<uint64_t, uint32_t> map_;
};

}  // namespace heapman::rec::writer
