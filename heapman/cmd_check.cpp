// heapman check LOG --budget budget.toml|.json [--baseline B.hml | --baseline-run KEY=VALUE
// --store S] [--junit F]: the run's summary against a memory budget
// (replay/store/include/heapman/store/budget.h): each rule with its figure and PASS or FAIL,
// JUnit XML for CI, exit 1 when a rule fails (2 when the budget does not parse).
#include <chrono>
#include <optional>

#include "heapman/store/budget.h"
#include "heapman/store/store.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("budget", po::value<std::string>()->value_name("FILE"),
                  "the budget: TOML, or JSON for a .json file")(
      "baseline", po::value<std::string>()->value_name("LOG"),
      "the log the budget's relative rules (max_growth, new_...) compare with")(
      "baseline-run", po::value<std::string>()->value_name("KEY=VALUE"),
      "the stored run tagged so as the baseline (with --store)")(
      "store", po::value<std::string>()->value_name("FILE|URL"),
      "the store holding --baseline-run: a SQLite file or clickhouse://HOST:PORT/DB")(
      "junit", po::value<std::string>()->value_name("FILE|-"),
      "write the checks as JUnit XML (a testcase per check)")(
      "at-each", po::value<std::string>()->value_name("EVENT"),
      "the repeating event (default: the event named most often)");
  addFrameOptions(o);
  addOutputOptions(o);
}

// A log cut short (its program crashed and took the recorder along) is checked as far as it
// goes, with a warning: its figures are those of the part written, which a budget may pass.
store::RunSummary summaryOf(const std::string& log, const VerbOptions& vm,
                            const replay::Exclusions& ex, const store::SummaryOptions& so,
                            std::vector<std::string>& warnings) {
  auto s = Session::open(log, symbolSettingsOf(vm));
  if (s->replay->damage())
    throw std::runtime_error(log + " is damaged (" + s->replay->damage()->what() +
                             "); run `heapman verify " + log + "` for details");
  if (!s->replay->reader().end().complete)
    warnings.push_back(log + " is cut short (" + s->replay->reader().end().reason +
                       "): the figures checked are those of its " +
                       num(s->replay->tables().eventCount) + " events, not of the whole run");
  s->progress->restart("summarizing " + log);
  replay::Attribution a(s->replay->tables(), *s->namer, ex);
  store::RunSummary sum = store::summarize(*s->replay, a, so);
  s->progress->finish();
  return sum;
}

int run(const std::string& log, const VerbOptions& vm) {
  auto started = std::chrono::steady_clock::now();
  if (!vm.count("budget")) throw UsageError("--budget FILE is required: the rules to check");
  if (vm.count("baseline") && vm.count("baseline-run"))
    throw UsageError("give --baseline LOG or --baseline-run KEY=VALUE, not both");
  std::optional<store::Tag> baseRun;
  if (vm.count("baseline-run")) {
    try {
      baseRun = store::parseTag(vm["baseline-run"].as<std::string>());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--baseline-run: ") + e.what());
    }
  }
  std::string storeUrl = vm.count("store") ? vm["store"].as<std::string>() : "";
  if (baseRun && storeUrl.empty())
    throw UsageError("--baseline-run needs --store: where that run is stored");
  if (!storeUrl.empty() && !baseRun)
    throw UsageError("--store has an effect only with --baseline-run");
  std::string baseLog = vm.count("baseline") ? vm["baseline"].as<std::string>() : "";
  std::string junit = vm.count("junit") ? vm["junit"].as<std::string>() : "";
  OutputOptions out = outputOptions(vm);
  replay::Exclusions ex = exclusionsOf(vm);

  store::Budget budget;
  try {
    budget = store::readBudget(vm["budget"].as<std::string>());
  } catch (const store::BudgetError& e) {
    throw UsageError(e.what());
  }
  store::SummaryOptions so;
  if (vm.count("at-each")) so.repeatingEvent = vm["at-each"].as<std::string>();
  so.blamePoints = budget.blamePoints();
  so.top = 0;  // every row: nothing is stored, and a growth rule may name a small site

  std::vector<std::string> warnings;
  std::optional<store::RunSummary> base;
  std::string baseName;
  if (budget.needsBaseline()) {
    if (baseRun) {
      auto st = store::Store::open(storeUrl, false);
      base = st->load(*baseRun);
      baseName = baseRun->key + "=" + baseRun->value + " in " + st->describe();
      if (!base)
        throw std::runtime_error("no run tagged " + baseRun->key + "=" + baseRun->value +
                                 " in " + st->describe() +
                                 ": ingest it first (heapman ingest LOG --store ... --run-tag " +
                                 baseRun->key + "=" + baseRun->value + ")");
    } else if (!baseLog.empty()) {
      base = summaryOf(baseLog, vm, ex, so, warnings);
      baseName = baseLog;
    } else {
      throw UsageError("the budget has rules relative to a baseline (max_growth, new_suspects, "
                       "new_growing_sites): give --baseline LOG or --baseline-run KEY=VALUE "
                       "--store S");
    }
  } else if (baseRun || !baseLog.empty()) {
    warnings.push_back("no rule of the budget is relative to a baseline: the baseline is not used");
  }

  store::RunSummary sum = summaryOf(log, vm, ex, so, warnings);
  // The summary's notes are about leak suspects: said only when a rule counts them.
  bool leakRules = false;
  for (const store::Rule& rule : budget.rules) leakRules = leakRules || rule.section == "leaks";
  if (leakRules)
    for (const std::string& n : sum.notes) warnings.push_back(n);
  std::vector<store::Check> checks = store::checkBudget(budget, sum, base ? &*base : nullptr);
  size_t failed = 0;
  for (const store::Check& c : checks) failed += !c.pass;

  Report r;
  r.query = "check";
  r.meta = {{"log", log}, {"budget", budget.file}};
  if (base) r.meta.push_back({"baseline", baseName});
  r.meta.push_back({"result", failed ? num(failed) + " of " + num(checks.size()) + " checks FAIL"
                                     : "all " + num(checks.size()) + " checks PASS"});
  r.warnings = warnings;
  Table t{"checks", {{"rule"}, {"figure"}, {"limit"}, {"result"}, {"why"}}, {}};
  for (const store::Check& c : checks) {
    std::string why = c.message;
    for (char& ch : why)
      if (ch == '\n') ch = ';';
    t.add({c.rule, c.figure, c.limit, c.pass ? "PASS" : "FAIL", why});
  }
  r.tables.push_back(std::move(t));
  emit(r, out);
  if (!junit.empty()) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                         .count();
    writeOutput(junit, store::junitXml(checks, "heapman check", log, seconds));
  }
  return failed ? kExitBadLog : kExitOk;
}

}  // namespace

extern const Verb kCheckVerb{
    .name = "check",
    .synopsis = "--budget FILE [--baseline LOG | --baseline-run KEY=VALUE --store FILE|URL] "
                "[--junit FILE]",
    .summary = "check a run against a memory budget: each rule PASS or FAIL, JUnit XML, exit 1 "
               "on a failure",
    .options = options,
    .runFile = run,
    .needs = {{"", "budget"}, {"baseline-run", "store"}, {"store", "baseline-run"}},
    .inShell = false};

}  // namespace heapman::cli
