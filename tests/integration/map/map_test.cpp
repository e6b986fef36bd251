// The heap map of a real recorded program (map_truth.c): its big objects lie on the pixels their
// addresses map to under each layout, in the colour of their heap kind, the one freed since the
// previous picture red; the legend equals blame; ffprobe reads the video back (frames, duration
// within a frame of the recorded span with --realtime, codec, size) and its WebVTT cues are the
// events `heapman events` lists. The PNG files are decoded with libpng here.
#include <catch2/catch.hpp>

#include <png.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "heapman/map/heap_map.h"
#include "heapman/map/layout.h"
#include "support/csv.h"
#include "support/shell.h"

using namespace heapman;

using hmtest::parseCsv;

namespace {

struct Obj {
  std::string name, kind;
  uint64_t address = 0, size = 0;
};

struct Truth {
  std::string dir, log;
  std::vector<Obj> objects;  // the live ones, then "freed"
  ~Truth() { hmtest::removeTempDir(dir); }
};

// Runs a shell command; its exit status, stdout in `out` (stderr in `err` when given).
int sh(const std::string& cmd, std::string& out, std::string* err = nullptr) {
  hmtest::ShellResult r = hmtest::runShell(cmd);
  out = r.out;
  if (err) *err = r.err;
  INFO(cmd << "\n" << r.err);
  return r.status;
}

const Truth& truth() {
  static Truth t;
  if (!t.dir.empty()) return t;
  t.dir = hmtest::makeTempDir("map");
  t.log = t.dir + "/truth.hml";
  std::string out;
  REQUIRE(sh(std::string("'") + MAP_HEAPREC + "' run -o '" + t.log + "' -- '" + MAP_TRUTH + "'",
             out) == 0);
  std::istringstream in(out);
  Obj o;
  std::string addr;
  while (in >> o.name >> o.kind >> addr >> o.size) {
    o.address = std::stoull(addr, nullptr, 16);
    t.objects.push_back(o);
  }
  REQUIRE(t.objects.size() == 5);
  return t;
}

std::string cli(const std::string& args) {
  return std::string("'") + MAP_HEAPMAN + "' " + args;
}


std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Png {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  uint32_t at(uint32_t index) const {
    const uint8_t* p = &rgb[size_t(index) * 3];
    return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
  }
};

Png decode(const std::string& path) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_file(&img, path.c_str()));
  img.format = PNG_FORMAT_RGB;
  Png out;
  out.width = int(img.width);
  out.height = int(img.height);
  out.rgb.resize(PNG_IMAGE_SIZE(img));
  REQUIRE(png_image_finish_read(&img, nullptr, out.rgb.data(), 0, nullptr));
  return out;
}

uint32_t hexColor(const std::string& s) {
  REQUIRE(s.size() == 7);
  REQUIRE(s[0] == '#');
  return uint32_t(std::stoul(s.substr(1), nullptr, 16));
}

// Column index by header name.
size_t col(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  FAIL("no column " << name);
  return 0;
}

}  // namespace

TEST_CASE("the Hilbert curve visits every cell of its square once and each next to the last",
          "[map]") {
  for (uint32_t side : {2u, 8u, 64u}) {
    std::set<std::pair<uint32_t, uint32_t>> seen;
    uint32_t px = 0, py = 0;
    for (uint32_t d = 0; d < side * side; ++d) {
      uint32_t x, y;
      map::hilbertPoint(side, d, x, y);
      REQUIRE(x < side);
      REQUIRE(y < side);
      seen.insert({x, y});
      if (d) REQUIRE(std::abs(int(x) - int(px)) + std::abs(int(y) - int(py)) == 1);
      px = x, py = y;
    }
    CHECK(seen.size() == side * side);
    uint32_t x, y;
    map::hilbertPoint(side, 0, x, y);
    CHECK((x == 0 && y == 0));
    map::hilbertPoint(side, side * side - 1, x, y);
    CHECK((x == side - 1 && y == 0));
  }
}

