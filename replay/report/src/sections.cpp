// The report's leak-suspect and heap-map sections (sections.h).
#include "heapman/report/sections.h"

#include <algorithm>

#include "choose.h"
#include "heapman/leaks/leaks.h"
#include "heapman/map/heap_map.h"
#include "heapman/map/png.h"
#include "json_writer.h"

namespace heapman::report {

namespace {

// A root path step as the chain under a suspect's row shows it: the columns of `heapman leaks`'
// paths table (node, type, field offset, size, retained, function) in one line.
std::string stepText(const graph::PathStep& st) {
  bool object = st.node.kind == "object";
  std::string s = object ? graph::hexAddress(st.node.address) : st.node.type;
  std::string type = object ? st.node.type : st.node.heap;
  if (!type.empty()) s += " " + type;
  if (st.offset >= 0) s += " at field +" + std::to_string(st.offset);
  s += ": " + std::to_string(st.node.size) + " bytes, retains " +
       std::to_string(st.node.retained) + " bytes";
  if (!st.node.function.empty()) s += ", from " + st.node.function;
  return s;
}

void column(JsonWriter& w, const char* name, bool numeric = false, bool bytes = false) {
  w.beginObject().field("name", name);
  if (numeric) w.field("numeric", true);
  if (bytes) w.field("bytes", true);
  w.endObject();
}

std::string pointList(const leaks::LeaksResult& res) {
  std::string pts;
  for (const leaks::LeakPoint& p : res.points)
    pts += (pts.empty() ? "" : ", ") + p.name +
           (p.gc && p.name.rfind("gc:", 0) != 0 ? " (gc:" + std::to_string(p.gc) + ")" : "");
  return pts;
}

}  // namespace

std::optional<Section> leakSection(replay::Replay& r, replay::FrameNamer& namer,
                                   const replay::Exclusions& ex, int run, std::string* why) {
  replay::Attribution a(r.tables(), namer, ex);
  leaks::LeaksResult res;
  try {
    res = leaks::findLeaks(r, a, leaks::LeaksRequest{});
  } catch (const replay::ReplayError& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
  JsonWriter w;
  w.beginObject();
  std::string note = "Points: " + pointList(res) + " (" + res.chosenBecause + "), " +
                     std::to_string(res.dumpedPoints) + " with RAM dumps. ";
  if (!res.suspects.empty()) {
    note += "Suspects as `heapman leaks` ranks them; click a row for its root path, root first (the first is open).";
    w.key("columns").beginArray();
    column(w, "rank", true);
    column(w, "sentence");
    column(w, "holder");
    column(w, "container");
    column(w, "bytes per step", true, true);
    column(w, "entry site");
    w.endArray();
    w.key("rows").beginArray();
    for (size_t i = 0; i < res.suspects.size(); ++i) {
      const leaks::Suspect& sp = res.suspects[i];
      w.beginArray().value(uint64_t(i + 1)).value(sp.sentence).value(sp.holder);
      w.value(sp.containerType + " at " + graph::hexAddress(sp.containerAddress));
      w.value(uint64_t(sp.bytesPerStep)).value(sp.entrySite).endArray();
    }
    w.endArray();
    w.key("details").beginArray();
    for (const leaks::Suspect& sp : res.suspects) {
      w.beginArray();
      for (const graph::PathStep& st : sp.path) w.value(stepText(st));
      w.endArray();
    }
    w.endArray();
    w.field("sort", 4).field("open", true);
  } else {
    // Step 1 only: the sites that grew at every repetition.
    note += res.graphNote.empty() ? "No container grew at every dumped point; the sites below "
                                    "grew (live bytes by allocating function)."
                                  : res.graphNote + "; the sites below grew (live bytes by "
                                                    "allocating function).";
    w.key("columns").beginArray();
    column(w, "function");
    column(w, "module");
    column(w, "bytes per step", true, true);
    column(w, "rises");
    w.endArray();
    w.key("rows").beginArray();
    for (const leaks::GrowthRow& g : res.sites) {
      w.beginArray().value(g.name).value(g.module).value(int64_t(g.trend.perStep));
      w.value(std::to_string(g.trend.rises) + "/" + std::to_string(g.trend.steps)).endArray();
    }
    w.endArray();
    w.field("sort", 2);
  }
  w.field("note", note);
  w.endObject();
  return Section{"leaks-" + std::to_string(run), "Leak suspects", "table", w.take(), run};
}

namespace {

struct FramePoint {
  uint64_t limit;
  std::string name, label;
};

// mapSection's pictures, and in `chosen` how they were chosen.
std::vector<FramePoint> framePoints(replay::Replay& r, const FramesOptions& o, std::string& chosen) {
  const replay::LogTables& t = r.tables();
  // The points: those `heapman leaks` compares by default (each occurrence of the custom event
  // that repeats most, taken after the GC that follows it), else the GCs, else positions.
  std::vector<FramePoint> points;
  try {
    graph::GraphSession gs(r);
    leaks::LeaksRequest req;
    req.minPoints = 2;
    std::string event, because;
    std::vector<leaks::LeakPoint> lp = leaks::leakPoints(r, gs.store(), req, &event, &because);
    if (!event.empty()) {
      for (size_t k : evenly(lp.size(), o.maxFrames)) {
        const leaks::LeakPoint& p = lp[k];
        std::string gc = p.gc ? "gc:" + std::to_string(p.gc) : "";
        points.push_back({p.limit, p.gc ? gc : p.name, p.gc ? p.name + " (" + gc + ")" : p.name});
      }
      chosen = "at the points `heapman leaks` compares (each " + event +
               ", after the GC that follows it when one does)" + (lp.size() > o.maxFrames ? ", evenly chosen" : "");
    }
  } catch (const replay::ReplayError&) {
    // No event repeats: the GCs below.
  }
  if (points.empty()) {
    std::vector<const replay::GcRecord*> ended;
    for (const replay::GcRecord& g : t.gcs)
      if (g.ended) ended.push_back(&g);
    for (size_t k : evenly(ended.size(), o.maxFrames)) {
      std::string name = "gc:" + std::to_string(ended[k]->number);
      points.push_back({ended[k]->endSeq + 1, name, name});
    }
    chosen = std::string("after each GC") + (ended.size() > o.maxFrames ? ", evenly chosen" : "");
  }
  if (points.empty()) {
    uint64_t first = r.resolve("start"), last = r.resolve("end");
    for (size_t k = 1; k <= o.maxFrames && last > first; ++k) {
      uint64_t limit = first + (last - first) * k / o.maxFrames;
      std::string name = "seq:" + std::to_string(limit - 1);
      points.push_back({limit, name, name});
    }
    chosen = "at even positions (no custom event repeats, no GC)";
  }
  return points;
}

// Where the picture at `limit` starts: the end of the last GC before it (its deaths since then
// are drawn in red), or the point itself.
uint64_t frameStart(const replay::LogTables& t, uint64_t limit) {
  uint64_t since = limit;
  for (const replay::GcRecord& g : t.gcs)
    if (g.ended && g.endSeq + 1 < limit) since = g.endSeq + 1;
  return since;
}

}  // namespace

std::vector<uint64_t> frameStarts(replay::Replay& r, const FramesOptions& o) {
  std::string chosen;
  std::vector<uint64_t> out;
  if (!o.maxFrames) return out;
  for (const FramePoint& p : framePoints(r, o, chosen)) out.push_back(frameStart(r.tables(), p.limit));
  return out;
}

std::optional<Section> mapSection(replay::Replay& r, const std::string& title, int run,
                                  const FramesOptions& o, std::string* why,
                                  const map::LogScan* scan) {
  const replay::LogTables& t = r.tables();
  std::string chosen;
  std::vector<FramePoint> points = framePoints(r, o, chosen);
  if (points.empty()) {
    if (why) *why = "the log has no events";
    return std::nullopt;
  }
  map::MapOptions mo;
  mo.width = o.width, mo.height = o.height;
  mo.title = title;
  JsonWriter w;
  w.beginObject().key("frames").beginArray();
  size_t pngBytes = 0, shown = 0;
  try {
    map::LogScan own;
    if (!scan) own = map::scanLog(r), scan = &own;
    // Each picture as `heapman map --at POINT` draws it (a renderer of its own, the deaths since
    // the last GC before the point in red): two seeks from where it starts (a state the run's
    // pass kept there, frameStarts, else the nearest checkpoint), not a pass between the points.
    for (const FramePoint& p : points) {
      if (pngBytes >= o.budgetBytes) break;
      uint64_t since = frameStart(t, p.limit);
      map::MapRenderer m(r, nullptr, *scan, mo);
      r.seek(since);
      m.setNewSince(since);
      map::DeathCollector deaths(r);
      r.seek(p.limit, &deaths);
      m.addDeaths(deaths.take());
      map::MapPicture pic = m.render();
      std::string png = map::encodePng(pic.image);
      pngBytes += png.size();
      ++shown;
      w.beginObject().field("seq", p.limit - 1).field("point", p.name).field("label", p.label);
      w.field("liveBytes", pic.liveBytes).field("pngBytes", uint64_t(png.size()));
      w.field("image", "data:image/png;base64," + base64(png)).endObject();
    }
  } catch (const map::MapError& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
  w.endArray();
  std::string note = "Heap maps " + chosen + ": " + std::to_string(shown) + " pictures of " +
                     std::to_string(o.width) + "x" + std::to_string(o.height) + ", " +
                     std::to_string(pngBytes) + " bytes of PNG, each as `heapman map --at POINT --size " + std::to_string(o.width) +
                     "x" + std::to_string(o.height) + "` draws it (Hilbert layout, coloured by "
                     "heap kind; red: died since the GC before it).";
  if (shown < points.size())
    note += " " + std::to_string(points.size() - shown) + " more left out: the page's budget for "
            "pictures is " + std::to_string(o.budgetBytes) + " bytes.";
  note += " The slider moves the chart's marker; hovering or clicking the chart moves the "
          "slider.";
  w.field("note", note).endObject();
  return Section{"maps-" + std::to_string(run), "Heap map", "frames", w.take(), run};
}

std::string base64(const std::string& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return uint32_t(uint8_t(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace heapman::report
