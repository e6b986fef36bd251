// `heapman report` on real recorded runs of samples/gc_game (bdwgc: levels, frames, GCs, RAM dumps
// after each level), the page loaded in Debian's headless Chromium. The page counts its own
// JavaScript errors (window error and unhandledrejection events) into <html data-js-errors> and
// sets data-ready once drawn; --dump-dom gives the DOM after the scripts ran, which is compared
// with the CLI's CSV: the blame table's rows with `heapman blame --csv` at the same point, the
// chart's GC points with `heapman gcs --csv`.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "support/csv.h"
#include "support/shell.h"

using hmtest::parseCsv;

namespace {

namespace fs = std::filesystem;

struct Recorded {
  std::string dir, big, small;  // two runs: 3 levels and 2 levels
  ~Recorded() { hmtest::removeTempDir(dir); }
};

// Runs a shell command; its exit status, and its stdout in `out` (its stderr passed on to ours).
int sh(const std::string& cmd, std::string& out) {
  hmtest::ShellResult r = hmtest::runShell(cmd);
  out = r.out;
  std::fputs(r.err.c_str(), stderr);
  return r.status;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

const Recorded& recorded() {
  static Recorded r;
  if (!r.dir.empty()) return r;
  r.dir = hmtest::makeTempDir("report");
  r.big = r.dir + "/game3.hml";
  r.small = r.dir + "/game2.hml";
  std::string out;
  for (auto [log, levels] : {std::pair{r.big, "3 300"}, std::pair{r.small, "2 200"}}) {
    std::string cmd = q(REPORT_HEAPREC) + " run --ram-dumps event:level_end -o " + q(log) +
                      " -- " + q(REPORT_GC_GAME) + " " + levels + " >/dev/null 2>" +
                      q(r.dir + "/rec.err");
    REQUIRE(sh(cmd, out) == 0);
  }
  return r;
}

// The page's DOM after its scripts ran; SKIPs the test (exit 4, CTest's SKIP_RETURN_CODE) when
// the build found no chromium.
std::string dumpDom(const std::string& page, const std::string& fragment = "") {
  if (std::string(REPORT_CHROMIUM).empty()) {
    std::printf("SKIP: chromium not found (cmake/deps.sh test installs it)\n");
    std::exit(4);
  }
  // A profile of its own per load: parallel tests must not share Chromium's profile lock.
  static int loads = 0;
  std::string profile = fs::path(page).parent_path().string() + "/chromium-" +
                        std::to_string(getpid()) + "-" + std::to_string(++loads);
  std::string out;
  std::string cmd = q(REPORT_CHROMIUM) +
                    " --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 "
                    "--user-data-dir=" + q(profile) + " --dump-dom " +
                    q("file://" + fs::absolute(page).string() + fragment) + " 2>/dev/null";
  REQUIRE(sh(cmd, out) == 0);
  REQUIRE(out.find("<html") != std::string::npos);
  return out;
}

// Text as Chromium's --dump-dom writes it, with its entities decoded.
std::string unescape(const std::string& v) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) {  // the entities Chromium writes in attribute values
    static const std::pair<const char*, char> kEnt[] = {
        {"&amp;", '&'}, {"&quot;", '"'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&#39;", '\''}};
    bool done = false;
    for (auto [ent, c] : kEnt)
      if (v.compare(i, std::strlen(ent), ent) == 0) {
        o += c, i += std::strlen(ent) - 1, done = true;
        break;
      }
    if (!done) o += v[i];
  }
  return o;
}

std::string attr(const std::string& tag, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + name + "=\"([^\"]*)\""))) return "";
  return unescape(m[1]);
}

// The opening tags matching `re` inside the first element that opens with `start`.
std::vector<std::string> tags(const std::string& dom, const std::string& start,
                              const std::string& end, const std::string& re) {
  size_t a = dom.find(start);
  REQUIRE(a != std::string::npos);
  size_t b = dom.find(end, a);
  std::string part = dom.substr(a, b - a);
  std::vector<std::string> out;
  std::regex r(re);
  for (auto it = std::sregex_iterator(part.begin(), part.end(), r); it != std::sregex_iterator();
       ++it)
    out.push_back(it->str());
  return out;
}


