// AddressMap against a linear search: objects of many sizes in several 1 GiB regions, probed at
// every boundary and at random addresses, with and without interior pointers.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "heapman/graph/address_map.h"

using heapman::graph::AddressMap;

namespace {

struct Obj {
  uint64_t address, length;
};

uint32_t linear(const std::vector<Obj>& objs, uint64_t p, bool interior) {
  for (uint32_t i = 0; i < objs.size(); ++i)
    if (interior ? (p >= objs[i].address && p < objs[i].address + objs[i].length)
                 : p == objs[i].address)
      return i;
  return AddressMap::kNone;
}

}  // namespace

TEST_CASE("address map finds the object containing an address as a linear search does", "[graph]") {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 20; ++round) {
    std::vector<Obj> objs;
    uint64_t bases[] = {0x7f0000000000, 0x55aa00001000, 0x100000};
    std::sort(std::begin(bases), std::end(bases));
    for (uint64_t base : bases) {
      uint64_t a = base + (rng() % 64) * 16;
      int count = 200 + static_cast<int>(rng() % 300);
      for (int i = 0; i < count; ++i) {
        uint64_t len;
        switch (rng() % 4) {
          case 0: len = 16; break;
          case 1: len = 16 * (1 + rng() % 16); break;
          case 2: len = 4096 * (1 + rng() % 5) + 16 * (rng() % 4); break;
          default: len = 8 * (1 + rng() % 64); break;
        }
        objs.push_back({a, len});
        a += len + (rng() % 3 == 0 ? 8 * (rng() % 700) : 0);
      }
    }
    AddressMap m;
    m.build(objs.data(), static_cast<uint32_t>(objs.size()));
    std::vector<uint64_t> probes;
    for (const Obj& o : objs)
      for (int64_t d : {-8, -1, 0, 1, 7, 8}) {
        probes.push_back(o.address + static_cast<uint64_t>(d));
        probes.push_back(o.address + o.length + static_cast<uint64_t>(d));
      }
    for (int i = 0; i < 5000; ++i) {
      const Obj& o = objs[rng() % objs.size()];
      probes.push_back(o.address + rng() % (o.length + 9000));
    }
    probes.push_back(0);
    probes.push_back(~uint64_t{0});
    for (uint64_t p : probes)
      for (bool interior : {true, false}) {
        INFO("round " << round << " probe 0x" << std::hex << p << " interior " << interior);
        REQUIRE(m.find(p, interior) == linear(objs, p, interior));
      }
  }
}

TEST_CASE("an empty address map finds nothing", "[graph]") {
  AddressMap m;
  m.build(static_cast<const Obj*>(nullptr), 0);
  REQUIRE(m.find(0x1000, true) == AddressMap::kNone);
  REQUIRE_FALSE(m.inObjectPage(0x1000));
}

TEST_CASE("address map: lengths that end inside a granule, and lookup's miss against inObjectPage",
          "[graph]") {
  // Recorded sizes need not be multiples of 8: a pointer into the last, partial granule of an
  // object is inside it only below its end (the granule bitmap cannot tell; the length must).
  std::mt19937_64 rng(1414);
  for (int round = 0; round < 20; ++round) {
    std::vector<Obj> objs;
    uint64_t a = 0x7f0000000000 + (rng() % 64) * 8;
    for (int i = 0; i < 600; ++i) {
      uint64_t len = rng() % 3 == 0 ? 1 + rng() % 24 : 1 + rng() % 9000;
      objs.push_back({a, len});
      a = (a + len + 7) / 8 * 8 + (rng() % 4 == 0 ? 8 * (rng() % 600) : 0);
    }
    AddressMap m;
    m.build(objs.data(), static_cast<uint32_t>(objs.size()));
    std::vector<uint64_t> probes;
    for (const Obj& o : objs)
      for (uint64_t d = 0; d < 16; ++d) probes.push_back(o.address + o.length - 8 + d);
    for (int i = 0; i < 5000; ++i) probes.push_back(objs[0].address + rng() % (a - objs[0].address));
    for (uint64_t p : probes)
      for (bool interior : {true, false}) {
        INFO("round " << round << " probe 0x" << std::hex << p << " interior " << interior);
        uint32_t want = linear(objs, p, interior);
        REQUIRE(m.find(p, interior) == want);
        uint32_t got = m.lookup(p, interior);
        if (want != AddressMap::kNone)
          REQUIRE(got == want);
        else
          REQUIRE(got == (m.inObjectPage(p) ? AddressMap::kMiss : AddressMap::kNone));
      }
  }
}
