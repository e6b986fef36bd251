// The Mono layer's collections (mono.h): the collector's events turned into the collection
// sequence every runtime shares (collector/collection.h), and the finalization queue's
// await-finalize proc.
#include "mono.h"

namespace heapman::rec::mono {
namespace {

uint32_t g_gcNumber = 0;

}  // namespace

// The fork's GC_finalize queued `obj` (allocation lock held, world running).
void onAwaitFinalize(void* obj) {
  if (g_on.load(std::memory_order_relaxed)) gc::finalizeQueued(obj, g_gcNumber);
}

// START and END come with the collector's lock held and the world running; of the stop/start-world
// events (the world stopped: no lock, no allocation there) only PRE_START_WORLD is taken, for the
// stacks of a dumped collection. Heap and used
// size: mono_gc_get_heap_size / _used_size read the fork's counters without taking the lock
// (Mono 6.8; unlike libgc 8.2's GC_get_heap_usage_safe, which would deadlock here).
void onGcEvent(MonoProfiler*, MonoProfilerGCEvent event, uint32_t, mono_bool) {
  if (!g_on.load(std::memory_order_relaxed) || !g.active.load(std::memory_order_relaxed)) return;
  if (event == MONO_GC_EVENT_PRE_START_WORLD) {
    bool was = gc::t_inCallback;
    gc::t_inCallback = true;
    copyStacksWhileStopped(g_gcNumber);
    gc::t_inCallback = was;
    return;
  }
  if (event != MONO_GC_EVENT_START && event != MONO_GC_EVENT_END) return;
  Guard guard;
  bool was = gc::t_inCallback;
  gc::t_inCallback = true;
  if (event == MONO_GC_EVENT_START) {
    g_gcNumber = static_cast<uint32_t>(*m.gcNo) + 1;
    gc::collectionBegins(g_gcNumber, static_cast<uint64_t>(m.mono_gc_get_heap_size()));
  } else {
    gc::collectionReclaimed(g_gcNumber, rootsOfCollection);
    auto heap = static_cast<uint64_t>(m.mono_gc_get_heap_size());
    auto used = static_cast<uint64_t>(m.mono_gc_get_used_size());
    gc::collectionEnds(g_gcNumber, heap, heap > used ? heap - used : 0);
  }
  gc::t_inCallback = was;
}

}  // namespace heapman::rec::mono
