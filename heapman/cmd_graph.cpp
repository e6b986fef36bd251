// heapman graph LOG --at gc:N --dot F | --gexf F [--by type|function] [--min-retained B]: the
// whole heap graph of a dumped GC for Graphviz or Gephi, one node per type (or allocating
// function) and per root range.
#include <sstream>

#include "heapman/graph/collapse.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "by", po::value<std::string>()->default_value("type")->value_name("type|function"),
      "one node per type or per allocating function")(
      "min-retained", po::value<uint64_t>()->default_value(0)->value_name("BYTES"),
      "leave out nodes retaining fewer bytes")(
      "max-nodes", po::value<size_t>()->default_value(2000)->value_name("N"), "nodes at most")(
      "dot", po::value<std::string>()->value_name("FILE.dot"),
      "write Graphviz DOT (dot -Tsvg FILE.dot)")(
      "gexf", po::value<std::string>()->value_name("FILE.gexf"), "write GEXF 1.3 (Gephi)");
  addFrameOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("dot") && !vm.count("gexf"))
    throw UsageError("give --dot FILE or --gexf FILE\nusage: heapman graph LOG --at gc:N --dot F");
  graph::CollapseRequest req;
  std::string by = vm["by"].as<std::string>();
  if (by == "type")
    req.by = graph::Collapse::kType;
  else if (by == "function" || by == "site")
    req.by = graph::Collapse::kFunction;
  else
    throw UsageError("--by " + by + ": give type or function");
  req.minRetained = vm["min-retained"].as<uint64_t>();
  req.maxNodes = vm["max-nodes"].as<size_t>();
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  graph::ExportGraph g = graph::collapsedGraph(graph::graphSessionFor(*s.replay), a, at, req);
  if (vm.count("dot")) {
    std::ostringstream out;
    graph::writeDot(out, g);
    writeOutput(vm["dot"].as<std::string>(), out.str());
  }
  if (vm.count("gexf")) {
    std::ostringstream out;
    graph::writeGexf(out, g, todayUtc());
    writeOutput(vm["gexf"].as<std::string>(), out.str());
  }
  sayLine(g.title + ": " + std::to_string(g.nodes.size()) + " nodes, " +
          std::to_string(g.edges.size()) + " edges" + (g.note.empty() ? "" : "; ") + g.note);
  return kExitOk;
}

}  // namespace

extern const Verb kGraphVerb{
    .name = "graph",
    .synopsis = "--at gc:N --dot F | --gexf F [--by type|function]",
    .summary = "the whole heap graph, collapsed per type, for Graphviz/Gephi",
    .options = options,
    .run = run,
    .needs = {{"", "at"},
              {"", "dot|gexf"},
              {"exclude", "by=function|by=site"},
              {"exclude-add", "by=function|by=site"}},
    .renamed = {{.old = "collapse", .now = "by"}}};

}  // namespace heapman::cli
