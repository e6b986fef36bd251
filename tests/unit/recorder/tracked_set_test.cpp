// The writer's tracked set (recorder/core/tracked_set.h): which objects a sweep reports collected,
// given births, explicit frees and the collector's mark bits, object by object.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "tracked_set.h"

namespace {

using heapman::rec::MarkSnapshot;
using heapman::rec::TrackedSet;

// A snapshot in mmap'd memory, as the hooks build it: pages in the order given, each with the
// bits of the object starts marked there.
class Snapshot {
 public:
  explicit Snapshot(const std::vector<std::pair<uint64_t, std::vector<uint64_t>>>& pages) {
    bytes_ = MarkSnapshot::bytesFor(pages.size());
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    snap_ = static_cast<MarkSnapshot*>(p);
    snap_->mapLength = bytes_;
    snap_->count = static_cast<uint32_t>(pages.size());
    for (size_t i = 0; i < pages.size(); ++i) {
      MarkSnapshot::Page& pg = snap_->pages()[i];
      pg.page = pages[i].first;
      std::memset(pg.bits, 0, sizeof pg.bits);
      for (uint64_t object : pages[i].second) {
        REQUIRE((object & ~uint64_t{4095}) == pg.page);
        uint64_t bit = (object & 4095) >> 3;
        pg.bits[bit >> 6] |= uint64_t{1} << (bit & 63);
      }
    }
  }
  ~Snapshot() { munmap(snap_, bytes_); }
  MarkSnapshot& operator*() { return *snap_; }

 private:
  MarkSnapshot* snap_ = nullptr;
  size_t bytes_ = 0;
};

std::vector<uint64_t> sweep(TrackedSet& set, const std::vector<std::pair<uint64_t, std::vector<uint64_t>>>& marked,
                            uint64_t debugOffset = 0) {
  Snapshot snap(marked);
  std::vector<uint64_t> collected;
  set.sweep(*snap, debugOffset, collected);
  CHECK(std::is_sorted(collected.begin(), collected.end()));  // the order the log stores
  CHECK(std::adjacent_find(collected.begin(), collected.end()) == collected.end());
  return collected;
}

constexpr uint64_t kPageA = 0x7f0000010000, kPageB = 0x7f0000011000, kPageC = 0x7f0000200000;

}  // namespace

TEST_CASE("tracked set: the objects a snapshot does not mark are collected, once", "[recorder][tracked]") {
  TrackedSet set;
  for (uint64_t i = 0; i < 8; ++i) set.add(kPageA + 32 * i);  // 8 objects of 32 bytes
  for (uint64_t i = 0; i < 4; ++i) set.add(kPageB + 512 * i);
  set.add(kPageC);  // a large object: its mark bit is its first page's bit 0
  REQUIRE(set.size() == 13);

  // Collection 1 keeps the even objects of page A, none of page B (page absent: freed whole, or
  // nothing marked there), and the large object.
  std::vector<uint64_t> got = sweep(set, {{kPageC, {kPageC}},
                                          {kPageA, {kPageA, kPageA + 64, kPageA + 128, kPageA + 192}}});
  std::vector<uint64_t> expected = {kPageA + 32, kPageA + 96, kPageA + 160, kPageA + 224,
                                    kPageB, kPageB + 512, kPageB + 1024, kPageB + 1536};
  CHECK(got == expected);
  CHECK(set.size() == 5);

  // Collection 2 marks everything left (and an untracked object): nothing collected.
  CHECK(sweep(set, {{kPageA, {kPageA, kPageA + 8, kPageA + 64, kPageA + 128, kPageA + 192}},
                    {kPageC, {kPageC}}})
            .empty());
  // Collection 3 marks only objects that are not tracked: the rest go, each reported once.
  got = sweep(set, {{kPageA, {kPageA + 32}}});
  CHECK(got == std::vector<uint64_t>{kPageA, kPageA + 64, kPageA + 128, kPageA + 192, kPageC});
  CHECK(set.size() == 0);
  CHECK(sweep(set, {}).empty());
}

TEST_CASE("tracked set: an explicit free removes the birth before it, not a later one at the same address",
          "[recorder][tracked]") {
  TrackedSet set;
  const uint64_t x = kPageA + 64, y = kPageA + 128;
  set.add(x);
  set.add(y);
  set.noteFree(x);   // x freed ...
  set.add(x);        // ... and its address handed out again
  set.noteFree(kPageB + 8);  // a free of an object never tracked (libgc's own tables)
  // Nothing marked: exactly the two live objects die (the freed one is not reported).
  std::vector<uint64_t> got = sweep(set, {});
  CHECK(got == std::vector<uint64_t>{x, y});
  CHECK(set.size() == 0);

  // A free noted before the birth of the same address does not touch that birth.
  set.noteFree(y);
  set.add(y);
  CHECK(sweep(set, {{kPageA, {y}}}).empty());
  CHECK(set.size() == 1);
  set.noteFree(y);
  CHECK(sweep(set, {}).empty());  // freed, not collected
  CHECK(set.size() == 0);
}

