// libsymtest: functions of known shape (namespaced, template, method, static, always_inline
// helper inlined into its caller) that report the return address of one call they make and the
// source line of that call, for the symbolizer's tests to resolve.
#pragma once

#include <cstdint>

namespace symtest {

struct Site {
  uint64_t address = 0;   // return address of the call to symtest_probe()
  uint32_t line = 0;      // line of that call
  uint32_t callLine = 0;  // for an inlined helper: the line in the caller that it was inlined at
};

Site namespaced();
template <typename T>
Site templated(T value);
extern template Site templated<int>(int);
Site viaStatic();
Site withInlined();

struct Widget {
  Site method(int value) const;
};

// An inlined static function (DWARF has no linkage name for it) and an inlined constructor.
Site withStaticInlined();
Site withInlinedConstructor();

}  // namespace symtest

// The caller's return address (a plain C symbol: the executable's tests call it too).
extern "C" uint64_t symtest_probe();
// A function compiled as C (symtest_c.c), same report.
extern "C" {
struct symtest_c_site {
  uint64_t address;
  uint32_t line;
};
symtest_c_site symtest_c_function();
}
