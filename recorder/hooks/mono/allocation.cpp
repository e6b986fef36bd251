// The Mono layer's allocations (mono.h): methods named when the JIT finishes them, classes named
// (with their reference layout) on first sight, and every managed allocation with its class and
// managed stack, on a path that mostly calls nothing.
#include "mono.h"

namespace heapman::rec::mono {
namespace {

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

// An allocation whose stack its thread's memo does not place in a slot: takes the managed
// frames (or none) through the ring's stack cache, and notes the slot in the memo.
__attribute__((noinline)) RawEvent* beginAllocationWithFrames(Ring* r, LastStack& memo,
                                                              uint64_t tag) {
  uint64_t frames[kMaxFrames];
  uint32_t n = !g_stacks                      ? 0
               : g_walk == WalkMode::kShadow ? managedFrames(frames, g.depth)
                                             : walkManagedFrames(frames, g.depth);
  RawEvent* e = beginWithFrames(r, Kind::kAlloc, static_cast<uint8_t>(HeapKind::kManaged), frames,
                                n, 0, kManagedFrames);
  if (e) memo = {r, tag, r->slotChanges, stackSlotOf(e->flags)};
  return e;
}


}  // namespace

void onJitDone(MonoProfiler*, MonoMethod* method, MonoJitInfo* ji) {
  if (!g_on.load(std::memory_order_relaxed) || t_guard) return;
  Guard guard;
  char* name = m.mono_method_full_name(method, true);
  uint64_t start = ji ? reinterpret_cast<uint64_t>(m.mono_jit_info_get_code_start(ji)) : 0;
  uint64_t size = ji ? static_cast<uint64_t>(m.mono_jit_info_get_code_size(ji)) : 0;
  emitNamed(Kind::kMethodDef, reinterpret_cast<uint64_t>(method), start, size, name);
  // What the runtime's walk calls not managed: wrappers, and the code of internal calls and
  // P/Invoke methods (METHOD_ATTRIBUTE_PINVOKE_IMPL 0x2000; METHOD_IMPL_ATTRIBUTE_INTERNAL_CALL
  // 0x1000, ECMA-335 II.23.1.10-11), which is a managed-to-native wrapper under their name.
  uint32_t implFlags = 0;
  uint32_t flags = g_walk != WalkMode::kShadow ? m.mono_method_get_flags(method, &implFlags) : 0;
  noteJitted(reinterpret_cast<uint64_t>(method), start, size,
             (name && std::strncmp(name, "(wrapper ", 9) == 0) || (flags & 0x2000) ||
                 (implFlags & 0x1000),
             name && std::strchr(name, '<'));
  if (name) m.mono_free(name);
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
  // A stack this thread allocated with lately (its tag in the memo: the same frames), still in
  // the slot the memo names (no slot of the ring changed since): no copy and no comparison.
  // Allocations in one method, and in methods called over and over from one place (a loop's
  // callee, a constructor), mostly go this way.
  Shadow* s = t_shadow;
  const uint64_t tag = s ? shadowTag(s) : 0;
  LastStack& memo = s ? s->memo[tag & (kStackMemos - 1)] : t_lastNoShadow;
  if (memo.ring == r && memo.tag == tag && memo.slotChanges == r->slotChanges &&
      g_walk == WalkMode::kShadow)
    e = beginAllocationWithSlot(r, static_cast<uint8_t>(HeapKind::kManaged), memo.slot,
                                kManagedFrames);
  else
    e = beginAllocationWithFrames(r, memo, tag);
  if (e) {
    e->a = reinterpret_cast<uint64_t>(obj);
    e->b = size;
    e->c = std::max(actual, size);
    e->extra = key;
    commit(r, e);
  }
}
}  // namespace heapman::rec::mono
