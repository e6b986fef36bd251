// The bdwgc layer's allocation entry points (bdwgc.h): every GC_malloc* and GC_debug_* function,
// gcj, typed and batch allocators, GC_free and GC_realloc, each recorded with the caller's stack
// around the real call; only the outermost of libgc's nested calls counts.
#include <algorithm>
#include <cstring>

#include "bdwgc.h"

namespace heapman::rec::bdwgc {

__thread int t_gcDepth HEAPMAN_TLS = 0;

namespace {

inline bool recording() { return !t_gcDepth && !t_guard && g.active.load(std::memory_order_relaxed); }

struct Depth {
  Depth() { ++t_gcDepth; }
  ~Depth() { --t_gcDepth; }
};


// The start of an object as the collector sees it (a GC_debug_* object's recorded address lies
// past its debug header).
inline void* startOf(void* p, bool debug) { return debug ? real_GC_base.get()(p) : p; }

// `from` (a default argument: the calling hook's frame) starts the stack walk at the hook, past
// the recorder's own frames.
__attribute__((noinline)) void onGcAlloc(void* p, size_t size, HeapKind heap, bool debug,
                                         const void* from = __builtin_frame_address(0)) {
  Guard guard;
  uint64_t actual;
  if (debug) {
    void* base = startOf(p, true);
    uint64_t offset = reinterpret_cast<uint64_t>(p) - reinterpret_cast<uint64_t>(base);
    g.gcDebugOffset.store(offset, std::memory_order_relaxed);  // a constant; published by commit()
    actual = real_GC_size.get()(base) - offset;
  } else {
    actual = real_GC_size.get()(p);
  }
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kAlloc, static_cast<uint8_t>(heap), 0, from)) {
    if (debug) e->flags |= kDebugObject;
    e->a = reinterpret_cast<uint64_t>(p);
    e->b = size;
    e->c = std::max<uint64_t>(actual, size);
    commit(r, e);
  }
}

// A batch: the objects of a list linked through their first word, one stack for all.
__attribute__((noinline)) void onGcBatch(void* list, size_t size, HeapKind heap,
                                         const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r = nullptr;
  bool first = true;
  uint16_t stackFlags = 0;  // the first event's stack slot, for the others
  for (void* q = list; q; q = *static_cast<void**>(q)) {
    uint64_t actual = real_GC_size.get()(q);
    RawEvent* e = first ? beginWithStack(r, Kind::kAlloc, 0, 0, from)
                        : r ? begin(r, Kind::kAlloc, 0, 0) : nullptr;
    if (e) {
      if (first)
        stackFlags = static_cast<uint16_t>(kSameStack | e->flags);
      else
        e->flags = stackFlags;
      e->heap = static_cast<uint8_t>(heap);
      e->a = reinterpret_cast<uint64_t>(q);
      e->b = size;
      e->c = std::max<uint64_t>(actual, size);
      commit(r, e);
      first = false;
    }
  }
}

__attribute__((noinline)) void onGcFree(void* p, HeapKind heap, bool debug,
                                        const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kFree, static_cast<uint8_t>(heap), 0, from)) {
    if (debug) e->flags |= kDebugObject;
    e->a = reinterpret_cast<uint64_t>(p);
    commit(r, e);
  }
}

HeapKind heapOfKind(int k) {
  switch (k) {
    case 0: return HeapKind::kGcAtomic;          // PTRFREE
    case 1: return HeapKind::kGcNormal;          // NORMAL
    case 2: case 3: return HeapKind::kGcUncollectable;  // UNCOLLECTABLE, AUNCOLLECTABLE
    default: return HeapKind::kOther;            // kinds the program (or gcj, typed) created
  }
}

HeapKind heapOfObject(void* p, bool debug) {
  Guard guard;
  return heapOfKind(real_GC_get_kind_and_size.get()(startOf(p, debug), nullptr));
}


// Calls the real allocator; records the outermost call.
template <class Fn, class... A>
[[gnu::always_inline]] inline void* gcAlloc(Real<Fn>& real, HeapKind heap, size_t size, bool debug,
                                            A... args) {
  Fn* f = real.get();
  if (!recording()) return f(args...);
  void* p;
  {
    Depth d;
    p = f(args...);
  }
  if (p) onGcAlloc(p, size, heap, debug);
  return p;
}

