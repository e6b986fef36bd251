// The heap map: a picture of the live set at one point of a replay (map.cpp), and the scan of a
// log that the pictures of it share (scan.cpp).
//
//   LogScan scan = scanLog(replay);                 // the index's counts, else a forward pass
//   MapRenderer m(replay, &attribution, scan, options);
//   replay.seek(since);  replay.seek(at, &deaths);  // deaths: a DeathCollector
//   m.addDeaths(deaths.take());
//   MapPicture p = m.render();                     // p.image, p.legend
//
// A picture: a header strip (log, point, GC number, time, frame, last custom event, live bytes),
// a timeline bar of live bytes over the whole log with custom event ticks and the position, the
// map (AddressLayout: each object's bytes on the pixels of its addresses, a pixel's brightness
// the share of its bytes that live objects cover, its colour that of the object covering most of
// it), and a legend of the top colours with their live bytes. Objects born since the previous
// picture are drawn brighter; objects that died since the previous picture red, fading over
// `fadePictures` pictures (Tracy draws freed memory red the same way).
//
// Colours: by heap kind (fixed colours), by type or by blame function (the top names by bytes
// allocated over the whole log take fixed palette slots in order, every other name the slot of a
// hash of its name: a name keeps its colour in every picture of a log), or by age (GCs survived,
// a ramp from new to old; without GCs, eighths of the log's sequence range).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "heapman/map/image.h"
#include "heapman/map/layout.h"
#include "heapman/replay/frames.h"
#include "heapman/replay/replay.h"

namespace heapman::map {

enum class ColorBy { kKind, kType, kFunction, kAge };
ColorBy parseColorBy(const std::string& s);  // kind | type | function | age; MapError otherwise
const char* colorByName(ColorBy c);

// What the pictures of one log share, from one forward pass over it.
struct LogScan {
  std::vector<uint64_t> granules;     // sorted, unique: address >> kGranuleBits of every object
  std::vector<uint64_t> allocBytes;   // requested bytes allocated over the log, by AllocInfo id
  std::vector<uint64_t> liveBytes;    // live bytes at the end of each of `samples` equal seq bins
  uint64_t firstSeq = 0, endSeq = 0;  // the log's events are [firstSeq, endSeq)
  uint64_t peakBytes = 0;             // of liveBytes
};
// From what the index pass counted (LogTables::seriesIndexed: the timeline's bins end at the
// series point at or past each bin's end), else a replay of the whole log from the start (the
// replay then ends at its end).
LogScan scanLog(replay::Replay& r, size_t samples = 1024);
// scanLog()'s answer for the log as the replay covers it now, kept by the process for the last
// two logs asked: the pictures of one log share it (a shell's maps; heapman serve's workers,
// whose replays of one log scan it once between them, the others waiting for the first). The
// replay's state may move. Thread-safe.
std::shared_ptr<const LogScan> sharedScan(replay::Replay& r, size_t samples = 1024);

// The same scan as an observer, for a caller that replays the whole log anyway (the report's
// pass): give it every birth and death of [firstSeq, endSeq) once, in order, then take().
class LogScanner : public replay::Observer {
 public:
  LogScanner(const replay::Replay& r, size_t samples = 1024);
  void born(const replay::LiveObject& o) override;
  void died(const replay::LiveObject& o, replay::Death how, uint64_t seq) override;
  LogScan take();

