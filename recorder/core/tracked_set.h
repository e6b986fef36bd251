// The writer thread's set of tracked live objects of the collected heaps (bdwgc, Mono), and the
// collected set of each collection, derived from the collector's mark bits (MarkSnapshot).
//
// The writer sees every allocation and explicit free in sequence order, so it can keep the set
// the program's threads would otherwise keep under the collector's lock: an allocation costs
// the program one ring record and nothing more, and the collection pause only copies mark bits.
//
// The set has the snapshot's shape: for every 4 KiB page where a tracked object's recorded
// address lies, a bit per 8 bytes (one cache line a page). A birth sets its bit, an explicit
// free clears it (the events arrive in order, so a later object at the same address is a later
// birth; a free of an object the set never held, libgc's own tables, clears nothing). A sweep
// is then word-wide: tracked and not marked, 64 objects per operation, and the collected
// addresses come out ascending, which is the order the log stores them in. A GC_debug_* object
// has a second bit (kept only where there is one): its mark bit belongs to its start,
// debugOffset bytes below the recorded address, and is tested there one by one.
//
// Pages are found by address, not by hashing: 256 KiB regions (64 pages' bits, 4 KiB) indexed by
// their number, with a small cache of recent regions, so that a birth costs a region lookup
// that mostly hits that cache and a write to its page's line. Births hop between pages (a
// collector's free lists thread through every page with room) but rarely between regions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gc_events.h"

namespace heapman::rec {

class TrackedSet {
 public:
  // key: the recorded address; bit 0 set for a GC_debug_* object.
  void add(uint64_t key) {
    const uint64_t address = key & ~uint64_t{1};
    Region& rg = *regionOf(address >> kRegionShift, true);
    const uint32_t page = (address >> 12) & (kPages - 1);
    const uint64_t bit = (address & kPageMask) >> 3, m = uint64_t{1} << (bit & 63);
    uint64_t& word = rg.live[page].w[bit >> 6];
    count_ += (word & m) == 0;
    word |= m;
    rg.used |= uint64_t{1} << page;
    if ((key & 1) || rg.debug) setDebug(rg, page, bit, (key & 1) != 0);
  }
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
  static constexpr uint64_t kPageMask = MarkSnapshot::kPageBytes - 1;
  static constexpr int kRegionShift = 18;  // 256 KiB
  static constexpr uint32_t kPages = 64;   // pages a region
  // A page's bits, one cache line: bit i for a tracked object recorded at page + 8 * i.
  struct alignas(64) Bits {
    uint64_t w[8];
  };
  struct Region {
    uint64_t number = 0;  // address >> kRegionShift
    uint64_t used = 0;    // bit p: page p may have live bits (cleared by sweeps)
    Bits live[kPages] = {};
    std::unique_ptr<Bits[]> debug;  // kPages entries, once a debug object was tracked here
  };
  // The region's entry; created when `create`, else null when absent.
  Region* regionOf(uint64_t number, bool create) {
    const Recent& c = recent_[number & (kRecent - 1)];
    return c.number == number ? c.region : findRegion(number, create);
  }
  Region* findRegion(uint64_t number, bool create);
  static void setDebug(Region& rg, uint32_t page, uint64_t bit, bool on);
  void reindex();

  std::vector<std::unique_ptr<Region>> regions_;  // in no order
  std::vector<uint32_t> index_;  // open addressing by region number: 1 + entry, 0 empty
  struct Recent {
    uint64_t number = ~uint64_t{0};  // never a region number: empty
    Region* region = nullptr;
  };
  static constexpr size_t kRecent = 8;
  Recent recent_[kRecent];  // by the region number's low bits; emptied when regions go
  size_t count_ = 0;
  std::vector<uint32_t> slots_;   // sweep's snapshot index (reused)
  std::vector<Region*> order_;    // sweep's regions by address (reused)
  Stats stats_;
};

}  // namespace heapman::rec
