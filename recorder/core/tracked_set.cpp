// The writer's tracked live set and its sweep against a mark-bit snapshot (tracked_set.h).
#include "tracked_set.h"

#include <algorithm>

#include "recorder.h"

namespace heapman::rec {

namespace {

constexpr uint64_t kPageMask = MarkSnapshot::kPageBytes - 1;

inline size_t hashSlot(uint64_t page, int shift) {
  return static_cast<size_t>(((page >> 12) * 0x9E3779B97F4A7C15ull) >> shift);
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

TrackedSet::Page* TrackedSet::findPage(uint64_t page, bool create) {
  if (index_.empty()) {
    if (!create) return nullptr;
    index_.assign(64, 0);
  }
  size_t mask = index_.size() - 1;
  int shift = shiftFor(index_.size());
  size_t h = hashSlot(page, shift);
  while (index_[h]) {
    if (pages_[index_[h] - 1].page == page) {
      recent_[(page >> 12) & (kRecent - 1)] = {page, index_[h] - 1};
      return &pages_[index_[h] - 1];
    }
    h = (h + 1) & mask;
  }
  if (!create) return nullptr;
  pages_.push_back(Page{page, {}, {}});
  auto entry = static_cast<uint32_t>(pages_.size() - 1);
  if (pages_.size() * 2 > index_.size()) {
    reindex();  // grows the index (at most half full), the new page included
  } else {
    index_[h] = entry + 1;
  }
  recent_[(page >> 12) & (kRecent - 1)] = {page, entry};
  return &pages_[entry];
}

void TrackedSet::reindex() {
  size_t capacity = 64;
  while (capacity < pages_.size() * 2) capacity *= 2;
  index_.assign(capacity, 0);
  size_t mask = capacity - 1;
  int shift = shiftFor(capacity);
  for (uint32_t i = 0; i < pages_.size(); ++i) {
    size_t h = hashSlot(pages_[i].page, shift);
    while (index_[h]) h = (h + 1) & mask;
    index_[h] = i + 1;
  }
  for (Recent& c : recent_) c = Recent{};
}

void TrackedSet::add(uint64_t key) {
  uint64_t address = key & ~uint64_t{1};
  Page* p = pageOf(address & ~kPageMask, true);
  uint64_t bit = (address & kPageMask) >> 3;
  uint64_t m = uint64_t{1} << (bit & 63);
  count_ += (p->live[bit >> 6] & m) == 0;
  p->live[bit >> 6] |= m;
  if (key & 1)
    p->debug[bit >> 6] |= m;
  else
    p->debug[bit >> 6] &= ~m;
}

void TrackedSet::noteFree(uint64_t key) {
  uint64_t address = key & ~uint64_t{1};
  Page* p = pageOf(address & ~kPageMask, false);
  if (!p) return;
  uint64_t bit = (address & kPageMask) >> 3;
  uint64_t m = uint64_t{1} << (bit & 63);
  count_ -= (p->live[bit >> 6] & m) != 0;
  p->live[bit >> 6] &= ~m;
  p->debug[bit >> 6] &= ~m;
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
    size_t h = hashSlot(snap[i].page, shift);
    while (slots_[h] && snap[slots_[h] - 1].page != snap[i].page) h = (h + 1) & mask;
    if (!slots_[h]) {
      slots_[h] = i + 1;
    } else {
      for (int w = 0; w < 8; ++w) snap[slots_[h] - 1].bits[w] |= snap[i].bits[w];
    }
  }
  auto marked = [&](uint64_t page) -> const uint64_t* {
    size_t h = hashSlot(page, shift);
    while (slots_[h]) {
      if (snap[slots_[h] - 1].page == page) return snap[slots_[h] - 1].bits;
      h = (h + 1) & mask;
    }
    return nullptr;
  };
  static constexpr uint64_t kNone[8] = {};
  order_.resize(pages_.size());
  for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(),
            [&](uint32_t x, uint32_t y) { return pages_[x].page < pages_[y].page; });
  bool emptied = false;
  for (uint32_t i : order_) {
    Page& p = pages_[i];
    const uint64_t* m = marked(p.page);
    if (!m) m = kNone;
    uint64_t left = 0;
    for (int w = 0; w < 8; ++w) {
      uint64_t live = p.live[w];
      if (!live) continue;
      uint64_t dead = live & ~p.debug[w] & ~m[w];
      // Debug objects: their mark bit is at their start, maybe on another page.
      for (uint64_t d = live & p.debug[w]; d; d &= d - 1) {
        uint64_t address = p.page + 8 * (64 * static_cast<uint64_t>(w) + __builtin_ctzll(d));
        uint64_t start = address - debugOffset;
        const uint64_t* sm = ((start ^ p.page) & ~kPageMask) == 0 ? m : marked(start & ~kPageMask);
        if (!sm || !test(sm, (start & kPageMask) >> 3)) dead |= d & -d;
      }
      for (uint64_t d = dead; d; d &= d - 1)
        collected.push_back(p.page + 8 * (64 * static_cast<uint64_t>(w) + __builtin_ctzll(d)));
      count_ -= static_cast<size_t>(bitCount(dead));
      p.live[w] = live & ~dead;
      p.debug[w] &= ~dead;
      left |= p.live[w];
    }
    if (!left) emptied = true;
  }
  // Pages with nothing left go, so that the set follows the heap down as well as up.
  if (emptied) {
    size_t kept = 0;
    for (const Page& p : pages_) {
      uint64_t any = 0;
      for (uint64_t w : p.live) any |= w;
      if (any) pages_[kept++] = p;
    }
    pages_.resize(kept);
    reindex();
  }
  stats_.sweeps++;
  stats_.ns += monotonicNs() - t0;
}

}  // namespace heapman::rec
