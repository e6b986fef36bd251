// The Mono layer's roots (mono.h): registered roots with their source and name, the threads Mono
// knows, GC handles and finalizations; and the root set of a collection, thread stacks as the
// fork's collector scanned them.
#include <string>

#include "mono.h"

namespace heapman::rec::mono {
namespace {

// Roots and threads. Registered roots and the threads Mono knows are kept for the root set of
// each collection; a spinlock guards both (rare callers, never while the world is stopped).

struct RegisteredRoot {
  uint64_t low, size;
  uint8_t source;
};
constexpr int kMaxRoots = 16384;
RegisteredRoot g_rootRanges[kMaxRoots];
int g_rootCount = 0;

struct MonoThread {
  pthread_t self;
  uint64_t low, high;
  uint32_t index;
};
constexpr int kMaxThreads = 1024;
MonoThread g_threads[kMaxThreads];
int g_threadCount = 0;

std::atomic<bool> g_lock{false};
struct SpinLock : gc::SpinLock {
  SpinLock() : gc::SpinLock(g_lock) {}
};

RootSource rootSourceOf(MonoGCRootSource s) {
  switch (s) {
    case MONO_ROOT_SOURCE_STATIC: return RootSource::kMonoStatic;
    case MONO_ROOT_SOURCE_THREAD_STATIC:
    case MONO_ROOT_SOURCE_CONTEXT_STATIC: return RootSource::kMonoThreadStatic;
    case MONO_ROOT_SOURCE_DOMAIN: return RootSource::kMonoDomain;
    case MONO_ROOT_SOURCE_GC_HANDLE:
    case MONO_ROOT_SOURCE_HANDLE: return RootSource::kMonoHandle;
    case MONO_ROOT_SOURCE_STACK: return RootSource::kMonoStack;
    case MONO_ROOT_SOURCE_EXTERNAL: return RootSource::kRegistered;
    default: return RootSource::kOther;
  }
}

// A class's static data ("Static Fields", keyed by its MonoVTable: mono_class_create_runtime_vtable
// registers it while creating the vtable, its fields laid out already), named for the graph and
// the leak report: "static fields of Game.Program: ScoreChanged +0x0, levels +0x8" (the
// reference fields, by offset in the block; at most 8, then "...").
std::string staticFieldsLabel(const void* vtable, uintptr_t size) {
  auto* klass = m.mono_vtable_class(const_cast<MonoVTable*>(static_cast<const MonoVTable*>(vtable)));
  if (!klass) return {};
  char* typeName = m.mono_type_get_name(m.mono_class_get_type(klass));
  if (!typeName) return {};
  std::string label = std::string("static fields of ") + typeName;
  m.mono_free(typeName);
  void* iter = nullptr;
  int listed = 0;
  while (MonoClassField* f = m.mono_class_get_fields(klass, &iter)) {
    int flags = m.mono_field_get_flags(f);
    if (!(flags & kFieldStatic) || (flags & kFieldLiteral)) continue;  // constants have no slot
    if (!m.mono_type_is_reference(m.mono_field_get_type(f))) continue;
    int off = m.mono_field_get_offset(f);
    if (off < 0 || static_cast<uintptr_t>(off) >= size) continue;  // thread-static, constants
    if (listed == 8 || label.size() > 200) {  // the log keeps 255 bytes of a label
      label += ", ...";
      break;
    }
    char at[24];
    std::snprintf(at, sizeof at, " +0x%x", off);
    label += (listed++ ? ", " : ": ") + std::string(m.mono_field_get_name(f)) + at;
  }
  return label;
}





// GC handles (GCHandle.Alloc/Free, WeakReference, the runtime's own) and finalizations (the
// collector found the object unreachable; a later collection frees it).
void emitPlain(Kind kind, uint8_t heap, uint64_t a, uint64_t b, uint64_t c) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  Ring* r = threadRing();
  if (!r) return;
  if (RawEvent* e = begin(r, kind, 0, 0)) {
    e->heap = heap;
    e->a = a;
    e->b = b;
    e->c = c;
    commit(r, e);
  }
}

uint8_t handleTypeOf(MonoGCHandleType t) {
  switch (t) {
    case MONO_GC_HANDLE_WEAK: return static_cast<uint8_t>(log::GcHandleType::kWeak);
    case MONO_GC_HANDLE_WEAK_TRACK_RESURRECTION:
      return static_cast<uint8_t>(log::GcHandleType::kWeakTrackResurrection);
    case MONO_GC_HANDLE_NORMAL: return static_cast<uint8_t>(log::GcHandleType::kNormal);
    case MONO_GC_HANDLE_PINNED: return static_cast<uint8_t>(log::GcHandleType::kPinned);
    default: return static_cast<uint8_t>(log::GcHandleType::kOther);
  }
}




RootSetEntry* g_roots = nullptr;  // kMaxRoots + kMaxThreads + 1 entries, mmap'd once

// The thread stacks as the collector scanned them. Mono's fork keeps its threads in GC_threads
// (exported: 128 hash chains of GC_Thread_Rep, changed only under the allocation lock, which the
// END callback holds), and its GC_push_all_stacks scans, for each thread not finished, from the
// stack pointer the thread saved when it was suspended for this collection (stop_info.stack_ptr;
// the collecting thread: its own) up to stack_end (GC_stackbottom for the main thread). Layout
// read off that function in Mono 6.8's fork: next at 0, the pthread_t at 8, stack_ptr at 0x20,
// flags (16 bits) at 0x28 (1: finished, 4: the main thread), stack_end at 0x30. Each collection
// checks it (every thread's range inside the stack pthread_getattr_np gave it, where the thread
// is known; the collecting thread present) and leaves it for good on any disagreement, for the
// estimate below.
//
// The estimate, from the threads Mono reported (thread_started) and their pthread stacks, starts
// each range at the lowest resident page. On mono-boehm that lost whole stacks: Mono puts a
// 32 KiB PROT_NONE guard a page above the low end of each thread's stack, and once the page under
// the guard is resident the range starts there and the dump's copy stops at the guard, one page
// in; the main thread's (its 8 MiB reservation, mostly unmapped: mincore fails) was left out
// whenever another thread collected. Objects held only from those stacks were "alive but
// unreachable" (docs/DESIGN.md 3.7).
struct GcThreadLayout {
  static constexpr size_t kChains = 128, kNext = 0, kId = 8, kStackPtr = 0x20, kFlags = 0x28,
                          kStackEnd = 0x30;
  static constexpr uint16_t kFinished = 1, kMainThread = 4;
};
void* const* g_gcThreads = nullptr;         // GC_threads
const uint64_t* g_gcStackBottom = nullptr;  // GC_stackbottom
const int* g_gcInCreation = nullptr;        // GC_in_thread_creation
bool g_gcThreadsOff = false;

template <class T>
T fieldOf(const void* rep, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(rep) + offset, sizeof v);
  return v;
}

