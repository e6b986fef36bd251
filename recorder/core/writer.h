// The writer thread's Writer (writer.cpp: its rounds, the merge of the rings, the log's header
// and modules; convert.cpp: each ring event as log records). Core-private.
//
// It runs with the reentrancy guard set for its whole life, so its own allocations (LogWriter,
// maps) go straight to the real malloc, and with every signal blocked.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gc_events.h"
#include "heapman/logformat/bytes.h"
#include "heapman/logformat/writer.h"
#include "interning.h"
#include "log_fd.h"
#include "modules.h"
#include "recorder.h"
#include "tracked_set.h"

namespace heapman::rec::writer {

using namespace heapman::log;

// A whole small file (/proc), empty when it cannot be read.
std::string readFile(const char* path);

class Writer {
 public:

  // The log's header and the modules loaded at start (before every event): once, by the
  // first writer thread.
  void open(ModuleMap initialModules);

  // The writer thread's rounds, until State::stop (then it finishes the log) or State::pause
  // (then it writes out what it can and returns; a later thread goes on with this object).
  void run();

 private:
  Header header();

  // Time stamp counter to ns since start: a line through the start point and the latest
  // (tsc, CLOCK_MONOTONIC) pair, refreshed every round. Times are kept to the resolution the
  // header states (default 10 us), which keeps TIME records rare in the log.
  void calibrate();
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
  bool stepAsideForCollection();
  static constexpr uint64_t kMaxAsideNs = 100'000'000;
  // A collection is running, the writer has not yet stepped aside kMaxAsideNs for it (a flag
  // left set, say by recording stopping between a collection's start and end, must not slow the
  // writer for good), and no thread waits for room.
  bool yieldToCollection();
  uint64_t collectingSince_ = 0;  // when the writer first saw the current collection

  // Faults in each ring's pages ahead of its producer, on its first lap: a page's first write
  // costs a fault and the zeroing of the page, ~2.5 us here, which would otherwise fall on the
  // program's thread (8 192 of them for a 32 MiB ring, one per 64 allocations). The writer keeps
  // the populated part at twice what the producer wrote (at least 256 KiB), so a thread that
  // records little keeps little resident. MADV_POPULATE_WRITE is Linux 5.14; without it the
  // producer faults its pages itself.
  static void populateAhead();

  // No numbered event with a smaller sequence number, nor an unnumbered one that goes before
  // such a number, can still appear in a ring (recorder.h, ring.h).
  static uint64_t watermark();

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
      auto* e = reinterpret_cast<RawEvent*>(c.ring->data + ringOffset(c.ring, c.tail));
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
  void publishFront(uint64_t tsc);

  // Every 4096 records of a long round: the front moves on (the threads waiting for it go on)
  // and the open chunk is closed on time, so that what a SIGKILL loses stays bounded in time
  // even while the writer works through a backlog.
  void midRound(uint64_t tsc);
  uint64_t drained_ = 0;

  // True when everything below `bound` was written (not cut short to step aside).
  bool drainBelow(uint64_t bound, bool mayYield = false);

  // Frees the rings of exited threads once drained. The list head stays (producers push there).
  static void reapClosedRings();

  // The process is dying of a signal (flushForCrash): every record committed before it is
  // written. The other threads wait at their next record, so the rings stop growing; a thread
  // between taking its number and committing finishes within microseconds unless it is stopped
  // itself (by a collector that stopped the world, say): it is waited for, up to half a second.
  // Then everything committed is written, and the records still in flight are counted as lost.
  void drainForCrash();
  // A bound above every sequence number drainBelow can meet (2 * bound + 1 must not overflow).
  static constexpr uint64_t kEverything = UINT64_MAX / 4;
  static uint64_t busyRings();

  // Takes a sequence number, writes everything before it, then calls fn(), which writes the
  // writer's own events in its place.
  template <class Fn>
  void inject(Fn&& fn);

  // Modules loaded or unloaded without the dlopen/dlclose hooks (glibc's NSS and iconv modules),
  // logged in order: everything numbered before is written first. Skipped while a hooked
  // dlopen/dlclose runs (State::modulesBusy), or when one ran during the scan: the scan could see
  // a module before the allocations its constructors made, or before the hook's own record;
  // the next rescan tries again.
  void rescanModules();

  // Logs the difference between the modules known so far and `now`.
  void applyModules(ModuleMap now, uint64_t timeNs);

  void convert(Ring* r, RawEvent* e);

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
  void writeObjectLists(const RamDump& d);

  // A kTypeDef event (ring.h) as the log's TypeDef.
  static TypeDef typeDef(uint32_t id, RawEvent* e);

  // A class or method the recorder never defined (it cannot happen by construction, hooks/mono/allocation.cpp;
  // a log stays readable if it does): defined here under its handle.
  uint32_t typeId(uint64_t handle);
  uint32_t methodId(uint64_t handle);
  // Managed frames (method handles) to MethodDef ids, then interned like native ones; a stack of
  // handles seen lately is found in managedCache_ without either (on mcs the two took a third of
  // the recorder's CPU time).
  uint32_t managedStack(RawEvent* e);
  uint32_t internManaged(const uint64_t* handles, uint32_t n);  // managedStack without the cache

  // A failing log (disk full, closed pipe): stop recording, say so once, keep the program going.
  void checkWriter();


  LogFileSink sink_;
  std::unique_ptr<LogWriter> log_;
  StackTable stacks_;
  // Recent managed stacks as the ring carried them (method handles, leaf first) and their
  // interned ids: direct-mapped by hash, stacks of up to kManagedCacheFrames frames. A handle's
  // MethodDef id and a stack's id never change, so an entry never goes stale. Up to 16384
  // entries (4.3 MiB): mcs compiling 300 files carries 2.17 M managed stacks through the rings,
  // of which 1024 entries missed 0.92 M and 16384 0.15 M (the stack table's own cache has as many
  // entries). It starts at kManagedCacheFirst entries and is replaced by one four times larger
  // (empty) each time its misses since reach twice its entries: a program with few distinct
  // stacks (gbrainy: 5 900 misses in 15 s) does not touch 1 088 pages of it, each a page fault
  // (~20 us on the writer here).
  static constexpr uint32_t kManagedCacheFrames = 32, kManagedCacheFirst = 1024,
                            kManagedCacheSlots = 16384;
  struct ManagedCacheEntry {  // all zero: empty (n == 0 never matches: empty stacks skip it)
    uint64_t hash;
    uint32_t n, id;
    uint64_t frames[kManagedCacheFrames];
  };
  struct FreeDeleter {
    void operator()(void* p) const { free(p); }
  };
  std::unique_ptr<ManagedCacheEntry[], FreeDeleter> managedCache_;  // Mono programs only
  uint32_t managedSlots_ = 0;        // managedCache_'s entries, a power of two
  uint64_t managedGrowAt_ = 0;       // managedMisses_ at which it is replaced by a larger one
  uint64_t managedHits_ = 0, managedMisses_ = 0;  // HEAPMAN_STATS
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
  // The writer's sleep between rounds (run): kBusySleepNs after a round that wrote kBusyRecords
  // records or more, longer after quieter ones.
  static constexpr uint64_t kBusySleepNs = 1'000'000, kIdleSleepMaxNs = 8'000'000,
                            kBusyRecords = 256;
  uint64_t idleSleepNs_ = kBusySleepNs;
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

}  // namespace heapman::rec::writer
