// User regexes (exclusions, --type, --function) cannot crash or hang heapman: a too-long pattern
// is refused with a message, and matching recursion is bounded by the pattern, not the name.
#include <catch2/catch.hpp>

#include <string>

#include "heapman/replay/frames.h"

using namespace heapman::replay;

TEST_CASE("a 100 000-character regex is refused, naming where it came from", "[regex]") {
  std::string longest(kMaxRegexLength, 'a');
  CHECK_NOTHROW(compileRegex(longest, "--exclude-add"));
  Exclusions e;
  try {
    e.add(std::string(100'000, 'a'), "--exclude-add");
    FAIL("no error");
  } catch (const ReplayError& err) {
    CHECK_THAT(err.what(), Catch::StartsWith("--exclude-add: bad regex 'aaaa"));
    CHECK_THAT(err.what(), Catch::Contains("100000 characters long, at most 1000 are accepted"));
  }
  CHECK(e.size() == 0);
  CHECK_THROWS_WITH(compileRegex(std::string(5000, '('), "", "type"),
                    Catch::StartsWith("bad type regex '((((("));
}

TEST_CASE("pathological regexes against long names neither overflow the stack nor backtrack",
          "[regex]") {
  // With std::regex's default depth-first matcher, the first overflows the stack on a name of
  // 3000 characters (one recursion per group per character), the second one takes 2^40 steps.
  Exclusions e;
  e.add("((((((((((((((((((((a))))))))))))))))))))*c", "nested");
  e.add("(a+)+b", "backtracking");
  NamedFrame longName{std::string(3000, 'a'), "", "", 0};
  CHECK_FALSE(e.excluded(longName));
  NamedFrame shortName{std::string(40, 'a'), "", "", 0};
  CHECK_FALSE(e.excluded(shortName));
  shortName.function += "c";
  CHECK(e.excluded(shortName));
}
