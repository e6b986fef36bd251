// The index file: writing, validating and loading (layout in index_file.h).
#include "index_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "heapman/logformat/private_file.h"
#include "heapman/logformat/ram_dump.h"
#include "serial.h"

namespace heapman::replay {

using namespace heapman::log;
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'M', 'I', 'N', 'D', 'E', 'X', '1'};
constexpr uint64_t kHeadHashBytes = 64 * 1024;

uint64_t le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
void putLe(uint8_t* p, uint64_t v, int n = 8) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

const char* fileKind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

struct Identity {
  uint64_t size = 0, headHash = 0, lastChunk = 0, chunks = 0;
};

Identity identityOf(const LogReader& r) {
  Identity id;
  auto bytes = r.bytes();
  id.size = bytes.size();
  id.headHash = XXH3_64bits(bytes.data(), std::min<uint64_t>(bytes.size(), kHeadHashBytes));
  id.chunks = r.chunks().size();
  if (!r.chunks().empty()) id.lastChunk = r.chunks().back().header.payloadChecksum;
  return id;
}

}  // namespace

std::vector<std::string> indexCandidates(const std::string& primary, const std::string& logName) {
  std::vector<std::string> out{primary};
  std::string cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    cache = std::string(x) + "/heapman";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    cache = std::string(h) + "/.cache/heapman";
  }
  if (cache.empty()) return out;
  std::error_code ec;
  fs::path abs = fs::absolute(logName, ec);
  std::string key = ec ? logName : abs.lexically_normal().string();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  out.push_back(cache + "/" + fs::path(logName).filename().string() + "-" + hex + ".hmx");
  return out;
}

// ---- Index ------------------------------------------------------------------------------------

namespace {

// The NAME.tmp.PID being written, removed by SIGINT/SIGTERM (then the signal's earlier action
// runs: the process still dies of it). One build at a time per process; async-signal-safe.
char gSpillPath[4096];
volatile sig_atomic_t gSpillArmed = 0;
struct sigaction gOldInt, gOldTerm;
bool gIntHooked = false, gTermHooked = false;

void onSpillSignal(int sig) {
  if (gSpillArmed) ::unlink(gSpillPath);
  gSpillArmed = 0;
  ::sigaction(sig, sig == SIGINT ? &gOldInt : &gOldTerm, nullptr);
  ::raise(sig);  // delivered with the earlier action once this handler returns
}

void guardSpill(const std::string& tmp) {
  if (tmp.size() >= sizeof gSpillPath) return;
  std::memcpy(gSpillPath, tmp.c_str(), tmp.size() + 1);
  gSpillArmed = 1;
  struct sigaction sa {};
  sa.sa_handler = onSpillSignal;
  sigemptyset(&sa.sa_mask);
  for (auto [sig, old, hooked] : {std::tuple{SIGINT, &gOldInt, &gIntHooked},
                                  std::tuple{SIGTERM, &gOldTerm, &gTermHooked}}) {
    struct sigaction cur {};
    ::sigaction(sig, nullptr, &cur);
    if (cur.sa_handler == SIG_IGN || *hooked) continue;  // ignored: nothing kills the build
    *hooked = ::sigaction(sig, &sa, old) == 0;
  }
}

void unguardSpill() {
  gSpillArmed = 0;
  if (gIntHooked) ::sigaction(SIGINT, &gOldInt, nullptr);
  if (gTermHooked) ::sigaction(SIGTERM, &gOldTerm, nullptr);
  gIntHooked = gTermHooked = false;
}

// Removes TARGET.tmp.PID files left by builds that were killed (SIGKILL, a crash): those whose
// process is gone. A PID that is alive (a build in progress, or a reused PID) keeps its file.
void removeStaleSpills(const fs::path& target) {
  std::error_code ec;
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string prefix = target.filename().string() + ".tmp.";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(it->path(), ec);
  }
}

bool writeAll(int fd, const uint8_t* p, size_t n) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Replay::Index::~Index() {
  if (map) ::munmap(const_cast<uint8_t*>(map), mapBytes);
  dropSpill();
}

