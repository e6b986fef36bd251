// The roots of each bdwgc collection (bdwgc.h): the static data segments libgc reports, ranges
// registered with GC_add_roots, the stacks of the threads it suspended or that wait in
// GC_do_blocking (copied while the world is stopped when the collection will be dumped), the
// ranges the program's mark procedures push and the words they mark; and the modules whose data
// is the recorder's own, kept out of them.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bdwgc.h"

namespace heapman::rec::bdwgc {
namespace {

constexpr int kMaxRegistered = 4096;
Range g_registered[kMaxRegistered];
int g_registeredCount = 0;
std::atomic<bool> g_registeredLock{false};
struct SpinLock : gc::SpinLock {
  SpinLock() : gc::SpinLock(g_registeredLock) {}
};

void recordRootRange(uint64_t low, uint64_t high, bool added) {
  Guard guard;
  gc::emitRootRange(low, high > low ? high - low : 0, added, log::RootSource::kRegistered);
}

GC_on_thread_event_proc g_programThreadEvent = nullptr;
GC_has_static_roots_func g_programStaticRoots = nullptr;

// Filled while the world is stopped: no lock, no allocation.
constexpr int kMaxStatic = 1024;
Range g_static[kMaxStatic];
std::atomic<int> g_staticCount{0};
constexpr int kMaxSuspended = 1024;
pthread_t g_suspended[kMaxSuspended];
std::atomic<int> g_suspendedCount{0};

// Threads inside GC_do_blocking (interposed below; guile's threads wait there): the collector does
// not suspend them, so no thread event names them, yet it scans their stacks from where they
// entered. A slot per such thread, claimed on the outermost entry and freed on its return. A
// collection reads it with the allocation lock held, which GC_do_blocking takes to change the
// thread's state: a thread listed here is either blocked for the whole collection or suspended
// (then in both lists, its stack taken once). One that leaves the section by longjmp stays
// listed: its stack is still listed as a root (it is suspended anyway while it runs).
constexpr int kMaxBlocked = 1024;
std::atomic<uint64_t> g_blocked[kMaxBlocked];
__thread int t_blockingDepth HEAPMAN_TLS = 0;

void blockingEntered() {
  if (t_blockingDepth++) return;
  auto self = static_cast<uint64_t>(pthread_self());
  for (auto& slot : g_blocked) {
    uint64_t free = 0;
    if (slot.compare_exchange_strong(free, self, std::memory_order_relaxed)) return;
  }  // full: this thread's stack is not listed while it blocks
}

void blockingLeft() {
  if (--t_blockingDepth) return;
  auto self = static_cast<uint64_t>(pthread_self());
  for (auto& slot : g_blocked)
    if (slot.load(std::memory_order_relaxed) == self) {
      slot.store(0, std::memory_order_relaxed);
      return;
    }
}


// The threads whose stacks the collector scans besides its own: those it suspended, then those
// blocked that it did not suspend. Calls fn(pthread_t) once for each.
template <class Fn>
void forEachScannedThread(Fn&& fn) {
  int nt = std::min(g_suspendedCount.load(std::memory_order_relaxed), kMaxSuspended);
  for (int i = 0; i < nt; ++i) fn(g_suspended[i]);
  for (auto& slot : g_blocked) {
    uint64_t b = slot.load(std::memory_order_relaxed);
    if (!b) continue;
    auto t = reinterpret_cast<pthread_t>(b);
    bool listed = pthread_equal(t, pthread_self());
    for (int i = 0; i < nt && !listed; ++i) listed = pthread_equal(t, g_suspended[i]);
    if (!listed) fn(t);
  }
}

// Pointers the program's own mark procedures push (GC_mark_and_push) from memory outside the
// collected heap: guile's VM stacks are mmap'd and marked by the procedure of its thread objects,
// so no root range holds what they keep alive. The collector treats these words as roots; the
// recorder copies them into this table, which the root set then lists as one range (its bytes
// dumped like a stack's). Filled by the marker threads while the world is stopped: a static table
// and an atomic index, no lock, no allocation; words beyond its size are dropped (counted).
constexpr size_t kMaxMarked = size_t{1} << 20;
uint64_t g_marked[kMaxMarked];
std::atomic<size_t> g_markedCount{0};

void noteMarked(void* obj, void** src) {
  // A source inside an object is that object's word: the dump holds it and the graph scans it.
  if (src && real_GC_base.get()(src)) return;
  size_t i = g_markedCount.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxMarked) g_marked[i] = reinterpret_cast<uint64_t>(obj);
}

// Ranges the program pushes itself with GC_push_all / GC_push_all_eager / GC_push_conditional:
// ECL turns off the collector's scan of static data (GC_set_no_dls) and pushes its roots from a
// push-other-roots procedure. The collector calls the same functions for its own roots; only
// calls from outside libgc's code count (the return address, against libgc's extent found at
// start-up), and ranges that start inside a heap object (its bytes are dumped already) do not.
// Same rules as above: filled while the world is stopped.
constexpr size_t kMaxPushed = 4096;
Range g_pushed[kMaxPushed];
std::atomic<size_t> g_pushedCount{0};
uint64_t g_libgcLow = 0, g_libgcHigh = 0;

void notePushed(void* bottom, void* top, void* caller) {
  auto c = reinterpret_cast<uint64_t>(caller);
  if (c >= g_libgcLow && c < g_libgcHigh) return;
  auto low = reinterpret_cast<uint64_t>(bottom), high = reinterpret_cast<uint64_t>(top);
  if (high <= low || real_GC_base.get()(bottom)) return;
  size_t i = g_pushedCount.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxPushed) g_pushed[i] = {low, high};
}

