// heapman diff LOG --from POINT --to POINT: growth per blame function and per type between two
// points; --born lists the objects born in between and still alive at --to. Where both points
// have RAM dumps, the objects of the two dumps compared too: new, survived and freed per type and
// per site, with retained sizes.
#include "heapman/graph/dump_diff.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("from", po::value<std::string>()->value_name("POINT"), "first point (A)")(
      "to", po::value<std::string>()->value_name("POINT"), "second point (B)")(
      "born", "list objects born between A and B and alive at B")(
      "born-limit", po::value<size_t>()->default_value(1000)->value_name("N"),
      "at most N born objects (0: all)");
  addSortOption(o);
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o, {"functions", "types", "born", "dump-types", "dump-sites"});
}

Table diffTable(const char* name, const char* key, const std::vector<replay::DiffRow>& rows,
                bool withSite) {
  Table t{name, {{key}}, {}};
  if (withSite) t.columns.push_back({"module"}), t.columns.push_back({"location"});
  for (const char* c : {"objects A", "bytes A", "objects B", "bytes B", "delta objects",
                        "delta bytes"})
    t.columns.push_back({c, true});
  for (const auto& r : rows) {
    std::vector<std::string> row{r.name};
    if (withSite) row.push_back(r.module), row.push_back(r.location);
    for (std::string v : {num(r.objectsA), num(r.bytesA), num(r.objectsB), num(r.bytesB),
                          snum(r.deltaObjects()), snum(r.deltaBytes())})
      row.push_back(v);
    t.add(row);
  }
  return t;
}

Table dumpTable(const char* name, const char* key, const std::vector<graph::DumpDiffRow>& rows,
                bool withSite) {
  Table t{name, {{key}}, {}};
  if (withSite) t.columns.push_back({"location"});
  for (const char* c : {"new objects", "new bytes", "survived objects", "survived bytes",
                        "freed objects", "freed bytes", "delta bytes", "retained A", "retained B",
                        "delta retained"})
    t.columns.push_back({c, true});
  for (const auto& r : rows) {
    std::vector<std::string> row{r.name};
    if (withSite) row.push_back(r.location);
    for (std::string v :
         {num(r.newObjects), num(r.newBytes), num(r.survivedObjects), num(r.survivedBytes),
          num(r.freedObjects), num(r.freedBytes), snum(r.deltaBytes()), num(r.retainedA),
          num(r.retainedB), snum(int64_t(r.retainedB) - int64_t(r.retainedA))})
      row.push_back(v);
    t.add(row);
  }
  return t;
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t from = pointOf(s, vm, "from"), to = pointOf(s, vm, "to");
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  replay::DiffResult d = replay::diff(*s.replay, a, from, to, vm.count("born") > 0, sortOf(vm),
                                      topOf(vm), vm["born-limit"].as<size_t>());
  Report r;
  r.query = "diff";
  r.meta = {{"log", s.path}, {"from", d.from}, {"to", d.to}};
  r.warnings = d.warnings;
  r.tables.push_back(diffTable("functions", "function", d.functions, true));
  r.tables.push_back(diffTable("types", "type", d.types, false));
  addDumpDiff(s, a, from, to, sortOf(vm), topOf(vm), r);
  if (vm.count("born")) {
    Table t{"born",
            {{"seq", true}, {"address"}, {"size", true}, {"epoch", true}, {"type"}, {"function"}},
            {}};
    for (const auto& b : d.born) {
      char addr[24];
      std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(b.address));
      t.add({num(b.seq), addr, num(b.size), num(b.epoch), b.type, b.function});
    }
    r.tables.push_back(std::move(t));
  }
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

void addDumpDiff(Session& s, replay::Attribution& a, uint64_t from, uint64_t to,
                 replay::SortBy sort, size_t top, Report& r) {
  graph::GraphSession& g = graph::graphSessionFor(*s.replay);
  auto dumpA = graph::dumpedGcAt(*s.replay, g.store(), from);
  auto dumpB = graph::dumpedGcAt(*s.replay, g.store(), to);
  if (!dumpA || !dumpB) {
    if (!g.store().dumpedGcs().empty())
      r.meta.push_back({"objects", "not compared: " + std::string(!dumpA ? "A" : "B") +
                                       " has no RAM dump (dumps: " + g.store().describeDumped() +
                                       ")"});
    return;
  }
  if (dumpA->gc == dumpB->gc) return;
  graph::DumpDiffResult d = graph::dumpDiff(g, a, from, to, sort, top);
  r.meta.push_back({"objects", "gc:" + std::to_string(d.gcA) + " and gc:" +
                                   std::to_string(d.gcB) + " dumps: " + num(d.newObjects) +
                                   " new, " + num(d.survivedObjects) + " survived, " +
                                   num(d.freedObjects) + " freed"});
  r.tables.push_back(dumpTable("dump-types", "type", d.types, false));
  r.tables.push_back(dumpTable("dump-sites", "function", d.sites, true));
}

Table compareTable(const char* name, const char* key, const std::vector<replay::DiffRow>& rows,
                   bool withSite) {
  return diffTable(name, key, rows, withSite);
}

extern const Verb kDiffVerb{
    .name = "diff",
    .synopsis = "--from POINT --to POINT [--born] [--table functions|types]",
    .summary = "growth per blame function and per type between two points",
    .options = options,
    .run = run,
    .needs = {{"", "from"}, {"", "to"}, {"born-limit", "born"}, {"table", "csv"}},
    .renamed = {{.old = "by", .now = "table"}},
    .prefixOnly = true};

}  // namespace heapman::cli
