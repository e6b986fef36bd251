// AddressLayout: where each heap address lands in the map's picture.
//
// The address space is cut into 64 KiB granules; the granules that held any object over the
// scanned span (LogScan) form *regions*: runs of such granules, neighbouring runs less than
// 1 MiB apart merged (their gap drawn empty), the rest of the address space left out. More than
// kMaxRegions regions: only the widest gaps cut. The regions, in address order, laid end to end
// (each starting on a fresh row in the linear layout, on a fresh 8 x 8 block on the Hilbert
// curve) make the *map space*; a pixel stands for `bytesPerPixel` bytes of it, chosen as the
// smallest power of two that fits the map area unless given.
//
// Curves (a position d along the map space -> a pixel of the map area):
//   linear   rows of the area's width, left to right, top to bottom (Tracy's memory map: with
//            1 KiB a pixel and 1024 pixels, a row is 1 MiB);
//   hilbert  square tiles of side S (a power of two, at most 256, the one that covers most of the
//            area), tiles in rows, a Hilbert curve inside each: addresses near each other stay
//            near each other in two dimensions, and each aligned run of 4^k positions is a square.
// The layout depends only on the regions and the area, never on one frame: a video's frames all
// share it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace heapman::map {

class MapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Curve { kHilbert, kLinear };
Curve parseCurve(const std::string& s);  // "hilbert" | "linear"; MapError otherwise
const char* curveName(Curve c);

inline constexpr unsigned kGranuleBits = 16;  // 64 KiB
inline constexpr size_t kMaxRegions = 48;

struct Region {
  uint64_t begin = 0, end = 0;  // addresses [begin, end), granule-aligned
  uint64_t offset = 0;          // map-space byte where it starts
  size_t firstPixel = 0;        // curve position of its first byte
};

class AddressLayout {
 public:
  // granules: sorted, unique (address >> kGranuleBits). A map area of width x height pixels at
  // (x0, y0) of an image `imageWidth` wide. bytesPerPixel 0: fit; else it must fit (MapError
  // saying what would).
  AddressLayout(const std::vector<uint64_t>& granules, Curve curve, int x0, int y0, int width,
                int height, int imageWidth, uint64_t bytesPerPixel);

  Curve curve() const { return curve_; }
  uint64_t bytesPerPixel() const { return bpp_; }
  unsigned bppShift() const { return shift_; }
  const std::vector<Region>& regions() const { return regions_; }
  // Curve positions in use (the map space's end, in pixels).
  size_t positions() const { return positions_; }
  // Map-space byte of an address, or -1 outside every region.
  int64_t offsetOf(uint64_t address) const {
    size_t lo = 0, hi = regions_.size();
    while (lo < hi) {  // the first region ending after address
      size_t mid = (lo + hi) / 2;
      if (regions_[mid].end <= address) lo = mid + 1; else hi = mid;
    }
    if (lo == regions_.size() || address < regions_[lo].begin) return -1;
    return int64_t(regions_[lo].offset + (address - regions_[lo].begin));
  }
  // Index (y * imageWidth + x) of the image pixel at curve position d < positions().
  uint32_t pixel(size_t d) const { return lut_[d]; }
  int tileSide() const { return tile_; }  // hilbert: S; linear: the area's width

 private:
  Curve curve_;
  uint64_t bpp_ = 1;
  unsigned shift_ = 0;
  int tile_ = 0;
  std::vector<Region> regions_;
  size_t positions_ = 0;
  std::vector<uint32_t> lut_;
};

// (x, y) of position d on the Hilbert curve filling a side x side square (side a power of two):
// starts at (0, 0), ends at (side - 1, 0).
void hilbertPoint(uint32_t side, uint32_t d, uint32_t& x, uint32_t& y);

}  // namespace heapman::map