TEST_CASE("tracked set: a debug object's mark bit is its start's, below the recorded address",
          "[recorder][tracked]") {
  TrackedSet set;
  const uint64_t offset = 32;                  // the collector's debug header
  const uint64_t kept = kPageA + 4096 - 64;    // start; recorded at kept + 32
  const uint64_t gone = kPageB;                // start; recorded at gone + 32
  set.add((kept + offset) | 1);
  set.add((gone + offset) | 1);
  std::vector<uint64_t> got = sweep(set, {{kPageA, {kept}}, {kPageB, {gone + offset}}}, offset);
  // `gone` has a mark bit at its recorded address only, which is not where the collector keeps it.
  CHECK(got == std::vector<uint64_t>{gone + offset});
  CHECK(set.size() == 1);
  set.noteFree((kept + offset) | 1);
  CHECK(sweep(set, {}, offset).empty());

  // A debug object recorded on the page after its start: tested at its start all the same.
  const uint64_t across = kPageB - 16;  // start on page A; recorded at kPageB + 16
  set.add((across + offset) | 1);
  set.add(kPageB + 64);  // a plain object on the recorded address's page
  CHECK(sweep(set, {{kPageA, {across}}, {kPageB, {kPageB + 64}}}, offset).empty());
  CHECK(set.size() == 2);
  CHECK(sweep(set, {{kPageB, {across + offset, kPageB + 64}}}, offset) ==
        std::vector<uint64_t>{across + offset});
  // The same address as a plain object again: its own bit counts now.
  set.add(across + offset);
  CHECK(sweep(set, {{kPageB, {across + offset, kPageB + 64}}}, offset).empty());
  CHECK(set.size() == 2);
}

TEST_CASE("tracked set: a page listed twice counts with both entries' bits", "[recorder][tracked]") {
  TrackedSet set;
  set.add(kPageA);
  set.add(kPageA + 16);
  set.add(kPageA + 32);
  std::vector<uint64_t> got = sweep(set, {{kPageA, {kPageA}}, {kPageB, {}}, {kPageA, {kPageA + 32}}});
  CHECK(got == std::vector<uint64_t>{kPageA + 16});
}

TEST_CASE("tracked set: a large set swept against a random snapshot matches a reference",
          "[recorder][tracked]") {
  // 200 000 objects of 16..256 bytes over 4 096 pages in shuffled birth order, half of them
  // marked at random, with frees and re-births mixed in: the sweep equals a std::set replay.
  TrackedSet set;
  std::set<uint64_t> live;
  std::map<uint64_t, std::vector<uint64_t>> marks;
  uint64_t state = 12345;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  std::vector<uint64_t> addresses;
  for (uint64_t page = 0; page < 4096; ++page) {
    uint64_t base = 0x7e0000000000 + (page * 3 + page % 3) * 4096;  // gaps between pages
    uint64_t size = 16 << (page % 5);
    for (uint64_t off = 0; off + size <= 4096 && addresses.size() < 200000; off += size)
      addresses.push_back(base + off);
  }
  for (size_t i = addresses.size(); i > 1; --i) std::swap(addresses[i - 1], addresses[next() % i]);
  for (uint64_t a : addresses) {
    set.add(a);
    live.insert(a);
    if (next() % 50 == 0) {  // an explicit free, sometimes followed by a new object there
      set.noteFree(a);
      live.erase(a);
      if (next() % 2) {
        set.add(a);
        live.insert(a);
      }
    }
  }
  std::vector<std::pair<uint64_t, std::vector<uint64_t>>> pages;
  std::vector<uint64_t> expected;
  for (uint64_t a : live) {
    if (next() % 2)
      marks[a & ~uint64_t{4095}].push_back(a);
    else
      expected.push_back(a);
  }
  for (auto& [page, objects] : marks) pages.push_back({page, objects});
  std::reverse(pages.begin(), pages.end());  // any order
  std::vector<uint64_t> got = sweep(set, pages);
  CHECK(got.size() == expected.size());
  CHECK(got == expected);
  CHECK(set.size() == live.size() - expected.size());
}
