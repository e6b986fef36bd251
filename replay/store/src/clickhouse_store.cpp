// The ClickHouse store: SQL over ClickHouse's HTTP interface (cpp-httplib's client), written for
// what Debian's clickhouse-server 18.16 accepts (MergeTree() ORDER BY, TabSeparated in and out).
//
// No transactions: a run is written as one INSERT block per table, every row carrying the run's
// log id and an id of this ingest (random), then one row in `completed`. Readers take only the
// rows of completed ingests, and of two completed ingests of one log (two jobs that raced) only
// the one with the lower ingest id: an ingest that died half-way leaves rows no reader sees, and
// a log is never counted twice. Tables are ordered for trend's reads: the tags by key, value and
// time, the rows of a run by point and time.
#include <httplib.h>

#include <cctype>
#include <cstdlib>
#include <random>
#include <sstream>
#include <unordered_map>

#include "heapman/replay/frames.h"
#include "heapman/store/store.h"

namespace heapman::store {

namespace {

// A TabSeparated field: backslash, tab, newline and the other control bytes escaped.
std::string tsv(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\0': out += "\\0"; break;
      default: out += c;
    }
  }
  return out;
}

std::string untsv(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    switch (c) {
      case 't': out += '\t'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      default: out += c;  // \\ \' and anything else: the byte itself
    }
  }
  return out;
}

