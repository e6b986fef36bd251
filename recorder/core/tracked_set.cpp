// The writer's tracked live set and its sweep against a mark-bit snapshot (tracked_set.h).
#include "tracked_set.h"

#include <algorithm>
#include <cstring>

#include "recorder.h"

namespace heapman::rec {

namespace {

inline size_t hashSlot(uint64_t k, int shift) {
  return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift);
}

}  // namespace

void TrackedSet::noteFree(uint64_t key) {
  freed_.push_back({key, live_.size()});
  // Many frees and no collection (GC_disable): apply them now and then, so memory stays bounded.
  if (freed_.size() > (1u << 20) && freed_.size() > live_.size() / 4) applyFrees();
}

// The frees sorted by (key, mark) and an open-addressing index from key to its first pair; each
// birth of a freed key takes the first pending free of that key whose mark lies above it. Frees
// whose mark lies at or below it are stale (the object was never tracked) and dropped.
void TrackedSet::applyFrees() {
  size_t nf = freed_.size();
  if (nf == 0) return;
  std::sort(freed_.begin(), freed_.end(), [](const Pair& x, const Pair& y) {
    return x.key != y.key ? x.key < y.key : x.mark < y.mark;
  });
  int bits = 4;
  while ((size_t{1} << bits) < nf * 2) ++bits;
  size_t cap = size_t{1} << bits, mask = cap - 1;
  int shift = 64 - bits;
  freeIndex_.assign(cap, 0);  // slot: index of the key's next pending pair + 1 (0: empty)
  for (size_t i = 0; i < nf; ++i) {
    if (i && freed_[i].key == freed_[i - 1].key) continue;
    size_t h = hashSlot(freed_[i].key, shift);
    while (freeIndex_[h]) h = (h + 1) & mask;
    freeIndex_[h] = i + 1;
  }
  size_t out = 0;
  for (size_t i = 0, n = live_.size(); i < n; ++i) {
    uint64_t k = live_[i];
    size_t h = hashSlot(k, shift);
    while (freeIndex_[h] && freed_[freeIndex_[h] - 1].key != k) h = (h + 1) & mask;
    bool freed = false;
    if (freeIndex_[h]) {
      size_t at = freeIndex_[h] - 1;
      while (at < nf && freed_[at].key == k && freed_[at].mark <= i) ++at;  // stale frees
      if (at < nf && freed_[at].key == k) {
        freed = true;
        ++at;
      }
      freeIndex_[h] = at + 1;  // the key's next pending free (past its pairs: harmless)
    }
    if (!freed) live_[out++] = k;
  }
  live_.resize(out);
  freed_.clear();
}

void TrackedSet::sweep(MarkSnapshot& marks, uint64_t debugOffset,
                       std::vector<uint64_t>& collected) {
  uint64_t t0 = monotonicNs();
  applyFrees();
  // Page index: open addressing from a page's address to 1 + its entry. A page listed twice
  // (never, the way the hooks build snapshots) has its bits merged into the first entry.
  MarkSnapshot::Page* pages = marks.pages();
  int bits = 4;
  while ((size_t{1} << bits) < size_t{marks.count} * 2) ++bits;
  size_t mask = (size_t{1} << bits) - 1;
  int shift = 64 - bits;
  slots_.assign(mask + 1, 0);
  for (uint32_t i = 0; i < marks.count; ++i) {
    size_t h = hashSlot(pages[i].page >> 12, shift);
    while (slots_[h] && pages[slots_[h] - 1].page != pages[i].page) h = (h + 1) & mask;
    if (!slots_[h]) {
      slots_[h] = i + 1;
    } else {
      for (int w = 0; w < 8; ++w) pages[slots_[h] - 1].bits[w] |= pages[i].bits[w];
    }
  }
  auto find = [&](uint64_t page) -> const uint64_t* {
    size_t h = hashSlot(page >> 12, shift);
    while (slots_[h]) {
      if (pages[slots_[h] - 1].page == page) return pages[slots_[h] - 1].bits;
      h = (h + 1) & mask;
    }
    return nullptr;
  };
  // One pass: the collected go to `collected`, the survivors move down in place. Consecutive
  // births mostly share a page: its bits are looked up once for them.
  uint64_t lastPage = UINT64_MAX;
  const uint64_t* pageBits = nullptr;
  size_t kept = 0, n = live_.size();
  for (size_t i = 0; i < n; ++i) {
    uint64_t key = live_[i];
    uint64_t address = key & ~uint64_t{1};
    uint64_t start = (key & 1) ? address - debugOffset : address;
    uint64_t page = start & ~(MarkSnapshot::kPageBytes - 1);
    if (page != lastPage) {
      lastPage = page;
      pageBits = find(page);
    }
    uint64_t bit = (start & (MarkSnapshot::kPageBytes - 1)) >> 3;
    if (pageBits && ((pageBits[bit >> 6] >> (bit & 63)) & 1))
      live_[kept++] = key;
    else
      collected.push_back(address);
  }
  live_.resize(kept);
  stats_.sweeps++;
  stats_.objects += n;
  stats_.ns += monotonicNs() - t0;
}

}  // namespace heapman::rec
