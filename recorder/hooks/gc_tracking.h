// The set of tracked live objects of a Boehm-collected heap, and what a collection does with it:
// shared by the bdwgc layer (hooks/bdwgc.cpp, LD_PRELOAD on libgc.so.1) and the Mono layer
// (hooks/mono.cpp, the Boehm fork linked into mono-boehm). Both collectors answer the same
// questions (GC_base, GC_is_marked, GC_size) and take the same allocation lock; each layer hands
// its collector's entry points to initTracking().
//
// Births. Each thread appends the objects it allocates to its own queue (no lock, no atomic RMW
// on the hot path); the queues are drained into one hash set only while the collector's
// allocation lock is held (in a collection callback, or through GC_call_with_alloc_lock).
//
// Which objects a collection freed, exactly: after marking and after finalizable objects were
// resurrected (bdwgc: GC_EVENT_RECLAIM_END; Mono: MONO_GC_EVENT_END), with the lock held, an
// object p of the set was collected iff GC_base(p) != p || !GC_is_marked(p) (GC_base first:
// blocks freed whole are gone by then and GC_is_marked on them crashes). shared/FINDINGS.md.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../core/gc_events.h"
#include "../core/recorder.h"
#include "heapman/logformat/records.h"

namespace heapman::rec::gc {

// Where a collector build keeps a block's mark bits, for a sweep that reads them directly: the
// block header (findHeader, one call per 4 KiB block instead of two calls per object), whose
// `map` field equals *invalidMap once the block is free, and a mark bit per 2^granuleShift bytes
// in words from marksOffset. Read off the build's own GC_base / GC_is_marked; the sweep checks it
// against them on its first objects and falls back to them for good on any disagreement.
struct MarkLayout {
  void* (*findHeader)(void*) = nullptr;
  void* const* invalidMap = nullptr;
  uint32_t mapOffset = 0, marksOffset = 0, granuleShift = 0;
};

// The collector's entry points (the layer finds them with dlsym).
struct Collector {
  void* (*base)(void*) = nullptr;
  int (*isMarked)(const void*) = nullptr;
  size_t (*size)(const void*) = nullptr;
  void* (*callWithAllocLock)(void* (*)(void*), void*) = nullptr;
  MarkLayout marks;  // optional (findHeader null: the sweep calls base and isMarked per object)
};

// Set while this thread runs a collection callback of ours (it holds the allocation lock).
extern __thread bool t_inCallback HEAPMAN_TLS;

// mmap'd memory: never a hooked heap.
void* mapBytes(size_t n);

// Once, before the first birth: the collector, the RAM dump policy (HEAPMAN_RAM_DUMPS) and the
// fork handler.
void initTracking(const Collector& c);

// Hot path: the calling thread allocated the object `key` (its address; bit 0 set for a GC_debug
// object, whose key is its base).
void trackBirth(uint64_t key);
// An explicit free: the object leaves the set (takes the allocation lock unless held).
void untrack(uint64_t key);

// Allocation lock held: drains the queues, then removes every collected object from the set.
// Returns how many; their keys are in collected() (a debug object's as base + debugOffset).
size_t sweep(uint64_t debugOffset = 0);
const uint64_t* collected();

// Ring events for the collection `gc`: the collected set (batches of at most 8192 addresses),
// the root set, and, when the policy asks for one, the RAM dump (every live object, the roots
// and the stacks, copied with memcpy into one block the writer compresses later).
void emitCollected(Ring* r, uint32_t gc, const uint64_t* addrs, size_t n);
void emitRootSet(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n);
bool dumpThisGc(uint32_t gc);
void emitRamDump(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n);

// Stack bounds of a thread, cached (pthread_getattr_np allocates and, for the main thread, reads
// /proc/self/maps). Allocation lock held.
bool stackOf(pthread_t t, uint64_t& low, uint64_t& high);
// The part of [low, high) in use: from `sp` when it lies inside, else from the lowest resident
// page (reading below it would only grow the main thread's stack mapping).
uint64_t stackInUse(uint64_t low, uint64_t high, uint64_t sp);
// The recorder thread index of a thread that allocated from the collected heap, else
// log::kRecorderThread.
uint32_t threadIndexOf(pthread_t t);

// A root range registered (added) or unregistered, with the runtime's label (may be null), as a
// RootRange event of the calling thread.
void emitRootRange(uint64_t low, uint64_t size, bool added, log::RootSource source,
                   const char* label = nullptr);

// A tiny spinlock for the root and thread registries: their callers are rare and never run
// while the world is stopped.
class SpinLock {
 public:
  explicit SpinLock(std::atomic<bool>& flag) : flag_(flag) {
    while (flag_.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~SpinLock() { flag_.store(false, std::memory_order_release); }
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

 private:
  std::atomic<bool>& flag_;
};

}  // namespace heapman::rec::gc