TEST_CASE("known objects sit on the pixels of their addresses in the colour of their kind",
          "[map][truth]") {
  const Truth& t = truth();
  for (const char* layout : {"hilbert", "linear"}) {
    INFO(layout);
    std::string png = t.dir + "/" + layout + ".png", legend = t.dir + "/" + layout + ".csv";
    std::string out;
    REQUIRE(sh(cli("map '" + t.log + "' --at end --since drop --layout " + layout +
                       " --color kind -o '" + png + "' --csv '" + legend + "'"),
               out) == 0);
    Png img = decode(png);
    REQUIRE(img.width == 1024);
    REQUIRE(img.height == 1024);
    auto rows = parseCsv(readFile(legend));
    REQUIRE(rows.size() >= 5);
    std::map<std::string, uint32_t> colorOf;
    for (size_t i = 1; i < rows.size(); ++i)
      colorOf[rows[i][col(rows[0], "kind")]] = hexColor(rows[i][col(rows[0], "color")]);
    std::set<uint32_t> distinct;
    for (auto& [k, c] : colorOf) distinct.insert(c);
    CHECK(distinct.size() == colorOf.size());

    // The same layout in process: what it says about an address is checked against the curve's
    // own geometry below, then the picture against it.
    replay::ReplayOptions ro;
    ro.notes = nullptr;
    replay::Replay r(t.log, ro);
    map::LogScan scan = map::scanLog(r);
    map::MapOptions mo;
    mo.curve = map::parseCurve(layout);
    map::MapRenderer m(r, nullptr, scan, mo);
    const map::AddressLayout& L = m.layout();
    const uint64_t bpp = L.bytesPerPixel();
    INFO("bytes per pixel " << bpp);
    // Address order is map order.
    std::vector<Obj> byAddress = t.objects;
    std::sort(byAddress.begin(), byAddress.end(),
              [](const Obj& a, const Obj& b) { return a.address < b.address; });
    for (size_t i = 1; i < byAddress.size(); ++i)
      CHECK(L.offsetOf(byAddress[i - 1].address) < L.offsetOf(byAddress[i].address));
    for (const Obj& o : t.objects) {
      INFO(o.name << " at " << std::hex << o.address);
      int64_t off = L.offsetOf(o.address);
      REQUIRE(off >= 0);
      // Its last byte lies in the same region, size bytes further on.
      REQUIRE(L.offsetOf(o.address + o.size - 1) == off + int64_t(o.size) - 1);
      uint64_t d0 = (uint64_t(off) + bpp - 1) / bpp, d1 = (uint64_t(off) + o.size) / bpp;  // [d0, d1)
      REQUIRE(d1 > d0 + 2);
      uint32_t want = o.name == "freed" ? 0xFF3B30u : colorOf.at(o.kind);
      // The freed block's addresses may hold live objects again (malloc and the collector reuse
      // them): those pixels show the live ones.
      std::set<uint64_t> reused;
      if (o.name == "freed") {
        r.seek(r.resolve("end"));
        r.live().forEach([&](const replay::LiveObject& x) {
          const replay::AllocInfo& i = r.info(x.info());
          uint64_t size = std::max<uint64_t>(1, i.actualSize ? i.actualSize : i.size);
          if (x.address >= o.address + o.size || x.address + size <= o.address) return;
          int64_t xo = L.offsetOf(x.address);
          for (uint64_t d = uint64_t(xo) / bpp; d <= (uint64_t(xo) + size - 1) / bpp; ++d)
            reused.insert(d);
        });
      }
      size_t wrong = 0;
      std::string firstWrong;
      auto labelled = [&](uint32_t p) {
        int x = int(p % 1024), y = int(p / 1024);
        for (const auto& l : m.labels())
          if (x >= l.x && x < l.x + l.w && y >= l.y && y < l.y + l.h) return true;
        return false;
      };
      for (uint64_t d = d0; d < d1; ++d) {
        uint32_t p = L.pixel(size_t(d));
        if (img.at(p) != want && !labelled(p) && !reused.count(d) && ++wrong < 4) {
          char b[96];
          std::snprintf(b, sizeof b, "position %llu of %llu: #%06x; ",
                        static_cast<unsigned long long>(d - d0),
                        static_cast<unsigned long long>(d1 - d0), img.at(p));
          firstWrong += b;
        }
        if (d + 1 == d1) break;
        // Consecutive positions are neighbouring pixels: along the row (linear, except at its
        // end), or one step of the curve (hilbert, except between tiles).
        uint32_t q = L.pixel(size_t(d + 1));
        int dx = int(q % 1024) - int(p % 1024), dy = int(q / 1024) - int(p / 1024);
        uint64_t side = uint64_t(L.tileSide());
        if (mo.curve == map::Curve::kLinear) {
          if ((d + 1) % side) REQUIRE((dx == 1 && dy == 0));
        } else if ((d + 1) % (side * side)) {
          REQUIRE(std::abs(dx) + std::abs(dy) == 1);
        }
      }
      INFO(firstWrong);
      CHECK(wrong == 0);
      if (o.name == "freed") CHECK(reused.size() * 4 < d1 - d0);  // mostly red still
    }
  }
}

