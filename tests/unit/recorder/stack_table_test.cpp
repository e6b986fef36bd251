// The writer's stack table (recorder/core/interning.h): stacks interned as a trie, ids that never
// change, and its caches: a stack answered from the recent-stack cache or the hashed one gets the
// id the trie gave it, also when two stacks share a cache slot.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "interning.h"

namespace {

using heapman::log::Header;
using heapman::log::LogWriter;
using heapman::log::MemorySink;
using heapman::rec::writer::StackTable;

uint32_t intern(StackTable& t, LogWriter& log, const std::vector<uint64_t>& frames) {
  return t.intern(frames.data(), static_cast<uint32_t>(frames.size()), log);
}

}  // namespace

TEST_CASE("stack table: stacks one recent-cache slot holds in turn keep their own ids") {
  MemorySink sink;
  LogWriter log(sink, Header{});
  StackTable t;
  // Leaf first. The same leaf, next frame, outermost frame and depth (the recent cache's slot),
  // one frame apart in the middle.
  const std::vector<uint64_t> a{0x401000, 0x401100, 0x402000, 0x403000, 0x404000};
  const std::vector<uint64_t> b{0x401000, 0x401100, 0x402222, 0x403000, 0x404000};
  // Trie nodes from the outermost frame: a's 1..5, then b's own 6 (0x402222), 7, 8.
  CHECK(intern(t, log, a) == 5);
  CHECK(intern(t, log, b) == 8);
  CHECK(t.stats.nodes == 8);
  for (int round = 0; round < 3; ++round) {
    CHECK(intern(t, log, a) == 5);
    CHECK(intern(t, log, b) == 8);
    CHECK(intern(t, log, b) == 8);
  }
  CHECK(t.stats.nodes == 8);
  CHECK(t.stats.walked == 2);  // each built once; every later intern from a cache

  // A shorter stack with a's leaf and outermost frame, and one deeper than the recent cache keeps.
  const std::vector<uint64_t> c{0x401000, 0x404000};
  std::vector<uint64_t> deep;
  for (uint64_t i = 0; i < 40; ++i) deep.push_back(0x500000 + 16 * i);
  CHECK(intern(t, log, c) == 9);    // a new leaf 0x401000 under a's outermost node 1
  CHECK(intern(t, log, deep) == 49);  // 40 new nodes, 10 .. 49
  CHECK(intern(t, log, deep) == 49);
  CHECK(intern(t, log, c) == 9);
  CHECK(intern(t, log, a) == 5);
  CHECK(t.stats.nodes == 49);
  CHECK(intern(t, log, {}) == 0);
}
