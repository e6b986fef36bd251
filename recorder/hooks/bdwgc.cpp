// bdwgc (Boehm-Demers-Weiser collector), interposed by LD_PRELOAD on programs linked against
// libgc.so.1: every public allocation entry point, GC_free, GC_realloc, root registration, and
// the collector's event callbacks. Measured facts this relies on are in docs/DESIGN.md §2.0.
//
// Allocations. Each hook calls the real function (found with dlsym(RTLD_NEXT)) and records an
// Alloc with the caller's stack. libgc calls its own public functions through the PLT
// (GC_malloc -> GC_malloc_kind -> GC_generic_malloc, GC_strdup -> GC_malloc_atomic, GC_realloc ->
// GC_free): a thread-local depth counter records only the outermost call. Batch allocators
// (GC_malloc_many, GC_generic_malloc_many) return a list linked through each object's first word;
// every object of it is recorded, with the refill's stack.
//
// Which objects a collection freed, exactly. The program's threads keep no set of live objects
// (gc_tracking.h): the writer thread keeps it from the Alloc and Free records. At
// GC_EVENT_RECLAIM_END (lock held, world running, marks complete, finalizable objects already
// resurrected) libgc lists the objects it marked (GC_enumerate_reachable_objects_inner), which
// the hook copies into a mark-bit snapshot for the writer: a tracked object was collected iff it
// is not in it. Blocks freed whole are not listed at all. Objects other threads allocate while the
// collector finishes come from thread-local free lists, whose objects the collector marked
// (GC_set_fl_marks), so they are never mistaken for garbage. Mark bits stay valid through lazy
// sweeping, until the next collection clears them.
//
// Explicit frees are recorded before the real GC_free (the address may be handed out again at
// once); the writer applies them to its set in sequence order, so a later object at the same
// address survives. Frees of objects the recorder never saw (libgc's own tables, allocated
// without the PLT) are logged like any other; replay counts them as unknown frees.
//
// Collection events: the program's own GC_set_on_collection_event / GC_set_on_thread_event /
// GC_register_has_static_roots_callback callbacks are kept and chained, never replaced. While the
// world is stopped (thread and static-root callbacks) only static arrays are written: no lock, no
// allocation; at PRE_START_WORLD of a dumped collection the thread stacks are copied (system
// calls only: mincore, process_vm_readv, mmap). Everything else happens at RECLAIM_END: the
// mark-bit snapshot, the root set, the RAM dump (memcpy into one mmap'd block; the writer thread
// hashes and compresses it later).
//
// The finalization queue (finalize_queue.h): the recorder's await-finalize proc notes each object
// GC_finalize queues; GC_invoke_finalizers is interposed to know when they left. The program's
// own await-finalize proc is kept and chained like the callbacks above.
#define GC_THREADS
#define GC_NO_THREAD_REDIRECTS
// decltype(GC_malloc) drops gc.h's malloc/alloc_size attributes, which is what we want for the
// pointer types of the real functions.
#pragma GCC diagnostic ignored "-Wignored-attributes"
#include <gc/gc.h>
#include <gc/gc_disclaim.h>
#include <gc/gc_gcj.h>
#include <gc/gc_inline.h>
#include <gc/gc_mark.h>
#include <gc/gc_typed.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../core/gc_events.h"
#include "../core/recorder.h"
#include "layers.h"
#include "../collector/collection.h"
#include "../collector/finalize_queue.h"
#include "../collector/gc_tracking.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::rec {
namespace {

using log::HeapKind;

__thread int t_gcDepth HEAPMAN_TLS = 0;       // inside a hooked GC_* call
using gc::t_inCallback;

// A libgc function, looked up on first use. dlsym may allocate: the guard sends that to the
// real malloc unrecorded.
template <class Fn>
struct Real {
  const char* name;
  std::atomic<Fn*> fn{nullptr};
  Fn* get() {
    Fn* f = fn.load(std::memory_order_relaxed);
    if (__builtin_expect(f == nullptr, 0)) {
      Guard guard;
      f = reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
      if (!f) {
        say("%s not found in the program's libgc; aborting", name);
        abort();  // the program called a libgc function that libgc does not have
      }
      fn.store(f, std::memory_order_relaxed);
    }
    return f;
  }
};
#define HEAPMAN_REAL(fn) Real<decltype(::fn)> real_##fn{#fn}
HEAPMAN_REAL(GC_base);
HEAPMAN_REAL(GC_mark_and_push);
HEAPMAN_REAL(GC_push_all);
HEAPMAN_REAL(GC_push_all_eager);
HEAPMAN_REAL(GC_push_conditional);
HEAPMAN_REAL(GC_is_marked);
HEAPMAN_REAL(GC_size);
HEAPMAN_REAL(GC_get_prof_stats_unsafe);
HEAPMAN_REAL(GC_get_gc_no);
HEAPMAN_REAL(GC_get_kind_and_size);
HEAPMAN_REAL(GC_set_on_collection_event);
HEAPMAN_REAL(GC_set_on_thread_event);
HEAPMAN_REAL(GC_register_has_static_roots_callback);

// ---------------------------------------------------------------------------------------------
// Recording.


inline bool recording() { return !t_gcDepth && !t_guard && g.active.load(std::memory_order_relaxed); }

struct Depth {
  Depth() { ++t_gcDepth; }
  ~Depth() { --t_gcDepth; }
};


// The start of an object as the collector sees it (a GC_debug_* object's recorded address lies
// past its debug header).
inline void* startOf(void* p, bool debug) { return debug ? real_GC_base.get()(p) : p; }

// `from` (a default argument: the calling hook's frame) starts the stack walk at the hook, past
// the recorder's own frames.
__attribute__((noinline)) void onGcAlloc(void* p, size_t size, HeapKind heap, bool debug,
                                         const void* from = __builtin_frame_address(0)) {
  Guard guard;
  uint64_t actual;
  if (debug) {
    void* base = startOf(p, true);
    uint64_t offset = reinterpret_cast<uint64_t>(p) - reinterpret_cast<uint64_t>(base);
    g.gcDebugOffset.store(offset, std::memory_order_relaxed);  // a constant; published by commit()
    actual = real_GC_size.get()(base) - offset;
  } else {
    actual = real_GC_size.get()(p);
  }
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kAlloc, static_cast<uint8_t>(heap), 0, from)) {
    if (debug) e->flags |= kDebugObject;
    e->a = reinterpret_cast<uint64_t>(p);
    e->b = size;
    e->c = std::max<uint64_t>(actual, size);
    commit(r, e);
  }
}

