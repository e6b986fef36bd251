// The Mono layer's managed stacks without call instrumentation (HEAPMAN_MONO_WALK, mono.h): the
// recorder's native walk (frame pointers, and unwind rules through mono-boehm's frameless C code)
// goes on through JIT'ed code by frame pointers; each return address in JIT'ed code is resolved
// to its method through the code ranges jit_done reports. The walk proves its result only when
// every JIT'ed frame it stepped out of by frame pointer keeps one (its code starts with
// `push %rbp; mov %rsp,%rbp`, checked at jit_done) and every other return address lies in a
// module's frameless code (stepped by its unwind rules) or in the recorder: anything else (a
// trampoline, a method without frame pointer, a module that keeps frame pointers, a walk that
// fell back to libunwind) takes the runtime's own walk, mono_stack_walk_no_il (~1.9 us).
#include "../../core/unwind.h"
#include "mono.h"

namespace heapman::rec::mono {

WalkMode g_walk = WalkMode::kShadow;
std::atomic<uint64_t> g_walkFast{0}, g_walkFallback{0}, g_walkSame{0}, g_walkDiffer{0};
// Why the fast walk could not prove a result: libunwind took over (a JIT'ed method whose
// prologue jitPrologueRule does not read: g_whyNoFp counts those methods), an address in
// neither JIT'ed code nor a frameless module, a walk cut short in JIT'ed code.
std::atomic<uint64_t> g_whyUnwind{0}, g_whyNoFp{0}, g_whyUnknown{0}, g_whyCut{0},
    g_whyGeneric{0};
std::atomic<uint64_t> g_jitFp{0};  // methods JIT'ed with a frame pointer

namespace {

// JIT'ed code ranges, sorted by start, in an mmap'd array (address space for kJitMax entries,
// touched as it fills). Written by jit_done under the spinlock, read under it too: lookups come
// only from walks the per-thread cache and the stack memo did not spare.
struct JitEntry {
  uint64_t start, end;
  uint64_t method;
  uint32_t flags;  // kJitFp, kJitWrapper
  FrameRule rule;  // how to step from a return address inside it to its caller (jitPrologueRule)
};
constexpr uint32_t kJitFp = 1, kJitWrapper = 2, kJitGeneric = 4;
constexpr size_t kJitMax = 1u << 20;
JitEntry* g_jit = nullptr;
size_t g_jitCount = 0;
std::atomic<bool> g_jitLock{false};

struct JitLock {
  JitLock() {
    while (g_jitLock.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  ~JitLock() { g_jitLock.store(false, std::memory_order_release); }
};

// A return address's method, per thread: direct-mapped, never stale (code ranges are not
// reused: a method's code stays until the domain unloads, which mono-boehm's programs never do).
struct RetCache {
  uint64_t ret;
  uint64_t method;  // 0: not JIT'ed code
  uint32_t flags;
  FrameRule rule;
};
constexpr size_t kRetCache = 1024;
__thread RetCache* t_retCache HEAPMAN_TLS = nullptr;

bool lookup(uint64_t ret, uint64_t& method, uint32_t& flags, FrameRule* rule = nullptr) {
  RetCache* cache = t_retCache;
  if (!cache) {
    cache = static_cast<RetCache*>(gc::mapBytes(kRetCache * sizeof(RetCache)));
    if (!cache) return false;
    t_retCache = cache;  // zeroed: ret 0 never asked
  }
  RetCache& c = cache[(ret >> 2) & (kRetCache - 1)];
  if (c.ret == ret) {
    method = c.method;
    flags = c.flags;
    if (rule) *rule = c.rule;
    return method != 0;
  }
  method = 0;
  flags = 0;
  FrameRule found{FrameRule::kFramePointer, 0, 0};
  {
    JitLock lock;
    size_t lo = 0, hi = g_jitCount;
    while (lo < hi) {  // the first entry ending after ret
      size_t mid = (lo + hi) / 2;
      if (g_jit[mid].end <= ret) lo = mid + 1;
      else hi = mid;
    }
    if (lo < g_jitCount && g_jit[lo].start < ret) {  // a return address is past its call
      method = g_jit[lo].method;
      flags = g_jit[lo].flags;
      found = g_jit[lo].rule;
    }
  }
  // Negative answers too: a return address lies in code that exists, and JIT'ed code is never
  // freed here (no domain unloads), so nothing is JIT'ed later where it points.
  c = {ret, method, flags, found};
  if (rule) *rule = found;
  return method != 0;
}

// The step out of a JIT'ed method, from its prologue as Mono's amd64 back end writes it
// (mono_arch_emit_prolog): `push %rbp; mov %rsp,%rbp` (a frame pointer), or with the frame
// pointer omitted `sub $N,%rsp` and the callee-saved registers it uses stored at [rsp+d]
// (`mov %reg,d(%rsp)`), among them maybe rbp. A return address lies after the prologue, where
// rsp is what the prologue left (the back end pushes nothing in the body of such a method), so
// the CFA is rsp + N + 8. Anything else, or frames of a page or more (probed in steps), is
// kUnknown: the walk does not prove its result and the runtime's walk is taken.
FrameRule jitPrologueRule(const uint8_t* code, uint64_t size) {
  FrameRule unknown{FrameRule::kUnknown, 0, 0};
  if (size >= 4 && code[0] == 0x55 && code[1] == 0x48 &&
      ((code[2] == 0x8b && code[3] == 0xec) || (code[2] == 0x89 && code[3] == 0xe5)))
    return {FrameRule::kFramePointer, 0, 0};
  uint32_t frame, at;
  if (size >= 4 && code[0] == 0x48 && code[1] == 0x83 && code[2] == 0xec) {
    frame = code[3];
    at = 4;
  } else if (size >= 7 && code[0] == 0x48 && code[1] == 0x81 && code[2] == 0xec) {
    std::memcpy(&frame, code + 3, 4);
    at = 7;
  } else {
    return unknown;
  }
  if (frame % 8 != 0 || frame >= 4096) return unknown;
  FrameRule rule{FrameRule::kRsp, 0, frame + 8};
  // mov %reg,disp8(%rsp): REX.W(.R) 89 modrm(01 reg 100) 24 disp8; disp32: modrm(10 reg 100).
  for (int k = 0; k < 16 && at + 5 <= size; ++k) {
    uint8_t rex = code[at], op = code[at + 1], modrm = code[at + 2], sib = code[at + 3];
    if ((rex != 0x48 && rex != 0x4c) || op != 0x89 || sib != 0x24) break;
    uint32_t disp, len;
    if ((modrm & 0xc7) == 0x44) {
      disp = code[at + 4];
      len = 5;
    } else if ((modrm & 0xc7) == 0x84 && at + 8 <= size) {
      std::memcpy(&disp, code + at + 4, 4);
      len = 8;
    } else {
      break;
    }
    uint32_t reg = ((modrm >> 3) & 7) | (rex == 0x4c ? 8 : 0);
    if (reg == 5) {  // rbp, saved at CFA - 8 * slot
      if (disp % 8 != 0 || disp >= frame) return unknown;
      rule.rbpSlot = static_cast<uint8_t>((frame + 8 - disp) / 8);
    }
    at += len;
  }
  return rule;
}

FrameRule jitRule(uintptr_t ret) {
  if (ret >= g.selfLow && ret < g.selfHigh) return {FrameRule::kFramePointer, 0, 0};
  uint64_t method;
  uint32_t flags;
  FrameRule rule{FrameRule::kFramePointer, 0, 0};
  lookup(ret, method, flags, &rule);
  return rule;
}

bool inFrameless(uint64_t ret) {
  uint32_t count = g.framelessCount.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < count && k < State::kMaxFrameless; ++k)
    if (ret >= g.frameless[k].low && ret < g.frameless[k].high) return true;
  return false;
}

struct RuntimeWalk {
  uint64_t* out;
  uint32_t max, n;
};

mono_bool onRuntimeFrame(MonoMethod* method, int32_t, int32_t, mono_bool managed, void* data) {
  auto* w = static_cast<RuntimeWalk*>(data);
  if (!managed || !method) return false;  // wrappers, as the fast walk leaves them out
  w->out[w->n++] = reinterpret_cast<uint64_t>(method);
  return w->n >= w->max;
}

// The fast walk: true with the managed frames (leaf first, at most max) when proven.
bool fastWalk(uint64_t* out, uint32_t max, uint32_t& n) {
  uint64_t native[kMaxFrames];
  const uint64_t fallbacks = g.unwindFallbacks.load(std::memory_order_relaxed);
  uint32_t got = captureStack(native, kMaxFrames);
  if (g.unwindFallbacks.load(std::memory_order_relaxed) != fallbacks) {
    g_whyUnwind.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  n = 0;
  // A walk that ends in JIT'ed code was cut short (the chain ends in the start code, which is
  // not JIT'ed); one that took kMaxFrames may hold fewer managed frames than there are.
  uint64_t method;
  uint32_t flags;
  if (got == 0 || got == kMaxFrames || lookup(native[got - 1], method, flags)) {
    g_whyCut.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  for (uint32_t i = 0; i < got && n < max; ++i) {
    if (lookup(native[i], method, flags)) {
      // Its caller was found by its prologue's rule (jitRule); one it does not read made the
      // walk fall back to libunwind above.
      if (flags & kJitGeneric) {  // maybe shared code: which instantiation is not known here
        g_whyGeneric.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      if (!(flags & kJitWrapper)) out[n++] = method;
    } else if (!inFrameless(native[i]) && !(native[i] >= g.selfLow && native[i] < g.selfHigh)) {
      g_whyUnknown.fetch_add(1, std::memory_order_relaxed);
      return false;  // a trampoline, or a module walked by frame pointers: not proven
    }
  }
  return true;
}

}  // namespace

void noteJitted(uint64_t method, uint64_t start, uint64_t size, bool wrapper, bool generic) {
  if (g_walk == WalkMode::kShadow || !size) return;
  const auto* code = reinterpret_cast<const uint8_t*>(start);
  // Mono's amd64 prologue with a frame pointer (mono_arch_emit_prolog): push %rbp, then
  // mov %rsp,%rbp in either encoding.
  bool fp = size >= 4 && code[0] == 0x55 && code[1] == 0x48 &&
            ((code[2] == 0x8b && code[3] == 0xec) || (code[2] == 0x89 && code[3] == 0xe5));
  if (fp) g_jitFp.fetch_add(1, std::memory_order_relaxed);
  FrameRule rule = jitPrologueRule(code, size);
  if (rule.kind == FrameRule::kUnknown) g_whyNoFp.fetch_add(1, std::memory_order_relaxed);
  JitLock lock;
  if (!g_jit) {
    g_jit = static_cast<JitEntry*>(gc::mapBytes(kJitMax * sizeof(JitEntry)));
    if (!g_jit) return;
  }
  if (g_jitCount == kJitMax) return;
  size_t at = g_jitCount;
  while (at > 0 && g_jit[at - 1].start > start) --at;  // code is mostly placed in rising order
  std::memmove(g_jit + at + 1, g_jit + at, (g_jitCount - at) * sizeof(JitEntry));
  g_jit[at] = {start, start + size, method, (fp ? kJitFp : 0u) | (wrapper ? kJitWrapper : 0u) | (generic ? kJitGeneric : 0u), rule};
  ++g_jitCount;
}

uint32_t walkManagedFrames(uint64_t* out, uint32_t max) {
  uint32_t n = 0;
  if (g_walk == WalkMode::kCheck) {
    uint64_t fast[kMaxFrames];
    uint32_t nFast = 0;
    bool proven = fastWalk(fast, max, nFast);
    RuntimeWalk w{out, max, 0};
    m.mono_stack_walk_no_il(onRuntimeFrame, &w);
    n = w.n;
    if (!proven) {
      g_walkFallback.fetch_add(1, std::memory_order_relaxed);
    } else if (nFast == n && std::memcmp(fast, out, n * sizeof(uint64_t)) == 0) {
      g_walkSame.fetch_add(1, std::memory_order_relaxed);
    } else {
      g_walkDiffer.fetch_add(1, std::memory_order_relaxed);
    }
    return n;
  }
  if (fastWalk(out, max, n)) {
    g_walkFast.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  g_walkFallback.fetch_add(1, std::memory_order_relaxed);
  RuntimeWalk w{out, max, 0};
  m.mono_stack_walk_no_il(onRuntimeFrame, &w);
  return w.n;
}

void initWalk() {
  if (g_walk != WalkMode::kShadow) g_jitRule = jitRule;
}

void sayWalkCounts() {
  if (g_walk == WalkMode::kShadow) return;
  char line[320];
  auto u = [](const std::atomic<uint64_t>& v) { return static_cast<unsigned long long>(v.load()); };
  std::snprintf(line, sizeof line,
                "Mono stack walk: %llu fast, %llu by the runtime's walk (libunwind %llu, unknown "
                "code %llu, cut short %llu, generic %llu); checked: %llu same, %llu differ; %zu methods JIT'ed, %llu with a "
                "frame pointer, %llu with a prologue not read",
                u(g_walkFast), u(g_walkFallback), u(g_whyUnwind), u(g_whyUnknown), u(g_whyCut), u(g_whyGeneric),
                u(g_walkSame),
                u(g_walkDiffer), g_jitCount, u(g_jitFp), u(g_whyNoFp));
  say(line);
}

}  // namespace heapman::rec::mono
