// heapman stacks LOG [--at POINT | --from POINT --to POINT] [-o FILE]: folded stacks
// ("root;...;leaf VALUE" lines, for flamegraph.pl and speedscope) of the live set at a point, or
// of the garbage made over a range.
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "live set at this point (default: end)")(
      "from", po::value<std::string>()->value_name("POINT"), "garbage over a range: its start")(
      "to", po::value<std::string>()->value_name("POINT"),
      "garbage over a range: its end (default: end)")(
      "objects", "count objects instead of bytes")(
      "output,o", po::value<std::string>()->value_name("FILE"), "write to FILE (default: stdout)");
  addSymbolOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions none;  // folded stacks keep every frame
  replay::Attribution a(s.replay->tables(), *s.namer, none);
  std::vector<replay::FoldedLine> lines;
  if (vm.count("at") && (vm.count("from") || vm.count("to")))
    throw UsageError("--at and --from/--to exclude each other");
  if (vm.count("from") || vm.count("to")) {
    lines = replay::foldedChurn(*s.replay, a, pointOf(s, vm, "from", "start"),
                                pointOf(s, vm, "to", "end"));
  } else {
    s.replay->seek(pointOf(s, vm, "at", "end"));
    lines = replay::foldedLive(*s.replay, a);
  }
  for (const std::string& w : replay::warnings(*s.replay))
    sayLine("warning: " + w);
  std::string out;
  bool objects = vm.count("objects");
  for (const auto& l : lines)
    out += l.stack + " " + std::to_string(objects ? l.objects : l.bytes) + "\n";
  writeOutput(vm.count("output") ? vm["output"].as<std::string>() : "-", out);
  return kExitOk;
}

}  // namespace

extern const Verb kStacksVerb{.name = "stacks",
                              .synopsis = "[--at POINT | --from POINT --to POINT] [-o FILE]",
                              .summary = "folded stacks of the live set or of a range's garbage",
                              .options = options,
                              .run = run};

}  // namespace heapman::cli
