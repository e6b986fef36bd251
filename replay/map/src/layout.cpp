#include "heapman/map/layout.h"

#include <algorithm>

namespace heapman::map {

Curve parseCurve(const std::string& s) {
  if (s == "hilbert") return Curve::kHilbert;
  if (s == "linear") return Curve::kLinear;
  throw MapError("--layout " + s + ": give hilbert or linear");
}

const char* curveName(Curve c) { return c == Curve::kHilbert ? "hilbert" : "linear"; }

void hilbertPoint(uint32_t side, uint32_t d, uint32_t& x, uint32_t& y) {
  // From the coarsest level down: two bits of d pick one of the four quadrants in the order the
  // curve visits them (lower left, upper left, upper right, lower right: the unit curve from
  // (0, 0) to (1, 0)); the quadrant is placed in the orientation of the square holding it, and
  // the first quadrant's sub-curve runs transposed, the last's transposed and mirrored. The
  // orientations (transpose, mirror both axes) commute, so composing them is a XOR of two flags.
  static const uint32_t kQx[4] = {0, 0, 1, 1}, kQy[4] = {0, 1, 1, 0};
  unsigned levels = 0;
  while ((uint32_t{1} << levels) < side) ++levels;
  bool transposed = false, mirrored = false;
  x = y = 0;
  for (unsigned level = levels; level-- > 0;) {
    uint32_t q = (d >> (2 * level)) & 3;
    uint32_t cx = kQx[q], cy = kQy[q];
    if (transposed) std::swap(cx, cy);
    if (mirrored) cx ^= 1, cy ^= 1;
    x |= cx << level;
    y |= cy << level;
    if (q == 0) transposed = !transposed;
    if (q == 3) transposed = !transposed, mirrored = !mirrored;
  }
}

namespace {

constexpr uint64_t kMergeGap = uint64_t{1} << 20;  // runs closer than this share a region

std::vector<Region> regionsOf(const std::vector<uint64_t>& granules) {
  std::vector<Region> runs;
  for (uint64_t g : granules) {
    uint64_t a = g << kGranuleBits;
    if (!runs.empty() && runs.back().end == a)
      runs.back().end = a + (uint64_t{1} << kGranuleBits);
    else
      runs.push_back({a, a + (uint64_t{1} << kGranuleBits), 0, 0});
  }
  if (runs.size() <= 1) return runs;
  // Cut at gaps of at least kMergeGap, and at most kMaxRegions - 1 of them: the widest.
  std::vector<std::pair<uint64_t, size_t>> gaps;  // (gap, index of the run after it)
  for (size_t i = 1; i < runs.size(); ++i)
    if (runs[i].begin - runs[i - 1].end >= kMergeGap)
      gaps.push_back({runs[i].begin - runs[i - 1].end, i});
  if (gaps.size() > kMaxRegions - 1) {
    std::nth_element(gaps.begin(), gaps.begin() + (kMaxRegions - 1), gaps.end(),
                     [](auto& a, auto& b) { return a.first > b.first; });
    gaps.resize(kMaxRegions - 1);
  }
  std::vector<bool> cut(runs.size());
  for (auto& g : gaps) cut[g.second] = true;
  std::vector<Region> out{runs[0]};
  for (size_t i = 1; i < runs.size(); ++i) {
    if (cut[i])
      out.push_back(runs[i]);
    else
      out.back().end = runs[i].end;
  }
  return out;
}

// Positions a region starts on: a fresh row (linear) or a fresh 8 x 8 block (hilbert).
size_t alignOf(Curve c, int width) { return c == Curve::kLinear ? size_t(width) : 64; }

// Curve positions the regions take at 2^shift bytes a pixel (their starts aligned).
size_t positionsAt(const std::vector<Region>& regions, unsigned shift, size_t align) {
  size_t d = 0;
  for (const Region& r : regions) {
    d = (d + align - 1) / align * align;
    d += size_t((r.end - r.begin + (uint64_t{1} << shift) - 1) >> shift);
  }
  return d;
}

}  // namespace

AddressLayout::AddressLayout(const std::vector<uint64_t>& granules, Curve curve, int x0, int y0,
                             int width, int height, int imageWidth, uint64_t bytesPerPixel)
    : curve_(curve), regions_(regionsOf(granules)) {
  if (width < 8 || height < 8) throw MapError("the picture is too small for a map");
  size_t capacity;
  int tilesX = 1, tilesY = 1;
  if (curve == Curve::kLinear) {
    tile_ = width;
    capacity = size_t(width) * size_t(height);
  } else {
    // The largest tile side that covers at least 7/8 of what the best side covers: larger tiles
    // keep longer runs of addresses together.
    size_t most = 0;
    for (int s = 256; s >= 8; s /= 2)
      most = std::max(most, size_t(width / s) * size_t(height / s) * size_t(s) * size_t(s));
    size_t best = 0;
    for (int s = 256; s >= 8 && !best; s /= 2) {
      size_t covered = size_t(width / s) * size_t(height / s) * size_t(s) * size_t(s);
      if (covered * 8 >= most * 7) best = covered, tile_ = s;
    }
    tilesX = width / tile_;
    tilesY = height / tile_;
    capacity = best;
    x0 += (width - tilesX * tile_) / 2;  // centred
    y0 += (height - tilesY * tile_) / 2;
  }
  size_t align = alignOf(curve, width);
  if (bytesPerPixel) {
    if (bytesPerPixel & (bytesPerPixel - 1))
      throw MapError("--bytes-per-pixel " + std::to_string(bytesPerPixel) +
                     ": give a power of two");
    shift_ = unsigned(__builtin_ctzll(bytesPerPixel));
    if (positionsAt(regions_, shift_, align) > capacity) {
      unsigned need = shift_;
      while (positionsAt(regions_, need, align) > capacity) ++need;
      throw MapError("--bytes-per-pixel " + std::to_string(bytesPerPixel) +
                     " does not fit the heap in the picture: give at least " +
                     std::to_string(uint64_t{1} << need) + " or a larger --size");
    }
  } else {
    while (positionsAt(regions_, shift_, align) > capacity) ++shift_;
  }
  bpp_ = uint64_t{1} << shift_;
  size_t d = 0;
  for (Region& r : regions_) {
    d = (d + align - 1) / align * align;
    r.firstPixel = d;
    r.offset = uint64_t(d) << shift_;
    d += size_t((r.end - r.begin + bpp_ - 1) >> shift_);
  }
  positions_ = d;
  lut_.resize(positions_);
  if (curve == Curve::kLinear) {
    for (size_t i = 0; i < positions_; ++i)
      lut_[i] = uint32_t((size_t(y0) + i / size_t(width)) * size_t(imageWidth) + size_t(x0) +
                         i % size_t(width));
  } else {
    size_t per = size_t(tile_) * size_t(tile_);
    std::vector<uint32_t> inTile(per);
    for (size_t e = 0; e < per; ++e) {
      uint32_t hx, hy;
      hilbertPoint(uint32_t(tile_), uint32_t(e), hx, hy);
      inTile[e] = hy * uint32_t(imageWidth) + hx;
    }
    for (size_t i = 0; i < positions_; ++i) {
      size_t t = i / per;
      size_t tx = t % size_t(tilesX), ty = t / size_t(tilesX);
      lut_[i] = uint32_t((size_t(y0) + ty * size_t(tile_)) * size_t(imageWidth) + size_t(x0) +
                         tx * size_t(tile_)) + inTile[i % per];
    }
  }
  (void)tilesY;
}

}  // namespace heapman::map
