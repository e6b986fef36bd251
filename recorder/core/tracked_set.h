// The writer thread's set of tracked live objects of the collected heaps (bdwgc, Mono), and the
// collected set of each collection, derived from the collector's mark bits (MarkSnapshot).
//
// The writer sees every allocation and explicit free in sequence order, so it can keep the set
// the program's threads would otherwise keep under the collector's lock: an allocation costs
// the program one ring record and nothing more, and the collection pause only copies mark bits.
//
// The set is an array of keys in birth order: appending a birth and visiting every object at a
// collection are sequential, no hashing. A key is the object's recorded address; bit 0 marks an
// object of the GC_debug_* family, whose mark bit belongs to the object's start, debugOffset
// bytes below. Explicit frees are rare (none in Mono): each is noted with the array's size at
// that moment and applied at the next sweep to the first birth of its key below that mark, so
// that a later object at the same address (appended after the free) survives, and a free of an
// object the set never held (libgc's own tables) removes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gc_events.h"

namespace heapman::rec {

class TrackedSet {
 public:
  void add(uint64_t key) { live_.push_back(key); }
  void noteFree(uint64_t key);
  // Removes every object the snapshot does not show marked, appending its recorded address to
  // `collected` (in birth order). The snapshot's pages may be merged in place (duplicates).
  void sweep(MarkSnapshot& marks, uint64_t debugOffset, std::vector<uint64_t>& collected);
  size_t size() const { return live_.size(); }

  // What the sweeps cost (HEAPMAN_STATS).
  struct Stats {
    uint64_t sweeps = 0, objects = 0, ns = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  void applyFrees();
  struct Pair {
    uint64_t key, mark;
  };
  std::vector<uint64_t> live_;
  std::vector<Pair> freed_;       // not applied yet: (key, live_.size() when it was freed)
  std::vector<uint32_t> slots_;   // sweep's page index (reused): 1 + page entry, 0 empty
  std::vector<uint64_t> freeIndex_;  // applyFrees' key index (reused)
  Stats stats_;
};

}  // namespace heapman::rec
