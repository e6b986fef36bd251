#include "output.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "heapman/logformat/private_file.h"
#include "heapman/replay/replay.h"
#include "json.h"

namespace heapman::cli {

namespace po = boost::program_options;

namespace {

constexpr size_t kMaxTextCell = 90;  // longer cells (C++ names) are cut in aligned tables only

// Display width of UTF-8 text (code points, not bytes).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string cut(const std::string& s) {
  if (width(s) <= kMaxTextCell) return s;
  size_t keep = 0, w = 0;
  while (keep < s.size() && w < kMaxTextCell - 3) {
    ++keep;
    while (keep < s.size() && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) ++keep;
    ++w;
  }
  return s.substr(0, keep) + "...";
}

std::string jsonKey(std::string name) {
  for (char& c : name) c = c == ' ' || c == '-' ? '_' : static_cast<char>(std::tolower(c));
  return name;
}

[[noreturn]] void failed(const std::string& where, int err) {
  // Ctrl-C in the shell while the output blocks (a FIFO nobody reads): the command was
  // interrupted, the output did not fail.
  if (err == EINTR) throw replay::Interrupted();
  throw OutputError("writing " + where + " failed: " +
                    (err ? std::strerror(err) : "input/output error"));
}

thread_local Console* tConsole = nullptr;

}  // namespace

ConsoleScope::ConsoleScope(Console& c) : previous_(tConsole) { tConsole = &c; }
ConsoleScope::~ConsoleScope() { tConsole = previous_; }
bool consoleCaptured() { return tConsole != nullptr; }

void sayLine(const std::string& line) {
  if (tConsole) {
    tConsole->err += line + "\n";
    return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void flushStdout() {
  if (tConsole) return;
  errno = 0;
  bool bad = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!bad) return;
  int err = errno;
  std::clearerr(stdout);
  failed("standard output", err);
}

void writeOutput(const std::string& where, const std::string& text, bool privateFile) {
  if (where == "-" && tConsole) {
    tConsole->out += text;
    return;
  }
  if (where == "-") {
    errno = 0;
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
      int err = errno;
      std::clearerr(stdout);
      failed("standard output", err);
    }
    flushStdout();
    return;
  }
  FILE* f = std::fopen(where.c_str(), "wb");
  if (!f) failed(where, errno);
  if (privateFile) log::keepPrivate(fileno(f));  // the program's memory, like the log
  errno = 0;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) failed(where, err);
}

std::string num(uint64_t v) { return std::to_string(v); }
std::string snum(int64_t v) { return v > 0 ? "+" + std::to_string(v) : std::to_string(v); }
std::string percent(double share) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", share * 100.0);
  return b;
}

void addOutputOptions(po::options_description& opts, const std::vector<std::string>& tables) {
  opts.add_options()("csv", po::value<std::string>()->value_name("FILE|-"),
                     "write a table as CSV to FILE ('-': stdout)")(
      "json", po::value<std::string>()->value_name("FILE|-"),
      "write every table as JSON to FILE ('-': stdout)");
  if (tables.size() < 2) return;
  std::string names;
  for (const std::string& t : tables) names += (names.empty() ? "" : "|") + t;
  opts.add_options()("table", po::value<std::string>()->value_name(names),
                     ("the table --csv writes (default: " + tables.front() + ")").c_str());
}

OutputOptions outputOptions(const VerbOptions& vm) {
  OutputOptions o;
  if (vm.count("csv")) o.csv = vm["csv"].as<std::string>();
  if (vm.count("json")) o.json = vm["json"].as<std::string>();
  if (vm.count("table")) o.csvTable = vm["table"].as<std::string>();
  return o;
}

std::string textTable(const Table& t) {
  std::vector<size_t> w(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) w[c] = width(t.columns[c].name);
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : t.rows) {
    cells.emplace_back();
    for (size_t c = 0; c < t.columns.size(); ++c) {
      cells.back().push_back(cut(c < row.size() ? row[c] : ""));
      w[c] = std::max(w[c], width(cells.back().back()));
    }
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      std::string pad(w[c] - width(row[c]), ' ');
      bool last = c + 1 == t.columns.size();
      if (t.columns[c].numeric)
        out += pad + row[c];
      else
        out += row[c] + (last ? "" : pad);
      if (!last) out += "  ";
    }
    return out + "\n";
  };
  std::vector<std::string> header;
  for (const Column& c : t.columns) header.push_back(c.name);
  std::string out = line(header);
  for (const auto& row : cells) out += line(row);
  if (t.rows.empty()) out += "(none)\n";
  return out;
}

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csvTable(const Table& t) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c)
    out += (c ? "," : "") + csvField(jsonKey(t.columns[c].name));
  out += "\r\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < t.columns.size(); ++c)
      out += (c ? "," : "") + csvField(c < row.size() ? row[c] : "");
    out += "\r\n";
  }
  return out;
}

std::string jsonRows(const Table& t) {
  std::string out = "[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    JsonObject o;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const std::string& v = c < t.rows[r].size() ? t.rows[r][c] : std::string();
      std::string key = jsonKey(t.columns[c].name);
      if (t.columns[c].numeric && !v.empty()) {
        std::string n = v;
        if (n.back() == '%') n.pop_back();
        if (n.front() == '+') n.erase(0, 1);
        o.raw(key, n);
      } else {
        o.str(key, v);
      }
    }
    out += (r ? ",\n  " : "\n  ") + o.str();
  }
  return out + (t.rows.empty() ? "]" : "\n]");
}

void emit(const Report& r, const OutputOptions& o) {
  const Table* csv = r.tables.empty() ? nullptr : &r.tables.front();
  if (!o.csvTable.empty()) {
    csv = nullptr;
    std::string names;
    for (const Table& x : r.tables) {
      if (x.name == o.csvTable) csv = &x;
      names += (names.empty() ? "" : ", ") + x.name;
    }
    if (!csv)
      throw UsageError("--table " + o.csvTable + ": this answer has no such table (its tables: " +
                       names + ")");
  }
  bool toStdout = o.csv == "-" || o.json == "-";
  if (!toStdout) {
    std::string out;
    for (const auto& [k, v] : r.meta) {
      std::string key = k + ":";
      key.resize(std::max<size_t>(key.size(), 10), ' ');
      out += key + " " + v + "\n";
    }
    for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
    for (const Table& t : r.tables) {
      out += "\n";
      if (r.tables.size() > 1) out += "== " + t.name + " ==\n";
      out += textTable(t);
    }
    writeOutput("-", out);
  } else {
    for (const std::string& w : r.warnings) sayLine("warning: " + w);
  }
  if (!o.csv.empty() && csv) writeOutput(o.csv, csvTable(*csv), o.privateFiles);
  if (!o.json.empty()) {
    JsonObject j;
    j.str("query", r.query);
    for (const auto& [k, v] : r.meta) j.str(jsonKey(k), v);
    std::string w = "[";
    for (size_t i = 0; i < r.warnings.size(); ++i) w += (i ? "," : "") + jsonString(r.warnings[i]);
    j.raw("warnings", w + "]");
    for (const Table& t : r.tables) j.raw(t.name, jsonRows(t));
    writeOutput(o.json, j.str() + "\n", o.privateFiles);
  }
}

std::string todayUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[16];
  std::strftime(b, sizeof b, "%Y-%m-%d", &tm);
  return b;
}

}  // namespace heapman::cli
