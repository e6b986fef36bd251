// The heap map picture (heap_map.h): background drawn once per renderer (regions, timeline),
// then per picture the live set painted into per-position arrays and composed over it.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "heapman/map/heap_map.h"
#include "heapman/replay/queries.h"

namespace heapman::map {

namespace {

constexpr uint32_t kNoKey = ~uint32_t{0};
constexpr uint16_t kNewBit = 0x8000;
constexpr uint32_t kMaxKeys = 0x7FFF;  // keys past it share the last colour
constexpr Rgb kCanvas = 0x0E1014, kPanel = 0x16191F, kRegionA = 0x1C2028, kRegionB = 0x232832;
constexpr Rgb kText = 0xE8EAED, kDimText = 0x9AA0AA, kDead = 0xFF3B30, kWhite = 0xFFFFFF;
constexpr size_t kFixedSlots = 12;  // top names' palette slots
constexpr size_t kPaletteSize = 28;
constexpr int kAgeBuckets = 8;

// OKLCH (perceptual lightness, chroma, hue in degrees) to sRGB, clamped.
Rgb oklch(double L, double C, double hDeg) {
  double h = hDeg * M_PI / 180, a = C * std::cos(h), b = C * std::sin(h);
  double l = L + 0.3963377774 * a + 0.2158037573 * b;
  double m = L - 0.1055613458 * a - 0.0638541728 * b;
  double s = L - 0.0894841775 * a - 1.2914855480 * b;
  l = l * l * l, m = m * m * m, s = s * s * s;
  double lin[3] = {4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
                   -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
                   -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s};
  Rgb out = 0;
  for (double c : lin) {
    c = std::clamp(c, 0.0, 1.0);
    c = c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055;
    out = out << 8 | Rgb(std::lround(c * 255));
  }
  return out;
}

// Distinct colours for names: hues a golden angle apart, three lightness steps, the reds left
// out (red is what died).
std::vector<Rgb> namePalette() {
  std::vector<Rgb> p;
  for (int k = 0; p.size() < kPaletteSize; ++k) {
    double hue = std::fmod(70 + k * 137.508, 360);
    if (hue < 55 || hue > 350) continue;
    static const double kL[3] = {0.76, 0.66, 0.85};
    p.push_back(oklch(kL[p.size() % 3], 0.15, hue));
  }
  return p;
}

Rgb kindColor(log::HeapKind k) {
  switch (k) {
    case log::HeapKind::kNative: return 0x4E9AE6;
    case log::HeapKind::kGcNormal: return 0x5CC86A;
    case log::HeapKind::kGcAtomic: return 0xE6C84E;
    case log::HeapKind::kGcUncollectable: return 0xB07CE8;
    case log::HeapKind::kGcj: return 0x4ED0D0;
    case log::HeapKind::kGcTyped: return 0x9FD14F;
    case log::HeapKind::kManaged: return 0xF0A040;
    case log::HeapKind::kOther: return 0x9AA0AA;
  }
  return 0x9AA0AA;
}

std::string hexAddress(uint64_t a) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(a));
  return b;
}

std::string seconds(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f s", double(ns) / 1e9);
  return b;
}

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// A function's name as the legend shows it: without "(anonymous namespace)::" and without its
// parameter list ("Game::spawn(int, int)" -> "Game::spawn"); type names as they are.
std::string shortName(std::string name) {
  static const std::string kAnon = "(anonymous namespace)::";
  for (size_t at; (at = name.find(kAnon)) != std::string::npos;) name.erase(at, kAnon.size());
  if (!name.empty() && name.back() == ')' && name.front() != '(') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
      if (depth == 0) {
        if (i > 0) name.erase(i);
        break;
      }
    }
  }
  return name;
}