// Modules loaded only because the recorder needs them (lz4, Cap'n Proto, libunwind, ... and their
// own dependencies), by file name. Their data holds no pointer into the collected heap; the
// collector would scan it as roots, and the root size paces collections (GC_min_bytes_allocd):
// the recorded program would collect at other moments than the unrecorded one. Only modules the
// program's own dependency tree does not reach are listed, so none of the program's roots is
// ever hidden.
constexpr int kMaxOwn = 64;
char g_ownModules[kMaxOwn][128];
int g_ownCount = 0;

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool isOwnModule(const char* path) {
  const char* base = baseName(path);
  for (int i = 0; i < g_ownCount; ++i)
    if (std::strcmp(g_ownModules[i], base) == 0) return true;
  return false;
}


struct LoadedModule {
  const char* path;
  std::vector<const char*> needed;  // DT_NEEDED sonames
};

}  // namespace

// In a child only the forking thread is left.
void blockedAfterFork() {
  for (auto& slot : g_blocked) slot.store(0, std::memory_order_relaxed);
  if (t_blockingDepth) g_blocked[0].store(static_cast<uint64_t>(pthread_self()));
}

// `self`: this module's path as dl_iterate_phdr names it.
void findOwnModules(const char* self) {
  std::vector<LoadedModule> mods;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) -> int {
        auto& out = *static_cast<std::vector<LoadedModule>*>(arg);
        LoadedModule m{info->dlpi_name ? info->dlpi_name : "", {}};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          uintptr_t strtab = 0;
          for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d)
            if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
          if (!strtab) break;
          if (strtab < info->dlpi_addr) strtab += info->dlpi_addr;  // not relocated in place
          for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d)
            if (d->d_tag == DT_NEEDED) m.needed.push_back(reinterpret_cast<const char*>(strtab + d->d_un.d_val));
        }
        out.push_back(std::move(m));
        return 0;
      },
      &mods);
  if (mods.empty()) return;
  auto closure = [&](size_t from) {
    std::vector<bool> seen(mods.size());
    std::vector<size_t> todo{from};
    seen[from] = true;
    while (!todo.empty()) {
      size_t i = todo.back();
      todo.pop_back();
      for (const char* soname : mods[i].needed)
        for (size_t j = 0; j < mods.size(); ++j)
          if (!seen[j] && std::strcmp(baseName(mods[j].path), soname) == 0) {
            seen[j] = true;
            todo.push_back(j);
          }
    }
    return seen;
  };
  size_t selfIndex = mods.size();
  for (size_t i = 0; i < mods.size(); ++i)
    if (std::strcmp(mods[i].path, self) == 0) selfIndex = i;
  if (selfIndex == mods.size()) return;
  std::vector<bool> program = closure(0), ours = closure(selfIndex);
  for (size_t i = 0; i < mods.size() && g_ownCount < kMaxOwn; ++i)
    if (ours[i] && !program[i] && mods[i].path[0])
      std::snprintf(g_ownModules[g_ownCount++], sizeof g_ownModules[0], "%s", baseName(mods[i].path));
}

void rootsBegin() {
  g_staticCount.store(0, std::memory_order_relaxed);
  g_suspendedCount.store(0, std::memory_order_relaxed);
  g_markedCount.store(0, std::memory_order_relaxed);
  g_pushedCount.store(0, std::memory_order_relaxed);
}

// The roots of the collection that is finishing: static data segments the collector reported,
// ranges registered with GC_add_roots, and the stacks of the threads it suspended or left blocked
// (GC_do_blocking) plus its own, each with its recorder thread index where known. Allocation lock
// held (static storage).
constexpr size_t kMaxRoots =
    kMaxStatic + kMaxRegistered + kMaxSuspended + kMaxBlocked + kMaxPushed + 3;
