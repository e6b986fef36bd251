// Mono with the Boehm collector (mono-boehm), through Mono's profiler API: the preload module is
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

#include "../core/gc_events.h"
#include "../core/recorder.h"
#include "layers.h"
#include "../collector/collection.h"
#include "../collector/finalize_queue.h"
#include "../collector/gc_tracking.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::rec {
namespace {

using log::HeapKind;
using log::RootSource;

// ---------------------------------------------------------------------------------------------
// Mono's API, found in the process (mono-boehm exports it).

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
  X(mono_vtable_class) X(mono_field_get_name)

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
MonoApi m;

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

std::atomic<bool> g_on{false};  // the profiler is installed and recording
bool g_sgen = false;            // Mono with SGen (initMono said so): nothing to record
bool g_stacks = true;           // managed stacks (call instrumentation) wanted
bool g_skipLeaves = true;       // leave methods that cannot allocate uninstrumented (onFilter)

// ---------------------------------------------------------------------------------------------
// Shadow stacks: one per thread, mmap'd on the thread's first method entry (2 MiB of address
// space, touched only as deep as the thread goes: deeper than a managed thread's stack can hold).
// Past kShadowMax entries frames are counted, not kept, and an allocation there records no stack
// rather than a wrong one.

constexpr uint32_t kShadowMax = 1u << 18;
// The stack of a thread's last allocation: the ring slot it is in, with the ring and the
// counters that say whether it still is (the shadow stack's changes, Ring::slotChanges).
struct LastStack {
  Ring* ring = nullptr;
  uint32_t changes = 0, slotChanges = 0, slot = 0;
};
struct Shadow {
  uint32_t depth = 0;
  uint32_t changes = 0;         // every push and pop
  LastStack last;
  uint64_t frames[kShadowMax];  // outermost first
};
__thread Shadow* t_shadow HEAPMAN_TLS = nullptr;
__thread LastStack t_lastNoShadow HEAPMAN_TLS;  // a thread without a shadow stack (no stacks)

pthread_key_t g_shadowKey;  // its destructor unmaps an exiting thread's shadow stack

void freeShadow(void* p) {
  t_shadow = nullptr;
  munmap(p, sizeof(Shadow));
}

Shadow* shadow() {
  if (__builtin_expect(t_shadow != nullptr, 1)) return t_shadow;
  auto* s = static_cast<Shadow*>(gc::mapBytes(sizeof(Shadow)));
  if (!s) return nullptr;
  new (s) Shadow;
  t_shadow = s;
  pthread_setspecific(g_shadowKey, s);
  return s;
}

void onEnter(MonoProfiler*, MonoMethod* method, MonoProfilerCallContext*) {
  Shadow* s = shadow();
  if (!s) return;
  if (s->depth < kShadowMax) s->frames[s->depth] = reinterpret_cast<uint64_t>(method);
  ++s->depth;
  ++s->changes;
}

inline void popFrame() {
  Shadow* s = t_shadow;
  if (s && s->depth) {
    --s->depth;
    ++s->changes;
  }
}

void onLeave(MonoProfiler*, MonoMethod*, MonoProfilerCallContext*) { popFrame(); }
void onExceptionLeave(MonoProfiler*, MonoMethod*, MonoObject*) { popFrame(); }
// The caller's frame is replaced by the target's, whose enter event follows.
void onTailCall(MonoProfiler*, MonoMethod*, MonoMethod*) { popFrame(); }

// Whether a method can be on the stack of an allocation: not if its IL allocates nothing, throws
// nothing, touches no static field (a class constructor could run) and calls nothing but
// methods of the same kind through `call` (Object::.ctor, constructors that only set fields,
// small helpers). Such methods are left uninstrumented: they are most of the calls in typical
// code (every constructor ends in Object::.ctor) and can never appear in a recorded stack. The
// one thing lost: an exception object the runtime itself raises inside one (NullReference,
// IndexOutOfRange, InvalidCast) is recorded with the caller as its leaf. Anything the scan does
// not understand counts as allocating. Results are memoized by method handle.
constexpr int kCalleeDepth = 3;
constexpr size_t kMemoSlots = 1u << 14;
std::atomic<uint64_t> g_memo[kMemoSlots];  // handle | 1 (may allocate) or | 2 (cannot)

// Operand bytes of a one-byte opcode (ECMA-335 III), -1 for an opcode the scan refuses.
int operandBytes(uint8_t op, const uint8_t* ip, const uint8_t* end) {
  if (op <= 0x0D || (op >= 0x14 && op <= 0x1E) || op == 0x25 || op == 0x26 || op == 0x2A ||
      (op >= 0x46 && op <= 0x6E) || op == 0x76 || op == 0x7A || (op >= 0x82 && op <= 0x8B) ||
      op == 0x8E || (op >= 0x90 && op <= 0xA2) || (op >= 0xB3 && op <= 0xBA) || op == 0xC3 ||
      (op >= 0xD1 && op <= 0xDC) || op == 0xDF || op == 0xE0)
    return 0;
  if ((op >= 0x0E && op <= 0x13) || op == 0x1F || (op >= 0x2B && op <= 0x37) || op == 0xDE) return 1;
  if (op == 0x21 || op == 0x23) return 8;
  if (op == 0x45) {  // switch: u32 count, then count targets
    if (end - ip < 4) return -1;
    uint32_t n;
    std::memcpy(&n, ip, 4);
    return n > 0x10000 ? -1 : static_cast<int>(4 + 4 * n);
  }
  if (op == 0x20 || op == 0x22 || op == 0x27 || op == 0x28 || op == 0x29 || (op >= 0x38 && op <= 0x44) ||
      (op >= 0x6F && op <= 0x75) || (op >= 0x79 && op <= 0x81) || op == 0x8C || op == 0x8D ||
      op == 0x8F || op == 0xA3 || op == 0xA4 || op == 0xA5 || op == 0xC2 || op == 0xC6 ||
      op == 0xD0 || op == 0xDD)
    return 4;
  return -1;
}

bool mayAllocate(MonoMethod* method, int depth);

bool scanMayAllocate(MonoMethod* method, int depth) {
  MonoMethodHeader* header = m.mono_method_get_header(method);
  if (!header) return true;  // no IL here (internal call, runtime method): assume it allocates
  uint32_t size = 0, maxStack = 0;
  const uint8_t* ip = m.mono_method_header_get_code(header, &size, &maxStack);
  const uint8_t* end = ip ? ip + size : ip;
  bool may = !ip;
  MonoImage* image = m.mono_class_get_image(m.mono_method_get_class(method));
  while (!may && ip < end) {
    uint8_t op = *ip++;
    if (op == 0xFE) {  // two-byte opcodes
      if (ip >= end) {
        may = true;
        break;
      }
      uint8_t op2 = *ip++;
      int bytes;
      if (op2 <= 0x05 || op2 == 0x0F || op2 == 0x11 || op2 == 0x13 || op2 == 0x14 || op2 == 0x17 ||
          op2 == 0x18 || op2 == 0x1D || op2 == 0x1E)
        bytes = 0;
      else if (op2 == 0x06 || op2 == 0x07 || op2 == 0x15 || op2 == 0x16 || op2 == 0x1C)
        bytes = 4;
      else if (op2 >= 0x09 && op2 <= 0x0E)
        bytes = 2;
      else if (op2 == 0x12 || op2 == 0x19)
        bytes = 1;
      else
        bytes = -1;  // rethrow (0x1A) and anything unknown
      if (bytes < 0 || end - ip < bytes) may = true;
      ip += bytes < 0 ? 0 : bytes;
      continue;
    }
    int bytes = operandBytes(op, ip, end);
    if (bytes < 0 || end - ip < bytes) {
      may = true;
      break;
    }
    switch (op) {
      case 0x73: case 0x8D: case 0x8C:            // newobj, newarr, box
      case 0x7A: case 0x29: case 0x6F: case 0x27: // throw, calli, callvirt, jmp
      case 0x7E: case 0x7F: case 0x80:            // ldsfld, ldsflda, stsfld: a .cctor may run
      case 0xD0:                                  // ldtoken
        may = true;
        break;
      case 0x28: {                                // call: as the callee, a few levels deep
        uint32_t token;
        std::memcpy(&token, ip, 4);
        uint32_t table = token >> 24;
        MonoMethod* callee = depth < kCalleeDepth && (table == 0x06 || table == 0x0A) && image
                                 ? m.mono_get_method(image, token, nullptr)
                                 : nullptr;
        may = !callee || mayAllocate(callee, depth + 1);
        break;
      }
      default:
        break;
    }
    ip += bytes;
  }
  m.mono_metadata_free_mh(header);
  return may;
}

bool mayAllocate(MonoMethod* method, int depth) {
  auto key = reinterpret_cast<uint64_t>(method);
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (kMemoSlots - 1);
  for (size_t probe = 0; probe < 16; ++probe, i = (i + 1) & (kMemoSlots - 1)) {
    uint64_t v = g_memo[i].load(std::memory_order_acquire);
    if ((v & ~uint64_t{3}) == key) return (v & 3) == 1;
    if (v == 0) break;
  }
  bool may = scanMayAllocate(method, depth);
  i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (kMemoSlots - 1);
  for (size_t probe = 0; probe < 16; ++probe, i = (i + 1) & (kMemoSlots - 1)) {
    uint64_t expected = 0;
    if (g_memo[i].compare_exchange_strong(expected, key | (may ? 1 : 2)) ||
        (expected & ~uint64_t{3}) == key)
      break;
  }
  return may;
}

// Every method the JIT compiles that can be on an allocation's stack (mayAllocate), except the
// runtime's wrappers (runtime-invoke, managed-to-native, the allocation icall wrapper every
// allocation goes through while allocations are profiled): stacks show the program's C#
// methods, and no allocation pays for the wrapper's enter/leave.
MonoProfilerCallInstrumentationFlags onFilter(MonoProfiler*, MonoMethod* method) {
  Guard guard;
  char* name = m.mono_method_full_name(method, false);
  bool wrapper = name && std::strncmp(name, "(wrapper ", 9) == 0;
  if (name) m.mono_free(name);
  if (wrapper || (g_skipLeaves && !mayAllocate(method, 0))) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  return static_cast<MonoProfilerCallInstrumentationFlags>(
      MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
      MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL |
      MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);
}

// The calling thread's managed frames, leaf first, at most `max`.
uint32_t managedFrames(uint64_t* out, uint32_t max) {
  Shadow* s = t_shadow;
  if (!s || s->depth > kShadowMax) return 0;
  uint32_t n = std::min(s->depth, max);
  const uint64_t* top = s->frames + s->depth;
  for (uint32_t i = 0; i < n; ++i) out[i] = top[-1 - static_cast<int>(i)];
  return n;
}

// ---------------------------------------------------------------------------------------------
// Names: methods when the JIT finishes them, classes on first sight.

void emitNamed(Kind kind, uint64_t handle, uint64_t b, uint64_t c, const char* name) {
  Ring* r = threadRing();
  if (!r || !name) return;
  auto len = static_cast<uint32_t>(std::min<size_t>(std::strlen(name), 4096));
  if (RawEvent* e = begin(r, kind, 0, len)) {
    e->a = handle;
    e->b = b;
    e->c = c;
    std::memcpy(extraOf(e), name, len);
    commit(r, e);
  }
}

void onJitDone(MonoProfiler*, MonoMethod* method, MonoJitInfo* ji) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  char* name = m.mono_method_full_name(method, true);
  uint64_t start = ji ? reinterpret_cast<uint64_t>(m.mono_jit_info_get_code_start(ji)) : 0;
  uint64_t size = ji ? static_cast<uint64_t>(m.mono_jit_info_get_code_size(ji)) : 0;
  emitNamed(Kind::kMethodDef, reinterpret_cast<uint64_t>(method), start, size, name);
  if (name) m.mono_free(name);
}

