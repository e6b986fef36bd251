// The writer thread's rounds (writer.h): it drains the threads' rings in sequence order, steps
// aside while the program collects, keeps the threads within State::lagDeadline of it, writes
// the log's header and module records, and finishes the log; a fatal signal's flush included.
#include "writer.h"

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

namespace heapman::rec::writer {

std::string readFile(const char* path) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

void Writer::open(ModuleMap initialModules) {
  Header h = header();
  log_ = std::make_unique<LogWriter>(sink_, h);
  calibrate();
  applyModules(std::move(initialModules), 0);
}

void Writer::run() {
  for (;;) {
    bool stopping = g.stop.load(std::memory_order_acquire) ||
                    g.pause.load(std::memory_order_acquire);
    const uint64_t roundStartSeq = nextSeq_;
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
    // 1 ms after a round that wrote kBusyRecords or more: also the longest an event of a busy
    // program waits in a ring. After quieter rounds, twice as long each time up to
    // kIdleSleepMaxNs: a program that allocates little (a GUI redrawing on its timers, a game
    // between levels) pays for ~125 wake-ups a second, not 1000, each ~18 us of CPU on this
    // 2-core VM against ~50 ns a record (gbrainy: ~6 records a millisecond, 0.15 s of wake-ups
    // in 15 s). A ring still wakes the writer as it passes half full.
    idleSleepNs_ = nextSeq_ - roundStartSeq >= kBusyRecords
                       ? kBusySleepNs
                       : std::min(2 * idleSleepNs_, kIdleSleepMaxNs);
    uint32_t w = g.wake.load(std::memory_order_acquire);
    timespec timeout{0, static_cast<long>(idleSleepNs_)};
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
    say("rings: %u threads, %llu doublings (first ring %llu KiB, at most %llu KiB)",
        g.nextThread.load(), static_cast<unsigned long long>(g.ringGrowths.load()),
        static_cast<unsigned long long>(std::min(kFirstRingBytes, g.ringBytes) >> 10),
        static_cast<unsigned long long>(g.ringBytes >> 10));
    if (g.unwind == State::Unwind::kAuto)
      say("stacks: %llu unwound by libunwind (a rule or a chain the walk could not follow), "
          "%llu unwind rules read from .eh_frame",
          static_cast<unsigned long long>(g.unwindFallbacks.load()),
          static_cast<unsigned long long>(g.ruleMisses.load()));
  }
  if (getenv(env::kStats) && (managedHits_ || managedMisses_ || stacks_.stats.walked))
    say("stacks: managed cache %llu hits, %llu misses; stack table %llu cached, %llu by hash, "
        "%llu walked, %llu nodes",
        static_cast<unsigned long long>(managedHits_),
        static_cast<unsigned long long>(managedMisses_),
        static_cast<unsigned long long>(stacks_.stats.cached),
        static_cast<unsigned long long>(stacks_.stats.byHash),
        static_cast<unsigned long long>(stacks_.stats.walked),
        static_cast<unsigned long long>(stacks_.stats.nodes));
  if (const TrackedSet::Stats& st = tracked_.stats(); st.sweeps && getenv(env::kStats))
    say("%llu sweeps tested %llu objects in %.1f ms on the writer thread (%.1f ns per object)",
        static_cast<unsigned long long>(st.sweeps), static_cast<unsigned long long>(st.objects),
        st.ns / 1e6, st.objects ? static_cast<double>(st.ns) / st.objects : 0.0);
  g.writerDone.store(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.writerDone), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

Header Writer::header() {
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

void Writer::calibrate() {
  uint64_t t = __rdtsc(), ns = monotonicNs();
  if (t > g.tsc0 + 1000000 && ns > g.ns0)
    nsPerTick_ = static_cast<double>(ns - g.ns0) / static_cast<double>(t - g.tsc0);
  lagTicks_ = static_cast<uint64_t>(static_cast<double>(kMaxLagNs) / nsPerTick_);
  bucketSpan_ = 0;  // the line moved
  g.timeEpoch.fetch_add(1, std::memory_order_relaxed);  // allocations read the clock again
}

bool Writer::stepAsideForCollection() {
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

bool Writer::yieldToCollection() {
  if (!g.collecting.load(std::memory_order_acquire)) {
    collectingSince_ = 0;
    return false;
  }
  uint64_t now = monotonicNs();
  if (!collectingSince_) collectingSince_ = now;
  return now - collectingSince_ < kMaxAsideNs && !g.ringFull.load(std::memory_order_relaxed);
}

void Writer::populateAhead() {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  // At least kMinAhead ahead once a thread has written a little; a thread that has written
  // next to nothing (every thread registers as it starts: many never allocate) gets 16 KiB.
  constexpr uint64_t kMinAhead = 256u << 10;
  // The producer's first lap over pages never used: [0, C) from position 0, and after the ring
  // grew at P to 2C, [C, 2C) from P (ring.h, Growth).
  for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next) {
    if (r->populated >= r->maxCapacity) continue;
    uint64_t head = r->head.load(std::memory_order_acquire);
    const uint64_t layout = r->layout.load(std::memory_order_acquire);
    const uint64_t capacity = uint64_t{1} << (layout & 63), switchAt = layout & ~uint64_t{63};
    const uint64_t front =
        switchAt == 0 ? head : capacity / 2 + (head > switchAt ? head - switchAt : 0);
    uint64_t ahead = std::min(kMinAhead, (16u << 10) + 16 * front);
    uint64_t want = (std::max(2 * front, front + ahead) + 4095) & ~uint64_t{4095};
    want = std::min(capacity, want);  // pages: data is page-aligned, capacity 64 KiB or more
    if (want <= r->populated) continue;
    if (madvise(r->data + r->populated, want - r->populated, MADV_POPULATE_WRITE) != 0) {
      r->populated = r->maxCapacity;  // not supported: stop trying
      continue;
    }
    r->populated = want;
  }
}

uint64_t Writer::watermark() {
  uint64_t w = g.seq.load(std::memory_order_acquire);
  for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
    if (r->busy.load(std::memory_order_acquire))
      w = std::min(w, r->nextSeq.load(std::memory_order_acquire));
  return w;
}

void Writer::publishFront(uint64_t tsc) {
  if (g.crashing.load(std::memory_order_relaxed)) return;  // the threads wait for good
  const uint64_t deadline = tsc + lagTicks_;
  g.lagDeadline.store(deadline, std::memory_order_release);
  g.lagRounds.fetch_add(1, std::memory_order_seq_cst);
  if (g.lagWaiters.load(std::memory_order_seq_cst) && deadline > __rdtsc() + lagTicks_ / 3)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.lagRounds), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
}

void Writer::midRound(uint64_t tsc) {
  publishFront(tsc);
  uint64_t now = monotonicNs();
  if (now - lastFlushNs_ >= kFlushIntervalNs) {
    log_->flush();
    lastFlushNs_ = now;
  }
}

bool Writer::drainBelow(uint64_t bound, bool mayYield) {
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
      __builtin_prefetch(best->ring->data + ringOffset(best->ring, best->tail + 512));
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

void Writer::reapClosedRings() {
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

void Writer::drainForCrash() {
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

uint64_t Writer::busyRings() {
  uint64_t n = 0;
  for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
    n += r->busy.load(std::memory_order_acquire) != 0;
  return n;
}

template <class Fn>
void Writer::inject(Fn&& fn) {
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

void Writer::rescanModules() {
  uint32_t gen = g.modulesGen.load(std::memory_order_seq_cst);
  if (g.modulesBusy.load(std::memory_order_seq_cst) != 0) return;
  inject([&] {
    ModuleMap now = scanModules();
    if (g.modulesBusy.load(std::memory_order_seq_cst) == 0 &&
        g.modulesGen.load(std::memory_order_seq_cst) == gen)
      applyModules(std::move(now), timeOf(__rdtsc()));
  });
}

void Writer::applyModules(ModuleMap now, uint64_t timeNs) {
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

void Writer::checkWriter() {
  if (log_->ok() || reported_) return;
  reported_ = true;
  g.active.store(false, std::memory_order_relaxed);
  say("writing %s failed (%s); recording stopped", g.output, log_->error().c_str());
}

}  // namespace heapman::rec::writer