TEST_CASE("the legend bytes per function are those of blame and per kind their total", "[map][truth]") {
  const Truth& t = truth();
  std::string out;
  std::string fn = t.dir + "/fn.csv", kind = t.dir + "/kind.csv", blame = t.dir + "/blame.csv";
  REQUIRE(sh(cli("map '" + t.log + "' --at wave_end#2 --color function -o '" + t.dir +
                     "/fn.png' --csv '" + fn + "'"),
             out) == 0);
  REQUIRE(sh(cli("map '" + t.log + "' --at wave_end#2 --color kind -o '" + t.dir +
                     "/kind.png' --csv '" + kind + "'"),
             out) == 0);
  REQUIRE(sh(cli("blame '" + t.log + "' --at wave_end#2 --csv '" + blame + "'"), out) == 0);
  auto f = parseCsv(readFile(fn)), k = parseCsv(readFile(kind)), b = parseCsv(readFile(blame));
  REQUIRE(b.size() >= 3);  // main and spawnWave at least
  std::multiset<std::pair<std::string, uint64_t>> legendRows, blameRows;
  uint64_t legendTotal = 0, kindTotal = 0, blameTotal = 0;
  for (size_t i = 1; i < f.size(); ++i) {
    uint64_t bytes = std::stoull(f[i][col(f[0], "live_bytes")]);
    legendRows.insert({f[i][col(f[0], "function")], bytes});
    legendTotal += bytes;
  }
  for (size_t i = 1; i < k.size(); ++i) kindTotal += std::stoull(k[i][col(k[0], "live_bytes")]);
  for (size_t i = 1; i < b.size(); ++i) {
    uint64_t bytes = std::stoull(b[i][col(b[0], "live_bytes")]);
    blameRows.insert({b[i][col(b[0], "function")], bytes});
    blameTotal += bytes;
  }
  CHECK(legendRows == blameRows);
  CHECK(legendTotal == blameTotal);
  CHECK(kindTotal == blameTotal);
  // By type: the rows of heapman types; by age: the same total.
  std::string typ = t.dir + "/type.csv", age = t.dir + "/age.csv", types = t.dir + "/types.csv";
  REQUIRE(sh(cli("map '" + t.log + "' --at wave_end#2 --color type -o '" + t.dir +
                 "/type.png' --csv '" + typ + "'"),
             out) == 0);
  REQUIRE(sh(cli("map '" + t.log + "' --at wave_end#2 --color age -o '" + t.dir +
                 "/age.png' --csv '" + age + "'"),
             out) == 0);
  REQUIRE(sh(cli("types '" + t.log + "' --at wave_end#2 --csv '" + types + "'"), out) == 0);
  auto ty = parseCsv(readFile(typ)), tt = parseCsv(readFile(types)), ag = parseCsv(readFile(age));
  std::map<std::string, uint64_t> byType, typesRows;
  for (size_t i = 1; i < ty.size(); ++i)
    byType[ty[i][col(ty[0], "type")]] = std::stoull(ty[i][col(ty[0], "live_bytes")]);
  for (size_t i = 1; i < tt.size(); ++i)
    typesRows[tt[i][col(tt[0], "type")]] = std::stoull(tt[i][col(tt[0], "bytes")]);
  CHECK(byType == typesRows);
  uint64_t ageTotal = 0;
  for (size_t i = 1; i < ag.size(); ++i) ageTotal += std::stoull(ag[i][col(ag[0], "live_bytes")]);
  CHECK(ageTotal == blameTotal);
  // main charged with the big objects it allocated itself: at least their bytes.
  bool mainRow = false;
  for (auto& [name, bytes] : blameRows)
    if (name == "main") mainRow = bytes >= (256 + 128 + 128 + 512 + 512) << 10;
  CHECK(mainRow);
}

