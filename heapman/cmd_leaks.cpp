// heapman leaks LOG [--at-each EVENT | --gcs N,M,...] [--min-points 3] [--top N] [--csv F]
// [--json F] [--dot-dir DIR] [--explain]: what grows every time the program comes back to the same
// state (replay/leaks/include/heapman/leaks/leaks.h): growing sites and types, and with RAM dumps
// the growing containers, where their growth collects, their root path and a sentence each.
#include <cmath>
#include <filesystem>
#include <sstream>

#include "heapman/leaks/leaks.h"
#include "json.h"
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at-each", po::value<std::string>()->value_name("EVENT"),
                  "compare the heap at each occurrence of this custom event")(
      "gcs", po::value<std::string>()->value_name("N,M,..."),
      "compare the heap after these GCs")(
      "min-points", po::value<size_t>()->default_value(3)->value_name("N"),
      "fewest points to compare")(
      "dot-dir", po::value<std::string>()->value_name("DIR"),
      "write each suspect's root path as DIR/suspect-N.dot")(
      "explain", "say why each near miss (grew, but not at every point) was dropped");
  addTopOption(o, 10, "suspects and growing sites and types");
  addFrameOptions(o);
  addOutputOptions(o, {"suspects", "sites", "types", "paths", "points", "dropped"});
}

std::vector<uint32_t> parseGcs(const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v > UINT32_MAX)
      throw UsageError("--gcs takes GC numbers separated by commas (--gcs 4,8,12), not '" + text +
                       "'");
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

std::string series(const std::vector<uint64_t>& v) {
  std::string s;
  for (uint64_t x : v) s += (s.empty() ? "" : " ") + num(x);
  return s;
}

std::string steps(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " | ") + x;
  return s;
}

std::string fixed1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, std::fabs(v - std::round(v)) < 0.05 ? "%.0f" : "%.1f", v);
  return b;
}

// The container column: its type and address (a root range as the container: its name).
std::string containerText(const leaks::Suspect& sp) {
  return (sp.containerType.empty() ? sp.holder : sp.containerType) + " at " +
         graph::hexAddress(sp.containerAddress);
}

// `heapman leaks --json`: one document, its shape in docs/leaks.schema.json. Numbers are JSON
// numbers, flags booleans, series arrays; every key appears once.
std::string jsonArray(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + "]";
}

std::string jsonNumbers(const std::vector<uint64_t>& v) {
  std::vector<std::string> items;
  for (uint64_t x : v) items.push_back(std::to_string(x));
  return jsonArray(items);
}

std::string jsonStrings(const std::vector<std::string>& v) {
  std::vector<std::string> items;
  for (const std::string& x : v) items.push_back(jsonString(x));
  return jsonArray(items);
}

