#include "heapman/map/png.h"

#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "heapman/logformat/private_file.h"
#include "heapman/map/layout.h"

namespace heapman::map {

namespace {

struct PngError {
  char message[256] = "";
};

void onError(png_structp png, png_const_charp msg) {
  auto* e = static_cast<PngError*>(png_get_error_ptr(png));
  std::snprintf(e->message, sizeof e->message, "%s", msg);
  png_longjmp(png, 1);
}

void onWarning(png_structp, png_const_charp) {}

// libpng's write callback for encodePng: appends to the std::string behind the io pointer.
void toString(png_structp png, png_bytep data, size_t length) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data),
                                                          length);
}
void noFlush(png_structp) {}

// libpng's longjmp must not cross C++ objects with destructors: everything it can jump over
// lives outside this function.
// Into f, or into *mem when f is null.
bool encode(FILE* f, std::string* mem, const Image& img, int level, png_bytep* rows,
            PngError& err) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, onError, onWarning);
  if (!png) return std::snprintf(err.message, sizeof err.message, "out of memory"), false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    if (!err.message[0]) std::snprintf(err.message, sizeof err.message, "libpng failed");
    return false;
  }
  if (f)
    png_init_io(png, f);
  else
    png_set_write_fn(png, mem, toString, noFlush);
  png_set_compression_level(png, level);
  if (level <= 2) png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  png_set_IHDR(png, info, png_uint_32(img.width), png_uint_32(img.height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

std::vector<png_bytep> rowsOf(const Image& img) {
  std::vector<png_bytep> rows(size_t(img.height));
  for (int y = 0; y < img.height; ++y)
    rows[size_t(y)] = const_cast<png_bytep>(&img.rgb[size_t(y) * size_t(img.width) * 3]);
  return rows;
}

}  // namespace

void writePng(const std::string& path, const Image& img, int level, bool privateFile) {
  std::vector<png_bytep> rows = rowsOf(img);
  bool toStdout = path == "-";
  FILE* f = toStdout ? stdout : std::fopen(path.c_str(), "wb");
  if (f && privateFile) log::keepPrivate(fileno(f));
  std::string where = toStdout ? "standard output" : path;
  if (!f) throw MapError("writing " + where + " failed: " + std::strerror(errno));
  PngError err;
  bool ok = encode(f, nullptr, img, level, rows.data(), err);
  int e = 0;
  if (std::ferror(f)) e = errno ? errno : EIO;
  if (toStdout ? std::fflush(f) != 0 : std::fclose(f) != 0) e = errno ? errno : EIO;
  if (!ok || e)
    throw MapError("writing " + where + " failed: " + (e ? std::strerror(e) : err.message));
}

std::string encodePng(const Image& img, int level) {
  std::vector<png_bytep> rows = rowsOf(img);
  std::string out;
  PngError err;
  if (!encode(nullptr, &out, img, level, rows.data(), err))
    throw MapError(std::string("encoding a PNG failed: ") + err.message);
  return out;
}

}  // namespace heapman::map
