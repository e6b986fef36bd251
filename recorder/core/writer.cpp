// The writer thread: drains the threads' rings in sequence order, interns stacks and names,
// converts time stamps and encodes everything with logformat's LogWriter.
//
// It runs with the reentrancy guard set for its whole life, so its own allocations (LogWriter,
// maps) go straight to the real malloc, and with every signal blocked.
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "descriptors.h"
#include "gc_events.h"
#include "heapman/logformat/bytes.h"
#include "heapman/logformat/writer.h"
#include "modules.h"
#include "recorder.h"
#include "tracked_set.h"

namespace heapman::rec {

namespace {

using namespace heapman::log;

std::string readFile(const char* path) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// A managed frame as the stack table keys it: its MethodDef id with this bit set.
constexpr uint64_t kManagedFrame = uint64_t{1} << 63;
// Object segments of a RAM dump are cut at these address boundaries (see Kind::kRamDump).
constexpr uint64_t kDumpPage = 4096;

// Stacks as a trie of (parent, frame) nodes, with a cache from whole-stack hash to leaf. A frame
// with kManagedFrame set is a managed one (a MethodDef id).
class StackTable {
 public:
  uint32_t intern(const uint64_t* frames, uint32_t n, LogWriter& log) {
    if (n == 0) return 0;
    uint64_t h = XXH3_64bits(frames, n * sizeof(uint64_t));
    CacheEntry& slot = cache_[h & (kCacheSize - 1)];
    if (slot.hash == h && matches(slot.leaf, frames, n)) return slot.leaf;
    auto it = byHash_.find(h);
    if (it != byHash_.end() && matches(it->second, frames, n)) {
      slot = {h, it->second};
      return it->second;
    }
    uint32_t parent = 0;
    for (uint32_t i = n; i-- > 0;) {  // from the outermost frame to the leaf
      Key k{parent, frames[i]};
      auto c = children_.find(k);
      if (c == children_.end()) {
        auto id = static_cast<uint32_t>(nodes_.size());
        nodes_.push_back({parent, frames[i]});
        children_.emplace(k, id);
        log.write(StackNode{id, parent, frames[i] & ~kManagedFrame, (frames[i] & kManagedFrame) != 0});
        parent = id;
      } else {
        parent = c->second;
      }
    }
    byHash_[h] = parent;
    slot = {h, parent};
    return parent;
  }

 private:
  struct Node {
    uint32_t parent;
    uint64_t frame;
  };
  struct Key {
    uint32_t parent;
    uint64_t frame;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (k.frame * 0x9E3779B97F4A7C15ull) ^ (uint64_t{k.parent} * 0xC2B2AE3D27D4EB4Full);
    }
  };
  bool matches(uint32_t id, const uint64_t* frames, uint32_t n) const {
    for (uint32_t i = 0; i < n; ++i) {
      if (id == 0 || nodes_[id].frame != frames[i]) return false;
      id = nodes_[id].parent;
    }
    return id == 0;
  }

  // Most events hit a stack seen recently: a direct-mapped cache answers them without the map.
  struct CacheEntry {
    uint64_t hash = 0;
    uint32_t leaf = 0;
  };
  static constexpr size_t kCacheSize = 16384;
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(kCacheSize);
  std::vector<Node> nodes_{{0, 0}};  // id 0: the empty stack
  std::unordered_map<Key, uint32_t, KeyHash> children_;
  std::unordered_map<uint64_t, uint32_t> byHash_;
};

// Runtime handles (MonoClass*, MonoMethod*) to log ids: a direct-mapped cache in front of a hash
// map, since nearly every managed allocation asks for one.
class HandleMap {
 public:
  uint32_t find(uint64_t handle) {
    Entry& c = cache_[(handle * 0x9E3779B97F4A7C15ull) >> 52];
    if (c.handle == handle && handle) return c.id;
    auto it = map_.find(handle);
    if (it == map_.end()) return 0;
    c = {handle, it->second};
    return it->second;
  }
  // The id of a new handle (ids count from 1); 0 if the handle is known already.
  uint32_t add(uint64_t handle) {
    auto [it, fresh] = map_.emplace(handle, static_cast<uint32_t>(map_.size() + 1));
    return fresh ? it->second : 0;
  }

 private:
  struct Entry {
    uint64_t handle = 0;
    uint32_t id = 0;
  };
  std::vector<Entry> cache_ = std::vector<Entry>(4096);
  std::unordered_map<uint64_t, uint32_t> map_;
};

// The log file, through its protected descriptor (descriptors.h): every write checks that the
// descriptor is still the log's file, so that a program that closed it behind the hooks' back (a
// raw system call) and reused the number never gets log bytes in its file; the log is then
// opened again by its path and written on where it stopped.
class LogFileSink : public Sink {
 public:
  bool write(const void* data, size_t n) override {
    auto* p = static_cast<const uint8_t*>(data);
    for (bool reopened = false;;) {
      int err = 0;
      {
        LogWrite w;
        if (w.same()) {
          while (n > 0) {
            ssize_t k = ::write(w.fd(), p, n);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
              err = k < 0 ? errno : EIO;
              break;
            }
            p += k;
            n -= static_cast<size_t>(k);
            written_ += static_cast<uint64_t>(k);
          }
          if (n == 0) return true;
          if (err != EBADF) {
            error_ = err == EIO ? "write returned 0" : std::strerror(err);
            return false;
          }
        }
      }
      // The descriptor was closed under the hooks (or names another file now): once per write.
      if (reopened || !reopenLog(g.output, written_)) {
        error_ = std::string("the program closed the log's file descriptor, and opening the log "
                             "again failed: ") +
                 (reopened ? "it was closed again" : std::strerror(errno));
        return false;
      }
      reopened = true;
    }
  }
  std::string error() const override { return error_; }

