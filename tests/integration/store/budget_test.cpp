// Budget files: rules read from TOML and JSON, errors naming the line and the unknown keys, each
// rule checked against a summary with its figure, and the JUnit XML.
#include <catch2/catch.hpp>

#include "heapman/store/budget.h"
#include "summaries.h"

using namespace heapman::store;
using storetest::makeSummary;

namespace {

std::string verdicts(const std::vector<Check>& checks) {
  std::string s;
  for (const Check& c : checks)
    s += c.rule + ": " + c.figure + " " + c.limit + " " + (c.pass ? "PASS" : "FAIL") + "\n";
  return s;
}

const char* const kBudget = R"(# gc_game
[[live]]
point = "level_end#*"
heap = "gc"
max = "1 MB"

[peak]
max = "1301 KB"
max_growth = "1%"

[gc_pause]
p99 = "1.5 ms"
max = "2 ms"

[garbage]
per_frame = 800

[leaks]
growing_sites = 1
new_growing_sites = 0

[[growth]]
site = "^recordInput"
from = "level_end#1"
to = "level_end#4"
max = "1 KiB"
)";

}  // namespace

TEST_CASE("every rule with its figure, against a run and its baseline") {
  Budget b = parseBudget(kBudget, "budget.toml", false);
  REQUIRE(b.rules.size() == 6);
  CHECK(b.needsBaseline());
  CHECK(b.blamePoints() == std::vector<std::string>{"level_end#1", "level_end#4"});
  RunSummary base = makeSummary(1, false), run = makeSummary(17, true);
  CHECK(verdicts(checkBudget(b, base, &base)) ==
        "live level_end#1 (gc heap): 293.0 KiB <= 976.6 KiB PASS\n"
        "live level_end#2 (gc heap): 585.9 KiB <= 976.6 KiB PASS\n"
        "live level_end#3 (gc heap): 878.9 KiB <= 976.6 KiB PASS\n"
        "live level_end#4 (gc heap): 1.1 MiB <= 976.6 KiB FAIL\n"
        "peak (all heaps): 1.2 MiB <= 1.2 MiB PASS\n"
        "peak (all heaps) growth: 1.2 MiB (+0.0%, +0 B) <= 1% over the baseline's 1.2 MiB PASS\n"
        "gc pause p99: 1.50 ms of 3 GCs <= 1.50 ms PASS\n"
        "gc pause max: 1.50 ms of 3 GCs <= 2.00 ms PASS\n"
        "garbage per frame: 800 B (62.5 KiB over 80 frames) <= 800 B PASS\n"
        "leak growing sites: 1 <= 1 PASS\n"
        "new leak growing sites: 0 <= 0 not in the baseline PASS\n"
        "growth of site ^recordInput level_end#1 -> level_end#4: 0 B (0 B -> 0 B) <= 1.0 KiB "
        "PASS\n");
  std::vector<Check> c = checkBudget(b, run, &base);
  CHECK(verdicts(c) ==
        "live level_end#1 (gc heap): 298.0 KiB <= 976.6 KiB PASS\n"
        "live level_end#2 (gc heap): 595.9 KiB <= 976.6 KiB PASS\n"
        "live level_end#3 (gc heap): 893.9 KiB <= 976.6 KiB PASS\n"
        "live level_end#4 (gc heap): 1.2 MiB <= 976.6 KiB FAIL\n"
        "peak (all heaps): 1.3 MiB <= 1.2 MiB FAIL\n"
        "peak (all heaps) growth: 1.3 MiB (+1.6%, +20488 B) <= 1% over the baseline's 1.2 MiB "
        "FAIL\n"
        "gc pause p99: 1.50 ms of 3 GCs <= 1.50 ms PASS\n"
        "gc pause max: 1.50 ms of 3 GCs <= 2.00 ms PASS\n"
        "garbage per frame: 800 B (62.5 KiB over 80 frames) <= 800 B PASS\n"
        "leak growing sites: 2 <= 1 FAIL\n"
        "new leak growing sites: 1 <= 0 not in the baseline FAIL\n"
        "growth of site ^recordInput level_end#1 -> level_end#4: 15.0 KiB (5.0 KiB -> 20.0 KiB) "
        "<= 1.0 KiB FAIL\n");
  CHECK(c[9].message ==
        "loadAsset(char const*) grows by 300000 bytes per level_end\n"
        "recordInput(int, int) grows by 5120 bytes per level_end");
  CHECK(c[10].message == "new: recordInput(int, int) (gc_game)");
  // Without a baseline the relative rules fail, saying what to give.
  c = checkBudget(b, run, nullptr);
  CHECK(c[5].rule == "peak (all heaps) growth");
  CHECK_FALSE(c[5].pass);
  CHECK(c[5].message ==
        "this rule is relative to a baseline: give --baseline or --baseline-run");
}

