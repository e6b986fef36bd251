// C++ allocations that reach malloc through libstdc++, which Debian builds without frame pointers:
// `new` (operator new calls malloc without setting up a frame), std::string growth (append, then
// _M_mutate/_M_create, then operator new, all in libstdc++) and std::vector growth. This program is
// built with frame pointers; the test requires that every allocation's stack holds the function
// that allocated, right below it its caller run(). A frame-pointer walk alone would skip that
// function (the frame after operator new's return address is its caller's).
//
// Between heapman_event("begin") and heapman_event("end") it marks each phase with an event
// ("new", "string", "vector"); every allocation after a marker belongs to that phase's function.
// After "end" it prints the functions' runtime addresses:
//
//   fn NAME ADDR          for make_new, grow_string, grow_vector, run
//
// Each function is aligned to kFnSpan (1024) bytes and much shorter, so a return address inside
// F lies in [F, F + 1024) and in no other function's range.
#include <heapman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "prog_util.h"

#if defined(__clang__)
#define HMT_FN1024 __attribute__((noinline, aligned(1024)))
#else
#define HMT_FN1024 __attribute__((noinline, noclone, aligned(1024)))
#endif

namespace {

struct Widget {
  char bytes[1111];
};

constexpr int kWidgets = 3;
Widget* widgets[kWidgets];
volatile int widgetCount = kWidgets;  // one call site for all three (no unrolling)
volatile int growBy = 2000;

}  // namespace

extern "C" {

HMT_FN1024 void make_new(int i) {
  widgets[i] = new Widget;
  hmt_escape(widgets[i]);
}

HMT_FN1024 void grow_string() {
  std::string s;
  for (int i = 0; i < growBy; ++i) {
    s.push_back(static_cast<char>('a' + i % 26));
    hmt_escape(s.data());
  }
  hmt_escape(s.data());
}

HMT_FN1024 void grow_vector() {
  std::vector<int> v;
  for (int i = 0; i < growBy; ++i) {
    v.push_back(i);
    hmt_escape(v.data());
  }
  hmt_escape(v.data());
}

HMT_FN1024 void run() {
  heapman_event("begin");
  heapman_event("new");
  for (int i = 0; i < widgetCount; ++i) make_new(i);
  heapman_event("string");
  grow_string();
  heapman_event("vector");
  grow_vector();
  heapman_event("end");
}

}  // extern "C"

int main() {
  run();
  std::printf("fn make_new 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(&make_new));
  std::printf("fn grow_string 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(&grow_string));
  std::printf("fn grow_vector 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(&grow_vector));
  std::printf("fn run 0x%" PRIxPTR "\n", reinterpret_cast<uintptr_t>(&run));
  for (Widget* w : widgets) delete w;
  return 0;
}