bool Replay::Index::openSpill(const std::string& target) {
  std::error_code ec;
  fs::path t(target);
  if (t.has_parent_path()) fs::create_directories(t.parent_path(), ec);
  removeStaleSpills(t);
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  // O_NONBLOCK: a FIFO in the way fails (ENXIO) instead of blocking.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, kPrivateMode);  // it caches dump data
  if (fd < 0) return false;
  guardSpill(tmp);
  uint8_t zeros[kIndexHeaderBytes] = {};
  if (!writeAll(fd, zeros, sizeof zeros)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    unguardSpill();
    return false;
  }
  spillFd = fd;
  spillPath = tmp;
  spillTarget = target;
  spillBytes = kIndexHeaderBytes;
  return true;
}

void Replay::Index::dropSpill() {
  if (spillFd < 0) return;
  ::close(spillFd);
  ::unlink(spillPath.c_str());
  unguardSpill();
  spillFd = -1;
}

void Replay::Index::addCheckpoint(uint64_t chunk, uint64_t position, uint64_t liveObjects,
                                  bool delta, const std::vector<uint8_t>& stored,
                                  uint64_t rawSize) {
  uint64_t hash = XXH3_64bits(stored.data(), stored.size());
  if (spillFd >= 0) {
    if (writeAll(spillFd, stored.data(), stored.size())) {
      checkpoints.push_back(
          {chunk, position, liveObjects, spillBytes, stored.size(), rawSize, hash, delta});
      spillBytes += stored.size();
      return;
    }
    // The disk filled up: the checkpoints written so far are lost; keep the rest in memory.
    dropSpill();
    checkpoints.clear();
  }
  if (memory.empty()) memory.resize(kIndexHeaderBytes);
  checkpoints.push_back(
      {chunk, position, liveObjects, memory.size(), stored.size(), rawSize, hash, delta});
  memory.insert(memory.end(), stored.begin(), stored.end());
}

std::vector<uint8_t> Replay::Index::checkpointBytes(size_t i) const {
  const CheckpointRef& c = checkpoints.at(i);
  std::span<const uint8_t> stored(base() + c.offset, c.stored);
  std::vector<uint8_t> raw;
  if (XXH3_64bits(stored.data(), stored.size()) != c.hash ||
      !detail::lz4Decompress(stored, c.raw, raw))
    throw DataError("index checkpoint " + std::to_string(i) +
                    " is damaged; delete the index file to rebuild it");
  return raw;
}

// ---- Tables -----------------------------------------------------------------------------------

void writeChurnSpans(detail::Out& o, const std::vector<ChurnSpan>& spans) {
  o.var(spans.size());
  for (const ChurnSpan& s : spans) {
    o.var(s.from);
    o.var(s.infos.size());
    uint32_t prev = 0;
    for (uint32_t i : s.infos) {
      o.var(i - prev);
      prev = i;
    }
    for (uint64_t c : s.counts) o.var(c);
  }
}

