// heapman serve's page: its HTML, script and style, embedded into the binary at build time from
// assets/ (replay/report/embed.cmake), so that the page needs nothing from the network.
#pragma once

#include <string>

namespace heapman::cli::serve {

const std::string& pageHtml();
const std::string& pageScript();
const std::string& pageStyle();

}  // namespace heapman::cli::serve