// A string literal in a query.
std::string sqlText(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::vector<std::vector<std::string>> rowsOf(const std::string& body) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    size_t start = 0;
    for (;;) {
      size_t tab = line.find('\t', start);
      cells.push_back(untsv(line.substr(start, tab == std::string::npos ? tab : tab - start)));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

uint64_t u64(const std::string& s) { return std::stoull(s); }
int64_t i64(const std::string& s) { return std::stoll(s); }

// A table: its columns after (log_id, ingest_id, n) and its ORDER BY.
struct TableDef {
  const char* name;
  const char* columns;
  const char* order;
};
const TableDef kTables[] = {
    {"runs",
     "program String, command_line String, options String, hostname String, pid UInt32, "
     "start_wall_ns Int64, duration_ns UInt64, events UInt64, allocs UInt64, frees UInt64, "
     "frames UInt64, gc_count UInt64, peak_bytes UInt64, garbage_bytes UInt64, "
     "repeating_event String, repetitions UInt64",
     "start_wall_ns, log_id"},
    {"tags", "key String, value String, start_wall_ns Int64", "key, value, start_wall_ns"},
    {"gcs",
     "gc UInt32, time_ns UInt64, pause_ns UInt64, heap_before UInt64, heap_after UInt64, "
     "live_bytes UInt64, collected_bytes UInt64, start_wall_ns Int64",
     "start_wall_ns, log_id, gc"},
    {"points", "point String, heap String, live_bytes UInt64, live_objects UInt64, "
               "start_wall_ns Int64",
     "point, start_wall_ns, log_id"},
    {"sites", "point String, function String, module String, bytes UInt64, objects UInt64, "
              "start_wall_ns Int64",
     "point, start_wall_ns, log_id"},
    {"types", "point String, type String, bytes UInt64, objects UInt64, start_wall_ns Int64",
     "point, start_wall_ns, log_id"},
    {"churn", "function String, module String, garbage_bytes UInt64, allocated_bytes UInt64, "
              "collected_bytes UInt64, freed_bytes UInt64, start_wall_ns Int64",
     "start_wall_ns, log_id"},
    {"leaks", "kind String, name String, bytes_per_step Int64, sentence String, "
              "start_wall_ns Int64",
     "start_wall_ns, log_id"},
};

// %XX escapes of a URL's user or password (a password may hold ':', '@' or '/').
std::string percentDecoded(const std::string& s, const std::string& url) {  // url: masked
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    auto hex = [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
             : std::isxdigit(static_cast<unsigned char>(c))
                 ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                 : -1;
    };
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
      throw StoreError("bad ClickHouse store '" + url +
                       "': a '%' in the user or password is %XX (%40 for '@', %3A for ':')");
    out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

// The server refused who we said we are (18.16: HTTP 500 with code 192 unknown user, 193 wrong
// password, 194 a password required; later versions 401/403 and 516).
bool authenticationRefused(int status, const std::string& body) {
  if (status == 401 || status == 403) return true;
  for (const char* code : {"Code: 192", "Code: 193", "Code: 194", "Code: 516"})
    if (body.find(code) != std::string::npos) return true;
  return false;
}

class ClickHouseStore : public Store {
 public:
  explicit ClickHouseStore(const std::string& url) : url_(maskedUrl(url)) {
    // clickhouse://[USER[:PASSWORD]@]HOST:PORT/DB
    std::string rest = url.substr(std::string("clickhouse://").size());
    size_t slash = rest.find('/');
    std::string hostPort = rest.substr(0, slash);
    db_ = slash == std::string::npos ? "" : rest.substr(slash + 1);
    size_t at = hostPort.rfind('@');
    std::string password;
    bool hasPassword = false;
    if (at != std::string::npos) {
      std::string userInfo = hostPort.substr(0, at);
      hostPort = hostPort.substr(at + 1);
      size_t colon = userInfo.find(':');
      user_ = percentDecoded(userInfo.substr(0, colon), url_);
      if (colon != std::string::npos)
        password = percentDecoded(userInfo.substr(colon + 1), url_), hasPassword = true;
      if (user_.empty())
        throw StoreError("bad ClickHouse store '" + url_ +
                         "': give clickhouse://USER:PASSWORD@HOST:PORT/DB");
    }
    // A password kept out of command lines and CI logs: clickhouse://USER@HOST:PORT/DB and the
    // password in the environment.
    if (!user_.empty() && !hasPassword)
      if (const char* env = std::getenv("HEAPMAN_CLICKHOUSE_PASSWORD")) password = env;
    size_t colon = hostPort.rfind(':');
    host_ = hostPort.substr(0, colon);
    int port = 8123;
    if (colon != std::string::npos) {
      try {
        size_t used = 0;
        port = std::stoi(hostPort.substr(colon + 1), &used);
        if (used != hostPort.size() - colon - 1 || port <= 0 || port > 65535) throw 0;
      } catch (...) {
        throw StoreError("bad ClickHouse store '" + url_ +
                         "': give clickhouse://HOST:PORT/DB (the HTTP port, 8123 by default)");
      }
    }
    if (host_.empty() || db_.empty() || db_.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_") != std::string::npos)
      throw StoreError("bad ClickHouse store '" + url_ +
                       "': give clickhouse://HOST:PORT/DB (DB: letters, digits and '_')");
    client_ = std::make_unique<httplib::Client>(host_, port);
    client_->set_connection_timeout(5);
    // TCP_NODELAY: cpp-httplib sends a request's headers and body in separate writes, and Nagle
    // held the body back for the server's delayed ACK (~40 ms a request, 9 requests a run): 100
    // runs took 8.0 s, 2.2 s with it, 1.9 s with the connection kept too.
    client_->set_keep_alive(true);
    client_->set_tcp_nodelay(true);
    client_->set_read_timeout(120);
    client_->set_write_timeout(120);
    // HTTP basic authentication: what 18.16's HTTP handler reads (request.hasCredentials());
    // the X-ClickHouse-User/Key headers came later.
    if (!user_.empty()) client_->set_basic_auth(user_, password);
    where_ = "ClickHouse at " + host_ + ":" + std::to_string(port);
    setUp();
  }

  std::string describe() const override { return url_; }

  bool has(const std::string& logId) override {
    return query("SELECT count() FROM " + t("completed") + " WHERE log_id = " + sqlText(logId)) !=
           "0\n";
  }

  bool put(const RunSummary& s) override {
    std::string recording = partialOf(s.run.logId);
    if (has(s.run.logId) || (!recording.empty() && has(recording))) return false;
    std::random_device rd;
    char ingest[33];
    std::snprintf(ingest, sizeof ingest, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
    const RunInfo& r = s.run;
    std::string id = tsv(r.logId) + "\t" + ingest + "\t";
    std::string start = std::to_string(r.startWallNs);
    auto line = [&](uint64_t n, const std::string& rest) {
      return id + std::to_string(n) + "\t" + rest + "\n";
    };
    std::string runs = line(0, tsv(r.program) + "\t" + tsv(r.commandLine) + "\t" +
                                   tsv(r.options) + "\t" + tsv(r.hostname) + "\t" +
                                   std::to_string(r.pid) + "\t" + start + "\t" +
                                   std::to_string(r.durationNs) + "\t" + std::to_string(r.events) +
                                   "\t" + std::to_string(r.allocs) + "\t" +
                                   std::to_string(r.frees) + "\t" + std::to_string(r.frames) +
                                   "\t" + std::to_string(r.gcCount) + "\t" +
                                   std::to_string(r.peakBytes) + "\t" +
                                   std::to_string(r.garbageBytes) + "\t" +
                                   tsv(r.repeatingEvent) + "\t" + std::to_string(r.repetitions));
    std::string tags, gcs, points, sites, types, churn, leaks;
    uint64_t n = 0;
    for (const Tag& x : r.tags) tags += line(n++, tsv(x.key) + "\t" + tsv(x.value) + "\t" + start);
    n = 0;
    for (const GcRow& g : s.gcs)
      gcs += line(n++, std::to_string(g.gc) + "\t" + std::to_string(g.timeNs) + "\t" +
                           std::to_string(g.pauseNs) + "\t" + std::to_string(g.heapBefore) + "\t" +
                           std::to_string(g.heapAfter) + "\t" + std::to_string(g.liveBytes) +
                           "\t" + std::to_string(g.collectedBytes) + "\t" + start);
    n = 0;
    for (const PointRow& p : s.points)
      points += line(n++, tsv(p.point) + "\t" + tsv(p.heap) + "\t" + std::to_string(p.liveBytes) +
                              "\t" + std::to_string(p.liveObjects) + "\t" + start);
    n = 0;
    for (const SiteRow& x : s.sites)
      sites += line(n++, tsv(x.point) + "\t" + tsv(x.function) + "\t" + tsv(x.module) + "\t" +
                             std::to_string(x.bytes) + "\t" + std::to_string(x.objects) + "\t" +
                             start);
    n = 0;
    for (const TypeRow& x : s.types)
      types += line(n++, tsv(x.point) + "\t" + tsv(x.type) + "\t" + std::to_string(x.bytes) +
                             "\t" + std::to_string(x.objects) + "\t" + start);
    n = 0;
    for (const ChurnRow& x : s.churn)
      churn += line(n++, tsv(x.function) + "\t" + tsv(x.module) + "\t" +
                             std::to_string(x.garbageBytes) + "\t" +
                             std::to_string(x.allocatedBytes) + "\t" +
                             std::to_string(x.collectedBytes) + "\t" +
                             std::to_string(x.freedBytes) + "\t" + start);
    n = 0;
    for (const LeakRow& x : s.leaks)
      leaks += line(n++, tsv(x.kind) + "\t" + tsv(x.name) + "\t" +
                             std::to_string(x.bytesPerStep) + "\t" + tsv(x.sentence) + "\t" +
                             start);
    // One block per table, then the marker that makes them visible.
    for (auto [table, rows] : {std::pair{"runs", &runs}, {"tags", &tags}, {"gcs", &gcs},
                               {"points", &points}, {"sites", &sites}, {"types", &types},
                               {"churn", &churn}, {"leaks", &leaks}})
      if (!rows->empty()) insert(table, *rows);
    auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    insert("completed", tsv(r.logId) + "\t" + ingest + "\t" + std::to_string(now) + "\n");
    return true;
  }

  std::vector<StoredRun> runs() override {
    std::vector<StoredRun> out;
    std::unordered_map<std::string, size_t> byId;
    for (auto& row : rowsOf(query("SELECT log_id, start_wall_ns FROM " + t("runs") + " WHERE " +
                                  chosen() + " ORDER BY start_wall_ns, log_id"))) {
      byId[row.at(0)] = out.size();
      out.push_back({row.at(0), i64(row.at(1)), {}});
    }
    for (auto& row :
         rowsOf(query("SELECT log_id, key, value FROM " + t("tags") + " WHERE " + chosen()))) {
      auto it = byId.find(row.at(0));
      if (it != byId.end()) out[it->second].tags[row.at(1)] = row.at(2);
    }
    return out;
  }

  std::vector<FigureValue> figure(const FigureQuery& fq) override {
    std::vector<FigureValue> out;
    std::unordered_map<std::string, size_t> byId;
    std::string point = fq.point.empty() ? "peak" : fq.point;
    bool allHeaps = fq.heap.empty() || fq.heap == "all";
    FigureKind kind = fq.kind;
    bool leak = kind == FigureKind::kLeakSuspects || kind == FigureKind::kGrowingSites;
    for (auto& row : rowsOf(query(std::string("SELECT log_id, ") +
                                  (kind == FigureKind::kGcCount ? "gc_count" : "peak_bytes") +
                                  ", repetitions FROM " + t("runs") + " WHERE " + chosen() +
                                  " ORDER BY start_wall_ns, log_id"))) {
      byId[row.at(0)] = out.size();
      // The leak finder ran only with 3 repetitions or more: a run with fewer has no leak figure.
      out.push_back({row.at(0), !leak || u64(row.at(2)) >= 3, u64(row.at(1))});
    }
    if (kind == FigureKind::kGcCount) return out;
    if (kind == FigureKind::kGcPauseP99) {
      std::vector<std::vector<uint64_t>> pauses(out.size());
      for (auto& row : rowsOf(query("SELECT log_id, pause_ns FROM " + t("gcs") + " WHERE " +
                                    chosen()))) {
        auto it = byId.find(row.at(0));
        if (it != byId.end()) pauses[it->second].push_back(u64(row.at(1)));
      }
      for (size_t i = 0; i < out.size(); ++i) out[i].value = pauseP99(std::move(pauses[i]));
      return out;
    }
    if (leak) {
      for (FigureValue& v : out) v.value = 0;
      for (auto& row : rowsOf(query(
               "SELECT log_id, count() FROM " + t("leaks") + " WHERE " + chosen() +
               " AND kind = " + (kind == FigureKind::kLeakSuspects ? "'suspect'" : "'site'") +
               " GROUP BY log_id"))) {
        auto it = byId.find(row.at(0));
        if (it != byId.end()) out[it->second].value = u64(row.at(1));
      }
      return out;
    }
    if (point == "peak" && allHeaps && fq.siteRegex.empty() && fq.typeRegex.empty()) return out;
    for (FigureValue& v : out) v.present = false, v.value = 0;
    bool regex = !fq.siteRegex.empty() || !fq.typeRegex.empty();
    for (auto& row : rowsOf(query(
             "SELECT log_id, sum(live_bytes) FROM " + t("points") + " WHERE " + chosen() +
             " AND point = " + sqlText(point) +
             (allHeaps || regex ? std::string() : " AND heap = " + sqlText(fq.heap)) +
             " GROUP BY log_id"))) {
      auto it = byId.find(row.at(0));
      if (it == byId.end()) continue;
      out[it->second].present = true;
      if (!regex) out[it->second].value = u64(row.at(1));
    }
    if (!regex) return out;
    bool site = !fq.siteRegex.empty();
    replay::Regex re = replay::compileRegex(site ? fq.siteRegex : fq.typeRegex,
                                            site ? "--site" : "--type",
                                            site ? "function" : "type");
    std::unordered_map<std::string, bool> matches;
    for (auto& row : rowsOf(query(std::string("SELECT log_id, ") + (site ? "function" : "type") +
                                  ", bytes FROM " + t(site ? "sites" : "types") + " WHERE " +
                                  chosen() + " AND point = " + sqlText(point)))) {
      auto m = matches.find(row.at(1));
      if (m == matches.end()) m = matches.emplace(row.at(1), re.search(row.at(1))).first;
      if (!m->second) continue;
      auto it = byId.find(row.at(0));
      if (it != byId.end()) out[it->second].value += u64(row.at(2));
    }
    return out;
  }

  std::optional<RunSummary> load(const Tag& tag) override {
    auto hit = rowsOf(query("SELECT c.log_id, c.ingest_id FROM " + t("completed") +
                            " AS c WHERE " + chosenOf("c.") + " AND c.log_id IN (SELECT log_id "
                            "FROM " + t("tags") + " WHERE key = " + sqlText(tag.key) +
                            " AND value = " + sqlText(tag.value) +
                            ") ORDER BY c.at DESC LIMIT 1"));
    if (hit.empty()) return std::nullopt;
    std::string which = " WHERE log_id = " + sqlText(hit[0].at(0)) +
                        " AND ingest_id = " + sqlText(hit[0].at(1)) + " ORDER BY n";
    auto rows = [&](const char* table, const char* cols) {
      return rowsOf(query(std::string("SELECT ") + cols + " FROM " + t(table) + which));
    };
    RunSummary s;
    RunInfo& r = s.run;
    auto run = rows("runs",
                    "log_id, program, command_line, options, hostname, pid, start_wall_ns, "
                    "duration_ns, events, allocs, frees, frames, gc_count, peak_bytes, "
                    "garbage_bytes, repeating_event, repetitions");
    if (run.empty()) return std::nullopt;
    const auto& x = run[0];
    r.logId = x.at(0), r.program = x.at(1), r.commandLine = x.at(2), r.options = x.at(3);
    r.hostname = x.at(4), r.pid = static_cast<uint32_t>(u64(x.at(5)));
    r.startWallNs = i64(x.at(6)), r.durationNs = u64(x.at(7)), r.events = u64(x.at(8));
    r.allocs = u64(x.at(9)), r.frees = u64(x.at(10)), r.frames = u64(x.at(11));
    r.gcCount = u64(x.at(12)), r.peakBytes = u64(x.at(13)), r.garbageBytes = u64(x.at(14));
    r.repeatingEvent = x.at(15), r.repetitions = u64(x.at(16));
    for (auto& y : rows("tags", "key, value")) r.tags.push_back({y.at(0), y.at(1)});
    for (auto& y : rows("gcs", "gc, time_ns, pause_ns, heap_before, heap_after, live_bytes, "
                               "collected_bytes"))
      s.gcs.push_back({static_cast<uint32_t>(u64(y.at(0))), u64(y.at(1)), u64(y.at(2)),
                       u64(y.at(3)), u64(y.at(4)), u64(y.at(5)), u64(y.at(6))});
    for (auto& y : rows("points", "point, heap, live_bytes, live_objects"))
      s.points.push_back({y.at(0), y.at(1), u64(y.at(2)), u64(y.at(3))});
    for (auto& y : rows("sites", "point, function, module, bytes, objects"))
      s.sites.push_back({y.at(0), y.at(1), y.at(2), u64(y.at(3)), u64(y.at(4))});
    for (auto& y : rows("types", "point, type, bytes, objects"))
      s.types.push_back({y.at(0), y.at(1), u64(y.at(2)), u64(y.at(3))});
    for (auto& y : rows("churn", "function, module, garbage_bytes, allocated_bytes, "
                                 "collected_bytes, freed_bytes"))
      s.churn.push_back({y.at(0), y.at(1), u64(y.at(2)), u64(y.at(3)), u64(y.at(4)),
                         u64(y.at(5))});
    for (auto& y : rows("leaks", "kind, name, bytes_per_step, sentence"))
      s.leaks.push_back({y.at(0), y.at(1), i64(y.at(2)), y.at(3)});
    return s;
  }

  std::map<std::string, uint64_t> rowCounts() override {
    std::map<std::string, uint64_t> out;
    for (const TableDef& d : kTables)
      out[d.name] = u64(query("SELECT count() FROM " + t(d.name) + " WHERE " + chosen()));
    return out;
  }

 private:
  std::string t(const char* table) const { return db_ + "." + table; }
  // The rows of the completed ingests, one per log; not those of a partial run (a log cut
  // short: ID.pN) whose recording's complete run is there (it replaces them).
  std::string chosenOf(const std::string& prefix) const {
    return "(" + prefix + "log_id, " + prefix + "ingest_id) IN (SELECT log_id, min(ingest_id) FROM " +
           t("completed") + " WHERE NOT (position(log_id, '.p') = 17 AND substring(log_id, 1, 16) "
           "IN (SELECT log_id FROM " + t("completed") + ")) GROUP BY log_id)";
  }
  std::string chosen() const { return chosenOf(""); }

  httplib::Result post(const std::string& path, const std::string& body) {
    httplib::Result res = client_->Post(path.c_str(), body, "text/plain");
    if (!res)
      throw StoreError("cannot reach " + where_ + " (" +
                       (res.error() == httplib::Error::Connection
                            ? std::string("connection refused or timed out")
                            : httplib::to_string(res.error())) +
                       "): start the server or give another --store; nothing was written");
    if (res->status != 200) {
      std::string msg = res->body;
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      if (authenticationRefused(res->status, msg))
        throw StoreError(where_ + " refused " +
                         (user_.empty() ? std::string("the user default (no user given)")
                                        : "the user " + user_) +
                         ": a wrong password or an unknown user (HTTP " +
                         std::to_string(res->status) + ": " + msg +
                         "); give clickhouse://USER:PASSWORD@HOST:PORT/DB, or the password in "
                         "HEAPMAN_CLICKHOUSE_PASSWORD; nothing was written");
      throw StoreError(where_ + " refused the request (HTTP " + std::to_string(res->status) +
                       "): " + msg);
    }
    return res;
  }

  std::string query(const std::string& sql) {
    return post("/", sql + (sql.rfind("SELECT", 0) == 0 ? " FORMAT TabSeparated" : ""))->body;
  }

  void insert(const std::string& table, const std::string& rows) {
    std::string q = "INSERT INTO " + db_ + "." + table + " FORMAT TabSeparated";
    std::string enc;
    for (unsigned char c : q) {
      if (std::isalnum(c) || c == '.' || c == '_') {
        enc += static_cast<char>(c);
      } else {
        char b[4];
        std::snprintf(b, sizeof b, "%%%02X", c);
        enc += b;
      }
    }
    post("/?query=" + enc, rows);
  }

  void setUp() {
    query("CREATE DATABASE IF NOT EXISTS " + db_);
    query("CREATE TABLE IF NOT EXISTS " + t("meta") +
          " (key String, value String) ENGINE = MergeTree() ORDER BY key");
    for (const TableDef& d : kTables)
      query("CREATE TABLE IF NOT EXISTS " + t(d.name) +
            " (log_id String, ingest_id String, n UInt32, " + d.columns +
            ") ENGINE = MergeTree() ORDER BY (" + d.order + ")");
    query("CREATE TABLE IF NOT EXISTS " + t("completed") +
          " (log_id String, ingest_id String, at Int64) ENGINE = MergeTree() ORDER BY log_id");
    std::string v = query("SELECT max(toUInt32OrZero(value)) FROM " + t("meta") +
                          " WHERE key = 'schema_version'");
    int version = std::atoi(v.c_str());
    if (version > kSchemaVersion)
      throw StoreError(url_ + " has schema version " + std::to_string(version) +
                       ", newer than this heapman's (" + std::to_string(kSchemaVersion) +
                       "): use a newer heapman");
    if (version == 0)
      insert("meta", "schema_version\t" + std::to_string(kSchemaVersion) + "\n");
  }

  std::string url_, host_, db_, where_, user_;  // url_: the password masked
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace

std::unique_ptr<Store> openClickHouse(const std::string& url) {
  return std::make_unique<ClickHouseStore>(url);
}

}  // namespace heapman::store
