// Gathering one log's views for the report page (docs/DESIGN.md §3.10): every number comes from
// the replay's queries (blame, churn, folded stacks, compareLogs), its tables (GCs, events,
// frames) and the heap graph (retained sizes); this file only chooses the points, samples the
// live series and writes the JSON document.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "heapman/graph/graph_queries.h"
#include "heapman/report/report.h"
#include "choose.h"
#include "json_writer.h"

namespace heapman::report {

using replay::LogTables;

std::string jsonString(std::string_view s, bool forScript) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == '<' && forScript) {
          out += "\\u003c";  // no "</script>" inside the page's <script>
        } else if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

constexpr int kHeaps = log::kHeapKindCount;

// One sample of the live series: per heap kind, bytes and objects at its limit, and the highest
// total bytes between the sample before and this one.
struct Sample {
  std::array<uint64_t, kHeaps> bytes{}, objects{};
  uint64_t peak = 0;
};

// The live series from the replay's births and deaths in one forward pass (a log whose index has
// no series, LogTables::seriesIndexed); a sample is taken when the first event at or past its
// limit arrives (the state then holds every event before the limit), the rest at the end.
class SeriesObserver : public replay::Observer {
 public:
  SeriesObserver(const LogTables& t, std::vector<uint64_t> limits)
      : t_(t), limits_(std::move(limits)) {}
  void born(const replay::LiveObject& o) override {
    advance(o.birthSeq());
    const replay::AllocInfo& i = t_.infos[o.info()];
    int h = static_cast<int>(i.heap);
    bytes_[h] += i.size, ++objects_[h], total_ += i.size;
    peak_ = std::max(peak_, total_);
  }
  void died(const replay::LiveObject& o, replay::Death, uint64_t seq) override {
    advance(seq);
    const replay::AllocInfo& i = t_.infos[o.info()];
    int h = static_cast<int>(i.heap);
    bytes_[h] -= i.size, --objects_[h], total_ -= i.size;
  }
  void finish() {
    while (next_ < limits_.size()) take();
  }
  std::vector<Sample> samples;
  std::array<bool, kHeaps> used{};

 private:
  void advance(uint64_t seq) {
    while (next_ < limits_.size() && seq >= limits_[next_]) take();
  }
  void take() {
    Sample s;
    s.bytes = bytes_, s.objects = objects_;
    s.peak = std::max(peak_, total_);
    for (int h = 0; h < kHeaps; ++h) used[h] = used[h] || objects_[h] > 0;
    samples.push_back(s);
    peak_ = total_;
    ++next_;
  }
  const LogTables& t_;
  std::vector<uint64_t> limits_;
  size_t next_ = 0;
  std::array<uint64_t, kHeaps> bytes_{}, objects_{};
  uint64_t total_ = 0, peak_ = 0;
};

// Observers fed by one pass.
struct AllObservers : replay::Observer {
  std::vector<replay::Observer*> list;
  void born(const replay::LiveObject& o) override {
    for (replay::Observer* x : list) x->born(o);
  }
  void died(const replay::LiveObject& o, replay::Death how, uint64_t seq) override {
    for (replay::Observer* x : list) x->died(o, how, seq);
  }
};

// Interned frames, sites, stacks and folded-stack names of one run.
struct Interner {
  std::vector<std::string> frameJson, siteJson;
  std::unordered_map<std::string, uint32_t> frames, sites, stacks, names, flames;
  std::vector<std::string> stackJson, nameList, flameJson;