std::vector<uint8_t> writeTables(const LogTables& t) {
  detail::Out o;
  o.var(t.firstSeq);
  o.var(t.endSeq);
  o.var(t.eventCount);
  o.var(t.allocs);
  o.var(t.frees);
  o.var(t.reallocs);
  o.var(t.lostEvents);
  o.var(t.endTimeNs);
  o.var(t.gcs.size());
  for (const GcRecord& g : t.gcs) {
    o.var(g.number);
    o.var(static_cast<uint64_t>(static_cast<int64_t>(g.generation) + 1));
    o.u8(g.ended);
    for (uint64_t v : {g.beginSeq, g.endSeq, g.beginTimeNs, g.endTimeNs, g.heapSizeBefore,
                       g.heapSizeAfter, g.freeBytes, g.pauseNs, g.liveObjects, g.liveBytes,
                       g.collectedObjects, g.collectedBytes, g.unknownCollected})
      o.var(v);
  }
  o.var(t.events.size());
  for (const EventRecord& e : t.events) {
    o.var(e.nameId);
    o.var(e.occurrence);
    o.var(e.seq);
    o.var(e.timeNs);
    o.var(e.thread);
    o.var(e.payloadBytes);
  }
  o.var(t.frames.size());
  for (const FrameRecord& f : t.frames) {
    o.var(f.frame);
    o.var(f.seq);
    o.var(f.timeNs);
  }
  o.var(t.lost.size());
  for (const LostRecord& l : t.lost) {
    o.var(l.seq);
    o.var(l.count);
    o.var(l.lostThread);
    o.str(l.reason);
  }
  for (const auto* m : {&t.strings, &t.types, &t.methods}) {
    o.var(m->size());
    for (const auto& [id, s] : *m) {
      o.var(id);
      o.str(s);
    }
  }
  o.var(t.stacks.size());
  for (const StackNodeDef& s : t.stacks) {
    o.u8(static_cast<uint8_t>(s.defined | s.managed << 1));
    o.var(s.parent);
    o.var(s.frame);
  }
  o.var(t.modules.size());
  for (const ModuleLoad& m : t.modules) {
    o.var(m.ev.seq);
    o.var(m.ev.timeNs);
    o.var(m.ev.thread);
    o.str(m.path);
    o.var(m.base);
    o.var(m.size);
    o.bytes(m.buildId);
    o.var(m.segments.size());
    for (const ModuleSegment& s : m.segments) {
      o.var(s.vaddr);
      o.var(s.memSize);
      o.var(s.flags);
    }
  }
  o.var(t.threads.size());
  for (const ThreadStart& x : t.threads) {
    o.var(x.ev.seq);
    o.var(x.ev.timeNs);
    o.var(x.index);
    o.var(x.osTid);
    o.str(x.name);
    o.var(x.stackLow);
    o.var(x.stackHigh);
  }
  o.var(t.jitRanges.size());
  for (const JitRange& j : t.jitRanges) {
    o.var(j.ev.seq);
    o.var(j.methodId);
    o.var(j.codeStart);
    o.var(j.codeSize);
  }
  o.var(t.infos.size());
  for (const AllocInfo& a : t.infos) {
    o.u8(static_cast<uint8_t>(a.heap));
    o.var(a.thread);
    o.var(a.size);
    o.var(a.actualSize - a.size);
    o.var(a.stackId);
    o.var(a.typeId);
  }
  o.u8(t.dumpCopiesIndexed);
  o.var(t.dumpCopies.size());
  for (const DumpCopy& c : t.dumpCopies) {
    o.u64(c.hash);
    o.var(c.chunk);
    o.var(c.offset);
  }
  o.u8(t.churnSpansIndexed);
  writeChurnSpans(o, t.churnSpans);
  o.u8(t.seriesIndexed);
  o.var(t.seriesEvery);
  o.var(t.series.size());
  uint64_t limit = 0;
  for (const SeriesPoint& p : t.series) {
    o.var(p.limit - limit);
    limit = p.limit;
    o.u8(p.gc);
    for (size_t h = 0; h < p.bytes.size(); ++h) o.var(p.bytes[h]), o.var(p.objects[h]);
    o.var(p.peak);
  }
  o.var(t.births.size());
  for (uint64_t b : t.births) o.var(b);
  o.var(t.addressBlocks.size());
  uint64_t block = 0;
  for (uint64_t b : t.addressBlocks) o.var(b - block), block = b;
  return std::move(o.data());
}

