// The index pass's count of births and deaths per AllocInfo since its last checkpoint
// (LogTables::churnSpans): dense per info, with the infos touched listed so that closing a span
// costs what it touched, not the whole dictionary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "heapman/replay/replay.h"

namespace heapman::replay {

class Replay::SpanCounter {
 public:
  [[gnu::always_inline]] void born(uint32_t info, uint64_t size) { add(info, 0, size); }
  [[gnu::always_inline]] void died(uint32_t info, Death how, uint64_t size) {
    add(info, how == Death::kCollected ? 2 : 4, size);
  }
  // The span counted so far, starting at `from`; the count starts again from zero.
  ChurnSpan take(uint64_t from) {
    ChurnSpan s;
    s.from = from;
    std::sort(touched_.begin(), touched_.end());
    s.infos = touched_;
    s.counts.reserve(touched_.size() * ChurnSpan::kColumns);
    for (uint32_t i : touched_) {
      uint64_t* row = rows_ + size_t{i} * kRow;
      s.counts.insert(s.counts.end(), row, row + ChurnSpan::kColumns);
      std::fill(row, row + kRow, 0);
    }
    entries_ += touched_.size();
    touched_.clear();
    return s;
  }
  uint64_t entries() const { return entries_; }  // over the spans taken

 private:
  // A row an info, one cache line: the counts, then whether it is in touched_.
  static constexpr size_t kRow = 8, kTouched = ChurnSpan::kColumns;

  [[gnu::always_inline]] void add(uint32_t info, size_t column, uint64_t size) {
    if (info >= capacity_) [[unlikely]] grow(info);
    uint64_t* row = rows_ + size_t{info} * kRow;
    if (!row[kTouched]) {
      row[kTouched] = 1;
      touched_.push_back(info);
    }
    ++row[column];
    row[column + 1] += size;
  }
  [[gnu::noinline]] void grow(uint32_t info) {
    capacity_ = std::max<size_t>(size_t{info} + 1, capacity_ * 2);
    storage_.resize(capacity_ * kRow, 0);
    rows_ = storage_.data();
  }
  uint64_t* rows_ = nullptr;
  size_t capacity_ = 0;
  std::vector<uint64_t> storage_;
  std::vector<uint32_t> touched_;
  uint64_t entries_ = 0;
};

}  // namespace heapman::replay
