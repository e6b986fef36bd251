// heapman report LOG [--compare LOG2] -o report.html: one self-contained HTML page (no network,
// everything inlined) with the live heap over time, GCs, events and frame marks, blame at points,
// growth between two of them, churn, flame graphs of the live set and of the garbage, and the
// retained size by type where the log has RAM dumps, the leak suspects with their root paths
// (`heapman leaks` at its default points), heap-map frames on a slider synced with the chart; with
// --compare, a second log beside it and the differences. The views are gathered by replay/report
// (heapman::report; the leak and map sections by its sections.h). With --store S, an "across
// runs" section: the trends of the main figures over the stored runs in the order of --tag, the
// step of each, and where this log sits among them (heapman/store/across_runs.h).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "heapman/report/report.h"
#include "heapman/report/sections.h"
#include "heapman/store/across_runs.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("output,o", po::value<std::string>()->value_name("FILE.html"),
                  "the page to write (report.html)")(
      "compare", po::value<std::string>()->value_name("LOG"),
      "a second log shown beside it, with the differences")(
      "at", po::value<std::vector<std::string>>()->value_name("POINT"),
      "one more point with a blame and flame graph (repeatable; besides the custom events or "
      "GCs, the peak and the end)")(
      "points", po::value<size_t>()->default_value(24)->value_name("N"),
      "custom events (else GCs) chosen evenly as points, at most")(
      "samples", po::value<size_t>()->default_value(1200)->value_name("N"),
      "samples of the live series")(
      "maps", po::value<size_t>()->default_value(12)->value_name("N"),
      "heap-map pictures at most (each repeated custom event, else GCs; 0: none)")(
      "section", po::value<std::vector<std::string>>()->value_name("FILE"),
      "one more view from a JSON file {id, title, kind, run, data} (repeatable; kinds and "
      "shapes: docs/DESIGN.md 3.10)")(
      "store", po::value<std::string>()->value_name("FILE|URL"),
      "an \"across runs\" section: the main figures of the stored runs (a SQLite file or "
      "clickhouse://HOST:PORT/DB) and where this log sits among them")(
      "tag", po::value<std::string>()->default_value("build")->value_name("NAME"),
      "with --store: the runs in the order of this tag's values");
  addFrameOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("output")) throw UsageError("-o FILE is required (the page to write)");
  std::string out = vm["output"].as<std::string>();
  // Never write the page over a log (nothing of the user's is lost to a swapped argument).
  for (const char* log : {"log", "compare"}) {
    std::error_code ec;
    if (vm.count(log) && std::filesystem::equivalent(out, vm[log].as<std::string>(), ec))
      throw UsageError("-o " + out + " is the log " + vm[log].as<std::string>() +
                       ": give the page another name (report.html)");
  }
  replay::Exclusions ex = exclusionsOf(vm);
  report::Options o;
  if (vm.count("at")) o.points = vm["at"].as<std::vector<std::string>>();
  o.maxPoints = vm["points"].as<size_t>();
  o.seriesSamples = std::max<size_t>(vm["samples"].as<size_t>(), 2);
  for (const std::string& p : o.points) s.replay->resolve(p);  // bad points before the work
  report::Builder b(o);
  if (vm.count("section"))
    for (const std::string& file : vm["section"].as<std::vector<std::string>>()) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) throw UsageError("--section " + file + ": cannot read it");
      b.addSectionJson(std::filesystem::path(file).filename().string(), text.str());
    }
  s.progress->restart("report " + std::filesystem::path(s.path).filename().string());
  report::FramesOptions fo;
  fo.maxFrames = vm["maps"].as<size_t>();
  // The heap maps' scan of the log: the index's counts, else it rides on the run's own pass.
  std::optional<map::LogScanner> scanner;
  if (fo.maxFrames && !s.replay->tables().seriesIndexed) scanner.emplace(*s.replay);
  b.addRun(*s.replay, *s.namer, ex, s.path, scanner ? &*scanner : nullptr,
           report::frameStarts(*s.replay, fo));
  // Views from other libraries join as b.addSection({id, title, kind, json, run}) (kinds
  // "table" and "frames", or one report.js registers: docs/DESIGN.md 3.10).
  std::vector<std::string> leftOut;
  // A section that cannot be made (nothing to compare, a RAM dump it cannot read) is left out
  // with a line saying why; the rest of the page is still written.
  auto sections = [&](Session& one, int run, std::optional<map::LogScanner>& scan) {
    std::string tag = vm.count("compare") ? (run ? " (B)" : " (A)") : "";
    auto add = [&](const char* what, auto make) {
      std::string why;
      try {
        if (std::optional<report::Section> sec = make(why)) return b.addSection(std::move(*sec));
      } catch (const std::exception& e) {
        why = e.what();
      }
      leftOut.push_back(what + tag + " left out: " + why);
    };
    add("leak suspects", [&](std::string& why) {
      return report::leakSection(*one.replay, *one.namer, ex, run, &why);
    });
    if (fo.maxFrames)
      add("heap maps", [&](std::string& why) {
        std::optional<map::LogScan> taken;
        if (scan) taken = scan->take();
        return report::mapSection(*one.replay,
                                  std::filesystem::path(one.path).filename().string(), run, fo,
                                  &why, taken ? &*taken : nullptr);
      });
  };
  sections(s, 0, scanner);
  int rc = kExitOk;
  if (vm.count("compare")) {
    auto other = Session::open(vm["compare"].as<std::string>(), s.symbols);
    for (const std::string& p : o.points) other->replay->resolve(p);
    std::optional<map::LogScanner> otherScanner;
    if (fo.maxFrames && !other->replay->tables().seriesIndexed)
      otherScanner.emplace(*other->replay);
    b.addRun(*other->replay, *other->namer, ex, other->path,
             otherScanner ? &*otherScanner : nullptr, report::frameStarts(*other->replay, fo));
    sections(*other, 1, otherScanner);
    b.addComparison(*s.replay, *s.namer, *other->replay, *other->namer, ex);
    if (const auto& damage = other->replay->damage()) {
      std::fprintf(stderr,
                   "heapman report: %s is damaged (%s): the page covers only the intact part "
                   "before it; run `heapman verify %s` for details\n",
                   other->path.c_str(), damage->what(), other->path.c_str());
      rc = kExitBadLog;
    }
  }
  if (vm.count("store")) {
    // Last: summarizing moves the replay. The store is opened first, so a bad one costs no pass.
    auto st = store::Store::open(vm["store"].as<std::string>(), false);
    store::AcrossRuns a;
    a.tagKey = vm["tag"].as<std::string>();
    a.logId = store::logIdOf(*s.replay);
    const replay::LogTables& t = s.replay->tables();
    for (const replay::EventRecord& e : t.events)
      a.points.push_back(t.eventName(e.nameId) + "#" + std::to_string(e.occurrence));
    std::optional<store::RunSummary> mine;
    if (!st->has(a.logId)) {
      replay::Attribution at(t, *s.namer, ex);
      mine = store::summarize(*s.replay, at);
      a.notStored = &*mine;
    }
    b.addSection({"across-runs", "Across runs", "trends", store::acrossRunsJson(*st, a), -1});
    b.addRenderer(report::trendsRenderer());
  }
  std::string page = b.html();
  writeOutput(out, page);
  s.progress->finish();
  for (const std::string& line : leftOut) std::printf("%s\n", line.c_str());
  std::printf("wrote %s (%s bytes)\n", out.c_str(), num(page.size()).c_str());
  flushStdout();
  return rc;
}

}  // namespace

// --frames N was the heap maps' count; events --frames lists frame marks.
extern const Verb kReportVerb{
    .name = "report",
    .synopsis = "-o report.html [--compare LOG2] [--at POINT]... [--maps N] [--section FILE]... "
                "[--store FILE|URL [--tag build]]",
    .summary = "one self-contained HTML page: live heap over time, blame, growth, churn, flame "
               "graphs, leak suspects, heap maps",
    .options = options,
    .run = run,
    .needs = {{"", "output"}, {"tag", "store"}},
    .renamed = {{.old = "frames", .now = "maps"}}};

}  // namespace heapman::cli
