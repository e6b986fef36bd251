// The Mono layer: Mono with the Boehm collector (mono-boehm), through Mono's profiler API: the preload module is
// also the profiler module "heapman". mono-boehm links its Boehm fork statically into a stripped
// PIE, so LD_PRELOAD sees none of its allocations (docs/DESIGN.md §2.0); heaprec sets
// MONO_ENV_OPTIONS=--profile=heapman, and Mono finds mono_profiler_init_heapman in the process's
// global scope, where the preloaded module is. The module never links libmono: every Mono
// function is looked up with dlsym(RTLD_DEFAULT) when Mono calls the entry point.
//
// What is recorded:
// - every managed allocation (gc_allocation): address, size (mono_object_get_size), the
//   collector's size (GC_size), the class (a TypeDef the first time a class is seen, named by
//   mono_type_get_name: generic and nested classes spelled out), and the managed stack;
// - collections: GcBegin at MONO_GC_EVENT_START (the collector's lock held), and at
//   MONO_GC_EVENT_END a snapshot of the mark bits of every block in use, from which the writer
//   thread derives exactly which tracked objects the collection freed (gc_tracking.h; Mono
//   forwards no RECLAIM event; at END finalizable objects are already resurrected), the root
//   set, the RAM dump the policy asks for, and GcEnd;
// - root registrations and unregistrations with their source and name, threads' stack ranges
//   (thread_started runs on the new thread), JIT'ed methods with their code ranges, GC handles
//   created and deleted, objects whose finalizer is about to run;
// - the finalization queue (finalize_queue.h): the fork's GC_finalize calls the await-finalize
//   proc the recorder installs (GC_set_await_finalize_proc, exported by mono-boehm) for each
//   object it queues; gc_finalizing_object says when one leaves. Mono itself sets that proc only
//   in mono_gc_register_finalizer_callbacks (for embedders, which mono-boehm is not); its fork has
//   no getter, so an embedder's proc set before the profiler starts could not be chained (and
//   one set after replaces the recorder's: no object is then listed).
//
// Managed stacks. Walking them with mono_stack_walk_no_il costs ~1.9 us per allocation, and a
// native unwind does not reach JIT frames. Instead each thread keeps a shadow stack of method
// handles, pushed and popped by Mono's call instrumentation (method_enter / method_leave /
// method_exception_leave / method_tail_call, asked for every method the JIT compiles); an
// allocation copies its top g.depth entries. Methods are named once, when the JIT finishes them
// (a kMethodDef event, before any frame of theirs can be recorded).
//
// Classes are named once: a thread announces a class the first time it sees it unless the
// class's global entry says another thread's announcement was already committed (so the
// TypeDef's sequence number precedes every allocation that uses it).
//
// Its files: stacks.cpp (shadow stacks and the methods worth instrumenting), allocation.cpp
// (methods and classes named, every managed allocation), roots.cpp (registered roots, threads,
// GC handles, finalizations, the root set of a collection), collection.cpp (the collector's
// events) and init.cpp (the API found, the profiler installed). This header is theirs alone.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <mono/jit/jit.h>
#include <mono/metadata/appdomain.h>
#include <mono/metadata/class.h>
#include <mono/metadata/debug-helpers.h>
#include <mono/metadata/loader.h>
#include <mono/metadata/metadata.h>
#include <mono/metadata/mono-gc.h>
#include <mono/metadata/object.h>
#include <mono/metadata/profiler.h>
#include <mono/utils/mono-publib.h>

#include "../../collector/collection.h"
#include "../../collector/finalize_queue.h"
#include "../../collector/gc_tracking.h"
#include "../../core/gc_events.h"
#include "../../core/recorder.h"
#include "../layers.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::rec::mono {

using log::HeapKind;
using log::RootSource;

