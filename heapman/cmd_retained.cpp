// heapman retained LOG --at gc:N --by object|type|function [--top N] [--csv F]: retained sizes
// from the dominator tree of the heap graph (super-root over every root range). A type's or
// function's retained size counts each object once (its objects dominated by another of its
// objects are inside that one's).
#include "heapman/graph/graph_queries.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"),
                  "a dumped collection, gc:N (default: end)")(
      "by", po::value<std::string>()->default_value("type")->value_name("object|type|function"),
      "one row per object, type or allocating function");
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o);
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  std::string by = vm["by"].as<std::string>();
  graph::RetainedBy kind;
  if (by == "object")
    kind = graph::RetainedBy::kObject;
  else if (by == "type")
    kind = graph::RetainedBy::kType;
  else if (by == "function")
    kind = graph::RetainedBy::kFunction;
  else
    throw UsageError("--by " + by + ": give object, type or function");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  graph::RetainedResult res =
      graph::retainedBy(graph::graphSessionFor(*s.replay), a, at, kind, topOf(vm));
  Report r;
  r.query = "retained";
  r.meta = {{"log", s.path},
            {"point", "gc:" + std::to_string(res.gc)},
            {"heap", num(res.totalBytes) + " bytes in " + num(res.totalObjects) + " objects"},
            {"reachable nodes", num(res.reachable)}};
  const graph::GraphStats& st = graph::graphSessionFor(*s.replay).graph().stats();
  r.meta.push_back({"graph", num(st.rootRanges) + " root ranges, " + num(st.edges) + " edges (" +
                                 num(st.rootEdges) + " from roots), " + num(st.hitsInNoObject) +
                                 " hits in no object, " + num(st.untracked) + " untracked, " +
                                 num(st.skippedObjects) + " not scanned (pointer-free)"});
  if (st.preciseObjects)
    r.meta.push_back({"precise", num(st.preciseEdges) + " edges from " + num(st.preciseObjects) +
                                     " managed objects scanned by their class's layout; " +
                                     num(st.edges - st.preciseEdges) + " conservative"});
  r.meta.push_back({"alive but unreachable",
                    num(st.unreachable) + " objects" +
                        (st.unreachable ? " (roots or edges missing)" : "") + "; untracked: " +
                        num(st.unreachableUntracked)});
  r.warnings = replay::warnings(*s.replay);
  Table t;
  t.name = "retained";
  if (kind == graph::RetainedBy::kObject)
    t.columns = {{"address"}, {"type"}, {"function"}, {"size", true}, {"retained", true}};
  else if (kind == graph::RetainedBy::kType)
    t.columns = {{"type"}, {"objects", true}, {"bytes", true}, {"retained", true}};
  else
    t.columns = {{"function"}, {"location"}, {"objects", true}, {"bytes", true}, {"retained", true}};
  for (const auto& row : res.rows) {
    if (kind == graph::RetainedBy::kObject)
      t.add({row.name, row.module, row.location, num(row.bytes), num(row.retained)});
    else if (kind == graph::RetainedBy::kType)
      t.add({row.name, num(row.objects), num(row.bytes), num(row.retained)});
    else
      t.add({row.name, row.location, num(row.objects), num(row.bytes), num(row.retained)});
  }
  r.tables.push_back(std::move(t));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

// The rows by type name no function: the frame options apply to the other two.
extern const Verb kRetainedVerb{
    .name = "retained",
    .synopsis = "--at gc:N [--by object|type|function] [--top N]",
    .summary = "retained sizes from the dominator tree of a dumped GC",
    .options = options,
    .run = run,
    .needs = {{"", "at"},
              {"exclude", "by=object|by=function"},
              {"exclude-add", "by=object|by=function"}}};

}  // namespace heapman::cli