LogTables readTables(std::span<const uint8_t> raw) {
  detail::In in(raw);
  LogTables t;
  t.firstSeq = in.var();
  t.endSeq = in.var();
  t.eventCount = in.var();
  t.allocs = in.var();
  t.frees = in.var();
  t.reallocs = in.var();
  t.lostEvents = in.var();
  t.endTimeNs = in.var();
  t.gcs.resize(in.count());
  for (GcRecord& g : t.gcs) {
    g.number = in.var32();
    g.generation = static_cast<int32_t>(static_cast<int64_t>(in.var()) - 1);
    g.ended = in.u8() != 0;
    for (uint64_t* v : {&g.beginSeq, &g.endSeq, &g.beginTimeNs, &g.endTimeNs, &g.heapSizeBefore,
                        &g.heapSizeAfter, &g.freeBytes, &g.pauseNs, &g.liveObjects, &g.liveBytes,
                        &g.collectedObjects, &g.collectedBytes, &g.unknownCollected})
      *v = in.var();
  }
  t.events.resize(in.count());
  for (EventRecord& e : t.events) {
    e.nameId = in.var32();
    e.occurrence = in.var32();
    e.seq = in.var();
    e.timeNs = in.var();
    e.thread = in.var32();
    e.payloadBytes = in.var32();
  }
  t.frames.resize(in.count());
  for (FrameRecord& f : t.frames) {
    f.frame = in.var();
    f.seq = in.var();
    f.timeNs = in.var();
  }
  t.lost.resize(in.count());
  for (LostRecord& l : t.lost) {
    l.seq = in.var();
    l.count = in.var();
    l.lostThread = in.var32();
    l.reason = in.str();
  }
  for (auto* m : {&t.strings, &t.types, &t.methods}) {
    uint64_t n = in.count();
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t id = in.var32();
      (*m)[id] = in.str();
    }
  }
  t.stacks.resize(in.count());
  for (StackNodeDef& s : t.stacks) {
    uint8_t f = in.u8();
    s.defined = f & 1;
    s.managed = f & 2;
    s.parent = in.var32();
    s.frame = in.var();
  }
  t.modules.resize(in.count());
  for (ModuleLoad& m : t.modules) {
    m.ev.seq = in.var();
    m.ev.timeNs = in.var();
    m.ev.thread = in.var32();
    m.path = in.str();
    m.base = in.var();
    m.size = in.var();
    m.buildId = in.bytes();
    m.segments.resize(in.count());
    for (ModuleSegment& s : m.segments) {
      s.vaddr = in.var();
      s.memSize = in.var();
      s.flags = in.var32();
    }
  }
  t.threads.resize(in.count());
  for (ThreadStart& x : t.threads) {
    x.ev.seq = in.var();
    x.ev.timeNs = in.var();
    x.index = in.var32();
    x.osTid = in.var32();
    x.name = in.str();
    x.stackLow = in.var();
    x.stackHigh = in.var();
  }
  t.jitRanges.resize(in.count());
  for (JitRange& j : t.jitRanges) {
    j.ev.seq = in.var();
    j.methodId = in.var32();
    j.codeStart = in.var();
    j.codeSize = in.var();
  }
  t.infos.resize(in.count());
  for (AllocInfo& a : t.infos) {
    a.heap = static_cast<HeapKind>(in.u8() & 7);
    a.thread = in.var32();
    a.size = in.var();
    a.actualSize = a.size + in.var();
    a.stackId = in.var32();
    a.typeId = in.var32();
  }
  t.dumpCopiesIndexed = in.u8() & 1;
  t.dumpCopies.resize(in.count());
  for (DumpCopy& c : t.dumpCopies) {
    c.hash = in.u64();
    c.chunk = in.var32();
    c.offset = in.var32();
  }
  t.churnSpansIndexed = in.u8() & 1;
  t.churnSpans.resize(in.count());
  for (ChurnSpan& s : t.churnSpans) {
    s.from = in.var();
    s.infos.resize(in.count());
    uint64_t info = 0;
    for (uint32_t& i : s.infos) {
      info += in.var();
      if (info >= t.infos.size()) throw CursorOverrun("a churn span's info");
      i = static_cast<uint32_t>(info);
    }
    s.counts.resize(s.infos.size() * ChurnSpan::kColumns);
    for (uint64_t& c : s.counts) c = in.var();
  }
  t.seriesIndexed = in.u8() & 1;
  t.seriesEvery = in.var();
  t.series.resize(in.count());
  uint64_t limit = 0;
  for (SeriesPoint& p : t.series) {
    limit += in.var();
    p.limit = limit;
    p.gc = in.u8() & 1;
    for (size_t h = 0; h < p.bytes.size(); ++h) p.bytes[h] = in.var(), p.objects[h] = in.var();
    p.peak = in.var();
  }
  t.births.resize(in.count());
  for (uint64_t& b : t.births) b = in.var();
  t.addressBlocks.resize(in.count());
  uint64_t block = 0;
  for (uint64_t& b : t.addressBlocks) b = block += in.var();
  if (!in.atEnd()) throw CursorOverrun("bytes after the tables");
  return t;
}

void indexDumpCopies(const LogReader& reader, LogTables& t, uint64_t budgetBytes) {
  t.dumpCopies.clear();
  t.dumpCopiesIndexed = false;
  // Every stored segment's hash -> its first copy, and the hashes some later segment refers to.
  std::unordered_map<uint64_t, DumpCopy> first;
  std::unordered_set<uint64_t> referred;
  std::vector<uint8_t> buf;
  bool any = false;
  try {
    for (const ChunkRef& c : reader.chunks()) {
      if (c.header.type != static_cast<uint16_t>(ChunkType::kRamDump)) continue;
      any = true;
      log::forEachRamSegment(reader.payload(c, buf), [&](const log::RamSegmentHeader& h) {
        if (h.stored)
          first.try_emplace(h.hash, DumpCopy{h.hash, static_cast<uint32_t>(c.number), h.bytesAt});
        else
          referred.insert(h.hash);
      });
    }
  } catch (const std::exception&) {
    return;  // a damaged dump chunk: the graph reads the dumps itself and reports it
  }
  if (!any) return;
  for (uint64_t h : referred) {
    auto it = first.find(h);
    if (it != first.end()) t.dumpCopies.push_back(it->second);
  }
  if (t.dumpCopies.size() * 16 > budgetBytes) {  // ~16 bytes each in the tables
    t.dumpCopies.clear();
    return;
  }
  std::sort(t.dumpCopies.begin(), t.dumpCopies.end(),
            [](const DumpCopy& a, const DumpCopy& b) { return a.hash < b.hash; });
  t.dumpCopiesIndexed = true;
}

