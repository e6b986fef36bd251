// The contract between heaprec and the recorder module (recorder/common/contract.h): the one
// parser of each value, which heaprec uses to refuse an option and the module to read it.
#include <catch2/catch.hpp>

#include <string>

#include "../../../recorder/common/contract.h"

namespace env = heapman::rec::env;

TEST_CASE("contract: RAM dump policies parse exactly", "[recorder][contract]") {
  env::RamDumps r;
  REQUIRE(env::parseRamDumps(nullptr, r));
  CHECK(r.kind == env::RamDumps::Kind::kOff);
  REQUIRE(env::parseRamDumps("off", r));
  CHECK(r.kind == env::RamDumps::Kind::kOff);
  REQUIRE(env::parseRamDumps("every", r));
  CHECK(r.kind == env::RamDumps::Kind::kEvery);
  REQUIRE(env::parseRamDumps("every:7", r));
  CHECK(r.kind == env::RamDumps::Kind::kEveryNth);
  CHECK(r.every == 7);
  const char* text = "event:level_end";
  REQUIRE(env::parseRamDumps(text, r));
  CHECK(r.kind == env::RamDumps::Kind::kAtEvent);
  CHECK(std::string(r.event, r.eventLength) == "level_end");
  CHECK(r.event == text + 6);
  // Refused, and `out` left as it was.
  for (const char* bad : {"every:0", "every:", "every:-1", "every:3x", "every:99999999999",
                          "event:", "sometimes", "Every", "off ", "every7"}) {
    INFO(bad);
    env::RamDumps kept;
    kept.every = 42;
    CHECK_FALSE(env::parseRamDumps(bad, kept));
    CHECK(kept.every == 42);
  }
  CHECK(env::parseRamDumps(("event:" + std::string(env::kMaxEventName, 'x')).c_str(), r));
  CHECK_FALSE(env::parseRamDumps(("event:" + std::string(env::kMaxEventName + 1, 'x')).c_str(), r));
}

TEST_CASE("contract: numbers are whole, in range, and nothing else", "[recorder][contract]") {
  uint64_t v = 5;
  CHECK(env::parseNumber("32", 1, env::kMaxDepth, v));
  CHECK(v == 32);
  CHECK(env::parseNumber("256", 1, env::kMaxDepth, v));
  for (const char* bad : {"", "0", "257", "-1", "+3", "3 ", "0x10", "99999999999999999999999"}) {
    INFO(bad);
    uint64_t kept = 5;
    CHECK_FALSE(env::parseNumber(bad, 1, env::kMaxDepth, kept));
    CHECK(kept == 5);
  }
  CHECK_FALSE(env::parseNumber(nullptr, 0, 10, v));
}
