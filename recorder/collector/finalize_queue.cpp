// The finalization queue of a Boehm collector, as a root (finalize_queue.h).
#include "finalize_queue.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "../core/recorder.h"
#include "gc_tracking.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::rec::gc {
namespace {

FinalizeQueueCollector g_fc;
bool g_on = false;  // initFinalizeQueue ran

struct Entry {
  uint64_t hidden;  // ~address
  uint64_t data;    // ~(the finalizer's client data), ~0 for none
  uint32_t gc;      // the collection that queued it
  uint32_t pad;
};
constexpr size_t kMaxFinalizeQueue = size_t{1} << 18;
// In the order they were queued: their gc numbers never decrease (removals keep the order).
Entry g_queue[kMaxFinalizeQueue];
size_t g_count = 0;
size_t g_dataWords = 0;  // entries with client data
uint64_t g_dropped = 0;  // objects not listed: the table was full
bool g_droppedSaid = false;

// The plain addresses (objects and client data), for a dump's copy only.
uint64_t g_table[2 * kMaxFinalizeQueue];
size_t g_tableUsed = 0;

std::atomic<uint32_t> g_settled{0};     // what finalizersBegin returns
std::atomic<uint32_t> g_ranThrough{0};  // the largest finalizersRanThrough
// libgc: GC_invoke_finalizers calls begun, and running. While none ran since the last
// collection, every listed object is still in the collector's queue, hence marked.
std::atomic<uint32_t> g_invokes{0};
std::atomic<int> g_invoking{0};
uint32_t g_invokesSeen = 0;

// Mono's finalizing objects since the last collection (~address), applied under the allocation
// lock. The finalizer thread appends, the collecting thread drains: g_lock, a spinlock never held
// while the world is stopped nor across a call into the collector. Past its size, an object whose finalizer starts stays listed until it is
// collected or the collector's queue empties (counted, said once).
constexpr size_t kMaxStarting = size_t{1} << 16;
uint64_t g_starting[kMaxStarting];
size_t g_startingCount = 0;
uint64_t g_startingLost = 0;
bool g_startingSaid = false;
std::atomic<bool> g_lock{false};

// libgc: the client data of each registered finalizer, by object (both complemented; key 0: a
// free slot). Linear probing, deletion by backward shift. Guarded by g_lock too.
constexpr size_t kDataSlots = size_t{1} << 18;
struct DataSlot {
  uint64_t key, data;
};
DataSlot g_data[kDataSlots];
size_t g_dataCount = 0;
uint64_t g_dataDropped = 0;
bool g_dataSaid = false;

// By address (objects are 16-byte aligned at least): objects allocated one after another, as
// programs register them, land in neighbouring slots. A multiplicative hash cost a cache miss per
// registration (finalize_bench: +330 ns over main's recorder, against +13 ns this way).
inline size_t slotOf(uint64_t key) { return static_cast<size_t>(~key >> 4) & (kDataSlots - 1); }

// The slot holding `key`, or the free slot where it would go.
size_t findData(uint64_t key) {
  size_t i = slotOf(key);
  while (g_data[i].key && g_data[i].key != key) i = (i + 1) & (kDataSlots - 1);
  return i;
}

void eraseData(size_t i) {
  g_data[i] = {};
  --g_dataCount;
  for (size_t j = (i + 1) & (kDataSlots - 1); g_data[j].key; j = (j + 1) & (kDataSlots - 1)) {
    size_t home = slotOf(g_data[j].key);
    // Move j back to the hole at i when its home does not lie cyclically in (i, j].
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      g_data[i] = g_data[j];
      g_data[j] = {};
      i = j;
    }
  }
}

// The first entry queued after collection `gc` (entries are in queueing order).
size_t firstAfter(uint32_t gc) {
  return static_cast<size_t>(
      std::partition_point(g_queue, g_queue + g_count, [gc](const Entry& e) { return e.gc <= gc; }) -
      g_queue);
}

