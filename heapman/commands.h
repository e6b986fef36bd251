// heapman verbs. Each lives in its own cmd_<verb>.cpp, parses its own options with
// Boost.Program_options, and only formats what logformat/ and replay/ compute.
#pragma once

#include <string>
#include <vector>

namespace heapman::cli {

using Args = std::vector<std::string>;

// Exit codes shared by every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadLog = 1;    // the log is unreadable, corrupt or fails verification
inline constexpr int kExitUsage = 2;     // wrong arguments

int runInfo(const Args& args);
int runVerify(const Args& args);
int runShell(const Args& args);  // shell.cpp

}  // namespace heapman::cli