 private:
  static constexpr size_t kCompactAt = size_t{1} << 22;
  size_t bin(uint64_t seq) const;
  void compact();
  const replay::Replay& r_;
  LogScan s_;
  size_t bins_;
  std::vector<int64_t> delta_;
  std::vector<uint64_t> granules_;
  uint64_t last_ = ~uint64_t{0};
};

// Where a position of the log is, for the header and the video's clock: the last GC that ended,
// frame mark and custom event before it, and its time. Records with a time (GC begin and end,
// custom events, frame marks) are the clock's anchors: a position's time is that of the last
// anchor before it (the first anchor's before any), the log's end that of its last record.
struct PointInfo {
  bool hasGc = false, hasFrame = false;
  uint32_t gc = 0;
  uint64_t frame = 0;
  std::string lastEvent;  // "NAME#K", "" when none
  uint64_t timeNs = 0;
};
class PointClock {
 public:
  explicit PointClock(const replay::LogTables& t);
  PointInfo at(uint64_t limit) const;
  uint64_t timeAt(uint64_t limit) const;
  // The limit just after the last anchor at or before timeNs (firstSeq when none is).
  uint64_t limitAt(uint64_t timeNs) const;

 private:
  const replay::LogTables& t_;
  std::vector<std::pair<uint64_t, uint64_t>> anchors_;  // (seq, time), by seq
  std::vector<std::pair<uint64_t, uint64_t>> byTime_;   // (time, seq), by time
  std::vector<uint64_t> gcEnds_;                        // by seq: ended GCs' end seqs
  std::vector<uint32_t> gcNumbers_;
};

// An object that died: what its pixels need.
struct DeadObject {
  uint64_t address = 0, size = 0;
};
// Collects the deaths a forward seek reports.
class DeathCollector : public replay::Observer {
 public:
  explicit DeathCollector(const replay::Replay& r) : r_(r) {}
  void died(const replay::LiveObject& o, replay::Death, uint64_t) override {
    const replay::AllocInfo& i = r_.info(o.info());
    dead_.push_back({o.address, i.actualSize ? i.actualSize : i.size});
  }
  std::vector<DeadObject> take() { return std::move(dead_); }

 private:
  const replay::Replay& r_;
  std::vector<DeadObject> dead_;
};

struct MapOptions {
  Curve curve = Curve::kHilbert;
  ColorBy color = ColorBy::kKind;
  int width = 1024, height = 1024;
  uint64_t bytesPerPixel = 0;  // 0: fit
  size_t legendRows = 12;      // colours named in the legend (the rest summed as "other")
  int fadePictures = 6;        // pictures a death stays visible, fading
  std::string title;           // header, left: the log's name
};

struct LegendEntry {
  std::string name;
  Rgb color = 0;
  uint64_t bytes = 0, objects = 0;  // live, requested bytes
};

struct MapPicture {
  Image image;
  // Every colour with live objects, by bytes (descending; ties by name); the picture names the
  // first legendRows.
  std::vector<LegendEntry> legend;
  uint64_t liveBytes = 0, liveObjects = 0;
  uint64_t bornSince = 0;     // objects born since the previous picture
  uint64_t unplaced = 0;      // live objects outside the layout's regions (not drawn)
};

// Pictures in a row (a video): advance() moves the replay forward with the renderer as its
// observer, which keeps the per-pixel state and the legend's counts up to date birth by birth and
// death by death, so the next render() costs the events in between plus composing the pixels,
// not a pass over the live set. render() after any other move of the replay (or colouring by age
// across a GC, which ages every object) repaints from the live set. When the object that gave a
// pixel its colour dies, the pixel keeps that colour until another covers more of it or it
// empties (a repaint would take the next largest): the colours of a video are those of the
// largest cover at its last repaint or since.
class MapRenderer : public replay::Observer {
 public:
  // attribution: required for ColorBy::kFunction (the blame sites: the same exclusions).
  MapRenderer(replay::Replay& r, replay::Attribution* attribution, const LogScan& scan,
              MapOptions options);
  ~MapRenderer();

