// heapman types LOG [--at POINT] [--since POINT]: live objects per type at a point; with --since,
// at both points and the generation born between them (FBAllocationTracker's view); where both
// points have RAM dumps, also their objects compared (new / survived / freed).
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"), "point (default: end)")(
      "since", po::value<std::string>()->value_name("POINT"),
      "an earlier point: counts at both, and what was born between");
  addSortOption(o);
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o, {"types", "dump-types", "dump-sites"});
}

int run(Session& s, const VerbOptions& vm) {
  uint64_t at = pointOf(s, vm, "at", "end");
  bool since = vm.count("since") > 0;
  uint64_t against = since ? pointOf(s, vm, "since") : 0;
  replay::TypesResult res =
      replay::typeCounts(*s.replay, at, since ? &against : nullptr, sortOf(vm), topOf(vm));
  Report r;
  r.query = "types";
  r.meta = {{"log", s.path}, {"point", res.at}};
  if (!res.compareTo.empty()) r.meta.push_back({"compared to", res.compareTo});
  r.warnings = res.warnings;
  Table t{"types", {{"type"}}, {}};
  bool two = !res.compareTo.empty();
  if (two)
    for (const char* c : {"objects A", "bytes A", "objects B", "bytes B", "delta objects",
                          "delta bytes", "born between", "born between bytes"})
      t.columns.push_back({c, true});
  else
    t.columns.push_back({"objects", true}), t.columns.push_back({"bytes", true});
  for (const auto& x : res.rows) {
    if (two)
      t.add({x.type, num(x.objectsA), num(x.bytesA), num(x.objectsB), num(x.bytesB),
             snum(int64_t(x.objectsB) - int64_t(x.objectsA)),
             snum(int64_t(x.bytesB) - int64_t(x.bytesA)), num(x.bornBetween),
             num(x.bornBetweenBytes)});
    else
      t.add({x.type, num(x.objectsB), num(x.bytesB)});
  }
  r.tables.push_back(std::move(t));
  if (two) {
    replay::Exclusions ex = exclusionsOf(vm);  // the Attribution keeps a reference
    replay::Attribution a(s.replay->tables(), *s.namer, ex);
    addDumpDiff(s, a, against, at, sortOf(vm), topOf(vm), r);
  }
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

// Blame's functions appear only in the dump comparison, with --since: so do the frame options.
extern const Verb kTypesVerb{
    .name = "types",
    .synopsis = "[--at POINT] [--since POINT]",
    .summary = "live objects per type at a point, or compared with another",
    .options = options,
    .run = run,
    .needs = {{"exclude", "since"},
              {"exclude-add", "since"},
              {"no-symbols", "since"},
              {"debug-dir", "since"},
              {"path-map", "since"},
              {"table", "csv"}},
    .renamed = {{.old = "compare", .now = "since"}},
    .prefixOnly = true};

}  // namespace heapman::cli