// Appends the collector's stack ranges to g_roots[n...]; false (nothing appended) where the
// layout does not hold. Allocation lock held, our spinlock held (g_threads).
// Calls fn(thread, stackPtr, stackEnd) for each thread of GC_threads not finished, as the
// collector scans it: from the stack pointer it saved when suspended to its stack end
// (GC_stackbottom for the main thread), until fn returns false. Only reads the table.
template <class Fn>
void forEachCollectorThread(Fn&& fn) {
  using L = GcThreadLayout;
  for (size_t chain = 0; chain < L::kChains; ++chain)
    for (const void* rep = g_gcThreads[chain]; rep; rep = fieldOf<const void*>(rep, L::kNext)) {
      auto flags = fieldOf<uint16_t>(rep, L::kFlags);
      if (flags & L::kFinished) continue;
      uint64_t hi =
          (flags & L::kMainThread) ? *g_gcStackBottom : fieldOf<uint64_t>(rep, L::kStackEnd);
      if (!fn(fieldOf<pthread_t>(rep, L::kId), fieldOf<uint64_t>(rep, L::kStackPtr), hi)) return;
    }
}

bool collectorStacks(uint64_t mySp, size_t& n) {
  if (g_gcThreadsOff || !g_gcThreads || !g_gcStackBottom) return false;
  size_t first = n;
  bool self = false, ok = true;
  forEachCollectorThread([&](pthread_t id, uint64_t stackPtr, uint64_t hi) {
    bool mine = pthread_equal(id, pthread_self());
    self = self || mine;
    uint64_t lo = mine ? mySp : stackPtr;
    ok = lo && lo < hi && hi - lo < (uint64_t{1} << 30);
    for (int i = 0; i < g_threadCount && ok; ++i)
      if (pthread_equal(g_threads[i].self, id) && g_threads[i].high)
        ok = lo >= g_threads[i].low && lo < g_threads[i].high && hi > g_threads[i].low &&
             hi <= g_threads[i].high + (uint64_t{1} << 20);  // GC_stackbottom: above argv
    if (ok && n - first < static_cast<size_t>(kMaxThreads)) {
      uint64_t from = gc::stoppedStackLow(hi);  // copied while the world was stopped
      if (!from) from = lo & ~uint64_t{7};
      g_roots[n++] = {from, hi - from, gc::threadIndexOf(id),
                      static_cast<uint8_t>(RootSource::kThreadStack), {}};
    }
    return ok;
  });
  // The collecting thread is missing only while it registers (its record is being allocated):
  // the collector then scans only its own frames, no range of this thread's (GC_push_all_stacks
  // aborts on any other case).
  if (ok && (self || (g_gcInCreation && *g_gcInCreation))) return true;
  n = first;
  g_gcThreadsOff = true;
  say("Mono layer: the collector's thread table does not read as Mono 6.8's; thread stacks are "
      "estimated from their resident pages");
  return false;
}


