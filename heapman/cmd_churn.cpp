// heapman churn LOG [--from POINT] [--to POINT]: per blame function, what was allocated in the
// range and what died in it (collected by GCs, freed explicitly).
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("from", po::value<std::string>()->value_name("POINT"),
                  "start of the range (default: start)")(
      "to", po::value<std::string>()->value_name("POINT"), "end of the range (default: end)");
  addSortOption(o);
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t from = pointOf(s, vm, "from", "start"), to = pointOf(s, vm, "to", "end");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  replay::ChurnResult c = replay::churn(*s.replay, a, from, to, sortOf(vm), topOf(vm));
  Report r;
  r.query = "churn";
  r.meta = {{"log", s.path},
            {"from", c.from},
            {"to", c.to},
            {"garbage", num(c.collectedBytes) + " bytes collected (" + num(c.collectedObjects) +
                            " objects), " + num(c.freedBytes) + " bytes freed (" +
                            num(c.freedObjects) + " objects)"}};
  r.warnings = c.warnings;
  Table t{"functions",
          {{"function"}, {"module"}, {"location"}, {"garbage bytes", true},
           {"collected objects", true}, {"collected bytes", true}, {"freed objects", true},
           {"freed bytes", true}, {"allocated objects", true}, {"allocated bytes", true}},
          {}};
  for (const auto& row : c.rows)
    t.add({row.site.function, row.site.module, row.site.location, num(row.garbageBytes()),
           num(row.collectedObjects), num(row.collectedBytes), num(row.freedObjects),
           num(row.freedBytes), num(row.allocatedObjects), num(row.allocatedBytes)});
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kChurnVerb{
    .name = "churn",
    .synopsis = "[--from POINT] [--to POINT] [--sort ...] [--top N]",
    .summary = "garbage per blame function over a range (collected, freed)",
    .options = options,
    .run = run};

}  // namespace heapman::cli
