// The writer's tracked live set and its sweep against a mark-bit snapshot (tracked_set.h).
#include "tracked_set.h"

#include <algorithm>

#include "recorder.h"

namespace heapman::rec {

namespace {

inline size_t hashSlot(uint64_t key, int shift) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
}

inline int shiftFor(size_t capacity) { return 64 - __builtin_ctzll(capacity); }

// Set bits, inline: the portable build has no popcnt instruction and __builtin_popcountll
// becomes a call into libgcc, once per swept word.
inline uint64_t bitCount(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return (x * 0x0101010101010101ull) >> 56;
}

// Bit `bit` of a page's 512-bit map.
inline bool test(const uint64_t* bits, uint64_t bit) { return (bits[bit >> 6] >> (bit & 63)) & 1; }

}  // namespace

TrackedSet::Region* TrackedSet::findRegion(uint64_t number, bool create) {
  if (!index_.empty()) {
    size_t mask = index_.size() - 1;
    for (size_t h = hashSlot(number, shiftFor(index_.size())); index_[h]; h = (h + 1) & mask) {
      Region* rg = regions_[index_[h] - 1].get();
      if (rg->number == number) {
        recent_[number & (kRecent - 1)] = {number, rg};
        return rg;
      }
    }
  }
  if (!create) return nullptr;
  regions_.push_back(std::make_unique<Region>());
  Region* rg = regions_.back().get();
  rg->number = number;
  if (regions_.size() * 2 > index_.size()) {
    reindex();  // grows the index (at most half full), the new region included
  } else {
    size_t mask = index_.size() - 1;
    size_t h = hashSlot(number, shiftFor(index_.size()));
    while (index_[h]) h = (h + 1) & mask;
    index_[h] = static_cast<uint32_t>(regions_.size());
  }
  recent_[number & (kRecent - 1)] = {number, rg};
  return rg;
}

void TrackedSet::reindex() {
  size_t capacity = 16;
  while (capacity < regions_.size() * 2) capacity *= 2;
  index_.assign(capacity, 0);
  size_t mask = capacity - 1;
  int shift = shiftFor(capacity);
  for (uint32_t i = 0; i < regions_.size(); ++i) {
    size_t h = hashSlot(regions_[i]->number, shift);
    while (index_[h]) h = (h + 1) & mask;
    index_[h] = i + 1;
  }
  for (Recent& c : recent_) c = Recent{};
}

void TrackedSet::setDebug(Region& rg, uint32_t page, uint64_t bit, bool on) {
  if (!rg.debug) {
    if (!on) return;
    rg.debug = std::make_unique<Bits[]>(kPages);
  }
  uint64_t m = uint64_t{1} << (bit & 63);
  if (on)
    rg.debug[page].w[bit >> 6] |= m;
  else
    rg.debug[page].w[bit >> 6] &= ~m;
}

void TrackedSet::noteFree(uint64_t key) {
  uint64_t address = key & ~uint64_t{1};
  Region* rg = regionOf(address >> kRegionShift, false);
  if (!rg) return;
  uint32_t page = (address >> 12) & (kPages - 1);
  uint64_t bit = (address & kPageMask) >> 3;
  uint64_t m = uint64_t{1} << (bit & 63);
  uint64_t& word = rg->live[page].w[bit >> 6];
  count_ -= (word & m) != 0;
  word &= ~m;
  if (rg->debug) rg->debug[page].w[bit >> 6] &= ~m;
}

void TrackedSet::sweep(MarkSnapshot& marks, uint64_t debugOffset,
                       std::vector<uint64_t>& collected) {
  uint64_t t0 = monotonicNs();
  stats_.objects += count_;
  // Snapshot index: open addressing from a page's address to 1 + its entry. A page listed twice
  // (never, the way the hooks build snapshots) has its bits merged into the first entry.
  MarkSnapshot::Page* snap = marks.pages();
  size_t capacity = 16;
  while (capacity < size_t{marks.count} * 2) capacity *= 2;
  size_t mask = capacity - 1;
  int shift = shiftFor(capacity);
  slots_.assign(capacity, 0);
  for (uint32_t i = 0; i < marks.count; ++i) {
    size_t h = hashSlot(snap[i].page >> 12, shift);
    while (slots_[h] && snap[slots_[h] - 1].page != snap[i].page) h = (h + 1) & mask;
    if (!slots_[h]) {
      slots_[h] = i + 1;
    } else {
      for (int w = 0; w < 8; ++w) snap[slots_[h] - 1].bits[w] |= snap[i].bits[w];
    }
  }
  auto marked = [&](uint64_t page) -> const uint64_t* {
    size_t h = hashSlot(page >> 12, shift);
    while (slots_[h]) {
      if (snap[slots_[h] - 1].page == page) return snap[slots_[h] - 1].bits;
      h = (h + 1) & mask;
    }
    return nullptr;
  };
  static constexpr uint64_t kNone[8] = {};
  order_.clear();
  for (const auto& rg : regions_) order_.push_back(rg.get());
  std::sort(order_.begin(), order_.end(),
            [](const Region* x, const Region* y) { return x->number < y->number; });
  bool emptied = false;
  for (Region* rg : order_) {
    for (uint64_t pages = rg->used; pages; pages &= pages - 1) {
      const uint32_t p = static_cast<uint32_t>(__builtin_ctzll(pages));
      const uint64_t page = rg->number << kRegionShift | uint64_t{p} << 12;
      uint64_t* live = rg->live[p].w;
      uint64_t* debug = rg->debug ? rg->debug[p].w : nullptr;
      const uint64_t* dbg = debug ? debug : kNone;
      const uint64_t* m = marked(page);
      if (!m) m = kNone;
      uint64_t left = 0;
      for (int w = 0; w < 8; ++w) {
        if (!live[w]) continue;
        uint64_t dead = live[w] & ~dbg[w] & ~m[w];
        // Debug objects: their mark bit is at their start, maybe on another page.
        for (uint64_t d = live[w] & dbg[w]; d; d &= d - 1) {
          uint64_t address = page + 8 * (64 * static_cast<uint64_t>(w) + __builtin_ctzll(d));
          uint64_t start = address - debugOffset;
          const uint64_t* sm = ((start ^ page) & ~kPageMask) == 0 ? m : marked(start & ~kPageMask);
          if (!sm || !test(sm, (start & kPageMask) >> 3)) dead |= d & -d;
        }
        for (uint64_t d = dead; d; d &= d - 1)
          collected.push_back(page + 8 * (64 * static_cast<uint64_t>(w) + __builtin_ctzll(d)));
        count_ -= static_cast<size_t>(bitCount(dead));
        live[w] &= ~dead;
        if (debug) debug[w] &= ~dead;
        left |= live[w];
      }
      if (!left) rg->used &= ~(uint64_t{1} << p);
    }
    if (!rg->used) emptied = true;
  }
  // Regions with nothing left go, so that the set follows the heap down as well as up.
  if (emptied) {
    regions_.erase(std::remove_if(regions_.begin(), regions_.end(),
                                  [](const std::unique_ptr<Region>& rg) { return !rg->used; }),
                   regions_.end());
    reindex();
  }
  stats_.sweeps++;
  stats_.ns += monotonicNs() - t0;
}

}  // namespace heapman::rec