size_t collectRoots(uint64_t mySp) {
  if (!g_roots) g_roots = static_cast<RootSetEntry*>(
      gc::mapBytes((kMaxRoots + kMaxThreads + 1) * sizeof(RootSetEntry)));
  if (!g_roots) return 0;
  size_t n = 0;
  SpinLock lock;
  // Mono's "Thread Stack" registrations (MONO_ROOT_SOURCE_STACK: the whole reservation, for
  // profilers; the collector never scans them so) are left out: the stacks come next.
  for (int i = 0; i < g_rootCount; ++i)
    if (g_rootRanges[i].size &&
        g_rootRanges[i].source != static_cast<uint8_t>(RootSource::kMonoStack))
      g_roots[n++] = {g_rootRanges[i].low, g_rootRanges[i].size, log::kRecorderThread,
                      g_rootRanges[i].source, {}};
  if (collectorStacks(mySp, n)) return n;
  for (int i = 0; i < g_threadCount; ++i) {
    const MonoThread& t = g_threads[i];
    if (!t.high) continue;
    bool self = pthread_equal(t.self, pthread_self());
    uint64_t from = gc::stackInUse(t.low, t.high, self ? mySp : 0);
    if (from < t.high)
      g_roots[n++] = {from, t.high - from, t.index,
                      static_cast<uint8_t>(RootSource::kThreadStack), {}};
  }
  return n;
}

}  // namespace

void onRootRegister(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source,
                    const void* key, const char* name) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  std::string label;
  if (source == MONO_ROOT_SOURCE_STATIC && key && name && std::strcmp(name, "Static Fields") == 0)
    label = staticFieldsLabel(key, size);
  if (!label.empty()) name = label.c_str();
  RootSource src = rootSourceOf(source);
  auto low = reinterpret_cast<uint64_t>(start);
  {
    SpinLock lock;
    if (g_rootCount < kMaxRoots) g_rootRanges[g_rootCount++] = {low, size, static_cast<uint8_t>(src)};
  }
  gc::emitRootRange(low, size, true, src, name);
}

void onRootUnregister(MonoProfiler*, const mono_byte* start) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  auto low = reinterpret_cast<uint64_t>(start);
  RegisteredRoot gone{low, 0, static_cast<uint8_t>(RootSource::kOther)};
  {
    SpinLock lock;
    for (int i = g_rootCount - 1; i >= 0; --i)
      if (g_rootRanges[i].low == low) {
        gone = g_rootRanges[i];
        g_rootRanges[i] = g_rootRanges[--g_rootCount];
        break;
      }
  }
  gc::emitRootRange(low, gone.size, false, static_cast<RootSource>(gone.source));
}

