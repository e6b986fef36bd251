// The encoder's bytes for fixed record streams, pinned: LogWriter's lookups (the live-address
// map, the dictionary, the LIFO and ring searches) are its own business, but which record each
// event becomes is the format's, so a change that makes the writer faster must leave these
// hashes alone. The streams reach every allocation coding: LIFO top and depth (a LIFO that
// filled past its 128 entries, reuse far down), sequential, bump, ring (a block freed in one size
// class and reused in another), near and explicit addresses, frees by ordinal and by address, in
// chunks small enough that the model resets often, and addresses 1 MiB apart (one slot of the
// address map's windows).
#include <xxhash.h>

#include "test_support.h"

using namespace hmtest;

namespace {

// A malloc-like heap: per-class free lists taken at any depth, a bump pointer, blocks that move
// between classes, windows 1 MiB apart, and collected allocations in between.
std::vector<Record> encoderWorkout(uint64_t seed, size_t ops) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  auto below = [&](uint64_t n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x % n;
  };
  constexpr uint64_t kActual[] = {24, 40, 56, 72, 136, 264, 1040};
  constexpr size_t kClasses = std::size(kActual);
  std::vector<uint64_t> freed[kClasses];
  struct Live {
    uint64_t address;
    size_t cls;
  };
  std::vector<Live> live;
  uint64_t bump[4] = {0x5555'0000'0000ull, 0x5555'0010'0000ull, 0x5555'0020'0000ull,
                      0x5555'0030'0000ull};  // 1 MiB apart
  uint64_t gcBump = 0x7f00'0000'0000ull;
  uint64_t seq = 1, t = 0;
  std::vector<Record> out;
  auto e = [&] {
    if (below(16) == 0) t += 10'000;
    return EventCommon{seq++, t, static_cast<uint32_t>(below(50) == 0)};
  };
  for (size_t i = 0; i < ops; ++i) {
    uint64_t r = below(100);
    if (r < 8) {  // a collected object
      uint64_t size = 16 + 16 * below(6);
      out.push_back(Alloc{e(), HeapKind::kGcNormal, gcBump, size, size, 1 + uint32_t(below(3)),
                          uint32_t(below(4))});
      gcBump += below(4) == 0 ? size + 64 : size;
    } else if (r < 52 || live.empty()) {
      size_t c = below(kClasses);
      uint64_t address;
      std::vector<uint64_t>& f = freed[c];
      uint64_t how = below(10);
      if (!f.empty() && how < 6) {  // reuse: mostly the last freed, else anywhere down the list
        size_t j = how < 4 ? 0 : below(f.size());
        address = f[f.size() - 1 - j];
        f.erase(f.end() - 1 - static_cast<ptrdiff_t>(j));
      } else if (how == 6 && !freed[(c + 1) % kClasses].empty()) {  // a block of another class
        std::vector<uint64_t>& g = freed[(c + 1) % kClasses];
        address = g.back();
        g.pop_back();
      } else {
        uint64_t& b = bump[below(4)];
        b += below(8) == 0 ? 16 * below(64) : 0;
        address = b;
        b += kActual[c] + 8;
      }
      uint64_t size = kActual[c] - below(16);
      out.push_back(Alloc{e(), HeapKind::kNative, address, size, kActual[c],
                          1 + uint32_t(below(20)), 0});
      live.push_back({address, c});
    } else {
      // Frees: mostly recent objects, sometimes old ones; now and then 200 in a row of one
      // class (its LIFO overflows).
      size_t n = below(300) == 0 ? 200 : 1;
      for (size_t k = 0; k < n && !live.empty(); ++k) {
        size_t at = below(3) ? live.size() - 1 - below(std::min<size_t>(live.size(), 8))
                             : below(live.size());
        Live l = live[at];
        live.erase(live.begin() + static_cast<ptrdiff_t>(at));
        out.push_back(Free{e(), HeapKind::kNative, l.address});
        freed[l.cls].push_back(l.address);
      }
    }
  }
  return out;
}

uint64_t hashOf(const std::vector<Record>& records, uint32_t chunkBytes) {
  WriterOptions o;
  o.recordsChunkBytes = chunkBytes;
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    for (const Record& r : records) w.write(r);
  });
  requireSameRecords(decodeAll(LogReader::fromBytes(log)), records);
  return XXH3_64bits(log.data(), log.size());
}

}  // namespace

TEST_CASE("writer bytes: fixed streams encode to the same bytes as before", "[writer]") {
  const std::vector<Record> workout = encoderWorkout(1, 400'000);
  CHECK(hashOf(workout, 1u << 20) == 0xc1911be2f984d875ull);
  CHECK(hashOf(workout, 16u << 10) == 0x00e3e1ffa12289d6ull);
  CHECK(hashOf(churn(5, 200'000), 1u << 20) == 0x049f6bd6d340399cull);
}