TEST_CASE("JSON budgets read as TOML ones") {
  Budget t = parseBudget(kBudget, "b.toml", false);
  Budget j = parseBudget(R"({"live": [{"point": "level_end#*", "heap": "gc", "max": "1 MB"}],
    "peak": {"max": "1301 KB", "max_growth": "1%"}, "gc_pause": {"p99": "1.5 ms", "max": "2 ms"},
    "garbage": {"per_frame": 800}, "leaks": {"growing_sites": 1, "new_growing_sites": 0},
    "growth": [{"site": "^recordInput", "from": "level_end#1", "to": "level_end#4",
                "max": "1 KiB"}]})",
                         "b.json", true);
  RunSummary base = makeSummary(1, false), run = makeSummary(17, true);
  CHECK(verdicts(checkBudget(j, run, &base)) == verdicts(checkBudget(t, run, &base)));
}

TEST_CASE("a budget that does not parse names the line and column, unknown keys are named") {
  auto error = [](const std::string& text, bool json = false) {
    try {
      parseBudget(text, json ? "b.json" : "b.toml", json);
    } catch (const BudgetError& e) {
      return std::string(e.what());
    }
    return std::string("(parsed)");
  };
  CHECK(error("[peak]\nheap = \"gc\"\nmax = 3 MiB\n") ==
        "b.toml:3:9: Error while parsing key-value pair: expected a comment or whitespace, saw 'M' "
        "(the budget is TOML)");
  CHECK(error("[peak]\nmax = \"1 MiB\"\nmaximum = 3\nheap_name = \"gc\"\n") ==
        "b.toml:3: unknown keys 'heap_name', 'maximum' in [peak] (known: heap, max, max_growth)");
  CHECK(error("[live]\npoint = \"level_end#1\"\nmax = 1\n\n[budgets]\nx = 1\n") ==
        "b.toml:5: unknown section 'budgets' (known: garbage, gc_pause, growth, leaks, live, "
        "peak)");
  CHECK(error("[gc_pause]\np99 = 5\n") ==
        "b.toml:2: p99: a time is text with its unit (\"5 ms\")");
  CHECK(error("[peak]\nmax = \"3 MB\"\nmax_growth = \"ten percent\"\n") ==
        "b.toml:3: max_growth is \"10%\" (of the baseline) or \"+2 MiB\" (over it), not 'ten "
        "percent'");
  CHECK(error("[[live]]\nmax = \"3 MB\"\n") ==
        "b.toml:1: [live] needs point = \"EVENT#K\" (or \"EVENT#*\": every occurrence)");
  CHECK(error("[[growth]]\nsite = \"(\"\nfrom = \"a#1\"\nto = \"a#2\"\nmax = 1\n") ==
        "b.toml:1: b.toml: bad function regex '(': Mismatched '(' and ')' in regular "
        "expression");
  // JSON: the line and column of the error, of an unknown key or section (where its name
  // starts; a JSON file may be one line).
  CHECK(error("{\"peak\": {\"max\": 1,\n \"mx\": 2}}", true) ==
        "b.json:2:2: unknown key 'mx' in [peak] (known: heap, max, max_growth)");
  CHECK(error("{\"peak\": {\"max\": 1\n \"mx\": 2}}", true) ==
        "b.json:2:5: syntax error while parsing object - unexpected string literal; expected "
        "'}' (the budget is JSON)");
  CHECK(error("{\"live\": [{\"point\": \"a#1\", \"max\": 1}, {\"point\": \"a#2\", \"mox\": 1, "
              "\"mxx\": 2}]}",
              true) == "b.json:1:56: unknown keys 'mox', 'mxx' in [live] (known: heap, max, "
                       "max_growth, point)");
  CHECK(error("{\n  \"peak\": {\"max\": 1},\n  \"gc_pauses\": {\"p99\": \"5 ms\"}\n}", true) ==
        "b.json:3:3: unknown section 'gc_pauses' (known: garbage, gc_pause, growth, leaks, live, "
        "peak)");
  CHECK(error("{\"gc_pause\": {\"p99\": 5}}", true) ==
        "b.json:1:15: p99: a time is text with its unit (\"5 ms\")");
  // Columns count characters, not bytes (nlohmann/json's own message says column 30 here).
  CHECK(error("{\"peak\": {\"max\": \"1 Mi\u00dfB\" \"x\"}}", true) ==
        "b.json:1:29: syntax error while parsing object - unexpected string literal; expected "
        "'}' (the budget is JSON)");
}

