// Memory budgets (heapman check): rules read from a TOML or JSON file, each checked against a
// run's summary (and a baseline's, for the rules relative to one), and JUnit XML of the result.
//
// The file (TOML; JSON has the same keys: {"live": [{...}], "peak": {...}, ...}). Every section
// may be one table ([peak]) or several ([[live]]). Sizes are bytes, or text with a unit: B, KiB,
// MiB, GiB (1024s), kB, MB, GB (1000s); times text with a unit: ns, us, ms, s; growth "10%" of
// the baseline's figure, or "+2 MiB" over it.
//
//   [[live]]                  live bytes at points
//   point = "level_end#*"     every occurrence of the event (or one: "level_end#3")
//   heap = "all"              or a heap: native, gc, gc_atomic, gc_uncollectable, gcj, ...
//   max = "300 MiB"
//   max_growth = "10%"        over the baseline at the same point
//
//   [peak]                    the highest live bytes of the run
//   heap = "all"
//   max = "400 MiB"
//   max_growth = "5%"
//
//   [gc_pause]                GC pauses
//   p99 = "5 ms"              (nearest rank)
//   max = "20 ms"
//
//   [garbage]                 bytes collected and freed over the run, per frame mark
//   per_frame = "64 KiB"
//   max_growth = "10%"
//
//   [leaks]                   heapman leaks at each repetition of the repeating event
//   suspects = 0              growing containers (logs with RAM dumps)
//   growing_sites = 3         sites that grow at every repetition
//   new_suspects = 0          not in the baseline
//   new_growing_sites = 0
//
//   [[growth]]                growth of the sites (or types) a regex matches between two points
//   site = "recordInput"      or type = "Game\\.Entity"
//   from = "level_end#1"
//   to = "level_end#4"
//   max = "1 MiB"
//
// Errors (BudgetError, heapman exits 2): the file does not parse ("budget.toml:7:12: ..." naming
// the line and column; JSON: of the character where it failed), an unknown section or key
// (named, with its line in TOML, its line and column in JSON, where the name starts, and the
// keys that are known), a value of the wrong kind (where its key is).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "heapman/store/summary.h"

namespace heapman::store {

class BudgetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Rule {
  std::string section;  // live, peak, gc_pause, garbage, leaks, growth
  int line = 0;         // in the file (TOML); 0 unknown
  std::string point, heap = "all", site, type, from, to;
  std::optional<uint64_t> max, p99, perFrame;                // bytes, or ns for gc_pause
  std::optional<uint64_t> suspects, growingSites, newSuspects, newGrowingSites;
  std::optional<double> growthPercent;                       // max_growth = "10%"
  std::optional<uint64_t> growthBytes;                       // max_growth = "+2 MiB"
  bool needsBaseline() const {
    return growthPercent || growthBytes || newSuspects || newGrowingSites;
  }
};

struct Budget {
  std::string file;
  std::vector<Rule> rules;
  bool needsBaseline() const;
  // Points a run's summary must have blame at for the growth rules.
  std::vector<std::string> blamePoints() const;
};

// Reads a budget file (.json: JSON, anything else: TOML). Throws BudgetError.
Budget readBudget(const std::string& path);
// The same from text; `name` stands for the file in messages, `json` picks the syntax.
Budget parseBudget(const std::string& text, const std::string& name, bool json);

// One rule checked against one figure.
struct Check {
  std::string rule;    // "live level_end#3 (all heaps)"
  std::string figure;  // "12.5 MiB", "3", ...
  std::string limit;   // "<= 300 MiB", "<= 10% over 11.0 MiB"
  bool pass = false;
  std::string message;  // why it failed, or a note
  uint64_t value = 0;
};

// Checks every rule. baseline: nullptr when none was given (a rule that needs one then fails
// saying so; heapman refuses that before calling).
std::vector<Check> checkBudget(const Budget& b, const RunSummary& run,
                               const RunSummary* baseline);

// JUnit XML (the schema Jenkins, GitLab and GitHub's reporters read): one testsuite, a testcase
// per check, <failure> for the failed ones.
std::string junitXml(const std::vector<Check>& checks, const std::string& suite,
                     const std::string& runName, double seconds);

// "12.5 MiB" and friends (figures in messages).
std::string bytesText(uint64_t bytes);
std::string nanosText(uint64_t ns);
// "300 MiB" -> 314572800; throws std::invalid_argument.
uint64_t parseBytes(const std::string& text);
uint64_t parseNanos(const std::string& text);

}  // namespace heapman::store
