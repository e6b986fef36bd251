// The writer thread's set of tracked live objects of the collected heaps (bdwgc, Mono), and the
// collected set of each collection, derived from the collector's mark bits (MarkSnapshot).
//
// The writer sees every allocation and explicit free in sequence order, so it can keep the set
// the program's threads would otherwise keep under the collector's lock: an allocation costs
// the program one ring record and nothing more, and the collection pause only copies mark bits.
//
// The set has the snapshot's shape: for every 4 KiB page where a tracked object's recorded
// address lies, a bit per 8 bytes. A birth sets its bit, an explicit free clears it (the events
// arrive in order, so a later object at the same address is a later birth; a free of an object
// the set never held, libgc's own tables, clears nothing). A sweep is then word-wide: tracked and
// not marked, 64 objects per operation, and the collected addresses come out ascending, in
// pages taken in address order, which is the order the log stores them in. A GC_debug_* object
// has a second bit (`debug`): its mark bit belongs to its start, debugOffset bytes below the
// recorded address, and is tested there one by one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gc_events.h"

namespace heapman::rec {

class TrackedSet {
 public:
  // key: the recorded address; bit 0 set for a GC_debug_* object.
  void add(uint64_t key);
  void noteFree(uint64_t key);
  // Removes every object the snapshot does not show marked, appending its recorded address to
  // `collected` in ascending order. The snapshot's pages may be merged in place (duplicates).
  void sweep(MarkSnapshot& marks, uint64_t debugOffset, std::vector<uint64_t>& collected);
  size_t size() const { return count_; }

  // What the sweeps cost (HEAPMAN_STATS).
  struct Stats {
    uint64_t sweeps = 0, objects = 0, ns = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Page {
    uint64_t page;      // address, a multiple of MarkSnapshot::kPageBytes
    uint64_t live[8];   // bit i: a tracked object recorded at page + 8 * i
    uint64_t debug[8];  // ... which is a GC_debug_* object
  };
  // The page's entry; created when `create`, else null when absent. Births come from a few
  // pages at a time (one per size class the program allocates in: a particle and its vectors
  // are two), so a small direct-mapped cache of recent pages answers most of them inline.
  Page* pageOf(uint64_t page, bool create) {
    const Recent& c = recent_[(page >> 12) & (kRecent - 1)];
    return c.page == page ? &pages_[c.entry] : findPage(page, create);
  }
  Page* findPage(uint64_t page, bool create);
  void reindex();

  std::vector<Page> pages_;     // in no order
  std::vector<uint32_t> index_; // open addressing: 1 + entry in pages_, 0 empty
  struct Recent {
    uint64_t page = ~uint64_t{0};  // never a page address: empty
    uint32_t entry = 0;
  };
  static constexpr size_t kRecent = 16;
  Recent recent_[kRecent];  // by the page number's low bits; emptied when entries move
  size_t count_ = 0;
  std::vector<uint32_t> slots_;  // sweep's snapshot index (reused)
  std::vector<uint32_t> order_;  // sweep's pages by address (reused)
  Stats stats_;
};

}  // namespace heapman::rec
