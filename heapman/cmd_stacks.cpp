// heapman stacks LOG [--at POINT | --from POINT --to POINT] [-o FILE]: folded stacks
// ("root;...;leaf VALUE" lines, for flamegraph.pl and speedscope) of the live set at a point, or
// of the garbage made over a range.
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>(), "live set at this point (default: end)")(
      "from", po::value<std::string>(), "garbage over a range: its start")(
      "to", po::value<std::string>(), "garbage over a range: its end (default: end)")(
      "objects", "count objects instead of bytes")(
      "output,o", po::value<std::string>(), "write to FILE (default: stdout)")(
      "no-symbols", "name native frames module+offset (no DWARF lookups)");
}

int run(Session& s, const po::variables_map& vm) {
  replay::Exclusions none;  // folded stacks keep every frame
  replay::Attribution a(s.replay->tables(), *s.namer, none);
  std::vector<replay::FoldedLine> lines;
  if (vm.count("from") || (vm.count("to") && !vm.count("at"))) {
    if (vm.count("at")) throw UsageError("--at and --from/--to exclude each other");
    lines = replay::foldedChurn(*s.replay, a, pointOf(s, vm, "from", "start"),
                                pointOf(s, vm, "to", "end"));
  } else {
    s.replay->seek(pointOf(s, vm, "at", "end"));
    lines = replay::foldedLive(*s.replay, a);
  }
  for (const std::string& w : replay::warnings(*s.replay))
    std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::string out;
  bool objects = vm.count("objects");
  for (const auto& l : lines)
    out += l.stack + " " + std::to_string(objects ? l.objects : l.bytes) + "\n";
  writeOutput(vm.count("output") ? vm["output"].as<std::string>() : "-", out);
  return kExitOk;
}

}  // namespace

extern const ReplayVerb kStacksVerb{"stacks", "[--at POINT | --from POINT --to POINT] [-o FILE]",
                                    "folded stacks of the live set or of a range's garbage",
                                    options, run};

}  // namespace heapman::cli