// Keeps the entries `keep` says yes to, in order, from `from` on (the ones before are dropped).
template <class Keep>
void compact(size_t from, Keep keep) {
  size_t k = 0;
  for (size_t i = from; i < g_count; ++i)
    if (keep(g_queue[i])) g_queue[k++] = g_queue[i];
    else g_dataWords -= g_queue[i].data != ~uint64_t{0};
  for (size_t i = 0; i < from; ++i) g_dataWords -= g_queue[i].data != ~uint64_t{0};
  g_count = k;
}

// What left the queue, as known when collection `gc` starts or ends (entries it queued itself
// have gc == `gc` and are not Mono's finalizing objects yet). Allocation lock held; the spinlock
// keeps the finalizer thread out of the ring meanwhile.
void applyLeft(uint32_t gc) {
  SpinLock lock(g_lock);
  size_t starting = g_startingCount;
  g_startingCount = 0;
  if (!g_count) return;
  if (g_fc.pending && !g_fc.pending()) {  // exact: only the lock holder changes it
    g_count = 0;
    g_dataWords = 0;
    return;
  }
  // A GC_invoke_finalizers call ran the finalizers of everything queued up to `ran`: a prefix.
  size_t ranPrefix = firstAfter(g_ranThrough.load(std::memory_order_acquire));
  if (!starting) {
    if (ranPrefix) compact(ranPrefix, [](const Entry&) { return true; });
    return;
  }
  std::sort(g_starting, g_starting + starting);
  compact(ranPrefix, [&](const Entry& e) {
    return e.gc >= gc || !std::binary_search(g_starting, g_starting + starting, e.hidden);
  });
}

}  // namespace

void initFinalizeQueue(const FinalizeQueueCollector& c) {
  g_fc = c;
  g_on = true;
  // A thread that held the spinlock when another forked is not in the child: free it there (a
  // half-made change to the tables can only list a word too many or miss one; probing ends at an
  // empty slot, which a table at most 3/4 full always has).
  pthread_atfork(nullptr, nullptr, [] { g_lock.store(false, std::memory_order_relaxed); });
}

bool finalizeQueueOn() { return g_on; }

void finalizeQueued(void* obj, uint32_t gc) {
  uint64_t key = ~reinterpret_cast<uint64_t>(obj), data = ~uint64_t{0};
  {
    SpinLock lock(g_lock);
    if (g_dataCount) {  // the registration is used up: the collector's entry moved to its queue
      size_t i = findData(key);
      if (g_data[i].key) {
        data = g_data[i].data;
        eraseData(i);
      }
    }
  }
  if (g_count == kMaxFinalizeQueue) {
    ++g_dropped;
    return;
  }
  // Client data that is no heap object (a static, a number) holds nothing.
  if (data != ~uint64_t{0} && !g_fc.base(reinterpret_cast<void*>(~data))) data = ~uint64_t{0};
  g_queue[g_count++] = {key, data, gc, 0};
  g_dataWords += data != ~uint64_t{0};
}

void finalizerRegistered(void* obj, bool registered, void* data) {
  uint64_t key = ~reinterpret_cast<uint64_t>(obj);
  SpinLock lock(g_lock);
  size_t i = findData(key);
  if (!registered || !data) {  // removed, or nothing to hold
    if (g_data[i].key) eraseData(i);
    return;
  }
  if (!g_data[i].key) {
    if (g_dataCount >= kDataSlots / 4 * 3) {
      ++g_dataDropped;
      return;
    }
    ++g_dataCount;
  }
  g_data[i] = {key, ~reinterpret_cast<uint64_t>(data)};
}

void finalizerStarting(void* obj) {
  SpinLock lock(g_lock);
  if (g_startingCount == kMaxStarting) {
    ++g_startingLost;
    return;
  }
  g_starting[g_startingCount++] = ~reinterpret_cast<uint64_t>(obj);
}

uint32_t finalizersBegin() {
  g_invoking.fetch_add(1, std::memory_order_acq_rel);
  g_invokes.fetch_add(1, std::memory_order_acq_rel);
  return g_settled.load(std::memory_order_acquire);
}