// A batch: the objects of a list linked through their first word, one stack for all.
__attribute__((noinline)) void onGcBatch(void* list, size_t size, HeapKind heap,
                                         const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r = nullptr;
  bool first = true;
  uint16_t stackFlags = 0;  // the first event's stack slot, for the others
  for (void* q = list; q; q = *static_cast<void**>(q)) {
    uint64_t actual = real_GC_size.get()(q);
    RawEvent* e = first ? beginWithStack(r, Kind::kAlloc, 0, 0, from)
                        : r ? begin(r, Kind::kAlloc, 0, 0) : nullptr;
    if (e) {
      if (first)
        stackFlags = static_cast<uint16_t>(kSameStack | e->flags);
      else
        e->flags = stackFlags;
      e->heap = static_cast<uint8_t>(heap);
      e->a = reinterpret_cast<uint64_t>(q);
      e->b = size;
      e->c = std::max<uint64_t>(actual, size);
      commit(r, e);
      first = false;
    }
  }
}

__attribute__((noinline)) void onGcFree(void* p, HeapKind heap, bool debug,
                                        const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kFree, static_cast<uint8_t>(heap), 0, from)) {
    if (debug) e->flags |= kDebugObject;
    e->a = reinterpret_cast<uint64_t>(p);
    commit(r, e);
  }
}

HeapKind heapOfKind(int k) {
  switch (k) {
    case 0: return HeapKind::kGcAtomic;          // PTRFREE
    case 1: return HeapKind::kGcNormal;          // NORMAL
    case 2: case 3: return HeapKind::kGcUncollectable;  // UNCOLLECTABLE, AUNCOLLECTABLE
    default: return HeapKind::kOther;            // kinds the program (or gcj, typed) created
  }
}

