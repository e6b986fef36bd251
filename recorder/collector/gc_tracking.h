// What a collection of a Boehm-collected heap leaves behind for the log: which objects it kept
// (a snapshot of the mark bits), the root set, RAM dumps. Shared by the bdwgc layer
// (hooks/bdwgc/, LD_PRELOAD on libgc.so.1) and the Mono layer (hooks/mono/, the Boehm fork
// linked into mono-boehm); each hands its collector's entry points to initTracking().
//
// Which objects a collection freed, exactly. The program's threads keep no set of live objects:
// an allocation is one ring record and nothing else. After marking and after finalizable objects
// were resurrected (bdwgc: GC_EVENT_RECLAIM_END; Mono: MONO_GC_EVENT_END), with the allocation
// lock held, emitMarks() copies which objects the collector marked into a MarkSnapshot
// (core/gc_events.h): libgc enumerates them (GC_enumerate_reachable_objects_inner); in Mono's
// fork every block in use is visited (GC_apply_to_all_blocks) and its mark bits are copied from
// its header; libgc's block headers are found in its GC_arrays and read the same way once
// checked (libgc_headers.h). The writer thread, which sees every allocation and free in order,
// tests its set of tracked live objects against the snapshot off the lock: tracked and not marked
// means collected (core/tracked_set.h). docs/DESIGN.md §2.0 has why that moment is exact.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../core/gc_events.h"
#include "../core/recorder.h"
#include "heapman/logformat/records.h"

namespace heapman::rec::gc {

// Where a collector build keeps a block's mark bits, for copying them directly: the block header
// (findHeader), and a mark bit per 8 bytes in words from marksOffset. Read off the build's own
// GC_is_marked; emitMarks checks it against GC_is_marked on its first objects and falls back to
// GC_is_marked per object for good on any disagreement.
struct MarkLayout {
  void* (*findHeader)(void*) = nullptr;
  uint32_t marksOffset = 0;
};

// The collector's entry points (the layer finds them with dlsym). One of enumerateReachable and
// applyToAllBlocks finds the marked objects.
struct Collector {
  int (*isMarked)(const void*) = nullptr;
  size_t (*size)(const void*) = nullptr;
  // libgc >= 7.6: calls fn(object, bytes, data) for each marked object (lock held).
  void (*enumerateReachable)(void (*fn)(void*, size_t, void*), void* data) = nullptr;
  // Mono's fork: calls fn(block, data) for each block in use (lock held).
  void (*applyToAllBlocks)(void (*fn)(void*, unsigned long), unsigned long data) = nullptr;
  MarkLayout marks;  // optional, with applyToAllBlocks
  // libgc: its GC_arrays (address and size), where the block header table is searched for, to
  // copy mark bits a block at a time instead of enumerateReachable (libgc_headers.h).
  const uint8_t* libgcArrays = nullptr;
  size_t libgcArraysBytes = 0;
};

// Set while this thread runs a collection callback of ours (it holds the allocation lock).
extern __thread bool t_inCallback HEAPMAN_TLS;

// mmap'd memory: never a hooked heap.
void* mapBytes(size_t n);

// [low, low + size) of this process into `to`: through the kernel, which reports a fault instead
// of raising one (a root may be unregistered late, a stack unmapped, a pointer read from libgc's
// tables may lead nowhere). The bytes copied, or 0.
size_t copyOwnMemory(uint8_t* to, uint64_t low, uint64_t size);

// Once, before the first collection: the collector, the RAM dump policy (HEAPMAN_RAM_DUMPS).
void initTracking(const Collector& c);

// Allocation lock held, at the end of collection `gc`: the mark-bit snapshot as a kMarks ring
// event; with `forDump`, also notes every marked object for emitRamDump.
void emitMarks(Ring* r, uint32_t gc, bool forDump);
// A custom event named `name` was recorded: the RAM dump policy event:NAME asks for a dump at the
// next collection (heapman_record_event).
void noteEventForGc(const char* name, size_t len);

// The root set as a kRootSet event.
void emitRootSet(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n);
// Whether the RAM dump policy wants a dump at collection `gc` (asks once per collection).
bool dumpThisGc(uint32_t gc);
// The same question asked ahead, without taking the answer (an event's request stays pending).
bool dumpPlanned(uint32_t gc);
// After emitMarks(..., true): the RAM dump (every marked object, the roots and the stacks, copied
// with memcpy into one block the writer compresses later).
void emitRamDump(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n);

// Stack bounds of a thread, cached (pthread_getattr_np allocates and, for the main thread, reads
// /proc/self/maps). Allocation lock held.
bool stackOf(pthread_t t, uint64_t& low, uint64_t& high);
// As stackOf, from its cache or the bounds the thread found as it registered with the recorder
// (knownThreadStack): nothing allocated, so safe while the world is stopped.
bool cachedStackOf(pthread_t t, uint64_t& low, uint64_t& high);

// Thread stacks copied while the world is still stopped (bdwgc: GC_EVENT_PRE_START_WORLD of a
// collection that will be dumped). A stack copied after the restart may hold other words than
// the collector scanned: a resumed thread overwrites the stale words of its last frames at once,
// and the objects only they kept would be alive but unreachable in the dump. System calls only
// (mincore, process_vm_readv, mmap/mremap for the block): no lock, no allocation. The copies
// last until the next beginStoppedStacks().
void beginStoppedStacks();
void copyStoppedStack(uint64_t low, uint64_t high);
// The low end of the stopped copy that ends at `high` (its range for the root set), or 0.
uint64_t stoppedStackLow(uint64_t high);
// The part of [low, high) in use: from `sp` when it lies inside, else from the lowest resident
// page of the mapped part that reaches `high` (reading below it would only grow the main
// thread's stack mapping).
uint64_t stackInUse(uint64_t low, uint64_t high, uint64_t sp);
// The recorder thread index of a recording thread, else log::kRecorderThread.
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
