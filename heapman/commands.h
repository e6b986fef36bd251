// heapman verbs. Each lives in its own cmd_<verb>.cpp, parses its own options with
// Boost.Program_options, and only formats what logformat/ and replay/ compute.
#pragma once

#include <string>
#include <vector>

namespace heapman::cli {

using Args = std::vector<std::string>;

// Exit codes shared by every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadLog = 1;    // the log is unreadable, corrupt or fails verification;
                                         // or the output cannot be written
inline constexpr int kExitUsage = 2;     // wrong arguments
inline constexpr int kExitInterrupted = 130;  // Ctrl-C (128 + SIGINT, as a shell reports it)

// Call inside a catch block: prints what went wrong as "heapman VERB: ..." ("heapman: ..." for
// an empty VERB; never a bare library exception text such as std::bad_alloc) and returns the
// exit code for it. session.cpp.
int reportError(const char* verb);

int runInfo(const Args& args);
int runVerify(const Args& args);
int runShell(const Args& args);  // shell.cpp

}  // namespace heapman::cli
