#include "ring.h"

#include <sys/mman.h>

#include <new>

namespace heapman::rec {

Ring* ringCreate(uint32_t index, uint64_t capacity) {
  size_t header = (sizeof(Ring) + 4095) & ~size_t{4095};
  size_t length = header + capacity;
  void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Ring* r = new (m) Ring();
  r->index = index;
  r->capacity = capacity;
  r->data = static_cast<uint8_t*>(m) + header;
  r->mapLength = length;
  return r;
}

void ringDestroy(Ring* r) {
  size_t length = r->mapLength;
  r->~Ring();
  munmap(r, length);
}

}  // namespace heapman::rec
