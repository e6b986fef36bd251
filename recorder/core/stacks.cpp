// Stacks: the calling thread's stack taken (a frame-pointer walk through frameless modules by
// their unwind rules, libunwind where neither goes on), a walk replayed from its memo when the
// stack has not changed, and the ring's cache of recent stacks (ring.h, kSameStack) that spares
// an event its frames; which modules keep frame pointers (classifyModules).
#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <sched.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstring>

#include "modules.h"
#include "recorder.h"
#include "threads.h"
#include "unwind.h"

namespace heapman::rec {

FrameRule (*g_jitRule)(uintptr_t ret) = nullptr;

namespace {

// Code no loaded module holds (a JIT's): _dl_find_object reads the loader's own lock-free table
// (no lock, no allocation: async-signal-safe).
bool outsideModules(uintptr_t pc) {
#ifdef DLFO_STRUCT_HAS_EH_DBASE
  dl_find_object found;
  return _dl_find_object(reinterpret_cast<void*>(pc - 1), &found) != 0;
#else
  (void)pc;
  return false;
#endif
}

// What a walk depends on besides its start and the words it reads, as a number that changes
// when they do (StackMemo::frameless): the frameless modules and the entry return addresses
// (State::entryRets), both only ever added to.
inline uint32_t walkConstants() {
  return g.framelessCount.load(std::memory_order_acquire) |
         g.entryCount.load(std::memory_order_acquire) << 16;
}

// The stack-cache flags for an event with these frames (ring.h, kSameStack): kSameStack and the
// slot when this thread recorded the same stack recently (the event then carries no frames),
// else the slot where the frames are now kept (the event carries them).
uint16_t cacheStack(Ring* r, const uint64_t* frames, uint32_t n) {
  auto equal = [&](uint32_t k) {
    return r->slotUsed[k] && r->slotCount[k] == n &&
           std::memcmp(r->slotFrames[k], frames, n * sizeof(uint64_t)) == 0;
  };
  if (equal(r->lastSlot)) return static_cast<uint16_t>(kSameStack | (r->lastSlot << kStackSlotShift));
  for (uint32_t k = 0; k < kStackSlots; ++k)
    if (k != r->lastSlot && equal(k)) {
      r->lastSlot = static_cast<uint8_t>(k);
      return static_cast<uint16_t>(kSameStack | (k << kStackSlotShift));
    }
  uint32_t k = r->nextSlot;
  r->nextSlot = static_cast<uint8_t>((k + 1) % kStackSlots);
  ++r->slotChanges;
  r->memos[r->slotMemo[k]].count = 0;  // the walk that filled it before replays other frames
  std::memcpy(r->slotFrames[k], frames, n * sizeof(uint64_t));
  r->slotCount[k] = n;
  r->slotUsed[k] = true;
  r->lastSlot = static_cast<uint8_t>(k);
  return static_cast<uint16_t>(k << kStackSlotShift);
}

// The slot whose walk a walk from `start` would repeat exactly (ring.h, StackMemo), or -1. The
// last slot used first.
int replaySlot(const Ring* r, uintptr_t start) {
  uint32_t frameless = walkConstants();
  for (uint32_t i = 0; i < kStackSlots; ++i) {
    uint32_t k = i == 0 ? r->lastSlot : (i == r->lastSlot ? 0 : i);
    const StackMemo& m = r->memos[r->slotMemo[k]];
    if (m.start != start || m.count == 0 || !r->slotUsed[k] || m.frameless != frameless) continue;
    // Every word the walk read, at the same place: independent loads, one 16-byte load and
    // compare per frame, four frames a test (the memo is padded to a multiple of four with
    // entries that compare equal: captureStack). Slots often share the start and the leaf frames
    // (one call site reached along different paths): stop at the first group that differs.
    uint32_t j = 0;
    for (; j < m.count; j += 4) {
      auto same = [&](uint32_t f) {
        return _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m.fp[f])),
                              _mm_load_si128(reinterpret_cast<const __m128i*>(&m.words[f])));
      };
      __m128i all = _mm_and_si128(_mm_and_si128(same(j), same(j + 1)),
                                  _mm_and_si128(same(j + 2), same(j + 3)));
      if (_mm_movemask_epi8(all) != 0xFFFF) break;
    }
    if (j >= m.count) return static_cast<int>(k);
  }
  return -1;
}
}  // namespace