// A name cut to `chars` for the legend: first the qualifiers inside its type arguments go
// ("Dictionary<System.String,System.Int32>" -> "Dictionary<String,Int32>"), then its own leading
// ones ("System.Collections.Generic.List<Enemy>" -> "List<Enemy>", "game::world::Level" ->
// "world::Level"), then the end.
std::string fitName(std::string name, size_t chars) {
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (name.size() > chars) {  // qualifiers inside <...>
    std::string out;
    int depth = 0;
    size_t wordStart = 0;
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      if (c == '<') ++depth;
      if (c == '>') --depth;
      if (depth > 0 && c == '.' && i + 1 < name.size() && isWord(name[i + 1]) &&
          out.size() > wordStart) {
        out.erase(wordStart);  // drop "Namespace." just written
        continue;
      }
      out += c;
      if (!isWord(c) && c != '.') wordStart = out.size();
    }
    name = out;
  }
  while (name.size() > chars) {  // leading qualifiers, before any '<' or '('
    size_t stop = std::min(name.find('<'), name.find('('));
    size_t dot = name.find('.'), colons = name.find("::");
    size_t cut = std::min(dot == std::string::npos ? dot : dot + 1,
                          colons == std::string::npos ? colons : colons + 2);
    if (cut == std::string::npos || cut >= stop || cut >= name.size()) break;
    name.erase(0, cut);
  }
  return fitText(name, chars);
}

}  // namespace

ColorBy parseColorBy(const std::string& s) {
  if (s == "kind") return ColorBy::kKind;
  if (s == "type") return ColorBy::kType;
  if (s == "function") return ColorBy::kFunction;
  if (s == "age") return ColorBy::kAge;
  throw MapError("--color " + s + ": give kind, type, function or age");
}

const char* colorByName(ColorBy c) {
  switch (c) {
    case ColorBy::kKind: return "kind";
    case ColorBy::kType: return "type";
    case ColorBy::kFunction: return "function";
    case ColorBy::kAge: return "age";
  }
  return "?";
}

std::string bytesText(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char b[32];
  if (u == 0)
    std::snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(b, sizeof b, "%.1f %s", v, kUnits[u]);
  return b;
}

uint64_t nameHash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// ---- MapRenderer --------------------------------------------------------------------------------

MapRenderer::MapRenderer(replay::Replay& r, replay::Attribution* attribution, const LogScan& scan,
                         MapOptions options)
    : r_(r), a_(attribution), scan_(scan), o_(std::move(options)), clock_(r.tables()) {
  if (o_.color == ColorBy::kFunction && !a_)
    throw MapError("colouring by function needs the blame attribution");
  if (o_.width < 256 || o_.height < 256 || o_.width > 8192 || o_.height > 8192)
    throw MapError("--size " + std::to_string(o_.width) + "x" + std::to_string(o_.height) +
                   ": give a width and height from 256 to 8192");
  if (o_.width % 2 || o_.height % 2)
    throw MapError("--size: give an even width and height (H.264 needs them)");
  palette_ = namePalette();
  scale_ = o_.width >= 800 ? 2 : 1;
  int pad = 6 * scale_ / 2 + 3;
  int line = kCellHeight * scale_;
  headerH_ = pad + line + 4 + line + pad;
  timelineY_ = headerH_;
  timelineH_ = 18 * scale_;
  size_t cols = o_.width >= 900 ? 3 : 2;
  size_t rows = (o_.legendRows + 1 + cols - 1) / cols;
  int legendH = pad + int(rows) * (line + 3 * scale_) + pad;
  legendY_ = o_.height - legendH;
  mapY_ = timelineY_ + timelineH_ + pad;
  mapH_ = legendY_ - pad - mapY_;
  if (mapH_ < 64) throw MapError("the picture is too small for its legend: give a larger --size");
  // Linear rows span a power of two of pixels (the whole width of a 1024-wide picture), so a
  // row is a power of two of bytes: 1 MiB at 1 KiB a pixel, as in Tracy's memory map.
  int mapX = pad, mapW = o_.width - 2 * pad;
  if (o_.curve == Curve::kLinear) {
    mapW = 1;
    while (mapW * 2 <= o_.width) mapW *= 2;
    mapX = (o_.width - mapW) / 2;
  }
  layout_ = std::make_unique<AddressLayout>(scan_.granules, o_.curve, mapX, mapY_, mapW, mapH_,
                                            o_.width, o_.bytesPerPixel);
  size_t n = layout_->positions();
  cells_.assign(n, Cell{});
  prepareKeys();
  placeLabels();
  drawStatic();
  newSince_ = r_.position();
}

MapRenderer::~MapRenderer() = default;