void finalizersRanThrough(uint32_t gc) {
  g_invoking.fetch_sub(1, std::memory_order_acq_rel);
  uint32_t was = g_ranThrough.load(std::memory_order_relaxed);
  while (was < gc && !g_ranThrough.compare_exchange_weak(was, gc, std::memory_order_acq_rel)) {
  }
}

void finalizeQueueIfEmpty() {
  if (g_count && g_fc.pending && !g_fc.pending()) {
    g_count = 0;
    g_dataWords = 0;
  }
}

void startFinalizeQueue(uint32_t gc) { applyLeft(gc); }

void finishFinalizeQueue(uint32_t gc) {
  applyLeft(gc);
  // Freed by this collection: not marked (GC_base first: a block freed whole is no object any
  // more). Those it queued itself are marked (the collector marked them when it queued them):
  // only the entries before them are tested, and on libgc only when finalizers ran since the
  // last collection (an object still in the collector's queue is marked, and so is the client
  // data its entry holds). An object listed after its finalizer ran (a root too many, see the
  // header) may outlive its client data, which the collector's entry no longer holds: that word
  // goes when the data is freed.
  uint32_t invokes = g_invokes.load(std::memory_order_acquire);
  bool popped = !g_fc.popsReported || invokes != g_invokesSeen ||
                g_invoking.load(std::memory_order_acquire) > 0 || g_startingLost;
  g_invokesSeen = invokes;
  size_t older = popped ? firstAfter(gc - 1) : 0;
  if (older) {
    size_t k = 0;
    for (size_t i = 0; i < g_count; ++i) {
      void* p = reinterpret_cast<void*>(~g_queue[i].hidden);
      if (i < older && (g_fc.base(p) != p || !g_fc.isMarked(p))) {
        g_dataWords -= g_queue[i].data != ~uint64_t{0};
        continue;
      }
      if (i < older && g_queue[i].data != ~uint64_t{0}) {
        void* data = g_fc.base(reinterpret_cast<void*>(~g_queue[i].data));
        if (!data || !g_fc.isMarked(data)) {
          g_queue[i].data = ~uint64_t{0};
          --g_dataWords;
        }
      }
      g_queue[k++] = g_queue[i];
    }
    g_count = k;
  }
  g_settled.store(gc, std::memory_order_release);
  if (g_dropped && !g_droppedSaid) {
    g_droppedSaid = true;
    say("more than %zu objects await their finalizer: the graph's finalization-queue root lists "
        "the first %zu",
        kMaxFinalizeQueue, kMaxFinalizeQueue);
  }
  if (g_dataDropped && !g_dataSaid) {
    g_dataSaid = true;
    say("more than %zu finalizers registered: the finalization-queue root may miss the client "
        "data of some",
        kDataSlots / 4 * 3);
  }
  if (g_startingLost && !g_startingSaid) {
    g_startingSaid = true;
    say("more than %zu finalizers ran between two collections: the finalization-queue root may "
        "list objects whose finalizer ran until they are collected",
        kMaxStarting);
  }
}

RootSetEntry finalizeQueueRoot(bool forDump) {
  size_t n = g_count + g_dataWords;
  if (forDump) {
    size_t w = 0;
    for (size_t i = 0; i < g_count; ++i) {
      g_table[w++] = ~g_queue[i].hidden;
      if (g_queue[i].data != ~uint64_t{0}) g_table[w++] = ~g_queue[i].data;
    }
    g_tableUsed = w;
  }
  return {reinterpret_cast<uint64_t>(g_table), n * sizeof(uint64_t), log::kRecorderThread,
          static_cast<uint8_t>(log::RootSource::kFinalizeQueue), {}};
}

void clearFinalizeQueueTable() {
  std::memset(g_table, 0, g_tableUsed * sizeof(uint64_t));
  g_tableUsed = 0;
}

}  // namespace heapman::rec::gc