// Classes announced: a global open-addressing set of handles (CAS insert, never removed), each
// entry's low bit set once its TypeDef is committed; and a per-thread direct-mapped cache keyed
// by the object's vtable (its first word, MonoObject.vtable: one load, where
// mono_object_get_class is a public API call that switches the thread's GC state and copies
// stack data each time), holding the vtable's class, whose TypeDef is known committed, and how
// its objects' sizes are found: the same for every object (not arrays, not strings: the same
// request, so the same size class), or from the string's length or the vector's length.
constexpr size_t kClassSlots = 1u << 16;
std::atomic<uint64_t> g_classes[kClassSlots];
constexpr uint64_t kAnnounced = 1;
constexpr size_t kClassCache = 256;
enum class Shape : uint8_t { kFixed, kString, kVector, kOther };
struct CachedClass {
  uint64_t vtable;
  uint64_t klass;
  uint32_t size, actual;  // kFixed
  uint32_t element;       // kVector: bytes per element
  Shape shape;
};
__thread CachedClass t_classCache[kClassCache] HEAPMAN_TLS;

// Sizes of strings and vectors from Mono 6.8's object layouts (64-bit): MonoString's int32
// length at 16, its chars at 20, two bytes each plus a terminator; MonoArray's bounds pointer at
// 16 (null for a vector), its uintptr length at 24, its elements at 32. mono_object_get_size
// says the same; both are compared on the first kSizeChecks strings and vectors, and any
// disagreement sends every object to mono_object_get_size for good.
constexpr uint32_t kSizeChecks = 4096;
std::atomic<uint32_t> g_sizeChecks{0};
std::atomic<bool> g_sizeLayoutOff{false};

