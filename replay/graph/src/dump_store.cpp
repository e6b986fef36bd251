// DumpStore (dump_store.h).
#include "heapman/graph/dump_store.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "heapman/logformat/bytes.h"

namespace heapman::graph {

DumpStore::DumpStore(const log::LogReader& reader) : reader_(reader) {
  for (const log::ChunkRef& c : reader.chunks())
    if (c.header.type == static_cast<uint16_t>(log::ChunkType::kRamDump)) ram_.push_back(&c);
  chunkGcs_.resize(ram_.size());
}

template <class F>
void DumpStore::parse(size_t ramIndex, std::span<const uint8_t> raw, F&& f) const {
  const log::ChunkRef& c = *ram_[ramIndex];
  try {
    log::ByteCursor in(raw.data(), raw.data() + raw.size());
    while (!in.atEnd()) {
      Header h;
      h.kind = static_cast<log::SegmentKind>(in.byte());
      h.stored = in.byte() & 1;
      h.gc = static_cast<uint32_t>(in.varint());
      h.address = in.varint();
      h.length = in.varint();
      h.hash = in.u64();
      h.bytesAt = static_cast<uint32_t>(in.position() - raw.data());
      if (h.stored) in.take(h.length);
      f(h);
    }
  } catch (const log::CursorOverrun& e) {
    throw log::FormatError(log::ErrorCode::kBadRecord, c.offset, c.number,
                           std::string("RAM dump segment: ") + e.what());
  }
}

void DumpStore::listGcs() {
  if (listed_) return;
  listed_ = true;
  std::map<uint64_t, const log::IndexEntry*> byOffset;
  if (reader_.index())
    for (const log::IndexEntry& e : reader_.index()->chunks) byOffset[e.offset] = &e;
  std::set<uint32_t> all;
  for (size_t i = 0; i < ram_.size(); ++i) {
    auto it = byOffset.find(ram_[i]->offset);
    if (it != byOffset.end() && !it->second->gcNumbers.empty()) {
      chunkGcs_[i] = it->second->gcNumbers;
    } else {
      std::set<uint32_t> in;
      parse(i, reader_.payload(*ram_[i], buffer_), [&](const Header& h) { in.insert(h.gc); });
      chunkGcs_[i].assign(in.begin(), in.end());
    }
    all.insert(chunkGcs_[i].begin(), chunkGcs_[i].end());
  }
  gcs_.assign(all.begin(), all.end());
}

const std::vector<uint32_t>& DumpStore::dumpedGcs() {
  listGcs();
  return gcs_;
}

bool DumpStore::has(uint32_t gc) {
  listGcs();
  return std::binary_search(gcs_.begin(), gcs_.end(), gc);
}

std::string DumpStore::describeDumped() {
  listGcs();
  if (gcs_.empty()) return "none";
  std::string s = "GC ";
  size_t shown = std::min<size_t>(gcs_.size(), 20);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(gcs_[i]);
  if (shown < gcs_.size()) s += ", ... " + std::to_string(gcs_.back());
  s += " (" + std::to_string(gcs_.size()) + (gcs_.size() == 1 ? " dump)" : " dumps)");
  return s;
}

void DumpStore::hashUpTo(size_t ramIndex) {
  for (; hashed_ <= ramIndex && hashed_ < ram_.size(); ++hashed_) {
    auto raw = reader_.payload(*ram_[hashed_], buffer_);
    parse(hashed_, raw, [&](const Header& h) {
      if (h.stored) firstCopy_.try_emplace(h.hash, Where{static_cast<uint32_t>(hashed_), h.bytesAt});
    });
  }
}

namespace {

// Joins the pieces the writer cut a long range into (kSegmentPiece, contiguous, same kind).
void joinPieces(std::vector<DumpSegment>& v) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (out && v[out - 1].kind == v[i].kind && v[out - 1].length % kSegmentPiece == 0 &&
        v[out - 1].address + v[out - 1].length == v[i].address &&
        v[out - 1].offset + v[out - 1].length == v[i].offset) {
      v[out - 1].length += v[i].length;
      continue;
    }
    v[out++] = v[i];
  }
  v.resize(out);
}

}  // namespace

