// heapman compare LOG OTHER_LOG [--at POINT] [--at-b POINT]: two runs or two builds of one level,
// per blame function and per type (A = LOG, B = OTHER_LOG).
#include "session.h"

namespace heapman::cli {

Table compareTable(const char* name, const char* key, const std::vector<replay::DiffRow>& rows,
                   bool withSite);

namespace {

void options(po::options_description& o, po::positional_options_description& pos) {
  o.add_options()("other", po::value<std::string>()->value_name("LOG"),
                  "the log to compare with (B)")(
      "at", po::value<std::string>()->value_name("POINT"), "point in both logs (default: end)")(
      "at-b", po::value<std::string>()->value_name("POINT"),
      "point in the other log (default: --at)");
  pos.add("other", 1);
  addSortOption(o);
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o, {"functions", "types"});
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("other")) throw UsageError("no other log to compare with");
  replay::Exclusions ex = exclusionsOf(vm);
  auto other = Session::open(vm["other"].as<std::string>(), s.symbols);
  uint64_t pa = pointOf(s, vm, "at", "end");
  uint64_t pb = vm.count("at-b") ? pointOf(*other, vm, "at-b") : pointOf(*other, vm, "at", "end");
  replay::Attribution aa(s.replay->tables(), *s.namer, ex);
  replay::Attribution ab(other->replay->tables(), *other->namer, ex);
  replay::DiffResult d =
      replay::compareLogs(*s.replay, aa, pa, *other->replay, ab, pb, sortOf(vm), topOf(vm));
  Report r;
  r.query = "compare";
  r.meta = {{"a", d.from}, {"b", d.to}};
  r.warnings = d.warnings;
  r.tables.push_back(compareTable("functions", "function", d.functions, true));
  r.tables.push_back(compareTable("types", "type", d.types, false));
  emit(r, outputOptions(vm));
  if (const auto& damage = other->replay->damage()) {  // the first log's: runOneShot says it
    sayLine("heapman compare: " + other->path + " is damaged (" + damage->what() +
            "): the answer covers only the intact part before it; run `heapman verify " +
            other->path + "` for details");
    return kExitBadLog;
  }
  return kExitOk;
}

}  // namespace

extern const Verb kCompareVerb{.name = "compare",
                               .synopsis = "OTHER_LOG [--at POINT] [--at-b POINT]",
                               .summary = "blame and per-type deltas between two logs",
                               .options = options,
                               .run = run,
                               .needs = {{"", "other"}, {"table", "csv"}},
                               .renamed = {{.old = "by", .now = "table"}}};

}  // namespace heapman::cli