  const AddressLayout& layout() const { return *layout_; }
  // The address-range labels drawn over the map (at the start of each region where one fits):
  // the pixels under them show the label, not the heap.
  struct Label {
    int x = 0, y = 0, w = 0, h = 0;
    std::string text;
  };
  const std::vector<Label>& labels() const { return labels_; }
  const MapOptions& options() const { return o_; }
  // Deaths since the previous picture (the next render() draws them red, then they fade).
  void addDeaths(std::vector<DeadObject> dead);
  // Replays forward to limit (>= the replay's position) with this renderer as the observer:
  // deaths are kept for the next picture, which is then drawn incrementally.
  void advance(uint64_t limit);
  void born(const replay::LiveObject& o) override;
  void died(const replay::LiveObject& o, replay::Death how, uint64_t seq) override;
  // Objects born at or after this seq are drawn as new (default: the previous render's position).
  void setNewSince(uint64_t seq) { newSince_ = seq; }
  // The picture of the replay's state at its position.
  MapPicture render();
  // The same into an existing picture (no allocation once sized: the video's loop).
  void render(MapPicture& out);

  // The colour (key) of an object, and the key's name and colour.
  uint32_t keyOf(const replay::LiveObject& o);
  const std::string& keyName(uint32_t key) const { return names_[key]; }
  Rgb keyColor(uint32_t key) const { return colors_[key]; }

 private:
  struct Layout;
  void repaint(MapPicture& p);  // from the live set
  void touch(const replay::LiveObject& o, bool add);  // incremental: one object in or out
  void compose(MapPicture& p);
  uint32_t nameKey(const std::string& name, uint64_t hash);
  void prepareKeys();
  void drawStatic();
  void drawHeader(Image& img, const MapPicture& p) const;
  void drawTimeline(Image& img) const;
  void drawLegend(Image& img, const MapPicture& p) const;
  void placeLabels();
  void drawRegionLabels(Image& img) const;

  replay::Replay& r_;
  replay::Attribution* a_;
  const LogScan& scan_;
  MapOptions o_;
  int scale_ = 1;                       // text scale
  int headerH_ = 0, timelineY_ = 0, timelineH_ = 0, mapY_ = 0, mapH_ = 0, legendY_ = 0;
  std::unique_ptr<AddressLayout> layout_;
  std::vector<uint32_t> keyOfInfo_;     // by AllocInfo id; kNoKey until known
  std::vector<std::string> names_;      // by key
  std::vector<Rgb> colors_;             // by key
  std::unordered_map<std::string, uint32_t> keyOfName_;
  std::unordered_map<std::string, uint32_t> fixedSlot_;  // top names -> palette slot
  PointClock clock_;
  Image stripLit_;                      // the timeline as played (the background has it dim)
  std::vector<Rgb> palette_;
  std::vector<Label> labels_;
  Image background_;                    // regions shaded, map area, timeline drawn
  // Per curve position, 8 bytes (one cache line holds 8 positions: the live set comes in hash
  // order, so each object costs about one miss): bytes covered by live objects and the bytes of
  // the largest cover, in units of 2^unit bytes (a full pixel is at most 4096 units), that
  // cover's key (bit 15: born since the previous picture), fading deaths (0..255).
  struct Cell {
    uint16_t cover, best, key;
    uint8_t dead, unused;
  };
  std::vector<Cell> cells_;
  std::vector<Rgb> shades_;  // by key, brightness step and new
  bool tracking_ = false;          // the cells and counts follow the replay (advance())
  uint64_t trackedPosition_ = 0;   // where they are
  uint32_t paintedEpoch_ = 0;      // epochNow_ of the last repaint (age colours)
  std::vector<uint32_t> newCells_; // cells with the new bit set since the last picture
  uint64_t liveBytes_ = 0, liveObjects_ = 0, bornSince_ = 0, unplaced_ = 0;
  std::vector<std::vector<DeadObject>> deaths_;  // [0] the newest
  std::vector<DeadObject> pending_;              // added since the last render
  uint32_t epochNow_ = 0;                        // GcEnds before the rendered position
  uint64_t newSince_ = 0;
  std::vector<uint64_t> keyBytes_, keyObjects_;
};

// Byte counts for people: "12.3 MiB", "512 B".
std::string bytesText(uint64_t bytes);
// 64-bit FNV-1a of a name: its palette slot when it is not among the top names.
uint64_t nameHash(const std::string& s);

}  // namespace heapman::map
