// Keep every call below where it is: the tests compare the lines that __LINE__ captures with the
// lines the symbolizer finds for the recorded return addresses.
#include "symtest_lib.h"

// Not cloned or specialized by GCC's inter-procedural passes, so the symbol and DWARF names stay
// those of the source.
#if defined(__clang__)
#define SYMTEST_KEEP __attribute__((noinline))
#else
#define SYMTEST_KEEP __attribute__((noinline, noipa))
#endif

extern "C" SYMTEST_KEEP uint64_t symtest_probe() {
  auto address = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");
  return address;
}

namespace symtest {

SYMTEST_KEEP Site namespaced() {
  Site s{symtest_probe(), __LINE__};
  return s;
}

template <typename T>
SYMTEST_KEEP Site templated(T value) {
  Site s{symtest_probe(), __LINE__};
  (void)value;
  return s;
}
template Site templated<int>(int);

SYMTEST_KEEP static Site staticHelper() {
  Site s{symtest_probe(), __LINE__};
  return s;
}

SYMTEST_KEEP Site viaStatic() {
  Site s = staticHelper();
  asm volatile("" ::: "memory");  // not a tail call
  return s;
}

__attribute__((always_inline)) inline Site inlinedHelper(uint32_t callLine) {
  Site s{symtest_probe(), __LINE__, callLine};
  return s;
}

SYMTEST_KEEP Site withInlined() {
  Site s = inlinedHelper(__LINE__);
  return s;
}

SYMTEST_KEEP Site Widget::method(int value) const {
  Site s{symtest_probe(), __LINE__};
  (void)value;
  return s;
}

__attribute__((always_inline)) static inline Site staticInlined(uint32_t callLine) {
  Site s{symtest_probe(), __LINE__, callLine};
  return s;
}

SYMTEST_KEEP Site withStaticInlined() {
  Site s = staticInlined(__LINE__);
  return s;
}

struct Gadget {
  Site site;
  __attribute__((always_inline)) explicit Gadget(uint32_t callLine)
      : site{symtest_probe(), __LINE__, callLine} {}
};

SYMTEST_KEEP Site withInlinedConstructor() {
  Gadget g(__LINE__);
  return g.site;
}

}  // namespace symtest
