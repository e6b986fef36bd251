// heapman allocs LOG [--from POINT] [--to POINT] [--type REGEX] [--function REGEX] [--top N]:
// the allocations and deaths (free, realloc, collected, replaced) of a type or blame function in
// a range, in sequence order.
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("from", po::value<std::string>()->value_name("POINT"),
                  "start of the range (default: start)")(
      "to", po::value<std::string>()->value_name("POINT"), "end of the range (default: end)")(
      "type", po::value<std::string>()->value_name("REGEX"),
      "regex on the type name ('(native)' for untyped)")(
      "function", po::value<std::string>()->value_name("REGEX"), "regex on the blame function")(
      "allocs-only", "allocations only")("frees-only", "deaths only");
  addTopOption(o, 1000, "events");
  addFrameOptions(o);
  addOutputOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t from = pointOf(s, vm, "from", "start"), to = pointOf(s, vm, "to", "end");
  replay::AllocFilter f;
  if (vm.count("type")) f.typeRegex = vm["type"].as<std::string>();
  if (vm.count("function")) f.functionRegex = vm["function"].as<std::string>();
  f.allocs = !vm.count("frees-only");
  f.frees = !vm.count("allocs-only");
  if (!f.allocs && !f.frees) throw UsageError("give --allocs-only or --frees-only, not both");
  f.limit = topOf(vm);
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  replay::AllocsResult res = replay::listAllocs(*s.replay, a, from, to, f);
  Report r;
  r.query = "allocs";
  r.meta = {{"log", s.path}, {"from", res.from}, {"to", res.to},
            {"matched", num(res.matched) + (res.matched > res.events.size()
                                                ? " (first " + num(res.events.size()) + " shown)"
                                                : "")}};
  r.warnings = res.warnings;
  Table t{"events",
          {{"seq", true}, {"event"}, {"address"}, {"size", true}, {"heap"}, {"type"}, {"function"},
           {"thread", true}},
          {}};
  for (const auto& e : res.events) {
    char addr[24];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(e.address));
    t.add({num(e.seq), e.kind, addr, num(e.size), e.heap, e.type, e.function, num(e.thread)});
  }
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kAllocsVerb{
    .name = "allocs",
    .synopsis = "[--from POINT] [--to POINT] [--type RE] [--function RE] [--top N]",
    .summary = "dump allocations and frees of a type or function in a range",
    .options = options,
    .run = run,
    .renamed = {{.old = "limit", .now = "top"}}};

}  // namespace heapman::cli
