// The decode pipeline's decoding side (decode_pipeline.h): the choice of threads and the loop
// that runs on the second thread, decoding chunks into the pipe's blocks.
#include "decode_pipeline.h"

#include <cstdlib>

namespace heapman::replay::detail {

using namespace heapman::log;

namespace {

// The decoder's visitor: each record into the current block as one Op (the records that are not
// allocs, frees or reallocs kept aside); full(ctx) takes the block when it is full.
struct BatchCollector {
  Batch* cur;
  void (*full)(void* ctx);
  void* ctx;
  void room() {
    if (cur->ops.size() >= BlockPipe::kBlockOps) full(ctx);
  }
  void allocLocal(const Alloc& r, uint32_t local) {
    room();
    cur->ops.push_back({kOpAlloc, static_cast<uint8_t>(r.heap), r.ev.thread, r.stackId, r.typeId,
                        r.ev.seq, r.ev.timeNs, r.address, local, r.size, r.actualSize});
  }
  void operator()(const Free& r) {
    room();
    cur->ops.push_back({kOpFree, static_cast<uint8_t>(r.heap), r.ev.thread, 0, 0, r.ev.seq,
                        r.ev.timeNs, r.address, 0, 0, 0});
  }
  void operator()(const Realloc& r) {
    room();
    cur->ops.push_back({kOpRealloc, static_cast<uint8_t>(r.heap), r.ev.thread, r.stackId,
                        r.typeId, r.ev.seq, r.ev.timeNs, r.oldAddress, r.newAddress, r.size,
                        r.actualSize});
  }
  void skippedEvent(const EventCommon& ev) {
    room();
    cur->ops.push_back({kOpSkipped, 0, ev.thread, 0, 0, ev.seq, ev.timeNs, 0, 0, 0, 0});
  }
  template <class T>
  void operator()(const T& r) {
    room();
    cur->ops.push_back({kOpOther, 0, 0, 0, 0, 0, 0, cur->others.size(), 0, 0, 0});
    cur->others.emplace_back(r);
  }
  // A collected set is moved, not copied (up to 32 768 addresses a record).
  void operator()(Collected& r) {
    room();
    cur->ops.push_back({kOpOther, 0, 0, 0, 0, 0, 0, cur->others.size(), 0, 0, 0});
    cur->others.emplace_back(std::move(r));
  }
};

// The decoding thread's collector: a full block goes into the pipe, the next is taken from it.
struct PipeFeed {
  BlockPipe& pipe;
  std::unique_ptr<Batch> cur;
  BatchCollector collector{nullptr, &PipeFeed::full, this};
  static void full(void* ctx) {
    auto* f = static_cast<PipeFeed*>(ctx);
    size_t chunk = f->cur->chunk;
    f->pipe.put(std::move(f->cur));
    f->take();
    f->cur->chunk = chunk;
  }
  void take() {
    cur = pipe.take();
    collector.cur = cur.get();
  }
};

}  // namespace

// The pipeline gains ~20% with a free core and loses ~25% when the second core is busy
// (docs/PERFORMANCE.md): use it when the load average leaves a core free.
bool decodeOnSecondThread() {
  const char* e = std::getenv("HEAPMAN_REPLAY_THREADS");
  if (e) return std::atoi(e) > 1;
  unsigned cores = std::thread::hardware_concurrency();
  double load[1] = {0};
  if (::getloadavg(load, 1) != 1) load[0] = 0;
  return cores > 1 && load[0] + 1.0 <= cores;
}

void decodeChunks(const LogReader& reader, const std::vector<ChunkRef>& chunks, size_t first,
                  BlockPipe& pipe, const std::function<bool(size_t)>& want) {
  const size_t n = chunks.size();
  std::vector<uint8_t> buf;
  auto model = std::make_unique<ChunkModel>();
  PipeFeed c{pipe, nullptr};
  try {
    for (size_t k = first; k < n; ++k) {
      if (k > first && !want(k)) break;
      c.take();
      c.cur->chunk = k;
      try {
        reader.decodeChunk(chunks[k], buf, c.collector, model.get());
      } catch (const Cancelled&) {
        throw;
      } catch (...) {
        c.cur->error = std::current_exception();
        pipe.put(std::move(c.cur));
        break;
      }
      c.cur->chunkEnd = true;
      pipe.put(std::move(c.cur));
    }
  } catch (const Cancelled&) {
  }
  pipe.finish();
}

void decodeChunkInto(const LogReader& reader, const ChunkRef& chunk, std::vector<uint8_t>& buf,
                     ChunkModel* model, Batch& batch, void (*full)(void* ctx), void* ctx) {
  BatchCollector c{&batch, full, ctx};
  reader.decodeChunk(chunk, buf, c, model);
}

}  // namespace heapman::replay::detail