// Mono's API, found in the process (mono-boehm exports it; init.cpp).
#define HEAPMAN_MONO_API(X)                                                                     \
  X(mono_profiler_create) X(mono_profiler_enable_allocations)                                   \
  X(mono_profiler_set_gc_allocation_callback) X(mono_profiler_set_gc_event_callback)            \
  X(mono_profiler_set_gc_root_register_callback)        \
  X(mono_profiler_set_gc_root_unregister_callback) X(mono_profiler_set_jit_done_callback)       \
  X(mono_profiler_set_thread_started_callback) X(mono_profiler_set_thread_stopped_callback)     \
  X(mono_profiler_set_runtime_shutdown_end_callback)                                            \
  X(mono_profiler_set_gc_handle_created_callback) X(mono_profiler_set_gc_handle_deleted_callback) \
  X(mono_profiler_set_gc_finalizing_object_callback)                                            \
  X(mono_profiler_set_call_instrumentation_filter_callback)                                     \
  X(mono_profiler_set_method_enter_callback) X(mono_profiler_set_method_leave_callback)         \
  X(mono_profiler_set_method_tail_call_callback)                                                \
  X(mono_profiler_set_method_exception_leave_callback)                                          \
  X(mono_object_get_class) X(mono_object_get_size) X(mono_class_get_type)                       \
  X(mono_type_get_name) X(mono_class_instance_size) X(mono_class_is_valuetype)                  \
  X(mono_method_full_name) X(mono_free) X(mono_jit_info_get_code_start)                         \
  X(mono_jit_info_get_code_size) X(mono_gc_get_heap_size) X(mono_gc_get_used_size)           \
  X(mono_method_get_header) X(mono_method_header_get_code) X(mono_metadata_free_mh)             \
  X(mono_get_method) X(mono_method_get_class) X(mono_class_get_image) X(mono_class_get_rank)      \
  X(mono_get_string_class) X(mono_array_element_size)                                           \
  X(mono_class_get_fields) X(mono_class_get_parent) X(mono_class_get_element_class)              \
  X(mono_field_get_type) X(mono_field_get_flags) X(mono_field_get_offset)                        \
  X(mono_type_is_reference) X(mono_type_is_struct) X(mono_class_from_mono_type)                \
  X(mono_vtable_class) X(mono_field_get_name) X(mono_stack_walk_no_il) \
  X(mono_method_get_flags)

struct MonoApi {
#define HEAPMAN_MONO_FIELD(fn) decltype(&::fn) fn = nullptr;
  HEAPMAN_MONO_API(HEAPMAN_MONO_FIELD)
#undef HEAPMAN_MONO_FIELD
  // The Boehm fork's own entry points (exported by mono-boehm).
  gc::Collector collector;
  const unsigned long* gcNo = nullptr;  // GC_gc_no: collections completed
  // The finalization queue (optional): the fork's await-finalize proc setter, GC_base, and
  // mono_gc_pending_finalizers (GC_should_invoke_finalizers: a plain read).
  void (*setAwaitFinalize)(void (*)(void*)) = nullptr;
  void* (*base)(void*) = nullptr;
  int (*pending)() = nullptr;
};
extern MonoApi m;

extern std::atomic<bool> g_on;  // the profiler is installed and recording
extern bool g_sgen;            // Mono with SGen (initMono said so): nothing to record
extern bool g_stacks;           // managed stacks (call instrumentation) wanted
extern bool g_skipLeaves;       // leave methods that cannot allocate uninstrumented (onFilter)

// Shadow stacks: one per thread, mmap'd on the thread's first method entry (4 MiB of address
// space, touched only as deep as the thread goes: deeper than a managed thread's stack can hold).
// Past kShadowMax entries frames are counted, not kept, and an allocation there records no stack
// rather than a wrong one.
constexpr uint32_t kShadowMax = 1u << 18;
// Each entry holds its method and a tag that names the contents of the stack from the outermost
// frame down to it: two entries with one tag hold the same frames. A push keeps the tag an entry
// had when the method is the one last pushed at that depth and the frames below have not changed
// since; else it takes a new tag and clears the method of the entry above, so that no later push
// there can keep a tag from before this change (by induction, an entry whose method is still set
// lies on top of the frames it was tagged on). The empty stack, and one too deep to keep, is
// tag 0 (both record no frames).
struct ShadowFrame {
  uint64_t method;  // 0: cleared (a MonoMethod* is never null)
  uint64_t tag;
};
// A stack this thread allocated with lately: the ring slot it is in, with the ring and the
// counter that says whether it still is (Ring::slotChanges).
struct LastStack {
  Ring* ring = nullptr;
  uint64_t tag = 0;
  uint32_t slotChanges = 0, slot = 0;
};
constexpr uint32_t kStackMemos = 64;  // per thread, direct-mapped by tag
struct Shadow {
  uint32_t depth = 0;
  uint64_t lastTag = 0;               // the last tag given out
  LastStack memo[kStackMemos];
  ShadowFrame frames[kShadowMax];     // outermost first
};
extern __thread Shadow* t_shadow HEAPMAN_TLS;
extern __thread LastStack t_lastNoShadow HEAPMAN_TLS;  // a thread without a shadow stack (no stacks)

