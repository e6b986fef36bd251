// The chunk model's LIFO and ring searches (chunk_model.h, lifoFind and ringFind): the nearest
// position of an address, as an ordered scan from the most recent entry would find it, whatever
// the slots hold outside the valid range and wherever the rings wrap.
#include <cstdint>
#include <iterator>

#include <catch2/catch.hpp>

#include "heapman/logformat/chunk_model.h"

using heapman::log::ChunkModel;
using heapman::log::kRingSize;

namespace {

// The definition: the smallest j in [1, depth) with lifoAt(s, j) == address, or -1.
int lifoScan(const ChunkModel::SizeClass& s, uint64_t address) {
  for (uint32_t j = 1; j < s.depth; ++j)
    if (ChunkModel::lifoAt(s, j) == address) return static_cast<int>(j);
  return -1;
}

int ringScan(const ChunkModel& m, uint64_t address) {
  for (uint32_t k = 0; k < m.ringFilled(); ++k)
    if (m.ringAt(k) == address) return static_cast<int>(k);
  return -1;
}

}  // namespace

TEST_CASE("chunk model: lifoFind takes the most recent of an address's entries") {
  ChunkModel::SizeClass s;
  // top 5, depth 100: valid slots 5 - 1 - j for j < 100, wrapping below 0 to 127 .. 33.
  s.top = 5;
  s.depth = 100;
  const uint64_t x = 0x7000'1230;
  s.lifo[2] = x;    // j = 2
  s.lifo[120] = x;  // j = 12, in an earlier block of the array than slot 2's
  CHECK(ChunkModel::lifoFind(s, x) == 2);
  s.lifo[2] = 0;
  CHECK(ChunkModel::lifoFind(s, x) == 12);
  s.lifo[4] = x;  // j = 0, the top: not a deep entry
  CHECK(ChunkModel::lifoFind(s, x) == 12);
  s.lifo[120] = 0;
  CHECK(ChunkModel::lifoFind(s, x) == -1);
  s.lifo[10] = x;  // j = 122: outside the 100 valid entries (a stale slot)
  CHECK(ChunkModel::lifoFind(s, x) == -1);
  s.depth = 128;
  CHECK(ChunkModel::lifoFind(s, x) == 122);
  s.depth = 1;
  CHECK(ChunkModel::lifoFind(s, x) == -1);
}

TEST_CASE("chunk model: lifoFind and ringFind agree with ordered scans") {
  uint64_t r = 88172645463325252ull;
  auto below = [&](uint64_t n) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    return r % n;
  };
  const uint64_t pool[] = {0x1000, 0x1010, 0x1020, 0x2000, 0x2040, 0x3000};  // few: duplicates
  for (int round = 0; round < 2000; ++round) {
    ChunkModel::SizeClass s;
    for (uint64_t& slot : s.lifo) slot = below(3) == 0 ? 0 : pool[below(std::size(pool))];
    s.top = static_cast<uint32_t>(below(1000));
    s.depth = static_cast<uint32_t>(below(ChunkModel::kLifoDepth + 1));
    ChunkModel m;
    for (uint64_t i = below(3 * kRingSize); i > 0; --i)
      m.onFreeAddress(pool[below(std::size(pool))]);
    for (uint64_t x : pool) {
      INFO("round " << round << " address " << x << " top " << s.top << " depth " << s.depth);
      CHECK(ChunkModel::lifoFind(s, x) == lifoScan(s, x));
      CHECK(m.ringFind(x) == ringScan(m, x));
    }
  }
}