  uint32_t frame(const replay::NamedFrame& f) {
    std::string k = f.function + '\0' + f.module + '\0' + f.location();
    auto [it, fresh] = frames.emplace(k, static_cast<uint32_t>(frameJson.size()));
    if (fresh)
      frameJson.push_back("[" + jsonString(f.function) + "," + jsonString(f.module) + "," +
                          jsonString(f.location()) + "]");
    return it->second;
  }
  uint32_t site(const replay::Site& s) {
    auto [it, fresh] = sites.emplace(s.function + '\0' + s.module,
                                     static_cast<uint32_t>(siteJson.size()));
    if (fresh)
      siteJson.push_back("[" + jsonString(s.function) + "," + jsonString(s.module) + "," +
                         jsonString(s.location) + "]");
    return it->second;
  }
  // A blame stack as [frame, role, frame, role...] (role 0 excluded, 1 charged, 2 caller);
  // -1 for an empty stack.
  int64_t stack(const std::vector<replay::BlameFrame>& st) {
    if (st.empty()) return -1;
    std::string k;
    for (const replay::BlameFrame& f : st) {
      k += (k.empty() ? "" : ",") + std::to_string(frame(f.frame)) + "," +
           std::to_string(static_cast<int>(f.role));
    }
    auto [it, fresh] = stacks.emplace(k, static_cast<uint32_t>(stackJson.size()));
    if (fresh) stackJson.push_back("[" + k + "]");
    return it->second;
  }
  // A folded stack "root;...;leaf" as name indices.
  uint32_t flame(const std::string& folded) {
    auto [it, fresh] = flames.emplace(folded, static_cast<uint32_t>(flameJson.size()));
    if (!fresh) return it->second;
    std::string j = "[";
    size_t start = 0;
    while (true) {
      size_t end = folded.find(';', start);
      std::string name = folded.substr(start, end == std::string::npos ? end : end - start);
      auto [nt, nfresh] = names.emplace(name, static_cast<uint32_t>(nameList.size()));
      if (nfresh) nameList.push_back(name);
      j += (j.size() > 1 ? "," : "") + std::to_string(nt->second);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    flameJson.push_back(j + "]");
    return it->second;
  }
};

void writeStrings(JsonWriter& w, const char* key, const std::vector<std::string>& jsons) {
  w.key(key).beginArray();
  for (const std::string& j : jsons) w.raw(j);
  w.endArray();
}

// Folded lines by bytes, cut to `max` with the rest summed as one "(N smaller stacks)" line.
void writeFlame(JsonWriter& w, Interner& in, std::vector<replay::FoldedLine> lines, size_t max) {
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  w.beginArray();
  uint64_t restBytes = 0, restObjects = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i >= max) {
      restBytes += lines[i].bytes, restObjects += lines[i].objects;
      continue;
    }
    w.beginArray().value(in.flame(lines[i].stack)).value(lines[i].bytes).value(lines[i].objects);
    w.endArray();
  }
  if (restObjects) {
    std::string other = "(" + std::to_string(lines.size() - max) + " smaller stacks)";
    w.beginArray().value(in.flame(other)).value(restBytes).value(restObjects).endArray();
  }
  w.endArray();
}

}  // namespace

