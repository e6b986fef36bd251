// heapman paths LOG --at gc:N ADDR | --type REGEX [--max-paths N] [--dot F] [--gexf F]: why an
// object is alive: the shortest path from each root range that reaches it (or, for --type, any
// of the type's objects, merged per type), as a table and as pictures for Graphviz and Gephi.
#include <sstream>

#include "heapman/graph/paths.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description& pos) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "address", po::value<std::string>()->value_name("ADDR"), "the object's address (hex)")(
      "type", po::value<std::string>()->value_name("REGEX"),
      "every object of the types matching REGEX")(
      "max-paths", po::value<size_t>()->default_value(10)->value_name("N"), "paths listed")(
      "max-nodes", po::value<size_t>()->default_value(2000)->value_name("N"),
      "nodes drawn in --dot / --gexf")(
      "dot", po::value<std::string>()->value_name("FILE.dot"),
      "write the paths as Graphviz DOT (dot -Tsvg FILE.dot)")(
      "gexf", po::value<std::string>()->value_name("FILE.gexf"),
      "write the paths as GEXF 1.3 (Gephi)");
  pos.add("address", 1);
  addFrameOptions(o);
  addOutputOptions(o);
}


int run(Session& s, const VerbOptions& vm) {
  if (vm.count("address") == vm.count("type"))
    throw UsageError("give an address or --type REGEX\nusage: heapman paths LOG --at gc:N ADDR");
  graph::PathsRequest req;
  if (vm.count("address")) req.address = graph::parseAddress(vm["address"].as<std::string>());
  if (vm.count("type")) req.typeRegex = vm["type"].as<std::string>();
  req.maxPaths = vm["max-paths"].as<size_t>();
  req.maxNodes = vm["max-nodes"].as<size_t>();
  if (req.maxNodes < 2) throw UsageError("--max-nodes must be at least 2");
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  graph::PathsResult res = graph::rootPaths(graph::graphSessionFor(*s.replay), a, at, req);

  Report r;
  r.query = "paths";
  r.meta = {{"log", s.path},
            {"point", "gc:" + std::to_string(res.gc)},
            {"targets", num(res.targets) + " objects, " + num(res.targetBytes) + " bytes"},
            {"roots reaching them", num(res.rootsReaching)}};
  if (!res.rootsReaching)
    r.meta.push_back({"note", "no root reaches them: the collector kept them through memory the "
                              "recorder does not see (a register, an unrecorded root)"});
  r.warnings = replay::warnings(*s.replay);
  Table t{"paths",
          {{"path", true}, {"step", true}, {"node"}, {"type"}, {"field", true}, {"size", true},
           {"retained", true}, {"function"}},
          {}};
  for (size_t p = 0; p < res.paths.size(); ++p)
    for (size_t i = 0; i < res.paths[p].size(); ++i) {
      const graph::PathStep& st = res.paths[p][i];
      bool object = st.node.kind == "object";
      std::string node = object ? graph::hexAddress(st.node.address) : st.node.type;
      std::string type = object ? st.node.type : st.node.heap;
      t.add({num(p + 1), num(i), node, type, st.offset < 0 ? "" : "+" + num(st.offset),
             num(st.node.size), num(st.node.retained), st.node.function});
    }
  r.tables.push_back(std::move(t));
  if (vm.count("dot")) {
    std::ostringstream out;
    graph::writeDot(out, res.picture);
    writeOutput(vm["dot"].as<std::string>(), out.str());
  }
  if (vm.count("gexf")) {
    std::ostringstream out;
    graph::writeGexf(out, res.picture, todayUtc());
    writeOutput(vm["gexf"].as<std::string>(), out.str());
  }
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kPathsVerb{.name = "paths",
                             .synopsis = "--at gc:N ADDR | --type REGEX [--dot F] [--gexf F]",
                             .summary = "why objects are alive: shortest paths from the roots",
                             .options = options,
                             .run = run,
                             .needs = {{"", "at"},
                                       {"", "address|type"},
                                       {"max-nodes", "dot|gexf"}}};

}  // namespace heapman::cli
