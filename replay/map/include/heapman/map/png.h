// PNG files of the heap map through libpng: 8-bit RGB, no interlace.
#pragma once

#include <string>

#include "heapman/map/image.h"

namespace heapman::map {

// Writes img to path ("-": standard output). level: zlib compression 0-9 (the video's
// --frames-dir uses 1: fast, a little larger). `privateFile`: the picture is of a log that holds
// the program's memory (RAM dumps), so the file is made 0600 like the log. Throws MapError
// "writing PATH failed: why".
void writePng(const std::string& path, const Image& img, int level = 6, bool privateFile = false);
// The same PNG in memory (the report's frames, as data: URIs). Throws MapError.
std::string encodePng(const Image& img, int level = 6);

}  // namespace heapman::map