void onThreadStarted(MonoProfiler*, uintptr_t) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  Ring* r = threadRing();  // the thread's ThreadStart record, with its stack range
  uint64_t low = r ? r->stackLow : 0, high = r ? r->stackHigh : 0;
  if (!r) threadStackBounds(pthread_self(), low, high);
  SpinLock lock;
  for (int i = 0; i < g_threadCount; ++i)
    if (pthread_equal(g_threads[i].self, pthread_self())) return;
  if (g_threadCount < kMaxThreads)
    g_threads[g_threadCount++] = {pthread_self(), low, high, r ? r->index : log::kRecorderThread};
}

void onThreadStopped(MonoProfiler*, uintptr_t) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  SpinLock lock;
  for (int i = 0; i < g_threadCount; ++i)
    if (pthread_equal(g_threads[i].self, pthread_self())) {
      g_threads[i] = g_threads[--g_threadCount];
      break;
    }
}

void onHandleCreated(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj) {
  emitPlain(Kind::kGcHandle, handleTypeOf(type), handle, reinterpret_cast<uint64_t>(obj), 1);
}

void onHandleDeleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type) {
  emitPlain(Kind::kGcHandle, handleTypeOf(type), handle, 0, 0);
}

void onFinalizing(MonoProfiler*, MonoObject* obj) {
  if (g_on.load(std::memory_order_relaxed)) gc::finalizerStarting(obj);
  emitPlain(Kind::kFinalize, 0, reinterpret_cast<uint64_t>(obj), 0, 0);
}

// World stopped, marking done (MONO_GC_EVENT_PRE_START_WORLD) of a collection that will be
// dumped: each thread's stack as the collector scanned it, from the pointer it saved when it was
// suspended to its end, copied before it resumes (gc_tracking.h); the collecting thread's own
// from its lowest mapped page (the collector scanned it from its marking frames, returned by now).
// Read from GC_threads, which only the collecting thread changes, under the allocation lock it
// holds; no lock of ours (a stopped thread may hold one), no allocation. The END callback checks
// the table's layout (collectorStacks) and takes these copies where the ranges agree.
void copyStacksWhileStopped(uint32_t gc) {
  if (g_gcThreadsOff || !g_gcThreads || !g_gcStackBottom || !gc::dumpPlanned(gc)) return;
  gc::beginStoppedStacks();
  forEachCollectorThread([](pthread_t id, uint64_t stackPtr, uint64_t hi) {
    uint64_t lo = stackPtr & ~uint64_t{7}, low, high;
    if (pthread_equal(id, pthread_self())) {
      if (!gc::cachedStackOf(id, low, high)) return true;
      lo = gc::stackInUse(low, std::max(high, hi), 0);
    }
    if (lo && lo < hi && hi - lo < (uint64_t{1} << 30)) gc::copyStoppedStack(lo, hi);
    return true;
  });
}

gc::RootList rootsOfCollection(uint64_t mySp) {
  size_t n = collectRoots(mySp);
  return {g_roots, n, g_roots ? size_t{kMaxRoots + kMaxThreads + 1} : 0};
}

void findCollectorThreads() {
  // The thread table only where its symbol has the size of 128 chain heads: the chains are
  // followed before the layout can be checked.
  g_gcThreads = static_cast<void* const*>(dlsym(RTLD_DEFAULT, "GC_threads"));
  Dl_info where;
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  if (g_gcThreads && (!dladdr1(g_gcThreads, &where, &entry, RTLD_DL_SYMENT) || !entry ||
                      static_cast<const ElfW(Sym)*>(entry)->st_size !=
                          GcThreadLayout::kChains * sizeof(void*)))
    g_gcThreads = nullptr;
  g_gcStackBottom = static_cast<const uint64_t*>(dlsym(RTLD_DEFAULT, "GC_stackbottom"));
  g_gcInCreation = static_cast<const int*>(dlsym(RTLD_DEFAULT, "GC_in_thread_creation"));
}

}  // namespace heapman::rec::mono
