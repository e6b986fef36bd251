// heapman types LOG [--at POINT] [--compare POINT]: live objects per type at a point; with
// --compare, at both points and the generation born between them (FBAllocationTracker's view);
// where both points have RAM dumps, also their objects compared (new / survived / freed).
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>(), "point (default: end)")(
      "compare", po::value<std::string>(), "an earlier point to compare with");
  addQueryOptions(o);
}

int run(Session& s, const po::variables_map& vm) {
  uint64_t at = pointOf(s, vm, "at", "end");
  uint64_t against = vm.count("compare") ? pointOf(s, vm, "compare") : 0;
  replay::TypesResult res = replay::typeCounts(*s.replay, at, vm.count("compare") ? &against : nullptr,
                                               sortOf(vm), topOf(vm));
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

extern const ReplayVerb kTypesVerb{"types", "[--at POINT] [--compare POINT]",
                                   "live objects per type at a point, or compared with another",
                                   options, run};

}  // namespace heapman::cli
