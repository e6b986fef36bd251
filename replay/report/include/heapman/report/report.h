// The HTML report: one self-contained page per log (or two logs side by side), built from the
// replay's queries (blame, churn, folded stacks, compareLogs, the GC/event/frame tables) and the
// heap graph's retained sizes, for `heapman report`.
//
//   report::Builder b(options);
//   b.addRun(replay, namer, exclusions, "game.hml");      // gathers everything one log gives
//   b.addRun(other, otherNamer, exclusions, "game2.hml");   // --compare: a second run, and
//   b.addComparison(replay, a, other, b2);                   //   compareLogs at both ends
//   b.addSection({...});                                     // more views: leakSection and
//                                                            //   mapSection (sections.h)
//   writeFile(path, b.html());
//
// The page is report.html, report.css and report.js (replay/report/assets/, embedded into the
// library at build time by embed.cmake) with one JSON document in a <script type=
// "application/json"> element; nothing is fetched. Its shape is docs/DESIGN.md §3.10.
//
// Sections: besides the built-in views, a Section carries a JSON value for a renderer of the page
// named by `kind`. The page has two generic ones (shapes in docs/DESIGN.md §3.10):
//   "table":  {"columns":[{"name","numeric","bytes"}], "rows":[[...]], "details":[[...]]?,
//              "note":"..."}; a row's details (strings) are drawn as a chain root -> ... ->
//              object under the row when it is expanded (leak suspects' root paths);
//              "open":true opens the first row at load;
//   "frames": {"frames":[{"seq":S, "point":"gc:N", "label":"...", "liveBytes":B,
//              "image":"data:image/png;base64,..."}], "note":"..."} (label, liveBytes optional);
//              a slider over the frames, synced with the run's time axis (heap maps).
// Threads: one thread; the Replays are moved (seeked) by the builder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "heapman/replay/frames.h"
#include "heapman/replay/queries.h"
#include "heapman/replay/replay.h"

namespace heapman::report {

struct Options {
  // Samples of the live-bytes/objects series: each holds the values at its end and the highest
  // total within it (so a spike shorter than a sample still shows).
  size_t seriesSamples = 1200;
  // Points with a blame (and live flame graph): the custom events, else GCs, evenly chosen up to
  // this many, plus the peak of live bytes, `end`, and `points`.
  size_t maxPoints = 24;
  std::vector<std::string> points;  // more points, as the CLI names them ("gc:4", "level_end#2")
  size_t maxRows = 2000;            // blame rows per point (sites by live bytes); churn rows
  size_t maxFlameStacks = 4000;     // folded stacks per flame graph, by bytes
  size_t maxGcMarks = 4000;         // GCs drawn one by one; above, evenly chosen
  size_t maxEventMarks = 2000;      // custom events and frame marks drawn, each
  bool retained = true;             // retained size by type at the last dumped GC
};

// A view the page draws with its renderer `kind` ("table", "frames", or one report.js
// registers); `json` is the renderer's data, a JSON value. `run`: the run it belongs to (0 for
// the first log, 1 for --compare's), or -1 for the whole page.
struct Section {
  std::string id, title, kind;
  std::string json;
  int run = 0;
};

class Builder {
 public:
  explicit Builder(Options o = {}) : o_(std::move(o)) {}
  // Gathers one log's views: series, GCs, events, frames, blame and live flame graph at the
  // points, churn and the garbage flame graph over the whole log, retained size by type.
  // Throws ReplayError (a point the log does not have) and log::FormatError.
  // also: fed every birth and death of [start, end) once, in order, by the run's own pass (a
  // map::LogScanner for the heap-map section: no pass of its own).
  // keepAt: limits the pass keeps the state at (Replay::keepState), for the seeks that come
  // back to them later (mapSection's frames: frameStarts()).
  void addRun(replay::Replay& r, replay::FrameNamer& namer, const replay::Exclusions& ex,
              const std::string& label, replay::Observer* also = nullptr,
              const std::vector<uint64_t>& keepAt = {});
  // The first and second runs compared at their ends (compareLogs: per function and per type).
  void addComparison(replay::Replay& a, replay::FrameNamer& na, replay::Replay& b,
                     replay::FrameNamer& nb, const replay::Exclusions& ex);
  void addSection(Section s) { sections_.push_back(std::move(s)); }
  // A section written elsewhere (heapman report --section FILE): a JSON object {id, title, kind,
  // run, data}, put in the page as it is (in its own element: the page parses each one apart, so
  // a malformed one is shown as such and the rest of the page still works). `source` names it
  // in that message.
  void addSectionJson(const std::string& source, std::string json) {
    rawSections_.push_back({source, std::move(json)});
  }

  // A renderer of more section kinds: JavaScript put into the page's script where report.js
  // marks it (/*@HEAPMAN_RENDERERS@*/: after its own `renderers`, with its helpers in scope: el,
  // sv, table, niceStep, fmtBytes, ...), e.g. `renderers.trends = function (box, data, run, id)
  // {...};`. Without any, the mark's line is taken out and the page is the page it was.
  void addRenderer(std::string js) { renderers_.push_back(std::move(js)); }

  std::string json() const;  // the document the page reads
  std::string html() const;  // the page, everything inlined

 private:
  Options o_;
  std::vector<std::string> runs_;  // JSON objects
  std::vector<Section> sections_;
  std::vector<std::pair<std::string, std::string>> rawSections_;
  std::vector<std::string> renderers_;
};

// A string as a JSON string (RFC 8259 escaping); forScript: '<' as \u003c too, so that the text
// can sit in a <script> element. heapman's --json output uses it (forScript false).
std::string jsonString(std::string_view s, bool forScript = true);

// The page's assets (embedded at build time).
const std::string& pageTemplate();
const std::string& pageScript();
const std::string& pageStyle();
// The renderer of "trends" sections (heapman report --store: the runs of a store across a tag,
// heapman/store/across_runs.h), for Builder::addRenderer.
const std::string& trendsRenderer();

}  // namespace heapman::report