RootSetEntry g_roots[kMaxRoots + 1];  // and the finalization queue's (collection.h)
size_t collectRoots(uint64_t mySp) {
  size_t n = 0;
  auto add = [&](uint64_t low, uint64_t size, log::RootSource src,
                 uint32_t thread = log::kRecorderThread) {
    if (n < kMaxRoots && size) g_roots[n++] = {low, size, thread, static_cast<uint8_t>(src), {}};
  };
  int ns = std::min(g_staticCount.load(std::memory_order_relaxed), kMaxStatic);
  for (int i = 0; i < ns; ++i)
    add(g_static[i].low, g_static[i].high - g_static[i].low, log::RootSource::kStaticData);
  {
    SpinLock lock;
    for (int i = 0; i < g_registeredCount; ++i)
      add(g_registered[i].low, g_registered[i].high - g_registered[i].low,
          log::RootSource::kRegistered);
  }
  uint64_t low, high;
  forEachScannedThread([&](pthread_t t) {
    if (!gc::stackOf(t, low, high)) return;
    uint64_t from = gc::stoppedStackLow(high);  // the range copied while the world was stopped
    if (!from) from = gc::stackInUse(low, high, 0);
    add(from, high - from, log::RootSource::kThreadStack, gc::threadIndexOf(t));
  });
  size_t pushed = std::min(g_pushedCount.load(std::memory_order_relaxed), kMaxPushed);
  for (size_t i = 0; i < pushed; ++i)
    add(g_pushed[i].low, g_pushed[i].high - g_pushed[i].low, log::RootSource::kPushedRange);
  size_t marked = std::min(g_markedCount.load(std::memory_order_relaxed), kMaxMarked);
  add(reinterpret_cast<uint64_t>(g_marked), marked * sizeof(uint64_t),
      log::RootSource::kMarkProcedure);
  if (gc::stackOf(pthread_self(), low, high)) {
    uint64_t from = gc::stoppedStackLow(high);
    if (!from) from = gc::stackInUse(low, high, mySp);
    Ring* own = threadRing();
    add(from, high - from, log::RootSource::kThreadStack, own ? own->index : log::kRecorderThread);
  }
  return n;
}

// World stopped, marking done (GC_EVENT_PRE_START_WORLD; the last stop of the collection wins):
// the stacks of the threads it suspended or left blocked, and the collecting thread's own, for a
// collection that will be dumped, copied before they resume and before the collector's later
// calls overwrite its own stale words (gc_tracking.h). A thread whose bounds are not known
// without an allocation (one that never registered with the recorder) is copied at RECLAIM_END,
// after the restart.
void copyStacksWhileStopped(uint32_t gc) {
  if (!gc::dumpPlanned(gc)) return;
  gc::beginStoppedStacks();
  uint64_t low, high;
  forEachScannedThread([&](pthread_t t) {
    if (gc::cachedStackOf(t, low, high)) gc::copyStoppedStack(gc::stackInUse(low, high, 0), high);
  });
  // Its own from the lowest mapped page, not from here: the collector scanned it from deeper down,
  // in its marking frames, which have returned by now but whose words are still there.
  if (gc::cachedStackOf(pthread_self(), low, high))
    gc::copyStoppedStack(gc::stackInUse(low, high, 0), high);
}

gc::RootList rootsOfCollection(uint64_t mySp) {
  return {g_roots, collectRoots(mySp), kMaxRoots + 1};
}

void GC_CALLBACK onThreadEvent(GC_EventType event, void* thread) {
  if (event == GC_EVENT_THREAD_SUSPENDED) {
    int i = g_suspendedCount.fetch_add(1, std::memory_order_relaxed);
    if (i < kMaxSuspended) g_suspended[i] = reinterpret_cast<pthread_t>(thread);
  }
  if (g_programThreadEvent) g_programThreadEvent(event, thread);
}

int GC_CALLBACK onStaticRoots(const char* name, void* start, size_t size) {
  // The recorder's own data holds no pointer into the collected heap. Scanning it would only
  // make the collector's pacing differ from the unrecorded program's (root size counts there).
  if (name && isOwnModule(name)) return 0;
  int keep = g_programStaticRoots ? g_programStaticRoots(name, start, size) : 1;
  if (keep) {
    int i = g_staticCount.fetch_add(1, std::memory_order_relaxed);
    auto low = reinterpret_cast<uint64_t>(start);
    if (i < kMaxStatic) g_static[i] = {low, low + size};
  }
  return keep;
}

