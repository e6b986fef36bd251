// The decode pipeline: record chunks decoded on a second thread into blocks of compact
// operations while the applying thread applies the blocks before them; when no core is free,
// decoded on the applying thread, into one block at a time once the live set outgrows the
// caches, else straight into the applier (docs/DESIGN.md §3.4). A block's applier prefetches the
// live set's slots a few operations ahead. Replay::forEachChunk drives it; the engine's appliers
// (applier.h) are its visitors. Private to replay/src.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "heapman/replay/replay.h"

namespace heapman::replay {
namespace detail {

// Thrown by the visitor at the first event at or past the limit: ends decoding of the chunk.
struct StopDecoding {};

// One decoded chunk, as compact operations: allocs, frees and reallocs inline, every other record
// kept aside. Lets chunk k+1 decode on a second thread while chunk k is applied.
struct Op {
  uint8_t kind;  // kOpAlloc, kOpFree, kOpRealloc, kOpOther (a = index into Batch::others)
  uint8_t heap;
  uint32_t thread;
  uint32_t stackId, typeId;
  uint64_t seq, time;
  uint64_t a, b, size, actual;
};
static_assert(sizeof(Op) == 64);
// kOpSkipped: an event of an extended kind the decoder does not know (seq only).
constexpr uint8_t kOpAlloc = 0, kOpFree = 1, kOpRealloc = 2, kOpOther = 3, kOpSkipped = 4;

// A block's operations, written in place: at most kCapacity (the collector hands a full block on
// before it adds one).
class OpBlock {
 public:
  static constexpr size_t kCapacity = 2048;
  OpBlock() : ops_(new Op[kCapacity]) {}
  size_t size() const { return n_; }
  const Op& operator[](size_t i) const { return ops_[i]; }
  [[gnu::always_inline]] void push_back(const Op& op) { ops_[n_++] = op; }
  void clear() { n_ = 0; }

 private:
  std::unique_ptr<Op[]> ops_;
  size_t n_ = 0;
};

// A block of decoded operations; blocks of one chunk arrive in order, the last with chunkEnd.
struct Batch {
  OpBlock ops;
  std::vector<log::Record> others;
  size_t chunk = 0;
  bool chunkEnd = false;
  std::exception_ptr error;  // decoding failed here (the last block)
  void clear() {
    ops.clear();
    others.clear();
    chunkEnd = false;
    error = nullptr;
  }
};

struct Cancelled {};

// The hand-over between the decoding thread and the applying one: a few blocks of a few thousand
// operations (about 1 MiB in all, so they stay in cache), passed under a mutex per block.
class BlockPipe {
 public:
  static constexpr size_t kBlockOps = OpBlock::kCapacity;
  static constexpr size_t kBlocks = 8;
  BlockPipe() {
    for (size_t i = 0; i < kBlocks; ++i) free_.push_back(std::make_unique<Batch>());
  }
  // Producer side. Throws Cancelled when the consumer has stopped.
  std::unique_ptr<Batch> take() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return cancel_ || !free_.empty(); });
    if (cancel_) throw Cancelled{};
    auto b = std::move(free_.back());
    free_.pop_back();
    b->clear();
    return b;
  }
  void put(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> l(m_);
    full_.push_back(std::move(b));
    cv_.notify_all();
  }
  void finish() {
    std::lock_guard<std::mutex> l(m_);
    done_ = true;
    cv_.notify_all();
  }
  // Consumer side: nullptr at the end.
  std::unique_ptr<Batch> next() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return done_ || !full_.empty(); });
    if (full_.empty()) return nullptr;
    auto b = std::move(full_.front());
    full_.pop_front();
    return b;
  }
  void recycle(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> l(m_);
    free_.push_back(std::move(b));
    cv_.notify_all();
  }
  void cancel() {
    std::lock_guard<std::mutex> l(m_);
    cancel_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Batch>> free_;
  std::deque<std::unique_ptr<Batch>> full_;
  bool cancel_ = false, done_ = false;
};

// Whether chunks decode on a second thread: HEAPMAN_REPLAY_THREADS=1|2 forces either; else when
// the machine has a second core and the load average leaves one free.
bool decodeOnSecondThread();

// The decoding thread's side: decodes record chunks first.. of `chunks` into blocks of `pipe`, in
// order, and stops before a chunk k > first that want(k) refuses, after a chunk that fails to
// decode (its last block carries the error) or when the consumer cancels; then pipe.finish().
void decodeChunks(const log::LogReader& reader, const std::vector<log::ChunkRef>& chunks,
                  size_t first, BlockPipe& pipe, const std::function<bool(size_t)>& want);

// How many operations ahead replayBatch (and a GcEnd over its collected set, applier.h) has the
// live set prefetch an address's slots: enough for the loads to arrive in time, few enough that
// they are still in the cache when used.
constexpr size_t kOpsAhead = 16;
// Decodes one chunk into `batch` on this thread: full(ctx) is called each time the batch holds
// BlockPipe::kBlockOps operations (it must empty it); what is left at the end stays in it.
void decodeChunkInto(const log::LogReader& reader, const log::ChunkRef& chunk,
                     std::vector<uint8_t>& buf, log::ChunkModel* model, Batch& batch,
                     void (*full)(void* ctx), void* ctx);