RawEvent* beginWithFrames(Ring* r, Kind kind, uint8_t heap, const uint64_t* frames, uint32_t n,
                          uint32_t extraLen, uint16_t framesFlag) {
  uint16_t flags = cacheStack(r, frames, n);
  bool same = flags & kSameStack;
  RawEvent* e = begin(r, kind, same ? 0 : n, extraLen);
  if (!e) {
    // The writer never gets these frames: the slot must not be reused as if it had.
    if (!same) {
      r->slotUsed[stackSlotOf(flags)] = false;
      ++r->slotChanges;
    }
    return nullptr;
  }
  e->heap = heap;
  e->flags = flags | framesFlag;
  if (!same) std::memcpy(framesOf(e), frames, n * sizeof(uint64_t));
  return e;
}

RawEvent* beginWithStack(Ring*& r, Kind kind, uint8_t heap, uint32_t extraLen, const void* from) {
  r = threadRing();
  if (!r) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(from);
  // The memo's frames lie between `start` and the top of this thread's stack, all live now.
  if (start && t_stackHigh && start < t_stackHigh)
    if (int k = replaySlot(r, start); k >= 0)
      return beginWithSlot(r, kind, heap, static_cast<uint32_t>(k), extraLen, 0);
  uint64_t frames[kMaxFrames];
  StackMemo& memo = r->memos[r->memoSpare];
  const uint32_t last = r->lastSlot;
  const StackMemo* prev = r->slotUsed[last] ? &r->memos[r->slotMemo[last]] : nullptr;
  uint32_t n = captureStack(frames, g.depth, from, &memo, prev, r->slotFrames[last],
                            r->slotCount[last]);
  RawEvent* e = beginWithFrames(r, kind, heap, frames, n, extraLen, 0);
  if (e && memo.count) {  // the slot's frames came from this walk, or equal its result
    uint32_t k = stackSlotOf(e->flags);
    std::swap(r->slotMemo[k], r->memoSpare);
  }
  return e;
}

namespace {
// The modules classifyModules has read since the loader last unloaded one (dlpi_subs): a program
// that dlopens a library for each of its plug-ins, or a runtime that dlopens one it has for every
// native method it binds (Mono), would otherwise read the unwind tables of all ~200 modules again
// each time (60 ms of gbrainy's start). Guarded by State::framelessLock.
struct Classified {
  static constexpr uint32_t kMax = 512;
  unsigned long long subs = ~0ull;  // dlpi_subs when `keys` was started
  uint32_t count = 0;
  struct Key {
    ElfW(Addr) base;
    const ElfW(Phdr) * phdr;
  } keys[kMax];
  bool has(const dl_phdr_info* pi) const {
    for (uint32_t i = 0; i < count; ++i)
      if (keys[i].base == pi->dlpi_addr && keys[i].phdr == pi->dlpi_phdr) return true;
    return false;
  }
};
Classified g_classified;
}  // namespace

void classifyModules() {
  // Writers only (start-up, dlopen/dlclose hooks): serialize them. Readers take no lock.
  while (g.framelessLock.exchange(true, std::memory_order_acquire)) sched_yield();
  struct Scan {
    bool seen[State::kMaxFrameless] = {};
    bool changed = false;
    bool onlyNew = false;  // nothing unloaded since the modules in g_classified were read
    bool first = true;
  } scan;
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t size, void* arg) -> int {
        auto& seen = *static_cast<Scan*>(arg);
        Classified& done = g_classified;
        if (seen.first) {
          seen.first = false;
          // dlpi_subs counts unloads since start: unchanged, every module read before is still
          // where it was and only modules not yet read need their tables read.
          bool counted = size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof pi->dlpi_subs;
          seen.onlyNew = counted && pi->dlpi_subs == done.subs;
          if (!seen.onlyNew) {  // field by field: no 8 KiB temporary on a hooked thread's stack
            done.subs = counted ? pi->dlpi_subs : ~0ull;
            done.count = 0;
          }
        }
        if (seen.onlyNew && done.has(pi)) return 0;
        if (done.count < Classified::kMax) done.keys[done.count++] = {pi->dlpi_addr, pi->dlpi_phdr};
        CodeRange found[8];
        uintptr_t eh = 0;
        uint32_t got = framelessRanges(pi, found, 8, &eh);
        for (uint32_t i = 0; i < got; ++i) {
          auto [low, high] = found[i];
          if (low < g.selfHigh && high > g.selfLow) continue;  // our frames are skipped anyway
          uint32_t count = g.framelessCount.load(std::memory_order_relaxed);
          uint32_t known = count;
          for (uint32_t k = 0; k < count && known == count; ++k)
            if (g.frameless[k].low == low && g.frameless[k].high == high) known = k;
          if (known < count) {
            seen.seen[known] = true;
            if (g.framelessEh[known].exchange(eh, std::memory_order_relaxed) != eh)
              seen.changed = true;
            continue;
          }
          if (count == State::kMaxFrameless) return 1;  // full: later modules keep the FP walk
          g.frameless[count] = {low, high};
          g.framelessEh[count].store(eh, std::memory_order_relaxed);
          seen.seen[count] = true;
          seen.changed = true;
          if (low < g.framelessLow.load(std::memory_order_relaxed))
            g.framelessLow.store(low, std::memory_order_relaxed);
          if (high > g.framelessHigh.load(std::memory_order_relaxed))
            g.framelessHigh.store(high, std::memory_order_relaxed);
          g.framelessCount.store(count + 1, std::memory_order_release);
        }
        return 0;
      },
      &scan);
  // Modules unloaded since: no rules from their (unmapped) tables; cached rules may describe
  // code that is gone, or lie where a new module now is. (With none unloaded, the modules read
  // before were skipped, not seen.)
  uint32_t count = g.framelessCount.load(std::memory_order_relaxed);
  for (uint32_t k = 0; k < count && !scan.onlyNew; ++k)
    if (!scan.seen[k] && g.framelessEh[k].exchange(0, std::memory_order_relaxed) != 0)
      scan.changed = true;
  if (scan.changed) clearFrameRules();
  g.framelessLock.store(false, std::memory_order_release);
}