namespace {

struct Probe {
  std::string codec;
  int width = 0, height = 0;
  uint64_t frames = 0;
  double duration = 0;
};

Probe probe(const std::string& path) {
  std::string out;
  REQUIRE(std::string(MAP_FFPROBE) != "");
  REQUIRE(sh(std::string("'") + MAP_FFPROBE +
                 "' -v error -count_frames -select_streams v:0 -show_entries "
                 "stream=codec_name,width,height,nb_read_frames,duration -of default=nw=1 '" +
                 path + "'",
             out) == 0);
  Probe p;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "codec_name") p.codec = v;
    if (k == "width") p.width = std::stoi(v);
    if (k == "height") p.height = std::stoi(v);
    if (k == "nb_read_frames") p.frames = std::stoull(v);
    if (k == "duration") p.duration = std::stod(v);
  }
  return p;
}

// "video:     FILE, N frames at F fps, ..." from heapman video's report.
uint64_t reportedFrames(const std::string& report) {
  auto at = report.find("video:");
  REQUIRE(at != std::string::npos);
  auto comma = report.find(", ", at);
  return std::stoull(report.substr(comma + 2));
}

struct VttCue {
  std::string id, text;
  double start = 0, end = 0;
};

double vttSeconds(const std::string& s) {
  int h, m, sec, ms;
  REQUIRE(std::sscanf(s.c_str(), "%d:%d:%d.%d", &h, &m, &sec, &ms) == 4);
  return h * 3600 + m * 60 + sec + ms / 1000.0;
}

std::vector<VttCue> parseVtt(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  REQUIRE(std::getline(in, line));
  REQUIRE(line == "WEBVTT");
  std::vector<VttCue> cues;
  std::vector<std::string> block;
  auto flush = [&] {
    if (block.empty()) return;
    REQUIRE(block.size() == 3);  // id, timing, text
    VttCue c;
    c.id = block[0];
    auto arrow = block[1].find(" --> ");
    REQUIRE(arrow != std::string::npos);
    c.start = vttSeconds(block[1].substr(0, arrow));
    c.end = vttSeconds(block[1].substr(arrow + 5));
    REQUIRE(c.end > c.start);
    c.text = block[2];
    cues.push_back(c);
    block.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) flush();
    else block.push_back(line);
  }
  flush();
  return cues;
}

}  // namespace

