// The finalization queue of a Boehm collector (libgc, Mono's fork): the objects a collection found
// unreachable that have a finalizer. The collector keeps each of them, with everything it
// reaches, alive until its finalizer has run, through its own tables (libgc hides the pointers),
// so no scan of the dumped memory finds what holds them. The recorder keeps the set here and
// lists it in each collection's root set as one range of kind kFinalizeQueue: a table of the
// objects' addresses, dumped like a stack (the graph's "finalization queue" root). The
// collector's queue entry also holds the finalizer's client data (libgc's GC_register_finalizer
// `cd`: ECL passes the Lisp closure to call), which it keeps alive as well: the table lists that
// word beside the object. The layer learns it from the registration calls (finalizerRegistered).
//
// An object enters when the collector queues it: the await-finalize proc
// (GC_set_await_finalize_proc), which GC_finalize calls for each object it moves to the queue,
// allocation lock held, the world running. It leaves
// - when its finalizer is about to run: Mono raises gc_finalizing_object (finalizerStarting);
//   libgc has no per-object signal, but GC_invoke_finalizers (the layer interposes it: the
//   program's calls and libgc's own go through the PLT) runs finalizers until the queue is
//   empty, so when it returns every object queued by a collection that had finished before the
//   call began has left (finalizersRanThrough), and all have if the collector's queue is empty
//   then (checked under the allocation lock: finalizeQueueIfEmpty);
// - all at once when the collector's own queue is empty (checked at each collection);
// - when a collection frees it (not marked at its end).
// Where none of these says so at once (a libgc finalizer that runs while another thread's
// collection queues more), the object stays listed until one does: a root too many, never one
// missing.
//
// Storage: static tables, no allocation, no lock on the collector's side (every change but
// finalizerStarting's and finalizerRegistered's is made with the allocation lock held; those two
// take a spinlock that is never held across a call into the collector, and that the collector's
// side takes only while the world runs). Client data by object: an open-addressing table of 2^18
// slots, at most 3/4 full (more registrations are counted and said once; their data is then not
// listed). Addresses are kept complemented, as
// libgc hides them, so that a collector scanning the recorder's data would not take them for
// pointers; the plain table the dump copies is written just before the copy and cleared after.
// Past kMaxFinalizeQueue objects (2^18) further ones are not listed and are counted (said once):
// they are then "alive but unreachable" in the graph, as without this root.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/gc_events.h"

namespace heapman::rec::gc {

// Which objects a collection kept: libgc's rule (docs/DESIGN.md §2.0), GC_base first: large
// and wholly empty blocks are freed by then, and GC_is_marked on them crashes.
struct FinalizeQueueCollector {
  int (*isMarked)(const void*) = nullptr;
  void* (*base)(void*) = nullptr;
  // Non-zero while the collector's own queue holds objects (GC_should_invoke_finalizers: a plain
  // read, no lock).
  int (*pending)() = nullptr;
  // Every object that leaves the collector's queue does so inside a GC_invoke_finalizers call
  // the layer reports (finalizersBegin / finalizersRanThrough): libgc, where the layer interposes
  // it. Mono's finalizer thread calls its fork's own.
  bool popsReported = false;
};
void initFinalizeQueue(const FinalizeQueueCollector& c);
// Whether a layer set the queue up (initFinalizeQueue): its collector reports queued objects.
bool finalizeQueueOn();

// The collector's await-finalize proc: collection `gc` queued `obj`. Allocation lock held.
void finalizeQueued(void* obj, uint32_t gc);
// libgc: the program registered (or, with `registered` false, removed) a finalizer for `obj`
// with client data `data` (GC_register_finalizer and relatives, after the real call).
void finalizerRegistered(void* obj, bool registered, void* data);
// Mono: the finalizer of `obj` is about to run. Any thread, no allocation lock.
void finalizerStarting(void* obj);
// libgc: a GC_invoke_finalizers call begins; returns the last collection whose queued objects
// are all in the collector's queue (its GC_finalize has run) ...
uint32_t finalizersBegin();
// ... to be passed here when the call returns: everything queued up to that collection has left.
void finalizersRanThrough(uint32_t gc);
// libgc, allocation lock held (GC_call_with_alloc_lock, after a GC_invoke_finalizers call): when
// the collector's queue is empty, every listed object has left, however the call and other
// threads' collections interleaved.
void finalizeQueueIfEmpty();

// Allocation lock held, when collection `gc` starts (before it queues anything): what left the
// queue since the last collection.
void startFinalizeQueue(uint32_t gc);
// Allocation lock held, at the end of collection `gc` (marks complete, its objects queued): what
// left the queue, and the objects the collection freed.
void finishFinalizeQueue(uint32_t gc);

// The queue as a root-set entry (size 0 when empty); with `forDump` its table holds the objects'
// addresses until clearFinalizeQueueTable(), called once the dump has copied it.
RootSetEntry finalizeQueueRoot(bool forDump);
void clearFinalizeQueueTable();

}  // namespace heapman::rec::gc
