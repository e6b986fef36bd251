// The preload module's entry points: its start-up, which wires the layers (core's recording,
// the crash handlers, the Mono and bdwgc layers) in order, its end at exit, and the custom-event
// functions of heapman.h.
#include <cstring>

#include "../collector/gc_tracking.h"
#include "../core/recorder.h"
#include "layers.h"

namespace heapman::rec {
namespace {

__attribute__((constructor(101))) void start() {
  if (!startRecording()) return;
  Guard guard;
  installCrashHandlers();
  initMono();  // before recording starts: it decides whether mallocs are recorded
  g.active.store(true, std::memory_order_release);
  initBdwgc();  // before the writer: the log header names the runtimes
  setUpWriter();
}

__attribute__((destructor(101))) void finish() { finishRecording(); }

}  // namespace
}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT void heapman_record_event(const char* name, const void* data, size_t len) {
  if (t_guard || !g.active.load(std::memory_order_relaxed) || !name) return;
  Guard guard;
  size_t nameLen = strnlen(name, 255);
  if (!data) len = 0;
  if (len > kMaxEventBytes - 256) len = kMaxEventBytes - 256;
  Ring* r;
  auto extra = static_cast<uint32_t>(nameLen + len);
  RawEvent* e = beginWithManagedStack(r, Kind::kEvent, 0, extra);
  if (!e) e = beginWithStack(r, Kind::kEvent, 0, extra);
  if (!e) return;
  e->a = nameLen;
  e->b = len;
  std::memcpy(extraOf(e), name, nameLen);
  if (len) std::memcpy(extraOf(e) + nameLen, data, len);
  commit(r, e);
  gc::noteEventForGc(name, nameLen);
}

HEAPMAN_EXPORT void heapman_record_frame(void) {
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Guard guard;
  Ring* r = threadRing();
  if (!r) return;
  RawEvent* e = begin(r, Kind::kFrame, 0, 0);
  if (!e) return;
  e->a = g.frameNo.fetch_add(1, std::memory_order_relaxed) + 1;
  commit(r, e);
}
