// Image: an RGB raster (3 bytes a pixel, rows top to bottom) and the drawing the heap map needs:
// filled rectangles, blends, and text in the map's own 5x7 bitmap font (font.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace heapman::map {

// 0xRRGGBB.
using Rgb = uint32_t;

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3

  Image() = default;
  Image(int w, int h, Rgb fill = 0);
  Rgb at(int x, int y) const {
    const uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
    return Rgb(p[0]) << 16 | Rgb(p[1]) << 8 | p[2];
  }
  void set(int x, int y, Rgb c) {
    uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
    p[0] = uint8_t(c >> 16), p[1] = uint8_t(c >> 8), p[2] = uint8_t(c);
  }
  // Clipped to the image.
  void fill(int x, int y, int w, int h, Rgb c);
  // Mixes c over the rectangle: alpha 0..256.
  void blend(int x, int y, int w, int h, Rgb c, int alpha);
};

Rgb mix(Rgb a, Rgb b, int alpha256);  // a * (1 - alpha) + b * alpha
Rgb scale(Rgb c, int factor256);

// The bitmap font: printable ASCII in cells of 6 x 9 pixels (5 x 7 glyphs, one pixel of spacing
// right and two below) times `scale`; other bytes draw as '?'.
inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kCellWidth = 6, kCellHeight = 9;
// Draws text with its top-left corner at (x, y), clipped; returns the x after it.
int drawText(Image& img, int x, int y, const std::string& text, Rgb color, int scale = 1);
inline int textWidth(const std::string& text, int scale = 1) {
  return int(text.size()) * kCellWidth * scale;
}
// The glyph of a character: bit 4 of row r is its leftmost pixel (rows top to bottom).
const uint8_t* glyph(char c);
bool descends(char c);  // drawn two rows lower
// text cut to at most `chars` characters, ending in ".." when cut.
std::string fitText(const std::string& text, size_t chars);

}  // namespace heapman::map