inline uint64_t computedSize(const CachedClass& c, MonoObject* obj) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(obj);
  if (c.shape == Shape::kString) {
    int32_t length;
    std::memcpy(&length, bytes + 16, sizeof length);
    return 20 + 2 * static_cast<uint64_t>(static_cast<uint32_t>(length)) + 2;
  }
  uint64_t bounds, length;
  std::memcpy(&bounds, bytes + 16, sizeof bounds);
  if (bounds) return m.mono_object_get_size(obj);  // a multi-dimensional array
  std::memcpy(&length, bytes + 24, sizeof length);
  return 32 + uint64_t{c.element} * length;
}

size_t classHash(uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 48); }

// Where a class's objects hold references (log::TypeLayout), from its fields as Mono laid them
// out: once per class, when it is announced. Mono 6.8, 64-bit: an object starts with its vtable
// and sync words (16 bytes), and a field's offset counts them, also in a value type (its offsets
// are those of its boxed form); an array's elements start at 32.
constexpr uint32_t kObjectHeader = 16;
constexpr uint32_t kArrayData = 32;
constexpr uint32_t kMaxRefOffsets = 512;  // more: the layout is left unknown (scanned
                                          // conservatively)
constexpr uint16_t kFieldStatic = 0x10;   // FIELD_ATTRIBUTE_STATIC (ECMA-335 II.23.1.5)
constexpr uint16_t kFieldLiteral = 0x40;  // FIELD_ATTRIBUTE_LITERAL: a constant, no storage

struct RefOffsets {
  uint32_t at[kMaxRefOffsets];
  uint32_t n = 0;
  bool overflow = false;
  void add(uint32_t off) {
    if (n < kMaxRefOffsets)
      at[n++] = off;
    else
      overflow = true;
  }
};

// Adds the reference fields of `klass` and its base classes, each at `base` + its offset -
// `header` (kObjectHeader for a value type embedded in something else); value-type fields are
// entered (to a depth that no real layout reaches).
void addReferenceFields(MonoClass* klass, uint32_t base, uint32_t header, RefOffsets& out,
                        int depth) {
  for (MonoClass* c = klass; c && !out.overflow; c = m.mono_class_get_parent(c)) {
    void* iter = nullptr;
    while (MonoClassField* f = m.mono_class_get_fields(c, &iter)) {
      if (m.mono_field_get_flags(f) & kFieldStatic) continue;  // statics live in the vtable
      MonoType* type = m.mono_field_get_type(f);
      uint32_t off = base + static_cast<uint32_t>(m.mono_field_get_offset(f)) - header;
      if (m.mono_type_is_reference(type))
        out.add(off);
      else if (m.mono_type_is_struct(type) && depth < 8)
        addReferenceFields(m.mono_class_from_mono_type(type), off, kObjectHeader, out, depth + 1);
    }
  }
}