 private:
  std::string error_;
  uint64_t written_ = 0;  // bytes of the log written: where a reopened descriptor goes on
};

class Writer {
 public:

  // The log's header and the modules loaded at start (before every event): once, by the
  // first writer thread.
  void open(ModuleMap initialModules) {
    Header h = header();
    log_ = std::make_unique<LogWriter>(sink_, h);
    calibrate();
    applyModules(std::move(initialModules), 0);
  }

  // The writer thread's rounds, until State::stop (then it finishes the log) or State::pause
  // (then it writes out what it can and returns; a later thread goes on with this object).
  void run() {
    for (;;) {
      bool stopping = g.stop.load(std::memory_order_acquire) ||
                      g.pause.load(std::memory_order_acquire);
      // Loads that bypass the dlopen hook (glibc's own NSS and iconv modules): a slow rescan.
      // Not once stopping: a dying process's threads wait where they are (flushForCrash), one
      // perhaps in a module's constructor, holding the loader's lock the scan would need.
      if (!stopping && monotonicNs() - lastRescanNs_ >= kRescanIntervalNs) {
        lastRescanNs_ = monotonicNs();
        rescanModules();
      }
      calibrate();
      populateAhead();
      if (!stopping && stepAsideForCollection()) continue;
      // Everything committed before t0 is below the watermark taken after it, but for events
      // of a thread that was busy then (it took its number before t0 and commits after).
      const uint64_t t0 = __rdtsc();
      if (drainBelow(watermark(), /*mayYield=*/!stopping)) publishFront(t0);
      if (stopping) break;
      // Close the open chunk every kFlushIntervalNs, so that a killed program loses at most
      // that much more than the writer's lag (bounded by State::lagDeadline).
      if (uint64_t now = monotonicNs(); now - lastFlushNs_ >= kFlushIntervalNs) {
        drainBelow(watermark());
        log_->flush();
        lastFlushNs_ = now;
        checkWriter();
      }
      uint32_t w = g.wake.load(std::memory_order_acquire);
      timespec timeout{0, 1000000};  // 1 ms: also the longest an event waits in a ring
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.wake), FUTEX_WAIT_PRIVATE, w, &timeout,
              nullptr, 0);
    }
    if (!g.stop.load(std::memory_order_acquire)) {  // paused (pauseWriter)
      drainBelow(watermark());
      log_->flush();
      checkWriter();
      return;
    }
    if (g.crashing.load(std::memory_order_acquire))
      drainForCrash();
    else
      drainBelow(watermark());
    log_->finish();
    checkWriter();
    if (ramDumps_.count && getenv(env::kStats))
      say("%llu RAM dumps, %.1f MiB copied in %.1f ms under the collector's lock (%.2f ms per MiB)",
          static_cast<unsigned long long>(ramDumps_.count), ramDumps_.bytes / 1048576.0,
          ramDumps_.copyNs / 1e6,
          ramDumps_.bytes ? ramDumps_.copyNs / 1e6 / (ramDumps_.bytes / 1048576.0) : 0.0);
    if (getenv(env::kStats)) {
      // The writer's own CPU time: what it costs the program on a machine with no core to spare,
      // and a steadier figure to compare encoder changes by than the program's run time.
      timespec cpu{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
      double ms = cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6;
      say("writer thread: %.1f ms of CPU for %llu records (%.1f ns per record); stepped aside "
          "for %llu collections, %.1f ms (%llu rounds cut short)",
          ms, static_cast<unsigned long long>(nextSeq_), nextSeq_ ? ms * 1e6 / nextSeq_ : 0.0,
          static_cast<unsigned long long>(aside_.count), aside_.ns / 1e6,
          static_cast<unsigned long long>(aside_.drainsCut));
      say("threads waited for room in their rings %llu times, %.1f ms in all; for the writer "
          "to catch up (%llu ms behind) %llu times, %.1f ms in all",
          static_cast<unsigned long long>(g.fullWaits.load()), g.fullWaitNs.load() / 1e6,
          static_cast<unsigned long long>(kMaxLagNs / 1000000),
          static_cast<unsigned long long>(g.lagWaits.load()), g.lagWaitNs.load() / 1e6);
      if (g.unwind == State::Unwind::kAuto)
        say("stacks: %llu unwound by libunwind (a rule or a chain the walk could not follow), "
            "%llu unwind rules read from .eh_frame",
            static_cast<unsigned long long>(g.unwindFallbacks.load()),
            static_cast<unsigned long long>(g.ruleMisses.load()));
    }
    if (const TrackedSet::Stats& st = tracked_.stats(); st.sweeps && getenv(env::kStats))
      say("%llu sweeps tested %llu objects in %.1f ms on the writer thread (%.1f ns per object)",
          static_cast<unsigned long long>(st.sweeps), static_cast<unsigned long long>(st.objects),
          st.ns / 1e6, st.objects ? static_cast<double>(st.ns) / st.objects : 0.0);
    g.writerDone.store(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.writerDone), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
  }

 private:
  Header header() {
    Header h;
    h.recorderVersion = "heaprec " HEAPMAN_VERSION;
    h.pid = static_cast<uint32_t>(g.pid);
    h.parentPid = static_cast<uint32_t>(g.parentPid);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) h.executable.assign(exe, static_cast<size_t>(n));
    std::string cmd = readFile("/proc/self/cmdline");
    for (size_t at = 0; at < cmd.size();) {
      size_t end = cmd.find('\0', at);
      if (end == std::string::npos) end = cmd.size();
      h.commandLine.push_back(cmd.substr(at, end - at));
      at = end + 1;
    }
    h.startWallTimeNs = g.wallNs0;
    h.startClockNs = g.ns0;
    h.pointerSize = sizeof(void*);
    if (g.recordNative)
      h.runtimes.push_back({Runtime::Kind::kNativeMalloc, std::string("glibc ") + gnu_get_libc_version()});
    if (g.bdwgcVersion[0]) h.runtimes.push_back({Runtime::Kind::kBdwgc, g.bdwgcVersion});
    if (g.monoVersion[0]) h.runtimes.push_back({Runtime::Kind::kMono, g.monoVersion});
    const char* unwind = g.unwind == State::Unwind::kDwarf             ? "dwarf"
                         : g.unwind == State::Unwind::kFramePointers ? "fp"
                                                                     : "auto";
    h.options = {{"depth", std::to_string(g.depth)},
                 {"unwind", unwind},
                 {"ring_bytes", std::to_string(g.ringBytes)},
                 {"time_resolution_ns", std::to_string(g.timeResolutionNs)},
                 {"alloc_time_every", std::to_string(g.allocTimeEveryRunning)}};
    if (g.bdwgcVersion[0] || g.monoVersion[0])
      h.options.push_back({"ram_dumps", g.ramDumpsText[0] ? g.ramDumpsText : "off"});
    if (g.gcInteriorPointers >= 0)  // the heap graph follows interior pointers only if it is 1
      h.options.push_back({"gc_all_interior_pointers", std::to_string(g.gcInteriorPointers)});
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    h.hostname = host;
    return h;
  }

  // Time stamp counter to ns since start: a line through the start point and the latest
  // (tsc, CLOCK_MONOTONIC) pair, refreshed every round. Times are kept to the resolution the
  // header states (default 10 us), which keeps TIME records rare in the log.
  void calibrate() {
    uint64_t t = __rdtsc(), ns = monotonicNs();
    if (t > g.tsc0 + 1000000 && ns > g.ns0)
      nsPerTick_ = static_cast<double>(ns - g.ns0) / static_cast<double>(t - g.tsc0);
    lagTicks_ = static_cast<uint64_t>(static_cast<double>(kMaxLagNs) / nsPerTick_);
    bucketSpan_ = 0;  // the line moved
    g.timeEpoch.fetch_add(1, std::memory_order_relaxed);  // allocations read the clock again
  }
  // Consecutive events mostly fall in one resolution step: the ticks that surely map to the last
  // step computed (a tick of margin at either end for rounding) answer without a division.
  uint64_t timeOf(uint64_t tsc) {
    if (tsc - bucketLow_ < bucketSpan_) return bucketNs_;
    if (tsc <= g.tsc0) return 0;
    auto ns = static_cast<uint64_t>(static_cast<double>(tsc - g.tsc0) * nsPerTick_);
    uint64_t t = ns / g.timeResolutionNs * g.timeResolutionNs;
    auto low = static_cast<uint64_t>(static_cast<double>(t) / nsPerTick_) + 1;
    auto high = static_cast<uint64_t>(static_cast<double>(t + g.timeResolutionNs) / nsPerTick_);
    bucketLow_ = g.tsc0 + low;
    bucketSpan_ = high > low + 1 ? high - 1 - low : 0;
    bucketNs_ = t;
    return t;
  }

  // While the program collects, the writer waits (State::collecting): the collector marks on
  // every core (libgc's parallel marker threads), and a writer draining meanwhile takes one from
  // it. That costs more than the core's share: libgc's markers wait for each other spinning, so
  // a marker descheduled for the writer can hold the others up for a scheduler tick. The rings
  // keep what arrives meanwhile (little: the world is mostly stopped; and the writer being
  // behind is no reason to drain: it cost more pause than it saved, PERFORMANCE.md). It drains
  // anyway when a thread waits for room (wakeWriter wakes this wait too), when asked to flush
  // to stop, and after kMaxAsideNs in one collection. True if it waited (the caller starts a
  // new round).
  bool stepAsideForCollection() {
    if (!yieldToCollection()) return false;
    uint64_t start = monotonicNs();
    bool waited = false;
    ++aside_.count;
    while (yieldToCollection() && !g.stop.load(std::memory_order_acquire)) {
      timespec timeout{0, 10000000};  // a safety net: the collection's end wakes it
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.collecting), FUTEX_WAIT_PRIVATE, 1,
              &timeout, nullptr, 0);
      waited = true;
    }
    aside_.ns += monotonicNs() - start;
    return waited;
  }
  static constexpr uint64_t kMaxAsideNs = 100'000'000;
  // A collection is running, the writer has not yet stepped aside kMaxAsideNs for it (a flag
  // left set, say by recording stopping between a collection's start and end, must not slow the
  // writer for good), and no thread waits for room.
  bool yieldToCollection() {
    if (!g.collecting.load(std::memory_order_acquire)) {
      collectingSince_ = 0;
      return false;
    }
    uint64_t now = monotonicNs();
    if (!collectingSince_) collectingSince_ = now;
    return now - collectingSince_ < kMaxAsideNs && !g.ringFull.load(std::memory_order_relaxed);
  }
  uint64_t collectingSince_ = 0;  // when the writer first saw the current collection

  // Faults in each ring's pages ahead of its producer, on its first lap: a page's first write
  // costs a fault and the zeroing of the page, ~2.5 us here, which would otherwise fall on the
  // program's thread (8 192 of them for a 32 MiB ring, one per 64 allocations). The writer keeps
  // the populated part at twice what the producer wrote (at least 256 KiB), so a thread that
  // records little keeps little resident. MADV_POPULATE_WRITE is Linux 5.14; without it the
  // producer faults its pages as before.
  static void populateAhead() {
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23;
#endif
    // At least kMinAhead ahead once a thread has written a little; a thread that has written
    // next to nothing (every thread registers as it starts: many never allocate) gets 16 KiB.
    constexpr uint64_t kMinAhead = 256u << 10;
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next) {
      if (r->populated >= r->capacity) continue;
      uint64_t head = r->head.load(std::memory_order_acquire);
      uint64_t ahead = std::min(kMinAhead, (16u << 10) + 16 * head);
      uint64_t want = (std::max(2 * head, head + ahead) + 4095) & ~uint64_t{4095};
      want = std::min(r->capacity, want);  // pages: data is page-aligned, capacity 64 KiB or more
      if (want <= r->populated) continue;
      if (madvise(r->data + r->populated, want - r->populated, MADV_POPULATE_WRITE) != 0) {
        r->populated = r->capacity;  // not supported: stop trying
        continue;
      }
      r->populated = want;
    }
  }

  // No numbered event with a smaller sequence number, nor an unnumbered one that goes before
  // such a number, can still appear in a ring (recorder.h, ring.h).
  static uint64_t watermark() {
    uint64_t w = g.seq.load(std::memory_order_acquire);
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
      if (r->busy.load(std::memory_order_acquire))
        w = std::min(w, r->nextSeq.load(std::memory_order_acquire));
    return w;
  }

  // A ring being drained: its head as of the round's start (everything below the watermark is
  // committed by then, recorder.h) and the writer's own tail, published in batches.
  struct Cursor {
    Ring* ring;
    uint64_t head;
    uint64_t tail;
    uint64_t published;
  };

  // The next unconsumed record, skipping padding; null when the snapshot is used up.
  static RawEvent* peek(Cursor& c) {
    while (c.tail != c.head) {
      auto* e = reinterpret_cast<RawEvent*>(c.ring->data + (c.tail & (c.ring->capacity - 1)));
      if (e->kind != Kind::kPad) return e;
      c.tail += e->size;
    }
    return nullptr;
  }
  static void publish(Cursor& c) {
    if (c.tail != c.published) c.ring->tail.store(c.published = c.tail, std::memory_order_release);
  }

  // Merge order (ring.h): by number; an unnumbered event (an allocation) before the numbered event
  // whose number it read. Each ring is in this order already.
  static uint64_t orderOf(const RawEvent* e) { return 2 * e->seq + (e->seqs != 0); }

  // Writes every committed event that goes before the numbered event `bound`, merging the rings:
  // numbered events below it and unnumbered ones that read at most `bound`. An unnumbered event
  // that read `bound` or less can still be in flight (its `busy` store may become visible after
  // the writer looked): it is written when it arrives, after events that did not happen before
  // it (a thread that learnt about the allocation got its own number after it was committed).
  // `mayYield`: a round that may stop early when a collection starts (the rest waits
  // in the rings for the next round; stepAsideForCollection).
  // Threads may record up to kMaxLagNs past `tsc`, the time of the oldest event still to be
  // written (or a time before it): State::lagDeadline, and a wake-up for those waiting on it.
  // Waiting threads are woken once the backlog is down to two thirds of the limit, not at every
  // step: woken a few records at a time, many threads would take the cores from the writer.
  void publishFront(uint64_t tsc) {
    if (g.crashing.load(std::memory_order_relaxed)) return;  // the threads wait for good
    const uint64_t deadline = tsc + lagTicks_;
    g.lagDeadline.store(deadline, std::memory_order_release);
    g.lagRounds.fetch_add(1, std::memory_order_seq_cst);
    if (g.lagWaiters.load(std::memory_order_seq_cst) && deadline > __rdtsc() + lagTicks_ / 3)
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.lagRounds), FUTEX_WAKE_PRIVATE, INT_MAX,
              nullptr, nullptr, 0);
  }

  // Every 4096 records of a long round: the front moves on (the threads waiting for it go on)
  // and the open chunk is closed on time, so that what a SIGKILL loses stays bounded in time
  // even while the writer works through a backlog.
  void midRound(uint64_t tsc) {
    publishFront(tsc);
    uint64_t now = monotonicNs();
    if (now - lastFlushNs_ >= kFlushIntervalNs) {
      log_->flush();
      lastFlushNs_ = now;
    }
  }
  uint64_t drained_ = 0;

  // True when everything below `bound` was written (not cut short to step aside).
  bool drainBelow(uint64_t bound, bool mayYield = false) {
    const uint64_t limit = 2 * bound + 1;
    uint32_t sinceCheck = 0;
    bool aside = false;
    cursors_.clear();
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next) {
      uint64_t tail = r->tail.load(std::memory_order_relaxed);
      cursors_.push_back({r, r->head.load(std::memory_order_acquire), tail, tail});
    }
    for (;;) {
      // The ring whose next event goes first, and the order of the next event of any other: the
      // best ring's events are written up to that one without looking at the others again (a
      // thread allocating alone costs one peek per event, not one per ring).
      Cursor* best = nullptr;
      uint64_t bestOrder = limit, nextOrder = limit;
      for (Cursor& c : cursors_) {
        RawEvent* e = peek(c);
        if (!e) continue;
        uint64_t o = orderOf(e);
        if (o < bestOrder) {
          nextOrder = bestOrder;
          bestOrder = o;
          best = &c;
        } else if (o < nextOrder) {
          nextOrder = o;
        }
      }
      if (!best || aside) break;
      // Equal orders (unnumbered events of two threads that read the same number) may go in
      // either order; each ring's own order is kept.
      for (RawEvent* e = peek(*best); e && orderOf(e) <= nextOrder && orderOf(e) < limit;
           e = peek(*best)) {
        // The producer wrote these lines on another core: ask for them a few records ahead.
        __builtin_prefetch(best->ring->data + ((best->tail + 512) & (best->ring->capacity - 1)));
        convert(best->ring, e);
        if ((++drained_ & 4095) == 0) midRound(e->tsc);
        best->tail += e->size;
        if (best->tail - best->published >= (64u << 10)) publish(*best);
        if (mayYield && ++sinceCheck == 256) {
          sinceCheck = 0;
          if (yieldToCollection()) {
            aside = true;
            break;
          }
        }
      }
    }
    if (!aside) g.ringFull.store(0, std::memory_order_relaxed);
    aside_.drainsCut += aside;
    for (Cursor& c : cursors_) publish(c);
    reapClosedRings();
    checkWriter();
    return !aside;
  }

  // Frees the rings of exited threads once drained. The list head stays (producers push there).
  static void reapClosedRings() {
    Ring* prev = g.rings.load(std::memory_order_acquire);
    if (!prev) return;
    for (Ring* r = prev->next; r;) {
      Ring* next = r->next;
      if (r->closed.load(std::memory_order_acquire) &&
          r->tail.load(std::memory_order_relaxed) == r->head.load(std::memory_order_acquire)) {
        prev->next = next;
        ringDestroy(r);
      } else {
        prev = r;
      }
      r = next;
    }
  }

  // The process is dying of a signal (flushForCrash): every record committed before it is
  // written. The other threads wait at their next record, so the rings stop growing; a thread
  // between taking its number and committing finishes within microseconds unless it is stopped
  // itself (by a collector that stopped the world, say): it is waited for, up to half a second.
  // Then everything committed is written, and the records still in flight are counted as lost.
  void drainForCrash() {
    const uint64_t deadline = monotonicNs() + 500'000'000;
    for (;;) {
      drainBelow(watermark());
      if (!busyRings() || monotonicNs() > deadline) break;
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
    drainBelow(kEverything);
    if (uint64_t inFlight = busyRings())
      log_->write(Lost{{nextSeq_++, timeOf(__rdtsc()), kRecorderThread}, inFlight,
                       kRecorderThread, "records in flight when the program died of a signal"});
  }
  // A bound above every sequence number drainBelow can meet (2 * bound + 1 must not overflow).
  static constexpr uint64_t kEverything = UINT64_MAX / 4;
  static uint64_t busyRings() {
    uint64_t n = 0;
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
      n += r->busy.load(std::memory_order_acquire) != 0;
    return n;
  }

  // Takes a sequence number, writes everything before it, then calls fn(), which writes the
  // writer's own events in its place.
  template <class Fn>
  void inject(Fn&& fn) {
    uint64_t first = g.seq.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
      uint64_t w = watermark();
      drainBelow(std::min(w, first));
      if (w >= first) break;
      timespec ts{0, 20000};
      nanosleep(&ts, nullptr);
    }
    fn();
  }

  // Modules loaded or unloaded without the dlopen/dlclose hooks (glibc's NSS and iconv modules),
  // logged in order: everything numbered before is written first. Skipped while a hooked
  // dlopen/dlclose runs (State::modulesBusy), or when one ran during the scan: the scan could see
  // a module before the allocations its constructors made, or before the hook's own record;
  // the next rescan tries again.
  void rescanModules() {
    uint32_t gen = g.modulesGen.load(std::memory_order_seq_cst);
    if (g.modulesBusy.load(std::memory_order_seq_cst) != 0) return;
    inject([&] {
      ModuleMap now = scanModules();
      if (g.modulesBusy.load(std::memory_order_seq_cst) == 0 &&
          g.modulesGen.load(std::memory_order_seq_cst) == gen)
        applyModules(std::move(now), timeOf(__rdtsc()));
    });
  }

  // Logs the difference between the modules known so far and `now`.
  void applyModules(ModuleMap now, uint64_t timeNs) {
    for (auto& [base, m] : modules_) {
      if (now.count(base)) continue;
      log_->write(ModuleUnload{{nextSeq_++, timeNs, kRecorderThread}, base});
    }
    for (auto& [base, m] : now) {
      auto old = modules_.find(base);
      if (old != modules_.end() && old->second.path == m.path) continue;
      m.ev = {nextSeq_++, timeNs, kRecorderThread};
      log_->write(m);
    }
    modules_ = std::move(now);
  }

  void convert(Ring* r, RawEvent* e) {
    if (!log_->ok()) return;
    // The log's sequence numbers: one per record that has one, in the order written.
    const uint64_t timeNs = timeOf(e->tsc);
    auto ev = [&] { return EventCommon{nextSeq_++, timeNs, r->index}; };
    auto stack = [&]() -> uint32_t {
      uint32_t& slot = r->writerSlotStack[stackSlotOf(e->flags)];
      if (!(e->flags & kSameStack))
        slot = e->flags & kManagedFrames ? managedStack(e)
                                         : stacks_.intern(framesOf(e), e->nframes, *log_);
      return slot;
    };
    auto heap = static_cast<HeapKind>(e->heap & 7);
    switch (e->kind) {
      case Kind::kAlloc:
        // Not through an Alloc: see LogWriter::writeAlloc.
        log_->writeAlloc(ev(), e->a,
                         AllocInfo{heap, e->b, e->c, stack(), e->extra ? typeId(e->extra) : 0});
        if (tracked(heap)) tracked_.add(trackedKey(e));
        break;
      case Kind::kFree:
        stack();
        log_->write(Free{ev(), heap, e->a});
        if (tracked(heap)) tracked_.noteFree(trackedKey(e));
        break;
      case Kind::kRealloc:
        log_->write(Realloc{ev(), heap, e->a, e->extra, e->b, e->c, stack(), 0});
        break;
      case Kind::kEvent: {
        uint32_t stackId = stack();
        std::string name(reinterpret_cast<const char*>(extraOf(e)), e->a);
        auto [it, fresh] = names_.emplace(name, static_cast<uint32_t>(names_.size() + 1));
        if (fresh) log_->write(LogString{it->second, name});
        const uint8_t* payload = extraOf(e) + e->a;
        log_->write(CustomEvent{ev(), it->second, std::vector<uint8_t>(payload, payload + e->b),
                                stackId});
        break;
      }
      case Kind::kFrame:
        log_->write(FrameMark{ev(), e->a});
        break;
      case Kind::kThreadStart: {
        std::string comm = readFile(("/proc/self/task/" + std::to_string(e->a) + "/comm").c_str());
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        log_->write(ThreadStart{ev(), r->index, static_cast<uint32_t>(e->a), comm, e->b, e->c});
        break;
      }
      case Kind::kThreadStop:
        log_->write(ThreadStop{ev(), r->index});
        break;
      case Kind::kLost:
        log_->write(Lost{ev(), e->a, r->index, "the thread's ring stayed full"});
        break;
      case Kind::kModules:
        applyModules(deserializeModules(extraOf(e), e->extraLen), timeNs);
        break;
      case Kind::kGcBegin:
        log_->write(GcBegin{ev(), static_cast<uint32_t>(e->a), e->b, -1});
        break;
      case Kind::kGcEnd:
        log_->write(GcEnd{ev(), static_cast<uint32_t>(e->a), e->b, e->c, e->extra});
        break;
      case Kind::kMarks: {
        // The tracked objects the collector did not mark. No sequence number of its own in the
        // log: the Collected record takes effect at its GC's GcEnd.
        auto* snap = reinterpret_cast<MarkSnapshot*>(e->a);
        std::vector<uint64_t> collected;
        tracked_.sweep(*snap, g.gcDebugOffset.load(std::memory_order_relaxed), collected);
        log_->write(Collected{static_cast<uint32_t>(e->b), std::move(collected)});
        if (auto* old = static_cast<MarkSnapshot*>(g.spareMarks.exchange(snap, std::memory_order_acq_rel)))
          munmap(old, old->mapLength);
        break;
      }
      case Kind::kRootRange:
        log_->write(RootRange{ev(), e->c != 0, e->a, e->b, static_cast<RootSource>(e->heap),
                              std::string(reinterpret_cast<const char*>(extraOf(e)), e->extraLen)});
        break;
      case Kind::kRootSet: {
        RootSet rs{ev(), static_cast<uint32_t>(e->a), {}};
        const auto* entries = reinterpret_cast<const RootSetEntry*>(extraOf(e));
        for (uint32_t i = 0; i < e->extraLen / sizeof(RootSetEntry); ++i)
          rs.roots.push_back({entries[i].address, entries[i].size,
                              static_cast<RootSource>(entries[i].source), entries[i].thread});
        log_->write(rs);
        break;
      }
      case Kind::kRamDump: {
        auto* d = reinterpret_cast<RamDump*>(e->a);
        // The objects' bytes are back to back in list order. Runs of adjacent objects are
        // written cut at 4 KiB address boundaries, not one segment per object: a page whose
        // live objects did not change since an earlier dump has the same bytes, so it costs a
        // reference of ~14 bytes, where per-object segments cost that per object (guile's
        // 16-byte pairs: a log 178x larger than without dumps).
        // The runs are written in address order, whatever order the collector's block walk
        // listed them in (bdwgc's walks each 4 MiB of blocks downwards): a reader then finds
        // the bytes of the objects in the order it scans them, one sequential read (10 M
        // objects: every run out of order before).
        uint64_t at = d->objectBytesOffset;
        std::vector<DumpRun>& runs = dumpRuns_;
        runs.clear();
        for (uint32_t i = 0; i < d->objectCount; ++i) {
          const RamDump::Object& o = d->objects()[i];
          if (!runs.empty() && o.address == runs.back().address + runs.back().length) {
            runs.back().length += o.size;
            ++runs.back().count;
          } else {
            runs.push_back({o.address, o.size, at, i, 1});
          }
          at += o.size;
        }
        auto byAddress = [](const DumpRun& x, const DumpRun& y) { return x.address < y.address; };
        if (!std::is_sorted(runs.begin(), runs.end(), byAddress))
          std::sort(runs.begin(), runs.end(), byAddress);
        for (const DumpRun& run : runs)
          for (uint64_t off = 0; off < run.length;) {
            uint64_t address = run.address + off;
            uint64_t n = std::min(run.length - off, kDumpPage - address % kDumpPage);
            log_->writeRam(SegmentKind::kObject, d->gcNumber, address,
                           {d->base() + run.at + off, static_cast<size_t>(n)});
            off += n;
          }
        writeObjectLists(*d);
        for (uint32_t i = 0; i < d->rangeCount; ++i) {
          const RamDump::Range& rg = d->ranges()[i];
          log_->writeRam(static_cast<SegmentKind>(rg.kind), d->gcNumber, rg.address,
                         {d->base() + rg.offset, static_cast<size_t>(rg.length)});
        }
        ramDumps_.count++;
        ramDumps_.copyNs += d->copyNs;
        ramDumps_.bytes += d->copyBytes;
        if (auto* old = static_cast<RamDump*>(g.spareDump.exchange(d, std::memory_order_acq_rel)))
          munmap(old, old->mapLength);
        break;
      }
      case Kind::kTypeDef:
        if (uint32_t id = types_.add(e->a)) log_->write(typeDef(id, e));
        break;
      case Kind::kMethodDef: {
        uint32_t id = methods_.add(e->a);
        if (id)
          log_->write(MethodDef{id, std::string(reinterpret_cast<const char*>(extraOf(e)), e->extraLen),
                                e->a});
        else
          id = methods_.find(e->a);
        if (e->c) log_->write(JitRange{ev(), id, e->b, e->c});
        break;
      }
      case Kind::kGcHandle:
        log_->write(GcHandle{ev(), static_cast<uint32_t>(e->a), static_cast<GcHandleType>(e->heap),
                             e->b, e->c != 0});
        break;
      case Kind::kFinalize:
        log_->write(Finalize{ev(), e->a});
        break;
      case Kind::kNop:  // a failed realloc: no record, but its frames fill a stack slot
        stack();
        break;
      case Kind::kPad:
        break;
    }
  }

  // Objects that die by collection, whose births the sweep needs (uncollectable ones die only by
  // an explicit free, native ones are not collected).
  static bool tracked(HeapKind h) {
    return h != HeapKind::kNative && h != HeapKind::kGcUncollectable;
  }
  // An Alloc's or Free's key in the tracked set (tracked_set.h): bit 0 marks a GC_debug_* object.
  static uint64_t trackedKey(const RawEvent* e) {
    return e->a | ((e->flags & kDebugObject) ? 1 : 0);
  }

  // Where each dumped object starts and ends (the pages above hold only their bytes): one
  // kObjectList segment per 4 KiB page in which objects start, its bytes varint pairs (start -
  // previous start, or - the page for the first; size) in address order. A page whose objects
  // did not change has the same list: a reference, like its bytes. Written run by run in
  // dumpRuns_'s order (sorted by the caller); an object out of order (overlapping runs: a
  // runtime's list gone wrong) starts a new list, which readers merge.
  void writeObjectLists(const RamDump& d) {
    ByteBuffer& list = objectList_;
    list.clear();
    uint64_t page = 0, previous = 0;
    auto flush = [&] {
      if (!list.empty())
        log_->writeRam(SegmentKind::kObjectList, d.gcNumber, page, {list.data(), list.size()});
      list.clear();
    };
    // In the order of the runs just written (address order): readers then read the objects
    // in order and need not sort them.
    for (const DumpRun& run : dumpRuns_)
      for (uint32_t i = run.first; i < run.first + run.count; ++i) {
        const RamDump::Object& o = d.objects()[i];
        uint64_t p = o.address & ~(kDumpPage - 1);
        if (list.empty() || p != page || o.address < previous) {
          flush();
          page = p, previous = p;
        }
        list.putVarint(o.address - previous);
        list.putVarint(o.size);
        previous = o.address;
      }
    flush();
  }

  // A kTypeDef event (ring.h) as the log's TypeDef.
  static TypeDef typeDef(uint32_t id, RawEvent* e) {
    const auto* extra = reinterpret_cast<const char*>(extraOf(e));
    uint32_t nameLen = std::min<uint32_t>(static_cast<uint32_t>(e->c & 0xffff), e->extraLen);
    TypeDef t{id, std::string(extra, nameLen), e->b, e->a};
    auto layout = static_cast<uint8_t>(e->c >> 16);
    if (layout <= static_cast<uint8_t>(TypeLayout::kArray)) {
      t.layout = static_cast<TypeLayout>(layout);
      t.refOffsets.resize((e->extraLen - nameLen) / sizeof(uint32_t));
      std::memcpy(t.refOffsets.data(), extra + nameLen, t.refOffsets.size() * sizeof(uint32_t));
      if (t.layout == TypeLayout::kArray) {
        t.dataOffset = static_cast<uint8_t>(e->c >> 24);
        t.elementSize = static_cast<uint32_t>(e->c >> 32);
      }
    }
    return t;
  }

  // A class or method the recorder never defined (it cannot happen by construction, mono.cpp;
  // a log stays readable if it does): defined here under its handle.
  uint32_t typeId(uint64_t handle) {
    if (uint32_t id = types_.find(handle)) return id;
    uint32_t id = types_.add(handle);
    char name[48];
    std::snprintf(name, sizeof name, "(class 0x%llx)", static_cast<unsigned long long>(handle));
    log_->write(TypeDef{id, name, 0, handle});
    return id;
  }
  uint32_t methodId(uint64_t handle) {
    if (uint32_t id = methods_.find(handle)) return id;
    uint32_t id = methods_.add(handle);
    char name[48];
    std::snprintf(name, sizeof name, "(method 0x%llx)", static_cast<unsigned long long>(handle));
    log_->write(MethodDef{id, name, handle});
    return id;
  }
  // Managed frames (method handles) to MethodDef ids, then interned like native ones.
  uint32_t managedStack(RawEvent* e) {
    uint64_t frames[kMaxFrames];
    const uint64_t* in = framesOf(e);
    for (uint32_t i = 0; i < e->nframes; ++i) frames[i] = methodId(in[i]) | kManagedFrame;
    return stacks_.intern(frames, e->nframes, *log_);
  }

  // A failing log (disk full, closed pipe): stop recording, say so once, keep the program going.
  void checkWriter() {
    if (log_->ok() || reported_) return;
    reported_ = true;
    g.active.store(false, std::memory_order_relaxed);
    say("writing %s failed (%s); recording stopped", g.output, log_->error().c_str());
  }


  LogFileSink sink_;
  std::unique_ptr<LogWriter> log_;
  StackTable stacks_;
  HandleMap types_, methods_;
  TrackedSet tracked_;
  uint64_t nextSeq_ = 0;  // the next record's sequence number in the log
  std::unordered_map<std::string, uint32_t> names_;
  std::map<uint64_t, ModuleLoad> modules_;
  std::vector<Cursor> cursors_;
  double nsPerTick_ = 1.0 / 3.0;  // refined by calibrate()
  uint64_t bucketLow_ = 0, bucketSpan_ = 0, bucketNs_ = 0;  // timeOf's last step
  static constexpr uint64_t kFlushIntervalNs = 20'000'000;
  // How far the writer may fall behind the program (State::lagDeadline), in ticks.
  static constexpr uint64_t kMaxLagNs = 50'000'000;
  uint64_t lagTicks_ = UINT64_MAX / 4;
  uint64_t lastFlushNs_ = 0;
  static constexpr uint64_t kRescanIntervalNs = 500'000'000;
  uint64_t lastRescanNs_ = 0;
  bool reported_ = false;
  struct {
    uint64_t count = 0, copyNs = 0, bytes = 0;
  } ramDumps_;
  ByteBuffer objectList_;  // writeObjectLists' buffer, kept between dumps
  struct DumpRun {
    uint64_t address, length, at;  // at: of its bytes in the RamDump
    uint32_t first, count;         // its objects in the RamDump's list
  };
  std::vector<DumpRun> dumpRuns_;  // a dump's runs of adjacent objects, kept between dumps
  struct {
    uint64_t count = 0, ns = 0, drainsCut = 0;
  } aside_;  // stepAsideForCollection (HEAPMAN_STATS)
};