namespace {
// libunwind's walk from here, the recorder's own frames skipped.
uint32_t dwarfStack(uint64_t* out, uint32_t max) {
  void* buf[kMaxFrames + 16];
  int got = unw_backtrace(buf, static_cast<int>(std::min<uint32_t>(max + 16, kMaxFrames + 16)));
  uint32_t n = 0;
  bool inSelf = true;
  for (int i = 0; i < got && n < max; ++i) {
    auto ret = reinterpret_cast<uintptr_t>(buf[i]);
    if (inSelf && ret >= g.selfLow && ret < g.selfHigh) continue;
    inSelf = false;
    out[n++] = ret;
  }
  return n;
}

bool isEntry(uintptr_t ret, uint32_t entries) {
  for (uint32_t k = 0; k < entries && k < State::kMaxEntries; ++k)
    if (g.entryRets[k].load(std::memory_order_relaxed) == ret) return true;
  return false;
}

// After a walk that went to the end of the start code (an undefined return address, or a frame
// pointer of 0) through rule steps: the first frame of its last run of libc frames (the frame
// past a run's end may be _start, in the program) is where the thread's code begins. Returns the
// frames up to it (this walk's stack ends there too, like every later one), or n.
uint32_t learnEntry(const uint64_t* out, uint32_t n) {
  auto inLibc = [](uint64_t f) { return f >= g.libcLow && f < g.libcHigh; };
  uint32_t k = n;
  if (k > 0 && !inLibc(out[k - 1])) --k;  // _start
  if (k == 0 || !inLibc(out[k - 1])) return n;
  while (k > 1 && inLibc(out[k - 2])) --k;
  if (k == 1) return n;  // all libc: no caller to begin with (a thread libc itself started)
  const uintptr_t entry = out[k - 1];
  for (uint32_t s = 0; s < State::kMaxEntries; ++s) {
    uintptr_t seen = 0;
    if (g.entryRets[s].compare_exchange_strong(seen, entry, std::memory_order_relaxed)) {
      g.entryCount.fetch_add(1, std::memory_order_release);
      return k;
    }
    if (seen == entry) return k;
  }
  return n;  // no slot left: this thread's stacks keep the start code
}
}  // namespace

