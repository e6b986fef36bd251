// A collection of a Boehm-collected heap, as the log sees it, the same for every collector the
// recorder follows (libgc: hooks/bdwgc; Mono's fork: hooks/mono). A layer calls these from its
// collector's callbacks, allocation lock held, world running, and supplies only what differs:
// the collection's number, the heap's sizes and its roots.
//
//   collectionBegins    GcBegin (before marking)
//   collectionReclaimed marks, root set, RAM dump (marking done, finalizable objects resurrected)
//   collectionEnds      GcEnd
#pragma once

#include <cstddef>
#include <cstdint>

#include "../core/gc_events.h"

namespace heapman::rec::gc {

// Collection `gc` starts: the writer steps aside (collectionStarted), the stacks copied while the
// world was stopped for the previous collection are dropped, the finalization queue notes what
// left it since, and a GcBegin record gives the heap's size.
void collectionBegins(uint32_t gc, uint64_t heapBytes);

// The collection's roots, from the layer (allocation lock held): its own table, how many entries
// it filled and how many it holds. `mySp`: the collecting thread's stack pointer here.
struct RootList {
  RootSetEntry* entries = nullptr;
  size_t count = 0, capacity = 0;
};

// Collection `gc` has marked and resurrected its finalizable objects: which objects it kept (a
// mark-bit snapshot), the root set (the layer's roots, then the finalization queue's table), and
// a RAM dump where the policy wants one.
void collectionReclaimed(uint32_t gc, RootList (*collectRoots)(uint64_t mySp));

// Collection `gc` ends: a GcEnd record (heap size, free bytes, how long it took since
// collectionBegins); the writer may run again (collectionEnded).
void collectionEnds(uint32_t gc, uint64_t heapBytes, uint64_t freeBytes);

}  // namespace heapman::rec::gc