HeapKind heapOfObject(void* p, bool debug) {
  Guard guard;
  return heapOfKind(real_GC_get_kind_and_size.get()(startOf(p, debug), nullptr));
}


// Calls the real allocator; records the outermost call.
template <class Fn, class... A>
[[gnu::always_inline]] inline void* gcAlloc(Real<Fn>& real, HeapKind heap, size_t size, bool debug,
                                            A... args) {
  Fn* f = real.get();
  if (!recording()) return f(args...);
  void* p;
  {
    Depth d;
    p = f(args...);
  }
  if (p) onGcAlloc(p, size, heap, debug);
  return p;
}

// realloc, recorded as a free of the old object before the real call (the collector may hand
// its address to another thread at once) and an allocation of the result after it. Not one
// two-phase event around the call: the call may run a collection, whose callback emits events
// on this same thread.
template <class Fn, class... A>
[[gnu::always_inline]] inline void* gcRealloc(Real<Fn>& real, void* old, size_t n, bool debug,
                                              A... args) {
  Fn* f = real.get();
  if (!recording()) return f(args...);
  void* p;
  if (!old) {
    {
      Depth d;
      p = f(args...);
    }
    if (p) onGcAlloc(p, n, HeapKind::kGcNormal, debug);
    return p;
  }
  HeapKind heap = heapOfObject(old, debug);
  onGcFree(old, heap, debug);
  {
    Depth d;
    p = f(args...);
  }
  if (p)
    onGcAlloc(p, n, heap, debug);
  else if (n != 0)  // failed: the old object stays
    onGcAlloc(old,
              real_GC_size.get()(startOf(old, debug)) -
                  (debug ? g.gcDebugOffset.load(std::memory_order_relaxed) : 0),
              heap, debug);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Roots registered with GC_add_roots, kept for the root set of each collection. A tiny spinlock:
// the callers are rare and never inside the stopped world.

struct Range {
  uint64_t low, high;
};
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

// ---------------------------------------------------------------------------------------------
// Collection callbacks.

GC_on_collection_event_proc g_programCollectionEvent = nullptr;
GC_on_thread_event_proc g_programThreadEvent = nullptr;
GC_has_static_roots_func g_programStaticRoots = nullptr;
// The program's await-finalize proc, called after the recorder's (which is installed at start-up
// when libgc has one: gc::finalizeQueueOn()).
std::atomic<GC_await_finalize_proc> g_programAwait{nullptr};
decltype(&::GC_call_with_alloc_lock) g_callWithLock = nullptr;  // resolved at start-up

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

// In a child only the forking thread is left.
void blockedAfterFork() {
  for (auto& slot : g_blocked) slot.store(0, std::memory_order_relaxed);
  if (t_blockingDepth) g_blocked[0].store(static_cast<uint64_t>(pthread_self()));
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

uint32_t g_gcNumber = 0;

// Heap size and free bytes, mapped memory only. The unsynchronized getter: the callers hold the
// allocation lock (GC_get_heap_usage_safe takes it in libgc 8.2 and would deadlock here).
struct HeapUsage {
  uint64_t heap = 0, free = 0;
};
HeapUsage heapUsage() {
  GC_prof_stats_s st{};
  real_GC_get_prof_stats_unsafe.get()(&st, sizeof st);
  return {st.heapsize_full - st.unmapped_bytes, st.free_bytes_full - st.unmapped_bytes};
}

void emitGcBegin() {
  g_gcNumber = static_cast<uint32_t>(real_GC_get_gc_no.get()()) + 1;
  g_staticCount.store(0, std::memory_order_relaxed);
  g_suspendedCount.store(0, std::memory_order_relaxed);
  g_markedCount.store(0, std::memory_order_relaxed);
  g_pushedCount.store(0, std::memory_order_relaxed);
  gc::collectionBegins(g_gcNumber, heapUsage().heap);
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
void copyStacksWhileStopped() {
  if (!gc::dumpPlanned(g_gcNumber)) return;
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

void GC_CALLBACK onCollectionEvent(GC_EventType event) {
  if (g.active.load(std::memory_order_relaxed)) {
    bool was = t_inCallback;
    t_inCallback = true;
    switch (event) {
      case GC_EVENT_START: emitGcBegin(); break;
      case GC_EVENT_PRE_START_WORLD: copyStacksWhileStopped(); break;
      case GC_EVENT_RECLAIM_END: gc::collectionReclaimed(g_gcNumber, rootsOfCollection); break;
      case GC_EVENT_END: {
        HeapUsage use = heapUsage();
        gc::collectionEnds(g_gcNumber, use.heap, use.free);
        break;
      }
      default: break;  // MARK_END and the other stop-world events: nothing to do
    }
    t_inCallback = was;
  }
  if (g_programCollectionEvent) g_programCollectionEvent(event);
}

// GC_finalize queued `obj` for its finalizer (allocation lock held, world running).
void GC_CALLBACK onAwaitFinalize(void* obj) {
  if (g.active.load(std::memory_order_relaxed)) gc::finalizeQueued(obj, g_gcNumber);
  if (GC_await_finalize_proc program = g_programAwait.load(std::memory_order_acquire)) program(obj);
}

void GC_CALLBACK onThreadEvent(GC_EventType event, void* thread) {
  if (event == GC_EVENT_THREAD_SUSPENDED) {
    int i = g_suspendedCount.fetch_add(1, std::memory_order_relaxed);
    if (i < kMaxSuspended) g_suspended[i] = reinterpret_cast<pthread_t>(thread);
  }
  if (g_programThreadEvent) g_programThreadEvent(event, thread);
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

}  // namespace

void initBdwgc() {
  Guard guard;
  void* setter = dlsym(RTLD_NEXT, "GC_set_on_collection_event");
  if (!setter) return;  // not a bdwgc program
  gc::Collector collector;
  collector.isMarked = real_GC_is_marked.get();
  // Called while the world is stopped (mark procedures, noteMarked): resolved now, since dlsym
  // may take a lock a stopped thread holds.
  real_GC_base.get();
  real_GC_mark_and_push.get();
  real_GC_push_all.get();
  real_GC_push_all_eager.get();
  real_GC_push_conditional.get();
  findLibgc(reinterpret_cast<void*>(real_GC_base.get()));
  collector.size = real_GC_size.get();
  // libgc >= 7.6 (Debian 12 has 8.2); without it collected sets are not recorded.
  collector.enumerateReachable = reinterpret_cast<decltype(collector.enumerateReachable)>(
      dlsym(RTLD_NEXT, "GC_enumerate_reachable_objects_inner"));
  gc::initTracking(collector);
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&initBdwgc), &self) && self.dli_fname)
    findOwnModules(self.dli_fname);
  if (auto* version = reinterpret_cast<unsigned (*)()>(dlsym(RTLD_NEXT, "GC_get_version"))) {
    unsigned v = version();
    std::snprintf(g.bdwgcVersion, sizeof g.bdwgcVersion, "%u.%u.%u", v >> 16,
                  (v >> 8) & 0xFF, v & 0xFF);
  }
  // Whether the collector takes interior pointers (Debian's libgc: yes, unless the program turns
  // it off before GC_INIT): the heap graph follows the same rule. Read once, at start.
  if (auto* interior = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "GC_get_all_interior_pointers")))
    g.gcInteriorPointers = static_cast<int8_t>(interior() != 0);
  pthread_atfork(nullptr, nullptr, blockedAfterFork);
  real_GC_set_on_collection_event.get()(onCollectionEvent);
  real_GC_set_on_thread_event.get()(onThreadEvent);
  real_GC_register_has_static_roots_callback.get()(onStaticRoots);
  // The finalization queue (libgc >= 7.4 has the await-finalize proc; without it, no such root).
  auto* setAwait = reinterpret_cast<decltype(&::GC_set_await_finalize_proc)>(
      dlsym(RTLD_NEXT, "GC_set_await_finalize_proc"));
  auto* getAwait = reinterpret_cast<decltype(&::GC_get_await_finalize_proc)>(
      dlsym(RTLD_NEXT, "GC_get_await_finalize_proc"));
  auto* pending = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "GC_should_invoke_finalizers"));
  g_callWithLock = reinterpret_cast<decltype(&::GC_call_with_alloc_lock)>(
      dlsym(RTLD_NEXT, "GC_call_with_alloc_lock"));
  if (setAwait && getAwait && pending && g_callWithLock) {
    gc::FinalizeQueueCollector fc;
    fc.isMarked = collector.isMarked;
    fc.base = real_GC_base.get();
    fc.pending = pending;
    fc.popsReported = true;  // GC_invoke_finalizers is interposed: libgc's own calls too
    gc::initFinalizeQueue(fc);
    g_programAwait.store(getAwait(), std::memory_order_relaxed);
    setAwait(onAwaitFinalize);
  }
}

}  // namespace heapman::rec

