/* A C function of libsymtest: DWARF names it without namespace or parameters. */
#include <stdint.h>

struct symtest_c_site {
  uint64_t address;
  uint32_t line;
};

uint64_t symtest_probe(void);

__attribute__((noinline)) struct symtest_c_site symtest_c_function(void) {
  struct symtest_c_site s = {symtest_probe(), __LINE__};
  __asm__ volatile("" ::: "memory");
  return s;
}
