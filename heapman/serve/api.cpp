#include "api.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <thread>

#include "../json.h"
#include "../output.h"
#include "../session.h"
#include "../verbs.h"
#include "heapman/graph/dump_store.h"
#include "heapman/logformat/reader.h"
#include "heapman/replay/replay.h"

namespace heapman::cli::serve {

namespace fs = std::filesystem;

namespace {

enum class Kind { kJson, kText, kFile };

struct Route {
  const char* path;  // after /api/
  const char* verb;
  Kind kind;
  const char* fileOption = nullptr;  // kFile: the option naming the file the verb writes
  const char* contentType = "application/json";
  const char* extension = "";  // kFile: of that file
};

const Route kRoutes[] = {
    {"info", "info", Kind::kJson},
    {"gcs", "gcs", Kind::kJson},
    {"events", "events", Kind::kJson},
    {"blame", "blame", Kind::kJson},
    {"diff", "diff", Kind::kJson},
    {"churn", "churn", Kind::kJson},
    {"allocs", "allocs", Kind::kJson},
    {"types", "types", Kind::kJson},
    {"stacks", "stacks", Kind::kText, nullptr, "text/plain; charset=utf-8"},
    {"objects", "objects", Kind::kJson},
    {"object", "object", Kind::kJson},
    {"refs", "refs", Kind::kJson},
    {"retained", "retained", Kind::kJson},
    {"paths", "paths", Kind::kJson},
    {"leaks", "leaks", Kind::kJson},
    {"map", "map", Kind::kFile, "output", "image/png", ".png"},
    {"paths.dot", "paths", Kind::kFile, "dot", "text/vnd.graphviz; charset=utf-8", ".dot"},
    {"paths.gexf", "paths", Kind::kFile, "gexf", "application/gexf+xml", ".gexf"},
    {"graph.dot", "graph", Kind::kFile, "dot", "text/vnd.graphviz; charset=utf-8", ".dot"},
    {"graph.gexf", "graph", Kind::kFile, "gexf", "application/gexf+xml", ".gexf"},
};

// Options whose value is a point: a point the log does not have is 404, not 400.
const std::set<std::string> kPointOptions = {"at", "from", "to", "since"};

// Parameters of the server itself, not of the verb.
const std::set<std::string> kServerParams = {"token", "request"};

const Route* findRoute(const std::string& path) {
  for (const Route& r : kRoutes)
    if (path == r.path) return &r;
  return nullptr;
}

Answer error(int status, const std::string& message, const std::string& command = "") {
  Answer a;
  a.status = status;
  a.command = command;
  a.body = JsonObject().str("error", message).str("command", command).str() + "\n";
  return a;
}

// The messages a verb printed, without the "heapman VERB: " prefix and the trailing newline.
std::string messageOf(const std::string& err, const std::string& verb) {
  std::string m = err;
  std::string prefix = "heapman " + verb + ": ";
  if (m.rfind(prefix, 0) == 0) m.erase(0, prefix.size());
  while (!m.empty() && m.back() == '\n') m.pop_back();
  return m.empty() ? "the query failed" : m;
}

// This thread's session on the log, and the flag its replay polls.
thread_local std::unique_ptr<Session> tSession;
thread_local uint64_t tGeneration = 0;  // of the followed log when tSession was opened
thread_local std::atomic<bool> tCancel{false};

// The server's index of a complete log: LOG.serve.hmx (in the cache directory when the log's
// is not writable), with checkpoints every ~250 k events within three quarters of the log's
// size, where the default LOG.hmx keeps to a tenth of it. A question at a random point replays
// from the checkpoint before it: on guile's 20 M-event log a seek took 310-360 ms with the
// default index (7 checkpoints) and 75-95 ms with this one (50 checkpoints, 3.8 MiB; replay_bench
// seekseq). Built once, by the first open, like LOG.hmx.
replay::ReplayOptions serveIndex(const std::string& log) {
  replay::ReplayOptions o;
  o.indexPath = log + ".serve.hmx";
  o.checkpointEvents = 250'000;
  o.indexShare = 1;
  return o;
}

FileState fileState(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_ino),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Whether the recorder finished the log (its footer is there).
bool logComplete(const std::string& path) {
  try {
    return log::LogReader::open(path).end().complete;
  } catch (...) {
    return false;
  }
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Options whose value names a file, a directory or a log: the server opens no path a client
// gives.
bool namesPath(const DeclaredOption& d) {
  return d.value.find("FILE") != std::string::npos || d.value.find("DIR") != std::string::npos ||
         d.value.find("LOG") != std::string::npos;
}

}  // namespace

std::string shellWord(const std::string& word) {
  bool plain = !word.empty();
  for (char c : word)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_.,:/=#+@%").find(c) !=
                                                             std::string_view::npos))
      plain = false;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Api::Api(std::string log, replay::SymbolSettings symbols, fs::path scratch,
         std::chrono::milliseconds timeLimit, bool follow)
    : log_(std::move(log)),
      symbols_(std::move(symbols)),
      scratch_(std::move(scratch)),
      timeLimit_(timeLimit),
      follow_(follow),
      watchdog_([this] { watch(); }) {}

Api::~Api() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  wake_.notify_all();
  watchdog_.join();
}