// The extent of the loaded module holding `inLibgc` (libgc's code): notePushed ignores the
// collector's own calls.
void findLibgc(void* inLibgc) {
  struct Find {
    uint64_t address, low = 0, high = 0;
  } find{reinterpret_cast<uint64_t>(inLibgc)};
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t, void* arg) -> int {
        auto& f = *static_cast<Find*>(arg);
        uint64_t low = UINT64_MAX, high = 0;
        for (int i = 0; i < pi->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = pi->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          low = std::min<uint64_t>(low, pi->dlpi_addr + ph.p_vaddr);
          high = std::max<uint64_t>(high, pi->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (f.address < low || f.address >= high) return 0;
        f.low = low;
        f.high = high;
        return 1;
      },
      &find);
  g_libgcLow = find.low;
  g_libgcHigh = find.high;
}

}  // namespace heapman::rec::bdwgc

using namespace heapman::rec;
using namespace heapman::rec::bdwgc;

// ---- what mark procedures push -------------------------------------------------------------
HEAPMAN_EXPORT struct GC_ms_entry* GC_mark_and_push(void* obj, struct GC_ms_entry* msp,
                                                    struct GC_ms_entry* lim, void** src) {
  if (g.active.load(std::memory_order_relaxed)) noteMarked(obj, src);
  return real_GC_mark_and_push.get()(obj, msp, lim, src);
}
HEAPMAN_EXPORT void GC_push_all(void* bottom, void* top) {
  if (g.active.load(std::memory_order_relaxed)) notePushed(bottom, top, __builtin_return_address(0));
  real_GC_push_all.get()(bottom, top);
}
HEAPMAN_EXPORT void GC_push_all_eager(void* bottom, void* top) {
  if (g.active.load(std::memory_order_relaxed)) notePushed(bottom, top, __builtin_return_address(0));
  real_GC_push_all_eager.get()(bottom, top);
}
HEAPMAN_EXPORT void GC_push_conditional(void* bottom, void* top, int all) {
  if (g.active.load(std::memory_order_relaxed)) notePushed(bottom, top, __builtin_return_address(0));
  real_GC_push_conditional.get()(bottom, top, all);
}

// ---- roots -----------------------------------------------------------------------------------
HEAPMAN_EXPORT void GC_add_roots(void* low, void* high) {
  HEAPMAN_GC_REAL(GC_add_roots);
  real.get()(low, high);
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  auto lo = reinterpret_cast<uint64_t>(low), hi = reinterpret_cast<uint64_t>(high);
  {
    SpinLock lock;
    if (g_registeredCount < kMaxRegistered) g_registered[g_registeredCount++] = {lo, hi};
  }
  recordRootRange(lo, hi, true);
}
HEAPMAN_EXPORT void GC_remove_roots(void* low, void* high) {
  HEAPMAN_GC_REAL(GC_remove_roots);
  real.get()(low, high);
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  auto lo = reinterpret_cast<uint64_t>(low), hi = reinterpret_cast<uint64_t>(high);
  {
    SpinLock lock;  // bdwgc removes the ranges that lie inside [low, high)
    int k = 0;
    for (int i = 0; i < g_registeredCount; ++i)
      if (!(g_registered[i].low >= lo && g_registered[i].high <= hi))
        g_registered[k++] = g_registered[i];
    g_registeredCount = k;
  }
  recordRootRange(lo, hi, false);
}
HEAPMAN_EXPORT void GC_clear_roots(void) {
  HEAPMAN_GC_REAL(GC_clear_roots);
  real.get()();
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Range copy[kMaxRegistered];
  int n;
  {
    SpinLock lock;
    n = g_registeredCount;
    std::memcpy(copy, g_registered, n * sizeof(Range));
    g_registeredCount = 0;
  }
  for (int i = 0; i < n; ++i) recordRootRange(copy[i].low, copy[i].high, false);
}

HEAPMAN_EXPORT void GC_set_on_thread_event(GC_on_thread_event_proc fn) {
  if (!g.active.load(std::memory_order_relaxed)) return real_GC_set_on_thread_event.get()(fn);
  g_programThreadEvent = fn;
}
HEAPMAN_EXPORT GC_on_thread_event_proc GC_get_on_thread_event(void) {
  if (!g.active.load(std::memory_order_relaxed)) {
    static Real<decltype(::GC_get_on_thread_event)> real{"GC_get_on_thread_event"};
    return real.get()();
  }
  return g_programThreadEvent;
}

// A blocking section: the thread's stack stays a root while fn runs (g_blocked above).
HEAPMAN_EXPORT void* GC_do_blocking(GC_fn_type fn, void* client_data) {
  HEAPMAN_GC_REAL(GC_do_blocking);
  blockingEntered();
  void* result = real.get()(fn, client_data);
  blockingLeft();
  return result;
}

HEAPMAN_EXPORT void GC_register_has_static_roots_callback(GC_has_static_roots_func fn) {
  if (!g.active.load(std::memory_order_relaxed))
    return real_GC_register_has_static_roots_callback.get()(fn);
  g_programStaticRoots = fn;
}