// ---- Writing and loading ------------------------------------------------------------------------

bool Replay::writeIndexFile(const std::string& path, std::string* error) {
  Index& ix = *index_;
  bool spilled = ix.spillFd >= 0;
  if (spilled && path != ix.spillTarget) {
    *error = path + ": the index was started elsewhere";
    return false;
  }
  if (!spilled && ix.memory.empty()) ix.memory.resize(kIndexHeaderBytes);
  std::vector<uint8_t> raw = writeTables(tables_);
  std::vector<uint8_t> stored = detail::lz4Compress(raw);
  uint64_t tablesOffset = spilled ? ix.spillBytes : ix.memory.size();
  detail::Out dir;
  dir.u32(static_cast<uint32_t>(ix.checkpoints.size()));
  for (const Index::CheckpointRef& c : ix.checkpoints)
    for (uint64_t v : {c.chunk, c.position, c.liveObjects, c.offset, c.stored, c.raw, c.hash,
                       uint64_t{c.delta}})
      dir.u64(v);
  for (uint64_t v : {tablesOffset, uint64_t{stored.size()}, uint64_t{raw.size()},
                     uint64_t{XXH3_64bits(stored.data(), stored.size())}})
    dir.u64(v);
  uint64_t dirOffset = tablesOffset + stored.size();
  const std::vector<uint8_t>& d = dir.data();

  Identity id = identityOf(reader_);
  uint8_t h[kIndexHeaderBytes] = {};
  std::memcpy(h, kMagic, 8);
  putLe(h + 8, kIndexVersion, 4);
  putLe(h + 12, kIndexHeaderBytes, 4);
  putLe(h + 16, id.size);
  putLe(h + 24, id.headHash);
  putLe(h + 32, id.lastChunk);
  putLe(h + 40, id.chunks);
  putLe(h + 48, options_.checkpointEvents);
  putLe(h + 56, dirOffset);
  putLe(h + 64, d.size());
  putLe(h + 72, XXH3_64bits(d.data(), d.size()));
  putLe(h + 80, options_.indexShare);
  putLe(h + 88, XXH3_64bits(h, 88));

  std::string tmp;
  int fd;
  if (spilled) {
    tmp = ix.spillPath;
    fd = ix.spillFd;
    ix.spillFd = -1;  // ours to finish now
  } else {
    std::error_code ec;
    fs::path target(path);
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    removeStaleSpills(target);
    tmp = path + ".tmp." + std::to_string(::getpid());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, kPrivateMode);
    if (fd < 0) {
      *error = path + ": " + std::strerror(errno);
      return false;
    }
    guardSpill(tmp);
  }
  bool ok = (spilled || writeAll(fd, h, sizeof h)) &&
            (spilled || writeAll(fd, ix.memory.data() + kIndexHeaderBytes,
                                 ix.memory.size() - kIndexHeaderBytes)) &&
            writeAll(fd, stored.data(), stored.size()) && writeAll(fd, d.data(), d.size()) &&
            (!spilled || ::pwrite(fd, h, sizeof h, 0) == static_cast<ssize_t>(sizeof h));
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(ok ? errno : savedErrno);
    ::unlink(tmp.c_str());
    unguardSpill();
    if (spilled) ix.checkpoints.clear();  // their bytes are gone with the spill
    return false;
  }
  unguardSpill();
  ix.fileBytes = dirOffset + d.size();
  if (spilled) {
    // Read the checkpoints back through a mapping of the finished file.
    int rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    void* m = rfd >= 0 ? ::mmap(nullptr, ix.fileBytes, PROT_READ, MAP_PRIVATE, rfd, 0) : MAP_FAILED;
    if (rfd >= 0) ::close(rfd);
    if (m == MAP_FAILED) {
      ix.checkpoints.clear();
    } else {
      ix.map = static_cast<const uint8_t*>(m);
      ix.mapBytes = ix.fileBytes;
    }
  }
  return true;
}