TEST_CASE("sizes and times") {
  CHECK(parseBytes("300 MiB") == 314572800);
  CHECK(parseBytes("1.5KiB") == 1536);
  CHECK(parseBytes("2 MB") == 2000000);
  CHECK(parseBytes("12") == 12);
  CHECK_THROWS_WITH(parseBytes("3 MBs"), "'3 MBs': unknown unit 'MBs' (B, KiB, MiB, GiB, kB, MB, GB)");
  CHECK(parseNanos("5 ms") == 5'000'000);
  CHECK(parseNanos("200us") == 200'000);
  CHECK_THROWS(parseNanos("5"));
  CHECK(bytesText(1023) == "1023 B");
  CHECK(bytesText(1536) == "1.5 KiB");
  CHECK(nanosText(1'500'000) == "1.50 ms");
}

TEST_CASE("JUnit XML: a testcase per check, failures with their figure") {
  std::vector<Check> c{{"peak (all heaps)", "1.3 MiB", "<= 1.2 MiB", false, "", 0},
                       {"gc pause max", "1.50 ms of 3 GCs", "<= 2.00 ms", true, "", 0},
                       {"new leak growing sites", "1", "<= 0 not in the baseline", false,
                        "new: f<int> & g", 1}};
  CHECK(junitXml(c, "heapman check", "b17.hml", 0.25) ==
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites name=\"heapman check\" tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\" "
        "time=\"0.250\">\n"
        "  <testsuite name=\"heapman check: b17.hml\" tests=\"3\" failures=\"2\" errors=\"0\" "
        "skipped=\"0\" time=\"0.250\">\n"
        "    <testcase classname=\"heapman check\" name=\"peak (all heaps)\" time=\"0\">\n"
        "      <failure message=\"1.3 MiB, over the limit &lt;= 1.2 MiB\" type=\"budget\">peak "
        "(all heaps): 1.3 MiB (&lt;= 1.2 MiB)</failure>\n"
        "    </testcase>\n"
        "    <testcase classname=\"heapman check\" name=\"gc pause max\" time=\"0\">\n"
        "      <system-out>1.50 ms of 3 GCs (&lt;= 2.00 ms)</system-out>\n"
        "    </testcase>\n"
        "    <testcase classname=\"heapman check\" name=\"new leak growing sites\" time=\"0\">\n"
        "      <failure message=\"new: f&lt;int&gt; &amp; g\" type=\"budget\">new leak growing "
        "sites: 1 (&lt;= 0 not in the baseline)&#10;new: f&lt;int&gt; &amp; g</failure>\n"
        "    </testcase>\n"
        "  </testsuite>\n"
        "</testsuites>\n");
}
