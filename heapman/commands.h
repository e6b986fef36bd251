// heapman verbs. Each lives in its own cmd_<verb>.cpp, declares its options (verbs.h: one table,
// one parser for the command line and the shell), and only formats what logformat/ and replay/
// compute.
#pragma once

#include <stdexcept>
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

// Thrown for bad input to a verb (exit code kExitUsage; the shell keeps running).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace heapman::cli
