// The SQLite store: one file, WAL (readers never wait for a writer), a busy timeout (parallel
// ingests queue for the write lock instead of failing), one transaction per run. The schema's
// version is in the meta table; a newer one is refused.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <unordered_map>

#include "heapman/replay/frames.h"
#include "heapman/store/store.h"

namespace heapman::store {

namespace {

constexpr int kBusyTimeoutMs = 60'000;

const char* const kSchema = R"(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  run INTEGER PRIMARY KEY, log_id TEXT NOT NULL UNIQUE, program TEXT NOT NULL,
  command_line TEXT NOT NULL, options TEXT NOT NULL, hostname TEXT NOT NULL, pid INTEGER NOT NULL,
  start_wall_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL, events INTEGER NOT NULL,
  allocs INTEGER NOT NULL, frees INTEGER NOT NULL, frames INTEGER NOT NULL,
  gc_count INTEGER NOT NULL, peak_bytes INTEGER NOT NULL, garbage_bytes INTEGER NOT NULL,
  repeating_event TEXT NOT NULL, repetitions INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tags(run INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY(run, key));
CREATE INDEX IF NOT EXISTS tags_by_key ON tags(key, value);
CREATE TABLE IF NOT EXISTS gcs(run INTEGER NOT NULL, gc INTEGER NOT NULL, time_ns INTEGER NOT NULL,
  pause_ns INTEGER NOT NULL, heap_before INTEGER NOT NULL, heap_after INTEGER NOT NULL,
  live_bytes INTEGER NOT NULL, collected_bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS gcs_by_run ON gcs(run);
CREATE TABLE IF NOT EXISTS points(run INTEGER NOT NULL, point TEXT NOT NULL, heap TEXT NOT NULL,
  live_bytes INTEGER NOT NULL, live_objects INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS points_by_point ON points(point, run);
CREATE INDEX IF NOT EXISTS points_by_run ON points(run);
CREATE TABLE IF NOT EXISTS sites(run INTEGER NOT NULL, point TEXT NOT NULL, function TEXT NOT NULL,
  module TEXT NOT NULL, bytes INTEGER NOT NULL, objects INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sites_by_point ON sites(point, run);
CREATE INDEX IF NOT EXISTS sites_by_run ON sites(run);
CREATE TABLE IF NOT EXISTS types(run INTEGER NOT NULL, point TEXT NOT NULL, type TEXT NOT NULL,
  bytes INTEGER NOT NULL, objects INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS types_by_point ON types(point, run);
CREATE INDEX IF NOT EXISTS types_by_run ON types(run);
CREATE TABLE IF NOT EXISTS churn(run INTEGER NOT NULL, function TEXT NOT NULL,
  module TEXT NOT NULL, garbage_bytes INTEGER NOT NULL, allocated_bytes INTEGER NOT NULL,
  collected_bytes INTEGER NOT NULL, freed_bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS churn_by_run ON churn(run);
CREATE TABLE IF NOT EXISTS leaks(run INTEGER NOT NULL, rank INTEGER NOT NULL, kind TEXT NOT NULL,
  name TEXT NOT NULL, bytes_per_step INTEGER NOT NULL, sentence TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS leaks_by_run ON leaks(run);
)";

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const std::string& where) : where_(where) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw StoreError(where_ + ": " + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, uint64_t v) {
    sqlite3_bind_int64(s_, i, static_cast<int64_t>(v));
    return *this;
  }
  Stmt& bindSigned(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // true: a row is there.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(where_ + ": " + sqlite3_errmsg(sqlite3_db_handle(s_)));
  }
  void run() {
    step();
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  void reset() { sqlite3_reset(s_); }
  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  uint64_t u64(int col) const { return static_cast<uint64_t>(sqlite3_column_int64(s_, col)); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  std::string where_;
};

class SqliteStore : public Store {
 public:
  SqliteStore(const std::string& path, bool create) : path_(path) {
    int rc = sqlite3_open_v2(path.c_str(), &db_,
                             SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), nullptr);
    if (rc == SQLITE_CANTOPEN && !create && access(path.c_str(), F_OK) != 0) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError("no store at " + path + ": heapman ingest LOG --store " + path +
                       " makes it");
    }
    if (rc != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError("cannot open the store " + path + ": " + why);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    try {
      setUp();
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  std::string describe() const override { return path_; }

  bool has(const std::string& logId) override {
    Stmt q(db_, "SELECT 1 FROM runs WHERE log_id = ?", where());
    q.bind(1, logId);
    return q.step();
  }

  bool put(const RunSummary& s) override {
    exec("BEGIN IMMEDIATE");
    try {
      std::string recording = partialOf(s.run.logId);
      if (has(s.run.logId) || (!recording.empty() && has(recording))) {
        exec("ROLLBACK");
        return false;
      }
      if (recording.empty()) {  // the partial runs of this recording go
        for (const char* table : {"tags", "gcs", "points", "sites", "types", "churn", "leaks"}) {
          std::string sql = std::string("DELETE FROM ") + table +
                            " WHERE run IN (SELECT run FROM runs WHERE log_id GLOB ?)";
          Stmt del(db_, sql.c_str(), where());
          del.bind(1, s.run.logId + ".p*").run();
        }
        Stmt del(db_, "DELETE FROM runs WHERE log_id GLOB ?", where());
        del.bind(1, s.run.logId + ".p*").run();
      }
      const RunInfo& r = s.run;
      Stmt ins(db_,
               "INSERT INTO runs(log_id, program, command_line, options, hostname, pid, "
               "start_wall_ns, duration_ns, events, allocs, frees, frames, gc_count, peak_bytes, "
               "garbage_bytes, repeating_event, repetitions) "
               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
               where());
      ins.bind(1, r.logId).bind(2, r.program).bind(3, r.commandLine).bind(4, r.options);
      ins.bind(5, r.hostname).bind(6, uint64_t{r.pid}).bindSigned(7, r.startWallNs);
      ins.bind(8, r.durationNs).bind(9, r.events).bind(10, r.allocs).bind(11, r.frees);
      ins.bind(12, r.frames).bind(13, r.gcCount).bind(14, r.peakBytes).bind(15, r.garbageBytes);
      ins.bind(16, r.repeatingEvent).bind(17, r.repetitions);
      ins.run();
      uint64_t run = static_cast<uint64_t>(sqlite3_last_insert_rowid(db_));
      Stmt tag(db_, "INSERT INTO tags VALUES(?,?,?)", where());
      for (const Tag& t : r.tags) tag.bind(1, run).bind(2, t.key).bind(3, t.value).run();
      Stmt gc(db_, "INSERT INTO gcs VALUES(?,?,?,?,?,?,?,?)", where());
      for (const GcRow& g : s.gcs)
        gc.bind(1, run).bind(2, uint64_t{g.gc}).bind(3, g.timeNs).bind(4, g.pauseNs)
            .bind(5, g.heapBefore).bind(6, g.heapAfter).bind(7, g.liveBytes)
            .bind(8, g.collectedBytes).run();
      Stmt pt(db_, "INSERT INTO points VALUES(?,?,?,?,?)", where());
      for (const PointRow& p : s.points)
        pt.bind(1, run).bind(2, p.point).bind(3, p.heap).bind(4, p.liveBytes)
            .bind(5, p.liveObjects).run();
      Stmt site(db_, "INSERT INTO sites VALUES(?,?,?,?,?,?)", where());
      for (const SiteRow& x : s.sites)
        site.bind(1, run).bind(2, x.point).bind(3, x.function).bind(4, x.module)
            .bind(5, x.bytes).bind(6, x.objects).run();
      Stmt type(db_, "INSERT INTO types VALUES(?,?,?,?,?)", where());
      for (const TypeRow& x : s.types)
        type.bind(1, run).bind(2, x.point).bind(3, x.type).bind(4, x.bytes).bind(5, x.objects)
            .run();
      Stmt churn(db_, "INSERT INTO churn VALUES(?,?,?,?,?,?,?)", where());
      for (const ChurnRow& x : s.churn)
        churn.bind(1, run).bind(2, x.function).bind(3, x.module).bind(4, x.garbageBytes)
            .bind(5, x.allocatedBytes).bind(6, x.collectedBytes).bind(7, x.freedBytes).run();
      Stmt leak(db_, "INSERT INTO leaks VALUES(?,?,?,?,?,?)", where());
      for (size_t i = 0; i < s.leaks.size(); ++i) {
        const LeakRow& x = s.leaks[i];
        leak.bind(1, run).bind(2, uint64_t{i + 1}).bind(3, x.kind).bind(4, x.name)
            .bindSigned(5, x.bytesPerStep).bind(6, x.sentence).run();
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    return true;
  }

  std::vector<StoredRun> runs() override {
    std::vector<StoredRun> out;
    std::unordered_map<int64_t, size_t> byRun;
    Stmt q(db_, "SELECT run, log_id, start_wall_ns FROM runs ORDER BY run", where());
    while (q.step()) {
      byRun[q.i64(0)] = out.size();
      out.push_back({q.text(1), q.i64(2), {}});
    }
    Stmt t(db_, "SELECT run, key, value FROM tags", where());
    while (t.step()) {
      auto it = byRun.find(t.i64(0));
      if (it != byRun.end()) out[it->second].tags[t.text(1)] = t.text(2);
    }
    return out;
  }

  std::vector<FigureValue> figure(const FigureQuery& fq) override {
    std::vector<FigureValue> out;
    std::unordered_map<int64_t, size_t> byRun;
    if (fq.kind != FigureKind::kLive) return runFigure(fq.kind);
    std::string point = fq.point.empty() ? "peak" : fq.point;
    bool allHeaps = fq.heap.empty() || fq.heap == "all";
    if (point == "peak" && allHeaps && fq.siteRegex.empty() && fq.typeRegex.empty()) {
      Stmt q(db_, "SELECT log_id, peak_bytes FROM runs ORDER BY run", where());
      while (q.step()) out.push_back({q.text(0), true, q.u64(1)});
      return out;
    }
    // Every run, present where it has the point.
    Stmt q(db_,
           "SELECT r.run, r.log_id, SUM(p.live_bytes), COUNT(p.run) FROM runs r LEFT JOIN points "
           "p ON p.run = r.run AND p.point = ?1 AND (?2 = '' OR p.heap = ?2) "
           "GROUP BY r.run ORDER BY r.run",
           where());
    q.bind(1, point).bind(2, allHeaps ? std::string() : fq.heap);
    while (q.step()) {
      byRun[q.i64(0)] = out.size();
      out.push_back({q.text(1), q.i64(3) > 0, q.u64(2)});
    }
    if (fq.siteRegex.empty() && fq.typeRegex.empty()) return out;
    // A run without the point at all (any heap) has no figure; one with it and no matching row
    // has 0.
    Stmt has(db_, "SELECT DISTINCT run FROM points WHERE point = ?", where());
    has.bind(1, point);
    for (FigureValue& v : out) v.present = false, v.value = 0;
    while (has.step()) {
      auto it = byRun.find(has.i64(0));
      if (it != byRun.end()) out[it->second].present = true;
    }
    bool site = !fq.siteRegex.empty();
    replay::Regex re = replay::compileRegex(site ? fq.siteRegex : fq.typeRegex,
                                            site ? "--site" : "--type",
                                            site ? "function" : "type");
    Stmt rows(db_,
              site ? "SELECT run, function, bytes FROM sites WHERE point = ?"
                   : "SELECT run, type, bytes FROM types WHERE point = ?",
              where());
    rows.bind(1, point);
    std::unordered_map<std::string, bool> matches;
    while (rows.step()) {
      std::string name = rows.text(1);
      auto m = matches.find(name);
      if (m == matches.end()) m = matches.emplace(name, re.search(name)).first;
      if (!m->second) continue;
      auto it = byRun.find(rows.i64(0));
      if (it != byRun.end()) out[it->second].value += rows.u64(2);
    }
    return out;
  }

  // A figure of the whole run (FigureQuery::kind), every run present.
  std::vector<FigureValue> runFigure(FigureKind kind) {
    std::vector<FigureValue> out;
    std::unordered_map<int64_t, size_t> byRun;
    bool leak = kind == FigureKind::kLeakSuspects || kind == FigureKind::kGrowingSites;
    Stmt q(db_, "SELECT run, log_id, gc_count, repetitions FROM runs ORDER BY run", where());
    while (q.step()) {
      byRun[q.i64(0)] = out.size();
      // The leak finder ran only with 3 repetitions or more: a run with fewer has no leak figure.
      out.push_back({q.text(1), !leak || q.u64(3) >= 3, kind == FigureKind::kGcCount ? q.u64(2) : 0});
    }
    if (kind == FigureKind::kGcPauseP99) {
      std::vector<std::vector<uint64_t>> pauses(out.size());
      Stmt g(db_, "SELECT run, pause_ns FROM gcs", where());
      while (g.step()) {
        auto it = byRun.find(g.i64(0));
        if (it != byRun.end()) pauses[it->second].push_back(g.u64(1));
      }
      for (size_t i = 0; i < out.size(); ++i) out[i].value = pauseP99(std::move(pauses[i]));
    } else if (leak) {
      Stmt l(db_, "SELECT run, COUNT(*) FROM leaks WHERE kind = ? GROUP BY run", where());
      l.bind(1, std::string(kind == FigureKind::kLeakSuspects ? "suspect" : "site"));
      while (l.step()) {
        auto it = byRun.find(l.i64(0));
        if (it != byRun.end()) out[it->second].value = l.u64(1);
      }
    }
    return out;
  }

  std::optional<RunSummary> load(const Tag& tag) override {
    Stmt q(db_,
           "SELECT r.run, log_id, program, command_line, options, hostname, pid, start_wall_ns, "
           "duration_ns, events, allocs, frees, frames, gc_count, peak_bytes, garbage_bytes, "
           "repeating_event, repetitions FROM runs r JOIN tags t ON t.run = r.run "
           "WHERE t.key = ? AND t.value = ? ORDER BY r.run DESC LIMIT 1",
           where());
    q.bind(1, tag.key).bind(2, tag.value);
    if (!q.step()) return std::nullopt;
    RunSummary s;
    RunInfo& r = s.run;
    uint64_t run = q.u64(0);
    r.logId = q.text(1), r.program = q.text(2), r.commandLine = q.text(3), r.options = q.text(4);
    r.hostname = q.text(5), r.pid = static_cast<uint32_t>(q.u64(6)), r.startWallNs = q.i64(7);
    r.durationNs = q.u64(8), r.events = q.u64(9), r.allocs = q.u64(10), r.frees = q.u64(11);
    r.frames = q.u64(12), r.gcCount = q.u64(13), r.peakBytes = q.u64(14);
    r.garbageBytes = q.u64(15), r.repeatingEvent = q.text(16), r.repetitions = q.u64(17);
    Stmt t(db_, "SELECT key, value FROM tags WHERE run = ? ORDER BY rowid", where());
    t.bind(1, run);
    while (t.step()) r.tags.push_back({t.text(0), t.text(1)});
    Stmt g(db_, "SELECT * FROM gcs WHERE run = ? ORDER BY rowid", where());
    g.bind(1, run);
    while (g.step())
      s.gcs.push_back({static_cast<uint32_t>(g.u64(1)), g.u64(2), g.u64(3), g.u64(4), g.u64(5),
                       g.u64(6), g.u64(7)});
    Stmt p(db_, "SELECT * FROM points WHERE run = ? ORDER BY rowid", where());
    p.bind(1, run);
    while (p.step()) s.points.push_back({p.text(1), p.text(2), p.u64(3), p.u64(4)});
    Stmt si(db_, "SELECT * FROM sites WHERE run = ? ORDER BY rowid", where());
    si.bind(1, run);
    while (si.step())
      s.sites.push_back({si.text(1), si.text(2), si.text(3), si.u64(4), si.u64(5)});
    Stmt ty(db_, "SELECT * FROM types WHERE run = ? ORDER BY rowid", where());
    ty.bind(1, run);
    while (ty.step()) s.types.push_back({ty.text(1), ty.text(2), ty.u64(3), ty.u64(4)});
    Stmt c(db_, "SELECT * FROM churn WHERE run = ? ORDER BY rowid", where());
    c.bind(1, run);
    while (c.step())
      s.churn.push_back({c.text(1), c.text(2), c.u64(3), c.u64(4), c.u64(5), c.u64(6)});
    Stmt l(db_, "SELECT * FROM leaks WHERE run = ? ORDER BY rank", where());
    l.bind(1, run);
    while (l.step()) s.leaks.push_back({l.text(2), l.text(3), l.i64(4), l.text(5)});
    return s;
  }

  std::map<std::string, uint64_t> rowCounts() override {
    std::map<std::string, uint64_t> out;
    for (const char* t : {"runs", "tags", "gcs", "points", "sites", "types", "churn", "leaks"}) {
      Stmt q(db_, (std::string("SELECT COUNT(*) FROM ") + t).c_str(), where());
      q.step();
      out[t] = q.u64(0);
    }
    return out;
  }

 private:
  std::string where() const { return "store " + path_; }

  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string why = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      if (sqlite3_errcode(db_) == SQLITE_NOTADB)
        throw StoreError(path_ + " is not a heapman store (not a SQLite database): give "
                         "--store a new file or one heapman ingest wrote");
      throw StoreError(where() + ": " + why);
    }
  }

  void setUp() {
    // WAL: the journal mode is the file's, set once; a parallel opener may hold a lock for a
    // moment, and changing the mode does not wait on the busy handler in every case.
    for (int tries = 0;; ++tries) {
      char* err = nullptr;
      int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
      sqlite3_free(err);
      if (rc == SQLITE_OK) break;
      if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || tries > 600) exec("PRAGMA journal_mode=WAL");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    exec("PRAGMA synchronous=NORMAL");
    exec("BEGIN IMMEDIATE");
    try {
      Stmt other(db_,
                 "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT IN "
                 "(SELECT 'meta') AND NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = "
                 "'meta')",
                 where());
      other.step();
      if (other.i64(0) > 0)
        throw StoreError(path_ + " is a SQLite database but not a heapman store (it has no "
                         "meta table): give --store a new file or one heapman ingest wrote");
      exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      Stmt v(db_, "SELECT value FROM meta WHERE key = 'schema_version'", where());
      if (v.step()) {
        int version = std::atoi(v.text(0).c_str());
        if (version > kSchemaVersion)
          throw StoreError(path_ + " has schema version " + std::to_string(version) +
                           ", newer than this heapman's (" + std::to_string(kSchemaVersion) +
                           "): use a newer heapman");
        if (version < 1)
          throw StoreError(path_ + ": bad schema version '" + v.text(0) + "'");
      } else {
        exec(kSchema);
        exec(("INSERT INTO meta VALUES('schema_version', '" + std::to_string(kSchemaVersion) +
              "')")
                 .c_str());
      }
      v.reset();
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Store> openSqlite(const std::string& path, bool create) {
  return std::make_unique<SqliteStore>(path, create);
}

std::string maskedUrl(const std::string& where) {
  size_t scheme = where.find("://");
  if (scheme == std::string::npos) return where;
  size_t start = scheme + 3, end = where.find('/', start);
  size_t at = where.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < start) return where;
  size_t colon = where.find(':', start);
  if (colon == std::string::npos || colon > at) return where;  // a user, no password
  return where.substr(0, colon + 1) + "***" + where.substr(at);
}

std::unique_ptr<Store> Store::open(const std::string& where, bool create) {
  if (where.rfind("clickhouse://", 0) == 0) return openClickHouse(where);
  if (where.find("://") != std::string::npos)
    throw StoreError("unknown store '" + maskedUrl(where) +
                     "': give a SQLite file (runs.sqlite) or clickhouse://HOST:PORT/DB");
  return openSqlite(where, create);
}

}  // namespace heapman::store
