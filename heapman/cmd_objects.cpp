// heapman objects LOG --at gc:N [--type REGEX] [--function REGEX] [--top N]: the objects alive
// after a dumped collection, by retained size: address, size, type, allocation site, birth,
// in-degree and retained size (from the heap graph of the RAM dump).
#include "heapman/graph/graph_queries.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "type", po::value<std::string>()->value_name("REGEX"), "regex on the type name")(
      "function", po::value<std::string>()->value_name("REGEX"), "regex on the blame function")(
      "unreachable", "only objects alive after the GC that no recorded root reaches");
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o);
}


int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  graph::ObjectsFilter f;
  if (vm.count("type")) f.typeRegex = vm["type"].as<std::string>();
  if (vm.count("function")) f.functionRegex = vm["function"].as<std::string>();
  f.top = topOf(vm);
  f.unreachableOnly = vm.count("unreachable") > 0;
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  graph::GraphSession& gs = graph::graphSessionFor(*s.replay);
  graph::ObjectsResult res = graph::listObjects(gs, a, at, f);
  Report r;
  r.query = "objects";
  r.meta = {{"log", s.path},
            {"point", "gc:" + std::to_string(res.gc)},
            {"matched", num(res.matched) + " objects, " + num(res.matchedBytes) + " bytes"}};
  r.warnings = replay::warnings(*s.replay);
  Table t{"objects",
          {{"address"}, {"size", true}, {"type"}, {"function"}, {"location"}, {"birth seq", true},
           {"birth gc", true}, {"after event"}, {"thread", true}, {"in-degree", true},
           {"retained", true}},
          {}};
  for (const auto& o : res.rows)
    t.add({graph::hexAddress(o.address), num(o.size), o.type, o.function, o.location, num(o.birthSeq),
           num(o.birthGc), o.birthEvent, num(o.thread), num(o.inDegree), num(o.retained)});
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kObjectsVerb{.name = "objects",
                               .synopsis = "--at gc:N [--type RE] [--function RE] [--top N]",
                               .summary = "objects alive after a dumped GC, by retained size",
                               .options = options,
                               .run = run,
                               .needs = {{"", "at"}}};

}  // namespace heapman::cli
