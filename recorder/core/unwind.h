// Unwind rules for code without frame pointers (--unwind auto): how to step from a return address
// inside such a function to its caller's frame, read once from the module's .eh_frame and kept in
// a lock-free cache keyed by the return address. captureStack (stacks.cpp) walks frame pointers
// and steps through these frames with the rule, then goes on with frame pointers.
//
// x86-64 only needs three things from the call-frame information at a call site: where the CFA
// is (rsp or rbp plus an offset), that the return address is at CFA - 8 (what every CIE says),
// and where the caller's rbp is (unchanged, or saved at CFA - 8 * slot). Anything else (signal
// frames, DWARF expressions, registers saved in registers, stack realignment) is kUnknown: the
// caller then unwinds the whole stack with libunwind.
//
// Hot path: frameRule() is one or two relaxed loads from a static table; a miss reads the
// module's .eh_frame_hdr and .eh_frame in place (binary search, then the CIE's and FDE's
// call-frame instructions up to the address). No allocation, no lock, no system call: safe in a
// signal handler.
#pragma once

#include <atomic>
#include <cstdint>

namespace heapman::rec {

struct FrameRule {
  enum Kind : uint8_t {
    kNone = 0,         // (an empty cache entry)
    kFramePointer,     // not in a frameless module: the frame-pointer step
    kRsp,              // CFA = rsp + cfaOffset
    kRbp,              // CFA = rbp + cfaOffset
    kEnd,              // the outermost frame: its return address is undefined (_start, clone3)
    kUnknown,          // a rule this does not follow, or no FDE covers the address
  };
  Kind kind = kNone;
  uint8_t rbpSlot = 0;     // caller's rbp saved at CFA - 8 * rbpSlot; 0: rbp unchanged
  uint32_t cfaOffset = 0;  // bytes, a multiple of 8
};

// Rules for code outside every module (a JIT's): set at start-up by a runtime's layer that knows
// its code (hooks/mono/walk.cpp), read by captureStack for a return address outside the
// frameless modules; kFramePointer where it knows nothing. Null: frame pointers there.
extern FrameRule (*g_jitRule)(uintptr_t ret);

// The cache: 2^14 words (128 KiB, touched only where used), two ways (the home slot h and
// h ^ 1). A word holds the rule and enough of the return address to tell it apart from every
// other that can land there:
//   bits 63..31  ret >> 14 (user-space addresses are below 2^47)
//   bit  30      way: 1 when the word lies in slot h ^ 1 of its home h
//   bits 29..27  FrameRule::Kind (never kNone in a filled word)
//   bits 26..21  rbpSlot
//   bits 20..0   cfaOffset / 8
// The home slot mixes the high bits into the low ones, so that the high bits and the slot
// together give back the whole address. Written and read with relaxed single-word accesses: a
// reader sees an old rule or a new one, never half of each.
namespace rules {
inline constexpr uint32_t kBits = 14;
inline constexpr uint64_t kMask = (uint64_t{1} << kBits) - 1;
inline constexpr uint32_t kMaxSlot = 63;
inline constexpr uint32_t kMaxCfaOffset = (1u << 21) * 8;
extern std::atomic<uint64_t> table[uint64_t{1} << kBits];
inline uint64_t homeOf(uintptr_t ret) { return (ret ^ (ret >> 14) ^ (ret >> 28)) & kMask; }
inline FrameRule decode(uint64_t w) {
  FrameRule r;
  r.kind = static_cast<FrameRule::Kind>((w >> 27) & 7);
  r.rbpSlot = static_cast<uint8_t>((w >> 21) & 63);
  r.cfaOffset = static_cast<uint32_t>(w & 0x1fffff) * 8;
  return r;
}
// The slow path: reads the rule and caches it.
FrameRule miss(uintptr_t ret, uint64_t home, uint64_t w0, uint64_t w1);
}  // namespace rules

// The rule for the frame whose return address is `ret` (a call site: the rule holds at ret - 1).
// Frames outside the frameless modules (State::frameless) get kFramePointer.
inline FrameRule frameRule(uintptr_t ret) {
  const uint64_t h = rules::homeOf(ret);
  const uint64_t tag = uint64_t{ret >> 14} << 1;
  uint64_t w0 = rules::table[h].load(std::memory_order_relaxed);
  if ((w0 >> 30) == tag) return rules::decode(w0);
  uint64_t w1 = rules::table[h ^ 1].load(std::memory_order_relaxed);
  if ((w1 >> 30) == (tag | 1)) return rules::decode(w1);
  return rules::miss(ret, h, w0, w1);
}

// Forgets every cached rule: after dlopen/dlclose (another module may now lie where an unloaded
// one was). Rules being read meanwhile stay consistent (one word each).
void clearFrameRules();

// The rule at `pc` from the .eh_frame_hdr at `ehHdr` (a loaded module's PT_GNU_EH_FRAME, in the
// encoding framelessRanges accepts). Exposed for the unit test.
FrameRule parseFrameRule(uintptr_t ehHdr, uintptr_t pc);

}  // namespace heapman::rec
