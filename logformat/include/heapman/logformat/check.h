// LogCheck: the rules a log keeps beyond decoding, in one place for `heapman verify` and `info`
// (summarize()) and for the replay's index pass (every query), so that what verify accepts
// every query accepts, and what a query refuses as corrupt verify refuses (docs/DESIGN.md §1.6):
//
// - Chunk sequence. A records chunk starts (firstSeq) where the records chunk before it ended:
//   one past its last event (the first records chunk with events: anywhere). A chunk missing
//   from the middle of a log shows as a gap there, a chunk repeated or moved as a step back (logs
//   of format minor 0 may have gaps of their own between chunks: only steps back count there). A
//   RAM dump chunk's firstSeq is the position in the event stream when it was written: not
//   below where the records before it end, not past where the records chunk after it ends, and
//   in a complete log not past its last event. (The chunk headers alone already rule out steps
//   back and chunks written twice: LogReader's scan.)
// - Events: sequence numbers increase strictly and stay at or below kMaxSeq.
// - Allocations (and the new block of a realloc): address 0 (failed) or below kAddressLimit.
// - Stack nodes: an id at most kStackIdSlack above the number of nodes defined before it (the
//   recorder numbers nodes 1, 2, ... as it defines them; the replay's table is indexed by id).
// - Code marks (format minor 2, the footer's Index.codeMarked): a records chunk's namesCode is
//   set exactly when it holds a ModuleLoad, JitRange or MethodDef record (a lazily indexed
//   replay reads the marked chunks first, for the frame names of the whole log). kBadFooter.
// - RAM dump segments: one without bytes names content an earlier segment stored, of the same
//   length (the heap graph copies those bytes). Only summarize() reads every segment; the graph
//   verbs refuse such a segment when they load its dump.
//
// Feed it the chunks in file order: beginRecords() and endRecords() around each records chunk's
// records (record() for each), ramSegment() for each segment of the RAM dumps, finish() at the
// end. Every refusal is a FormatError naming the chunk and its offset; sequence problems are
// kBadSequence, the others kBadRecord.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "heapman/logformat/error.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/reader.h"
#include "heapman/logformat/records.h"

namespace heapman::log {

class LogCheck {
 public:
  // How far a stack node's id may run ahead of the nodes defined before it.
  static constexpr uint64_t kStackIdSlack = 1u << 16;

  // Checks the chunks of `reader` (kept by reference; its chunk list may only grow at its end,
  // between records chunks).
  explicit LogCheck(const LogReader& reader)
      : reader_(reader), gapIsDamage_(reader.minor() >= 1) {}

  // Records chunk c is about to be decoded: its firstSeq must continue the records before it,
  // and the RAM dump chunks since those records must not lie before where they end.
  void beginRecords(const ChunkRef& c);
  // c's records have all been through record(): RAM dump chunks before c must not have been
  // written after c ends, and the footer's code mark of c must say what its records hold.
  void endRecords();
  // One segment of RAM dump chunk c (any order of chunks before finish(), file order within).
  void ramSegment(const ChunkRef& c, const RamSegment& s);
  // After the last chunk: the RAM dump chunks after the last records chunk.
  void finish();

  // Every record of the records chunk begun, in order.
  template <class T>
  [[gnu::always_inline]] void record(const T& r) {
    if constexpr (requires { r.ev; }) event(r.ev.seq);
    if constexpr (std::is_same_v<T, Alloc>) {
      address(r.address, r.ev.seq);
    } else if constexpr (std::is_same_v<T, Realloc>) {
      address(r.newAddress, r.ev.seq);
    } else if constexpr (std::is_same_v<T, StackNode>) {
      if (r.id > nodes_ + kStackIdSlack) [[unlikely]]
        badStackNode(r.id);
      ++nodes_;
    } else if constexpr (std::is_same_v<T, ModuleLoad> || std::is_same_v<T, JitRange> ||
                         std::is_same_v<T, MethodDef>) {
      namesCode_ = true;
    }
  }
  [[gnu::always_inline]] void event(uint64_t seq) {
    if (seq > kMaxSeq) [[unlikely]]
      beyondMaxSeq(chunk_, seq);
    if (any_ && seq <= last_) [[unlikely]]
      badSequence(seq);
    any_ = true;
    last_ = seq;
  }
  [[gnu::always_inline]] void address(uint64_t address, uint64_t seq) {
    if (address >= kAddressLimit) [[unlikely]]
      badAddress(chunk_, address, seq);
  }

  // The refusals of a sequence number beyond kMaxSeq and of an allocation at an address at or
  // above kAddressLimit, naming chunk c (the replay's seeks guard their live set with them too).
  [[noreturn]] static void beyondMaxSeq(const ChunkRef* c, uint64_t seq);
  [[noreturn]] static void badAddress(const ChunkRef* c, uint64_t address, uint64_t seq);

 private:
  // Runs the RAM dump checks of the chunks before chunk number `end` not seen yet.
  void advance(size_t end);
  // One past the last event so far (valid when any_).
  uint64_t position() const { return last_ + 1; }
  [[noreturn]] void badSequence(uint64_t seq) const;
  [[noreturn]] void badStackNode(uint64_t id) const;
  [[noreturn]] void fail(const ChunkRef& c, ErrorCode code, const std::string& what) const;

  const LogReader& reader_;
  // The recorder of format minor 0 numbered events from its threads' rings, leaving gaps that
  // could fall between chunks; since minor 1 every recorder numbers them densely as it writes.
  bool gapIsDamage_;
  const ChunkRef* chunk_ = nullptr;  // the records chunk begun
  int64_t lastRecords_ = -1;         // number of the records chunk before it
  size_t next_ = 0;                  // chunks before this one have been seen
  bool any_ = false;                 // an event was seen
  uint64_t last_ = 0;                // the last event's sequence number
  uint64_t nodes_ = 0;               // stack node records so far
  bool namesCode_ = false;           // the chunk begun holds a record frame names depend on
  // RAM dump chunks since the last records chunk (copies: a growing log's list may move,
  // LogReader::grow()).
  std::vector<ChunkRef> pendingRam_;
  std::unordered_map<uint64_t, uint64_t> stored_;  // content hash -> length, stored segments
};

}  // namespace heapman::log