using namespace heapman::rec;
using heapman::log::HeapKind;

#define HEAPMAN_GC_REAL(fn) static Real<decltype(::fn)> real{#fn}

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

// ---- allocation entry points --------------------------------------------------------------
HEAPMAN_EXPORT void* GC_malloc(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic);
  return gcAlloc(real, HeapKind::kGcAtomic, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_uncollectable(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic_uncollectable(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_ignore_off_page(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic_ignore_off_page(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcAtomic, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_kind(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_malloc_kind);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_malloc_kind_global(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_malloc_kind_global);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc_ignore_off_page(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc_ignore_off_page);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc_uncollectable(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_or_special_malloc(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_or_special_malloc);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_gcj_malloc(size_t n, void* vtable) {
  HEAPMAN_GC_REAL(GC_gcj_malloc);
  return gcAlloc(real, HeapKind::kGcj, n, false, n, vtable);
}
HEAPMAN_EXPORT void* GC_gcj_malloc_ignore_off_page(size_t n, void* vtable) {
  HEAPMAN_GC_REAL(GC_gcj_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcj, n, false, n, vtable);
}
HEAPMAN_EXPORT void* GC_malloc_explicitly_typed(size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_malloc_explicitly_typed);
  return gcAlloc(real, HeapKind::kGcTyped, n, false, n, d);
}
HEAPMAN_EXPORT void* GC_malloc_explicitly_typed_ignore_off_page(size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_malloc_explicitly_typed_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcTyped, n, false, n, d);
}
HEAPMAN_EXPORT void* GC_calloc_explicitly_typed(size_t count, size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_calloc_explicitly_typed);
  size_t bytes = count * n;
  if (__builtin_mul_overflow(count, n, &bytes)) bytes = SIZE_MAX;
  return gcAlloc(real, HeapKind::kGcTyped, bytes, false, count, n, d);
}
HEAPMAN_EXPORT void* GC_finalized_malloc(size_t n, const struct GC_finalizer_closure* fc) {
  HEAPMAN_GC_REAL(GC_finalized_malloc);
  return gcAlloc(real, HeapKind::kOther, n, false, n, fc);
}
HEAPMAN_EXPORT void* GC_memalign(size_t align, size_t n) {
  HEAPMAN_GC_REAL(GC_memalign);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, align, n);
}
HEAPMAN_EXPORT int GC_posix_memalign(void** out, size_t align, size_t n) {
  HEAPMAN_GC_REAL(GC_posix_memalign);
  auto* f = real.get();
  if (!recording()) return f(out, align, n);
  int rc;
  {
    Depth d;
    rc = f(out, align, n);
  }
  if (rc == 0 && *out) onGcAlloc(*out, n, HeapKind::kGcNormal, false);
  return rc;
}
HEAPMAN_EXPORT char* GC_strdup(const char* s) {
  HEAPMAN_GC_REAL(GC_strdup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, s ? std::strlen(s) + 1 : 0, false, s));
}
HEAPMAN_EXPORT char* GC_strndup(const char* s, size_t n) {
  HEAPMAN_GC_REAL(GC_strndup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, strnlen(s, n) + 1, false, s, n));
}
HEAPMAN_EXPORT void* GC_malloc_many(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_many);
  auto* f = real.get();
  if (!recording()) return f(n);
  void* list;
  {
    Depth d;
    list = f(n);
  }
  if (list) onGcBatch(list, n, HeapKind::kGcNormal);
  return list;
}
HEAPMAN_EXPORT void GC_generic_malloc_many(size_t n, int k, void** result) {
  HEAPMAN_GC_REAL(GC_generic_malloc_many);
  auto* f = real.get();
  if (!recording()) return f(n, k, result);
  {
    Depth d;
    f(n, k, result);
  }
  if (*result) onGcBatch(*result, n, heapOfKind(k));
}