void emitTypeDef(MonoClass* klass, uint64_t size, const char* name) {
  Ring* r = threadRing();
  if (!r || !name) return;
  RefOffsets refs;
  auto layout = log::TypeLayout::kFields;
  uint32_t elementSize = 0, dataOffset = 0;
  if (klass == m.mono_get_string_class()) {
    layout = log::TypeLayout::kPointerFree;
  } else if (m.mono_class_get_rank(klass) > 0) {
    MonoClass* element = m.mono_class_get_element_class(klass);
    if (m.mono_class_is_valuetype(element))
      addReferenceFields(element, 0, kObjectHeader, refs, 0);
    else
      refs.add(0);
    layout = log::TypeLayout::kArray;
    elementSize = static_cast<uint32_t>(m.mono_array_element_size(klass));
    dataOffset = kArrayData;
  } else {
    addReferenceFields(klass, 0, 0, refs, 0);
  }
  if (refs.overflow) layout = log::TypeLayout::kUnknown, refs.n = 0;
  if (refs.n == 0 && layout != log::TypeLayout::kUnknown) layout = log::TypeLayout::kPointerFree;
  std::sort(refs.at, refs.at + refs.n);
  auto nameLen = static_cast<uint32_t>(std::min<size_t>(std::strlen(name), 4096));
  uint32_t refBytes = refs.n * static_cast<uint32_t>(sizeof(uint32_t));
  if (RawEvent* e = begin(r, Kind::kTypeDef, 0, nameLen + refBytes)) {
    e->a = reinterpret_cast<uint64_t>(klass);
    e->b = size;
    e->c = nameLen | uint64_t{static_cast<uint8_t>(layout)} << 16 | uint64_t{dataOffset} << 24 |
           uint64_t{elementSize} << 32;
    std::memcpy(extraOf(e), name, nameLen);
    std::memcpy(extraOf(e) + nameLen, refs.at, refBytes);
    commit(r, e);
  }
}

