// GcHandle and Finalize bodies packed by hand (encodeSmallBody) against Cap'n Proto's own
// encoder (encodeBody): the same bytes for every field value, edge and random, and the reader
// decodes them back to the record.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "capnp_codec.h"

namespace {

using namespace heapman::log;

template <class R>
std::vector<uint8_t> byHand(const R& r) {
  uint8_t out[detail::kSmallBodyMax];
  size_t n = detail::encodeSmallBody(r, out);
  REQUIRE(n <= detail::kSmallBodyMax);
  return {out, out + n};
}

}  // namespace

TEST_CASE("small bodies: GcHandle and Finalize packed by hand are Cap'n Proto's bytes",
          "[logformat][capnp]") {
  // Values with every byte zero, one byte zero, none zero: the packing's tag, zero-run and
  // verbatim-run cases.
  const std::vector<uint64_t> edges = {0,
                                       1,
                                       0xff,
                                       0x100,
                                       0x7fffffff,
                                       0xffffffff,
                                       0x0101010101010101ull,
                                       0x0101010101010100ull,
                                       0x0100010101010101ull,
                                       0x00007f0012345678ull,
                                       0xffffffffffffffffull};
  std::mt19937_64 rng(26);
  std::vector<uint64_t> values = edges;
  for (int i = 0; i < 2000; ++i) {
    uint64_t v = rng();
    v &= rng() | rng();  // more zero bytes than chance alone gives
    values.push_back(v);
  }
  EventCommon ev{7, 1234, 2};
  size_t checked = 0;
  for (uint64_t a : values)
    for (uint64_t h : {uint64_t{0}, uint64_t{1}, a >> 32, a & 0xffffffff, uint64_t{0x01010101}})
      for (uint8_t type = 0; type <= 5; type += 1)
        for (bool created : {false, true}) {
          GcHandle r{ev, static_cast<uint32_t>(h), static_cast<GcHandleType>(type), a, created};
          INFO("handle " << h << " type " << int(type) << " address " << a << " created " << created);
          std::vector<uint8_t> want = detail::encodeBody(r);
          REQUIRE(byHand(r) == want);
          std::optional<Record> back = detail::decodeBody(
              static_cast<uint32_t>(ExtKind::kGcHandle), ev, want);
          REQUIRE(back);
          GcHandle expect = r;
          if (type > 4) expect.type = GcHandleType::kOther;
          CHECK(std::get<GcHandle>(*back) == expect);
          ++checked;
        }
  for (uint64_t a : values) {
    Finalize r{ev, a};
    INFO("address " << a);
    REQUIRE(byHand(r) == detail::encodeBody(r));
  }
  CHECK(checked == values.size() * 5 * 6 * 2);
}