TEST_CASE("a realtime video lasts the recorded span and its subtitles are the events",
          "[map][truth][video]") {
  const Truth& t = truth();
  std::string mp4 = t.dir + "/realtime.mp4", out;
  REQUIRE(sh(cli("video '" + t.log + "' --from wave_start#1 --to wave_end#3 --realtime "
                     "--every frame:1 --fps 30 -o '" + mp4 + "'"),
             out) == 0);
  Probe p = probe(mp4);
  CHECK(p.codec == "h264");
  CHECK(p.width == 1024);
  CHECK(p.height == 1024);
  CHECK(p.frames == reportedFrames(out));
  // The recorded span, from heapman events.
  std::string events;
  REQUIRE(sh(cli("events '" + t.log + "' --csv -"), events) == 0);
  auto ev = parseCsv(events);
  std::map<std::string, std::pair<uint64_t, double>> at;  // point -> seq, ms
  for (size_t i = 1; i < ev.size(); ++i)
    at[ev[i][col(ev[0], "point")]] = {std::stoull(ev[i][col(ev[0], "seq")]),
                                      std::stod(ev[i][col(ev[0], "time_ms")])};
  double span = (at.at("wave_end#3").second - at.at("wave_start#1").second) / 1000;
  INFO("span " << span << " s, video " << p.duration << " s");
  REQUIRE(span > 0.5);  // 60 frames of 10 ms at least
  CHECK(std::abs(p.duration - span) <= 1.0 / 30 + 1e-6);
  CHECK(std::abs(double(p.frames) / 30 - span) <= 1.0 / 30 + 1e-6);

  // Subtitles: the events after --from up to and including the one --to names, at their
  // recorded time since --from (the last one may be pulled into the last frame).
  auto cues = parseVtt(readFile(t.dir + "/realtime.vtt"));
  std::map<std::string, double> eventCues;
  std::vector<uint64_t> frameNumbers;
  for (const VttCue& c : cues) {
    if (c.id.rfind("frame-", 0) == 0) {
      CHECK(c.text == "frame " + c.id.substr(6));
      frameNumbers.push_back(std::stoull(c.id.substr(6)));
    } else {
      CHECK(c.text == c.id);
      eventCues[c.id] = c.start;
    }
  }
  std::map<std::string, double> want;
  for (auto& [point, v] : at)
    if (v.first > at.at("wave_start#1").first && v.first <= at.at("wave_end#3").first)
      want[point] = (v.second - at.at("wave_start#1").second) / 1000;
  REQUIRE(want.size() == 6);  // wave_end#1, wave_start#2, wave_end#2, drop, wave_start#3, wave_end#3
  REQUIRE(eventCues.size() == want.size());
  for (auto& [point, when] : want) {
    INFO(point);
    REQUIRE(eventCues.count(point));
    // An event in the last frame's time is shown from the last frame's start.
    double total = double(p.frames) / 30, shown = std::min(when, total - 1.0 / 30);
    CHECK(std::abs(eventCues[point] - shown) <= 0.002);
  }
  // Frame numbers rise through the video, within the range's 60 frames.
  REQUIRE(frameNumbers.size() > 10);
  CHECK(std::is_sorted(frameNumbers.begin(), frameNumbers.end()));
  CHECK(frameNumbers.back() <= 60);
}

TEST_CASE("one video frame per GC plus the ends and without ffmpeg an error naming the package",
          "[map][truth][video]") {
  const Truth& t = truth();
  std::string mp4 = t.dir + "/gcs.mp4", out, err;
  REQUIRE(sh(cli("video '" + t.log + "' --every gc --size 640x480 --layout linear -o '" +
                     mp4 + "'"),
             out) == 0);
  std::string gcs;
  REQUIRE(sh(cli("gcs '" + t.log + "' --csv -"), gcs) == 0);
  uint64_t ended = parseCsv(gcs).size() - 1;
  REQUIRE(ended >= 12);  // a collection every 5 frames
  Probe p = probe(mp4);
  CHECK(p.codec == "h264");
  CHECK(p.width == 640);
  CHECK(p.height == 480);
  CHECK(p.frames == ended + 2);
  CHECK(std::abs(p.duration - double(ended + 2) / 30) < 1e-6);

  // No ffmpeg on PATH: exit 1 and the package named; with --frames-dir the frames are written.
  std::string dir = t.dir + "/frames", noMp4 = t.dir + "/none.mp4";
  int rc = sh("env PATH=/nonexistent " + cli("video '" + t.log + "' --every gc -o '" +
                                                 noMp4 + "' --frames-dir '" + dir + "'"),
              out, &err);
  CHECK(rc == 1);
  CHECK(err.find("Debian's ffmpeg package") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(noMp4));
  size_t pngs = 0;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".png") ++pngs;
  CHECK(pngs == ended + 2);
  rc = sh("env PATH=/nonexistent " + cli("video '" + t.log + "' -o '" + noMp4 + "'"), out,
          &err);
  CHECK(rc == 1);
  CHECK(err.find("Debian's ffmpeg package") != std::string::npos);
}

