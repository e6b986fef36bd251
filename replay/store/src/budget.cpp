// Budget files (TOML through toml++, JSON through nlohmann/json), their rules checked against a
// run's summary, and JUnit XML.
#include "heapman/store/budget.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "heapman/replay/frames.h"
#include "heapman/replay/replay.h"

namespace heapman::store {

// ---- units --------------------------------------------------------------------------------------

namespace {

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "12.5 MiB" -> (12.5, "MiB").
bool splitNumber(const std::string& text, double* value, std::string* unit) {
  std::string t = trimmed(text);
  char* end = nullptr;
  *value = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !std::isfinite(*value) || *value < 0) return false;
  *unit = trimmed(std::string(end));
  return true;
}

std::string fixed(double v, int decimals) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

}  // namespace

uint64_t parseBytes(const std::string& text) {
  double v;
  std::string unit;
  if (!splitNumber(text, &v, &unit))
    throw std::invalid_argument("'" + text + "' is not a size (300 MiB, 64 KiB, 1000)");
  static const std::map<std::string, double> units{
      {"", 1},        {"B", 1},       {"KiB", 1024.0},  {"MiB", 1048576.0},
      {"GiB", 1073741824.0},  {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
  auto u = units.find(unit);
  if (u == units.end())
    throw std::invalid_argument("'" + text + "': unknown unit '" + unit +
                                "' (B, KiB, MiB, GiB, kB, MB, GB)");
  return static_cast<uint64_t>(std::llround(v * u->second));
}

uint64_t parseNanos(const std::string& text) {
  double v;
  std::string unit;
  if (!splitNumber(text, &v, &unit) || unit.empty())
    throw std::invalid_argument("'" + text + "' is not a time with its unit (5 ms, 200 us, 1 s)");
  static const std::map<std::string, double> units{
      {"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  auto u = units.find(unit);
  if (u == units.end())
    throw std::invalid_argument("'" + text + "': unknown unit '" + unit + "' (ns, us, ms, s)");
  return static_cast<uint64_t>(std::llround(v * u->second));
}

std::string bytesText(uint64_t b) {
  if (b < 1024) return std::to_string(b) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  return fixed(v, 1) + " " + units[u];
}

std::string nanosText(uint64_t ns) {
  if (ns < 1000) return std::to_string(ns) + " ns";
  if (ns < 1'000'000) return fixed(static_cast<double>(ns) / 1e3, 1) + " us";
  if (ns < 1'000'000'000) return fixed(static_cast<double>(ns) / 1e6, 2) + " ms";
  return fixed(static_cast<double>(ns) / 1e9, 2) + " s";
}

// ---- reading ------------------------------------------------------------------------------------

namespace {

// A value of the file, whichever syntax it came in.
struct Value {
  enum class Kind { kString, kInteger, kFloat, kBool, kOther } kind = Kind::kOther;
  std::string text;
  double number = 0;
  int line = 0;
  int column = 0;  // JSON: where its key starts (a JSON file may be one line); TOML: 0
};
using Section = std::map<std::string, Value>;  // one table of a section

struct Reader {
  std::string name;
  // "budget.toml:7: ", "budget.json:7:12: " or, where the place is not known, "budget.json:
  // live[0].max: ".
  std::string at(const Value& v, const std::string& path) const {
    if (!v.line) return name + ": " + path + ": ";
    return name + ":" + std::to_string(v.line) +
           (v.column ? ":" + std::to_string(v.column) : std::string()) + ": ";
  }
};

const std::map<std::string, std::set<std::string>> kKeys{
    {"live", {"point", "heap", "max", "max_growth"}},
    {"peak", {"heap", "max", "max_growth"}},
    {"gc_pause", {"p99", "max"}},
    {"garbage", {"per_frame", "max_growth"}},
    {"leaks", {"suspects", "growing_sites", "new_suspects", "new_growing_sites"}},
    {"growth", {"site", "type", "from", "to", "max"}}};

std::string known(const std::set<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

Value fromToml(const toml::node& n) {
  Value v;
  v.line = static_cast<int>(n.source().begin.line);
  if (auto s = n.as_string()) {
    v.kind = Value::Kind::kString, v.text = s->get();
  } else if (auto i = n.as_integer()) {
    v.kind = Value::Kind::kInteger, v.number = static_cast<double>(i->get());
    v.text = std::to_string(i->get());
  } else if (auto f = n.as_floating_point()) {
    v.kind = Value::Kind::kFloat, v.number = f->get(), v.text = std::to_string(f->get());
  } else if (auto b = n.as_boolean()) {
    v.kind = Value::Kind::kBool, v.text = b->get() ? "true" : "false";
  }
  return v;
}

Value fromJson(const nlohmann::ordered_json& j) {
  Value v;
  if (j.is_string()) {
    v.kind = Value::Kind::kString, v.text = j.get<std::string>();
  } else if (j.is_number_integer() || j.is_number_unsigned()) {
    v.kind = Value::Kind::kInteger, v.number = j.get<double>(), v.text = j.dump();
  } else if (j.is_number_float()) {
    v.kind = Value::Kind::kFloat, v.number = j.get<double>(), v.text = j.dump();
  } else if (j.is_boolean()) {
    v.kind = Value::Kind::kBool, v.text = j.dump();
  }
  return v;
}

struct Parsed {
  std::string section, path;  // path: "live[0]" for messages
  int line = 0;
  Section keys;
};

std::vector<Parsed> readToml(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw BudgetError(name + ":" + std::to_string(e.source().begin.line) + ":" +
                      std::to_string(e.source().begin.column) + ": " +
                      std::string(e.description()) + " (the budget is TOML)");
  }
  std::vector<Parsed> out;
  for (auto&& [k, node] : root) {
    std::string section(k.str());
    int line = static_cast<int>(node.source().begin.line);
    if (!kKeys.count(section))
      throw BudgetError(name + ":" + std::to_string(line) + ": unknown section '" + section +
                        "' (known: " + known([] {
                          std::set<std::string> s;
                          for (const auto& [n, _] : kKeys) s.insert(n);
                          return s;
                        }()) + ")");
    auto addTable = [&](const toml::table& t, const std::string& path) {
      Parsed p{section, path, static_cast<int>(t.source().begin.line), {}};
      for (auto&& [key, value] : t) p.keys[std::string(key.str())] = fromToml(value);
      // The line of each key, for the unknown-key message.
      for (auto&& [key, value] : t) p.keys[std::string(key.str())].line =
          static_cast<int>(key.source().begin.line ? key.source().begin.line
                                                   : value.source().begin.line);
      out.push_back(std::move(p));
    };
    if (auto t = node.as_table()) {
      addTable(*t, section);
    } else if (auto a = node.as_array()) {
      size_t i = 0;
      for (auto&& el : *a) {
        if (!el.as_table())
          throw BudgetError(name + ":" + std::to_string(el.source().begin.line) + ": [[" +
                            section + "]] holds tables of keys, not values");
        addTable(*el.as_table(), section + "[" + std::to_string(i++) + "]");
      }
    } else {
      throw BudgetError(name + ":" + std::to_string(line) + ": '" + section +
                        "' is a section: write [" + section + "] and its keys under it");
    }
  }
  return out;
}

// Line and column (1-based, in characters) of a byte of the text.
std::pair<int, int> placeOf(const std::string& text, size_t byte) {
  int line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, column = 1;
    else if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++column;  // UTF-8 starts
  }
  return {line, column};
}

// Where each key of a JSON text starts, by its path as readJson names it ("peak", "peak.max",
// "live[0]", "live[0].point"). nlohmann/json keeps no positions; the text has parsed, so a walk
// over its strings and brackets is enough. A key with escapes is named as written.
std::map<std::string, std::pair<int, int>> jsonKeyPlaces(const std::string& t) {
  struct Frame {
    bool object;
    std::string path, key;
    size_t index = 0;
    bool expectKey;
  };
  std::vector<Frame> st;
  std::map<std::string, std::pair<int, int>> out;
  auto child = [](const Frame& f) {
    if (f.object) return f.path.empty() ? f.key : f.path + "." + f.key;
    return f.path + "[" + std::to_string(f.index) + "]";
  };
  int line = 1, column = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) ++column;
    if (c == '\n') {
      ++line, column = 0;
    } else if (c == '"') {
      int keyLine = line, keyColumn = column;
      std::string s;
      for (++i; i < t.size() && t[i] != '"'; ++i) {
        if ((static_cast<unsigned char>(t[i]) & 0xc0) != 0x80) ++column;
        if (t[i] == '\\' && i + 1 < t.size()) s += t[i++], ++column;
        s += t[i];
      }
      ++column;  // the closing quote
      if (!st.empty() && st.back().object && st.back().expectKey) {
        st.back().key = s, st.back().expectKey = false;
        out[child(st.back())] = {keyLine, keyColumn};
      }
    } else if (c == '{' || c == '[') {
      std::string path = st.empty() ? "" : child(st.back());
      st.push_back({c == '{', path, "", 0, c == '{'});
    } else if ((c == '}' || c == ']') && !st.empty()) {
      st.pop_back();
    } else if (c == ',' && !st.empty()) {
      if (st.back().object) st.back().expectKey = true;
      else ++st.back().index;
    }
  }
  return out;
}

std::vector<Parsed> readJson(const std::string& text, const std::string& name) {
  nlohmann::ordered_json root;  // the rules in the file's order
  try {
    root = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    // e.byte: 1-based, the last byte read (where the error showed).
    auto [line, column] = placeOf(text, e.byte ? e.byte - 1 : 0);
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at line 2,
                                  // column 5: syntax error while parsing ..."
    size_t colon = what.find(": ", what.find("parse error"));
    throw BudgetError(name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                      (colon == std::string::npos ? what : what.substr(colon + 2)) +
                      " (the budget is JSON)");
  }
  if (!root.is_object()) throw BudgetError(name + ": the budget is a JSON object of sections");
  std::map<std::string, std::pair<int, int>> places = jsonKeyPlaces(text);
  auto at = [&](const std::string& path) {
    auto it = places.find(path);
    if (it == places.end()) return name + ": " + path + ": ";
    return name + ":" + std::to_string(it->second.first) + ":" +
           std::to_string(it->second.second) + ": ";
  };
  std::vector<Parsed> out;
  for (auto& [section, node] : root.items()) {
    if (!kKeys.count(section)) {
      std::set<std::string> s;
      for (const auto& [n, _] : kKeys) s.insert(n);
      throw BudgetError(at(section) + "unknown section '" + section + "' (known: " + known(s) +
                        ")");
    }
    auto addObject = [&](const nlohmann::ordered_json& o, const std::string& path) {
      if (!o.is_object()) throw BudgetError(at(section) + path + ": a section holds objects of keys");
      Parsed p{section, path, 0, {}};
      for (auto& [k, v] : o.items()) {
        Value& x = p.keys[k] = fromJson(v);
        auto it = places.find(path + "." + k);
        if (it != places.end()) x.line = it->second.first, x.column = it->second.second;
      }
      out.push_back(std::move(p));
    };
    if (node.is_array()) {
      for (size_t i = 0; i < node.size(); ++i)
        addObject(node[i], section + "[" + std::to_string(i) + "]");
    } else {
      addObject(node, section);
    }
  }
  return out;
}

Rule toRule(const Parsed& p, const Reader& rd) {
  Rule r;
  r.section = p.section;
  r.line = p.line;
  const std::set<std::string>& allowed = kKeys.at(p.section);
  std::vector<std::string> unknown;
  const Value* firstUnknown = nullptr;
  for (const auto& [k, v] : p.keys)
    if (!allowed.count(k)) {
      unknown.push_back(k);
      if (!firstUnknown || (v.line && (v.line < firstUnknown->line ||
                                       (v.line == firstUnknown->line &&
                                        v.column < firstUnknown->column))))
        firstUnknown = &v;
    }
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& k : unknown) names += (names.empty() ? "'" : ", '") + k + "'";
    throw BudgetError(rd.at(*firstUnknown, p.path) + "unknown key" +
                      (unknown.size() > 1 ? "s " : " ") + names + " in [" + p.section +
                      "] (known: " + known(allowed) + ")");
  }
  auto str = [&](const char* key, std::string& out) {
    auto it = p.keys.find(key);
    if (it == p.keys.end()) return;
    if (it->second.kind != Value::Kind::kString)
      throw BudgetError(rd.at(it->second, p.path + "." + key) + key + " is text (\"...\")");
    out = it->second.text;
  };
  auto size = [&](const char* key, std::optional<uint64_t>& out, bool time) {
    auto it = p.keys.find(key);
    if (it == p.keys.end()) return;
    const Value& v = it->second;
    try {
      if (v.kind == Value::Kind::kString)
        out = time ? parseNanos(v.text) : parseBytes(v.text);
      else if ((v.kind == Value::Kind::kInteger || v.kind == Value::Kind::kFloat) && !time &&
               v.number >= 0)
        out = static_cast<uint64_t>(std::llround(v.number));
      else
        throw std::invalid_argument(time ? "a time is text with its unit (\"5 ms\")"
                                         : "a size is a number of bytes or text (\"300 MiB\")");
    } catch (const std::invalid_argument& e) {
      throw BudgetError(rd.at(v, p.path + "." + key) + key + ": " + e.what());
    }
  };
  auto count = [&](const char* key, std::optional<uint64_t>& out) {
    auto it = p.keys.find(key);
    if (it == p.keys.end()) return;
    const Value& v = it->second;
    if (v.kind != Value::Kind::kInteger || v.number < 0)
      throw BudgetError(rd.at(v, p.path + "." + key) + key + " is a count (0, 1, ...)");
    out = static_cast<uint64_t>(v.number);
  };
  str("point", r.point);
  str("heap", r.heap);
  str("site", r.site);
  str("type", r.type);
  str("from", r.from);
  str("to", r.to);
  bool time = p.section == "gc_pause";
  size("max", r.max, time);
  size("p99", r.p99, true);
  size("per_frame", r.perFrame, false);
  count("suspects", r.suspects);
  count("growing_sites", r.growingSites);
  count("new_suspects", r.newSuspects);
  count("new_growing_sites", r.newGrowingSites);
  if (auto it = p.keys.find("max_growth"); it != p.keys.end()) {
    const Value& v = it->second;
    std::string t = trimmed(v.text);
    try {
      if (v.kind != Value::Kind::kString) throw std::invalid_argument("");
      if (!t.empty() && t.back() == '%') {
        double pct;
        std::string rest;
        if (!splitNumber(t.substr(0, t.size() - 1), &pct, &rest) || !rest.empty())
          throw std::invalid_argument("");
        r.growthPercent = pct;
      } else if (!t.empty() && t[0] == '+') {
        r.growthBytes = parseBytes(t.substr(1));
      } else {
        throw std::invalid_argument("");
      }
    } catch (const std::invalid_argument&) {
      throw BudgetError(rd.at(v, p.path + ".max_growth") +
                        "max_growth is \"10%\" (of the baseline) or \"+2 MiB\" (over it), not " +
                        (v.text.empty() ? std::string("that") : "'" + v.text + "'"));
    }
  }
  auto need = [&](bool ok, const std::string& what) {
    if (!ok)
      throw BudgetError((r.line ? rd.name + ":" + std::to_string(r.line) + ": "
                                : rd.name + ": " + p.path + ": ") +
                        "[" + p.section + "] " + what);
  };
  if (p.section == "live") {
    need(!r.point.empty(), "needs point = \"EVENT#K\" (or \"EVENT#*\": every occurrence)");
    need(r.max || r.needsBaseline(), "needs max or max_growth");
  } else if (p.section == "peak" || p.section == "garbage") {
    need(r.max || r.perFrame || r.needsBaseline(),
         p.section == "peak" ? "needs max or max_growth" : "needs per_frame or max_growth");
  } else if (p.section == "gc_pause") {
    need(r.max || r.p99, "needs p99 or max");
  } else if (p.section == "leaks") {
    need(r.suspects || r.growingSites || r.newSuspects || r.newGrowingSites,
         "needs suspects, growing_sites, new_suspects or new_growing_sites");
  } else if (p.section == "growth") {
    need(r.site.empty() != r.type.empty(), "needs site = \"REGEX\" or type = \"REGEX\" (one)");
    need(!r.from.empty() && !r.to.empty() && r.max.has_value(), "needs from, to and max");
  }
  // Regexes and points checked now, so a typo is a budget error, not a failed check.
  try {
    if (!r.site.empty()) replay::compileRegex(r.site, rd.name, "function");
    if (!r.type.empty()) replay::compileRegex(r.type, rd.name, "type");
    for (const std::string* pt : {&r.point, &r.from, &r.to})
      if (!pt->empty() && *pt != "peak" && pt->find("#*") == std::string::npos)
        replay::parsePoint(*pt);
  } catch (const replay::ReplayError& e) {
    throw BudgetError((r.line ? rd.name + ":" + std::to_string(r.line) + ": " : rd.name + ": ") +
                      e.what());
  }
  return r;
}

}  // namespace