void Api::watch() {
  std::unique_lock<std::mutex> g(m_);
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::seconds(1);
    for (auto& [serial, r] : running_) {
      if (r.deadline <= now)
        r.flag->store(true, std::memory_order_relaxed);
      else if (r.deadline < next)
        next = r.deadline;
    }
    wake_.wait_until(g, next);
  }
}

bool Api::cancel(const std::string& request) {
  std::lock_guard<std::mutex> g(m_);
  bool found = false;
  for (auto& [serial, r] : running_)
    if (!request.empty() && r.request == request) {
      r.flag->store(true, std::memory_order_relaxed);
      found = true;
    }
  return found;
}

void Api::openOnce(const std::atomic<bool>* cancel) {
  dumped_.clear();
  dumpChunksSeen_ = 0;
  if (logComplete(log_)) {
    // Opened with its index file (written here, once, when it is missing), before any worker
    // opens the complete log.
    follower_.reset();
    replay::ReplayOptions index = serveIndex(log_);
    auto s = Session::open(log_, replay::SymbolSettings{.symbolize = false}, cancel, true, false,
                           false, &index);
    takeIn(s->replay->reader());
    return;
  }
  // Being written: what status() says comes from the chunks alone (the workers replay them), so
  // this thread reads each new chunk's header and each new dump chunk once.
  auto reader = std::make_unique<log::LogReader>(
      log::LogReader::open(log_, log::ReadMode::kIntactPrefix));
  if (reader->chunks().empty()) throw std::runtime_error("no whole chunk yet");
  takeIn(*reader);
  follower_ = std::move(reader);
}

void Api::takeIn(const log::LogReader& reader) {
  const auto& chunks = reader.chunks();
  for (; dumpChunksSeen_ < chunks.size(); ++dumpChunksSeen_)
    if (chunks[dumpChunksSeen_].header.type == static_cast<uint16_t>(log::ChunkType::kRamDump))
      for (uint32_t gc : graph::DumpStore::gcsIn(reader, chunks[dumpChunksSeen_]))
        dumped_.insert(gc);
  std::string dumped;
  for (uint32_t gc : dumped_) dumped += (dumped.empty() ? "" : ",") + std::to_string(gc);
  {
    std::lock_guard<std::mutex> g(m_);
    dumpedGcs_ = "[" + dumped + "]";
  }
  complete_ = reader.end().complete;
}

void Api::warmUp(const std::atomic<bool>* cancel) {
  for (;;) {
    try {
      FileState before = fileState(log_);
      openOnce(cancel);
      seen_ = before;
      logBytes_ = before.bytes;
      return;
    } catch (const replay::Interrupted&) {
      throw;
    } catch (...) {
      // A log being written may not exist yet or hold no whole chunk: wait for it.
      if (!follow_ || (cancel && cancel->load())) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (cancel && cancel->load()) throw replay::Interrupted();
  }
}

void Api::follow(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    // A log being written grows; a finished one changes only when it is recorded again (the
    // recorder truncates it: heaprec run -o LOG while this follows), and is then followed anew.
    FileState now = fileState(log_);
    if (now == seen_) continue;
    try {
      using Growth = log::LogReader::Growth;
      Growth g = follower_ ? follower_->grow() : Growth::kReplaced;
      if (g == Growth::kNone) {
        if (follower_) continue;  // no chunk whole yet: the next look sees it
      } else if (g == Growth::kGrew && follower_->end().complete) {
        // The recorder wrote the footer: this thread writes the index file.
        openOnce(&stop);
      } else if (g == Growth::kGrew) {
        takeIn(*follower_);
      } else {
        openOnce(&stop);  // recorded again, or finished and recorded again
      }
    } catch (...) {
      follower_.reset();  // opened afresh at the next look
      continue;
    }
    seen_ = now;
    logBytes_ = now.bytes;
    ++generation_;
  }
}

