// heapman refs LOG --at gc:N ADDR [--in|--out] [--depth N]: what points to the object containing
// ADDR (--in, the default) or what it points to (--out), breadth-first to a depth.
#include "heapman/graph/graph_queries.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description& pos) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "address", po::value<std::string>()->value_name("ADDR"), "the address (hex)")(
      "in", "who points to it (default)")("out", "what it points to")(
      "depth", po::value<uint32_t>()->default_value(1)->value_name("N"), "levels to follow");
  pos.add("address", 1);
  addTopOption(o, 1000);
  addSymbolOptions(o);  // the rows name types, not functions: no exclusions
  addOutputOptions(o);
}


std::string label(const graph::NodeFacts& f) { return f.kind == "object" ? graph::hexAddress(f.address) : f.type; }

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("address")) throw UsageError("no address given\nusage: heapman refs LOG --at gc:N ADDR");
  if (vm.count("in") && vm.count("out")) throw UsageError("give --in or --out, not both");
  uint64_t address = graph::parseAddress(vm["address"].as<std::string>());
  replay::Exclusions ex;
  uint64_t at = pointOf(s, vm, "at", "end");
  bool incoming = !vm.count("out");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  auto rows = graph::references(graph::graphSessionFor(*s.replay), a, at, address, incoming,
                                vm["depth"].as<uint32_t>(), topOf(vm));
  Report r;
  r.query = "refs";
  r.meta = {{"log", s.path}, {"address", graph::hexAddress(address)}, {"direction", incoming ? "in" : "out"}};
  r.warnings = replay::warnings(*s.replay);
  Table t{"refs",
          {{"depth", true}, {"from"}, {"from type"}, {"offset", true}, {"to"}, {"to type"},
           {"to size", true}},
          {}};
  for (const auto& x : rows)
    t.add({num(x.depth), label(x.from), x.from.type, num(x.offset), label(x.to), x.to.type,
           num(x.to.size)});
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kRefsVerb{.name = "refs",
                            .synopsis = "--at gc:N ADDR [--in|--out] [--depth N]",
                            .summary = "references to or from an object, to a depth",
                            .options = options,
                            .run = run,
                            .needs = {{"", "at"}, {"", "address"}},
                            .renamed = {{.old = "limit", .now = "top"}}};

}  // namespace heapman::cli