TEST_CASE("pictures drawn incrementally keep the counts and cover of a repaint", "[map][truth]") {
  const Truth& t = truth();
  replay::ReplayOptions ro;
  ro.notes = nullptr;
  replay::Replay r(t.log, ro);
  map::LogScan scan = map::scanLog(r);
  replay::Replay fresh(t.log, ro);
  map::MapOptions mo;
  mo.color = map::ColorBy::kType;
  map::MapRenderer inc(r, nullptr, scan, mo), rep(fresh, nullptr, scan, mo);
  r.seek(r.resolve("start"));
  fresh.seek(fresh.resolve("start"));
  map::MapPicture a, b;
  inc.render(a);
  rep.render(b);
  size_t pictures = 0;
  for (const replay::FrameRecord& f : r.tables().frames) {
    inc.advance(f.seq + 1);
    inc.render(a);
    map::DeathCollector deaths(fresh);  // the repaint's deaths, red the same way
    fresh.seek(f.seq + 1, &deaths);
    rep.addDeaths(deaths.take());
    rep.render(b);
    INFO("frame " << f.frame);
    REQUIRE(a.liveBytes == b.liveBytes);
    REQUIRE(a.liveObjects == b.liveObjects);
    REQUIRE(a.legend.size() == b.legend.size());
    for (size_t i = 0; i < a.legend.size(); ++i) {
      CHECK(a.legend[i].name == b.legend[i].name);
      CHECK(a.legend[i].bytes == b.legend[i].bytes);
      CHECK(a.legend[i].objects == b.legend[i].objects);
    }
    // The same pixels hold heap (colours may differ where the largest cover died: see
    // MapRenderer), and the same are empty.
    const map::AddressLayout& L = inc.layout();
    size_t differ = 0;
    for (size_t d = 0; d < L.positions(); ++d) {
      uint32_t p = L.pixel(d);
      bool ea = a.image.rgb[p * 3] == b.image.rgb[p * 3] &&
                a.image.rgb[p * 3 + 1] == b.image.rgb[p * 3 + 1] &&
                a.image.rgb[p * 3 + 2] == b.image.rgb[p * 3 + 2];
      differ += !ea;
    }
    // Only pixels whose largest cover died since the last repaint may differ: few.
    CHECK(differ * 100 <= L.positions());
    ++pictures;
  }
  CHECK(pictures == 60);
}

// heapman serve's workers each replay the log on their own thread: the scan behind their
// pictures is made once between them (the others wait for the first) and equals scanLog's.
TEST_CASE("replays of one log on several threads share one scan", "[map][truth]") {
  const Truth& t = truth();
  replay::ReplayOptions ro;
  ro.notes = nullptr;
  std::vector<std::shared_ptr<const map::LogScan>> got(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      replay::Replay r(t.log, ro);
      got[i] = map::sharedScan(r, 64);
    });
  for (std::thread& th : threads) th.join();
  REQUIRE(got[0]);
  CHECK(got[1] == got[0]);
  CHECK(got[2] == got[0]);
  replay::Replay r(t.log, ro);
  map::LogScan own = map::scanLog(r, 64);
  CHECK(own.granules == got[0]->granules);
  CHECK(own.allocBytes == got[0]->allocBytes);
  CHECK(own.liveBytes == got[0]->liveBytes);
  CHECK(map::sharedScan(r, 64) == got[0]);  // a later replay of the same log too
  CHECK(map::sharedScan(r, 32) != got[0]);  // another number of samples is another scan

  // Read from the index's counts, the scan is a pass's: the same granules and bytes allocated,
  // and the same live bytes at every bin whose end is a point of the index's series.
  const replay::LogTables& tab = r.tables();
  REQUIRE(tab.seriesIndexed);
  map::LogScanner pass(r, 64);
  r.replayFromStart(tab.firstSeq);
  r.seek(tab.endSeq, &pass);
  map::LogScan want = pass.take();
  CHECK(own.granules == want.granules);
  CHECK(own.allocBytes == want.allocBytes);
  REQUIRE(own.liveBytes.size() == want.liveBytes.size());
  size_t exact = 0;
  const uint64_t span = tab.endSeq - tab.firstSeq;
  for (size_t b = 0; b < want.liveBytes.size(); ++b) {
    uint64_t end = b + 1 == want.liveBytes.size() ? tab.endSeq
                                                   : tab.firstSeq + (span * (b + 1) + 63) / 64;
    bool onPoint = std::any_of(tab.series.begin(), tab.series.end(),
                               [&](const replay::SeriesPoint& p) { return p.limit == end; });
    if (!onPoint) continue;
    INFO("bin " << b);
    CHECK(own.liveBytes[b] == want.liveBytes[b]);
    ++exact;
  }
  CHECK(exact >= 1);
}
