// Unwind rules for code without frame pointers (--unwind auto): how to step from a return address
// inside such a function to its caller's frame, read once from the module's .eh_frame and kept in
// a lock-free cache keyed by the return address. captureStack (recorder.cpp) walks frame pointers
// and steps through these frames with the rule, then goes on with frame pointers.
//
// x86-64 only needs three things from the call-frame information at a call site: where the CFA
// is (rsp or rbp plus an offset), that the return address is at CFA - 8 (what every CIE says),
// and where the caller's rbp is (unchanged, or saved at CFA - 8 * slot). Anything else (signal
// frames, DWARF expressions, registers saved in registers, stack realignment) is kUnknown: the
// caller then unwinds the whole stack with libunwind, as before.
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

// The rule for the frame whose return address is `ret` (a call site: the rule holds at ret - 1).
// Frames outside the frameless modules (State::frameless) get kFramePointer.
FrameRule frameRule(uintptr_t ret);

// Forgets every cached rule: after dlopen/dlclose (another module may now lie where an unloaded
// one was). Rules being read meanwhile stay consistent (one word each).
void clearFrameRules();

// The rule at `pc` from the .eh_frame_hdr at `ehHdr` (a loaded module's PT_GNU_EH_FRAME, in the
// encoding framelessRanges accepts). Exposed for the unit test.
FrameRule parseFrameRule(uintptr_t ehHdr, uintptr_t pc);

}  // namespace heapman::rec