__attribute__((noinline)) uint32_t captureStack(uint64_t* out, uint32_t max, const void* from,
                                                StackMemo* memo, const StackMemo* prev,
                                                const uint64_t* prevFrames, uint32_t prevCount) {
  if (memo) memo->count = 0;
  if (g.unwind == State::Unwind::kDwarf) return dwarfStack(out, max);
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t low = fp;
  const uintptr_t high = t_stackHigh ? t_stackHigh : fp + (64u << 10);
  // Start at the hook's frame when given (one above ours on this stack), past the frames between.
  if (auto start = reinterpret_cast<uintptr_t>(from); start > fp && start < high) fp = start;
  uint32_t n = 0;
  bool inSelf = true;  // skip the recorder's own frames at the leaf
  // Frames inside the frameless modules' bounds ask frameRule (unwind.h): most return addresses
  // of a program built with frame pointers lie outside them (one compare). --unwind fp: none do.
  const uint32_t constants = walkConstants();
  const uint32_t framelessCount = constants & 0xffff;
  const uint32_t entries = constants >> 16;
  const uintptr_t flLow = g.framelessLow.load(std::memory_order_relaxed);
  const uintptr_t flSpan = framelessCount && g.unwind == State::Unwind::kAuto
                               ? g.framelessHigh.load(std::memory_order_relaxed) - flLow
                               : 0;
  // The walk's reads, for a replay (ring.h, StackMemo): kept only when it has a start of its own
  // and stack bounds that do not depend on where this function's frame is. The walk is a
  // function of its start and of the words it read (the rules depend only on return addresses).
  if (!t_stackHigh || fp != reinterpret_cast<uintptr_t>(from)) memo = nullptr;
  uint32_t nreads = 0;
  // Stack words are read one at a time (word()) and kept as the step read them: GCC merges
  // two adjacent loads into one 16-byte load, which waits for the two 8-byte stores that wrote
  // them moments ago (the hook's call and push: a store-forwarding stall that took 42% of the
  // walk's samples on sqlite3). A relaxed atomic load is a plain mov that is never merged.
  auto word = [](uintptr_t at) {
    return __atomic_load_n(reinterpret_cast<const uintptr_t*>(at), __ATOMIC_RELAXED);
  };
  auto remember = [&](uintptr_t at, uint64_t w0, uint64_t w1) {
    if (!memo) return;
    if (nreads == kMemoFrames) {
      memo = nullptr;  // too deep to keep
      return;
    }
    memo->fp[nreads] = at;
    memo->stateSp[nreads] = 0;  // no state here unless the step ends here (resume)
    memo->words[nreads++] = {w0, w1};
  };
  // A whole chain ends where the code that called main or started the thread ends it: a rule
  // whose return address is undefined (_start, clone3), a frame pointer of 0 (what _start
  // leaves), or, when libc's frames are not stepped by rule, a walk that stops in libc (which
  // keeps no frame pointers). It also ends at a frame in code outside every module (a JIT's,
  // guile's or Mono's) whose frame pointer leads nowhere: libunwind, which has no unwind
  // information for such code either, stops there with the same frames. A chain that breaks
  // anywhere else goes to libunwind.
  bool whole = false;
  bool startCode = false;  // the walk went through the start code to its end (learnEntry)
  uint32_t stepped = 0;  // a rule step came before (a word: see word())
  uintptr_t sp = low;  // the lowest address the next frame may start at
  // Resuming `prev` (header comment): its states in stack order, the next one to compare at pj.
  // Both walks must agree on whether a rule step came before (a chain that stops in libc is
  // whole only without one). Off when the walk's constants differ (the frameless modules).
  const StackMemo* pm = prev && prevFrames && prev->count && prev->frameless == constants &&
                                t_stackHigh && flSpan
                            ? prev
                            : nullptr;
  uint32_t pj = 0;
  // At the start of a step's frame (its return address `ret` not yet taken): notes the state in
  // this walk's memo, and resumes `pm` when it was in the same state. True when resumed (the
  // frames are then complete and the chain whole).
  auto resume = [&](uintptr_t ret) -> bool {
    // Only where a rule step would follow: a frame-pointer step costs less than the notes (the
    // walks of a program built with frame pointers resume where they reach libc).
    if (ret - flLow >= flSpan) return false;
    const uint16_t nTag = static_cast<uint16_t>(n | (stepped ? 0x8000u : 0));
    if (memo && nreads) {
      memo->stateSp[nreads - 1] = inSelf ? 0 : sp;
      memo->stateFp[nreads - 1] = fp;
      memo->stateRet[nreads - 1] = ret;
      memo->stateN[nreads - 1] = nTag;
    }
    if (!pm || inSelf) return false;
    while (pj < pm->count && pm->stateSp[pj] < sp) ++pj;
    if (pj >= pm->count || pm->stateSp[pj] != sp || pm->stateRet[pj] != ret ||
        pm->stateFp[pj] != fp || (pm->stateN[pj] & 0x8000) != (nTag & 0x8000))
      return false;
    const uint32_t taken = pm->stateN[pj] & 0x7fff;  // prev's frames before this state
    // prev may have stopped at the depth: it then holds no frames beyond, which this walk,
    // fewer frames in, would need.
    if (taken > prevCount || (prevCount >= max && n < taken)) return false;
    for (uint32_t i = pj + 1; i < pm->count; ++i) {
      const auto* w = reinterpret_cast<const uint64_t*>(pm->fp[i]);
      if (w[0] != pm->words[i].next || w[1] != pm->words[i].ret) {
        pm = nullptr;  // the outer frames changed: walk on, and do not try again
        return false;
      }
    }
    const uint32_t nAt = n;
    for (uint32_t k = taken; k < prevCount && n < max; ++k) out[n++] = prevFrames[k];
    for (uint32_t i = pj + 1; memo && i < pm->count; ++i) {
      if (nreads == kMemoFrames) {
        memo = nullptr;
        break;
      }
      memo->fp[nreads] = pm->fp[i];
      memo->words[nreads] = pm->words[i];
      memo->stateSp[nreads] = pm->stateSp[i];
      memo->stateFp[nreads] = pm->stateFp[i];
      memo->stateRet[nreads] = pm->stateRet[i];
      memo->stateN[nreads++] = static_cast<uint16_t>(
          (pm->stateN[i] & 0x8000) | (((pm->stateN[i] & 0x7fff) - taken + nAt) & 0x7fff));
    }
    whole = true;
    return true;
  };
  while (n < max) {
    // A frame-pointer step: fp is a frame (saved rbp, return address).
    // fp <= high - 16, not fp + 16 <= high: a frameless function may leave any value in rbp.
    if (fp < sp || high < 16 || fp > high - 16 || (fp & 7) != 0) {
      startCode = fp == 0;
      whole = startCode ||
              (!stepped && n > 0 && out[n - 1] >= g.libcLow && out[n - 1] < g.libcHigh) ||
              (n > 0 && outsideModules(out[n - 1]));
      break;
    }
    uintptr_t ret = word(fp + 8);
    uintptr_t next = word(fp);
    remember(fp, next, ret);
    sp = fp + 16;  // the caller's stack pointer after the return
    fp = next;
    // Rule steps while the return address lies in frameless code: the function there kept no
    // frame, so its caller's frame is found from its CFA (rsp or rbp plus an offset).
    bool fpStep = false;
    while (!fpStep) {
      if (resume(ret)) goto done;
      if (ret < 4096) goto done;
      if (inSelf && ret >= g.selfLow && ret < g.selfHigh) {
        // still inside libheapman_preload.so
      } else {
        inSelf = false;
        out[n++] = ret;
        if (n == max) {
          whole = true;
          goto done;
        }
        if (entries && ret - g.libcLow < g.libcHigh - g.libcLow && isEntry(ret, entries)) {
          whole = true;  // libc's start code from here on
          goto done;
        }
      }
      FrameRule rule;
      if (ret - flLow < flSpan) {
        rule = frameRule(ret);
      } else {
        auto* jit = g_jitRule;
        if (!jit || (rule = jit(ret)).kind == FrameRule::kFramePointer) break;
      }
      // Tests in order of likelihood, not a switch: its jump table's indirect branch was
      // mispredicted often enough to cost a quarter of the walk's time (perf, sqlite3).
      if (rule.kind == FrameRule::kRsp || rule.kind == FrameRule::kRbp) {
        uintptr_t cfa = (rule.kind == FrameRule::kRsp ? sp : fp) + rule.cfaOffset;
        // Everything read lies between sp and the CFA: no bound depends on where the walk
        // started (resume relies on it).
        if (cfa < sp + 16 || cfa > high || (cfa & 7) != 0 || cfa - 8 * rule.rbpSlot < sp)
          goto done;
        ret = word(cfa - 8);
        uintptr_t below = word(cfa - 16);
        remember(cfa - 16, below, ret);  // the return address and the word below it
        if (rule.rbpSlot == 2) {
          fp = below;
        } else if (rule.rbpSlot) {
          const uintptr_t at = cfa - 8 * rule.rbpSlot;
          fp = word(at);
          remember(at, fp, word(at + 8));
        }
        sp = cfa;
        stepped = 1;
      } else if (rule.kind == FrameRule::kFramePointer) {
        fpStep = true;
      } else {
        whole = startCode = rule.kind == FrameRule::kEnd;  // else kUnknown: libunwind
        goto done;
      }
    }
  }
  if (n == max) whole = true;
done:
  // The memo's constants no longer hold after learning: it is never replayed.
  if (startCode && stepped) n = learnEntry(out, n);
  if (g.unwind == State::Unwind::kFramePointers || whole) {
    if (memo) {
      memo->start = reinterpret_cast<uintptr_t>(from);
      memo->frameless = constants;
      memo->count = nreads;
      // Pad to a multiple of four for replaySlot: entries that read their own words.
      for (uint32_t i = nreads; i % 4; ++i) memo->fp[i] = reinterpret_cast<uintptr_t>(&memo->words[i]);
    }
    return n;
  }
  g.unwindFallbacks.fetch_add(1, std::memory_order_relaxed);
  return dwarfStack(out, max);
}

}  // namespace heapman::rec