// realloc, recorded as a free of the old object before the real call (the collector may hand
// its address to another thread at once) and an allocation of the result after it. Not one
// two-phase event around the call: the call may run a collection, whose callback emits events
// on this same thread.
template <class Fn, class... A>
[[gnu::always_inline]] inline void* gcRealloc(Real<Fn>& real, void* old, size_t n, bool debug,
                                              A... args) {
  Fn* f = real.get();
  if (!recording()) return f(args...);
  void* p;
  if (!old) {
    {
      Depth d;
      p = f(args...);
    }
    if (p) onGcAlloc(p, n, HeapKind::kGcNormal, debug);
    return p;
  }
  HeapKind heap = heapOfObject(old, debug);
  onGcFree(old, heap, debug);
  {
    Depth d;
    p = f(args...);
  }
  if (p)
    onGcAlloc(p, n, heap, debug);
  else if (n != 0)  // failed: the old object stays
    onGcAlloc(old,
              real_GC_size.get()(startOf(old, debug)) -
                  (debug ? g.gcDebugOffset.load(std::memory_order_relaxed) : 0),
              heap, debug);
  return p;
}

}  // namespace
}  // namespace heapman::rec::bdwgc

using namespace heapman::rec;
using namespace heapman::rec::bdwgc;

// ---- allocation entry points --------------------------------------------------------------
HEAPMAN_EXPORT void* GC_malloc(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic);
  return gcAlloc(real, HeapKind::kGcAtomic, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_uncollectable(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic_uncollectable(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_ignore_off_page(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_atomic_ignore_off_page(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_atomic_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcAtomic, n, false, n);
}
HEAPMAN_EXPORT void* GC_malloc_kind(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_malloc_kind);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_malloc_kind_global(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_malloc_kind_global);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc_ignore_off_page(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc_ignore_off_page);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_malloc_uncollectable(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, false, n, k);
}
HEAPMAN_EXPORT void* GC_generic_or_special_malloc(size_t n, int k) {
  HEAPMAN_GC_REAL(GC_generic_or_special_malloc);
  return gcAlloc(real, heapOfKind(k), n, false, n, k);
}
HEAPMAN_EXPORT void* GC_gcj_malloc(size_t n, void* vtable) {
  HEAPMAN_GC_REAL(GC_gcj_malloc);
  return gcAlloc(real, HeapKind::kGcj, n, false, n, vtable);
}
HEAPMAN_EXPORT void* GC_gcj_malloc_ignore_off_page(size_t n, void* vtable) {
  HEAPMAN_GC_REAL(GC_gcj_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcj, n, false, n, vtable);
}
HEAPMAN_EXPORT void* GC_malloc_explicitly_typed(size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_malloc_explicitly_typed);
  return gcAlloc(real, HeapKind::kGcTyped, n, false, n, d);
}
HEAPMAN_EXPORT void* GC_malloc_explicitly_typed_ignore_off_page(size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_malloc_explicitly_typed_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcTyped, n, false, n, d);
}
HEAPMAN_EXPORT void* GC_calloc_explicitly_typed(size_t count, size_t n, GC_descr d) {
  HEAPMAN_GC_REAL(GC_calloc_explicitly_typed);
  size_t bytes = count * n;
  if (__builtin_mul_overflow(count, n, &bytes)) bytes = SIZE_MAX;
  return gcAlloc(real, HeapKind::kGcTyped, bytes, false, count, n, d);
}
HEAPMAN_EXPORT void* GC_finalized_malloc(size_t n, const struct GC_finalizer_closure* fc) {
  HEAPMAN_GC_REAL(GC_finalized_malloc);
  return gcAlloc(real, HeapKind::kOther, n, false, n, fc);
}
HEAPMAN_EXPORT void* GC_memalign(size_t align, size_t n) {
  HEAPMAN_GC_REAL(GC_memalign);
  return gcAlloc(real, HeapKind::kGcNormal, n, false, align, n);
}
HEAPMAN_EXPORT int GC_posix_memalign(void** out, size_t align, size_t n) {
  HEAPMAN_GC_REAL(GC_posix_memalign);
  auto* f = real.get();
  if (!recording()) return f(out, align, n);
  int rc;
  {
    Depth d;
    rc = f(out, align, n);
  }
  if (rc == 0 && *out) onGcAlloc(*out, n, HeapKind::kGcNormal, false);
  return rc;
}
HEAPMAN_EXPORT char* GC_strdup(const char* s) {
  HEAPMAN_GC_REAL(GC_strdup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, s ? std::strlen(s) + 1 : 0, false, s));
}
HEAPMAN_EXPORT char* GC_strndup(const char* s, size_t n) {
  HEAPMAN_GC_REAL(GC_strndup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, strnlen(s, n) + 1, false, s, n));
}
HEAPMAN_EXPORT void* GC_malloc_many(size_t n) {
  HEAPMAN_GC_REAL(GC_malloc_many);
  auto* f = real.get();
  if (!recording()) return f(n);
  void* list;
  {
    Depth d;
    list = f(n);
  }
  if (list) onGcBatch(list, n, HeapKind::kGcNormal);
  return list;
}
HEAPMAN_EXPORT void GC_generic_malloc_many(size_t n, int k, void** result) {
  HEAPMAN_GC_REAL(GC_generic_malloc_many);
  auto* f = real.get();
  if (!recording()) return f(n, k, result);
  {
    Depth d;
    f(n, k, result);
  }
  if (*result) onGcBatch(*result, n, heapOfKind(k));
}

