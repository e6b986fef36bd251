// The bdwgc layer (Boehm-Demers-Weiser collector), interposed by LD_PRELOAD on programs linked against
// libgc.so.1: every public allocation entry point, GC_free, GC_realloc, root registration, and
// the collector's event callbacks. Measured facts this relies on are in docs/DESIGN.md §2.0.
// Its files: allocation.cpp (the allocation, free and realloc entry points), roots.cpp (the
// roots of each collection: static data, registered ranges, thread stacks, pushed ranges, marked
// words), collection.cpp (the collector's callbacks, the finalization queue's entry points) and
// init.cpp (the layer's set-up). This header is theirs alone.
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
#pragma once
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

#include "../../collector/collection.h"
#include "../../collector/finalize_queue.h"
#include "../../collector/gc_tracking.h"
#include "../../core/gc_events.h"
#include "../../core/recorder.h"
#include "../layers.h"
#include "heapman/logformat/format.h"

namespace heapman::rec::bdwgc {

using log::HeapKind;
using gc::t_inCallback;

// A libgc function, looked up on first use (init.cpp defines those of every file). dlsym may allocate: the guard sends that to the
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

extern Real<decltype(::GC_base)> real_GC_base;
extern Real<decltype(::GC_mark_and_push)> real_GC_mark_and_push;
extern Real<decltype(::GC_push_all)> real_GC_push_all;
extern Real<decltype(::GC_push_all_eager)> real_GC_push_all_eager;
extern Real<decltype(::GC_push_conditional)> real_GC_push_conditional;
extern Real<decltype(::GC_is_marked)> real_GC_is_marked;
extern Real<decltype(::GC_size)> real_GC_size;
extern Real<decltype(::GC_get_prof_stats_unsafe)> real_GC_get_prof_stats_unsafe;
extern Real<decltype(::GC_get_gc_no)> real_GC_get_gc_no;
extern Real<decltype(::GC_get_kind_and_size)> real_GC_get_kind_and_size;
extern Real<decltype(::GC_set_on_collection_event)> real_GC_set_on_collection_event;
extern Real<decltype(::GC_set_on_thread_event)> real_GC_set_on_thread_event;
extern Real<decltype(::GC_register_has_static_roots_callback)> real_GC_register_has_static_roots_callback;

// Inside a hooked GC_* call (allocation.cpp): libgc's calls of its own public functions through
// the PLT are not recorded again.
extern __thread int t_gcDepth HEAPMAN_TLS;

struct Range {
  uint64_t low, high;
};

// roots.cpp
// A collection starts: the tables the stopped world fills are emptied.
void rootsBegin();
// World stopped, marking done, of collection `gc`: the scanned threads' stacks, copied if the
// collection will be dumped.
void copyStacksWhileStopped(uint32_t gc);
// The root set of the collection that is finishing (allocation lock held).
gc::RootList rootsOfCollection(uint64_t mySp);
void GC_CALLBACK onThreadEvent(GC_EventType event, void* thread);
int GC_CALLBACK onStaticRoots(const char* name, void* start, size_t size);
void blockedAfterFork();
// libgc's extent (from an address in its code) and the modules only the recorder loaded (from
// this module's path): their calls and data are not the program's roots.
void findLibgc(void* inLibgc);
void findOwnModules(const char* self);

// collection.cpp
void GC_CALLBACK onCollectionEvent(GC_EventType event);
void GC_CALLBACK onAwaitFinalize(void* obj);
// The program's await-finalize proc, called after the recorder's (which is installed at start-up
// when libgc has one: gc::finalizeQueueOn()).
extern std::atomic<GC_await_finalize_proc> g_programAwait;
extern decltype(&::GC_call_with_alloc_lock) g_callWithLock;  // resolved at start-up

}  // namespace heapman::rec::bdwgc

// Each entry point's own real function, a function-local static.
#define HEAPMAN_GC_REAL(fn) static ::heapman::rec::bdwgc::Real<decltype(::fn)> real{#fn}