Dump DumpStore::load(uint32_t gc) {
  if (!has(gc))
    throw GraphError("no RAM dump at GC " + std::to_string(gc) + "; dumps in this log: " +
                     describeDumped() +
                     ". Record with `heaprec run --ram-dumps every` (or every:N, or event:NAME "
                     "for the collection after a custom event)");
  size_t first = ram_.size(), last = 0;
  for (size_t i = 0; i < ram_.size(); ++i)
    if (std::find(chunkGcs_[i].begin(), chunkGcs_[i].end(), gc) != chunkGcs_[i].end()) {
      first = std::min(first, i);
      last = i;
    }
  hashUpTo(last);

  // The segments of this GC, in log order, each with where its bytes are.
  struct Piece {
    DumpSegment seg;
    Where from;
  };
  std::vector<Piece> pieces;
  Dump d;
  d.gc = gc;
  uint64_t total = 0;
  for (size_t i = first; i <= last; ++i) {
    auto raw = reader_.payload(*ram_[i], buffer_);
    parse(i, raw, [&](const Header& h) {
      if (h.gc != gc || h.length == 0) return;
      Where w{static_cast<uint32_t>(i), h.bytesAt};
      if (!h.stored) {
        auto it = firstCopy_.find(h.hash);
        if (it == firstCopy_.end())
          throw log::FormatError(log::ErrorCode::kBadRecord, ram_[i]->offset, ram_[i]->number,
                                 "RAM dump segment at 0x" + [&] {
                                   char b[24];
                                   std::snprintf(b, sizeof b, "%llx",
                                                 static_cast<unsigned long long>(h.address));
                                   return std::string(b);
                                 }() + " refers to content no earlier segment holds");
        w = it->second;
        ++d.dedupSegments;
      } else {
        ++d.storedSegments;
      }
      pieces.push_back({{h.address, h.length, total, h.kind}, w});
      total += h.length;
    });
  }

  // Bytes: each chunk decompressed once, in file order.
  d.bytes.reset(new uint8_t[std::max<uint64_t>(total, 1)]);
  d.byteCount = total;
  std::vector<uint32_t> order(pieces.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return pieces[a].from.chunk < pieces[b].from.chunk; });
  uint32_t loaded = UINT32_MAX;
  std::span<const uint8_t> raw;
  for (uint32_t i : order) {
    const Piece& p = pieces[i];
    if (p.from.chunk != loaded) {
      raw = reader_.payload(*ram_[p.from.chunk], buffer_);
      loaded = p.from.chunk;
    }
    if (uint64_t{p.from.offset} + p.seg.length > raw.size())
      throw log::FormatError(log::ErrorCode::kBadRecord, ram_[p.from.chunk]->offset,
                             ram_[p.from.chunk]->number, "RAM dump segment runs past its chunk");
    std::memcpy(d.bytes.get() + p.seg.offset, raw.data() + p.from.offset, p.seg.length);
  }

  for (const Piece& p : pieces)
    (p.seg.kind == log::SegmentKind::kObject ? d.objects : d.roots).push_back(p.seg);
  joinPieces(d.objects);
  joinPieces(d.roots);
  std::sort(d.objects.begin(), d.objects.end(),
            [](const DumpSegment& a, const DumpSegment& b) { return a.address < b.address; });
  // Objects never overlap in a collector's heap; a repeated segment is dropped (counted).
  size_t out = 0;
  for (size_t i = 0; i < d.objects.size(); ++i) {
    if (out && d.objects[i].address < d.objects[out - 1].address + d.objects[out - 1].length) {
      ++d.overlapsDropped;
      continue;
    }
    d.objects[out++] = d.objects[i];
  }
  d.objects.resize(out);
  return d;
}

}  // namespace heapman::graph
