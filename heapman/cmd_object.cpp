// heapman object LOG --at gc:N ADDR: the allocation containing ADDR after a dumped collection
// (or "in no object" with the nearest ones): type, site, birth, stack, its words in hex and ASCII
// with each pointer annotated, then who points to it (with the field offsets) and what it points to.
#include "heapman/graph/graph_queries.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description& pos) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "address", po::value<std::string>()->value_name("ADDR"), "the address (hex)");
  pos.add("address", 1);
  addTopOption(o, 100, "references each way");
  addFrameOptions(o);
  addOutputOptions(o, {"words", "pointed_to_by", "points_to", "stack"});
}


Table refTable(const char* name, const std::vector<graph::Reference>& refs, bool incoming) {
  Table t{name,
          {{incoming ? "from" : "to"}, {"type"}, {"function"}, {"offset", true}, {"value"}},
          {}};
  for (const auto& x : refs)
    t.add({x.other.kind == "object" ? graph::hexAddress(x.other.address) : x.other.type, x.other.type,
           x.other.function, num(x.offset), graph::hexAddress(x.target)});
  return t;
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("address")) throw UsageError("no address given\nusage: heapman object LOG --at gc:N ADDR");
  uint64_t address = graph::parseAddress(vm["address"].as<std::string>());
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  graph::ObjectResult res = graph::describeObject(graph::graphSessionFor(*s.replay), a, at,
                                                  address, topOf(vm));
  Report r;
  r.query = "object";
  r.meta = {{"log", s.path}, {"point", "gc:" + std::to_string(res.gc)}, {"address", graph::hexAddress(address)}};
  r.warnings = replay::warnings(*s.replay);
  if (!res.found) {
    Table t{"nearest", {{"address"}, {"size", true}, {"type"}, {"function"}}, {}};
    for (const auto& n : res.nearest) t.add({graph::hexAddress(n.address), num(n.size), n.type, n.function});
    r.tables.push_back(std::move(t));
    sayLine("heapman object: " + graph::hexAddress(address) + " is in no object alive at GC " +
            std::to_string(res.gc) + "; the nearest ones:");
    emit(r, outputOptions(vm));
    return kExitUsage;
  }
  const graph::NodeFacts& o = res.object;
  r.meta.push_back({"object", graph::hexAddress(o.address) + " (+" + std::to_string(address - o.address) + ")"});
  r.meta.push_back({"size", num(o.size)});
  r.meta.push_back({"type", o.type});
  r.meta.push_back({"heap", o.heap});
  r.meta.push_back({"site", o.function + (o.location.empty() ? "" : " (" + o.location + ")")});
  r.meta.push_back({"birth", "seq " + num(o.birthSeq) + ", after GC " + num(o.birthGc) +
                                 (o.birthEvent.empty() ? "" : " (after " + o.birthEvent + ")") +
                                 ", thread " + num(o.thread)});
  r.meta.push_back({"in-degree", num(o.inDegree)});
  r.meta.push_back({"retained", num(o.retained)});
  Table stack{"stack", {{"frame"}}, {}};
  for (const auto& f : res.stack) stack.add({f});
  Table words{"words", {{"offset", true}, {"value"}, {"ascii"}, {"points to"}}, {}};
  for (const auto& w : res.words) {
    char v[24];
    std::snprintf(v, sizeof v, "%016llx", static_cast<unsigned long long>(w.value));
    words.add({num(w.offset), v, w.ascii, w.pointsTo});
  }
  r.tables.push_back(std::move(words));
  r.tables.push_back(refTable("pointed_to_by", res.in, true));
  r.tables.push_back(refTable("points_to", res.out, false));
  r.tables.push_back(std::move(stack));
  r.meta.push_back({"references", num(res.inTotal) + " in, " + num(res.outTotal) + " out"});
  OutputOptions out = outputOptions(vm);
  out.privateFiles = true;  // the object's words are the program's memory
  emit(r, out);
  return kExitOk;
}

}  // namespace

extern const Verb kObjectVerb{
    .name = "object",
    .synopsis = "--at gc:N ADDR",
    .summary = "the object containing an address: contents, pointers in and out",
    .options = options,
    .run = run,
    .needs = {{"", "at"}, {"", "address"}, {"table", "csv"}},
    .renamed = {{.old = "limit", .now = "top"}}};

}  // namespace heapman::cli