// The calling thread's managed frames, leaf first, at most `max`.
inline uint32_t managedFrames(uint64_t* out, uint32_t max) {
  Shadow* s = t_shadow;
  if (!s || s->depth > kShadowMax) return 0;
  uint32_t n = std::min(s->depth, max);
  const ShadowFrame* top = s->frames + s->depth;
  for (uint32_t i = 0; i < n; ++i) out[i] = top[-1 - static_cast<int>(i)].method;
  return n;
}

// The tag of the calling thread's managed stack (ShadowFrame).
inline uint64_t shadowTag(const Shadow* s) {
  return s->depth == 0 || s->depth > kShadowMax ? 0 : s->frames[s->depth - 1].tag;
}

// Field attributes (ECMA-335 II.23.1.5).
constexpr uint16_t kFieldStatic = 0x10;   // FIELD_ATTRIBUTE_STATIC (ECMA-335 II.23.1.5)
constexpr uint16_t kFieldLiteral = 0x40;  // FIELD_ATTRIBUTE_LITERAL: a constant, no storage

// stacks.cpp: the shadow stacks' set-up, and the call instrumentation's callbacks.
void initShadowStacks();
void sayShadowCounts();  // at shutdown, HEAPMAN_STATS: how many methods were instrumented
void onEnter(MonoProfiler*, MonoMethod* method, MonoProfilerCallContext*);
void onLeave(MonoProfiler*, MonoMethod*, MonoProfilerCallContext*);
void onExceptionLeave(MonoProfiler*, MonoMethod*, MonoObject*);
void onTailCall(MonoProfiler*, MonoMethod*, MonoMethod*);
MonoProfilerCallInstrumentationFlags onFilter(MonoProfiler*, MonoMethod* method);

// allocation.cpp
void onJitDone(MonoProfiler*, MonoMethod* method, MonoJitInfo* ji);
void onAllocation(MonoProfiler*, MonoObject* obj);

// roots.cpp
void onRootRegister(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source,
                    const void* key, const char* name);
void onRootUnregister(MonoProfiler*, const mono_byte* start);
void onThreadStarted(MonoProfiler*, uintptr_t);
void onThreadStopped(MonoProfiler*, uintptr_t);
void onHandleCreated(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj);
void onHandleDeleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type);
void onFinalizing(MonoProfiler*, MonoObject* obj);
// The fork's thread table (GC_threads), where it reads as Mono 6.8's (roots.cpp).
void findCollectorThreads();
// World stopped, marking done, of collection `gc`: thread stacks copied if it will be dumped.
void copyStacksWhileStopped(uint32_t gc);
// The root set of the collection that is finishing (allocation lock held).
gc::RootList rootsOfCollection(uint64_t mySp);

// walk.cpp: managed stacks walked instead of shadowed (HEAPMAN_MONO_WALK): no call
// instrumentation, a frame-pointer walk through JIT'ed code, the runtime's walk where it cannot
// prove its result.
enum class WalkMode : uint8_t { kShadow, kFast, kCheck };
extern WalkMode g_walk;
// jit_done: a method's code range, whether it keeps a frame pointer, whether it is a wrapper.
// `generic`: of a generic class or method, whose code may be shared by instantiations (the
// runtime's walk names the instantiation from the frame's generic context, which the fast walk
// does not read).
void noteJitted(uint64_t method, uint64_t start, uint64_t size, bool wrapper, bool generic);
// The calling thread's managed frames (method handles), leaf first, at most `max`.
uint32_t walkManagedFrames(uint64_t* out, uint32_t max);
void initWalk();       // start-up: the JIT's frame rules for captureStack when walking
void sayWalkCounts();  // at shutdown: how many walks were fast, how many the runtime's

// collection.cpp
void onGcEvent(MonoProfiler*, MonoProfilerGCEvent event, uint32_t, mono_bool);
void onAwaitFinalize(void* obj);

}  // namespace heapman::rec::mono