void announceClass(MonoClass* klass) {
  auto key = reinterpret_cast<uint64_t>(klass);
  size_t i = classHash(key) & (kClassSlots - 1);
  std::atomic<uint64_t>* slot = nullptr;
  for (size_t probe = 0; probe < kClassSlots; ++probe, i = (i + 1) & (kClassSlots - 1)) {
    uint64_t v = g_classes[i].load(std::memory_order_acquire);
    if ((v & ~kAnnounced) == key) {
      if (v & kAnnounced) return;  // committed before this thread's next sequence number
      slot = &g_classes[i];
      break;
    }
    if (v == 0) {
      if (g_classes[i].compare_exchange_strong(v, key, std::memory_order_acq_rel)) {
        slot = &g_classes[i];
        break;
      }
      if ((v & ~kAnnounced) == key) {
        if (v & kAnnounced) return;
        slot = &g_classes[i];
        break;
      }
    }
  }
  // Not yet committed by anyone (or the table is full): announce it ourselves. The writer
  // keeps the first TypeDef of a handle and drops repeats.
  char* name = m.mono_type_get_name(m.mono_class_get_type(klass));
  uint64_t size = m.mono_class_is_valuetype(klass) ? 0 : static_cast<uint64_t>(m.mono_class_instance_size(klass));
  emitTypeDef(klass, size, name);
  if (name) m.mono_free(name);
  if (slot) slot->store(key | kAnnounced, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// Allocations.

// A class this thread has not allocated lately: asks Mono.
__attribute__((noinline)) void cacheClass(CachedClass& cached, uint64_t vtable, MonoObject* obj) {
  MonoClass* klass = m.mono_object_get_class(obj);
  announceClass(klass);
  uint32_t size = 0, element = 0;
  Shape shape = Shape::kOther;
  int rank = m.mono_class_get_rank(klass);
  if (klass == m.mono_get_string_class()) {
    shape = Shape::kString;
  } else if (rank == 0) {
    uint64_t fixed = m.mono_object_get_size(obj);
    if (fixed < UINT32_MAX) shape = Shape::kFixed, size = static_cast<uint32_t>(fixed);
  } else if (rank == 1) {
    shape = Shape::kVector, element = static_cast<uint32_t>(m.mono_array_element_size(klass));
  }
  uint64_t actual = shape == Shape::kFixed ? m.collector.size(obj) : 0;
  cached = {vtable, reinterpret_cast<uint64_t>(klass), size,
            actual < UINT32_MAX ? static_cast<uint32_t>(actual) : 0u, element, shape};
  if (shape == Shape::kFixed && !cached.actual) cached.shape = Shape::kOther;
}

// The size of a string, an array or an object of no fixed size.
__attribute__((noinline)) uint64_t variableSize(const CachedClass& cached, MonoObject* obj) {
  if (cached.shape == Shape::kOther || g_sizeLayoutOff.load(std::memory_order_relaxed))
    return m.mono_object_get_size(obj);
  uint64_t size = computedSize(cached, obj);
  if (g_sizeChecks.load(std::memory_order_relaxed) < kSizeChecks) {
    g_sizeChecks.fetch_add(1, std::memory_order_relaxed);
    uint64_t official = m.mono_object_get_size(obj);
    if (official != size) {
      if (!g_sizeLayoutOff.exchange(true))
        say("Mono layer: string/array layout differs from Mono 6.8's; sizes from "
            "mono_object_get_size");
      size = official;
    }
  }
  return size;
}

// An allocation whose stack is not the one its thread's last allocation left in a slot: takes
// the managed frames (or none) through the ring's stack cache.
__attribute__((noinline)) RawEvent* beginAllocationWithFrames(Ring* r, LastStack& last,
                                                              uint32_t changes) {
  uint64_t frames[kMaxFrames];
  uint32_t n = g_stacks ? managedFrames(frames, g.depth) : 0;
  RawEvent* e = beginWithFrames(r, Kind::kAlloc, static_cast<uint8_t>(HeapKind::kManaged), frames,
                                n, 0, kManagedFrames);
  if (e) last = {r, changes, r->slotChanges, stackSlotOf(e->flags)};
  return e;
}

// The commonest event of a Mono program. Its usual path (a class this thread allocated lately,
// of fixed size, in a method that allocated before) calls nothing; the rest is out of line.
// The guard covers all of it, also against a signal handler that allocates on this thread
// while its record is half written.
void onAllocation(MonoProfiler*, MonoObject* obj) {
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Guard guard;
  uint64_t vtable;
  std::memcpy(&vtable, obj, sizeof vtable);
  CachedClass& cached = t_classCache[(vtable >> 4) & (kClassCache - 1)];
  if (__builtin_expect(cached.vtable != vtable, 0)) cacheClass(cached, vtable, obj);
  uint64_t size, actual;
  if (__builtin_expect(cached.shape == Shape::kFixed, 1)) {
    size = cached.size;
    actual = cached.actual;
  } else {
    size = variableSize(cached, obj);
    actual = m.collector.size(obj);
  }
  const uint64_t key = cached.klass;
  Ring* r = threadRing();
  if (!r) return;
  RawEvent* e;
  // No call or return since this thread's last allocation (or no stacks at all): the same stack,
  // still in its slot (consecutive allocations in one method need no copy and no comparison).
  Shadow* s = t_shadow;
  LastStack& last = s ? s->last : t_lastNoShadow;
  const uint32_t changes = s ? s->changes : 0;
  if (last.ring == r && last.changes == changes && last.slotChanges == r->slotChanges)
    e = beginAllocationWithSlot(r, static_cast<uint8_t>(HeapKind::kManaged), last.slot,
                                kManagedFrames);
  else
    e = beginAllocationWithFrames(r, last, changes);
  if (e) {
    e->a = reinterpret_cast<uint64_t>(obj);
    e->b = size;
    e->c = std::max(actual, size);
    e->extra = key;
    commit(r, e);
  }
}

// ---------------------------------------------------------------------------------------------
// Roots and threads. Registered roots and the threads Mono knows are kept for the root set of
// each collection; a spinlock guards both (rare callers, never while the world is stopped).

struct RegisteredRoot {
  uint64_t low, size;
  uint8_t source;
};
constexpr int kMaxRoots = 16384;
RegisteredRoot g_rootRanges[kMaxRoots];
int g_rootCount = 0;

struct MonoThread {
  pthread_t self;
  uint64_t low, high;
  uint32_t index;
};
constexpr int kMaxThreads = 1024;
MonoThread g_threads[kMaxThreads];
int g_threadCount = 0;

std::atomic<bool> g_lock{false};
struct SpinLock : gc::SpinLock {
  SpinLock() : gc::SpinLock(g_lock) {}
};

RootSource rootSourceOf(MonoGCRootSource s) {
  switch (s) {
    case MONO_ROOT_SOURCE_STATIC: return RootSource::kMonoStatic;
    case MONO_ROOT_SOURCE_THREAD_STATIC:
    case MONO_ROOT_SOURCE_CONTEXT_STATIC: return RootSource::kMonoThreadStatic;
    case MONO_ROOT_SOURCE_DOMAIN: return RootSource::kMonoDomain;
    case MONO_ROOT_SOURCE_GC_HANDLE:
    case MONO_ROOT_SOURCE_HANDLE: return RootSource::kMonoHandle;
    case MONO_ROOT_SOURCE_STACK: return RootSource::kMonoStack;
    case MONO_ROOT_SOURCE_EXTERNAL: return RootSource::kRegistered;
    default: return RootSource::kOther;
  }
}

// A class's static data ("Static Fields", keyed by its MonoVTable: mono_class_create_runtime_vtable
// registers it while creating the vtable, its fields laid out already), named for the graph and
// the leak report: "static fields of Game.Program: ScoreChanged +0x0, levels +0x8" (the
// reference fields, by offset in the block; at most 8, then "...").
std::string staticFieldsLabel(const void* vtable, uintptr_t size) {
  auto* klass = m.mono_vtable_class(const_cast<MonoVTable*>(static_cast<const MonoVTable*>(vtable)));
  if (!klass) return {};
  char* typeName = m.mono_type_get_name(m.mono_class_get_type(klass));
  if (!typeName) return {};
  std::string label = std::string("static fields of ") + typeName;
  m.mono_free(typeName);
  void* iter = nullptr;
  int listed = 0;
  while (MonoClassField* f = m.mono_class_get_fields(klass, &iter)) {
    int flags = m.mono_field_get_flags(f);
    if (!(flags & kFieldStatic) || (flags & kFieldLiteral)) continue;  // constants have no slot
    if (!m.mono_type_is_reference(m.mono_field_get_type(f))) continue;
    int off = m.mono_field_get_offset(f);
    if (off < 0 || static_cast<uintptr_t>(off) >= size) continue;  // thread-static, constants
    if (listed == 8 || label.size() > 200) {  // the log keeps 255 bytes of a label
      label += ", ...";
      break;
    }
    char at[24];
    std::snprintf(at, sizeof at, " +0x%x", off);
    label += (listed++ ? ", " : ": ") + std::string(m.mono_field_get_name(f)) + at;
  }
  return label;
}

void onRootRegister(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source,
                    const void* key, const char* name) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  std::string label;
  if (source == MONO_ROOT_SOURCE_STATIC && key && name && std::strcmp(name, "Static Fields") == 0)
    label = staticFieldsLabel(key, size);
  if (!label.empty()) name = label.c_str();
  RootSource src = rootSourceOf(source);
  auto low = reinterpret_cast<uint64_t>(start);
  {
    SpinLock lock;
    if (g_rootCount < kMaxRoots) g_rootRanges[g_rootCount++] = {low, size, static_cast<uint8_t>(src)};
  }
  gc::emitRootRange(low, size, true, src, name);
}

void onRootUnregister(MonoProfiler*, const mono_byte* start) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  auto low = reinterpret_cast<uint64_t>(start);
  RegisteredRoot gone{low, 0, static_cast<uint8_t>(RootSource::kOther)};
  {
    SpinLock lock;
    for (int i = g_rootCount - 1; i >= 0; --i)
      if (g_rootRanges[i].low == low) {
        gone = g_rootRanges[i];
        g_rootRanges[i] = g_rootRanges[--g_rootCount];
        break;
      }
  }
  gc::emitRootRange(low, gone.size, false, static_cast<RootSource>(gone.source));
}

