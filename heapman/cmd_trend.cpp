// heapman trend [LOG] --store S [--tag build] [--point POINT] [--heap HEAP] [--site REGEX | --type
// REGEX] [--figure NAME] [--png FILE]: a figure of every stored run (live bytes, or one of the
// whole run: GC count, pause p99, leak counts), in the order of a tag, and the run where it
// stepped up (replay/store/include/heapman/store/trend.h: the least-squares change-point), as a
// table and as a bar chart. With a LOG (a CI job's own run, not stored) its figure comes last, as
// the newest run.
#include <cmath>
#include <optional>

#include "heapman/map/layout.h"
#include "heapman/map/png.h"
#include "heapman/store/budget.h"
#include "heapman/store/trend.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("store", po::value<std::string>()->value_name("FILE|URL"),
                  "the store: a SQLite file or clickhouse://HOST:PORT/DB")(
      "tag", po::value<std::string>()->default_value("build")->value_name("NAME"),
      "the runs in the order of this tag's values")(
      "point", po::value<std::string>()->value_name("POINT"),
      "live bytes at this point (EVENT#K; default: the run's peak)")(
      "heap", po::value<std::string>()->value_name("HEAP"),
      "one heap only (native, gc, gc_atomic, ...; default: all)")(
      "site", po::value<std::string>()->value_name("REGEX"),
      "the blame sites whose function matches, at --point")(
      "type", po::value<std::string>()->value_name("REGEX"), "the types that match, at --point")(
      "at-each", po::value<std::string>()->value_name("EVENT"),
      "with a LOG: its repeating event (default: the event named most often)")(
      "png", po::value<std::string>()->value_name("FILE"), "the series as a bar chart (PNG)")(
      "figure",
      po::value<std::string>()->value_name("gc-count|gc-pause-p99|leak-suspects|growing-sites"),
      "a figure of the whole run instead of live bytes (gc-pause-p99: nearest rank, ns)");
  addFrameOptions(o);
  addOutputOptions(o);
}