std::string Api::status() const {
  std::string dumped;
  {
    std::lock_guard<std::mutex> g(m_);
    dumped = dumpedGcs_;
  }
  return JsonObject()
             .boolean("follow", follow_)
             .num("generation", generation_.load())
             .num("log_bytes", logBytes_.load())
             .boolean("complete", complete_.load())
             .raw("dumped_gcs", dumped)
             .str() +
         "\n";
}

Answer Api::answer(const std::string& path, const Params& params, const std::string& request) {
  const Route* route = findRoute(path);
  if (!route) {
    std::string known;
    for (const Route& r : kRoutes) known += (known.empty() ? "" : " ") + std::string(r.path);
    return error(404, "no such answer /api/" + path + " (the answers: " + known + ")");
  }
  const Verb* verb = findVerb(route->verb);
  std::map<std::string, DeclaredOption> declared;
  for (DeclaredOption& d : declaredOptions(*verb)) declared[d.name] = d;

  // The verb's command line from the parameters.
  Args args;
  std::vector<std::pair<std::string, std::string>> points;
  std::string positional;  // verbs take one at most (an address)
  bool hasTop = false;
  for (const auto& [name, value] : params) {
    if (kServerParams.count(name)) continue;
    if (value.size() > kMaxParameterBytes)
      return error(400, name + ": longer than " + std::to_string(kMaxParameterBytes) + " bytes");
    auto it = declared.find(name);
    if (it == declared.end()) {
      std::string names;
      for (const auto& [n, d] : declared)
        if (!d.logOption && !namesPath(d)) names += (names.empty() ? "" : ", ") + n;
      return error(400, "'" + name + "' is not a parameter of /api/" + path + " (its parameters: " +
                            names + ")");
    }
    const DeclaredOption& d = it->second;
    if (d.logOption)
      return error(400, "'" + name + "' is an option of the log: give it to heapman serve");
    if (namesPath(d))
      return error(400, "'" + name + "' names a file: the server reads and writes none for a " +
                            "client" +
                            (name == "csv" || name == "json" ? " (its answers are JSON)"
                             : name == "exclude"             ? " (give patterns as exclude-add)"
                                                             : ""));
    if (d.value.empty()) {
      if (!value.empty())
        return error(400, "'" + name + "' is a flag: give it without a value (" + name + "=)");
      args.push_back("--" + name);
      continue;
    }
    if (name == "top") {
      hasTop = true;
      size_t n = 0;
      bool digits = !value.empty() && value.size() < 10 &&
                    value.find_first_not_of("0123456789") == std::string::npos;
      if (digits) n = std::stoul(value);
      if (!digits || n == 0 || n > kMaxTop)
        return error(400, "top: give a count from 1 to " + std::to_string(kMaxTop) + " ('" +
                              value.substr(0, 40) + "')");
    }
    if (kPointOptions.count(name)) points.emplace_back(name, value);
    if (d.positional) {  // the object's address: after the options, as the CLI reads it
      if (!positional.empty())
        return error(400, "'" + name + "' given twice");
      positional = value;
      continue;
    }
    args.push_back("--" + name);
    args.push_back(value);
  }
  if (!positional.empty()) {
    if (positional[0] == '-') return error(400, "'" + positional + "' is not an address");
    args.push_back(positional);
  }
  if (declared.count("top") && !hasTop) {
    args.push_back("--top");
    args.push_back(std::to_string(kDefaultTop));
  }
  fs::path file;
  if (route->kind == Kind::kFile) {
    file = scratch_ / ("answer-" + std::to_string(++serial_) + route->extension);
    args.push_back(std::string("--") + route->fileOption);
    args.push_back(file.string());
  } else if (route->kind == Kind::kJson && declared.count("json")) {
    args.push_back("--json");
    args.push_back("-");
  }
  std::string command = "heapman " + std::string(verb->name) + " " + shellWord(log_);
  if (!symbols_.symbolize && declared.count("no-symbols") &&
      takesEffect(*verb, "no-symbols", args))
    command += " --no-symbols";
  if (symbols_.symbolize && declared.count("debug-dir") && takesEffect(*verb, "debug-dir", args)) {
    for (const std::string& d : symbols_.debugDirs) command += " --debug-dir " + shellWord(d);
    for (const auto& [from, to] : symbols_.pathMaps)
      command += " --path-map " + shellWord(from + "=" + to);
  }
  for (const std::string& a : args)
    command += " " + shellWord(!file.empty() && a == file.string()
                                   ? "answer" + std::string(route->extension)
                                   : a);

  // This thread's session, opened on its first request. Following, it grows with the log:
  // each growth costs the events appended, and the names given so far stay.
  Console console;
  ConsoleScope scope(console);
  auto open = [&]() -> bool {
    try {
      tSession.reset();
      tGeneration = generation_.load();
      bool complete = !follow_ || complete_.load();
      replay::ReplayOptions index = serveIndex(log_);
      tSession = Session::open(log_, symbols_, &tCancel, complete, false, !complete, &index);
      return true;
    } catch (...) {
      tSession.reset();
      reportError("serve");
      return false;
    }
  };
  auto grow = [&]() -> bool {
    tGeneration = generation_.load();
    // A complete log changes only when it is recorded again.
    if (!tSession->replay->reader().end().complete) try {
        if (tSession->replay->grow() != log::LogReader::Growth::kReplaced) return true;
      } catch (...) {
      }
    return open();
  };
  if (tSession && follow_ && tGeneration != generation_.load() && !grow())
    return error(500, messageOf(console.err, "serve"), command);
  if (!tSession && !open()) return error(500, messageOf(console.err, "serve"), command);
  // Following, a point another worker's answer named (the page's end of the log) may lie past
  // what this one has taken in: what was written since is taken in first.
  if (follow_ && !points.empty() && !tSession->replay->reader().end().complete) {
    bool beyond = false;
    for (const auto& [name, value] : points) try {
        (void)tSession->replay->resolve(replay::parsePoint(value));
      } catch (const replay::ReplayError&) {
        beyond = true;
      }
    if (beyond && !grow()) return error(500, messageOf(console.err, "serve"), command);
  }
  for (const auto& [name, value] : points) {
    replay::Point point;
    try {
      point = replay::parsePoint(value);
    } catch (const replay::ReplayError& e) {
      return error(400, name + "=" + value + ": " + e.what(), command);
    }
    try {
      (void)tSession->replay->resolve(point);
    } catch (const replay::ReplayError& e) {
      const replay::LogTables& t = tSession->replay->tables();
      std::string range = "seq:" + std::to_string(t.firstSeq) + " to seq:" +
                          std::to_string(t.endSeq > t.firstSeq ? t.endSeq - 1 : t.firstSeq) +
                          (t.gcs.empty() ? std::string(", no GC")
                                         : ", gc:" + std::to_string(t.gcs.front().number) +
                                               " to gc:" + std::to_string(t.gcs.back().number));
      return error(404, name + "=" + value + ": " + e.what() + " (this log: " + range + ")",
                   command);
    }
  }

  // Run it, cancellable by name and by the time limit.
  tCancel.store(false, std::memory_order_relaxed);
  uint64_t serial = ++serial_;
  {
    std::lock_guard<std::mutex> g(m_);
    running_[serial] = {&tCancel, std::chrono::steady_clock::now() + timeLimit_, request};
  }
  wake_.notify_all();
  int rc = runInSession(*verb, *tSession, args);
  {
    std::lock_guard<std::mutex> g(m_);
    running_.erase(serial);
  }
  bool cancelled = tCancel.exchange(false, std::memory_order_relaxed);
  Answer a;
  a.command = command;
  if (rc == kExitOk) {
    a.contentType = route->contentType;
    if (route->kind == Kind::kFile) {
      a.body = readFile(file);
    } else {
      a.body = std::move(console.out);
    }
  } else if (cancelled && rc == kExitInterrupted) {
    a = error(503, "cancelled: the request was cancelled or ran longer than " +
                       std::to_string(timeLimit_.count() / 1000) + " s",
              command);
  } else {
    a = error(rc == kExitUsage ? 400 : 500, messageOf(console.err, verb->name), command);
  }
  if (!file.empty()) {
    std::error_code ec;
    fs::remove(file, ec);
  }
  return a;
}

}  // namespace heapman::cli::serve
