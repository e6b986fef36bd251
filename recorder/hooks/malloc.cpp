// glibc malloc family, interposed by LD_PRELOAD. The real functions are glibc's __libc_*
// entry points, reached without dlsym and so without allocating (dlsym allocates, and the
// allocation would come back here).
//
// Order: a free is recorded before the real free (another thread may get the address back at
// once), an allocation after the real call returns. A realloc takes its sequence number before
// the real call and commits after it, so that no other thread can be seen allocating the old
// block before this realloc frees it.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#include <cstring>

#include "../core/recorder.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
}

namespace heapman::rec {
namespace {

constexpr uint8_t kNative = 0;  // log::HeapKind::kNative


// Recording, and of glibc's heap (a Mono process records its runtime's mallocs only on request).
inline bool nativeOn() {
  return g.active.load(std::memory_order_relaxed) && g.recordNative;
}

// `from` (a default argument: the calling hook's frame) starts the stack walk at the hook, past
// the recorder's own frames.
__attribute__((noinline)) void onAlloc(void* p, size_t size,
                                       const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kAlloc, kNative, 0, from)) {
    e->a = reinterpret_cast<uint64_t>(p);
    e->b = size;
    e->c = malloc_usable_size(p);
    commit(r, e);
  }
}

__attribute__((noinline)) void onFree(void* p, const void* from = __builtin_frame_address(0)) {
  Guard guard;
  Ring* r;
  if (RawEvent* e = beginWithStack(r, Kind::kFree, kNative, 0, from)) {
    e->a = reinterpret_cast<uint64_t>(p);
    commit(r, e);
  }
}

inline bool recording() { return !t_guard && nativeOn(); }

bool validAlignment(size_t a) { return a && (a & (a - 1)) == 0 && a % sizeof(void*) == 0; }

}  // namespace
}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT void* malloc(size_t n) {
  if (t_guard) return __libc_malloc(n);
  void* p = __libc_malloc(n);
  if (p && nativeOn()) onAlloc(p, n);
  return p;
}

HEAPMAN_EXPORT void free(void* p) {
  if (t_guard || !p) return __libc_free(p);
  if (nativeOn()) onFree(p);
  __libc_free(p);
}

HEAPMAN_EXPORT void* calloc(size_t n, size_t size) {
  if (t_guard) return __libc_calloc(n, size);
  void* p = __libc_calloc(n, size);
  if (p && nativeOn()) onAlloc(p, n * size);
  return p;
}

HEAPMAN_EXPORT void* realloc(void* old, size_t n) {
  if (!recording()) return __libc_realloc(old, n);
  if (!old) {
    void* p = __libc_realloc(nullptr, n);
    if (p) onAlloc(p, n);
    return p;
  }
  if (n == 0) {  // glibc frees the block and returns null
    onFree(old);
    return __libc_realloc(old, 0);
  }
  Guard guard;
  Ring* r;
  RawEvent* e = beginWithStack(r, Kind::kRealloc, kNative);
  void* p = __libc_realloc(old, n);
  if (e) {
    if (p) {
      e->a = reinterpret_cast<uint64_t>(old);
      e->extra = reinterpret_cast<uint64_t>(p);
      e->b = n;
      e->c = malloc_usable_size(p);
    } else {
      e->kind = Kind::kNop;  // failed: the old block stays, nothing happened
    }
    commit(r, e);
  }
  return p;
}

HEAPMAN_EXPORT void* reallocarray(void* old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, bytes);
}

HEAPMAN_EXPORT void* memalign(size_t alignment, size_t n) {
  if (t_guard) return __libc_memalign(alignment, n);
  void* p = __libc_memalign(alignment, n);
  if (p && nativeOn()) onAlloc(p, n);
  return p;
}

HEAPMAN_EXPORT void* aligned_alloc(size_t alignment, size_t n) {
  return memalign(alignment, n);  // glibc 2.36's aligned_alloc is memalign
}

HEAPMAN_EXPORT int posix_memalign(void** out, size_t alignment, size_t n) {
  if (!validAlignment(alignment)) return EINVAL;
  int saved = errno;
  void* p = memalign(alignment, n);
  if (!p) return ENOMEM;
  errno = saved;
  *out = p;
  return 0;
}

HEAPMAN_EXPORT void* valloc(size_t n) {
  if (t_guard) return __libc_valloc(n);
  void* p = __libc_valloc(n);
  if (p && nativeOn()) onAlloc(p, n);
  return p;
}

HEAPMAN_EXPORT void* pvalloc(size_t n) {
  if (t_guard) return __libc_pvalloc(n);
  void* p = __libc_pvalloc(n);
  if (p && nativeOn()) onAlloc(p, n);
  return p;
}

// dlopen/dlclose: the calling thread snapshots the module list into its ring right after the
// real call, so the ModuleLoad/Unload records fall in order with its allocations.
HEAPMAN_EXPORT void* dlopen(const char* file, int mode) {
  static auto real = realNextAs<void* (*)(const char*, int)>("dlopen");
  g.modulesBusy.fetch_add(1, std::memory_order_seq_cst);
  void* h = real ? real(file, mode) : nullptr;
  if (h) recordModules();
  g.modulesGen.fetch_add(1, std::memory_order_seq_cst);
  g.modulesBusy.fetch_sub(1, std::memory_order_seq_cst);
  return h;
}

HEAPMAN_EXPORT int dlclose(void* handle) {
  static auto real = realNextAs<int (*)(void*)>("dlclose");
  g.modulesBusy.fetch_add(1, std::memory_order_seq_cst);
  int rc = real ? real(handle) : -1;
  recordModules();
  g.modulesGen.fetch_add(1, std::memory_order_seq_cst);
  g.modulesBusy.fetch_sub(1, std::memory_order_seq_cst);
  return rc;
}

// pthread_getattr_np holds the thread's internal lock while it allocates (fopen of
// /proc/self/maps for the main thread), and the recorder calls it itself when a thread records
// its first event: the recorder's own call would wait for that lock forever. Allocations inside
// it are glibc's own, freed before it returns: they go unrecorded (bdwgc's GC_init calls it
// before the main thread has recorded anything).
HEAPMAN_EXPORT int pthread_getattr_np(pthread_t thread, pthread_attr_t* attr) {
  static auto real = realNextAs<int (*)(pthread_t, pthread_attr_t*)>("pthread_getattr_np");
  Guard guard;
  return real ? real(thread, attr) : ENOSYS;
}