bool Replay::loadIndexFile(const std::string& path, std::string* why) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = errno == ENOENT ? "missing" : std::string("unreadable: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool statted = ::fstat(fd, &st) == 0;
  if (statted && !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = std::string(kNotRegular) + " (" + fileKind(st.st_mode) +
           "): not used; remove it to keep the index there";
    return false;
  }
  if (!statted || st.st_size < static_cast<off_t>(kIndexHeaderBytes)) {
    ::close(fd);
    *why = "corrupt: shorter than its header";
    return false;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) {
    *why = std::string("unreadable: ") + std::strerror(errno);
    return false;
  }
  auto ix = std::make_unique<Index>();
  ix->map = static_cast<const uint8_t*>(m);
  ix->mapBytes = size;
  ix->fileBytes = size;
  const uint8_t* h = ix->map;
  if (std::memcmp(h, kMagic, 8) != 0) {
    *why = "corrupt: not a HeapMan index";
    return false;
  }
  if (le(h + 88) != XXH3_64bits(h, 88)) {
    *why = "corrupt: header checksum";
    return false;
  }
  if ((le(h + 8) & 0xFFFFFFFF) != kIndexVersion) {
    *why = "stale: index version " + std::to_string(le(h + 8) & 0xFFFFFFFF);
    return false;
  }
  Identity id = identityOf(reader_);
  if (le(h + 16) != id.size || le(h + 24) != id.headHash || le(h + 32) != id.lastChunk ||
      le(h + 40) != id.chunks) {
    *why = "stale: the log changed since it was indexed";
    return false;
  }
  if (le(h + 48) != options_.checkpointEvents) {
    *why = "stale: built with a checkpoint interval of " + std::to_string(le(h + 48)) + " events";
    return false;
  }
  if (le(h + 80) != options_.indexShare) {
    *why = "stale: built with an index share of " + std::to_string(le(h + 80));
    return false;
  }
  uint64_t dirOffset = le(h + 56), dirBytes = le(h + 64);
  if (dirOffset > size || dirBytes > size - dirOffset ||
      XXH3_64bits(h + dirOffset, dirBytes) != le(h + 72)) {
    *why = "corrupt: directory";
    return false;
  }
  try {
    detail::In dir({h + dirOffset, dirBytes});
    uint32_t n = dir.u32();
    if (n > dirBytes / 64) throw CursorOverrun("checkpoint count");
    auto blobOk = [&](uint64_t off, uint64_t stored, uint64_t hash) {
      return off >= kIndexHeaderBytes && off <= dirOffset && stored <= dirOffset - off &&
             XXH3_64bits(h + off, stored) == hash;
    };
    for (uint32_t i = 0; i < n; ++i) {
      Index::CheckpointRef c;
      for (uint64_t* v : {&c.chunk, &c.position, &c.liveObjects, &c.offset, &c.stored, &c.raw,
                          &c.hash})
        *v = dir.u64();
      uint64_t kind = dir.u64();
      c.delta = kind == 1;
      if (kind > 1 || (i == 0 && c.delta) || !blobOk(c.offset, c.stored, c.hash) ||
          c.chunk > recordChunks_.size() ||
          (!ix->checkpoints.empty() && c.position < ix->checkpoints.back().position)) {
        *why = "corrupt: checkpoint " + std::to_string(i);
        return false;
      }
      ix->checkpoints.push_back(c);
    }
    uint64_t off = dir.u64(), stored = dir.u64(), raw = dir.u64(), hash = dir.u64();
    std::vector<uint8_t> tablesRaw;
    if (!blobOk(off, stored, hash) || !detail::lz4Decompress({h + off, stored}, raw, tablesRaw)) {
      *why = "corrupt: tables";
      return false;
    }
    LogTables t = readTables(tablesRaw);
    if (t.infos.size() > kMaxInfos) throw CursorOverrun("too many infos");
    tables_ = std::move(t);
  } catch (const CursorOverrun& e) {
    *why = std::string("corrupt: ") + e.what();
    return false;
  }
  index_ = std::move(ix);
  return true;
}

}  // namespace heapman::replay
