// Output of the replay verbs: aligned tables for people, CSV (RFC 4180, header row) and JSON for
// tools. A Report is a few header lines, warnings and one or more named tables.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "options.h"

namespace heapman::cli {

struct Column {
  std::string name;      // header; JSON key (lower-cased, spaces -> '_')
  bool numeric = false;  // right-aligned; a JSON number
};

struct Table {
  std::string name;  // JSON key of the rows, CSV selector ("functions", "types", ...)
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

struct Report {
  std::string query;
  std::vector<std::pair<std::string, std::string>> meta;  // shown as "key  value" lines
  std::vector<std::string> warnings;
  std::vector<Table> tables;
};

struct OutputOptions {
  std::string csv, json;  // file or "-"; empty: none
  std::string csvTable;   // which table goes to CSV; empty: the first
  bool privateFiles = false;  // the answer holds the program's memory: files made 0600
};

// --csv FILE|- and --json FILE|-; with more than one table name, also --table NAME (which one
// --csv writes; the first by default). The verb's table in verbs() says that --table needs --csv.
void addOutputOptions(po::options_description& opts, const std::vector<std::string>& tables = {});
OutputOptions outputOptions(const VerbOptions& vm);

// Writes the report: tables to stdout unless CSV or JSON go there; CSV and JSON where asked.
// Throws OutputError when stdout or a file cannot be written, UsageError (before writing
// anything) when the answer has no table named csvTable.
void emit(const Report& r, const OutputOptions& o);

// A write that failed (full disk, closed pipe, no permission). what(): "writing OUTPUT failed:
// REASON", OUTPUT being the file name or "standard output". The verbs exit 1 with it.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Where the verbs' text goes: stdout and stderr, or, on a thread that holds a ConsoleScope
// (heapman serve's workers), two strings. A verb's answer is then the same bytes whether a
// terminal or the server asked for it.
struct Console {
  std::string out, err;
};
class ConsoleScope {
 public:
  explicit ConsoleScope(Console& c);
  ~ConsoleScope();
  ConsoleScope(const ConsoleScope&) = delete;
  ConsoleScope& operator=(const ConsoleScope&) = delete;

 private:
  Console* previous_;
};
bool consoleCaptured();  // this thread's text goes to a Console
// One line of diagnostics ('\n' added) to stderr or the console's err.
void sayLine(const std::string& line);

// Writes text to a file ("-": stdout), checking every step (stdout is flushed, a file closed).
// `privateFile`: the text holds the program's memory, so a file is made 0600 like the log.
// Throws OutputError.
void writeOutput(const std::string& where, const std::string& text, bool privateFile = false);
// Today's date in UTC, YYYY-MM-DD (dates in the files written: GEXF's lastmodifieddate).
std::string todayUtc();
// Flushes stdout; throws OutputError if it or an earlier write to it failed (clearing the error,
// so the shell can go on).
void flushStdout();

std::string textTable(const Table& t);
std::string csvTable(const Table& t);
std::string csvField(const std::string& s);
std::string jsonRows(const Table& t);

std::string num(uint64_t v);
std::string snum(int64_t v);  // with a sign: +12, -3, 0
std::string percent(double share);

}  // namespace heapman::cli