void requireClean(const std::string& dom) {
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex("<html[^>]*>")));
  INFO(m.str());
  CHECK(attr(m.str(), "data-js-errors") == "0");
  CHECK(attr(m.str(), "data-ready") == "1");
}


// The page opened at `point` has the blame table `heapman blame --csv` has there.
void checkBlame(const std::string& log, const std::string& page, const std::string& point) {
  INFO(point);
  std::string frag = "#at=" + std::regex_replace(point, std::regex("#"), "%23");
  std::string dom = dumpDom(page, frag);
  requireClean(dom);
  std::vector<std::string> rows =
      tags(dom, "data-table=\"blame\"", "</table>", "<tr class=\"hm-row[^>]*>");
  std::string out;
  REQUIRE(sh(q(REPORT_HEAPMAN) + " blame " + q(log) + " --at '" + point + "' --csv -", out) == 0);
  auto want = parseCsv(out);
  REQUIRE(want.size() > 1);
  REQUIRE(want[0][0] == "function");
  REQUIRE(want[0][3] == "live_bytes");
  std::multiset<std::tuple<std::string, std::string, std::string, std::string, std::string>> a, b;
  for (size_t i = 1; i < want.size(); ++i)
    a.insert({want[i][0], want[i][1], want[i][2], want[i][3], want[i][4]});
  for (const std::string& t : rows)
    b.insert({attr(t, "data-function"), attr(t, "data-module"), attr(t, "data-location"),
              attr(t, "data-bytes"), attr(t, "data-objects")});
  CHECK(rows.size() == want.size() - 1);
  CHECK(a == b);
  // The point shown is the one asked for.
  CHECK(dom.find("data-blame-point=\"" + point + "\"") != std::string::npos);
}

// The page exercised by its own #selftest (hover, drag-zoom and click on each chart, every menu
// changed,
// every table sorted and its first row opened, a flame cell zoomed, the filters typed into,
// the frame sliders moved): no JavaScript error, the hover named a point, `details` rows opened.
void selfTest(const std::string& page, int details, int charts = 1) {
  std::string dom = dumpDom(page, "#selftest=1");
  requireClean(dom);
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex("<html[^>]*>")));
  std::string html = m.str();
  INFO(html);
  CHECK(attr(html, "data-selftest") == "done");
  CHECK(attr(html, "data-selftest-details") == std::to_string(details));
  CHECK(attr(html, "data-selftest-zoomed") == std::to_string(charts));  // each chart zooms
  CHECK(std::regex_match(attr(html, "data-selftest-tips"),
                         std::regex("((gc:|frame:|seq:)[0-9]+|[a-z_]+#[0-9]+)( \\S+)*")));
}


// RFC 4648 base64 to bytes ("" for anything else).
std::string unbase64(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (v < 0 || pad) return "";
    acc = acc << 6 | uint32_t(v), bits += 6;
    if (bits >= 8) out += char((acc >> (bits - 8)) & 0xff), bits -= 8;
  }
  if ((text.size() % 4) != 0) return "";
  return out;
}

uint32_t be32(const std::string& b, size_t at) {
  return uint32_t(uint8_t(b[at])) << 24 | uint32_t(uint8_t(b[at + 1])) << 16 |
         uint32_t(uint8_t(b[at + 2])) << 8 | uint32_t(uint8_t(b[at + 3]));
}

// heapman's --json strings: \" and \\ (the names here have no other escapes).
std::string unjson(const std::string& s) {
  return std::regex_replace(s, std::regex(R"(\\(["\\]))"), "$1");
}