void Builder::addRun(replay::Replay& r, replay::FrameNamer& namer, const replay::Exclusions& ex,
                     const std::string& label, replay::Observer* also,
                     const std::vector<uint64_t>& keepAt) {
  const LogTables& t = r.tables();
  const int runIndex = static_cast<int>(runs_.size());
  uint64_t first = r.resolve("start"), last = r.resolve("end");

  // Sample limits: evenly spaced, plus every GC's (so the chart's GC points sit on the series)
  // when there are at most maxGcMarks of them, else the chosen ones.
  std::vector<size_t> gcShown;
  {
    std::vector<size_t> ended;
    for (size_t i = 0; i < t.gcs.size(); ++i)
      if (t.gcs[i].ended) ended.push_back(i);
    for (size_t k : evenly(ended.size(), o_.maxGcMarks)) gcShown.push_back(ended[k]);
  }
  std::vector<uint64_t> limits;
  uint64_t span = last > first ? last - first : 0;
  size_t n = std::min<uint64_t>(o_.seriesSamples, std::max<uint64_t>(span, 1));
  for (size_t k = 1; k <= n; ++k) limits.push_back(first + (span * k + n - 1) / n);
  for (size_t i : gcShown) limits.push_back(t.gcs[i].endSeq + 1);
  std::sort(limits.begin(), limits.end());
  limits.erase(std::unique(limits.begin(), limits.end()), limits.end());

  // Points with a blame: custom events (else GCs) evenly chosen, end, the asked, and the peak.
  std::vector<uint64_t> pointLimits;
  if (!t.events.empty()) {
    for (size_t k : evenly(t.events.size(), o_.maxPoints)) pointLimits.push_back(t.events[k].seq + 1);
  } else {
    for (size_t k : evenly(gcShown.size(), o_.maxPoints))
      pointLimits.push_back(t.gcs[gcShown[k]].endSeq + 1);
  }
  pointLimits.push_back(last);
  for (const std::string& p : o_.points) pointLimits.push_back(r.resolve(p));
  std::sort(pointLimits.begin(), pointLimits.end());
  pointLimits.erase(std::unique(pointLimits.begin(), pointLimits.end()), pointLimits.end());

  replay::Attribution a(t, namer, ex);
  Interner in;
  // Blame and the live flame graph at a point (the state is there): a JSON object's members
  // after "peak".
  auto pointAt = [&](uint64_t limit) {
    replay::BlameResult b = replay::blame(r, a, replay::SortBy::kBytes, 0, true);
    JsonWriter w;
    w.beginObject().field("name", b.point).field("limit", limit);
    w.field("totalBytes", b.totalBytes).field("totalObjects", b.totalObjects);
    w.field("sites", uint64_t(b.rows.size()));
    w.key("rows").beginArray();
    for (size_t i = 0; i < b.rows.size() && i < o_.maxRows; ++i) {
      const replay::BlameRow& row = b.rows[i];
      w.beginArray().value(in.site(row.site)).value(row.bytes).value(row.objects);
      w.value(in.stack(row.stack)).value(row.stackBytes).value(row.stackObjects);
      std::string types;
      for (const replay::TypeShare& ts : row.types)
        types += (types.empty() ? "" : ", ") + ts.type + " " + std::to_string(ts.bytes);
      w.value(types).endArray();
    }
    w.endArray();
    w.key("flame");
    writeFlame(w, in, replay::foldedLive(r, a), o_.maxFlameStacks);
    w.endObject();
    return w.take().substr(1);  // without its '{'
  };

  std::map<uint64_t, std::string> points;
  // Where the pass keeps the state for later (keepAt), in order with the points.
  std::vector<uint64_t> keep;
  for (uint64_t k : keepAt)
    if (k >= first && k <= last) keep.push_back(k);
  std::sort(keep.begin(), keep.end());
  // Seeks forward through the points, each blamed where it stops; `watch` sees every birth and
  // death on the way (then the pass starts at `first`).
  auto visitPoints = [&](replay::Observer* watch) {
    auto nextKeep = keep.begin();
    for (uint64_t limit : pointLimits) {
      for (; nextKeep != keep.end() && *nextKeep <= limit; ++nextKeep) {
        r.seek(*nextKeep, watch);
        r.keepState();
      }
      r.seek(limit, watch);
      points[limit] = pointAt(limit);
    }
  };
  std::vector<Sample> samples;
  std::array<bool, kHeaps> used{};
  std::string method;
  replay::GarbageCounter counted(t);
  const bool fromIndex = t.seriesIndexed && !t.series.empty() && !also;
  if (fromIndex) {
    // The series the index pass counted: each sample is the first of its points at or past the
    // sample's limit (within t.seriesEvery events; a GC's end exactly), with the highest total
    // over the points since the sample before. The points are blamed by seeks, no pass.
    std::vector<uint64_t> at;
    size_t from = 0, j = 0;
    for (uint64_t l : limits) {
      while (j + 1 < t.series.size() && t.series[j].limit < l) ++j;
      if (j < from) continue;  // this point is the sample before's
      Sample x;
      x.bytes = t.series[j].bytes, x.objects = t.series[j].objects;
      for (size_t k = from; k <= j; ++k) x.peak = std::max(x.peak, t.series[k].peak);
      samples.push_back(x);
      at.push_back(t.series[j].limit);
      from = j + 1;
    }
    limits = std::move(at);
    for (const Sample& x : samples)
      for (int h = 0; h < kHeaps; ++h) used[h] = used[h] || x.objects[h] > 0;
    method = "sampled at " + std::to_string(limits.size()) + " positions of " +
             std::to_string(span) + " events (the index's points at or just past " +
             std::to_string(n) + " evenly spaced ones, within " + std::to_string(t.seriesEvery) +
             " events, and the end of every GC drawn)";
    visitPoints(nullptr);
  } else {
    // One forward pass: the series, stopping at each point for its blame. The garbage counts
    // (churn, the garbage flame graph) are the index's churn spans summed (countGarbage), else
    // counted in this pass.
    SeriesObserver series(t, limits);
    AllObservers both;
    both.list = {&series};
    if (!t.churnSpansIndexed) both.list.push_back(&counted);
    if (also) both.list.push_back(also);
    r.seek(first);
    visitPoints(&both);
    series.finish();
    samples = std::move(series.samples);
    used = series.used;
    method = "sampled at " + std::to_string(limits.size()) + " positions of " +
             std::to_string(span) + " events (" + std::to_string(n) +
             " evenly spaced, and the end of every GC drawn)";
  }
  const replay::GarbageCounter garbage = t.churnSpansIndexed || fromIndex
                                             ? replay::countGarbage(r, first, last)
                                             : counted;
  replay::ChurnResult c = replay::churn(r, a, garbage, first, last, replay::SortBy::kBytes,
                                        o_.maxRows);
  std::vector<replay::FoldedLine> garbageFolded = replay::foldedChurn(r, a, garbage);
  // The peak: the sample with the most live bytes (a seek back from the nearest checkpoint).
  size_t peakSample = 0;
  uint64_t best = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    uint64_t sum = 0;
    for (uint64_t b : samples[i].bytes) sum += b;
    if (sum > best) best = sum, peakSample = i;
  }
  uint64_t peakLimit = limits.empty() ? last : limits[peakSample];
  if (!points.count(peakLimit)) {
    r.seek(peakLimit);
    points[peakLimit] = pointAt(peakLimit);
  }

  JsonWriter w;
  w.beginObject();
  w.field("label", label).field("log", std::filesystem::path(label).filename().string());
  w.field("symbolized", namer.symbolizing());

  // Summary.
  uint64_t gcPause = 0;
  for (const replay::GcRecord& g : t.gcs) gcPause += g.pauseNs;
  w.key("summary").beginObject();
  w.field("firstSeq", first).field("endSeq", last).field("events", t.eventCount);
  w.field("allocs", t.allocs).field("frees", t.frees).field("reallocs", t.reallocs);
  w.field("gcs", uint64_t(t.gcs.size())).field("gcPauseNs", gcPause);
  w.field("customEvents", uint64_t(t.events.size())).field("frameMarks", uint64_t(t.frames.size()));
  w.field("lostEvents", t.lostEvents).field("endTimeNs", t.endTimeNs);
  w.field("peakLimit", peakLimit).field("peakPoint", r.describe(peakLimit));
  w.key("warnings").beginArray();
  for (const std::string& s : replay::warnings(r)) w.value(s);
  w.endArray().endObject();

  // Series.
  w.key("heaps").beginArray();
  std::vector<int> heaps;
  for (int h = 0; h < kHeaps; ++h)
    if (used[h]) {
      heaps.push_back(h);
      w.value(log::heapKindName(static_cast<log::HeapKind>(h)));
    }
  w.endArray();
  w.key("series").beginObject();
  w.field("method", method + "; each sample has the live bytes and objects per heap at its "
                             "position and the highest total since the sample before");
  w.key("limit").beginArray();
  for (uint64_t l : limits) w.value(l);
  w.endArray();
  w.key("bytes").beginArray();
  for (int h : heaps) {
    w.beginArray();
    for (const Sample& x : samples) w.value(x.bytes[h]);
    w.endArray();
  }
  w.endArray().key("objects").beginArray();
  for (int h : heaps) {
    w.beginArray();
    for (const Sample& x : samples) w.value(x.objects[h]);
    w.endArray();
  }
  w.endArray().key("peak").beginArray();
  for (const Sample& x : samples) w.value(x.peak);
  w.endArray().endObject();

  // GCs, events and frame marks (the points the CLI names them by).
  w.key("gcs").beginObject().field("total", uint64_t(t.gcs.size()));
  w.key("rows").beginArray();
  for (size_t i : gcShown) {
    const replay::GcRecord& g = t.gcs[i];
    w.beginArray().value(g.number).value(g.endSeq + 1).value(g.beginTimeNs).value(g.pauseNs);
    w.value(g.liveBytes).value(g.liveObjects).value(g.collectedBytes).value(g.collectedObjects);
    w.endArray();
  }
  w.endArray().endObject();
  w.key("events").beginObject().field("total", uint64_t(t.events.size()));
  w.key("rows").beginArray();
  for (size_t k : evenly(t.events.size(), o_.maxEventMarks)) {
    const replay::EventRecord& e = t.events[k];
    w.beginArray().value(t.eventName(e.nameId)).value(e.occurrence).value(e.seq + 1);
    w.value(e.timeNs).endArray();
  }
  w.endArray().endObject();
  w.key("frameMarks").beginObject().field("total", uint64_t(t.frames.size()));
  w.key("rows").beginArray();
  for (size_t k : evenly(t.frames.size(), o_.maxEventMarks)) {
    const replay::FrameRecord& f = t.frames[k];
    w.beginArray().value(f.frame).value(f.seq + 1).value(f.timeNs).endArray();
  }
  w.endArray().endObject();

  w.key("points").beginArray();
  for (const auto& [limit, body] : points)
    w.raw(std::string("{\"peak\":") + (limit == peakLimit ? "true," : "false,") + body);
  w.endArray();

  // Churn and the garbage flame graph over the whole log.
  w.key("churn").beginObject().field("from", c.from).field("to", c.to);
  w.field("collectedBytes", c.collectedBytes).field("freedBytes", c.freedBytes);
  w.field("collectedObjects", c.collectedObjects).field("freedObjects", c.freedObjects);
  w.key("rows").beginArray();
  for (const replay::ChurnRow& row : c.rows) {
    w.beginArray().value(in.site(row.site)).value(row.allocatedObjects).value(row.allocatedBytes);
    w.value(row.collectedObjects).value(row.collectedBytes).value(row.freedObjects);
    w.value(row.freedBytes).endArray();
  }
  w.endArray().endObject();
  w.key("garbageFlame");
  writeFlame(w, in, std::move(garbageFolded), o_.maxFlameStacks);

  writeStrings(w, "sites", in.siteJson);
  writeStrings(w, "frames", in.frameJson);
  writeStrings(w, "stacks", in.stackJson);
  w.key("names").beginArray();
  for (const std::string& s : in.nameList) w.value(s);
  w.endArray();
  writeStrings(w, "flameStacks", in.flameJson);
  w.endObject();
  runs_.push_back(w.take());

  // Retained size by type at the last dumped GC (the heap graph's dominator tree).
  if (!o_.retained) return;
  graph::GraphSession& gs = graph::graphSessionFor(r);
  const std::vector<uint32_t>& dumped = gs.store().dumpedGcs();
  if (dumped.empty()) return;
  uint32_t gc = dumped.back();
  graph::RetainedResult res = graph::retainedBy(gs, a, r.resolve("gc:" + std::to_string(gc)),
                                                graph::RetainedBy::kType, 200);
  JsonWriter s;
  s.beginObject();
  s.field("note", "gc:" + std::to_string(gc) + " (the last of " + std::to_string(dumped.size()) +
                      " RAM dumps): " + std::to_string(res.totalObjects) + " objects, " +
                      std::to_string(res.totalBytes) +
                      " bytes. Retained: what would be freed if every object of the type went "
                      "(dominator tree from the roots; an object dominated by another of its "
                      "type counts once). `heapman retained LOG --at gc:" +
                      std::to_string(gc) + " --by type`");
  s.key("columns").beginArray();
  s.beginObject().field("name", "type").endObject();
  s.beginObject().field("name", "objects").field("numeric", true).endObject();
  s.beginObject().field("name", "bytes").field("numeric", true).field("bytes", true).endObject();
  s.beginObject().field("name", "retained").field("numeric", true).field("bytes", true);
  s.endObject().endArray();
  s.key("sort").value(3);
  s.key("rows").beginArray();
  for (const graph::RetainedRow& row : res.rows)
    s.beginArray().value(row.name).value(row.objects).value(row.bytes).value(row.retained).endArray();
  s.endArray().endObject();
  sections_.push_back({"retained-" + std::to_string(runIndex), "Retained size by type", "table",
                       s.take(), runIndex});
}