int run(const std::string& log, const VerbOptions& vm) {
  if (!vm.count("store")) throw UsageError("--store FILE|URL is required: the runs to follow");
  store::FigureQuery q;
  if (vm.count("point")) q.point = vm["point"].as<std::string>();
  if (vm.count("heap")) q.heap = vm["heap"].as<std::string>();
  if (vm.count("site") && vm.count("type")) throw UsageError("give --site or --type, not both");
  if (vm.count("site")) q.siteRegex = vm["site"].as<std::string>();
  if (vm.count("type")) q.typeRegex = vm["type"].as<std::string>();
  if (!q.point.empty()) replay::parsePoint(q.point);
  // What a figure of the whole run is called, and its unit.
  struct Kind {
    const char* name;
    store::FigureKind kind;
    const char* what;
    const char* unit;
  };
  static const Kind kKinds[] = {
      {"gc-count", store::FigureKind::kGcCount, "GC count", "count"},
      {"gc-pause-p99", store::FigureKind::kGcPauseP99, "GC pause p99", "ns"},
      {"leak-suspects", store::FigureKind::kLeakSuspects, "leak suspects", "count"},
      {"growing-sites", store::FigureKind::kGrowingSites, "growing sites", "count"}};
  const Kind* kind = nullptr;
  if (vm.count("figure")) {
    std::string name = vm["figure"].as<std::string>(), known;
    for (const Kind& k : kKinds) {
      if (name == k.name) kind = &k;
      known += (known.empty() ? "" : ", ") + std::string(k.name);
    }
    if (!kind) throw UsageError("--figure " + name + ": not a figure (" + known + ")");
    for (const char* o : {"point", "heap", "site", "type"})
      if (vm.count(o))
        throw UsageError(std::string("--") + o + " is about live bytes: not with --figure " + name);
    q.kind = kind->kind;
  }
  std::string tag = vm["tag"].as<std::string>();
  OutputOptions out = outputOptions(vm);
  std::string png = vm.count("png") ? vm["png"].as<std::string>() : "";
  replay::Exclusions ex = exclusionsOf(vm);
  // A log given too (a CI job's own run, not stored): summarized, shown after the stored runs.
  std::optional<store::RunSummary> current;
  if (log.empty() && vm.count("at-each"))
    throw UsageError("--at-each has an effect only with a LOG (heapman trend LOG --store ...)");
  if (!log.empty()) {
    auto s = Session::open(log, symbolSettingsOf(vm));
    if (s->replay->damage())
      throw std::runtime_error(log + " is damaged (" + s->replay->damage()->what() +
                               "); run `heapman verify " + log + "` for details");
    replay::Attribution a(s->replay->tables(), *s->namer, ex);
    store::SummaryOptions so;
    if (vm.count("at-each")) so.repeatingEvent = vm["at-each"].as<std::string>();
    current = store::summarize(*s->replay, a, so);
  }
  auto st = store::Store::open(vm["store"].as<std::string>(), false);
  store::TrendResult t =
      store::trend(*st, tag, q, current ? &*current : nullptr, current ? log : "");

  std::string figure =
      kind                   ? std::string(kind->what)
      : !q.siteRegex.empty()   ? "bytes of the sites matching '" + q.siteRegex + "' at " + q.point
      : !q.typeRegex.empty() ? "bytes of the types matching '" + q.typeRegex + "' at " + q.point
      : q.point.empty()      ? std::string("peak live bytes")
                             : "live bytes at " + q.point;
  if (!q.heap.empty() && q.heap != "all") figure += " (" + q.heap + " heap)";
  Report r;
  r.query = "trend";
  r.meta = {{"store", st->describe()}, {"figure", figure}, {"count", num(t.rows.size())}};
  const store::Step& s = t.step;
  if (s.found) {
    uint64_t rise = static_cast<uint64_t>(std::llround(s.after - s.before));
    std::string unit = kind ? kind->unit : "bytes";
    auto text = [&](double v) {
      uint64_t x = static_cast<uint64_t>(std::llround(v));
      return unit == "bytes" ? store::bytesText(x) : unit == "ns" ? store::nanosText(x) : num(x);
    };
    r.meta.push_back({"step", tag + " " + t.rows[s.at].tag + ": +" + num(rise) + " " + unit +
                                  " (" + text(s.before) + " -> " + text(s.after) +
                                  " on average; noise " + text(s.noise) + ")"});
  } else {
    r.meta.push_back({"step", "none (no rise above 3x the noise)"});
  }
  r.warnings = t.warnings;
  Table tab{"runs", {{tag}, {"run"}, {kind ? kind->unit : "bytes", true}, {"change", true}, {"step"}},
            {}};
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const store::TrendRow& row = t.rows[i];
    std::string change =
        i ? snum(static_cast<int64_t>(row.value) - static_cast<int64_t>(t.rows[i - 1].value)) : "";
    tab.add({row.tag, row.logId, num(row.value), change, s.found && i == s.at ? "step" : ""});
  }
  r.tables.push_back(std::move(tab));
  emit(r, out);
  if (!png.empty()) {
    try {
      map::writePng(png, store::trendChart(t, figure + " by " + tag, kind ? kind->unit : "bytes"));
    } catch (const map::MapError& e) {
      throw OutputError(std::string("writing ") + png + " failed: " + e.what());
    }
  }
  return kExitOk;
}

}  // namespace

extern const Verb kTrendVerb{
    .name = "trend",
    .synopsis = "[LOG] --store FILE|URL [--tag build] [--point POINT] [--heap HEAP] "
                "[--site REGEX | --type REGEX] [--figure NAME] [--png FILE]",
    .summary = "a figure across the stored runs in a tag's order, and the run where it stepped up",
    .options = options,
    .runFile = run,
    .needs = {{"", "store"}},
    .inShell = false,
    .optionalLog = true};

}  // namespace heapman::cli