// The leak-suspect and heap-map sections of the first run, against the CLI on the same log:
//  - the suspects table's first row names the holder and container `heapman leaks --csv` puts
//    first, and is open at load: its chain is that suspect's root path, the steps of
//    `heapman leaks --json`'s paths table (node, type, field, size, retained, function);
//  - one heap-map frame per point `heapman leaks` compares (after the GC that follows each
//    level_end), each a PNG of 640 x 640 (signature, IHDR, IEND; as many bytes as the page says),
//    byte for byte the one `heapman map --at POINT --size 640x640` writes;
//  - the slider's frame is where the chart's marker is: the marker sits on the chart's GC point
//    of the frame's point, at load (the first frame) and after the self-test moved the slider to
//    its end (the last); hovering and clicking the chart moved the slider to the frame nearest
//    the pointer.
void checkLeaksAndMaps(const std::string& log, const std::string& page) {
  std::string out;
  REQUIRE(sh(q(REPORT_HEAPMAN) + " leaks " + q(log) + " --csv -", out) == 0);
  auto want = parseCsv(out);
  REQUIRE(want.size() > 1);
  REQUIRE(want[0][1] == "holder");
  REQUIRE(want[0][3] == "container");
  REQUIRE(sh(q(REPORT_HEAPMAN) + " leaks " + q(log) + " --json -", out) == 0);
  // Paths by suspect rank, as the page words a step.
  std::map<std::string, std::vector<std::string>> paths;
  std::regex stepRe(
      R"re(\{"suspect":(\d+),"step":\d+,"node":"((?:[^"\\]|\\.)*)","type":"((?:[^"\\]|\\.)*)","field":(?:null|"?(\d*)"?),"size":(\d+),"retained":(\d+),"function":"((?:[^"\\]|\\.)*)"\})re");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), stepRe); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    std::string text = unjson(m[2]);
    if (m[3].length()) text += " " + unjson(m[3]);
    if (m[4].length()) text += " at field +" + m[4].str();
    text += ": " + m[5].str() + " bytes, retains " + m[6].str() + " bytes";
    if (m[7].length()) text += ", from " + unjson(m[7]);
    paths[m[1]].push_back(text);
  }
  REQUIRE(!paths["1"].empty());
  // The leak points: their GCs.
  std::vector<std::string> gcs;
  std::regex pointRe(R"re(\{"point":"[^"]*","gc":(\d+),"dumped":)re");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), pointRe); it != std::sregex_iterator();
       ++it)
    gcs.push_back("gc:" + (*it)[1].str());
  REQUIRE(gcs.size() >= 3);

  // The frames the builder put into the page.
  std::ifstream in(page);
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::regex frameRe(
      R"re(\{"seq":(\d+),"point":"([^"]*)","label":"[^"]*","liveBytes":\d+,"pngBytes":(\d+),"image":"data:image/png;base64,([A-Za-z0-9+/=]*)"\})re");
  std::vector<std::pair<uint64_t, std::string>> frames;  // (seq, point)
  for (auto it = std::sregex_iterator(html.begin(), html.end(), frameRe);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    frames.push_back({std::stoull(m[1]), m[2]});
    std::string png = unbase64(m[4]);
    INFO(m[2].str());
    REQUIRE(png.size() == std::stoull(m[3]));
    REQUIRE(png.size() > 45);
    CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    CHECK(png.compare(12, 4, "IHDR") == 0);
    CHECK(be32(png, 16) == 640);
    CHECK(be32(png, 20) == 640);
    CHECK(png.compare(png.size() - 8, 4, "IEND") == 0);
    // The picture `heapman map` draws at that point, byte for byte.
    std::string file = fs::path(page).parent_path().string() + "/frame.png";
    REQUIRE(sh(q(REPORT_HEAPMAN) + " map " + q(log) + " --at " + m[2].str() +
                   " --size 640x640 -o " + q(file),
               out) == 0);
    std::ifstream f(file, std::ios::binary);
    std::string cli((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(cli == png);
  }
  REQUIRE(frames.size() == gcs.size());
  for (size_t i = 0; i < frames.size(); ++i) CHECK(frames[i].second == gcs[i]);

  // The marker of the chart at the frame shown.
  auto markerAt = [&](const std::string& dom, size_t frame) {
    INFO(frames[frame].second);
    std::vector<std::string> img = tags(dom, "id=\"maps-0\"", "</section>", "<img [^>]*>");
    REQUIRE(img.size() == 1);
    CHECK(attr(img[0], "data-point") == frames[frame].second);
    std::vector<std::string> marker =
        tags(dom, "<svg", "</svg>", "<line [^>]*class=\"ext-cursor\"[^>]*>");
    REQUIRE(marker.size() == 1);
    CHECK(attr(marker[0], "visibility") == "visible");
    CHECK(attr(marker[0], "data-limit") == std::to_string(frames[frame].first + 1));
    std::vector<std::string> point = tags(
        dom, "<svg", "</svg>",
        "<circle [^>]*class=\"gc-point\" data-point=\"" + frames[frame].second + "\"[^>]*>");
    REQUIRE(point.size() == 1);
    CHECK(attr(point[0], "cx") == attr(marker[0], "x1"));
  };

  std::string dom = dumpDom(page);
  requireClean(dom);
  std::vector<std::string> rows = tags(dom, "data-table=\"leaks-0\"", "</table>",
                                       "<tr class=\"hm-row[^>]*>[\\s\\S]*?</tr>");
  REQUIRE(rows.size() == want.size() - 1);
  std::vector<std::string> cells;
  std::regex td("<td[^>]*>([^<]*)</td>");
  for (auto it = std::sregex_iterator(rows[0].begin(), rows[0].end(), td);
       it != std::sregex_iterator(); ++it)
    cells.push_back(unescape((*it)[1]));
  REQUIRE(cells.size() == 6);  // rank, sentence, holder, container, bytes per step, entry site
  CHECK(cells[0] == "1");
  CHECK(cells[1] == want[1][12]);
  CHECK(cells[2] == want[1][1]);
  CHECK(cells[3] == want[1][3]);
  CHECK(cells[5] == want[1][8]);
  std::vector<std::string> slider =
      tags(dom, "id=\"maps-0\"", "</section>", "<input [^>]*class=\"frame-slider\"[^>]*>");
  REQUIRE(slider.size() == 1);
  CHECK(attr(slider[0], "max") == std::to_string(frames.size() - 1));
  markerAt(dom, 0);

  // The first suspect row is open at load: its chain is its root path.
  std::vector<std::string> open = tags(dom, "data-table=\"leaks-0\"", "</table>",
                                       "<tr class=\"hm-row expandable open\"[^>]*>[\\s\\S]*?</tr>"
                                       "<tr class=\"detail\">[\\s\\S]*?</tr>");
  REQUIRE(open.size() == 1);
  std::smatch m;
  REQUIRE(std::regex_search(open[0], m, td));
  std::string rank = m[1];
  std::vector<std::string> chain;
  std::regex li("<li>([^<]*)</li>");
  for (auto it = std::sregex_iterator(open[0].begin(), open[0].end(), li);
       it != std::sregex_iterator(); ++it)
    chain.push_back(unescape((*it)[1]));
  INFO("suspect " << rank);
  CHECK(rank == "1");
  CHECK(chain == paths[rank]);
  dom = dumpDom(page, "#selftest=1");
  requireClean(dom);
  // The chart's click moved the slider to the frame nearest it; the slider's end, the marker.
  std::vector<std::string> box = tags(dom, "id=\"maps-0\"", "</section>", "<div [^>]*frames-box[^>]*>");
  REQUIRE(box.size() == 1);
  auto nearest = [&](const std::string& limitText) {
    REQUIRE(!limitText.empty());
    uint64_t seq = std::stoull(limitText) - 1;
    auto d = [&](size_t k) {
      return frames[k].first > seq ? frames[k].first - seq : seq - frames[k].first;
    };
    size_t best = 0;
    for (size_t i = 1; i < frames.size(); ++i)
      if (d(i) < d(best)) best = i;
    return std::to_string(best);
  };
  CHECK(attr(box[0], "data-chart-frame") == nearest(attr(box[0], "data-chart-limit")));
  // Hovering the chart moved it too (the self-test hovers the middle of the chart).
  CHECK(attr(box[0], "data-hover-frame") == nearest(attr(box[0], "data-hover-limit")));
  markerAt(dom, frames.size() - 1);
}
}  // namespace

TEST_CASE("report: the page's blame table has the CLI's rows, the chart one point per GC") {
  const Recorded& r = recorded();
  std::string page = r.dir + "/game3.html", out;
  REQUIRE(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " -o " + q(page), out) == 0);
  CHECK(out.find("wrote " + page) != std::string::npos);
  // Self-contained: nothing to fetch.
  std::ifstream in(page);
  std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("href=\"http") == std::string::npos);
  CHECK(!std::regex_search(html, std::regex("<(script|link|img)[^>]+(src|href)=")));

  for (const char* point : {"level_end#2", "level_start#3"}) checkBlame(r.big, page, point);

  // Growth between two points: the function rows of `heapman diff --csv` that changed.
  {
    std::string dom = dumpDom(page, "#from=level_start%232&to=level_end%232");
    requireClean(dom);
    std::vector<std::string> rows =
        tags(dom, "data-table=\"growth\"", "</table>", "<tr class=\"hm-row[^>]*>");
    REQUIRE(sh(q(REPORT_HEAPMAN) + " diff " + q(r.big) +
                   " --from level_start#2 --to level_end#2 --csv -",
               out) == 0);
    auto want = parseCsv(out);
    REQUIRE(want[0][0] == "function");
    REQUIRE(want[0][8] == "delta_bytes");
    std::multiset<std::pair<std::string, std::string>> a, b;
    for (size_t i = 1; i < want.size(); ++i)
      if (want[i][8] != "0" || want[i][7] != "0")
        a.insert({want[i][0], want[i][8][0] == '+' ? want[i][8].substr(1) : want[i][8]});
    for (const std::string& t : rows) b.insert({attr(t, "data-function"), attr(t, "data-delta-bytes")});
    REQUIRE(!a.empty());
    CHECK(a == b);
  }

  // The chart: one point per GC, named as the CLI names it, at the live bytes `gcs` reports.
  std::string dom = dumpDom(page);
  requireClean(dom);
  REQUIRE(sh(q(REPORT_HEAPMAN) + " gcs " + q(r.big) + " --csv -", out) == 0);
  auto gcs = parseCsv(out);
  REQUIRE(gcs.size() > 2);
  REQUIRE(gcs[0][0] == "gc");
  REQUIRE(gcs[0][6] == "live_objects");
  REQUIRE(gcs[0][7] == "live_bytes");
  std::vector<std::string> points =
      tags(dom, "<svg", "</svg>", "<circle [^>]*class=\"gc-point\"[^>]*>");
  REQUIRE(points.size() == gcs.size() - 1);
  for (size_t i = 0; i < points.size(); ++i) {
    CHECK(attr(points[i], "data-point") == "gc:" + gcs[i + 1][0]);
    CHECK(attr(points[i], "data-live-bytes") == gcs[i + 1][7]);
    // The series (sampled by the report's own pass over the births and deaths) agrees there.
    CHECK(attr(points[i], "data-series-bytes") == gcs[i + 1][7]);
    CHECK(attr(points[i], "data-series-objects") == gcs[i + 1][6]);
  }
  // The custom events on the time axis, with their CLI names.
  std::vector<std::string> events =
      tags(dom, "<svg", "</svg>", "<line [^>]*class=\"event-mark\"[^>]*>");
  REQUIRE(events.size() == 6);  // level_start and level_end, 3 levels
  CHECK(attr(events[3], "data-point") == "level_end#2");
  // The flame graph of the live set at the default point (the peak) weighs what blame does there.
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex("data-blame-point=\"([^\"]+)\"")));
  std::string at = m[1];
  REQUIRE(sh(q(REPORT_HEAPMAN) + " blame " + q(r.big) + " --at '" + at + "' --csv -", out) == 0);
  uint64_t total = 0;
  auto blame = parseCsv(out);
  for (size_t i = 1; i < blame.size(); ++i) total += std::stoull(blame[i][3]);
  std::vector<std::string> root =
      tags(dom, "class=\"flame\"", "</section>", "<div class=\"cell\"[^>]*data-name=\"all\"[^>]*>");
  REQUIRE(root.size() == 1);
  CHECK(attr(root[0], "data-bytes") == std::to_string(total));
  // Retained size by type (the log has RAM dumps after each level): the section is drawn.
  CHECK(dom.find("id=\"retained-0\"") != std::string::npos);
  selfTest(page, 4);  // blame, growth, churn, leak suspects
  checkLeaksAndMaps(r.big, page);
}

