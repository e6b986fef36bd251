#include "heapman/logformat/check.h"

#include <cstdio>

namespace heapman::log {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

bool isType(const ChunkRef& c, ChunkType t) { return c.header.type == static_cast<uint16_t>(t); }

[[noreturn]] void refuse(const ChunkRef* c, ErrorCode code, const std::string& what) {
  if (!c) throw FormatError(code, 0, FormatError::kNoChunk, what);
  throw FormatError(code, c->offset, c->number, what);
}

}  // namespace

void LogCheck::fail(const ChunkRef& c, ErrorCode code, const std::string& what) const {
  refuse(&c, code, what);
}

void LogCheck::advance(size_t end) {
  const std::vector<ChunkRef>& chunks = reader_.chunks();
  for (; next_ < end && next_ < chunks.size(); ++next_) {
    const ChunkRef& c = chunks[next_];
    if (!isType(c, ChunkType::kRamDump)) continue;
    if (any_ && c.header.firstSeq < position())
      fail(c, ErrorCode::kBadSequence,
           "RAM dump written at sequence number " + std::to_string(c.header.firstSeq) +
               ", but the records before it already reach " + std::to_string(last_) +
               ": a chunk repeated or out of order");
    pendingRam_.push_back(c);
  }
}

void LogCheck::beginRecords(const ChunkRef& c) {
  advance(c.number);
  next_ = c.number + size_t{1};
  chunk_ = &c;
  namesCode_ = false;
  if (!any_ || c.header.firstSeq == position()) return;
  std::string before = "the records before it (chunk " + std::to_string(lastRecords_) + ") end at " +
                       std::to_string(position());
  if (c.header.firstSeq > position()) {
    if (!gapIsDamage_) return;
    fail(c, ErrorCode::kBadSequence,
         "records start at sequence number " + std::to_string(c.header.firstSeq) + ", but " +
             before + ": " + std::to_string(c.header.firstSeq - position()) +
             " sequence numbers are missing (a chunk lost from the log)");
  }
  fail(c, ErrorCode::kBadSequence,
       "records start at sequence number " + std::to_string(c.header.firstSeq) + ", but " + before +
           ": a chunk repeated or out of order");
}

void LogCheck::endRecords() {
  const ChunkRef& c = *chunk_;
  // Where c ends: one past its last event, or where it starts when no event came yet.
  uint64_t end = any_ ? position() : c.header.firstSeq;
  for (const ChunkRef& r : pendingRam_)
    if (r.header.firstSeq > end)
      fail(r, ErrorCode::kBadSequence,
           "RAM dump written at sequence number " + std::to_string(r.header.firstSeq) +
               ", but the records chunk after it (chunk " + std::to_string(c.number) +
               ") ends at " + std::to_string(end) + ": a chunk out of order");
  pendingRam_.clear();
  lastRecords_ = c.number;
  const std::optional<IndexData>& footer = reader_.index();
  if (footer && footer->codeMarked && c.number < footer->chunks.size() &&
      footer->chunks[c.number].namesCode != namesCode_)
    fail(c, ErrorCode::kBadFooter,
         namesCode_ ? "the footer index does not mark this chunk as naming code, but it holds "
                      "ModuleLoad, JitRange or MethodDef records"
                    : "the footer index marks this chunk as naming code (ModuleLoad, JitRange, "
                      "MethodDef records), but it holds none");
}

void LogCheck::finish() {
  advance(reader_.chunks().size());
  // In a log cut short, the records a last RAM dump followed may be lost with the tail.
  if (reader_.end().complete && any_)
    for (const ChunkRef& r : pendingRam_)
      if (r.header.firstSeq > position())
        fail(r, ErrorCode::kBadSequence,
             "RAM dump written at sequence number " + std::to_string(r.header.firstSeq) +
                 ", after the log's last event (" + std::to_string(last_) +
                 "): a chunk out of order");
  pendingRam_.clear();
}

void LogCheck::ramSegment(const ChunkRef& c, const RamSegment& s) {
  if (s.hasBytes) {
    stored_.try_emplace(s.hash, s.length);
    return;
  }
  auto it = stored_.find(s.hash);
  std::string what = "RAM dump segment at " + hex(s.address) + " (GC " +
                     std::to_string(s.gcNumber) + ", " + std::to_string(s.length) +
                     " bytes) refers to content " + hex(s.hash);
  if (it == stored_.end())
    fail(c, ErrorCode::kBadRecord, what + " that no earlier segment stored");
  if (it->second != s.length)
    fail(c, ErrorCode::kBadRecord,
         what + " that an earlier segment stored as " + std::to_string(it->second) + " bytes");
}

void LogCheck::badSequence(uint64_t seq) const {
  fail(*chunk_, ErrorCode::kBadSequence,
       "sequence number " + std::to_string(seq) + " does not follow " + std::to_string(last_));
}

void LogCheck::badStackNode(uint64_t id) const {
  fail(*chunk_, ErrorCode::kBadRecord,
       "records do not decode: stack node id " + std::to_string(id) + " is beyond the " +
           std::to_string(nodes_) + " stack nodes defined before it (ids count up from 1)");
}

void LogCheck::beyondMaxSeq(const ChunkRef* c, uint64_t seq) {
  refuse(c, ErrorCode::kBadSequence,
         "sequence number " + std::to_string(seq) + " is beyond " + std::to_string(kMaxSeq) +
             ", the largest a log may hold");
}

void LogCheck::badAddress(const ChunkRef* c, uint64_t address, uint64_t seq) {
  refuse(c, ErrorCode::kBadRecord,
         "records do not decode: allocation at " + hex(address) + " (seq " + std::to_string(seq) +
             ") is above 2^48: not a user-space address");
}

}  // namespace heapman::log