void onThreadStarted(MonoProfiler*, uintptr_t) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  Ring* r = threadRing();  // the thread's ThreadStart record, with its stack range
  uint64_t low = r ? r->stackLow : 0, high = r ? r->stackHigh : 0;
  if (!r) threadStackBounds(pthread_self(), low, high);
  SpinLock lock;
  for (int i = 0; i < g_threadCount; ++i)
    if (pthread_equal(g_threads[i].self, pthread_self())) return;
  if (g_threadCount < kMaxThreads)
    g_threads[g_threadCount++] = {pthread_self(), low, high, r ? r->index : log::kRecorderThread};
}

void onThreadStopped(MonoProfiler*, uintptr_t) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  SpinLock lock;
  for (int i = 0; i < g_threadCount; ++i)
    if (pthread_equal(g_threads[i].self, pthread_self())) {
      g_threads[i] = g_threads[--g_threadCount];
      break;
    }
}

// GC handles (GCHandle.Alloc/Free, WeakReference, the runtime's own) and finalizations (the
// collector found the object unreachable; a later collection frees it).
void emitPlain(Kind kind, uint8_t heap, uint64_t a, uint64_t b, uint64_t c) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  Ring* r = threadRing();
  if (!r) return;
  if (RawEvent* e = begin(r, kind, 0, 0)) {
    e->heap = heap;
    e->a = a;
    e->b = b;
    e->c = c;
    commit(r, e);
  }
}

uint8_t handleTypeOf(MonoGCHandleType t) {
  switch (t) {
    case MONO_GC_HANDLE_WEAK: return static_cast<uint8_t>(log::GcHandleType::kWeak);
    case MONO_GC_HANDLE_WEAK_TRACK_RESURRECTION:
      return static_cast<uint8_t>(log::GcHandleType::kWeakTrackResurrection);
    case MONO_GC_HANDLE_NORMAL: return static_cast<uint8_t>(log::GcHandleType::kNormal);
    case MONO_GC_HANDLE_PINNED: return static_cast<uint8_t>(log::GcHandleType::kPinned);
    default: return static_cast<uint8_t>(log::GcHandleType::kOther);
  }
}

void onHandleCreated(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj) {
  emitPlain(Kind::kGcHandle, handleTypeOf(type), handle, reinterpret_cast<uint64_t>(obj), 1);
}

void onHandleDeleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type) {
  emitPlain(Kind::kGcHandle, handleTypeOf(type), handle, 0, 0);
}

void onFinalizing(MonoProfiler*, MonoObject* obj) {
  if (g_on.load(std::memory_order_relaxed)) gc::finalizerStarting(obj);
  emitPlain(Kind::kFinalize, 0, reinterpret_cast<uint64_t>(obj), 0, 0);
}

// ---------------------------------------------------------------------------------------------
// Collections.

uint32_t g_gcNumber = 0;

// The fork's GC_finalize queued `obj` (allocation lock held, world running).
void onAwaitFinalize(void* obj) {
  if (g_on.load(std::memory_order_relaxed)) gc::finalizeQueued(obj, g_gcNumber);
}

RootSetEntry* g_roots = nullptr;  // kMaxRoots + kMaxThreads + 1 entries, mmap'd once

// The thread stacks as the collector scanned them. Mono's fork keeps its threads in GC_threads
// (exported: 128 hash chains of GC_Thread_Rep, changed only under the allocation lock, which the
// END callback holds), and its GC_push_all_stacks scans, for each thread not finished, from the
// stack pointer the thread saved when it was suspended for this collection (stop_info.stack_ptr;
// the collecting thread: its own) up to stack_end (GC_stackbottom for the main thread). Layout
// read off that function in Mono 6.8's fork: next at 0, the pthread_t at 8, stack_ptr at 0x20,
// flags (16 bits) at 0x28 (1: finished, 4: the main thread), stack_end at 0x30. Each collection
// checks it (every thread's range inside the stack pthread_getattr_np gave it, where the thread
// is known; the collecting thread present) and leaves it for good on any disagreement, for the
// estimate below.
//
// The estimate, from the threads Mono reported (thread_started) and their pthread stacks, starts
// each range at the lowest resident page. On mono-boehm that lost whole stacks: Mono puts a
// 32 KiB PROT_NONE guard a page above the low end of each thread's stack, and once the page under
// the guard is resident the range starts there and the dump's copy stops at the guard, one page
// in; the main thread's (its 8 MiB reservation, mostly unmapped: mincore fails) was left out
// whenever another thread collected. Objects held only from those stacks were "alive but
// unreachable" (docs/DESIGN.md 3.7).
struct GcThreadLayout {
  static constexpr size_t kChains = 128, kNext = 0, kId = 8, kStackPtr = 0x20, kFlags = 0x28,
                          kStackEnd = 0x30;
  static constexpr uint16_t kFinished = 1, kMainThread = 4;
};
void* const* g_gcThreads = nullptr;         // GC_threads
const uint64_t* g_gcStackBottom = nullptr;  // GC_stackbottom
const int* g_gcInCreation = nullptr;        // GC_in_thread_creation
bool g_gcThreadsOff = false;