TEST_CASE("report: --compare draws both runs and their differences") {
  const Recorded& r = recorded();
  std::string page = r.dir + "/compare.html", out;
  REQUIRE(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " --compare " + q(r.small) + " -o " +
                 q(page),
             out) == 0);
  std::string said = out;
  std::string dom = dumpDom(page, "#atA=level_end%232&atB=level_end%232");
  requireClean(dom);
  std::regex svg("<svg [^>]*class=\"timeline\"");
  CHECK(std::distance(std::sregex_iterator(dom.begin(), dom.end(), svg), std::sregex_iterator()) ==
        2);
  CHECK(dom.find("id=\"differences\"") != std::string::npos);
  CHECK(dom.find("id=\"compare-functions\"") != std::string::npos);
  // Each run's chart has its own GCs: the smaller run's from its own `gcs`.
  REQUIRE(sh(q(REPORT_HEAPMAN) + " gcs " + q(r.small) + " --csv -", out) == 0);
  size_t second = dom.find("data-run=\"1\"");
  REQUIRE(second != std::string::npos);
  std::vector<std::string> points = tags(dom.substr(second), "data-run=\"1\"", "</svg>",
                                         "<circle [^>]*class=\"gc-point\"[^>]*>");
  CHECK(points.size() == parseCsv(out).size() - 1);
  // The second run repeats level_end twice: too few for `heapman leaks`, which the report says.
  CHECK(said.find("leak suspects (B) left out: no custom event repeats 3 times") !=
        std::string::npos);
  CHECK(dom.find("id=\"leaks-0\"") != std::string::npos);
  CHECK(dom.find("id=\"leaks-1\"") == std::string::npos);
  CHECK(dom.find("id=\"maps-1\"") != std::string::npos);
  selfTest(page, 7, 2);  // blame, growth, churn of each run, A's leak suspects
}

