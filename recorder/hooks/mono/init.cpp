// The Mono layer's set-up (mono.h): a Mono program noticed at start-up (initMono), and the
// profiler module "heapman" installed when Mono loads it (--profile=heapman): its API found, its
// callbacks set.
#include "mono.h"

namespace heapman::rec::mono {

MonoApi m;
std::atomic<bool> g_on{false};  // the profiler is installed and recording
bool g_sgen = false;            // Mono with SGen (initMono said so): nothing to record
bool g_stacks = true;           // managed stacks (call instrumentation) wanted
bool g_skipLeaves = true;       // leave methods that cannot allocate uninstrumented (onFilter)

namespace {

template <class T>
bool find(T& out, const char* name) {
  out = reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
  if (!out) say("Mono layer: %s not found in the program; managed heap not recorded", name);
  return out != nullptr;
}

bool findApi() {
  bool ok = true;
#define HEAPMAN_MONO_FIND(fn) ok = find(m.fn, #fn) && ok;
  HEAPMAN_MONO_API(HEAPMAN_MONO_FIND)
#undef HEAPMAN_MONO_FIND
  ok = find(m.collector.isMarked, "GC_is_marked") && ok;
  ok = find(m.collector.size, "GC_size") && ok;
  ok = find(m.collector.applyToAllBlocks, "GC_apply_to_all_blocks") && ok;
  ok = find(m.gcNo, "GC_gc_no") && ok;
  // Mono 6.8's Boehm fork (read off its GC_is_marked): block headers from GC_find_header, hb_marks
  // words at 0x30, a mark bit per 8-byte word. Checked against GC_is_marked before it is trusted
  // (gc_tracking.h, MarkLayout).
  m.collector.marks.findHeader = reinterpret_cast<void* (*)(void*)>(dlsym(RTLD_DEFAULT, "GC_find_header"));
  m.collector.marks.marksOffset = 0x30;
  m.setAwaitFinalize = reinterpret_cast<void (*)(void (*)(void*))>(
      dlsym(RTLD_DEFAULT, "GC_set_await_finalize_proc"));
  m.base = reinterpret_cast<void* (*)(void*)>(dlsym(RTLD_DEFAULT, "GC_base"));
  m.pending = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "mono_gc_pending_finalizers"));
  return ok;
}

// The runtime is going away; the recorder finishes at exit as usual. Nothing may be recorded
// from Mono's callbacks once its structures are torn down.
void onShutdownEnd(MonoProfiler*) {
  g_on.store(false, std::memory_order_relaxed);
  sayWalkCounts();
  sayShadowCounts();
}

}  // namespace
}  // namespace heapman::rec::mono

namespace heapman::rec {

using namespace mono;

void initMono() {
  if (!dlsym(RTLD_DEFAULT, "mono_profiler_create")) {
    if (g.follow == State::Follow::kNone) removeMonoProfileOption();  // not Mono: not ours to pass on
    return;
  }
  if (!dlsym(RTLD_DEFAULT, "GC_is_marked")) {  // mono-sgen: Mono's own collector, not Boehm
    g_sgen = true;
    say("this Mono uses the SGen collector, which HeapMan does not record: run the program with "
        "mono-boehm (heaprec run -- mono-boehm PROGRAM.exe)");
  }
  auto* info = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "mono_get_runtime_build_info"));
  char* version = info ? info() : nullptr;
  std::snprintf(g.monoVersion, sizeof g.monoVersion, "%s", version ? version : "unknown");
  if (version) free(version);  // g_strdup'd: glib's allocator is malloc
  // Whether its Boehm collector takes interior pointers from the heap and static data (the heap
  // graph follows the same rule). mono-boehm's build says 0, before and after start-up.
  if (auto* interior = static_cast<int*>(dlsym(RTLD_DEFAULT, "GC_all_interior_pointers")))
    g.gcInteriorPointers = static_cast<int8_t>(*interior != 0);
  const char* nativeToo = getenv(env::kMonoMalloc);
  g.recordNative = nativeToo && std::strcmp(nativeToo, "1") == 0;
}

RawEvent* beginWithManagedStack(Ring*& r, Kind kind, uint8_t heap, uint32_t extraLen) {
  if (!g_on.load(std::memory_order_relaxed) || !t_shadow || !t_shadow->depth) return nullptr;
  r = threadRing();
  if (!r) return nullptr;
  uint64_t frames[kMaxFrames];
  uint32_t n = managedFrames(frames, g.depth);
  return beginWithFrames(r, kind, heap, frames, n, extraLen, kManagedFrames);
}

}  // namespace heapman::rec

using namespace heapman::rec;
using namespace heapman::rec::mono;
// Mono calls this for --profile=heapman[:OPTIONS]. Options: "nostacks" (no call instrumentation:
// allocations carry no managed stack).
HEAPMAN_EXPORT void mono_profiler_init_heapman(const char* desc) {
  Guard guard;
  if (g.follow == State::Follow::kNone) removeMonoProfileOption();
  if (!g.active.load(std::memory_order_relaxed) || g_sgen) return;  // no heaprec, or not Boehm
  if (!findApi()) return;
  findCollectorThreads();
  const char* options = desc ? std::strchr(desc, ':') : nullptr;
  if ((options && std::strstr(options, "nostacks")) || getenv(env::kMonoNoStacks)) g_stacks = false;
  if (getenv(env::kMonoAllMethods)) g_skipLeaves = false;  // instrument every method
  if (const char* walk = getenv(env::kMonoWalk); walk && g_stacks)
    g_walk = std::strcmp(walk, "check") == 0 ? WalkMode::kCheck : WalkMode::kFast;
  gc::initTracking(m.collector);
  if (m.setAwaitFinalize && m.base && m.pending) {
    gc::FinalizeQueueCollector fc;
    fc.isMarked = m.collector.isMarked;
    fc.base = m.base;
    fc.pending = m.pending;
    gc::initFinalizeQueue(fc);
    m.setAwaitFinalize(onAwaitFinalize);
  }
  initShadowStacks();
  initWalk();
  MonoProfilerHandle h = m.mono_profiler_create(nullptr);
  m.mono_profiler_enable_allocations();
  m.mono_profiler_set_gc_allocation_callback(h, onAllocation);
  m.mono_profiler_set_gc_event_callback(h, onGcEvent);
  m.mono_profiler_set_gc_root_register_callback(h, onRootRegister);
  m.mono_profiler_set_gc_root_unregister_callback(h, onRootUnregister);
  m.mono_profiler_set_jit_done_callback(h, onJitDone);
  m.mono_profiler_set_thread_started_callback(h, onThreadStarted);
  m.mono_profiler_set_thread_stopped_callback(h, onThreadStopped);
  m.mono_profiler_set_runtime_shutdown_end_callback(h, onShutdownEnd);
  m.mono_profiler_set_gc_handle_created_callback(h, onHandleCreated);
  m.mono_profiler_set_gc_handle_deleted_callback(h, onHandleDeleted);
  m.mono_profiler_set_gc_finalizing_object_callback(h, onFinalizing);
  if (g_stacks && g_walk == WalkMode::kShadow) {
    m.mono_profiler_set_call_instrumentation_filter_callback(h, onFilter);
    m.mono_profiler_set_method_enter_callback(h, onEnter);
    m.mono_profiler_set_method_leave_callback(h, onLeave);
    m.mono_profiler_set_method_tail_call_callback(h, onTailCall);
    m.mono_profiler_set_method_exception_leave_callback(h, onExceptionLeave);
  }
  g_on.store(true, std::memory_order_release);
}