// Feeds a batch to a visitor in record order (the visitor may throw StopDecoding).
template <class V>
void replayBatch(const Batch& b, V& v) {
  const size_t n = b.ops.size();
  for (size_t k = 0; k < n; ++k) {
    if (k + kOpsAhead < n && b.ops[k + kOpsAhead].kind <= kOpRealloc)
      v.prefetch(b.ops[k + kOpsAhead].a);
    const Op& op = b.ops[k];
    switch (op.kind) {
      case kOpAlloc:
        v.allocLocal(log::Alloc{{op.seq, op.time, op.thread}, static_cast<log::HeapKind>(op.heap),
                                op.a, op.size, op.actual, op.stackId, op.typeId},
                     static_cast<uint32_t>(op.b));
        break;
      case kOpFree:
        v(log::Free{{op.seq, op.time, op.thread}, static_cast<log::HeapKind>(op.heap), op.a});
        break;
      case kOpRealloc:
        v(log::Realloc{{op.seq, op.time, op.thread}, static_cast<log::HeapKind>(op.heap), op.a,
                       op.b, op.size, op.actual, op.stackId, op.typeId});
        break;
      case kOpSkipped:
        v.skippedEvent(log::EventCommon{op.seq, op.time, op.thread});
        break;
      default:
        std::visit(v, b.others[op.a]);
    }
  }
}

}  // namespace detail

// Runs `Applier`s over record chunks first.. in order. make(k) creates the applier for chunk k;
// done(k, applier, stopped) takes it back after the chunk (stopped: it threw StopDecoding) and
// returns false to stop. want(k) says whether chunk k will be needed (the decoder runs ahead only
// over those). With a second hardware thread, decoding runs on it, a few thousand records ahead
// of the applying thread; else chunks are decoded on this one (in blocks above
// ReplayOptions::decodeBlocksAbove).
template <class Make, class Done, class Want>
void Replay::forEachChunk(size_t first, Make&& make, Done&& done, Want&& want) {
  const size_t n = recordChunks_.size();
  if (first >= n) return;
  // Decided at the first call of each instantiation (the index pass, seeks).
  static const bool threaded = detail::decodeOnSecondThread();
  std::optional<detail::BlockPipe> pipe;  // its blocks (1 MiB) only where a thread decodes
  std::thread producer;
  if (threaded) {
    pipe.emplace();
    try {
      producer = std::thread([&] { detail::decodeChunks(reader_, recordChunks_, first, *pipe, want); });
    } catch (const std::system_error&) {
      // No thread to be had (a memory limit, a thread limit): decode on this one.
    }
  }
  if (!producer.joinable()) {
    // A live set larger than the caches (ReplayOptions::decodeBlocksAbove): blocks of operations
    // on this thread too, so that the applier knows the addresses a few records ahead and
    // prefetches their slots (replayBatch). A smaller one is read from the cache anyway, and the
    // records go straight to the applier (the blocks cost a malloc churn's replay ~8%).
    std::vector<uint8_t> buf;
    auto model = std::make_unique<log::ChunkModel>();
    detail::Batch batch;
    for (size_t k = first; k < n; ++k) {
      auto a = make(k);
      using Applier = decltype(a);
      struct Apply {
        Applier* a;
        detail::Batch* batch;
        static void full(void* ctx) {
          auto* self = static_cast<Apply*>(ctx);
          detail::replayBatch(*self->batch, *self->a);
          self->batch->clear();
        }
      } apply{&a, &batch};
      bool stopped = false;
      batch.clear();
      try {
        if (live_.memoryBytes() < options_.decodeBlocksAbove) {
          reader_.decodeChunk(recordChunks_[k], buf, a, model.get());
        } else {
          detail::decodeChunkInto(reader_, recordChunks_[k], buf, model.get(), batch,
                                  &Apply::full, &apply);
          Apply::full(&apply);
        }
      } catch (const detail::StopDecoding&) {
        stopped = true;
      }
      if (!done(k, a, stopped)) return;
      checkCancel();
    }
    return;
  }
  auto stop = [&] {
    pipe->cancel();
    while (auto b = pipe->next()) pipe->recycle(std::move(b));  // unblock and drain
    producer.join();
  };
  try {
    size_t k = first;
    std::optional<decltype(make(first))> a;
    a.emplace(make(k));
    while (auto b = pipe->next()) {
      if (b->error) std::rethrow_exception(b->error);
      bool stopped = false;
      try {
        detail::replayBatch(*b, *a);
      } catch (const detail::StopDecoding&) {
        stopped = true;
      }
      bool end = b->chunkEnd;
      pipe->recycle(std::move(b));
      checkCancel();
      if (stopped || end) {
        if (!done(k, *a, stopped)) break;
        if (++k >= n) break;
        a.emplace(make(k));
      }
    }
  } catch (...) {
    stop();
    throw;
  }
  stop();
}

}  // namespace heapman::replay
