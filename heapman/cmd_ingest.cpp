// heapman ingest LOG... --store S [--run-tag KEY=VALUE]...: each log's summary
// (replay/store/include/heapman/store/summary.h) written to a store of many runs, for
// `heapman trend` and `heapman check --baseline-run`. Every log is summarized before anything is
// written: one that is corrupt, damaged or unreadable stops the command with nothing written, and
// so does one cut short (no footer: its recorder died, or it is being written) unless
// --allow-partial: then it is a partial run, its id the recording's and ".pN" (N events read),
// which the complete log of the recording, ingested later, replaces (store.h, Store::put).
#include "heapman/store/store.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description& pos) {
  o.add_options()("logs", po::value<std::vector<std::string>>()->value_name("LOG"),
                  "more logs")(
      "store", po::value<std::string>()->value_name("FILE|URL"),
      "the store: a SQLite file (made when missing) or clickhouse://HOST:PORT/DB")(
      "run-tag", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
      "a tag of the runs (repeatable): build=4812, platform=linux")(
      "at-each", po::value<std::string>()->value_name("EVENT"),
      "the repeating event to take blame at (default: the event named most often)")(
      "allow-partial",
      "store a log cut short (no footer) as a partial run, which its complete log replaces");
  pos.add("logs", -1);
  addTopOption(o, 100, "rows of blame, types and churn at each point");
  addFrameOptions(o);
  addOutputOptions(o);
}

int run(const std::string& first, const VerbOptions& vm) {
  if (!vm.count("store"))
    throw UsageError("--store FILE|URL is required: where the runs go (runs.sqlite)");
  std::vector<std::string> logs{first};
  if (vm.count("logs"))
    for (const std::string& l : vm["logs"].as<std::vector<std::string>>()) logs.push_back(l);
  std::vector<store::Tag> tags;
  if (vm.count("run-tag"))
    for (const std::string& t : vm["run-tag"].as<std::vector<std::string>>()) {
      try {
        tags.push_back(store::parseTag(t));
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--run-tag: ") + e.what());
      }
      for (size_t i = 0; i + 1 < tags.size(); ++i)
        if (tags[i].key == tags.back().key)
          throw UsageError("--run-tag " + tags.back().key + " is given twice");
    }
  store::SummaryOptions so;
  if (vm.count("at-each")) so.repeatingEvent = vm["at-each"].as<std::string>();
  so.top = topOf(vm);
  replay::Exclusions ex = exclusionsOf(vm);
  replay::SymbolSettings symbols = symbolSettingsOf(vm);
  bool allowPartial = vm.count("allow-partial") > 0;
  OutputOptions out = outputOptions(vm);

  // Summaries first: a bad log stops everything before the store is touched.
  std::vector<store::RunSummary> summaries;
  std::vector<std::string> warnings;
  for (const std::string& log : logs) {
    auto s = Session::open(log, symbols);
    if (s->replay->damage())
      throw std::runtime_error(log + " is damaged (" + s->replay->damage()->what() +
                               "): nothing was written; run `heapman verify " + log +
                               "` for details, and record it again");
    if (!s->replay->reader().end().complete) {
      const std::string& why = s->replay->reader().end().reason;
      if (!allowPartial)
        throw std::runtime_error(
            log + " is cut short (" + why + "): its figures would be those of the part "
            "written, not of the run; nothing was written. Ingest the complete log, or give "
            "--allow-partial to store it as a partial run (the complete log replaces it)");
      warnings.push_back(log + " is cut short (" + why + "): a partial run of the " +
                         num(s->replay->tables().eventCount) + " events written");
    }
    s->progress->restart("summarizing " + log);
    replay::Attribution a(s->replay->tables(), *s->namer, ex);
    store::RunSummary sum = store::summarize(*s->replay, a, so);
    s->progress->finish();
    sum.run.tags = tags;
    for (const std::string& n : sum.notes) warnings.push_back(log + ": " + n);
    summaries.push_back(std::move(sum));
  }

  auto st = store::Store::open(vm["store"].as<std::string>());
  Report r;
  r.query = "ingest";
  r.meta = {{"store", st->describe()}};
  r.warnings = warnings;
  Table t{"runs",
          {{"log"}, {"run"}, {"status"}, {"gcs", true}, {"points", true}, {"sites", true},
           {"leaks", true}},
          {}};
  for (size_t i = 0; i < logs.size(); ++i) {
    const store::RunSummary& s = summaries[i];
    bool written = st->put(s);
    bool partial = !store::partialOf(s.run.logId).empty();
    t.add({logs[i], s.run.logId,
           !written  ? (partial && st->has(store::partialOf(s.run.logId))
                            ? "complete run stored"
                            : "already stored")
           : partial ? "ingested (partial)"
                     : "ingested",
           num(s.gcs.size()),
           num(s.points.size()), num(s.sites.size()), num(s.leaks.size())});
  }
  r.tables.push_back(std::move(t));
  emit(r, out);
  return kExitOk;
}

}  // namespace

extern const Verb kIngestVerb{
    .name = "ingest",
    .synopsis = "[LOG...] --store FILE|URL [--run-tag KEY=VALUE]... [--at-each EVENT] [--top 100] "
                "[--allow-partial]",
    .summary = "write each log's summary to a store of many runs (SQLite file, ClickHouse)",
    .options = options,
    .runFile = run,
    .needs = {{"", "store"}},
    .inShell = false};

}  // namespace heapman::cli