TEST_CASE("report: without RAM dumps the leak section lists the sites that grew") {
  const Recorded& r = recorded();
  std::string log = r.dir + "/nodumps.hml", page = r.dir + "/nodumps.html", out;
  REQUIRE(sh(q(REPORT_HEAPREC) + " run -o " + q(log) + " -- " + q(REPORT_GC_GAME) +
                 " 3 300 >/dev/null 2>" + q(r.dir + "/rec.err"),
             out) == 0);
  REQUIRE(sh(q(REPORT_HEAPMAN) + " report " + q(log) + " -o " + q(page), out) == 0);
  REQUIRE(sh(q(REPORT_HEAPMAN) + " leaks " + q(log) + " --json -", out) == 0);
  std::vector<std::string> sites;
  std::regex siteRe(R"re(\{"function":"((?:[^"\\]|\\.)*)","module":"[^"]*","bytes_per_step")re");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), siteRe); it != std::sregex_iterator();
       ++it)
    sites.push_back(unjson((*it)[1]));
  REQUIRE(!sites.empty());
  std::string dom = dumpDom(page);
  requireClean(dom);
  std::vector<std::string> rows = tags(dom, "data-table=\"leaks-0\"", "</table>",
                                       "<tr class=\"hm-row\"[^>]*><td[^>]*>[^<]*</td>");
  REQUIRE(rows.size() == sites.size());
  std::smatch m;
  REQUIRE(std::regex_search(rows[0], m, std::regex("<td[^>]*>([^<]*)</td>")));
  CHECK(unescape(m[1]) == sites[0]);
  CHECK(dom.find("0 of the 3 points have a RAM dump") != std::string::npos);
  // The heap maps need no dumps: one per level_end still.
  CHECK(tags(dom, "id=\"maps-0\"", "</section>", "<input [^>]*max=\"2\"[^>]*class=\"frame-slider\"")
            .size() == 1);
}

