// A collection's three moments, shared by the collector layers (collection.h).
#include "collection.h"

#include "../core/recorder.h"
#include "finalize_queue.h"
#include "gc_tracking.h"

namespace heapman::rec::gc {
namespace {

uint64_t g_startNs = 0;  // collectionBegins' time (one collection at a time: the lock is held)

}  // namespace

void collectionBegins(uint32_t gc, uint64_t heapBytes) {
  Guard guard;
  collectionStarted();
  g_startNs = monotonicNs();
  beginStoppedStacks();
  if (finalizeQueueOn()) startFinalizeQueue(gc);
  Ring* r = threadRing();
  if (!r) return;
  if (RawEvent* e = begin(r, Kind::kGcBegin, 0, 0)) {
    e->a = gc;
    e->b = heapBytes;
    commit(r, e);
  }
}

void collectionReclaimed(uint32_t gc, RootList (*collectRoots)(uint64_t mySp)) {
  Guard guard;
  if (finalizeQueueOn()) finishFinalizeQueue(gc);
  Ring* r = threadRing();
  if (!r) return;
  bool dump = dumpThisGc(gc);
  emitMarks(r, gc, dump);
  RootList roots = collectRoots(reinterpret_cast<uint64_t>(__builtin_frame_address(0)));
  RootSetEntry queue = finalizeQueueRoot(dump);
  if (queue.size && roots.count < roots.capacity) roots.entries[roots.count++] = queue;
  emitRootSet(r, gc, roots.entries, roots.count);
  if (dump) {
    emitRamDump(r, gc, roots.entries, roots.count);
    clearFinalizeQueueTable();
  }
}

void collectionEnds(uint32_t gc, uint64_t heapBytes, uint64_t freeBytes) {
  Guard guard;
  if (Ring* r = threadRing()) {
    if (RawEvent* e = begin(r, Kind::kGcEnd, 0, 0)) {
      e->a = gc;
      e->b = heapBytes;
      e->c = freeBytes;
      e->extra = monotonicNs() - g_startNs;
      commit(r, e);
    }
  }
  collectionEnded();
}

}  // namespace heapman::rec::gc