// ---- the GC_debug_* family: the program's pointer lies past a debug header -------------------
HEAPMAN_EXPORT void* GC_debug_malloc(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic);
  return gcAlloc(real, HeapKind::kGcAtomic, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_uncollectable(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic_uncollectable(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic_uncollectable);
  return gcAlloc(real, HeapKind::kGcUncollectable, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_ignore_off_page(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_malloc_atomic_ignore_off_page(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_atomic_ignore_off_page);
  return gcAlloc(real, HeapKind::kGcAtomic, n, true, n, s, i);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still exported and callable
HEAPMAN_EXPORT void* GC_debug_malloc_stubborn(size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_malloc_stubborn);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n, s, i);
}
#pragma GCC diagnostic pop
HEAPMAN_EXPORT void* GC_debug_gcj_malloc(size_t n, void* vtable, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_gcj_malloc);
  return gcAlloc(real, HeapKind::kGcj, n, true, n, vtable, s, i);
}
HEAPMAN_EXPORT char* GC_debug_strdup(const char* str, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_strdup);
  return static_cast<char*>(
      gcAlloc(real, HeapKind::kGcAtomic, str ? std::strlen(str) + 1 : 0, true, str, s, i));
}
HEAPMAN_EXPORT char* GC_debug_strndup(const char* str, size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_strndup);
  return static_cast<char*>(gcAlloc(real, HeapKind::kGcAtomic, strnlen(str, n) + 1, true, str, n, s, i));
}
HEAPMAN_EXPORT void* GC_debug_malloc_replacement(size_t n) {
  HEAPMAN_GC_REAL(GC_debug_malloc_replacement);
  return gcAlloc(real, HeapKind::kGcNormal, n, true, n);
}

// ---- frees and reallocs ----------------------------------------------------------------------
HEAPMAN_EXPORT void GC_free(void* p) {
  HEAPMAN_GC_REAL(GC_free);
  auto* f = real.get();
  if (!p || !recording()) return f(p);
  onGcFree(p, heapOfObject(p, false), false);
  Depth d;
  f(p);
}
HEAPMAN_EXPORT void GC_debug_free(void* p) {
  HEAPMAN_GC_REAL(GC_debug_free);
  auto* f = real.get();
  if (!p || !recording()) return f(p);
  onGcFree(p, heapOfObject(p, true), true);
  Depth d;
  f(p);
}
HEAPMAN_EXPORT void* GC_realloc(void* old, size_t n) {
  HEAPMAN_GC_REAL(GC_realloc);
  return gcRealloc(real, old, n, false, old, n);
}
HEAPMAN_EXPORT void* GC_debug_realloc(void* old, size_t n, GC_EXTRA_PARAMS) {
  HEAPMAN_GC_REAL(GC_debug_realloc);
  return gcRealloc(real, old, n, true, old, n, s, i);
}
HEAPMAN_EXPORT void* GC_debug_realloc_replacement(void* old, size_t n) {
  HEAPMAN_GC_REAL(GC_debug_realloc_replacement);
  return gcRealloc(real, old, n, true, old, n);
}