TEST_CASE("report: bad usage is refused with exit code 2") {
  const Recorded& r = recorded();
  std::string out;
  CHECK(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " 2>&1", out) == 2);
  CHECK(out.find("-o FILE is required") != std::string::npos);
  CHECK(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " --at gc:999 -o " +
               q(r.dir + "/x.html") + " 2>&1",
           out) == 2);
  CHECK(out.find("unknown GC 999") != std::string::npos);
  CHECK(!fs::exists(r.dir + "/x.html"));
  // The page is never written over a log.
  auto size = fs::file_size(r.small);
  CHECK(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " --compare " + q(r.small) + " -o " +
               q(r.small) + " 2>&1",
           out) == 2);
  CHECK(out.find("is the log") != std::string::npos);
  CHECK(fs::file_size(r.small) == size);
  // A page that cannot be written: exit 1, saying so.
  CHECK(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " -o " + q(r.dir + "/no/such/dir.html") +
               " 2>&1",
           out) == 1);
  CHECK(out.find("writing") != std::string::npos);
}

TEST_CASE("report: sections passed as files are drawn by their kind's renderer") {
  const Recorded& r = recorded();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(r.dir + "/" + name) << text;
    return r.dir + "/" + name;
  };
  // A table whose rows expand to paths (leak suspects' shape), a title with "</script>" in it.
  std::string table = write(
      "paths.json",
      R"({"id":"suspects","title":"Suspects </script> here","kind":"table","run":0,"data":{)"
      R"("columns":[{"name":"object"},{"name":"retained","numeric":true,"bytes":true}],)"
      R"("rows":[["0x10",100],["0x20",300],["0x30",200]],"sort":1,)"
      R"("details":[["root","0x10"],["root","0x20"],["root","0x30"]]}})");
  // Frames synced with the chart (heap maps' shape): two 1x1 PNGs.
  std::string png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
                    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  std::string frames = write(
      "frames.json", R"({"id":"maps","title":"Heap map","kind":"frames","run":0,"data":{"frames":[)"
                     R"({"seq":10,"point":"seq:10","image":")" + png + R"("},)"
                     R"({"seq":900,"point":"seq:900","image":")" + png + R"("}]}})");
  std::string bad = write("bad.json", "{\"kind\": ");
  std::string page = r.dir + "/sections.html", out;
  REQUIRE(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " --section " + q(table) +
                 " --section " + q(frames) + " --section " + q(bad) + " -o " + q(page),
             out) == 0);
  std::string dom = dumpDom(page);
  requireClean(dom);  // the malformed section is reported in the page, not an error
  CHECK(dom.find("Suspects &lt;/script&gt; here") != std::string::npos);
  std::vector<std::string> rows =
      tags(dom, "data-table=\"suspects\"", "</table>", "<tr class=\"hm-row[^>]*>");
  CHECK(rows.size() == 3);
  // Sorted by the column the section asked for, descending: 300, 200, 100.
  size_t a = dom.find(">0x20<"), b = dom.find(">0x30<"), c = dom.find(">0x10<");
  CHECK((a < b && b < c));
  std::vector<std::string> slider =
      tags(dom, "id=\"maps\"", "</section>", "<input [^>]*class=\"frame-slider\"[^>]*>");
  REQUIRE(slider.size() == 1);
  CHECK(attr(slider[0], "max") == "1");
  CHECK(tags(dom, "id=\"maps\"", "</section>", "<img [^>]*src=\"data:image/png").size() == 1);
  CHECK(dom.find("bad.json") != std::string::npos);
  CHECK(dom.find("this section could not be read") != std::string::npos);
  selfTest(page, 5);  // blame, growth, churn, the suspects' paths, leak suspects
  CHECK(sh(q(REPORT_HEAPMAN) + " report " + q(r.big) + " --section " +
               q(r.dir + "/missing.json") + " -o " + q(r.dir + "/y.html") + " 2>&1",
           out) == 2);
  CHECK(out.find("cannot read it") != std::string::npos);
}

#ifdef REPORT_MONO_GAME
TEST_CASE("report: the C# sample on mono-boehm, managed frames and generic class names") {
  const Recorded& r = recorded();
  std::string log = r.dir + "/mono.hml", page = r.dir + "/mono.html", out;
  REQUIRE(sh(q(REPORT_HEAPREC) + " run --ram-dumps event:level_end -o " + q(log) + " -- " +
                 q(REPORT_MONO_BOEHM) + " " + q(REPORT_MONO_GAME) + " 4 300 >/dev/null 2>" +
                 q(r.dir + "/mono.err"),
             out) == 0);
  REQUIRE(sh(q(REPORT_HEAPMAN) + " report " + q(log) + " -o " + q(page), out) == 0);
  checkBlame(log, page, "level_end#3");
  std::string dom = dumpDom(page);
  CHECK(dom.find("[managed]") != std::string::npos);
  CHECK(dom.find("id=\"retained-0\"") != std::string::npos);
  selfTest(page, 4);
  checkLeaksAndMaps(log, page);
}
#endif
