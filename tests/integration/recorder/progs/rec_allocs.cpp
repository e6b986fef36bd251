// Single-thread allocation workload: every glibc allocation entry point (and C++ new/delete)
// between heapman_event("begin") and heapman_event("end") on the main thread. Each operation is
// noted in a static table (no allocation) and printed after "end", one a line, in program order:
//
//   alloc ADDR SIZE USABLE ALIGN   an allocation of SIZE requested bytes, malloc_usable_size
//                                  USABLE; ALIGN is the alignment asked for (0: none)
//   free ADDR
//   realloc OLD NEW SIZE USABLE    realloc(OLD, SIZE) moved or resized the block to NEW
//   totals allocs=A frees=F reallocs=R bytes=B
//
// B sums the requested sizes of allocations and reallocs. free(NULL) is made but not listed
// (the recorder must not log it). Usage: rec_allocs [N]  (N mallocs of 1..N bytes, default 1000).
#include <heapman.h>
#include <malloc.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "prog_util.h"

namespace {

constexpr size_t kMaxN = 4000;

struct Op {
  char kind;  // 'a' alloc, 'f' free, 'r' realloc
  uintptr_t a, b;
  size_t size, usable, align;
};
Op ops[2 * kMaxN + 64];
size_t nops;
void* blocks[kMaxN];

void fail(const char* what) {
  std::fprintf(stderr, "rec_allocs: %s failed\n", what);
  std::abort();
}

void* noteAlloc(void* p, size_t size, size_t align, const char* what) {
  if (!p) fail(what);
  hmt_escape(p);
  ops[nops++] = Op{'a', reinterpret_cast<uintptr_t>(p), 0, size, malloc_usable_size(p), align};
  return p;
}

void noteFree(void* p) {
  ops[nops++] = Op{'f', reinterpret_cast<uintptr_t>(p), 0, 0, 0, 0};
}

// `old` is the address before realloc (taken before the call: the old pointer is dead after it).
void* noteRealloc(uintptr_t old, void* p, size_t size) {
  if (!p) fail("realloc");
  hmt_escape(p);
  ops[nops++] = Op{'r', old, reinterpret_cast<uintptr_t>(p), size, malloc_usable_size(p), 0};
  return p;
}

struct Blob {
  char bytes[40];
};

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
  if (n < 1 || n > kMaxN) {
    std::fprintf(stderr, "usage: rec_allocs [N], 1 <= N <= %zu\n", kMaxN);
    return 2;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));

  heapman_event("begin");

  // N mallocs of 1..N bytes, then their frees (oldest first).
  for (size_t i = 1; i <= n; ++i) blocks[i - 1] = noteAlloc(std::malloc(i), i, 0, "malloc");
  for (size_t i = 0; i < n; ++i) {
    noteFree(blocks[i]);
    std::free(blocks[i]);
  }

  // malloc(0) returns a unique block in glibc: an allocation of 0 bytes.
  void* zero = noteAlloc(std::malloc(0), 0, 0, "malloc(0)");
  noteFree(zero);
  std::free(zero);

  void* c = noteAlloc(std::calloc(7, 13), 7 * 13, 0, "calloc");

  // realloc: NULL -> allocation, grow, shrink, -> 0 frees.
  void* r = noteAlloc(std::realloc(nullptr, 100), 100, 0, "realloc(NULL, 100)");
  uintptr_t before = reinterpret_cast<uintptr_t>(r);
  void* r2 = noteRealloc(before, std::realloc(r, 5000), 5000);
  before = reinterpret_cast<uintptr_t>(r2);
  void* r3 = noteRealloc(before, std::realloc(r2, 50), 50);
  noteFree(r3);
  if (std::realloc(r3, 0) != nullptr) fail("realloc(p, 0) returning NULL");

  std::free(nullptr);  // not an event

  // The memalign family.
  void* pm = nullptr;
  if (posix_memalign(&pm, 64, 100) != 0) fail("posix_memalign");
  noteAlloc(pm, 100, 64, "posix_memalign");
  void* al = noteAlloc(aligned_alloc(4096, 8192), 8192, 4096, "aligned_alloc");
  void* ma = noteAlloc(memalign(256, 50), 50, 256, "memalign");
  void* va = noteAlloc(valloc(1000), 1000, page, "valloc");
  void* pv = noteAlloc(pvalloc(3000), 3000, page, "pvalloc");
  for (void* p : {c, pm, al, ma, va, pv}) {
    noteFree(p);
    std::free(p);
  }

  // C++ new/delete and new[]/delete[] (trivial types: no array cookie, so the block is the
  // pointer new returns).
  Blob* blob = new Blob;
  noteAlloc(blob, sizeof(Blob), 0, "new");
  noteFree(blob);
  delete blob;
  int* ints = new int[25];
  noteAlloc(ints, 25 * sizeof(int), 0, "new[]");
  noteFree(ints);
  delete[] ints;

  // Large blocks (glibc serves these with mmap).
  void* big = noteAlloc(std::malloc(1u << 20), 1u << 20, 0, "malloc(1 MiB)");
  void* bigc = noteAlloc(std::calloc(3, 1u << 20), 3u << 20, 0, "calloc(3 MiB)");
  noteFree(big);
  std::free(big);
  noteFree(bigc);
  std::free(bigc);

  heapman_event("end");

  uint64_t allocs = 0, frees = 0, reallocs = 0, bytes = 0;
  for (size_t i = 0; i < nops; ++i) {
    const Op& o = ops[i];
    if (o.kind == 'a') {
      ++allocs;
      bytes += o.size;
      std::printf("alloc 0x%" PRIxPTR " %zu %zu %zu\n", o.a, o.size, o.usable, o.align);
    } else if (o.kind == 'f') {
      ++frees;
      std::printf("free 0x%" PRIxPTR "\n", o.a);
    } else {
      ++reallocs;
      bytes += o.size;
      std::printf("realloc 0x%" PRIxPTR " 0x%" PRIxPTR " %zu %zu\n", o.a, o.b, o.size, o.usable);
    }
  }
  std::printf("totals allocs=%" PRIu64 " frees=%" PRIu64 " reallocs=%" PRIu64 " bytes=%" PRIu64
              "\n",
              allocs, frees, reallocs, bytes);
  return 0;
}