// ---- the GC_debug_* family: the program's pointer lies past a debug header -------------------
HEAPMAN_EXPORT void* GC_debug_malloc(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic);
  return gcAlloc(real, HeapKind::kGcAtomic, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_uncollectable(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic_uncollectable(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_ignore_off_page(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic_ignore_off_page(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcAtomic, n, true, n, s, i);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still exported and callable
HEAPMAN_EXPORT void* GC_debug_malloc_stubborn(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_stubborn);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
#pragma GCC diagnostic pop
HEAPMAN_EXPORT void* GC_debug_gcj_malloc(size_t n, void* vtable, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_gcj_malloc);
  return gcAlloc(real, HeapKind::kGcj, n, true, n, vtable, s, i);
}
HEAPMAN_EXPORT char* GC_debug_strdup(const char* str, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_strdup);
  return static_cast<char*>(
      gcAlloc(real, HeapKind::kGcAtomic, str ? std::strlen(str) + 1 : 0, true, str, s, i));
}
HEAPMAN_EXPORT char* GC_debug_strndup(const char* str, size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_strndup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, strnlen(str, n) + 1, true, str, n, s, i));
}
HEAPMAN_EXPORT void* GC_debug_malloc_replacement(size_t n) {
  HEAPMAN_GC_REAL(GC_debug_malloc_replacement);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n);
}

