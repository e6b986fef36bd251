// heapman blame LOG [--at POINT]: live bytes per blame function (the first stack frame, from the
// leaf, that no leaf-exclusion regex matches).
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>(), "point (default: end)");
  addQueryOptions(o);
}

std::string topTypes(const replay::BlameRow& row) {
  std::string s;
  for (const auto& t : row.types)
    s += (s.empty() ? "" : ", ") + t.type + " " + std::to_string(t.bytes);
  return s;
}

int run(Session& s, const po::variables_map& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  s.replay->seek(at);
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  replay::BlameResult b = replay::blame(*s.replay, a, sortOf(vm), topOf(vm));
  Report r;
  r.query = "blame";
  r.meta = {{"log", s.path},
            {"point", b.point},
            {"live", num(b.totalBytes) + " bytes in " + num(b.totalObjects) + " objects"}};
  r.warnings = b.warnings;
  Table t{"functions",
          {{"function"}, {"module"}, {"location"}, {"live bytes", true}, {"live objects", true},
           {"share", true}, {"top types"}},
          {}};
  for (const auto& row : b.rows)
    t.add({row.site.function, row.site.module, row.site.location, num(row.bytes),
           num(row.objects), percent(row.share), topTypes(row)});
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const ReplayVerb kBlameVerb{"blame", "[--at POINT] [--sort bytes|objects|name] [--top N]",
                                   "live bytes and objects per blame function at a point",
                                   options, run};

}  // namespace heapman::cli