// The writer thread's state across its lives (recorder.h, "the writer thread starts lazily"):
// the Writer, made by the first thread, kept while a pause has none; the modules scanned at
// set-up for it; and a lock under which a thread is started, paused or stopped.
Writer* gWriter = nullptr;
ModuleMap* gStartModules = nullptr;
std::atomic<bool> gWriterLock{false};
// libc's pthread_create (not the hook), looked up at set-up: a fatal signal's handler may be the
// one to start the thread, and dlsym allocates.
using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
CreateFn gCreate = nullptr;

void* writerMain(void*) {
  t_guard = true;
  if (!gWriter) {
    gWriter = new Writer;
    std::unique_ptr<ModuleMap> modules(gStartModules);
    gStartModules = nullptr;
    gWriter->open(modules ? std::move(*modules) : ModuleMap{});
  }
  gWriter->run();
  return nullptr;
}

void lockWriter() {
  while (gWriterLock.exchange(true, std::memory_order_acquire)) sched_yield();
}
void unlockWriter() { gWriterLock.store(false, std::memory_order_release); }

// With the lock held: a writer thread, with every signal blocked, unless one runs.
void startLocked() {
  if (g.writerThread.load(std::memory_order_relaxed)) return;
  Guard guard;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits: every signal blocked
  int rc = gCreate ? gCreate(&g.writer, nullptr, writerMain, nullptr) : EAGAIN;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) {
    g.allocTimeEvery = g.allocTimeEveryRunning;  // the writer moves the time epoch from now on
    g.writerThread.store(1, std::memory_order_release);
  } else {
    g.active.store(false, std::memory_order_release);
    say("cannot start the writer thread (%s): recording stopped", std::strerror(rc));
  }
}

}  // namespace

