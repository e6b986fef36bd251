// The bdwgc layer's collections (bdwgc.h): the collector's event callback, chained to the
// program's, turned into the collection sequence every runtime shares (collector/collection.h);
// the finalization queue's entry points (the await-finalize proc, finalizer registrations,
// GC_invoke_finalizers).
#include "bdwgc.h"

namespace heapman::rec::bdwgc {

std::atomic<GC_await_finalize_proc> g_programAwait{nullptr};
decltype(&::GC_call_with_alloc_lock) g_callWithLock = nullptr;

namespace {

GC_on_collection_event_proc g_programCollectionEvent = nullptr;

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

uint32_t g_gcNumber = 0;

void emitGcBegin() {
  g_gcNumber = static_cast<uint32_t>(real_GC_get_gc_no.get()()) + 1;
  rootsBegin();
  gc::collectionBegins(g_gcNumber, heapUsage().heap);
}

}  // namespace

void GC_CALLBACK onCollectionEvent(GC_EventType event) {
  if (g.active.load(std::memory_order_relaxed)) {
    bool was = t_inCallback;
    t_inCallback = true;
    switch (event) {
      case GC_EVENT_START: emitGcBegin(); break;
      case GC_EVENT_PRE_START_WORLD: copyStacksWhileStopped(g_gcNumber); break;
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

}  // namespace heapman::rec::bdwgc

using namespace heapman::rec;
using namespace heapman::rec::bdwgc;

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