template <class T>
T fieldOf(const void* rep, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(rep) + offset, sizeof v);
  return v;
}

// Appends the collector's stack ranges to g_roots[n...]; false (nothing appended) where the
// layout does not hold. Allocation lock held, our spinlock held (g_threads).
// Calls fn(thread, stackPtr, stackEnd) for each thread of GC_threads not finished, as the
// collector scans it: from the stack pointer it saved when suspended to its stack end
// (GC_stackbottom for the main thread), until fn returns false. Only reads the table.
template <class Fn>
void forEachCollectorThread(Fn&& fn) {
  using L = GcThreadLayout;
  for (size_t chain = 0; chain < L::kChains; ++chain)
    for (const void* rep = g_gcThreads[chain]; rep; rep = fieldOf<const void*>(rep, L::kNext)) {
      auto flags = fieldOf<uint16_t>(rep, L::kFlags);
      if (flags & L::kFinished) continue;
      uint64_t hi =
          (flags & L::kMainThread) ? *g_gcStackBottom : fieldOf<uint64_t>(rep, L::kStackEnd);
      if (!fn(fieldOf<pthread_t>(rep, L::kId), fieldOf<uint64_t>(rep, L::kStackPtr), hi)) return;
    }
}

bool collectorStacks(uint64_t mySp, size_t& n) {
  if (g_gcThreadsOff || !g_gcThreads || !g_gcStackBottom) return false;
  size_t first = n;
  bool self = false, ok = true;
  forEachCollectorThread([&](pthread_t id, uint64_t stackPtr, uint64_t hi) {
    bool mine = pthread_equal(id, pthread_self());
    self = self || mine;
    uint64_t lo = mine ? mySp : stackPtr;
    ok = lo && lo < hi && hi - lo < (uint64_t{1} << 30);
    for (int i = 0; i < g_threadCount && ok; ++i)
      if (pthread_equal(g_threads[i].self, id) && g_threads[i].high)
        ok = lo >= g_threads[i].low && lo < g_threads[i].high && hi > g_threads[i].low &&
             hi <= g_threads[i].high + (uint64_t{1} << 20);  // GC_stackbottom: above argv
    if (ok && n - first < static_cast<size_t>(kMaxThreads)) {
      uint64_t from = gc::stoppedStackLow(hi);  // copied while the world was stopped
      if (!from) from = lo & ~uint64_t{7};
      g_roots[n++] = {from, hi - from, gc::threadIndexOf(id),
                      static_cast<uint8_t>(RootSource::kThreadStack), {}};
    }
    return ok;
  });
  // The collecting thread is missing only while it registers (its record is being allocated):
  // the collector then scans only its own frames, no range of this thread's (GC_push_all_stacks
  // aborts on any other case).
  if (ok && (self || (g_gcInCreation && *g_gcInCreation))) return true;
  n = first;
  g_gcThreadsOff = true;
  say("Mono layer: the collector's thread table does not read as Mono 6.8's; thread stacks are "
      "estimated from their resident pages");
  return false;
}

// World stopped, marking done (MONO_GC_EVENT_PRE_START_WORLD) of a collection that will be
// dumped: each thread's stack as the collector scanned it, from the pointer it saved when it was
// suspended to its end, copied before it resumes (gc_tracking.h); the collecting thread's own
// from its lowest mapped page (the collector scanned it from its marking frames, returned by now).
// Read from GC_threads, which only the collecting thread changes, under the allocation lock it
// holds; no lock of ours (a stopped thread may hold one), no allocation. The END callback checks
// the table's layout as before (collectorStacks) and takes these copies where the ranges agree.
void copyStacksWhileStopped() {
  if (g_gcThreadsOff || !g_gcThreads || !g_gcStackBottom || !gc::dumpPlanned(g_gcNumber)) return;
  gc::beginStoppedStacks();
  forEachCollectorThread([](pthread_t id, uint64_t stackPtr, uint64_t hi) {
    uint64_t lo = stackPtr & ~uint64_t{7}, low, high;
    if (pthread_equal(id, pthread_self())) {
      if (!gc::cachedStackOf(id, low, high)) return true;
      lo = gc::stackInUse(low, std::max(high, hi), 0);
    }
    if (lo && lo < hi && hi - lo < (uint64_t{1} << 30)) gc::copyStoppedStack(lo, hi);
    return true;
  });
}

size_t collectRoots(uint64_t mySp) {
  if (!g_roots) g_roots = static_cast<RootSetEntry*>(
      gc::mapBytes((kMaxRoots + kMaxThreads + 1) * sizeof(RootSetEntry)));
  if (!g_roots) return 0;
  size_t n = 0;
  SpinLock lock;
  // Mono's "Thread Stack" registrations (MONO_ROOT_SOURCE_STACK: the whole reservation, for
  // profilers; the collector never scans them so) are left out: the stacks come next.
  for (int i = 0; i < g_rootCount; ++i)
    if (g_rootRanges[i].size &&
        g_rootRanges[i].source != static_cast<uint8_t>(RootSource::kMonoStack))
      g_roots[n++] = {g_rootRanges[i].low, g_rootRanges[i].size, log::kRecorderThread,
                      g_rootRanges[i].source, {}};
  if (collectorStacks(mySp, n)) return n;
  for (int i = 0; i < g_threadCount; ++i) {
    const MonoThread& t = g_threads[i];
    if (!t.high) continue;
    bool self = pthread_equal(t.self, pthread_self());
    uint64_t from = gc::stackInUse(t.low, t.high, self ? mySp : 0);
    if (from < t.high)
      g_roots[n++] = {from, t.high - from, t.index,
                      static_cast<uint8_t>(RootSource::kThreadStack), {}};
  }
  return n;
}

