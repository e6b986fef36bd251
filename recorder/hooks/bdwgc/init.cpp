// The bdwgc layer's set-up (bdwgc.h): libgc found, its callbacks hooked, the collector's entry
// points handed to the collector layer; and the real libgc functions the layer's files share.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cstdio>

#include "bdwgc.h"

namespace heapman::rec::bdwgc {

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
#undef HEAPMAN_REAL

}  // namespace heapman::rec::bdwgc

namespace heapman::rec {

using namespace bdwgc;

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
  // Its block headers, read directly where found (collector/libgc_headers.h): GC_arrays and its
  // size from the dynamic symbol table.
  Dl_info arraysInfo;
  void* arraysSym = nullptr;
  if (void* arrays = dlsym(RTLD_NEXT, "GC_arrays");
      arrays && dladdr1(arrays, &arraysInfo, &arraysSym, RTLD_DL_SYMENT) && arraysSym &&
      arraysInfo.dli_saddr == arrays) {
    collector.libgcArrays = static_cast<const uint8_t*>(arrays);
    collector.libgcArraysBytes = static_cast<const ElfW(Sym)*>(arraysSym)->st_size;
  }
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