bool Budget::needsBaseline() const {
  return std::any_of(rules.begin(), rules.end(), [](const Rule& r) { return r.needsBaseline(); });
}

std::vector<std::string> Budget::blamePoints() const {
  std::vector<std::string> out;
  for (const Rule& r : rules)
    if (r.section == "growth")
      for (const std::string& p : {r.from, r.to})
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

Budget parseBudget(const std::string& text, const std::string& name, bool json) {
  Reader rd{name};
  Budget b;
  b.file = name;
  std::vector<Parsed> parsed = json ? readJson(text, name) : readToml(text, name);
  // toml++ keeps a table's keys sorted: the rules in the order of the file's lines.
  if (!json)
    std::stable_sort(parsed.begin(), parsed.end(),
                     [](const Parsed& x, const Parsed& y) { return x.line < y.line; });
  for (const Parsed& p : parsed) b.rules.push_back(toRule(p, rd));
  return b;
}

Budget readBudget(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BudgetError("cannot read the budget " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return parseBudget(ss.str(), path, json);
}

// ---- checking -----------------------------------------------------------------------------------

namespace {

std::string heapText(const std::string& heap) {
  return heap == "all" || heap.empty() ? "all heaps" : heap + " heap";
}

// The limit a relative rule sets from the baseline's figure.
uint64_t growthLimit(const Rule& r, uint64_t base) {
  if (r.growthPercent)
    return static_cast<uint64_t>(std::floor(static_cast<double>(base) * (1 + *r.growthPercent / 100)));
  return base + *r.growthBytes;
}
std::string growthText(const Rule& r, uint64_t base) {
  return r.growthPercent ? "<= " + fixed(*r.growthPercent, r.growthPercent == std::floor(*r.growthPercent) ? 0 : 1) +
                               "% over the baseline's " + bytesText(base)
                         : "<= " + bytesText(*r.growthBytes) + " over the baseline's " +
                               bytesText(base);
}

void limitCheck(std::vector<Check>& out, const std::string& rule, uint64_t value,
                const std::string& figure, uint64_t limit, const std::string& limitText) {
  out.push_back({rule, figure, limitText, value <= limit, "", value});
}

// A figure against the baseline's: "1.3 MiB (+1.5%)".
std::string relative(uint64_t v, uint64_t base) {
  double pct = base ? (static_cast<double>(v) / static_cast<double>(base) - 1) * 100 : 0;
  return bytesText(v) + " (" + (v >= base ? "+" : "-") +
         (base ? fixed(std::fabs(pct), 1) + "%" : bytesText(v)) + ", " +
         (v >= base ? "+" : "-") + std::to_string(v >= base ? v - base : base - v) + " B)";
}

void missing(std::vector<Check>& out, const std::string& rule, const std::string& why) {
  out.push_back({rule, "-", "-", false, why, 0});
}

// The points a rule's point names: "level_end#*" every occurrence, else itself.
std::vector<std::string> expand(const std::string& pattern, const RunSummary& s) {
  std::vector<std::string> out;
  if (pattern.size() > 2 && pattern.compare(pattern.size() - 2, 2, "#*") == 0) {
    std::string prefix = pattern.substr(0, pattern.size() - 1);
    for (const std::string& p : s.eventPoints())
      if (p.compare(0, prefix.size(), prefix) == 0) out.push_back(p);
  } else {
    out.push_back(pattern);
  }
  return out;
}

uint64_t peakOf(const RunSummary& s, const std::string& heap) {
  if (heap == "all" || heap.empty()) return s.run.peakBytes;
  uint64_t v = 0;
  s.liveAt("peak", heap, &v);
  return v;
}

uint64_t siteBytes(const RunSummary& s, const Rule& r, const std::string& point, bool* found) {
  bool site = !r.site.empty();
  replay::Regex re = replay::compileRegex(site ? r.site : r.type, "", site ? "function" : "type");
  uint64_t sum = 0;
  *found = s.liveAt(point, "all", nullptr);
  if (site) {
    for (const SiteRow& x : s.sites)
      if (x.point == point && re.search(x.function)) sum += x.bytes;
  } else {
    for (const TypeRow& x : s.types)
      if (x.point == point && re.search(x.type)) sum += x.bytes;
  }
  return sum;
}

size_t countKind(const RunSummary& s, const std::string& kind) {
  return static_cast<size_t>(std::count_if(s.leaks.begin(), s.leaks.end(),
                                           [&](const LeakRow& l) { return l.kind == kind; }));
}

std::vector<std::string> newOnes(const RunSummary& s, const RunSummary& base,
                                 const std::string& kind) {
  std::set<std::string> before;
  for (const LeakRow& l : base.leaks)
    if (l.kind == kind) before.insert(l.name);
  std::vector<std::string> out;
  for (const LeakRow& l : s.leaks)
    if (l.kind == kind && !before.count(l.name)) out.push_back(l.name);
  return out;
}

}  // namespace

std::vector<Check> checkBudget(const Budget& b, const RunSummary& s, const RunSummary* base) {
  std::vector<Check> out;
  const std::string noBase = "this rule is relative to a baseline: give --baseline or --baseline-run";
  for (const Rule& r : b.rules) {
    if (r.section == "live") {
      std::vector<std::string> points = expand(r.point, s);
      if (points.empty()) missing(out, "live " + r.point, "the run has no point " + r.point);
      for (const std::string& p : points) {
        std::string name = "live " + p + " (" + heapText(r.heap) + ")";
        uint64_t v = 0;
        if (!s.liveAt(p, r.heap, &v)) {
          missing(out, name, "the run has no point " + p);
          continue;
        }
        if (r.max) limitCheck(out, name, v, bytesText(v), *r.max, "<= " + bytesText(*r.max));
        if (r.growthPercent || r.growthBytes) {
          uint64_t bv = 0;
          if (!base) missing(out, name + " growth", noBase);
          else if (!base->liveAt(p, r.heap, &bv))
            missing(out, name + " growth", "the baseline has no point " + p);
          else
            limitCheck(out, name + " growth", v, relative(v, bv), growthLimit(r, bv),
                       growthText(r, bv));
        }
      }
    } else if (r.section == "peak") {
      std::string name = "peak (" + heapText(r.heap) + ")";
      uint64_t v = peakOf(s, r.heap);
      if (r.max) limitCheck(out, name, v, bytesText(v), *r.max, "<= " + bytesText(*r.max));
      if (r.growthPercent || r.growthBytes) {
        if (!base) {
          missing(out, name + " growth", noBase);
        } else {
          uint64_t bv = peakOf(*base, r.heap);
          limitCheck(out, name + " growth", v, relative(v, bv), growthLimit(r, bv),
                     growthText(r, bv));
        }
      }
    } else if (r.section == "gc_pause") {
      std::vector<uint64_t> pauses;
      for (const GcRow& g : s.gcs) pauses.push_back(g.pauseNs);
      uint64_t mx = pauses.empty() ? 0 : *std::max_element(pauses.begin(), pauses.end());
      uint64_t p99 = pauseP99(pauses);
      std::string of = " of " + std::to_string(pauses.size()) + " GCs";
      if (r.p99)
        limitCheck(out, "gc pause p99", p99, nanosText(p99) + of, *r.p99,
                   "<= " + nanosText(*r.p99));
      if (r.max)
        limitCheck(out, "gc pause max", mx, nanosText(mx) + of, *r.max, "<= " + nanosText(*r.max));
    } else if (r.section == "garbage") {
      auto perFrame = [](const RunSummary& x) {
        return x.run.frames ? x.run.garbageBytes / x.run.frames : 0;
      };
      if (s.run.frames == 0) {
        missing(out, "garbage per frame", "the run has no frame marks (heapman_frame)");
        continue;
      }
      uint64_t v = perFrame(s);
      std::string fig = bytesText(v) + " (" + bytesText(s.run.garbageBytes) + " over " +
                        std::to_string(s.run.frames) + " frames)";
      if (r.perFrame)
        limitCheck(out, "garbage per frame", v, fig, *r.perFrame, "<= " + bytesText(*r.perFrame));
      if (r.growthPercent || r.growthBytes) {
        if (!base) missing(out, "garbage per frame growth", noBase);
        else
          limitCheck(out, "garbage per frame growth", v, relative(v, perFrame(*base)),
                     growthLimit(r, perFrame(*base)),
                     growthText(r, perFrame(*base)));
      }
    } else if (r.section == "leaks") {
      auto countRule = [&](const char* what, const char* kind, const std::optional<uint64_t>& lim) {
        if (!lim) return;
        size_t n = countKind(s, kind);
        Check c{std::string("leak ") + what, std::to_string(n), "<= " + std::to_string(*lim),
                n <= *lim, "", n};
        if (!c.pass)
          for (const LeakRow& l : s.leaks)
            if (l.kind == kind) c.message += (c.message.empty() ? "" : "\n") + l.sentence;
        out.push_back(std::move(c));
      };
      countRule("suspects", "suspect", r.suspects);
      countRule("growing sites", "site", r.growingSites);
      auto newRule = [&](const char* what, const char* kind, const std::optional<uint64_t>& lim) {
        if (!lim) return;
        if (!base) {
          missing(out, std::string("new leak ") + what, noBase);
          return;
        }
        std::vector<std::string> fresh = newOnes(s, *base, kind);
        Check c{std::string("new leak ") + what, std::to_string(fresh.size()),
                "<= " + std::to_string(*lim) + " not in the baseline", fresh.size() <= *lim, "",
                fresh.size()};
        for (const std::string& f : fresh) c.message += (c.message.empty() ? "new: " : ", ") + f;
        out.push_back(std::move(c));
      };
      newRule("suspects", "suspect", r.newSuspects);
      newRule("growing sites", "site", r.newGrowingSites);
    } else if (r.section == "growth") {
      std::string name = "growth of " + (r.site.empty() ? "type " + r.type : "site " + r.site) +
                         " " + r.from + " -> " + r.to;
      bool hasFrom = false, hasTo = false;
      uint64_t a = siteBytes(s, r, r.from, &hasFrom), z = siteBytes(s, r, r.to, &hasTo);
      if (!hasFrom || !hasTo) {
        missing(out, name, "the run has no point " + (hasFrom ? r.to : r.from));
        continue;
      }
      uint64_t grew = z > a ? z - a : 0;
      limitCheck(out, name, grew,
                 bytesText(grew) + " (" + bytesText(a) + " -> " + bytesText(z) + ")", *r.max,
                 "<= " + bytesText(*r.max));
    }
  }
  return out;
}

// ---- JUnit --------------------------------------------------------------------------------------

namespace {

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (c < 0x20) out += ' ';  // not allowed in XML 1.0
        else out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string junitXml(const std::vector<Check>& checks, const std::string& suite,
                     const std::string& runName, double seconds) {
  size_t failures = static_cast<size_t>(
      std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.pass; }));
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::string counts = " tests=\"" + std::to_string(checks.size()) + "\" failures=\"" +
                       std::to_string(failures) + "\" errors=\"0\" skipped=\"0\" time=\"" +
                       fixed(seconds, 3) + "\"";
  x += "<testsuites name=\"" + xmlEscape(suite) + "\"" + counts + ">\n";
  x += "  <testsuite name=\"" + xmlEscape(suite + ": " + runName) + "\"" + counts + ">\n";
  for (const Check& c : checks) {
    x += "    <testcase classname=\"" + xmlEscape(suite) + "\" name=\"" + xmlEscape(c.rule) +
         "\" time=\"0\"";
    std::string out = c.figure + " (" + c.limit + ")";
    if (c.pass) {
      x += ">\n      <system-out>" + xmlEscape(out) + "</system-out>\n    </testcase>\n";
    } else {
      std::string why = c.message.empty() ? c.figure + ", over the limit " + c.limit : c.message;
      x += ">\n      <failure message=\"" + xmlEscape(why) + "\" type=\"budget\">" +
           xmlEscape(c.rule + ": " + out + (c.message.empty() ? "" : "\n" + c.message)) +
           "</failure>\n    </testcase>\n";
    }
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace heapman::store