gc::RootList rootsOfCollection(uint64_t mySp) {
  size_t n = collectRoots(mySp);
  return {g_roots, n, g_roots ? size_t{kMaxRoots + kMaxThreads + 1} : 0};
}

// START and END come with the collector's lock held and the world running; of the stop/start-world
// events (the world stopped: no lock, no allocation there) only PRE_START_WORLD is taken, for the
// stacks of a dumped collection. Heap and used
// size: mono_gc_get_heap_size / _used_size read the fork's counters without taking the lock
// (Mono 6.8; unlike libgc 8.2's GC_get_heap_usage_safe, which would deadlock here).
void onGcEvent(MonoProfiler*, MonoProfilerGCEvent event, uint32_t, mono_bool) {
  if (!g_on.load(std::memory_order_relaxed) || !g.active.load(std::memory_order_relaxed)) return;
  if (event == MONO_GC_EVENT_PRE_START_WORLD) {
    bool was = gc::t_inCallback;
    gc::t_inCallback = true;
    copyStacksWhileStopped();
    gc::t_inCallback = was;
    return;
  }
  if (event != MONO_GC_EVENT_START && event != MONO_GC_EVENT_END) return;
  Guard guard;
  bool was = gc::t_inCallback;
  gc::t_inCallback = true;
  if (event == MONO_GC_EVENT_START) {
    g_gcNumber = static_cast<uint32_t>(*m.gcNo) + 1;
    gc::collectionBegins(g_gcNumber, static_cast<uint64_t>(m.mono_gc_get_heap_size()));
  } else {
    gc::collectionReclaimed(g_gcNumber, rootsOfCollection);
    auto heap = static_cast<uint64_t>(m.mono_gc_get_heap_size());
    auto used = static_cast<uint64_t>(m.mono_gc_get_used_size());
    gc::collectionEnds(g_gcNumber, heap, heap > used ? heap - used : 0);
  }
  gc::t_inCallback = was;
}

// The runtime is going away; the recorder finishes at exit as usual. Nothing may be recorded
// from Mono's callbacks once its structures are torn down.
void onShutdownEnd(MonoProfiler*) { g_on.store(false, std::memory_order_relaxed); }

// Removes the --profile=heapman heaprec added from MONO_ENV_OPTIONS, so that a Mono child
// process that is not recorded does not look for a profiler module it cannot find.
}  // namespace

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

// Mono calls this for --profile=heapman[:OPTIONS]. Options: "nostacks" (no call instrumentation:
// allocations carry no managed stack).
HEAPMAN_EXPORT void mono_profiler_init_heapman(const char* desc) {
  Guard guard;
  if (g.follow == State::Follow::kNone) removeMonoProfileOption();
  if (!g.active.load(std::memory_order_relaxed) || g_sgen) return;  // no heaprec, or not Boehm
  if (!findApi()) return;
  // The thread table only where its symbol has the size of 128 chain heads: the chains are
  // followed before the layout can be checked.
  g_gcThreads = static_cast<void* const*>(dlsym(RTLD_DEFAULT, "GC_threads"));
  Dl_info where;
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  if (g_gcThreads && (!dladdr1(g_gcThreads, &where, &entry, RTLD_DL_SYMENT) || !entry ||
                      static_cast<const ElfW(Sym)*>(entry)->st_size !=
                          GcThreadLayout::kChains * sizeof(void*)))
    g_gcThreads = nullptr;
  g_gcStackBottom = static_cast<const uint64_t*>(dlsym(RTLD_DEFAULT, "GC_stackbottom"));
  g_gcInCreation = static_cast<const int*>(dlsym(RTLD_DEFAULT, "GC_in_thread_creation"));
  const char* options = desc ? std::strchr(desc, ':') : nullptr;
  if ((options && std::strstr(options, "nostacks")) || getenv(env::kMonoNoStacks)) g_stacks = false;
  if (getenv(env::kMonoAllMethods)) g_skipLeaves = false;  // instrument every method
  gc::initTracking(m.collector);
  if (m.setAwaitFinalize && m.base && m.pending) {
    gc::FinalizeQueueCollector fc;
    fc.isMarked = m.collector.isMarked;
    fc.base = m.base;
    fc.pending = m.pending;
    gc::initFinalizeQueue(fc);
    m.setAwaitFinalize(onAwaitFinalize);
  }
  pthread_key_create(&g_shadowKey, freeShadow);
  // A fork child records into new rings, which may lie where the parent's did: the forking
  // thread's remembered slot says nothing there.
  pthread_atfork(nullptr, nullptr, [] {
    t_lastNoShadow = {};
    if (t_shadow) t_shadow->last = {};
  });
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
  if (g_stacks) {
    m.mono_profiler_set_call_instrumentation_filter_callback(h, onFilter);
    m.mono_profiler_set_method_enter_callback(h, onEnter);
    m.mono_profiler_set_method_leave_callback(h, onLeave);
    m.mono_profiler_set_method_tail_call_callback(h, onTailCall);
    m.mono_profiler_set_method_exception_leave_callback(h, onExceptionLeave);
  }
  g_on.store(true, std::memory_order_release);
}