bool setUpWriter() {
  // The modules loaded now, before the program goes on: scanned here, not by the writer thread,
  // which may first run after the program has loaded more (their ModuleLoad records would then
  // come before every event instead of where the dlopen was).
  Guard guard;
  gWriter = nullptr;  // a fork child's parent's, if any: the child writes a log of its own
  delete gStartModules;
  gStartModules = new ModuleMap(scanModules());
  if (!gCreate) gCreate = realNextAs<CreateFn>("pthread_create");
  gWriterLock.store(false, std::memory_order_relaxed);
  g.writerThread.store(0, std::memory_order_relaxed);
  g.pause.store(0, std::memory_order_relaxed);
  g.allocTimeEvery = 1;  // until the writer thread runs (State::allocTimeEveryRunning)
  g.writerRunning = true;
  armLazyStart();
  return true;
}

void startWriterThread() {
  if (g.writerThread.load(std::memory_order_acquire) || g.stop.load(std::memory_order_relaxed))
    return;
  if (static_cast<int>(getpid()) != g.pid) return;  // a vfork child: the parent's memory
  // Another thread starting or stopping it: this one goes on (its records wait in its ring).
  if (gWriterLock.exchange(true, std::memory_order_acquire)) return;
  if (!g.stop.load(std::memory_order_relaxed)) startLocked();
  unlockWriter();
}

void pauseWriter() {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return;
  Guard guard;
  lockWriter();
  if (g.writerThread.load(std::memory_order_acquire) && !g.stop.load(std::memory_order_acquire)) {
    g.pause.store(1, std::memory_order_release);
    wakeWriter();
    pthread_join(g.writer, nullptr);
    g.writerThread.store(0, std::memory_order_release);
    g.pause.store(0, std::memory_order_release);
    g.allocTimeEvery = 1;
    armLazyStart();
  }
  unlockWriter();
}

void stopWriter() {
  lockWriter();
  startLocked();  // a program that ended before the writer thread was due
  g.active.store(false, std::memory_order_seq_cst);
  // Let events already begun commit (bounded: a thread stuck in a hook must not hang exit).
  for (int i = 0; i < 1000; ++i) {
    bool busy = false;
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
      busy |= r->busy.load(std::memory_order_seq_cst) != 0;
    if (!busy) break;
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
  g.stop.store(1, std::memory_order_release);
  wakeWriter();
  if (g.writerThread.load(std::memory_order_acquire)) pthread_join(g.writer, nullptr);
  g.writerThread.store(0, std::memory_order_release);
  g.writerRunning = false;
  unlockWriter();
  closeLog();
}

}  // namespace heapman::rec