uint32_t MapRenderer::nameKey(const std::string& name, uint64_t hash) {
  auto [it, added] = keyOfName_.try_emplace(name, uint32_t(names_.size()));
  if (!added) return it->second;
  names_.push_back(name);
  auto fixed = fixedSlot_.find(name);
  size_t slot = fixed != fixedSlot_.end()
                    ? fixed->second
                    : kFixedSlots + hash % (palette_.size() - kFixedSlots);
  colors_.push_back(palette_[slot]);
  return it->second;
}

void MapRenderer::prepareKeys() {
  const replay::LogTables& t = r_.tables();
  if (o_.color == ColorBy::kKind) {
    for (int k = 0; k < log::kHeapKindCount; ++k) {
      auto kind = static_cast<log::HeapKind>(k);
      names_.push_back(log::heapKindName(kind));
      colors_.push_back(kindColor(kind));
    }
    for (const replay::AllocInfo& i : t.infos) keyOfInfo_.push_back(uint32_t(i.heap));
    return;
  }
  if (o_.color == ColorBy::kAge) {
    bool gcs = !t.gcs.empty();
    static const char* kGcNames[kAgeBuckets] = {"new (no GC yet)", "1 GC",   "2 GCs",
                                               "3-4 GCs",         "5-8 GCs", "9-16 GCs",
                                               "17-32 GCs",       "33+ GCs"};
    for (int b = 0; b < kAgeBuckets; ++b) {
      names_.push_back(gcs ? kGcNames[b]
                           : "born " + std::to_string(100 * (kAgeBuckets - 1 - b) / kAgeBuckets) +
                                 "-" + std::to_string(100 * (kAgeBuckets - b) / kAgeBuckets) +
                                 "% into the log");
      double f = double(b) / (kAgeBuckets - 1);  // new: light yellow; old: deep blue-violet
      colors_.push_back(oklch(0.95 - 0.5 * f, 0.16, 100 + 185 * f));
    }
    return;
  }
  // Names by bytes allocated over the log: the top ones take the fixed slots.
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < t.infos.size(); ++i) ids.push_back(i);
  if (a_) a_->prepareInfos(ids);
  std::unordered_map<std::string, uint64_t> total;
  std::vector<std::string> nameOf(t.infos.size());
  for (uint32_t i : ids) {
    if (o_.color == ColorBy::kType) {
      nameOf[i] = replay::typeLabel(t, t.infos[i]);
    } else {
      const replay::Site& s = a_->site(a_->siteOf(t.infos[i].stackId));
      nameOf[i] = s.function + '\x1f' + s.module;
    }
    total[nameOf[i]] += i < scan_.allocBytes.size() ? scan_.allocBytes[i] : 0;
  }
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& [name, bytes] : total) order.push_back({bytes, name});
  std::sort(order.begin(), order.end(), [](auto& x, auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  for (size_t k = 0; k < order.size() && k < kFixedSlots; ++k) fixedSlot_[order[k].second] = k;
  keyOfInfo_.assign(t.infos.size(), kNoKey);
  for (uint32_t i : ids) keyOfInfo_[i] = nameKey(nameOf[i], nameHash(nameOf[i]));
  // Shown without the module (kept in the key: blame's rows are per function and module).
  for (std::string& n : names_) n = n.substr(0, n.find('\x1f'));
}

uint32_t MapRenderer::keyOf(const replay::LiveObject& o) {
  const replay::LogTables& t = r_.tables();
  uint32_t id = o.info();
  switch (o_.color) {
    case ColorBy::kKind: return uint32_t(r_.info(id).heap);
    case ColorBy::kAge: {
      if (!t.gcs.empty()) {
        uint32_t born = r_.epochOf(o.birthSeq());
        uint32_t survived = epochNow_ > born ? epochNow_ - born : 0;
        if (survived <= 2) return survived;  // then 3-4, 5-8, 9-16, 17-32, 33+
        return std::min<uint32_t>(kAgeBuckets - 1, 2 + uint32_t(31 - __builtin_clz(survived - 1)));
      }
      uint64_t span = std::max<uint64_t>(1, t.endSeq - t.firstSeq);
      uint64_t b = (o.birthSeq() - std::min(o.birthSeq(), t.firstSeq)) * kAgeBuckets / span;
      return kAgeBuckets - 1 - uint32_t(std::min<uint64_t>(b, kAgeBuckets - 1));
    }
    default: break;
  }
  if (id < keyOfInfo_.size() && keyOfInfo_[id] != kNoKey) return keyOfInfo_[id];
  // An AllocInfo the tables did not list (not expected: the index pass interns them all).
  if (id >= keyOfInfo_.size()) keyOfInfo_.resize(id + 1, kNoKey);
  std::string name;
  if (o_.color == ColorBy::kType) {
    name = replay::typeLabel(t, r_.info(id));
  } else {
    a_->prepareInfos({id});
    const replay::Site& s = a_->site(a_->siteOf(r_.info(id).stackId));
    name = s.function + '\x1f' + s.module;
  }
  uint32_t k = nameKey(name, nameHash(name));
  names_[k] = name.substr(0, name.find('\x1f'));
  return keyOfInfo_[id] = k;
}

void MapRenderer::addDeaths(std::vector<DeadObject> dead) {
  if (pending_.empty())
    pending_ = std::move(dead);
  else
    pending_.insert(pending_.end(), dead.begin(), dead.end());
}

void MapRenderer::advance(uint64_t limit) {
  r_.seek(limit, this);
  trackedPosition_ = r_.position();
}

void MapRenderer::born(const replay::LiveObject& o) {
  if (tracking_) touch(o, true);
}

void MapRenderer::died(const replay::LiveObject& o, replay::Death, uint64_t) {
  const replay::AllocInfo& i = r_.info(o.info());
  pending_.push_back({o.address, i.actualSize ? i.actualSize : i.size});
  if (tracking_) touch(o, false);
}

void MapRenderer::touch(const replay::LiveObject& o, bool add) {
  const AddressLayout& L = *layout_;
  const unsigned shift = L.bppShift(), unit = shift > 12 ? shift - 12 : 0;
  const size_t n = L.positions();
  const replay::AllocInfo& info = r_.info(o.info());
  uint32_t key = keyOf(o);
  if (key >= keyBytes_.size()) keyBytes_.resize(key + 1), keyObjects_.resize(key + 1);
  if (add) {
    keyBytes_[key] += info.size, ++keyObjects_[key], liveBytes_ += info.size, ++liveObjects_;
    ++bornSince_;
  } else {
    keyBytes_[key] -= info.size, --keyObjects_[key], liveBytes_ -= info.size, --liveObjects_;
  }
  int64_t off = L.offsetOf(o.address);
  if (off < 0) {
    if (add) ++unplaced_; else --unplaced_;
    return;
  }
  uint64_t first = uint64_t(off);
  uint64_t end = first + std::max<uint64_t>(1, info.actualSize ? info.actualSize : info.size);
  size_t d0 = size_t(first >> shift), d1 = std::min(size_t((end - 1) >> shift), n - 1);
  auto k = uint16_t(std::min(key, kMaxKeys));
  for (size_t d = d0; d <= d1; ++d) {
    uint64_t lo = std::max<uint64_t>(first, uint64_t(d) << shift);
    uint64_t hi = std::min<uint64_t>(end, uint64_t(d + 1) << shift);
    auto units = uint16_t(std::max<uint64_t>(1, (hi - lo) >> unit));
    Cell& c = cells_[d];
    if (add) {
      c.cover = uint16_t(std::min<uint32_t>(0xFFFF, uint32_t(c.cover) + units));
      if (units >= c.best) {
        c.best = units, c.key = k | kNewBit;
        newCells_.push_back(uint32_t(d));
      }
    } else {
      c.cover = c.cover > units ? uint16_t(c.cover - units) : 0;
      if (c.cover == 0 || ((c.key & ~kNewBit) == k && units >= c.best)) c.best = 0;
    }
  }
}

void MapRenderer::drawStatic() {
  const replay::LogTables& t = r_.tables();
  Image& bg = background_;
  bg = Image(o_.width, o_.height, kCanvas);
  bg.fill(0, 0, o_.width, headerH_, kPanel);
  bg.fill(0, legendY_, o_.width, o_.height - legendY_, kPanel);
  // Regions: alternating shades over their positions.
  const AddressLayout& L = *layout_;
  const auto& regions = L.regions();
  for (size_t k = 0; k < regions.size(); ++k) {
    size_t end = k + 1 < regions.size() ? regions[k + 1].firstPixel : L.positions();
    size_t last = regions[k].firstPixel +
                  size_t((regions[k].end - regions[k].begin + L.bytesPerPixel() - 1) >>
                         L.bppShift());
    end = std::min(end, last);
    Rgb c = k % 2 ? kRegionB : kRegionA;
    for (size_t d = regions[k].firstPixel; d < end; ++d) {
      uint32_t px = L.pixel(d);
      bg.set(int(px % uint32_t(o_.width)), int(px / uint32_t(o_.width)), c);
    }
  }
  // Timeline: live bytes over the log (an area), GC ticks below, custom event ticks above.
  int x0 = 6, w = o_.width - 12, y0 = timelineY_, h = timelineH_;
  bg.fill(x0, y0, w, h, 0x0A0C10);
  stripLit_ = Image(w, h, 0x10141A);
  uint64_t span = std::max<uint64_t>(1, scan_.endSeq - scan_.firstSeq);
  size_t bins = scan_.liveBytes.size();
  for (int x = 0; x < w && bins; ++x) {
    uint64_t v = scan_.liveBytes[std::min(bins - 1, size_t(x) * bins / size_t(w))];
    int bar = scan_.peakBytes ? int(uint64_t(h - 4) * v / scan_.peakBytes) : 0;
    bg.fill(x0 + x, y0 + h - bar, 1, bar, 0x2C4A6E);
    stripLit_.fill(x, h - bar, 1, bar, 0x5B9BE0);
  }
  auto xOf = [&](uint64_t seq) {
    return int(__uint128_t(std::min(span, seq - std::min(seq, scan_.firstSeq))) * uint64_t(w - 1) /
               span);
  };
  for (const replay::GcRecord& g : t.gcs) {
    if (!g.ended) continue;
    bg.fill(x0 + xOf(g.endSeq), y0 + h - 3, 1, 3, 0x8A9099);
    stripLit_.fill(xOf(g.endSeq), h - 3, 1, 3, 0xC8CDD4);
  }
  for (const replay::EventRecord& e : t.events) {
    Rgb c = palette_[kFixedSlots + nameHash(t.eventName(e.nameId)) % (palette_.size() - kFixedSlots)];
    bg.fill(x0 + xOf(e.seq), y0, 1, h / 3, scale(c, 170));
    stripLit_.fill(xOf(e.seq), 0, 1, h / 3, c);
  }
  std::string peak = "live bytes, peak " + bytesText(scan_.peakBytes);
  drawText(bg, x0 + 4, y0 + 3, peak, kDimText, 1);
  drawText(stripLit_, 4, 3, peak, kText, 1);
  // Region labels over the map (objects never cover them: drawn again after composing).
}

void MapRenderer::placeLabels() {
  const AddressLayout& L = *layout_;
  for (const Region& r : L.regions()) {
    std::string text = hexAddress(r.begin) + "-" + hexAddress(r.end) + " " +
                       bytesText(r.end - r.begin);
    uint32_t px = L.pixel(r.firstPixel);
    Label l{int(px % uint32_t(o_.width)), int(px / uint32_t(o_.width)), textWidth(text) + 4,
            kCellHeight + 2, text};
    l.x = std::min(l.x, o_.width - l.w);
    bool clash = l.y + l.h > legendY_;
    for (const Label& b : labels_)
      if (l.x < b.x + b.w && b.x < l.x + l.w && l.y < b.y + b.h && b.y < l.y + l.h) clash = true;
    if (!clash) labels_.push_back(l);
  }
}

void MapRenderer::drawRegionLabels(Image& img) const {
  for (const Label& l : labels_) {
    img.blend(l.x, l.y, l.w, l.h, 0x000000, 170);
    drawText(img, l.x + 2, l.y + 2, l.text, kText, 1);
  }
}

void MapRenderer::drawHeader(Image& img, const MapPicture& p) const {
  int pad = 6 * scale_ / 2 + 3, line = kCellHeight * scale_;
  PointInfo at = clock_.at(r_.position());
  std::string title = o_.title + (o_.title.empty() ? "" : "  ") + r_.describe(r_.position());
  std::string right = std::string(curveName(o_.curve)) + ", " +
                      bytesText(layout_->bytesPerPixel()) + "/px" +
                      (o_.curve == Curve::kLinear
                           ? ", rows of " + bytesText(layout_->bytesPerPixel() *
                                                      uint64_t(layout_->tileSide()))
                           : "") +
                      ", colour: " + colorByName(o_.color);
  int rw = textWidth(right, 1);
  drawText(img, pad, pad, fitText(title, size_t((o_.width - 3 * pad - rw) / (kCellWidth * scale_))),
           kWhite, scale_);
  drawText(img, o_.width - pad - rw, pad + line - kCellHeight, right, kDimText, 1);
  std::string stats = std::string(at.hasGc ? "GC " + std::to_string(at.gc) : "no GC yet") + "   " +
                      seconds(at.timeNs) + "   " +
                      (at.hasFrame ? "frame " + std::to_string(at.frame) : "no frame yet") +
                      "   " + (at.lastEvent.empty() ? "no event yet" : at.lastEvent) + "   live " +
                      bytesText(p.liveBytes) + " in " + thousands(p.liveObjects) + " objects";
  int s = textWidth(stats, scale_) <= o_.width - 2 * pad ? scale_ : 1;
  drawText(img, pad, pad + line + 4, stats, kText, s);
}

void MapRenderer::drawTimeline(Image& img) const {
  int x0 = 6, w = o_.width - 12, y0 = timelineY_, h = timelineH_;
  uint64_t span = std::max<uint64_t>(1, scan_.endSeq - scan_.firstSeq);
  uint64_t pos = std::min(r_.position(), scan_.endSeq);
  int cursor = int(__uint128_t(pos - std::min(pos, scan_.firstSeq)) * uint64_t(w - 1) / span);
  for (int y = 0; y < h; ++y)
    std::memcpy(&img.rgb[(size_t(y0 + y) * size_t(o_.width) + size_t(x0)) * 3],
                &stripLit_.rgb[size_t(y) * size_t(w) * 3], size_t(cursor) * 3);
  img.fill(x0 + cursor - 1, y0, 2, h, kWhite);
}

void MapRenderer::drawLegend(Image& img, const MapPicture& p) const {
  int pad = 6 * scale_ / 2 + 3, line = kCellHeight * scale_, rowH = line + 3 * scale_;
  size_t cols = o_.width >= 900 ? 3 : 2;
  int colW = (o_.width - 2 * pad) / int(cols);
  size_t shown = std::min(p.legend.size(), o_.legendRows);
  auto entry = [&](size_t slot, Rgb c, const std::string& name, uint64_t bytes) {
    int x = pad + int(slot % cols) * colW, y = legendY_ + pad + int(slot / cols) * rowH;
    img.fill(x, y, line - 2, line - 2, c);
    std::string b = bytesText(bytes);
    int bw = textWidth(b, scale_);
    int nameChars = (colW - line - bw - 4 * scale_) / (kCellWidth * scale_);
    drawText(img, x + line + 2, y, fitName(name, size_t(std::max(nameChars, 3))), kText, scale_);
    drawText(img, x + colW - bw - 3 * scale_, y, b, kDimText, scale_);
  };
  for (size_t i = 0; i < shown; ++i)
    entry(i, p.legend[i].color, shortName(p.legend[i].name), p.legend[i].bytes);
  if (p.legend.size() > shown) {
    uint64_t rest = 0;
    for (size_t i = shown; i < p.legend.size(); ++i) rest += p.legend[i].bytes;
    entry(shown, 0x5A606A, "other (" + std::to_string(p.legend.size() - shown) + ")", rest);
  }
}

MapPicture MapRenderer::render() {
  MapPicture p;
  render(p);
  return p;
}

void MapRenderer::repaint(MapPicture& p) {
  (void)p;
  const AddressLayout& L = *layout_;
  const unsigned shift = L.bppShift();
  const size_t n = L.positions();
  // Cover counts in units of 2^unit bytes: a full pixel is at most 4096 units (fits 16 bits).
  const unsigned unit = shift > 12 ? shift - 12 : 0;
  Cell* cells = cells_.data();
  std::memset(cells, 0, n * sizeof(Cell));
  keyBytes_.assign(names_.size(), 0);
  keyObjects_.assign(names_.size(), 0);
  epochNow_ = r_.epochOf(r_.position());
  liveBytes_ = liveObjects_ = bornSince_ = unplaced_ = 0;
  newCells_.clear();
  const uint64_t newSince = newSince_;
  // Painting waits kAhead objects after the prefetch of its cells, so the miss is under way
  // while the objects between are looked at.
  struct Paint {
    uint64_t first, end;
    uint16_t key;
  };
  constexpr size_t kAhead = 16;
  Paint ring[kAhead];
  size_t queued = 0;
  auto paint = [&](const Paint& w) __attribute__((always_inline)) {
    size_t d0 = size_t(w.first >> shift), d1 = size_t((w.end - 1) >> shift);
    if (d1 >= n) d1 = n - 1;
    if (d0 == d1) {  // the common case: within one pixel
      Cell& c = cells[d0];
      auto units = uint16_t(std::max<uint64_t>(1, (w.end - w.first) >> unit));
      c.cover = uint16_t(std::min<uint32_t>(0xFFFF, uint32_t(c.cover) + units));
      if (units > c.best) c.best = units, c.key = w.key;
      return;
    }
    for (size_t d = d0; d <= d1; ++d) {
      uint64_t lo = std::max<uint64_t>(w.first, uint64_t(d) << shift);
      uint64_t hi = std::min<uint64_t>(w.end, uint64_t(d + 1) << shift);
      auto units = uint16_t(std::max<uint64_t>(1, (hi - lo) >> unit));
      Cell& c = cells[d];
      c.cover = uint16_t(std::min<uint32_t>(0xFFFF, uint32_t(c.cover) + units));
      if (units > c.best) c.best = units, c.key = w.key;
    }
  };
  const bool byAge = o_.color == ColorBy::kAge;
  const replay::AllocInfo* infos = r_.tables().infos.data();
  const size_t infoCount = r_.tables().infos.size();
  r_.live().forEach([&](const replay::LiveObject& o) {
    uint32_t id = o.info();
    const replay::AllocInfo& info = id < infoCount ? infos[id] : r_.info(id);
    uint32_t key = !byAge && id < keyOfInfo_.size() && keyOfInfo_[id] != kNoKey ? keyOfInfo_[id]
                                                                               : keyOf(o);
    if (key >= keyBytes_.size()) keyBytes_.resize(key + 1), keyObjects_.resize(key + 1);
    keyBytes_[key] += info.size;
    ++keyObjects_[key];
    liveBytes_ += info.size;
    ++liveObjects_;
    bool isNew = o.birthSeq() >= newSince;
    bornSince_ += isNew;
    int64_t off = L.offsetOf(o.address);
    if (off < 0) {
      ++unplaced_;
      return;
    }
    uint64_t size = std::max<uint64_t>(1, info.actualSize ? info.actualSize : info.size);
    Paint w{uint64_t(off), uint64_t(off) + size,
            uint16_t(std::min(key, kMaxKeys) | (isNew ? kNewBit : 0))};
    __builtin_prefetch(&cells[std::min(size_t(w.first >> shift), n - 1)], 1);
    if (isNew) newCells_.push_back(uint32_t(std::min(size_t(w.first >> shift), n - 1)));
    Paint& slot = ring[queued++ % kAhead];
    if (queued > kAhead) paint(slot);
    slot = w;
  });
  for (size_t i = queued > kAhead ? queued - kAhead : 0; i < queued; ++i) paint(ring[i % kAhead]);
  tracking_ = true;
  trackedPosition_ = r_.position();
  paintedEpoch_ = epochNow_;
}

void MapRenderer::render(MapPicture& p) {
  const AddressLayout& L = *layout_;
  const unsigned shift = L.bppShift();
  const size_t n = L.positions();
  Cell* cells = cells_.data();
  epochNow_ = r_.epochOf(r_.position());
  bool fresh = !tracking_ || trackedPosition_ != r_.position() ||
               (o_.color == ColorBy::kAge && epochNow_ != paintedEpoch_);
  // Deaths: the marks of the pictures before are taken off, then set again one step fainter.
  auto markDeaths = [&](bool clear) {
    const auto fade = size_t(std::max(o_.fadePictures, 1));
    for (size_t age = 0; age < deaths_.size(); ++age) {
      auto level = clear ? uint8_t(0) : uint8_t(255 * (fade - age) / fade);
      for (const DeadObject& d : deaths_[age]) {
        int64_t off = L.offsetOf(d.address);
        if (off < 0) continue;
        size_t d0 = size_t(off) >> shift;
        size_t d1 = size_t((uint64_t(off) + std::max<uint64_t>(d.size, 1) - 1) >> shift);
        for (size_t k = d0; k <= d1 && k < n; ++k)
          cells[k].dead = clear ? 0 : std::max(cells[k].dead, level);
      }
    }
  };
  if (fresh) {
    repaint(p);
  } else {
    markDeaths(true);
  }
  deaths_.insert(deaths_.begin(), std::move(pending_));
  pending_.clear();
  if (deaths_.size() > size_t(std::max(o_.fadePictures, 1)))
    deaths_.resize(size_t(std::max(o_.fadePictures, 1)));
  markDeaths(false);
  p.liveBytes = liveBytes_;
  p.liveObjects = liveObjects_;
  p.bornSince = bornSince_;
  p.unplaced = unplaced_;
  compose(p);
  // The next picture's births are new, not these.
  for (uint32_t d : newCells_) cells[d].key &= uint16_t(~kNewBit);
  newCells_.clear();
  bornSince_ = 0;
  newSince_ = r_.position();
}

void MapRenderer::compose(MapPicture& p) {
  const AddressLayout& L = *layout_;
  const unsigned shift = L.bppShift();
  const size_t n = L.positions();
  const unsigned unit = shift > 12 ? shift - 12 : 0;
  const uint64_t full = (uint64_t{1} << shift) >> unit;
  const Cell* cells = cells_.data();
  // Over the background.
  if (p.image.width != o_.width || p.image.height != o_.height) p.image = Image(o_.width, o_.height);
  std::memcpy(p.image.rgb.data(), background_.rgb.data(), background_.rgb.size());
  uint8_t* out = p.image.rgb.data();
  // Colours per key at 33 brightness steps, new and not, looked up rather than mixed per pixel.
  constexpr int kSteps = 32;
  shades_.resize(colors_.size() * (kSteps + 1) * 2);
  for (size_t k = 0; k < colors_.size(); ++k)
    for (int step = 0; step <= kSteps; ++step) {
      Rgb c = scale(colors_[k], 120 + step * 136 / kSteps);
      shades_[(k * (kSteps + 1) + size_t(step)) * 2] = c;
      shades_[(k * (kSteps + 1) + size_t(step)) * 2 + 1] = mix(c, kWhite, 96);
    }
  const size_t lastKey = colors_.size() - 1;
  for (size_t d = 0; d < n; ++d) {
    const Cell& cell = cells[d];
    Rgb c;
    if (cell.cover) {
      size_t k = std::min<size_t>(cell.key & ~kNewBit, lastKey);
      auto step = size_t(std::min<uint64_t>(kSteps, uint64_t(cell.cover) * kSteps / full));
      c = shades_[(k * (kSteps + 1) + step) * 2 + (cell.key & kNewBit ? 1 : 0)];
    } else if (cell.dead) {
      uint8_t* px = out + size_t(L.pixel(d)) * 3;
      c = mix(Rgb(px[0]) << 16 | Rgb(px[1]) << 8 | px[2], kDead, cell.dead + 1);
    } else {
      continue;
    }
    uint8_t* px = out + size_t(L.pixel(d)) * 3;
    px[0] = uint8_t(c >> 16), px[1] = uint8_t(c >> 8), px[2] = uint8_t(c);
  }
  // The legend: every key with live objects.
  p.legend.clear();
  for (uint32_t k = 0; k < keyBytes_.size(); ++k)
    if (keyObjects_[k]) p.legend.push_back({names_[k], colors_[k], keyBytes_[k], keyObjects_[k]});
  std::sort(p.legend.begin(), p.legend.end(), [](const LegendEntry& x, const LegendEntry& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.name < y.name;
  });
  drawRegionLabels(p.image);
  drawHeader(p.image, p);
  drawTimeline(p.image);
  drawLegend(p.image, p);
}

}  // namespace heapman::map