// ---- frees and reallocs ----------------------------------------------------------------------
HEAPMAN_EXPORT void GC_free(void* p) {
  HEAPMAN_GC_REAL(GC_free);
  auto* f = real.get();
  if (!p || !recording()) return f(p);
  onGcFree(p, heapOfObject(p, false), false);
  Depth d;
  f(p);
}
HEAPMAN_EXPORT void GC_debug_free(void* p) {
  HEAPMAN_GC_REAL(GC_debug_free);
  auto* f = real.get();
  if (!p || !recording()) return f(p);
  onGcFree(p, heapOfObject(p, true), true);
  Depth d;
  f(p);
}
HEAPMAN_EXPORT void* GC_realloc(void* old, size_t n) {
  HEAPMAN_GC_REAL(GC_realloc);
  return gcRealloc(real, old, n, false, old, n);
}
HEAPMAN_EXPORT void* GC_debug_realloc(void* old, size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_realloc);
  return gcRealloc(real, old, n, true, old, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_realloc_replacement(void* old, size_t n) {
  HEAPMAN_GC_REAL(GC_debug_realloc_replacement);
  return gcRealloc(real, old, n, true, old, n);
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

// ---- callbacks the program installs: kept and chained ----------------------------------------
HEAPMAN_EXPORT void GC_set_on_collection_event(GC_on_collection_event_proc fn) {
  if (!g.active.load(std::memory_order_relaxed)) return real_GC_set_on_collection_event.get()(fn);
  g_programCollectionEvent = fn;
}
HEAPMAN_EXPORT GC_on_collection_event_proc GC_get_on_collection_event(void) {
  if (!g.active.load(std::memory_order_relaxed)) {
    static Real<decltype(::GC_get_on_collection_event)> real{"GC_get_on_collection_event"};
    return real.get()();
  }
  return g_programCollectionEvent;
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
HEAPMAN_EXPORT void GC_set_await_finalize_proc(GC_await_finalize_proc fn) {
  if (!gc::finalizeQueueOn()) {
    static Real<decltype(::GC_set_await_finalize_proc)> real{"GC_set_await_finalize_proc"};
    return real.get()(fn);
  }
  g_programAwait.store(fn, std::memory_order_release);
}
HEAPMAN_EXPORT GC_await_finalize_proc GC_get_await_finalize_proc(void) {
  if (!gc::finalizeQueueOn()) {
    static Real<decltype(::GC_get_await_finalize_proc)> real{"GC_get_await_finalize_proc"};
    return real.get()();
  }
  return g_programAwait.load(std::memory_order_acquire);
}
// Finalizer registrations: the collector's entry holds the client data `cd` alive (and, once the
// object is queued, the queue does): the queue root lists it beside the object. The GC_debug_*
// variants register through these (libgc calls them through the PLT).
template <class Fn>
[[gnu::always_inline]] inline void registerFinalizer(Real<Fn>& real, void* obj,
                                                     GC_finalization_proc fn, void* cd,
                                                     GC_finalization_proc* ofn, void** ocd) {
  real.get()(obj, fn, cd, ofn, ocd);
  if (gc::finalizeQueueOn() && obj) gc::finalizerRegistered(obj, fn != nullptr, cd);
}
HEAPMAN_EXPORT void GC_register_finalizer(void* obj, GC_finalization_proc fn, void* cd,
                                          GC_finalization_proc* ofn, void** ocd) {
  HEAPMAN_GC_REAL(GC_register_finalizer);
  registerFinalizer(real, obj, fn, cd, ofn, ocd);
}
HEAPMAN_EXPORT void GC_register_finalizer_ignore_self(void* obj, GC_finalization_proc fn, void* cd,
                                                      GC_finalization_proc* ofn, void** ocd) {
  HEAPMAN_GC_REAL(GC_register_finalizer_ignore_self);
  registerFinalizer(real, obj, fn, cd, ofn, ocd);
}
HEAPMAN_EXPORT void GC_register_finalizer_no_order(void* obj, GC_finalization_proc fn, void* cd,
                                                   GC_finalization_proc* ofn, void** ocd) {
  HEAPMAN_GC_REAL(GC_register_finalizer_no_order);
  registerFinalizer(real, obj, fn, cd, ofn, ocd);
}
HEAPMAN_EXPORT void GC_register_finalizer_unreachable(void* obj, GC_finalization_proc fn, void* cd,
                                                      GC_finalization_proc* ofn, void** ocd) {
  HEAPMAN_GC_REAL(GC_register_finalizer_unreachable);
  registerFinalizer(real, obj, fn, cd, ofn, ocd);
}

// A blocking section: the thread's stack stays a root while fn runs (g_blocked above).
HEAPMAN_EXPORT void* GC_do_blocking(GC_fn_type fn, void* client_data) {
  HEAPMAN_GC_REAL(GC_do_blocking);
  blockingEntered();
  void* result = real.get()(fn, client_data);
  blockingLeft();
  return result;
}

// Runs finalizers until the collector's queue is empty: when it returns, every object queued by a
// collection that had finished before the call began has left the queue.
HEAPMAN_EXPORT int GC_invoke_finalizers(void) {
  HEAPMAN_GC_REAL(GC_invoke_finalizers);
  uint32_t settled = gc::finalizersBegin();
  // libgc runs them from inside an allocation too (GC_generic_malloc -> ...
  // GC_notify_or_invoke_finalizers, when finalization is not on demand): their allocations are
  // the program's own, recorded as outermost calls.
  int depth = t_gcDepth;
  t_gcDepth = 0;
  int n = real.get()();
  t_gcDepth = depth;
  gc::finalizersRanThrough(settled);
  // The call returned when the collector's queue was empty; if it still is (no collection can
  // queue while we hold the lock), every listed object has left. The caller never holds the lock
  // here: GC_invoke_finalizers takes it itself.
  if (gc::finalizeQueueOn())
    g_callWithLock(
        [](void*) -> void* {
          gc::finalizeQueueIfEmpty();
          return nullptr;
        },
        nullptr);
  return n;
}

HEAPMAN_EXPORT void GC_register_has_static_roots_callback(GC_has_static_roots_func fn) {
  if (!g.active.load(std::memory_order_relaxed))
    return real_GC_register_has_static_roots_callback.get()(fn);
  g_programStaticRoots = fn;
}