std::string jsonDouble(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string growthJson(const std::vector<leaks::GrowthRow>& rows, bool site) {
  std::vector<std::string> out;
  for (const leaks::GrowthRow& row : rows) {
    JsonObject o;
    o.str(site ? "function" : "type", row.name);
    if (site) o.str("module", row.module);
    o.raw("bytes_per_step", std::to_string(row.trend.perStep))
        .num("rises", row.trend.rises)
        .num("steps", row.trend.steps)
        .raw("bytes_at_points", jsonNumbers(row.bytes))
        .raw("objects_at_points", jsonNumbers(row.objects));
    out.push_back(o.str());
  }
  return jsonArray(out);
}

std::string leaksJson(const std::string& log, const leaks::LeaksResult& res, bool explain) {
  JsonObject j;
  j.str("query", "leaks").str("log", log);
  j.raw("event", res.event.empty() ? "null" : jsonString(res.event));
  j.str("chosen_as", res.chosenBecause);
  j.num("dumped_points", res.dumpedPoints);
  j.raw("note", res.graphNote.empty() ? "null" : jsonString(res.graphNote));
  j.raw("warnings", jsonStrings(res.warnings));
  std::vector<std::string> points;
  for (const leaks::LeakPoint& p : res.points) {
    JsonObject o;
    o.str("point", p.name)
        .raw("gc", p.gc ? std::to_string(p.gc) : "null")
        .boolean("dumped", p.dumped)
        .num("live_objects", p.liveObjects)
        .num("live_bytes", p.liveBytes);
    points.push_back(o.str());
  }
  j.raw("points", jsonArray(points));
  std::vector<std::string> suspects;
  for (size_t i = 0; i < res.suspects.size(); ++i) {
    const leaks::Suspect& sp = res.suspects[i];
    JsonObject o;
    o.num("rank", i + 1)
        .str("holder", sp.holder)
        .str("holder_kind", sp.holderKind)
        .str("holder_type", sp.holderType)
        .str("holder_frame", sp.holderFrame)
        .raw("stacks_too", jsonStrings(sp.stacksToo))
        .str("container", containerText(sp))
        .str("container_type", sp.containerType)
        .str("container_site", sp.containerSite)
        .str("container_address", graph::hexAddress(sp.containerAddress))
        .boolean("chain", sp.chain)
        .num("bytes_per_step", static_cast<uint64_t>(sp.bytesPerStep))
        .raw("entries_per_step", jsonDouble(sp.entriesPerStep))
        .num("entries", sp.entries)
        .str("entry_type", sp.entryType)
        .str("entry_site", sp.entrySite)
        .num("entry_keeps", sp.entryKeeps)
        .raw("retained_at_points", jsonNumbers(sp.retained))
        .raw("entry_sites_by_step", jsonStrings(sp.stepSites))
        .str("sentence", sp.sentence);
    suspects.push_back(o.str());
  }
  j.raw("suspects", jsonArray(suspects));
  // The root paths, one row a step: root first, the container (or a root range's first entry)
  // last; field: the offset of the word in the step before that points here (null: the root).
  std::vector<std::string> path;
  for (size_t i = 0; i < res.suspects.size(); ++i)
    for (size_t k = 0; k < res.suspects[i].path.size(); ++k) {
      const graph::PathStep& st = res.suspects[i].path[k];
      bool object = st.node.kind == "object";
      JsonObject o;
      o.num("suspect", i + 1)
          .num("step", k)
          .str("node", object ? graph::hexAddress(st.node.address) : st.node.type)
          .str("type", object ? st.node.type : st.node.heap)
          .raw("field", st.offset < 0 ? "null" : std::to_string(st.offset))
          .num("size", st.node.size)
          .num("retained", st.node.retained)
          .str("function", st.node.function);
      path.push_back(o.str());
    }
  j.raw("paths", jsonArray(path));
  j.raw("sites", growthJson(res.sites, true));
  j.raw("types", growthJson(res.types, false));
  if (explain) {
    std::vector<std::string> dropped;
    for (const leaks::NearMiss& m : res.nearMisses) {
      JsonObject o;
      o.str("near_miss", m.what).str("why", m.why);
      dropped.push_back(o.str());
    }
    j.raw("dropped", jsonArray(dropped));
  }
  return j.str() + "\n";
}

int run(Session& s, const VerbOptions& vm) {
  leaks::LeaksRequest req;
  if (vm.count("at-each") && vm.count("gcs"))
    throw UsageError("give --at-each EVENT or --gcs N,M,..., not both");
  if (vm.count("at-each")) req.atEach = vm["at-each"].as<std::string>();
  if (vm.count("gcs")) req.gcs = parseGcs(vm["gcs"].as<std::string>());
  req.minPoints = vm["min-points"].as<size_t>();
  if (req.minPoints < 2) throw UsageError("--min-points must be at least 2");
  req.top = topOf(vm);
  replay::Exclusions ex = exclusionsOf(vm);
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  leaks::LeaksResult res = leaks::findLeaks(*s.replay, a, req);

  Report r;
  r.query = "leaks";
  std::string pts;
  for (const leaks::LeakPoint& p : res.points)
    pts += (pts.empty() ? "" : ", ") + p.name + (p.gc && p.name.rfind("gc:", 0) != 0
                                                    ? " (gc:" + std::to_string(p.gc) + ")"
                                                    : std::string());
  r.meta = {{"log", s.path},
            {"points", pts},
            {"chosen as", res.chosenBecause},
            {"dumped points", num(res.dumpedPoints)}};
  if (!res.graphNote.empty()) r.meta.push_back({"note", res.graphNote});
  r.meta.push_back({"suspects", num(res.suspects.size())});
  for (size_t i = 0; i < res.suspects.size(); ++i)
    r.meta.push_back({"suspect " + num(i + 1), res.suspects[i].sentence});
  r.warnings = res.warnings;

  Table sus{"suspects",
            {{"rank", true}, {"holder"}, {"holder type"}, {"container"}, {"container site"},
             {"bytes per step", true}, {"entries per step"}, {"entry type"}, {"entry site"},
             {"entry keeps", true}, {"retained at points"}, {"entry sites by step"},
             {"sentence"}},
            {}};
  for (size_t i = 0; i < res.suspects.size(); ++i) {
    const leaks::Suspect& sp = res.suspects[i];
    sus.add({num(i + 1), sp.holder, sp.holderType,
             containerText(sp), sp.containerSite,
             num(static_cast<uint64_t>(sp.bytesPerStep)), fixed1(sp.entriesPerStep), sp.entryType,
             sp.entrySite, num(sp.entryKeeps), series(sp.retained), steps(sp.stepSites),
             sp.sentence});
  }
  Table path{"paths",
             {{"suspect", true}, {"step", true}, {"node"}, {"type"}, {"field", true},
              {"size", true}, {"retained", true}, {"function"}},
             {}};
  for (size_t i = 0; i < res.suspects.size(); ++i)
    for (size_t j = 0; j < res.suspects[i].path.size(); ++j) {
      const graph::PathStep& st = res.suspects[i].path[j];
      bool object = st.node.kind == "object";
      path.add({num(i + 1), num(j), object ? graph::hexAddress(st.node.address) : st.node.type,
                object ? st.node.type : st.node.heap, st.offset < 0 ? "" : "+" + num(st.offset),
                num(st.node.size), num(st.node.retained), st.node.function});
    }
  auto growth = [](const char* name, const std::vector<leaks::GrowthRow>& rows, bool site) {
    Table t{name, {}, {}};
    t.columns = {{site ? "function" : "type"}};
    if (site) t.columns.push_back({"module"});
    t.columns.push_back({"bytes per step", true});
    t.columns.push_back({"rises"});  // "2/3": text, not a JSON number
    t.columns.push_back({"bytes at points"});
    t.columns.push_back({"objects at points"});
    for (const leaks::GrowthRow& row : rows) {
      std::vector<std::string> cells{row.name};
      if (site) cells.push_back(row.module);
      cells.push_back(snum(row.trend.perStep));
      cells.push_back(num(row.trend.rises) + "/" + num(row.trend.steps));
      cells.push_back(series(row.bytes));
      cells.push_back(series(row.objects));
      t.add(std::move(cells));
    }
    return t;
  };
  r.tables.push_back(std::move(sus));
  r.tables.push_back(growth("sites", res.sites, true));
  r.tables.push_back(growth("types", res.types, false));
  r.tables.push_back(std::move(path));
  Table points{"points",
               {{"point"}, {"gc", true}, {"dumped"}, {"live objects", true}, {"live bytes", true}},
               {}};
  for (const leaks::LeakPoint& p : res.points)
    points.add({p.name, num(p.gc), p.dumped ? "yes" : "no", num(p.liveObjects), num(p.liveBytes)});
  r.tables.push_back(std::move(points));
  if (vm.count("explain")) {
    Table miss{"dropped", {{"near miss"}, {"why dropped"}}, {}};
    for (const leaks::NearMiss& m : res.nearMisses) miss.add({m.what, m.why});
    r.tables.push_back(std::move(miss));
  }
  if (vm.count("dot-dir")) {
    std::filesystem::path dir = vm["dot-dir"].as<std::string>();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw OutputError("writing " + dir.string() + " failed: " + ec.message());
    for (size_t i = 0; i < res.suspects.size(); ++i) {
      std::ostringstream out;
      graph::writeDot(out, res.suspects[i].picture);
      writeOutput((dir / ("suspect-" + std::to_string(i + 1) + ".dot")).string(), out.str());
    }
  }
  OutputOptions o = outputOptions(vm);
  std::string json;
  std::swap(json, o.json);  // the leaks answer's own shape, not the tables'
  if (json != "-" || o.csv == "-") {
    emit(r, o);  // the text (unless CSV goes to stdout), and the CSV
  } else {
    // JSON on stdout: no text; warnings on stderr, the CSV to its file.
    for (const std::string& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    if (!o.csv.empty()) {
      const Table* t = &r.tables.front();
      for (const Table& x : r.tables)
        if (x.name == o.csvTable) t = &x;
      writeOutput(o.csv, csvTable(*t), o.privateFiles);
    }
  }
  if (!json.empty())
    writeOutput(json, leaksJson(s.path, res, vm.count("explain") > 0), o.privateFiles);
  return kExitOk;
}

}  // namespace

extern const Verb kLeaksVerb{
    .name = "leaks",
    .synopsis =
        "[--at-each EVENT | --gcs N,M,...] [--min-points 3] [--top N] [--dot-dir DIR] [--explain]",
    .summary =
        "leak suspects: what grows at every repetition of a state, and the path that holds it",
    .options = options,
    .run = run,
    .needs = {{"table", "csv"}},
    .renamed = {{.old = "dot", .now = "dot-dir"}}};

}  // namespace heapman::cli
