// A store of run summaries: SQLite by default (a file, nothing to start), a ClickHouse server for
// a farm (clickhouse://HOST:PORT/DB). Both behind this interface; what is store-independent
// (the summary, the change-point, the budget's rules) lives beside it.
//
// Writing a run is all or nothing: SQLite writes it in one transaction (WAL, a busy timeout so
// that parallel ingests wait for each other); ClickHouse inserts one block per table and then a
// row in its run-completed table, and readers see only completed runs. A run already in the store
// (the same log id) is not written again.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "heapman/store/summary.h"

namespace heapman::store {

// The store cannot be opened, read or written (a file that is not a store, a newer schema, a
// server that does not answer). The message says what to do; heapman exits 1.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kSchemaVersion = 1;

// One run as trend lists it.
struct StoredRun {
  std::string logId;
  int64_t startWallNs = 0;
  std::map<std::string, std::string> tags;
};

// The figure trend follows across runs. With `point` empty: the run's peak live bytes. With a
// point: live bytes there (all heaps, or `heap`); with a site or type regex, the bytes of the
// blame rows (types) at the point whose function (type) matches, summed. A `kind` other than
// kLive is a figure of the whole run instead (point, heap and the regexes are not used): its GC
// count, its GC pauses' p99 (nearest rank, ns, as the budget's [gc_pause]), the count of its
// leak suspects (growing containers) or of its growing sites (heapman leaks; a run whose custom
// events repeat fewer than 3 times has no leak figure: the leak finder did not run).
enum class FigureKind { kLive, kGcCount, kGcPauseP99, kLeakSuspects, kGrowingSites };

struct FigureQuery {
  std::string point, heap;
  std::string siteRegex, typeRegex;
  FigureKind kind = FigureKind::kLive;
};

struct FigureValue {
  std::string logId;
  bool present = false;  // the run has the point (a run without it has no figure)
  uint64_t value = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // "clickhouse://[USER[:PASSWORD]@]HOST:PORT/DB" (the password %XX-escaped where it holds ':',
  // '@' or '/'; without one, HEAPMAN_CLICKHOUSE_PASSWORD's; never printed: maskedUrl), else a
  // SQLite file, made when missing if `create` (ingest;
  // the readers, trend and check, refuse a file that is not there: a typo would otherwise leave
  // an empty store behind). Throws StoreError.
  static std::unique_ptr<Store> open(const std::string& where, bool create = true);

  // Writes a run; false (nothing written) when its log id is already stored, or when it is a
  // partial run (a log cut short: partialOf) whose recording's complete run is. A complete run
  // replaces the partial runs of its recording (SQLite deletes them in its transaction;
  // ClickHouse's readers no longer see them).
  virtual bool put(const RunSummary& s) = 0;
  virtual bool has(const std::string& logId) = 0;
  // Every completed run.
  virtual std::vector<StoredRun> runs() = 0;
  // The figure for each completed run.
  virtual std::vector<FigureValue> figure(const FigureQuery& q) = 0;
  // The summary of the run tagged key=value (the latest ingested when several are); nullopt
  // when none is.
  virtual std::optional<RunSummary> load(const Tag& tag) = 0;
  // Rows per table (tests and the bench): "runs", "tags", "gcs", "points", "sites", "types",
  // "churn", "leaks".
  virtual std::map<std::string, uint64_t> rowCounts() = 0;
  virtual std::string describe() const = 0;  // for messages: the file, or the server and database
};

// A store's URL fit to print: the password of clickhouse://USER:PASSWORD@... as ***.
std::string maskedUrl(const std::string& where);

std::unique_ptr<Store> openSqlite(const std::string& path, bool create = true);
std::unique_ptr<Store> openClickHouse(const std::string& url);

}  // namespace heapman::store
