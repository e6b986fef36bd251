// A thread's ring (recorder/core/ring.h): records written by begin()/commit() read back in order
// by the consumer's mapping (ringOffset), and the ring's growth: a ring the consumer keeps up with
// stays at its first size and keeps only that resident; one the consumer falls behind doubles,
// only at wraps that are odd multiples of its size, up to its largest, losing no record.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "recorder.h"
#include "ring.h"

namespace {

using heapman::rec::g;
using heapman::rec::Kind;
using heapman::rec::RawEvent;
using heapman::rec::Ring;

constexpr uint64_t kFirst = 64u << 10, kMax = 1u << 20;

// Producer and consumer of one ring on the test's thread, as a recording thread and the writer
// would be. needWriter must not start a writer thread here: State::stop is set meanwhile.
class RingPair {
 public:
  RingPair() : ring_(heapman::rec::ringCreate(1, kFirst, kMax)) {
    REQUIRE(ring_);
    g.stop.store(true);
  }
  ~RingPair() {
    g.stop.store(false);
    heapman::rec::ringDestroy(ring_);
  }

  // Writes event number n: a free of address n with n % 7 frames (n + i each), so that records
  // of 64 to 112 bytes reach every offset and wraps need padding.
  void produce(uint64_t n) {
    const uint32_t frames = static_cast<uint32_t>(n % 7);
    RawEvent* e = heapman::rec::begin(ring_, Kind::kFree, frames, 0);
    REQUIRE(e);
    e->a = n;
    for (uint32_t i = 0; i < frames; ++i) heapman::rec::framesOf(e)[i] = n + i;
    heapman::rec::commit(ring_, e);
    if (ring_->capacity != capacity_) {  // it grew at this record's wrap
      const uint64_t layout = ring_->layout.load();
      const uint64_t switchAt = layout & ~uint64_t{63};
      CHECK(ring_->capacity == 2 * capacity_);
      CHECK((uint64_t{1} << (layout & 63)) == ring_->capacity);
      CHECK(switchAt % capacity_ == 0);
      CHECK((switchAt / capacity_) % 2 == 1);
      CHECK(reinterpret_cast<uint8_t*>(e) - ring_->data == static_cast<ptrdiff_t>(capacity_));
      capacity_ = ring_->capacity;
      ++growths_;
    }
  }

  // Reads every committed record: each must be the next event, whole.
  void consume() {
    const uint64_t head = ring_->head.load();
    uint64_t tail = ring_->tail.load();
    while (tail != head) {
      auto* e = reinterpret_cast<RawEvent*>(ring_->data + heapman::rec::ringOffset(ring_, tail));
      tail += e->size;
      if (e->kind == Kind::kPad) continue;
      REQUIRE(e->kind == Kind::kFree);
      REQUIRE(e->a == read_);
      REQUIRE(e->nframes == read_ % 7);
      for (uint32_t i = 0; i < e->nframes; ++i) REQUIRE(heapman::rec::framesOf(e)[i] == read_ + i);
      ++read_;
    }
    ring_->tail.store(tail);
  }

  uint64_t fill() const { return ring_->head.load() - ring_->tail.load(); }
  // The consumer reads once the ring holds `behind` bytes, or before it could be too full for
  // the next record (begin() would wait for room: there is no writer thread here).
  void consumeAt(uint64_t behind) {
    if (fill() >= behind || fill() + 512 > ring_->capacity) consume();
  }
  uint64_t read() const { return read_; }
  uint32_t growths() const { return growths_; }
  Ring* ring() const { return ring_; }

  // Pages of the ring's data that are resident (mincore): what the thread's recording costs.
  uint64_t residentPages() const {
    const long page = sysconf(_SC_PAGESIZE);
    std::vector<unsigned char> v(kMax / page);
    REQUIRE(mincore(ring_->data, kMax, v.data()) == 0);
    uint64_t n = 0;
    for (unsigned char c : v) n += c & 1;
    return n;
  }

 private:
  Ring* ring_;
  uint64_t capacity_ = kFirst;
  uint64_t read_ = 0;
  uint32_t growths_ = 0;
};

TEST_CASE("a ring the consumer keeps up with stays at its first size") {
  RingPair p;
  for (uint64_t n = 0; n < 50000; ++n) {
    p.produce(n);
    if (n % 100 == 99) p.consume();
  }
  p.consume();
  CHECK(p.read() == 50000);
  CHECK(p.growths() == 0);
  CHECK(p.ring()->capacity == kFirst);
  CHECK(p.residentPages() == kFirst / sysconf(_SC_PAGESIZE));
}

TEST_CASE("a ring the consumer falls behind doubles at odd wraps up to its largest") {
  RingPair p;
  // The consumer reads only when the ring holds 48 KiB: more than half of 64 KiB, less than
  // half of 128 KiB. So the ring doubles once and keeps up from then on.
  uint64_t n = 0;
  for (; n < 50000; ++n) {
    p.produce(n);
    p.consumeAt(48u << 10);
  }
  p.consume();
  CHECK(p.read() == n);
  CHECK(p.growths() == 1);
  CHECK(p.ring()->capacity == 2 * kFirst);
  CHECK(p.residentPages() == 2 * kFirst / sysconf(_SC_PAGESIZE));
  // Now 600 KiB behind: it doubles to 1 MiB (three times) and no further.
  for (uint64_t end = n + 100000; n < end; ++n) {
    p.produce(n);
    p.consumeAt(600u << 10);
  }
  p.consume();
  CHECK(p.read() == n);
  CHECK(p.growths() == 4);
  CHECK(p.ring()->capacity == kMax);
  CHECK(p.residentPages() == kMax / sysconf(_SC_PAGESIZE));
}

TEST_CASE("a ring grows while its consumer is behind without reading over unread records") {
  RingPair p;
  // The consumer reads a little, late: the ring stays near full while it grows, and every
  // record still reads back whole and in order (consume checks each).
  uint64_t n = 0;
  for (; n < 200000; ++n) {
    p.produce(n);
    p.consumeAt(kMax);
  }
  p.consume();
  CHECK(p.read() == n);
  CHECK(p.ring()->capacity == kMax);
  CHECK(p.growths() == 4);
}

}  // namespace
