#include <algorithm>

#include "heapman/map/image.h"

namespace heapman::map {

Image::Image(int w, int h, Rgb c) : width(w), height(h), rgb(size_t(w) * size_t(h) * 3) {
  fill(0, 0, w, h, c);
}

void Image::fill(int x, int y, int w, int h, Rgb c) {
  int x0 = std::max(x, 0), y0 = std::max(y, 0);
  int x1 = std::min(x + w, width), y1 = std::min(y + h, height);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) set(xx, yy, c);
}

void Image::blend(int x, int y, int w, int h, Rgb c, int alpha) {
  int x0 = std::max(x, 0), y0 = std::max(y, 0);
  int x1 = std::min(x + w, width), y1 = std::min(y + h, height);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) set(xx, yy, mix(at(xx, yy), c, alpha));
}

Rgb mix(Rgb a, Rgb b, int alpha) {
  Rgb out = 0;
  for (int shift = 16; shift >= 0; shift -= 8) {
    int ca = int(a >> shift & 0xFF), cb = int(b >> shift & 0xFF);
    out |= Rgb((ca * (256 - alpha) + cb * alpha) >> 8) << shift;
  }
  return out;
}

Rgb scale(Rgb c, int f) {
  Rgb out = 0;
  for (int shift = 16; shift >= 0; shift -= 8)
    out |= Rgb(std::min(255, int(c >> shift & 0xFF) * f >> 8)) << shift;
  return out;
}

}  // namespace heapman::map