void Builder::addComparison(replay::Replay& ra, replay::FrameNamer& na, replay::Replay& rb,
                            replay::FrameNamer& nb, const replay::Exclusions& ex) {
  replay::Attribution aa(ra.tables(), na, ex), ab(rb.tables(), nb, ex);
  replay::DiffResult d = replay::compareLogs(ra, aa, ra.resolve("end"), rb, ab, rb.resolve("end"),
                                             replay::SortBy::kBytes, o_.maxRows);
  auto table = [&](const std::vector<replay::DiffRow>& rows, bool site) {
    JsonWriter s;
    s.beginObject().field("note", "A = " + d.from + ", B = " + d.to +
                                      "; sorted by |Δ bytes|. `heapman compare A B`");
    s.key("columns").beginArray();
    s.beginObject().field("name", site ? "function" : "type").endObject();
    if (site) s.beginObject().field("name", "module").endObject();
    for (const char* c : {"A bytes", "B bytes", "Δ bytes"})
      s.beginObject().field("name", c).field("numeric", true).field("bytes", true).endObject();
    for (const char* c : {"A objects", "B objects", "Δ objects"})
      s.beginObject().field("name", c).field("numeric", true).endObject();
    s.endArray().key("sort").value(site ? 4 : 3).key("sortAbs").value(true);
    s.key("rows").beginArray();
    for (const replay::DiffRow& row : rows) {
      s.beginArray().value(row.name);
      if (site) s.value(row.module);
      s.value(row.bytesA).value(row.bytesB).value(row.deltaBytes());
      s.value(row.objectsA).value(row.objectsB).value(row.deltaObjects()).endArray();
    }
    s.endArray().endObject();
    return s.take();
  };
  sections_.push_back({"compare-functions", "Differences per function (A vs B, at the end)",
                       "table", table(d.functions, true), -1});
  sections_.push_back({"compare-types", "Differences per type (A vs B, at the end)", "table",
                       table(d.types, false), -1});
}

