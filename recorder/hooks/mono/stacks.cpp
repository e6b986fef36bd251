// The Mono layer's shadow stacks (mono.h): each thread's managed frames, pushed and popped by
// Mono's call instrumentation, and which methods are worth instrumenting at all (those that can
// be on an allocation's stack).
#include "mono.h"

namespace heapman::rec::mono {

__thread Shadow* t_shadow HEAPMAN_TLS = nullptr;
__thread LastStack t_lastNoShadow HEAPMAN_TLS;  // a thread without a shadow stack (no stacks)

namespace {

pthread_key_t g_shadowKey;  // its destructor unmaps an exiting thread's shadow stack
std::atomic<uint64_t> g_filtered{0}, g_instrumented{0};  // onFilter's answers (HEAPMAN_STATS)

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


inline void popFrame() {
  Shadow* s = t_shadow;
  if (s && s->depth) --s->depth;
}


// Whether a method can be on the stack of an allocation: not if its IL allocates nothing, throws
// nothing, touches no static field (a class constructor could run) and calls nothing but
// methods of the same kind through `call` (Object::.ctor, constructors that only set fields,
// small helpers). Such methods are left uninstrumented: they are most of the calls in typical
// code (every constructor ends in Object::.ctor) and can never appear in a recorded stack. The
// one thing lost: an exception object the runtime itself raises inside one (NullReference,
// IndexOutOfRange, InvalidCast) is recorded with the caller as its leaf. Anything the scan does
// not understand counts as allocating. Results are memoized by method handle.
constexpr int kCalleeDepth = 3;
constexpr uint32_t kMethodVirtual = 0x0040;  // METHOD_ATTRIBUTE_VIRTUAL (ECMA-335 II.23.1.10)
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
      else if (op2 == 0x06 || op2 == 0x07 || op2 == 0x15 || op2 == 0x1C)
        bytes = 4;
      else if (op2 >= 0x09 && op2 <= 0x0E)
        bytes = 2;
      else if (op2 == 0x12 || op2 == 0x19)
        bytes = 1;
      else
        bytes = -1;  // rethrow (0x1A), constrained. (0x16: its callvirt may box) and the unknown
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
      case 0x7A: case 0x29: case 0x27:            // throw, calli, jmp
      case 0x7E: case 0x7F: case 0x80:            // ldsfld, ldsflda, stsfld: a .cctor may run
      case 0xD0:                                  // ldtoken
        may = true;
        break;
      case 0x28:                                  // call: as the callee, a few levels deep
      case 0x6F: {                                // callvirt: the same, of a method not virtual
        uint32_t token;
        std::memcpy(&token, ip, 4);
        uint32_t table = token >> 24;
        MonoMethod* callee = depth < kCalleeDepth && (table == 0x06 || table == 0x0A) && image
                                 ? m.mono_get_method(image, token, nullptr)
                                 : nullptr;
        // C# calls every instance method by callvirt (for its null check), so a property
        // getter or helper called so is as good as by call; a virtual one may be overridden
        // by a method that allocates. A constrained. prefix (it may box) is refused above.
        uint32_t implFlags = 0;
        if (callee && op == 0x6F && (m.mono_method_get_flags(callee, &implFlags) & kMethodVirtual))
          callee = nullptr;
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


}  // namespace

void onEnter(MonoProfiler*, MonoMethod* method, MonoProfilerCallContext*) {
  Shadow* s = shadow();
  if (!s) return;
  const uint32_t d = s->depth++;
  const auto handle = reinterpret_cast<uint64_t>(method);
  if (d < kShadowMax && s->frames[d].method != handle) {  // else: the same frames, the same tag
    s->frames[d] = {handle, ++s->lastTag};
    if (d + 1 < kShadowMax) s->frames[d + 1].method = 0;
  }
}

void onLeave(MonoProfiler*, MonoMethod*, MonoProfilerCallContext*) { popFrame(); }

void onExceptionLeave(MonoProfiler*, MonoMethod*, MonoObject*) { popFrame(); }

// The caller's frame is replaced by the target's, whose enter event follows.
void onTailCall(MonoProfiler*, MonoMethod*, MonoMethod*) { popFrame(); }

// Every method the JIT compiles that can be on an allocation's stack (mayAllocate), except the
// runtime's wrappers (runtime-invoke, managed-to-native, the allocation icall wrapper every
// allocation goes through while allocations are profiled): stacks show the program's C#
// methods, and no allocation pays for the wrapper's enter/leave.
MonoProfilerCallInstrumentationFlags onFilter(MonoProfiler*, MonoMethod* method) {
  Guard guard;
  char* name = m.mono_method_full_name(method, false);
  bool wrapper = name && std::strncmp(name, "(wrapper ", 9) == 0;
  if (name) m.mono_free(name);
  g_filtered.fetch_add(1, std::memory_order_relaxed);
  if (wrapper || (g_skipLeaves && !mayAllocate(method, 0)))
    return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  g_instrumented.fetch_add(1, std::memory_order_relaxed);
  return static_cast<MonoProfilerCallInstrumentationFlags>(
      MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
      MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL |
      MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);
}

void sayShadowCounts() {
  if (g_stacks && g_walk == WalkMode::kShadow && getenv(env::kStats))
    say("Mono shadow stacks: %llu of %llu methods compiled instrumented",
        static_cast<unsigned long long>(g_instrumented.load()),
        static_cast<unsigned long long>(g_filtered.load()));
}

void initShadowStacks() {
  pthread_key_create(&g_shadowKey, freeShadow);
  // A fork child records into new rings, which may lie where the parent's did: the forking
  // thread's remembered slot says nothing there.
  pthread_atfork(nullptr, nullptr, [] {
    t_lastNoShadow = {};
    if (t_shadow)
      for (LastStack& memo : t_shadow->memo) memo = {};
  });
}

}  // namespace heapman::rec::mono