std::string Builder::json() const {
  JsonWriter w;
  w.beginObject().field("format", "heapman-report/1");
  w.key("runs").beginArray();
  for (const std::string& r : runs_) w.raw(r);
  w.endArray();
  w.key("sections").beginArray();
  for (const Section& s : sections_) {
    w.beginObject().field("id", s.id).field("title", s.title).field("kind", s.kind);
    w.field("run", s.run).key("data").raw(s.json.empty() ? "null" : s.json);
    w.endObject();
  }
  w.endArray().endObject();
  return w.take();
}

std::string Builder::html() const {
  std::string sections;
  for (const auto& [source, text] : rawSections_) {
    std::string attr;  // the source as an HTML attribute value
    for (char c : source) {
      if (c == '&') attr += "&amp;";
      else if (c == '"') attr += "&quot;";
      else if (c == '<') attr += "&lt;";
      else attr += c;
    }
    sections += "<script type=\"application/json\" class=\"heapman-section\" data-source=\"" +
                attr + "\">";
    // "</" occurs only inside strings in JSON, where "<\/" means the same.
    for (size_t i = 0; i < text.size(); ++i) {
      sections += text[i];
      if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') sections += '\\';
    }
    sections += "</script>\n";
  }
  // The renderers' mark is a line of its own, taken out whole when there are none.
  std::string script = pageScript();
  const std::string rendererMark = "  /*@HEAPMAN_RENDERERS@*/\n";
  size_t r = script.find(rendererMark);
  if (r == std::string::npos) throw std::logic_error("report.js lacks the renderers' mark");
  std::string renderers;
  for (const std::string& js : renderers_) renderers += js + (js.ends_with('\n') ? "" : "\n");
  script.replace(r, rendererMark.size(), renderers);
  const std::pair<std::string, std::string> marks[] = {{"@HEAPMAN_STYLE@", pageStyle()},
                                                       {"@HEAPMAN_SCRIPT@", script},
                                                       {"@HEAPMAN_SECTIONS@", sections},
                                                       {"@HEAPMAN_DATA@", json()}};
  // One pass over the template: what is put in is never searched for marks.
  const std::string& t = pageTemplate();
  std::string page;
  size_t at = 0;
  for (const auto& [mark, text] : marks) {
    size_t m = t.find(mark, at);
    if (m == std::string::npos) throw std::logic_error("report template lacks " + mark);
    page.append(t, at, m - at);
    page += text;
    at = m + mark.size();
  }
  page.append(t, at, std::string::npos);
  return page;
}

}  // namespace heapman::report
